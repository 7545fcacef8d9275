"""Date columns: the numbers a date is read as (`DATE_PARTS`: its days since 1970, month, weekday and hour), and the
calendar grid its values lie on (`date_grid`: every value a year's or a month's first day, or a midnight), which a
filled date keeps (`on_grid`), as a whole-number column's filled cells stay whole
(docs/decisions/0012-preprocessing.md)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

EPOCH = pd.Timestamp("1970-01-01")
GRIDS = {"year": "Y", "month": "M", "day": "D"}     # coarsest first; pandas' period of each


def seconds(s: pd.Series) -> np.ndarray:
    """Seconds since 1970-01-01 (UTC for dates with a time zone), NaN for missing."""
    epoch = EPOCH.tz_localize("UTC") if getattr(s.dt, "tz", None) is not None else EPOCH
    return ((s - epoch) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64, na_value=np.nan)


DATE_PARTS = {
    "days": lambda s: seconds(s) / 86400.0,
    "month": lambda s: s.dt.month.to_numpy(dtype=np.float64, na_value=np.nan),
    "weekday": lambda s: s.dt.day_of_week.to_numpy(dtype=np.float64, na_value=np.nan),
    "hour": lambda s: (s.dt.hour + s.dt.minute / 60.0).to_numpy(dtype=np.float64, na_value=np.nan),
}


def from_days(days: np.ndarray, index: pd.Index | None = None) -> pd.Series:
    """Days since 1970 (`DATE_PARTS["days"]`) as dates, to the second; NaN as NaT."""
    return pd.Series(EPOCH + pd.to_timedelta(np.round(np.asarray(days, dtype=float) * 86400.0), unit="s"), index=index)


def _starts(dates: pd.Series, grid: str) -> pd.Series:
    """The start of the year, month or day each date falls in."""
    return dates.dt.to_period(GRIDS[grid]).dt.start_time


def date_grid(dates: pd.Series) -> str | None:
    """The coarsest of "year", "month" and "day" whose starts hold every observed date (a monthly series: "month"),
    read on the wall clock of dates with a time zone (their midnights are the zone's); None where none does."""
    observed = dates.dropna()
    if getattr(observed.dt, "tz", None) is not None:
        observed = observed.dt.tz_localize(None)
    if not len(observed):
        return None
    return next((g for g in GRIDS if (_starts(observed, g) == observed).all()), None)


def on_grid(dates: pd.Series, grid: str | None, tz: Any = None) -> pd.Series:
    """Each date (UTC where `tz`, the zone the grid is read in, is given) at the nearest start of a year, month or day
    (`grid`; None: as it is)."""
    if grid is None or not len(dates):
        return dates
    if tz is not None:          # on the zone's wall clock, and back to UTC (a midnight that is twice: the later one)
        wall = on_grid(dates.dt.tz_localize("UTC").dt.tz_convert(tz).dt.tz_localize(None), grid)
        at = wall.dt.tz_localize(tz, ambiguous=np.zeros(len(wall), bool), nonexistent="shift_forward")
        return at.dt.tz_convert("UTC").dt.tz_localize(None)
    period = dates.dt.to_period(GRIDS[grid])
    before, after = period.dt.start_time, (period + 1).dt.start_time
    return before.where(dates - before <= after - dates, after)
