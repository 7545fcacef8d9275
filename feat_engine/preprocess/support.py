"""A filled number within its column's support (docs/decisions/0031-imputation.md): the context's observed range, the
decimals its values carry (whole numbers whole: a count of 2.7 is no count), a duration's unit (whole hours stay
whole hours) and, where the column takes few values, each seen often, one of them (income in brackets: no fill
between two). A filled date keeps its range and calendar grid (`dates.on_grid`)."""
from __future__ import annotations

import numpy as np

MAX_DECIMALS = 4            # a column whose values carry at most this many decimals has its fills rounded to them
FILL_LEVELS = 16            # a column that takes at most this many values, ...
LEVEL_CELLS = 10            # ... each seen this often on average, has its fills take one of them
DURATION_STEPS = (86400.0, 3600.0, 60.0, 1.0)      # a duration's units in seconds: a day, an hour, a minute, a second


def decimals(v: np.ndarray) -> int | None:
    """The most decimals the finite values v carry, or None past MAX_DECIMALS."""
    return next((d for d in range(MAX_DECIMALS + 1) if np.allclose(v * 10.0**d, np.round(v * 10.0**d), 1e-9, 0)), None)


def few_values(v: np.ndarray) -> tuple[float, ...]:
    """The distinct values of the finite values v, sorted, where they are at most FILL_LEVELS and seen LEVEL_CELLS
    times each on average; () otherwise (a short column's values are few only because its rows are)."""
    values = np.unique(v)
    return tuple(values.tolist()) if len(values) <= FILL_LEVELS and len(v) >= LEVEL_CELLS * len(values) else ()


def duration_step(seconds: np.ndarray) -> float | None:
    """The longest of DURATION_STEPS that every finite duration (seconds) is a whole number of; None where none is."""
    return next((u for u in DURATION_STEPS if np.allclose(seconds / u, np.round(seconds / u), 0, 1e-9)), None)


def within(v: np.ndarray, lower: float, upper: float, places: int | None, values: tuple[float, ...] = (),
           step: float | None = None) -> np.ndarray:
    """The numbers v (NaN kept) within a column's support: clipped to [lower, upper], a whole number of `step` where
    given (lower and upper are), rounded to `places` decimals (None: not rounded), and where `values` (sorted) are
    given, each the nearest of them, the lower where two are."""
    v = np.clip(v, lower, upper)
    v = v if step is None else np.round(v / step) * step
    v = v if places is None else np.round(v, places)
    if not values:
        return v
    at = np.asarray(values)
    i = np.clip(np.searchsorted(at, v), 1, len(at) - 1)
    return np.where(np.isnan(v), v, np.where(v - at[i - 1] <= at[i] - v, at[i - 1], at[i]))
