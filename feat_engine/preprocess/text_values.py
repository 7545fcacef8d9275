"""Numbers and dates written as text: the values a text column holds when they are numbers (plainly, or as
spreadsheets write them: "$1,234.50", "12%", "1,234", "(99.00)" for -99; with a decimal comma in files not delimited
by commas: "1 234,50 €") or dates written one way, and how the column writes them. The one reading of such columns
for the estimators, the CLI, the file readers and the app (docs/decisions/0012-preprocessing.md and 0037)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

TEXT_PARSE_SHARE = 0.95       # a text column is read as numbers (or dates) when this share of its values parse
SHAPE_VALUES = 10_000         # distinct values of a text column of numbers that decide how it writes them
MISSING_MARKS = {"?", "-", "--", ".", "n.a.", "n/a", "na", "nan", "none", "null", "missing", "#n/a", "#value!",
                 "#div/0!"}  # written for a missing value (lower case): read as missing, not counted against numbers
# the marks no category is named, read as missing in a column of categories too; a category may well be "none",
# "n/a" or "-" (no pool, not applicable), so those stay categories there
CATEGORY_MARKS = {"?", "nan", "null", "#n/a", "#value!", "#div/0!"}


def _is_text(s: pd.Series) -> bool:
    return (pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)) \
        and not isinstance(s.dtype, pd.CategoricalDtype)


def _may_hold_dates(s: pd.Series) -> bool:
    """Text, or a category whose levels are not numbers: a table loaded with its text columns as categories (dates
    among them) has its dates there. A category of numbers, or of numbers written as text ("20240131"), stays a
    category (`numbers_in_text` reads text alone)."""
    if _is_text(s):
        return True
    if not isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_numeric_dtype(s.cat.categories.dtype):
        return False
    return numbers_in_text(pd.Series(s.cat.categories.astype(object))) is None


# a number as spreadsheets write one: a currency sign before or after it, commas between groups of three digits, a
# percent sign after it ("$1,234.50", "-12%", "1,234", "99 €"); the value is the number itself (12% reads 12)
_FORMATTED = re.compile(r"(?P<sign>[-+]?)\s*(?P<pre>[$€£¥₹]?)\s*(?P<sign2>[-+]?)"
                        r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)\s*(?P<post>%|[$€£¥₹]?)")


def _distinct(s: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """(codes, text): s's distinct values as stripped text, and each row's code among them (-1 where missing)."""
    codes, uniques = pd.factorize(s)
    return codes, pd.Series(uniques, dtype=object).map(lambda v: str(v).strip())


# a negative amount as accountants write one: a number without a sign in parentheses, "(1,234.50)", "($99)"
_IN_PARENTHESES = r"^\(\s*([^()+-]*?)\s*\)$"


def _numbers(text: pd.Series) -> pd.Series:
    """`parse_numbers` of distinct stripped texts."""
    num = pd.to_numeric(text, errors="coerce").astype(np.float64)
    rest = text[num.isna()]
    inner = rest.str.extract(_IN_PARENTHESES)[0]
    negative = inner.notna()
    rest = inner.where(negative, rest)
    found = rest[rest.str.fullmatch(_FORMATTED.pattern)]
    value = pd.to_numeric(found.str.replace(r"[$€£¥₹%,\s+]", "", regex=True), errors="coerce")
    num[found.index] = value.where(~negative[found.index], -value)
    return num


def _per_row(values: np.ndarray, codes: np.ndarray, index: pd.Index, missing: object) -> pd.Series:
    """The distinct values' `values` on the rows that hold them (`missing` on code -1)."""
    return pd.Series(np.append(values, missing)[codes], index=index)


def parse_numbers(s: pd.Series) -> pd.Series:
    """The numbers written in a text column s (float; NaN where a value is missing or not a number): what
    `pd.to_numeric` reads, and numbers written with a currency sign, commas grouping thousands or a percent sign,
    negative where written in parentheses ("(1,234.50)"). Each distinct value is read once."""
    codes, text = _distinct(s)
    return _per_row(_numbers(text).to_numpy(), codes, s.index, np.nan)


