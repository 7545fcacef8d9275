"""Loading and checking tables for the app, without Streamlit.

Every problem a user can cause raises `TableError`, whose message names the file, column
or value and says how to fix it; the views show it with `st.error`. Nothing here changes
the user's values: type overrides only change how a column is read (see `apply_schema`),
and every cell that cannot be read that way is reported.
"""
from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from feat_engine import infer_task, is_continuous

MAX_UPLOAD_MB = 200  # keep in step with .streamlit/config.toml [server] maxUploadSize

FORMATS = {  # extension -> reader
    ".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv",
    ".parquet": "parquet", ".pq": "parquet",
    ".xlsx": "excel", ".xlsm": "excel",
}
ACCEPTED_TEXT = "CSV (.csv, .txt), TSV (.tsv), Parquet (.parquet) or Excel (.xlsx)"
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
ENCODINGS = ("utf-8", "utf-16", "cp1252", "latin-1")

TYPES = ("numeric", "categorical", "ignore")


class TableError(ValueError):
    """A table the app cannot use. `problem` says what is wrong, `fix` what to do."""

    def __init__(self, problem: str, fix: str = ""):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} {fix}".strip())


@dataclass
class Loaded:
    df: pd.DataFrame
    name: str
    fmt: str
    encoding: str | None = None
    delimiter: str | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- text sniffing

