"""How the app writes a number in a table, a chart label or the HTML report: by the kind of its column (a year, a
whole number, money, a share, another number, a row id or text), so that a year reads "2017" and not "2,017", a
count "36,637" and not "36.637k", a price "80.07" and an empty cell nothing at all; predictions at the precision
of the target's own values. Downloads keep the raw values (no function here touches them). Plain numpy/pandas."""
from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np
import pandas as pd

from feat_engine.preprocess.dates import date_grid

KINDS = ("year", "whole", "money", "share", "number", "id", "text")
"""The kinds of column `column_kind_of` tells apart."""

YEARS = (1800, 2100)           # whole numbers within these read as years where the name does not say otherwise
YEAR_WORDS = ("year", "yr", "yyyy", "season", "vintage", "built", "founded", "established", "cohort")
MONEY_WORDS = ("price", "cost", "budget", "revenue", "salary", "income", "amount", "adr", "fee", "fare", "wage",
               "spend", "spending", "sales", "profit", "payment", "rent", "usd", "eur", "gbp", "dollar", "euro",
               "turnover", "earning", "earnings", "balance", "debt", "loan", "charge", "charges", "tax", "value_eur")
MONEY_SIGNS = ("$", "€", "£", "¥", "₹", "₩", "₽", "¢")
ID_WORDS = ("id", "row", "index", "idx")
NOT_YEAR_WORDS = ("count", "total", "qty", "quantity", "num", "number", "sum", "area", "sqft", "size", "length",
                  "width", "height", "weight", "population", "score", "points", "minutes", "seconds", "mm", "cm", "km",
                  "kg", "calories", "distance", "days", "hours", "rooms", "units", "visits", "views", "clicks")
SHARE_DECIMALS = 3             # a share at most: 0.912, as the metric cards print a score
MONEY_DECIMALS = 2
DIGITS = 3                     # significant digits of any other number
SAMPLE = 20_000                # values a column's kind and precision are read from, at most

Formatter = Callable[[object], str]


