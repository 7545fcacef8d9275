"""Checking tables for the app, without Streamlit: the upload limit, the structure FEAT needs,
column types and the schema, targets. Reading is the engine's (`feat_engine.io.load_table`), the
one reader the `feat` CLI uses too, so both take the same files and give the same messages; files
on the server, by path or SQL query, are read by `feat_engine.sources`.

Every problem a user can cause raises `TableError`, whose `problem` names the file, column or
value and whose `fix` says what to do; the views show it with `st.error`. Nothing here changes
the user's values: type overrides only change how a column is read (see `apply_schema`), and
every cell that cannot be read that way is reported.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd

from app import summary
from feat_engine import infer_task, is_continuous, sources
from feat_engine.errors import FEATDataWarning, TableError
from feat_engine.estimators import LOCAL_CONTEXT
from feat_engine.inference import run_bytes
from feat_engine.io import DELIMITERS, ENCODINGS, Loaded, load_table  # noqa: F401  (the Data view's reading options)
from feat_engine.preprocess import (CATEGORY_MARKS, column_kind, date_format, date_words, missing_marks,
                                    numbers_in_text, parse_numbers, plan_column, read_dates, row_id)
from feat_engine.reading.local_parts import rows_per_run
from feat_engine.reading.read_budget import READ_CELLS, plan_reading
from feat_engine.targets import a_class_a_row

MAX_UPLOAD_MB = 1024  # the app's upload limit: a CSV this large holds about 7.5M rows x 20 columns, which the memory
                      # model below puts at 7 GiB for a run at the defaults, within a 16 GB machine's
SENT_MB = 2 * MAX_UPLOAD_MB   # keep in step with .streamlit/config.toml [server] maxUploadSize: the browser sends files
                              # up to this size, so that one over the app's limit reaches it and gets a red box
# The memory model: the peak RSS of Predict's Evaluate above the loaded table is RUN_BYTES[0] + RUN_BYTES[1] per table
# cell + RUN_BYTES[2] per context cell the engine reads (the reading plan's), the least-squares fit of `python
# bench/memory.py` (docs/decisions/0040-app-memory-check.md), times MEMORY_MARGIN
RUN_BYTES = (487e6, 30.0, 82.0)
MEMORY_MARGIN = 1.3

TYPES = ("numeric", "categorical", "ignore")

# --------------------------------------------------------------------------- reading

def check_upload_size(name: str, n_bytes: int, max_mb: float = MAX_UPLOAD_MB) -> None:
    """Raise a TableError naming the limit and the path option if an upload of n_bytes is over max_mb."""
    if n_bytes > max_mb * 2**20:
        raise TableError(f"{name}: {n_bytes / 2**20:,.0f} MB is over the {max_mb:,.0f} MB upload limit.",
                         "Open it by path under 'Open a file on this server' (any size that fits in memory), or "
                         "upload a sample of the rows, or Parquet, which is much smaller than CSV.")


def read_table_bytes(data: bytes, name: str, delimiter: str = "auto", encoding: str = "auto",
                     max_mb: float = MAX_UPLOAD_MB) -> Loaded:
    """Parse an uploaded file with the engine's reader and check its structure (see `check_table`).
    Whether it fits this machine is `check_fits_machine`, checked apart (memory changes)."""
    check_upload_size(name, len(data), max_mb)
    loaded = load_table(data, name, delimiter, encoding)
    check_table(loaded.df, name)
    return loaded


def read_source(source: str, sql: bool = False, delimiter: str = "auto",
                encoding: str = "auto") -> tuple[Loaded, sources.Stamp]:
    """A table on this server: the file or folder at the path `source` (`feat_engine.sources.open_path`;
    `delimiter` and `encoding` for text files), or with `sql` the result of the query `source` (`run_sql`),
    checked as an upload is (`check_table`). With the stamp of the files it read, taken before reading them,
    so that a file changed while it was read shows as changed."""
    stamp = sources.source_stamp(source, sql)
    loaded = sources.run_sql(source, delimiter, encoding) if sql else sources.open_path(source, delimiter, encoding)
    check_table(loaded.df, loaded.name, query=sql)
    return loaded, stamp


def read_notes(loaded: Loaded) -> list[str]:
    """What the Data view says of how a table was read: a text file's delimiter and encoding, then the
    reader's notes."""
    first = [f"delimiter {DELIMITERS.get(loaded.delimiter, repr(loaded.delimiter))}, encoding {loaded.encoding}"] \
        if loaded.delimiter else []
    return first + list(loaded.notes)


