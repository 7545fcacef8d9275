"""The Data view's per-column summaries: a small distribution (histogram or top levels) and one line of
statistics in an analyst's words, read from the values as they are (no Streamlit, no model)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from app.numbers import column_format
from feat_engine.preprocess import date_format, numbers_in_text, read_dates
from feat_engine.preprocess.dates import date_grid

BINS = 20       # histogram bars of a number or date column
TOP = 10        # level bars of any other column
PART_WORDS = {"days": "date", "month": "month", "weekday": "weekday", "hour": "time of day"}   # a date's parts


def date_parts(parts: list[str]) -> str:
    """The parts the engine reads of a date column (`ColumnPlan.parts`), in words: "date, month and time of day"."""
    words = [PART_WORDS[p] for p in parts]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def distribution(s: pd.Series, kind: str) -> list[int]:
    """Bar heights of the column's distribution: a BINS-bar histogram of a numeric column's values (dates by their
    time), else the counts of its TOP most frequent values, largest first."""
    values = _quantities(s, kind)
    if values is not None:
        x = _seconds(values) if pd.api.types.is_datetime64_any_dtype(values) else values.to_numpy(dtype=float)
        if x.min() < x.max():
            return np.histogram(x, bins=BINS)[0].astype(int).tolist()
    return s.dropna().astype(str).value_counts().head(TOP).astype(int).tolist()


def describe(s: pd.Series, kind: str) -> str:
    """One line: the range and median of a numeric column, written as its kind (`numbers.column_format`: a year
    2017, a count 1,927, a price 80.07; dates: their range; durations as pandas writes them), else its most frequent
    values with their shares of the filled cells."""
    nn = s.dropna()
    if nn.empty:
        return "every cell is empty"
    if pd.api.types.is_timedelta64_dtype(s) and kind == "numeric":         # durations, as pandas writes them
        return f"min {nn.min()} · median {nn.median()} · max {nn.max()}"
    values = _quantities(s, kind)
    if values is not None and pd.api.types.is_datetime64_any_dtype(values):
        if not pd.api.types.is_datetime64_any_dtype(s):
            fmt = date_format(s)                     # as the column writes them (a time of day alone, not in 1900)
        else:
            fmt = "%Y-%m-%d" if date_grid(values) else None                      # midnights: the day alone
        lo, hi = values.min(), values.max()
        return f"from {lo.strftime(fmt)} to {hi.strftime(fmt)}" if fmt else f"from {lo} to {hi}"
    if values is not None:
        x = values.to_numpy(dtype=float)
        fmt = column_format(values, s.name)
        return f"min {fmt(float(np.min(x)))} · median {fmt(float(np.median(x)))} · max {fmt(float(np.max(x)))}"
    shares = nn.astype(str).value_counts(normalize=True).head(3)
    more = nn.nunique() - len(shares)
    return ", ".join(f"{v[:24]} {p:.0%}" for v, p in shares.items()) + (f" (+{more:,} more)" if more > 0 else "")


def _quantities(s: pd.Series, kind: str) -> pd.Series | None:
    """A numeric column's observed values as numbers or dates (text read as the engine reads it: numbers, or dates
    written one way); None for other columns, booleans, or where nothing reads."""
    if kind != "numeric" or pd.api.types.is_bool_dtype(s):
        return None
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_datetime64_any_dtype(s):
        values = s
    else:
        values = numbers_in_text(s)
        if values is None:
            fmt = date_format(s)
            values = None if fmt is None else read_dates(s, fmt)
    values = None if values is None else values.dropna()
    if values is not None and pd.api.types.is_numeric_dtype(values):
        values = values[np.isfinite(values.to_numpy(dtype=float))]
    return values if values is not None and len(values) else None


def _seconds(dates: pd.Series) -> np.ndarray:
    """Dates as seconds after the first."""
    return (dates - dates.min()).dt.total_seconds().to_numpy(dtype=float)
