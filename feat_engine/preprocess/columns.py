"""Real tables -> the engine's float32 matrices, and back. Numeric columns (and text columns of numbers) are
standardised with the context's statistics and clipped to +-CLIP; categorical columns become integer codes fixed on
the context, nominal ones marked for target statistics (`target_stats.py`); datetimes (and text columns of dates)
become numeric parts; near-unique text/ID and constant columns are dropped with a `FEATDataWarning`; missing cells
are NaN. `TablePreprocessor.inverse_transform` fills only the original table's NaN cells, each number within its
column's support (`support.py`): the context's range, the decimals its values carry, one of its values where it takes
few (docs/decisions/0012-preprocessing.md)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable

import numpy as np
import pandas as pd
from scipy.sparse import issparse
from sklearn.utils.validation import check_array

from ..errors import FEATDataWarning, FEATInputError, named, readable_cells, sklearn_words
from .dates import DATE_PARTS, date_grid, from_days, on_grid
from .support import decimals, duration_step, few_values, within
from .text_values import (CATEGORY_MARKS, MISSING_MARKS, date_format, date_words, format_number, missing_marks,
                          number_format, numbers_in_text, parse_numbers, read_dates)

CLIP = 5.0                    # standardised values are clipped to [-CLIP, CLIP]
ID_UNIQUE_SHARE = 0.9         # text columns with more unique values than this share of rows ...
ID_MIN_UNIQUE = 20            # ... and at least this many of them are treated as IDs and dropped
NOMINAL_MIN_LEVELS = 3        # unordered categoricals with at least this many levels get target statistics


def standardise(X: np.ndarray, n_ctx: int) -> np.ndarray:
    """(x - mean_ctx) / std_ctx per column over the first n_ctx rows, clipped to +-CLIP; NaN stays NaN, and a column
    empty in the context keeps mean 0 and deviation 1. numpy is never asked for an empty slice's statistics: on
    `map_runs`' worker threads a `catch_warnings` block is no guard (other threads reset the process's filters)."""
    ctx, seen = X[:n_ctx], ~np.isnan(X[:n_ctx]).all(0)
    mu, sd = (np.full(X.shape[1], v, np.result_type(X.dtype, np.float32)) for v in (0.0, 1.0))
    part = ctx if seen.all() else ctx[:, seen]      # the whole context where it can: the same sums as ever
    mu[seen], sd[seen] = np.nanmean(part, 0), np.nanstd(part, 0)
    mu = np.where(np.isfinite(mu), mu, 0.0)
    sd = np.where(np.isfinite(sd) & (sd > 1e-8), sd, 1.0)
    return np.clip((X - mu) / sd, -CLIP, CLIP)


def as_frame(X: Any, what: str = "X", min_rows: int = 1) -> pd.DataFrame:
    """DataFrame view of X (array columns are named 0..D-1) after scikit-learn's `check_array`: 2-D,
    at least `min_rows` rows and one column, no complex numbers; sparse input is refused.

    Arrays go through `check_array` itself; a DataFrame keeps its dtypes, so only its shape does
    (and its columns are checked for complex numbers by name). Raises `FEATInputError` with
    scikit-learn's own words ("Reshape your data", "0 feature(s)", "Complex data not supported").
    """
    if issparse(X):
        raise FEATInputError(f"{what} is a sparse {type(X).__name__}: sparse input is not supported, as FEAT reads "
                             f"every cell, zeros included; densify it with {what}.toarray() if it fits in memory "
                             f"(dense, this one takes {np.prod(X.shape) * X.dtype.itemsize / 2**20:,.1f} MiB)")
    frame = isinstance(X, pd.DataFrame)
    with sklearn_words(what):
        arr = check_array(np.broadcast_to(np.float32(0), X.shape) if frame else X, dtype=None,
                          ensure_all_finite=False, ensure_min_samples=min_rows, input_name=what)
    if not frame:
        return pd.DataFrame(arr)
    complex_columns = [c for c, t in X.dtypes.items() if pd.api.types.is_complex_dtype(t)]
    if complex_columns:
        raise FEATInputError(f"{what}: Complex data not supported: columns {complex_columns} hold complex numbers")
    repeated = X.columns[X.columns.duplicated()].unique().tolist()
    if repeated:
        raise FEATInputError(f"{what}: columns {repeated} appear more than once; give each column its own name")
    return X


def column_kind(s: pd.Series) -> str:
    """How its dtype reads: "numeric" (numbers, durations), "datetime" or "categorical" (booleans, text, the rest)."""
    if pd.api.types.is_bool_dtype(s.dtype):
        return "categorical"
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return "datetime"
    if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_timedelta64_dtype(s.dtype):
        return "numeric"
    return "categorical"


def unordered(s: pd.Series) -> bool:
    """A categorical column whose codes carry no order: not boolean, not an ordered category."""
    ordered = pd.api.types.is_bool_dtype(s.dtype) or (isinstance(s.dtype, pd.CategoricalDtype) and s.cat.ordered)
    return column_kind(s) == "categorical" and not ordered


def _unparsed(s: pd.Series, parsed: pd.Series) -> str:
    """For a text column s read as `parsed`: '; N values that do not parse (e.g. '?') are read as missing', or ''."""
    bad = s.notna() & parsed.isna()
    if not bad.any():
        return ""
    ex = ", ".join(repr(v) for v in s[bad].astype(str).unique()[:3])
    return f"; {int(bad.sum())} values that do not parse (e.g. {ex}) are read as missing"


def _unreadable_note(bad: pd.Series, kind: str) -> str:
    """"column 'x': 2 rows hold a value that is not a finite number (e.g. 'inf', '-inf'), read as missing", for
    the values `bad` of one column that its encoding reads as missing."""
    held = {"numeric": "a value that is not a finite number", "datetime": "a value that is not a date",
            "categorical": "a level the context does not have"}[kind]
    n = len(bad)
    ex = ", ".join(repr(v) for v in pd.unique(bad.astype(str))[:3])
    return f"column {bad.name!r}: {n} row{'s hold' if n > 1 else ' holds'} {held} (e.g. {ex}), read as missing"


def _column_marks(c: ColumnPlan) -> set[str]:
    """The marks column c reads as missing: all of `MISSING_MARKS` in numbers or dates written as text, the marks
    no category is named (`CATEGORY_MARKS`) in categories, none in numbers."""
    return MISSING_MARKS if c.text else CATEGORY_MARKS if c.kind == "categorical" and not c.levels else set()


def numbers(s: pd.Series, finite: bool = True) -> np.ndarray:
    """(N,) float64 values of a column of numbers (a duration's seconds), NaN where missing or (`finite`) infinite."""
    v = s.dt.total_seconds() if pd.api.types.is_timedelta64_dtype(s.dtype) else pd.to_numeric(s, errors="coerce")
    v = v.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isfinite(v), v, np.nan) if finite else v