def source_changes(source: str, sql: bool, before: sources.Stamp) -> list[str]:
    """How the files the path or query `source` reads differ now from their stamp `before` (`read_source`),
    file by file: "a.parquet changed", "b.parquet is new", "c.parquet is gone"; [] when none did."""
    old, new = ({f: rest for f, *rest in stamp} for stamp in (before, sources.source_stamp(source, sql)))
    return ([f"{f} changed" for f in old if f in new and old[f] != new[f]]
            + [f"{f} is new" for f in new if f not in old] + [f"{f} is gone" for f in old if f not in new])


def check_table(df: pd.DataFrame, name: str, query: bool = False) -> None:
    """What the app's views need beyond a readable table: two columns or more, and values. `query`: the
    table is a SQL query's result, which the fixes then speak of."""
    if df.shape[1] == 1:
        raise TableError(
            f"{name}: the table has a single column ({df.columns[0]!r}); FEAT needs at least two "
            "(features and a target, or two columns to impute from each other).",
            "Select two columns or more." if query else
            "If the file has more columns, pick the right delimiter; otherwise add columns.")
    if df.isna().all(axis=None):
        raise TableError(f"{name}: every cell is missing.",
                         "Change the query so that it returns values." if query else "Use a table with values.")


# --------------------------------------------------------------------------- size

def available_memory() -> int:
    """Free memory in bytes (FEAT_APP_AVAILABLE_BYTES overrides it, for tests and for
    capping what the app takes on a shared machine)."""
    if os.environ.get("FEAT_APP_AVAILABLE_BYTES"):
        return int(float(os.environ["FEAT_APP_AVAILABLE_BYTES"]))
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:  # pragma: no cover - psutil is a dev dependency
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return 8 << 30


def read_cells(n_rows: int, n_cols: int, local_context: int | None = LOCAL_CONTEXT) -> int:
    """The context cells the engine reads at the estimators' defaults on a table of n_rows x n_cols (the reading
    budget's plan, `feat_engine.reading.read_budget.plan_reading`): the memory model's third term."""
    return plan_reading(max(n_rows, 1), n_cols + 1, 1, 4, None, local_context, READ_CELLS).cells


def estimated_bytes(n_rows: int, n_cols: int, d_model: int = 128, local_context: int | None = LOCAL_CONTEXT) -> int:
    """Peak memory of a FEAT run on the table at the estimators' defaults, above the table: the memory model
    (RUN_BYTES: a fixed part, the table's cells, which the preprocessing and the classical models read whole, and
    the context cells the engine reads) times MEMORY_MARGIN, plus the engine's own peak for the context rows one
    run reads (`feat_engine.inference.run_bytes`: small in local parts, a copy of the tokens of a whole context)."""
    fixed, per_cell, per_read = RUN_BYTES
    plan = plan_reading(max(n_rows, 1), n_cols + 1, 1, 4, None, local_context, READ_CELLS)
    model = fixed + per_cell * n_rows * n_cols + per_read * plan.cells        # plan.cells: `read_cells`
    return int(MEMORY_MARGIN * model + run_bytes(rows_per_run(plan.rows, local_context), n_cols, d_model))


def rows_that_fit(n_cols: int, available: int, d_model: int = 128) -> int:
    """The most rows (a multiple of 1,000, at least 1,000) of n_cols columns whose `estimated_bytes` is within 80%
    of `available`."""
    lo, hi = 1, 10_000
    while estimated_bytes(hi * 1000, n_cols, d_model) <= 0.8 * available and hi < 10**7:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if estimated_bytes(mid * 1000, n_cols, d_model) <= 0.8 * available else (lo, mid)
    return lo * 1000


def memory_problem(n_rows: int, n_cols: int, name: str = "table", available: int | None = None,
                   d_model: int = 128) -> TableError | None:
    """The problem, when a default FEAT run on n_rows x n_cols would take more than 80% of the free memory; its fix
    names the largest sample that passes this same check (`rows_that_fit`)."""
    avail = available_memory() if available is None else available
    need = estimated_bytes(n_rows, n_cols, d_model)
    if need <= 0.8 * avail:
        return None
    return TableError(
        f"{name}: {n_rows:,} rows x {n_cols} columns needs about {need / 2**30:.1f} GiB for a FEAT run, "
        f"but this machine has {avail / 2**30:.1f} GiB free.",
        f"Use a random sample of at most about {rows_that_fit(n_cols, avail, d_model):,} rows, or drop columns you "
        "do not need.")


def check_fits_machine(n_rows: int, n_cols: int, name: str = "table", available: int | None = None,
                       d_model: int = 128) -> None:
    """Raise `memory_problem`'s TableError, if there is one."""
    problem = memory_problem(n_rows, n_cols, name, available, d_model)
    if problem is not None:
        raise problem


# --------------------------------------------------------------------------- types