def detect_encoding(data: bytes, name: str = "file") -> str:
    """The encoding of a text file: a BOM if present, else UTF-8, else Windows-1252.

    Bytes that look binary (NUL bytes without a UTF-16 BOM) or that no candidate decodes
    raise TableError.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = data[: 1 << 20]
    if b"\x00" in sample:
        raise TableError(
            f"{name}: the bytes are not text (they contain NUL bytes), so they cannot be decoded as a table.",
            "Check that this is the right file; a spreadsheet or database file needs its own extension "
            f"(accepted: {ACCEPTED_TEXT}), or export it to CSV in UTF-8.")
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as e:
        utf8_error = e
    try:
        data.decode("cp1252")
        return "cp1252"
    except UnicodeDecodeError:
        pass
    raise TableError(
        f"{name}: the bytes cannot be decoded as text (not UTF-8: byte 0x{data[utf8_error.start]:02x} at position "
        f"{utf8_error.start}; not Windows-1252 either).",
        "Save the file as CSV with UTF-8 encoding, or pick its encoding in 'Encoding'.")


def _first_lines(text: str, n: int = 50) -> list[str]:
    return [ln for ln in text.splitlines()[:n] if ln.strip()]


def sniff_delimiter(text: str) -> str:
    """The delimiter among , ; tab | that splits the first lines most consistently."""
    lines = _first_lines(text)
    if not lines:
        return ","
    try:
        return csv.Sniffer().sniff("\n".join(lines[:20]), delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        pass
    best, best_score = ",", -1.0
    for d in DELIMITERS:
        counts = [len(next(csv.reader([ln], delimiter=d))) for ln in lines]
        if counts[0] < 2:
            continue
        score = counts[0] * (sum(c == counts[0] for c in counts) / len(counts))
        if score > best_score:
            best, best_score = d, score
    return best


def _header_cells(text: str, delimiter: str) -> list[str]:
    for row in csv.reader(io.StringIO(text), delimiter=delimiter):
        if any(c.strip() for c in row):
            return row
    return []


def _check_header(cells: list[str], name: str) -> None:
    """Duplicate or blank column names, named."""
    stripped = [str(c).strip() for c in cells]
    seen, dupes = set(), []
    for c in stripped:
        if c in seen and c not in dupes:
            dupes.append(c)
        seen.add(c)
    if dupes:
        shown = ", ".join(repr(d) for d in dupes[:5])
        raise TableError(
            f"{name}: duplicate column names {shown}.",
            "Rename the columns so that each name appears once, then upload again.")


# --------------------------------------------------------------------------- readers

def _read_text(data: bytes, name: str, sep_default: str, delimiter: str, encoding: str) -> Loaded:
    enc = detect_encoding(data, name) if encoding == "auto" else encoding
    try:
        text = data.decode(enc)
    except (UnicodeDecodeError, LookupError) as e:
        raise TableError(f"{name}: cannot decode the bytes as {enc} ({e}).",
                         "Pick another encoding, or leave 'Encoding' on auto.") from None
    if not text.strip():
        raise TableError(f"{name}: the file holds only blank lines or whitespace.",
                         "Upload a file with a header row and at least one data row.")
    if delimiter == "auto":
        sep = "\t" if sep_default == "\t" else sniff_delimiter(text)
    else:
        sep = delimiter
    header = _header_cells(text, sep)
    _check_header(header, name)
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, engine="c", skip_blank_lines=True, low_memory=False)
    except pd.errors.EmptyDataError:
        raise TableError(f"{name}: no columns found.", "Upload a file with a header row and data rows.") from None
    except pd.errors.ParserError as e:
        msg = str(e).strip().splitlines()[-1]
        raise TableError(
            f"{name}: rows have different numbers of fields with delimiter {DELIMITERS.get(sep, repr(sep))} ({msg}).",
            "Pick the right delimiter in 'Delimiter', or check the quoting of values that contain it.") from None
    if df.shape[1] == 1:
        others = [d for d in DELIMITERS if d != sep and d in header[0]] if header else []
        if others:
            alt = others[0]
            raise TableError(
                f"{name}: with delimiter {DELIMITERS.get(sep, repr(sep))} the table has one column, but the header "
                f"{header[0][:60]!r} contains {DELIMITERS[alt]}s: the delimiter looks wrong.",
                f"Set 'Delimiter' to {DELIMITERS[alt]}.")
    notes = []
    if enc not in ("utf-8", "utf-8-sig"):
        notes.append(f"read as {enc} (the bytes are not UTF-8)")
    return Loaded(df, name, "tsv" if sep == "\t" else "csv", enc, sep, notes)


def _read_parquet(data: bytes, name: str) -> Loaded:
    import pyarrow.parquet as pq
    try:
        names = pq.read_schema(io.BytesIO(data)).names
    except Exception as e:
        raise TableError(f"{name}: not a readable Parquet file ({type(e).__name__}: {str(e)[:200]}).",
                         "Check that the upload finished and the file is really Parquet; or export it to CSV.") from None
    _check_header(names, name)
    try:
        df = _engine_read(data, name)
    except Exception as e:  # FEATInputError, ArrowInvalid, OSError ...
        raise TableError(f"{name}: not a readable Parquet file ({str(e)[:200]}).",
                         "Check that the upload finished and the file is really Parquet; or export it to CSV.") from None
    return Loaded(df, name, "parquet")


def _engine_read(data: bytes, name: str) -> pd.DataFrame:
    """Binary formats go through the engine's reader (feat_engine.io.read_table) when it
    exists, so the app and the CLI parse them the same way."""
    try:
        from feat_engine.io import read_table
    except ImportError:  # pragma: no cover - older engine
        fmt = FORMATS[Path(name).suffix.lower()]
        return pd.read_parquet(io.BytesIO(data)) if fmt == "parquet" else pd.read_excel(io.BytesIO(data), engine="openpyxl")
    return read_table(data, name)


def _read_excel(data: bytes, name: str) -> Loaded:
    try:
        head = pd.read_excel(io.BytesIO(data), header=None, nrows=1, engine="openpyxl")
        if head.shape[0]:
            _check_header([str(c) for c in head.iloc[0].tolist() if not pd.isna(c)], name)
        df = _engine_read(data, name)
    except TableError:
        raise
    except Exception as e:  # zipfile.BadZipFile, InvalidFileException, KeyError ...
        raise TableError(f"{name}: not a readable Excel .xlsx workbook ({type(e).__name__}: {str(e)[:200]}).",
                         "Open it in a spreadsheet program and save as .xlsx or CSV.") from None
    notes = []
    try:
        import openpyxl
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
        if len(wb.sheetnames) > 1:
            notes.append(f"read the first sheet {wb.sheetnames[0]!r} of {len(wb.sheetnames)}")
        wb.close()
    except Exception:
        pass
    return Loaded(df, name, "excel", notes=notes)


def read_table_bytes(data: bytes, name: str, delimiter: str = "auto", encoding: str = "auto",
                     max_mb: float = MAX_UPLOAD_MB) -> Loaded:
    """Parse an uploaded file into a DataFrame and check its structure (see `check_table`).
    Whether it fits this machine is `check_fits_machine`, checked apart (memory changes)."""
    ext = Path(name).suffix.lower()
    if len(data) > max_mb * 1024 * 1024:
        raise TableError(f"{name}: {len(data) / 2**20:.0f} MB is over the {max_mb:.0f} MB upload limit.",
                         "Upload a sample of the rows, or Parquet, which is much smaller than CSV.")
    if ext == ".xls":
        raise TableError(f"{name}: the old Excel .xls format is not supported.",
                         "Save the workbook as .xlsx or CSV and upload that.")
    if ext not in FORMATS:
        raise TableError(f"{name}: files of type '{ext or '(no extension)'}' are not taken.",
                         f"Upload {ACCEPTED_TEXT}.")
    if not data or not data.strip():
        raise TableError(f"{name}: the file is empty (0 bytes)." if not data else f"{name}: the file holds only whitespace.",
                         "Upload a file with a header row and at least one data row.")
    fmt = FORMATS[ext]
    # content that contradicts the extension
    if fmt in ("csv", "tsv") and data[:4] == b"PAR1":
        raise TableError(f"{name}: this is a Parquet file with a text extension.", "Rename it to .parquet.")
    if fmt in ("csv", "tsv") and data[:2] == b"PK":
        raise TableError(f"{name}: this looks like an Excel workbook (a zip) with a text extension.",
                         "Rename it to .xlsx, or export it to CSV.")
    if fmt == "parquet":
        loaded = _read_parquet(data, name)
    elif fmt == "excel":
        loaded = _read_excel(data, name)
    else:
        loaded = _read_text(data, name, "\t" if fmt == "tsv" else ",", delimiter, encoding)
    loaded.df = _string_names(loaded.df)
    check_table(loaded.df, name)
    return loaded


def _string_names(df: pd.DataFrame) -> pd.DataFrame:
    if all(isinstance(c, str) for c in df.columns):
        return df
    return df.rename(columns=str)


def check_table(df: pd.DataFrame, name: str) -> None:
    """Structural checks every table must pass, whatever its source."""
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise TableError(f"{name}: the table has {df.shape[0]} rows and {df.shape[1]} columns after the header.",
                         "Upload a file with a header row and at least one data row.")
    dup = df.columns[df.columns.duplicated()].tolist()
    if dup:
        raise TableError(f"{name}: duplicate column names {', '.join(map(repr, dup[:5]))}.",
                         "Rename the columns so that each name appears once.")
    if df.shape[1] == 1:
        raise TableError(
            f"{name}: the table has a single column ({df.columns[0]!r}); FEAT needs at least two "
            "(features and a target, or two columns to impute from each other).",
            "If the file has more columns, pick the right delimiter; otherwise add columns.")
    if df.isna().all(axis=None):
        raise TableError(f"{name}: every cell is missing.", "Upload a table with values.")


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


def estimated_bytes(n_rows: int, n_cols: int, d_model: int = 128) -> int:
    """Peak memory of a FEAT run on the table, loosely: the context tokens (rows x (cols+1)
    x d_model fp32) about three times over (tokens, a layer's output, scratch), plus the
    parsed table itself."""
    return int(3 * n_rows * (n_cols + 1) * d_model * 4 + 2 * n_rows * n_cols * 8)


def check_fits_machine(n_rows: int, n_cols: int, name: str = "table", available: int | None = None,
                       d_model: int = 128) -> None:
    avail = available_memory() if available is None else available
    need = estimated_bytes(n_rows, n_cols, d_model)
    if need > 0.8 * avail:
        fit_rows = max(1000, int(0.8 * avail / max(need / max(n_rows, 1), 1)) // 1000 * 1000)
        raise TableError(
            f"{name}: {n_rows:,} rows x {n_cols} columns needs about {need / 2**30:.1f} GiB for a FEAT run, "
            f"but this machine has {avail / 2**30:.1f} GiB free.",
            f"Upload a random sample of at most about {fit_rows:,} rows, or drop columns you do not need.")


# --------------------------------------------------------------------------- types

def detect_type(s: pd.Series) -> tuple[str, str]:
    """(type, why) for one column: numeric, categorical or ignore (ids, free text, empty, dates)."""
    n = len(s)
    nn = s.dropna()
    if nn.empty:
        return "ignore", "all missing"
    nunique = nn.nunique()
    if pd.api.types.is_bool_dtype(s):
        return "categorical", "boolean"
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "categorical", "category dtype"
    if pd.api.types.is_datetime64_any_dtype(s):
        return "numeric", "date/time (the engine expands it into numeric parts)"
    if pd.api.types.is_numeric_dtype(s):
        if nunique == 1:
            return "ignore", "constant"
        is_int = pd.api.types.is_integer_dtype(s) or bool(np.all(np.mod(nn.to_numpy(dtype=float), 1) == 0))
        if is_int and nunique == n and n > 50 and _is_sequence(nn):
            return "ignore", "row id (1, 2, 3, ...)"
        if is_int and nunique <= 2:
            return "categorical", f"{nunique} integer values"
        return "numeric", "numbers"
    # strings / objects
    as_num = pd.to_numeric(nn, errors="coerce")
    if as_num.notna().mean() > 0.95 and nunique > 2:
        return "numeric", f"text holding numbers ({int(as_num.isna().sum())} not numeric)"
    if nunique == 1:
        return "ignore", "constant"
    if nunique > 0.9 * len(nn) and len(nn) > 20:
        return "ignore", "nearly unique text (an id or free text)"
    return "categorical", f"text with {nunique} distinct values"


def _is_sequence(nn: pd.Series) -> bool:
    v = np.sort(nn.to_numpy(dtype=float))
    return bool(np.all(np.diff(v) == 1))


def detect_types(df: pd.DataFrame) -> dict[str, tuple[str, str]]:
    return {c: detect_type(df[c]) for c in df.columns}


def schema_frame(df: pd.DataFrame, detected: dict[str, tuple[str, str]], chosen: dict[str, str] | None = None) -> pd.DataFrame:
    """The schema table shown in the Data view: one row per column."""
    chosen = chosen or {}
    rows = []
    for c in df.columns:
        t, why = detected[c]
        rows.append({
            "column": c, "dtype": str(df[c].dtype), "detected": t, "why": why,
            "use as": chosen.get(c, t),
            "missing": int(df[c].isna().sum()), "distinct": int(df[c].nunique(dropna=True)),
            "example": _example(df[c]),
        })
    return pd.DataFrame(rows)


def _example(s: pd.Series) -> str:
    nn = s.dropna()
    return "" if nn.empty else str(nn.iloc[0])[:40]


def apply_schema(df: pd.DataFrame, types: dict[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """The table the model sees: ignored columns dropped, overridden columns re-read.

    * numeric on a text column: values are parsed as numbers; every value that is not a
      number is reported (and would be missing to the model).
    * categorical on a numeric column: the values stay as they are, as a pandas category.
    The input frame is not modified. Returns (table, notes).
    """
    out, notes = {}, []
    for c in df.columns:
        t = types.get(c, "numeric")
        if t == "ignore":
            continue
        s = df[c]
        if t == "numeric" and not (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_datetime64_any_dtype(s)) \
                and not pd.api.types.is_bool_dtype(s):
            num = pd.to_numeric(s, errors="coerce")
            bad = s.notna() & num.isna()
            if bad.any():
                ex = ", ".join(repr(v) for v in s[bad].astype(str).unique()[:3])
                notes.append(f"column {c!r}: {int(bad.sum())} values are not numbers (e.g. {ex}) and are treated as missing")
            s = num
        elif t == "numeric" and pd.api.types.is_bool_dtype(s):
            s = s.astype(float)
        elif t == "categorical" and not isinstance(s.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(s) \
                and not (pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)):
            s = s.astype("category")
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
    nn = y.dropna()
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
        counts = nn.value_counts()
        if k > 0.5 * len(nn) and len(nn) > 20:
            raise TableError(
                f"target {name!r}: {k} classes for {len(nn)} labelled rows; almost every row is its own class.",
                "Set the task to regression if it is a number, or pick another target.")
        del counts
    else:
        if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
            num = pd.to_numeric(nn, errors="coerce")
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