@dataclass
class ColumnPlan:
    """How one source column becomes features."""

    name: Hashable
    kind: str                                  # numeric | categorical | datetime
    parts: list[str] = field(default_factory=list)   # kept datetime parts
    categories: pd.Index | None = None
    decimals: int | None = None                # numeric: the most decimals its values carry (`support.decimals`)
    fill_values: tuple[float, ...] = ()        # numeric: its few values, one of which a fill takes (`few_values`)
    lower: float = -np.inf                     # numeric (dates: in days): the smallest and largest context value;
    upper: float = np.inf                      # ... an inverse stays within them (a count gets no negative)
    grid: str | None = None                    # datetime: the calendar grid its values lie on (`dates.date_grid`)
    tz: Any = None                             # datetime: the time zone its grid is read in (its dtype's)
    step: float | None = None                  # numeric: the unit a duration column holds whole numbers of (seconds)
    nominal: bool = False                      # unordered categorical of >= NOMINAL_MIN_LEVELS levels
    text: bool = False                         # numbers or dates given as text (date_format for dates)
    date_format: str | None = None
    number_format: str | None = None           # numbers given as text with signs or grouping (`number_format`)
    levels: bool = False                       # a whole-number column's values read again as nominal levels

    @property
    def integer(self) -> bool:
        """A numeric column of whole values only."""
        return self.decimals == 0

    def features(self) -> list[str]:
        if self.levels:
            return [f"{self.name} (levels)"]
        return [f"{self.name}.{p}" for p in self.parts] if self.kind == "datetime" else [str(self.name)]

    def codes(self, s: pd.Series) -> np.ndarray:
        """(N,) float64 level codes of a categorical column, -1 for a level the context never saw (missing too)."""
        if self.levels:
            s = pd.Series(self.values(s))
        return self.categories.get_indexer(s).astype(np.float64)

    def values(self, s: pd.Series) -> np.ndarray:
        """(N,) float64 values of a number or date column (a date's days since 1970), NaN for missing: what a
        column read as its levels (`levels`) has its levels of. A date's plan has parts (its levels' plan: "days")."""
        if self.parts:
            return DATE_PARTS["days"](read_dates(s, self.date_format) if self.date_format is not None else s)
        return numbers(parse_numbers(s) if self.text else s)

    def encode(self, s: pd.Series) -> np.ndarray:
        """(N, n_features) float64, unscaled, NaN for missing / unseen."""
        if self.kind == "numeric":
            return self.values(s)[:, None]
        if self.kind == "categorical":
            codes = self.codes(s)                                         # -1: missing or unseen
            codes[codes < 0] = np.nan
            return codes[:, None]
        if self.date_format is not None:
            s = read_dates(s, self.date_format)
        return np.column_stack([DATE_PARTS[p](s) for p in self.parts])