def _words(name) -> list[str]:
    """The words of a column name: split at anything not a letter or digit and at camelCase ("historicalADR",
    "arrival_date_year" -> historical, adr / arrival, date, year), lower case."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", str(name))
    return [w for w in re.split(r"[^0-9A-Za-z]+", text.lower()) if w]


def _says(name, words: tuple[str, ...]) -> bool:
    """Whether the name holds one of `words`, as a word or (words of four letters or more) the start of one."""
    return any(w == x or (len(x) >= 4 and w.startswith(x)) for w in _words(name) for x in words)


def is_money_name(name) -> bool:
    return _says(name, MONEY_WORDS) or any(s in str(name) for s in MONEY_SIGNS)


def _finite(values) -> np.ndarray | None:
    """The finite values of a number column as floats (a sample of SAMPLE at most), None for any other column
    (text, categories, booleans, dates)."""
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
        return None
    x = s.to_numpy(dtype=float, na_value=np.nan)
    x = x[np.isfinite(x)]
    if len(x) > SAMPLE:
        x = x[np.linspace(0, len(x) - 1, SAMPLE).astype(int)]
    return x


def _all_whole(x: np.ndarray) -> bool:
    return bool(np.all(x == np.round(x)))


def decimals_of(values) -> int | None:
    """How many decimals the values of a number column carry (0 for whole numbers; the fewest d <= 6 that every
    value is written with), None where more than 6 (measurements, computed values) or not a number column."""
    x = _finite(values)
    if x is None or not len(x):
        return None
    single = getattr(getattr(values, "dtype", None), "itemsize", 8) == 4        # float32: its own rounding
    for d in range(7):
        scaled = x * 10.0 ** d
        if np.all(np.abs(scaled - np.round(scaled)) <= np.maximum(1e-9, (1e-6 if single else 1e-12) * np.abs(scaled))):
            return d
    return None


def column_kind_of(values, name=None) -> str:
    """The kind of a column, from its name and its values (`KINDS`):

    * "year": whole numbers within YEARS, in a column whose name says year (YEAR_WORDS) or, where the name does
      not say it counts or measures something (NOT_YEAR_WORDS), whose every value lies there;
    * "money": a name hinting at money (MONEY_WORDS: price, cost, revenue, adr, ...) or holding a currency sign;
    * "id": whole numbers in a column named id, row or index (written without separators);
    * "whole": only whole numbers; "share": within [0, 1], not all whole; "number": any other number;
    * "text": text, categories, booleans and dates (written as they are)."""
    name = getattr(values, "name", None) if name is None else name
    x = _finite(values)
    if x is None:
        return "text"
    if not len(x):
        return "money" if is_money_name(name) else "number"
    whole = _all_whole(x)
    in_years = whole and bool(np.all((x >= YEARS[0]) & (x <= YEARS[1])))
    if in_years and _says(name, YEAR_WORDS):
        return "year"
    if is_money_name(name):
        return "money"
    if whole and _says(name, ID_WORDS):
        return "id"
    if in_years and not _says(name, NOT_YEAR_WORDS):
        return "year"
    if whole:
        return "whole"
    if np.all((x >= 0) & (x <= 1)):
        return "share"
    return "number"


def _missing(value) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):       # a list or an array in a cell
        return False


def significant(x: float, digits: int = DIGITS, commas: bool = True) -> str:
    """x to `digits` significant digits (never fewer than its integer part has), whole numbers whole, in plain
    decimals down to a millionth (scientific below), thousands separated unless `commas` is False."""
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}" if commas else str(int(x))
    rounded = float(f"{x:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(rounded)))
    if magnitude < -6:
        return f"{x:.{digits - 1}e}"
    return f"{x:{',' if commas else ''}.{max(0, digits - 1 - magnitude)}f}"


def format_value(value, kind: str = "number", decimals: int | None = None) -> str:
    """One cell as the app writes it, by its column's kind (`column_kind_of`): empty for a missing cell (never
    "None" or "nan"); a year without separators ("2017"); whole numbers with separators and no decimals; money with
    separators and at most two decimals; a share to SHARE_DECIMALS decimals at most; any other number to DIGITS
    significant digits; row ids as they are. A value that is not whole in a whole-number, year or id column (a
    prediction, a median) gets one decimal. `decimals` fixes the decimals: of every number (money and shares at
    most MONEY_DECIMALS and SHARE_DECIMALS), but in whole-number, year and id columns of the values that are not
    whole only. Text, booleans and dates as they are."""
    if _missing(value):
        return ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    x = float(value)
    if not math.isfinite(x):
        return "∞" if x > 0 else "-∞"
    whole = x.is_integer() and abs(x) < 1e15
    if kind in ("year", "id"):
        return str(int(x)) if whole else f"{x:.{1 if decimals is None else decimals}f}"
    if kind == "whole":
        return f"{int(x):,}" if whole else f"{x:,.{1 if decimals is None else decimals}f}"
    if kind == "money":
        d = MONEY_DECIMALS if decimals is None else min(decimals, MONEY_DECIMALS)
        return f"{int(x):,}" if whole and decimals is None else f"{x:,.{d}f}"
    if kind == "share":
        if decimals is not None:
            return f"{x:.{min(decimals, SHARE_DECIMALS)}f}"
        if whole:
            return str(int(x))
        if abs(x) < 10.0 ** -SHARE_DECIMALS:          # a small share keeps a digit: 0.0004, not 0.000
            return significant(x, 1)
        return f"{x:.{SHARE_DECIMALS}f}"
    if decimals is not None:
        return f"{x:,.{decimals}f}"
    return significant(x)


def column_format(values, name=None) -> Formatter:
    """The formatter of one column's cells: its kind (`column_kind_of`) and the decimals its values carry where
    they carry few, so that a column prints alike from row to row: money and shares ("80.00" under "80.07"; "0.25"
    under "0.50"), and numbers written with one or two decimals ("5.00" under "14.23"); numbers with more to
    DIGITS significant digits; dates that are all at midnight as their day."""
    kind = column_kind_of(values, name)
    decimals = None
    if kind in ("money", "share", "number"):
        d = decimals_of(values)
        if kind == "number":
            decimals = d if d is not None and 0 < d <= 2 else None
        elif d is None or d > 0:
            cap = MONEY_DECIMALS if kind == "money" else SHARE_DECIMALS
            decimals = cap if d is None else min(max(d, 2), cap)

    days = pd.api.types.is_datetime64_any_dtype(values) and date_grid(pd.Series(values)) is not None

    def fmt(value) -> str:
        if days and not _missing(value):
            return value.strftime("%Y-%m-%d")          # dates at midnight: the day alone, not "2018-11-16 00:00:00"
        return format_value(value, kind, decimals)

    fmt.kind, fmt.decimals = kind, decimals
    return fmt


def prediction_format(target_values, name=None) -> Formatter:
    """The formatter of predictions of a number target, at the precision the target's observed values carry: a
    whole-number target (or a year) to one decimal (59.7 next to an actual 57, not 59.6548), money to two, a target
    written with a few decimals to as many (shares to SHARE_DECIMALS at most), any other to DIGITS significant
    digits."""
    kind = column_kind_of(target_values, name)
    if kind == "text":
        return column_format(target_values, name)
    d = decimals_of(target_values)
    if kind in ("year", "whole", "id"):
        decimals = 1
    elif kind == "money":
        decimals = MONEY_DECIMALS
    elif kind == "share":
        decimals = SHARE_DECIMALS if d is None else min(max(d, 2), SHARE_DECIMALS)
    else:
        decimals = d if d is not None and d <= 4 else None
    if kind == "id":
        kind = "whole"

    def fmt(value) -> str:
        if not _missing(value) and isinstance(value, (int, float, np.integer, np.floating)) \
                and not isinstance(value, (bool, np.bool_)) and decimals is not None and math.isfinite(float(value)):
            x = float(value)
            return f"{x:.{decimals}f}" if kind == "year" else f"{x:,.{decimals}f}"
        return format_value(value, kind, decimals)

    fmt.kind, fmt.decimals = kind, decimals
    return fmt


def formats_for(df: pd.DataFrame) -> dict:
    """Each column's formatter (`column_format`), by column label."""
    return {c: column_format(df.iloc[:, i], c) for i, c in enumerate(df.columns)}