def number_format(s: pd.Series) -> str | None:
    """The `str.format` template a text column of numbers writes them in ("${:,.2f}", "{:.0f}%", "{:.1f}"): the
    currency and percent signs most of its first SHAPE_VALUES distinct values have, grouping where any has it, and
    the most decimals any has (at most 6); a second section for negatives where any is written in parentheses
    ("${:,.2f};(${:,.2f})", `format_number`); None where none is written as `_FORMATTED` reads (1e3)."""
    text = pd.Series(s.dropna().unique()[:SHAPE_VALUES], dtype=object).astype(str).str.strip()
    inner = text.str.extract(_IN_PARENTHESES)[0]
    found = inner.fillna(text).str.extract(f"^{_FORMATTED.pattern}$").dropna(subset=["num"])
    if found.empty:
        return None
    pre, post = found["pre"].mode().iloc[0], found["post"].mode().iloc[0]
    grouped = found["num"].str.contains(",", regex=False).any()
    decimals = min(6, int(found["num"].str.extract(r"\.(\d+)$")[0].str.len().fillna(0).max()))
    shape = f"{pre}{{:{',' if grouped else ''}.{decimals}f}}{' ' if post in '$€£¥₹' and post else ''}{post}"
    return f"{shape};({shape})" if inner[found.index].notna().any() else shape


def format_number(template: str, x: float) -> str:
    """x written by a `number_format` template; a template of two sections, as spreadsheets' number formats have
    ("${:,.2f};(${:,.2f})"), writes a negative number's size by the second."""
    positive, _, negative = template.partition(";")
    return negative.format(-x) if negative and x < 0 else positive.format(x)


def numbers_in_text(s: pd.Series) -> pd.Series | None:
    """A text column's values as numbers (`parse_numbers`; NaN where one is not a number) when at least
    TEXT_PARSE_SHARE of its observed values are numbers, not counting the marks tables write for a missing value
    (`MISSING_MARKS`: "?", "-", "n.a.", ...), with more than two distinct and none written with a leading zero (zip
    codes, product codes: labels, not quantities); else None."""
    observed = s.dropna()
    if not _is_text(s) or observed.empty:
        return None
    codes, text = _distinct(observed)          # each distinct value read once, for all three rules
    values = _numbers(text)
    num, counted = _per_row(values.to_numpy(), codes, observed.index, np.nan), ~_marks(text)[codes]
    if not counted.any() or num[counted].notna().mean() < TEXT_PARSE_SHARE or values.nunique() <= 2 or \
            text.str.match(r"[+-]?0\d").any():
        return None
    return num.reindex(s.index)


def missing_marks(s: pd.Series, marks: set[str] = MISSING_MARKS) -> pd.Series:
    """Where the column s holds one of `marks` (bool, on s's index); each distinct value is read once."""
    codes, text = _distinct(s)
    return _per_row(_marks(text, marks), codes, s.index, False)


def _marks(text: pd.Series, marks: set[str] = MISSING_MARKS) -> np.ndarray:
    """Which of the distinct stripped texts are `marks`."""
    return text.str.lower().isin(marks).to_numpy()


# times of day alone ("11:38:36", "9:05 PM"), which pandas' format guess does not read: the first that holds most
TIME_FORMATS = ("%H:%M:%S", "%H:%M", "%H:%M:%S.%f", "%I:%M:%S %p", "%I:%M %p", "%I:%M%p")
# months written without a day, which pandas' format guess does not read ("Jan 1960", "1960 Jan", Excel's "Jan-60")
MONTH_FORMATS = ("%b %Y", "%B %Y", "%Y %b", "%Y %B", "%b-%Y", "%b-%y", "%Y-%b", "%m/%Y", "%Y/%m")
_TIME = r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\s?([AaPp][Mm])?"     # minutes in two digits: a score "2:1" is no time


def date_words(fmt: str) -> str:
    """What a column written in the strftime format `fmt` holds, in words: "times of day" where it writes no year,
    month or day, else "dates"."""
    return "dates" if any(d in fmt for d in ("%Y", "%y", "%m", "%d", "%b", "%B", "%j")) else "times of day"