def detect_type(s: pd.Series) -> tuple[str, str]:
    """(type, why) for one column: numeric, categorical or ignore. The engine's rule decides
    (`feat_engine.preprocess.plan_column`: numbers, dates, categories, or dropped as constant or as
    near-unique text); beside it, a row id to ignore (`preprocess.row_id`, which the CLI leaves out too: consecutive
    whole numbers, or whole numbers that differ on every row under a row-name header such as 'rownames'), and the
    app's own display choice: whole numbers of two values are categories."""
    nn = s.dropna()
    if nn.empty:
        return "ignore", "all missing"
    why = row_id(s)
    if why is not None:
        return "ignore", why
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and nn.nunique() == 2:
        if pd.api.types.is_integer_dtype(s) or bool(np.all(np.mod(nn.to_numpy(dtype=float), 1) == 0)):
            return "categorical", "2 integer values"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FEATDataWarning)      # the reason below says what the note would
        plan = plan_column(s)
    if isinstance(plan, str):
        return "ignore", {"near-unique text/ID": "nearly unique text (an id or free text)"}.get(plan, plan)
    if plan.kind == "datetime":          # read as numbers: its parts
        parts = f", read as their {summary.date_parts(plan.parts)}"
        if plan.text:
            words = date_words(plan.date_format)
            return "numeric", f"{words} written as text (like {nn.iloc[0]!r}){parts if words == 'dates' else ''}"
        return "numeric", f"dates{parts}"
    if plan.kind == "numeric":
        if plan.text:
            other = int(numbers_in_text(s).isna().sum() - s.isna().sum())
            return "numeric", "text holding numbers" + (f" ({other} not numbers, read as empty)" if other else "")
        return "numeric", "numbers"
    if pd.api.types.is_bool_dtype(s):
        return "categorical", "boolean"
    marked = missing_marks(nn, CATEGORY_MARKS)
    marks = f"; {_marks_held(nn, marked)}, read as empty" if marked.any() else ""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "categorical", "category dtype" + marks
    return "categorical", f"text with {nn[~marked].nunique():,} distinct values" + marks


def _marks_held(s: pd.Series, marked: pd.Series) -> str:
    """"12 cells hold '?'" for the cells `marked` of s (up to three of their values)."""
    n = int(marked.sum())
    return f"{n} cell{'s hold' if n > 1 else ' holds'} {', '.join(repr(v) for v in s[marked].astype(str).unique()[:3])}"


def detect_types(df: pd.DataFrame) -> dict[str, tuple[str, str]]:
    return {c: detect_type(df[c]) for c in df.columns}