DELTA_FLOOR = 5e-5      # score differences below this are shown as none


def delta_text(x: float | None, digits: int = 2) -> str:
    """A difference of two scores, signed, in plain decimals: "+0.012", "-1,235", "+0.0004" (one significant digit
    below a thousandth; never "4.3e-04"); "0" below DELTA_FLOOR (no difference at the 4 decimals scores are read
    to: 1.0 against 0.99999999 is a tie), "n/a" where missing."""
    if x is None or not np.isfinite(x):
        return "n/a"
    if abs(x) < DELTA_FLOOR:
        return "0"
    sign = "+" if x > 0 else "-"
    x = abs(float(x))
    if x < 1e-3:
        magnitude = math.floor(math.log10(x))
        return f"{sign}{x:.{-magnitude}f}"
    return sign + significant(x, digits)


def count_text(n) -> str:
    """A count: a whole number with thousands separators ("36,637", never "36.637k")."""
    return "" if _missing(n) else f"{int(round(float(n))):,}"


def text_frame(df: pd.DataFrame, formats: dict | None = None) -> pd.DataFrame:
    """The table as the app writes it, every cell a string (`formats` by column label, else each column's own
    `column_format`); the same index and columns. For the HTML report; the downloads keep the raw values."""
    formats = {**(formats_for(df) if formats is None or any(c not in formats for c in df.columns) else {}),
               **(formats or {})}
    out = pd.DataFrame({i: [formats[c](v) for v in df.iloc[:, i].tolist()] for i, c in enumerate(df.columns)},
                       index=df.index)
    out.columns = df.columns
    return out


def style(df: pd.DataFrame, formats: dict | None = None):
    """A pandas Styler that writes each column by its kind (`formats` by column label, else `column_format` of the
    column itself) and empty cells empty, for st.dataframe; the values underneath stay as they are (sorting,
    downloads). A table with repeated labels, which a Styler cannot address by label, comes back as it is."""
    if not (df.columns.is_unique and df.index.is_unique):
        return df
    formats = {**formats_for(df), **{c: f for c, f in (formats or {}).items() if c in df.columns}}
    return df.style.format(formats, na_rep="")


def prediction_formats(target: str, observed, task: str) -> dict:
    """The formatters of a predictions table (`downloads.predictions_frame`) by column label: the predictions of a
    number target at the precision of its observed values (`prediction_format`), its true values ("<target>
    (actual)") and the classes of a category target as the column writes them (`column_format`); the probability
    columns go by their own kind (shares)."""
    actual = column_format(observed, target)
    return {target: prediction_format(observed, target) if task == "regression" else actual,
            f"{target} (actual)": actual}