def date_format(s: pd.Series) -> str | None:
    """The strftime format of a text column (or a category of text levels) whose observed values are dates or times of
    day written one way (guessed from its first value, month or day first, or one of `TIME_FORMATS`, or of
    `MONTH_FORMATS` that reads the first value; at least TEXT_PARSE_SHARE of them parse with it, not counting
    `MISSING_MARKS`), else None. Ask `numbers_in_text` first: a column of numbers such as 20240131 is numbers, not
    dates."""
    if not _may_hold_dates(s) or s.dropna().empty:
        return None
    if isinstance(s.dtype, pd.CategoricalDtype):            # each level once, counted on the codes
        counts = s.value_counts(sort=False)
        counts = pd.Series(counts.to_numpy(), index=counts.index.astype(str).str.strip())[counts.to_numpy() > 0]
    else:
        counts = s.dropna().astype(str).str.strip().value_counts(sort=False)  # each distinct value once, in order
    counts = counts[~counts.index.str.lower().isin(MISSING_MARKS)]
    if counts.empty:
        return None
    first = str(counts.index[0])
    best, share = None, 0.0
    with warnings.catch_warnings():   # pandas notes that an ISO date ignores dayfirst: both orders are tried
        warnings.simplefilter("ignore", UserWarning)
        guessed = [pd.tseries.api.guess_datetime_format(first, dayfirst=dayfirst) for dayfirst in (False, True)]
    months = [f for f in MONTH_FORMATS if pd.notna(pd.to_datetime(first, format=f, errors="coerce"))]
    for fmt in guessed + list(TIME_FORMATS) + months:
        if fmt is None or not any(c in fmt for c in ("%d", "%m", "%b", "%B", "%H", "%I")):   # a bare year is a number
            continue
        read = pd.to_datetime(counts.index, format=fmt, errors="coerce", utc="%z" in fmt).notna()
        if fmt in TIME_FORMATS:
            read &= counts.index.str.fullmatch(_TIME)
        parsed = counts[read].sum() / counts.sum()
        if parsed > share:
            best, share = fmt, parsed
    return best if share >= TEXT_PARSE_SHARE else None


def read_dates(s: pd.Series, fmt: str) -> pd.Series:
    """A text column of dates in format `fmt` as datetimes (NaT where a value is not one); written with their offset
    from UTC (%z), in UTC: one column may hold two offsets (summer time), which pandas reads as no single zone."""
    return pd.to_datetime(s.astype(object).where(s.notna()).map(lambda v: v.strip() if isinstance(v, str) else v),
                          format=fmt, errors="coerce", utc="%z" in fmt)


# 12,5  -3  1.234,5  1 234,50 €  -12,5 %  (dots or spaces group thousands; a currency sign before or after, a percent
# sign after: spreadsheets' exports in a language that writes a decimal comma)
_DECIMAL_COMMA = r"[+-]?\s*[$€£¥₹]?\s*[+-]?(\d+|\d{1,3}([.\s]\d{3})+)(,\d+)?\s*(%|[$€£¥₹])?"


def decimal_comma_columns(df: pd.DataFrame) -> list:
    """Text columns whose every value is a number written with a decimal comma, at least one with a comma. Only for
    files not delimited by commas (`feat_engine.io`); a column with any other value stays text."""
    found = []
    for c in df.columns:
        if not (df[c].dtype == object or pd.api.types.is_string_dtype(df[c])):
            continue
        v = df[c].dropna()
        if len(v) and v.map(type).eq(str).all():
            v = v.str.strip()
            if v.str.contains(",", regex=False).any() and v.str.fullmatch(_DECIMAL_COMMA).all():
                found.append(c)
    return found


def decimal_comma_numbers(s: pd.Series) -> pd.Series:
    """The numbers of a `decimal_comma_columns` column: its digits with the comma as the decimal point, negative where
    a minus sign is written."""
    t = s.str.strip()
    v = pd.to_numeric(t.str.replace(r"[^\d,]", "", regex=True).str.replace(",", ".", regex=False))
    return v.where(~t.str.contains("-", regex=False), -v)