def empty_cells(df: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Which cells of df are empty as FEAT reads them (bool, df's shape): the file's empty cells, and in the columns
    the model reads (`table`, `apply_schema`'s) those the reading empties too: "?" in a column of categories, text
    that is not a number in a column read as numbers."""
    empty = df.isna()
    for c in table.columns:
        empty[c] = table[c].isna()
    return empty


def schema_frame(df: pd.DataFrame, detected: dict[str, tuple[str, str]], chosen: dict[str, str] | None = None,
                 empty: pd.DataFrame | None = None) -> pd.DataFrame:
    """The schema table shown in the Data view: one row per column, with its summary (`app.summary`); its share of
    empty cells and its distinct values as FEAT reads them where `empty` (`empty_cells`) is given, else as in df."""
    chosen = chosen or {}
    empty = df.isna() if empty is None else empty
    rows = []
    for c in df.columns:
        t, why = detected[c]
        use = chosen.get(c, t)
        read = df[c].mask(empty[c]) if empty[c].to_numpy().any() else df[c]       # its cells as FEAT reads them
        rows.append({
            "column": c, "use as": use, "detected": t, "why": why, "dtype": str(df[c].dtype),
            "missing": float(empty[c].mean()) if len(df) else 0.0, "distinct": int(read.nunique()),
            "distribution": summary.distribution(read, use), "summary": summary.describe(read, use),
        })
    return pd.DataFrame(rows)


def apply_schema(df: pd.DataFrame, types: dict[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """The table the model sees: ignored columns dropped, overridden columns re-read.

    * numeric on a text column: values are parsed as numbers, or as dates when the column holds
      dates written one way; every value that does not parse is reported (and would be missing
      to the model).
    * categorical on a numeric column, or on text that holds numbers: the values stay as they are, as a pandas
      category (the engine would read the text as numbers). Text that holds dates is read as dates whatever its
      type, and a note says so.
    The input frame is not modified. Returns (table, notes).
    """
    out, notes = {}, []
    for c in df.columns:
        t = types.get(c, "numeric")
        if t == "ignore":
            continue
        s = df[c]
        if t == "numeric" and column_kind(s) == "categorical" and not pd.api.types.is_bool_dtype(s):
            fmt = None if numbers_in_text(s) is not None else date_format(s)
            num = parse_numbers(s) if fmt is None else read_dates(s, fmt)
            bad = s.notna() & num.isna()
            if bad.any():
                ex = ", ".join(repr(v) for v in s[bad].astype(str).unique()[:3])
                what = "numbers" if fmt is None else f"{date_words(fmt)} written like {str(s[num.notna()].iloc[0])!r}"
                notes.append(f"column {c!r}: {int(bad.sum())} values are not {what} (e.g. {ex}) and are treated as missing")
            s = num
        elif t == "numeric" and pd.api.types.is_bool_dtype(s):
            s = s.astype(float)
        elif t == "categorical" and not isinstance(s.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(s) \
                and (not (pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s))
                     or numbers_in_text(s) is not None):
            s = s.astype("category")
        elif t == "categorical" and (fmt := date_format(s)) is not None:
            words = date_words(fmt)
            parts = "their day, month and weekday" if words == "dates" else "their hour"
            notes.append(f"column {c!r} holds {words} (like {str(s.dropna().iloc[0])!r}): FEAT reads them as {words} "
                         f"({parts}), and in Predict as categories as well where that tells more about the target")
        elif t == "categorical" and column_kind(s) == "categorical" \
                and (marked := missing_marks(s, CATEGORY_MARKS)).any():
            notes.append(f"column {c!r}: {_marks_held(s, marked)}, written for a missing value, and "
                         f"{'are' if marked.sum() > 1 else 'is'} read as empty")
            s = s.mask(marked)
        out[c] = s
    return pd.DataFrame(out, index=df.index), notes


# --------------------------------------------------------------------------- target

def detect_task(y: pd.Series, declared: str | None = None) -> str:
    """classification for a column declared categorical; else the engine's own rule, the one the
    CLI's `--task auto` follows (`feat_engine.infer_task`)."""
    return "classification" if declared == "categorical" else infer_task(y)


def check_target(y: pd.Series, task: str, name: str | None = None) -> None:
    """A target FEAT can learn: not all missing, two or more classes, numeric for regression."""
    name = name or str(y.name)
    nn, dated = y.dropna(), pd.api.types.is_datetime64_any_dtype(y)
    if nn.empty:
        raise TableError(f"target {name!r}: every value is missing.", "Pick another target column.")
    if task == "classification":
        if is_continuous(nn):
            raise TableError(
                f"target {name!r}: holds numbers that are not all whole, which a classifier cannot take as classes.",
                "Set the task to regression, or set the column's 'use as' to categorical in Data if they are classes.")
        k = nn.nunique()
        if k < 2:
            raise TableError(
                f"target {name!r}: has one class only ({nn.iloc[0]!r}), so there is nothing to predict.",
                "Pick another target, or upload rows of the other classes.")
        if a_class_a_row(nn):
            raise TableError(
                f"target {name!r}: {k} classes for {len(nn)} labelled rows; almost every row is its own class.",
                "Pick another target: FEAT predicts a date only as one of a few classes." if dated else
                "Set the task to regression if it is a number, or pick another target.")
    elif dated:
        raise TableError(f"target {name!r}: holds dates, which FEAT predicts only as classes, not as numbers.",
                         "Set the task to classification if the column holds a few dates (survey waves, say), or "
                         "pick another target.")
    else:
        if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
            num = parse_numbers(nn)
            if num.isna().any():
                bad = nn[num.isna()].astype(str).unique()[:3]
                raise TableError(
                    f"target {name!r}: regression needs numbers, but it holds text such as {', '.join(map(repr, bad))}.",
                    "Set the task to classification, or pick a numeric target.")
        if nn.nunique() < 2:
            raise TableError(f"target {name!r}: every value is {nn.iloc[0]!r}; there is nothing to predict.",
                             "Pick another target column.")


def check_features(X: pd.DataFrame, target: str | None = None) -> None:
    if X.shape[1] == 0:
        raise TableError(
            "no feature columns are left" + (f" besides the target {target!r}" if target else "") + ".",
            "In the Data view, set at least one other column's 'use as' to numeric or categorical.")


# --------------------------------------------------------------------------- samples

SAMPLES = {
    "breast cancer (classification, 569 x 31)": ("load_breast_cancer", "diagnosis"),
    "wine (3 classes, 178 x 14)": ("load_wine", "cultivar"),
    "diabetes (regression, 442 x 11)": ("load_diabetes", "progression"),
}


def load_sample(key: str) -> tuple[pd.DataFrame, str]:
    """A sample table that ships with scikit-learn (no download) and its target column."""
    import sklearn.datasets as skd
    loader, target = SAMPLES[key]
    bunch = getattr(skd, loader)(as_frame=True)
    df = bunch.frame.copy()
    df = df.rename(columns={"target": target})
    if loader == "load_breast_cancer":
        df[target] = np.where(bunch.target == 0, "malignant", "benign")
    elif loader == "load_wine":
        df[target] = np.asarray(bunch.target_names)[bunch.target]
    return df, target