@dataclass
class UnclippedRows:
    """What the engine's clipped matrix leaves out of some rows, for the classical models fitted beside it
    (`target_stats.py`, `stacked_model.py`): the level codes of the nominal columns, and the standardised values
    before the clip, which merges a long tail into one value."""

    codes: np.ndarray       # (N, n_nominal) `TablePreprocessor.nominal_codes`
    values: np.ndarray      # (N, D) standardised, not clipped (float32)

    def __getitem__(self, rows: Any) -> UnclippedRows:
        return UnclippedRows(self.codes[rows], self.values[rows])

    def clipped(self) -> np.ndarray:
        """The engine's matrix of these rows (`TablePreprocessor.transform`): the values clipped to +-CLIP."""
        return np.clip(self.values, -CLIP, CLIP)


def plan_column(s: pd.Series) -> ColumnPlan | str:
    """How the engine reads one context column (numbers, dates, categories), or why it drops it: the one
    typing rule of the estimators, the CLI and the app."""
    kind = column_kind(s)
    observed = s.dropna()
    fmt, parsed = None, None
    if kind == "categorical" and (parsed := numbers_in_text(s)) is not None:
        kind = "numeric"
    elif kind == "categorical" and (fmt := date_format(s)) is not None:
        kind, parsed = "datetime", read_dates(s, fmt)
        observed = parsed.dropna()
    text = parsed is not None
    shape = number_format(s) if text and kind == "numeric" else None
    if text:
        how = f"{date_words(fmt)} ({fmt})" if kind == "datetime" else \
            "numbers" + (f" such as {str(s[parsed.notna()].iloc[0]).strip()!r}" if shape else "")
        written = "categories" if isinstance(s.dtype, pd.CategoricalDtype) else "text"
        warnings.warn(f"column {s.name!r} holds {how} as {written} and is read as such{_unparsed(s, parsed)}",
                      FEATDataWarning, stacklevel=4)
    if kind == "categorical" and not isinstance(s.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(s.dtype):
        n_unique = observed.nunique()
        if n_unique >= ID_MIN_UNIQUE and n_unique >= ID_UNIQUE_SHARE * len(observed):
            return "near-unique text/ID"
    if kind == "datetime":
        parts = [p for p, f in DATE_PARTS.items() if np.nanstd(f(observed)) > 0] if len(observed) else []
        if "days" not in parts:
            return "constant"
        days = DATE_PARTS["days"](observed)
        return ColumnPlan(s.name, kind, parts=parts, text=text, date_format=fmt, lower=float(np.nanmin(days)),
                          upper=float(np.nanmax(days)), grid=date_grid(observed), tz=getattr(s.dtype, "tz", None))
    if kind == "numeric":
        raw = parsed.to_numpy(dtype=np.float64, na_value=np.nan) if text else numbers(s, finite=False)
        if np.isinf(raw).any():                          # in the words warn_unreadable uses for query rows
            warnings.warn(_unreadable_note(s[np.isinf(raw)], kind), FEATDataWarning, stacklevel=4)
        v = raw[np.isfinite(raw)]
        if len(v) == 0 or np.all(v == v[0]):
            return "constant"
        return ColumnPlan(s.name, kind, decimals=decimals(v), lower=float(v.min()), upper=float(v.max()), text=text,
                          number_format=shape, fill_values=few_values(v),
                          step=duration_step(v) if pd.api.types.is_timedelta64_dtype(s.dtype) else None)
    cats = pd.Categorical(observed).categories if not isinstance(s.dtype, pd.CategoricalDtype) else s.cat.categories
    marks = cats[missing_marks(pd.Series(cats), CATEGORY_MARKS).to_numpy()]
    if len(marks):                                     # "?" is no category: read as missing
        n = int(observed.isin(marks).sum())
        warnings.warn(f"column {s.name!r}: {n} cell{'s hold' if n > 1 else ' holds'} "
                      f"{', '.join(repr(str(m)) for m in marks)}, written for a missing value, and "
                      f"{'are' if n > 1 else 'is'} read as missing", FEATDataWarning, stacklevel=4)
        cats, observed = cats.difference(marks, sort=False), observed[~observed.isin(marks)]
    if observed.nunique() < 2:
        return "constant"
    return ColumnPlan(s.name, kind, categories=cats, nominal=unordered(s) and len(cats) >= NOMINAL_MIN_LEVELS)


class TablePreprocessor:
    """Fit on the context table; `transform` any table with the same columns."""

    def fit(self, X: pd.DataFrame) -> "TablePreprocessor":
        """Decide the encoding of every column of the context table X."""
        X = as_frame(X)
        self.columns_ = list(X.columns)
        self.plan_: list[ColumnPlan] = []
        self.dropped_: dict[Hashable, str] = {}
        self.constants_: dict[Hashable, Any] = {}      # the one observed value of each constant column
        ids, constant = [], []
        for name in X.columns:
            with readable_cells(name, "context"):
                col = plan_column(X[name])
            if isinstance(col, str):
                self.dropped_[name] = col
                (ids if col == "near-unique text/ID" else constant).append(name)
                observed = X[name].dropna()
                if col == "constant" and len(observed):
                    self.constants_[name] = observed.iloc[0]
            else:
                self.plan_.append(col)
        for cols, what in ((ids, "near-unique text/ID columns {}: they cannot generalise"),
                           (constant, "constant (or empty) columns {}: they carry no information")):
            if cols:
                warnings.warn("dropped " + what.format(named(cols)), FEATDataWarning, stacklevel=3)
        if not self.plan_:
            raise FEATInputError(f"no feature columns left after dropping {list(self.dropped_)} "
                                 f"({', '.join(sorted(set(self.dropped_.values())))})")
        raw = self._encode(X, "context")
        self.mean_ = np.nanmean(raw, axis=0)
        self.std_ = np.nanstd(raw, axis=0)
        return self

    def add_levels(self, X: pd.DataFrame, names: list[Hashable]) -> "TablePreprocessor":
        """Read the whole-number or date columns `names` of the context X twice: as numbers (dates), and right after
        each as its levels, a nominal feature "name (levels)" (`reading/coded_levels.py`)."""
        plan, mean, std, j = [], [], [], 0
        for c in self.plan_:
            k = len(c.features())
            plan.append(c)
            mean.append(self.mean_[j:j + k])
            std.append(self.std_[j:j + k])
            j += k
            if c.name in names and not c.levels:
                values = c.values(X[c.name])
                categories = pd.Index(np.unique(values[np.isfinite(values)]))
                plan.append(ColumnPlan(c.name, "categorical", parts=["days"] if c.kind == "datetime" else [],
                                       categories=categories, nominal=True, text=c.text, date_format=c.date_format,
                                       levels=True))
                codes = categories.get_indexer(values[np.isfinite(values)]).astype(np.float64)
                mean.append([codes.mean()])          # the new feature's statistics alone: the others' stay
                std.append([codes.std()])
        self.plan_ = plan
        self.mean_, self.std_ = np.concatenate(mean), np.concatenate(std)
        return self

    @property
    def feature_names_(self) -> list[str]:
        return [f for c in self.plan_ for f in c.features()]

    @property
    def nominal_(self) -> np.ndarray:
        """Feature indices of the nominal columns (their codes carry no order)."""
        return np.flatnonzero([c.nominal for c in self.plan_ for _ in c.features()])

    def detail(self, X: pd.DataFrame, what: str = "X") -> UnclippedRows:
        """What `transform` leaves out of X's rows, for the classical models fitted beside the engine."""
        return UnclippedRows(self.nominal_codes(X, what), self.transform(X, what, clip=False))

    def nominal_codes(self, X: pd.DataFrame, what: str = "X") -> np.ndarray:
        """(N, n_nominal) level codes of the nominal columns: NaN where missing ("?" too: `CATEGORY_MARKS`), -1 for a
        level the context never saw (target statistics then give it the context's mean)."""
        X = self.check_columns(X, what)
        cols = [c for c in self.plan_ if c.nominal]
        out = np.empty((len(X), len(cols)))
        for j, c in enumerate(cols):
            with readable_cells(c.name, what):
                out[:, j] = c.codes(X[c.name])
            out[X[c.name].isna().to_numpy(), j] = np.nan
            unseen = out[:, j] < 0                      # a mark is no level: read among the unseen alone
            if unseen.any():
                out[np.flatnonzero(unseen)[missing_marks(X[c.name][unseen], CATEGORY_MARKS).to_numpy()], j] = np.nan
        return out

    def warn_unreadable(self, X: pd.DataFrame, encoded: np.ndarray, what: str) -> None:
        """A FEATDataWarning per column of X whose given values its encoding (`encoded`: X's rows as
        `encode` or `transform` gave them) reads as missing: text in a numeric column, a value that is not a
        date in a date column, a level the context never had in a categorical column (a number's levels: none)."""
        j = 0
        for c in self.plan_:
            if c.levels:                                                # a new value of a number is no fault
                j += 1
                continue
            s = X[c.name]
            bad = s.notna().to_numpy() & np.isnan(encoded[:, j])        # a column's first feature: NaN if any is
            marks = _column_marks(c)
            if bad.any() and marks:                                     # "?" is missing, not unreadable
                bad[bad] = ~missing_marks(s[bad], marks).to_numpy()
            j += len(c.features())
            if bad.any():
                warnings.warn(f"{what} {_unreadable_note(s[bad], c.kind)}", FEATDataWarning, stacklevel=4)

    def check_columns(self, X: pd.DataFrame, what: str) -> pd.DataFrame:
        """X's columns in the context's order; raises naming the columns missing or unexpected."""
        X = as_frame(X, what)
        self.check_names(X.columns, what)
        return X[self.columns_]

    def check_names(self, columns: Iterable, what: str) -> None:
        """Raises naming the context's columns missing from `columns` and those unexpected in it."""
        columns = list(columns)
        missing = [c for c in self.columns_ if c not in columns]
        extra = [c for c in columns if c not in self.columns_]
        if missing or extra:
            raise FEATInputError(f"{what} columns differ from the context's: missing {missing}, unexpected {extra}")

    def _encode(self, X: pd.DataFrame, what: str = "X") -> np.ndarray:
        columns = []
        for c in self.plan_:
            with readable_cells(c.name, what):
                columns.append(c.encode(X[c.name]))
        return np.column_stack(columns)

    def encode(self, X: pd.DataFrame, what: str = "X") -> pd.DataFrame:
        """Unscaled numeric features (category codes, datetime parts), NaN for missing."""
        X = self.check_columns(X, what)
        return pd.DataFrame(self._encode(X, what), columns=self.feature_names_, index=X.index)

    def transform(self, X: pd.DataFrame, what: str = "X", clip: bool = True) -> np.ndarray:
        """(N, D) float32 for the engine: standardised with context stats, clipped to +-CLIP (unless `clip`
        is False), NaN = missing."""
        z = (self.encode(X, what).to_numpy() - self.mean_) / self.std_
        return (np.clip(z, -CLIP, CLIP) if clip else z).astype(np.float32)

    def marks_as_missing(self, X: pd.DataFrame) -> pd.DataFrame:
        """X with the missing marks of its columns as NaN (in numbers or dates written as text "?", "n.a." and the
        rest of `MISSING_MARKS`; in categories `CATEGORY_MARKS`): cells the model reads as missing, which an imputer
        then fills. X itself where there are none."""
        out = X
        for c in self.plan_:
            if not (marks := _column_marks(c)):          # a column of numbers holds no marks
                continue
            marked = missing_marks(X[c.name], marks)
            if marked.any():
                out = out.copy() if out is X else out
                out[c.name] = X[c.name].mask(marked)
        return out

    def inverse_transform(self, Z: np.ndarray, X: pd.DataFrame) -> pd.DataFrame:
        """Copy of X whose NaN cells hold the model's values Z (N, D standardised); nothing else changes. A number
        stays within its column's support (`support.within`: its range, decimals, duration unit and few values), a
        date on its grid. Cells of dropped columns stay NaN, except constant columns, whose NaN take the constant."""
        X = self.check_columns(X, "X")
        out = X.copy()
        raw = np.asarray(Z, dtype=np.float64) * self.std_ + self.mean_
        j = 0
        for c in self.plan_:
            k = len(c.features())
            s = X[c.name]
            nan = s.isna().to_numpy()
            if nan.any() and not c.levels:                # a number's levels: the number itself is filled
                out[c.name] = _fill(s, nan, _decode(c, raw[:, j:j + k]))
            j += k
        for name, value in self.constants_.items():
            nan = X[name].isna().to_numpy()
            if nan.any():
                out[name] = _fill(X[name], nan, pd.Series([value] * len(X), dtype=object))
        return out


def _decode(c: ColumnPlan, raw: np.ndarray) -> pd.Series:
    """Model values for column c (N, n_features, unscaled) -> values in the column's own terms."""
    v = raw[:, 0]
    if c.kind == "numeric":
        v = within(v, c.lower, c.upper, c.decimals, c.fill_values, c.step)      # the column's support
        shape = c.number_format or ("{:.0f}" if c.integer else "{:.6g}")
        return pd.Series([format_number(shape, x) for x in v], dtype=object) if c.text else pd.Series(v)
    if c.kind == "categorical":
        codes = np.clip(np.round(v), 0, len(c.categories) - 1).astype(int)
        return pd.Series(np.asarray(c.categories, dtype=object)[codes], dtype=object)
    v = np.clip(v, c.lower, c.upper)          # dates too: within the observed range, on the calendar grid of theirs
    dates = on_grid(from_days(v), c.grid, c.tz)
    utc = dates.dt.tz_localize("UTC") if c.text and "%z" in c.date_format else dates     # `read_dates`' offset
    return utc.dt.strftime(c.date_format).astype(object) if c.text else dates


def _fill(s: pd.Series, nan: np.ndarray, values: pd.Series) -> pd.Series:
    """s with s[nan] = values[nan], keeping the dtype (categorical, nullable, width, unit, tz) of s."""
    dtype = s.dtype
    new = values[nan].to_numpy()
    if isinstance(dtype, pd.DatetimeTZDtype):
        new = pd.DatetimeIndex(new).tz_localize("UTC").tz_convert(dtype.tz)
    elif pd.api.types.is_timedelta64_dtype(dtype):            # a duration's seconds
        new = pd.to_timedelta(new.astype(np.float64), unit="s").astype(dtype)
    elif pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype):    # its own width: a float32
        new = new.astype(getattr(dtype, "numpy_dtype", dtype))  # column takes no float64 (pandas 3 raises)
    out = s.copy()
    if isinstance(dtype, pd.CategoricalDtype):      # a category of dates filled with a date it did not have
        out = out.cat.add_categories(pd.Index(pd.unique(new)).difference(dtype.categories))
        out[nan] = new
        return out
    out[nan] = new
    return out if out.dtype == dtype else out.astype(dtype)
