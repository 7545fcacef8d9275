"""Reading and writing tables: CSV, TSV, Parquet and Excel, chosen by the file name's suffix.
The `feat` CLI and the app read with this one reader, so they take the same files and say the
same thing about those they cannot read (docs/decisions/0037-file-reading-and-cli.md).

    df = read_table("train.csv")                        # a path
    df = read_table(uploaded_bytes, "train.xlsx")       # bytes or a buffer; the name gives the format
    got = load_table(data, "t.csv")                     # the frame and how it was read (encoding, delimiter)
    got = load_source("train.csv")                      # the same from a path or a buffer, notes included
    write_table(df, "out.parquet")

Text files: the encoding (a BOM, else UTF-8, else Windows-1252) and the delimiter (, ; tab |) are
detected unless given. In files not delimited by commas, a text column whose every value is a
number written with a decimal comma (12,5 or 1.234,5) is read as numbers, with a note. In any file, a last row
of totals ("Total" beside the sums of the rows above) is left out, with a note (`without_totals_row`). Unreadable
input raises `TableError` (a `FEATInputError`) whose `problem` names the file and what is wrong and
whose `fix` says what to do.
"""
from __future__ import annotations

import csv
import io
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

import numpy as np
import pandas as pd

from .errors import TableError
from .preprocess.text_values import TEXT_PARSE_SHARE, decimal_comma_columns, decimal_comma_numbers, parse_numbers

FORMATS = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
           ".xlsx": "excel", ".xlsm": "excel"}
ACCEPTED = "CSV (.csv, .txt), TSV (.tsv, .tab), Parquet (.parquet, .pq) or Excel (.xlsx, .xlsm)"
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
ENCODINGS = ("utf-8", "utf-16", "cp1252", "latin-1")
SNIFF_BYTES = 1 << 20  # the head of a text file that encoding checks and delimiter sniffing look at
HEAD_ROWS = 200        # rows of that head that tell a first row of data from a header
TOTAL_WORDS = re.compile(r"(grand\s+|sub)?totals?|sums?", re.IGNORECASE)   # a cell of a row of totals (`_totals_row`)


@dataclass
class Loaded:
    """A table as read: the frame, its format, and for text files the encoding and delimiter
    used; `notes` say what the reader chose that a user may want to know."""
    df: pd.DataFrame
    name: str
    fmt: str
    encoding: str | None = None
    delimiter: str | None = None
    notes: list[str] = field(default_factory=list)


def nested_as_text(loaded: Loaded) -> Loaded:
    """`loaded` with each column whose cells are lists, arrays or records (Parquet's and DuckDB's nested types) read
    as their text, and a note naming those columns: FEAT reads numbers, dates and text, and pandas can neither
    compare nor count such cells. A nested column's cells are all of one type, so its first value decides."""
    nested = []
    for c in loaded.df.columns[(loaded.df.dtypes == object).to_numpy()]:
        s = loaded.df[c]
        first = s.first_valid_index()
        if first is not None and isinstance(s.loc[first], (list, tuple, dict, set, np.ndarray)):
            loaded.df[c] = s.map(lambda v: str(v.tolist() if isinstance(v, np.ndarray) else v), na_action="ignore")
            nested.append(c)
    if nested:
        loaded.notes.append(f"column{'s' if len(nested) > 1 else ''} {', '.join(map(repr, nested))} "
                            f"{'hold' if len(nested) > 1 else 'holds'} lists or records, read as their text")
    return loaded


def _totals_row(df: pd.DataFrame) -> tuple[object, object, object, object] | None:
    """(row label, its word, a column, its value) where the table's last row with a value totals the rows above it:
    a cell of it says so (`TOTAL_WORDS`, a colon after it or not) and a number of it, in a column of numbers (or of
    numbers written as text, "$1,234.50"), is that column's sum over the rows above, not 0; else None."""
    filled = df.index[df.notna().any(axis=1).to_numpy()]
    if len(filled) < 3:
        return None
    last = df.loc[filled[-1]]
    said = [c for c in df.columns if isinstance(last[c], str) and TOTAL_WORDS.fullmatch(last[c].strip(" :"))]
    if not said:
        return None
    for c in df.columns:
        if c in said or pd.isna(last[c]) or pd.api.types.is_bool_dtype(df[c]):
            continue
        if pd.api.types.is_numeric_dtype(df[c]):
            column = df[c].astype(float)
        elif df[c].dtype == object or pd.api.types.is_string_dtype(df[c]):
            column = parse_numbers(df[c])
        else:
            continue
        above = column.loc[:filled[-1]].iloc[:-1]
        if above.notna().sum() < TEXT_PARSE_SHARE * df[c].loc[above.index].notna().sum():
            continue                                    # a column of text, not of numbers
        total, value = float(above.sum()), float(column.loc[filled[-1]])
        if total != 0 and np.isclose(value, total, rtol=1e-9, atol=0.005):
            return filled[-1], last[said[0]].strip(" :"), c, last[c]
    return None


def without_totals_row(loaded: Loaded) -> Loaded:
    """`loaded` less a last row that totals the rows above it (`_totals_row`), with a note naming it. Spreadsheet and
    accounting exports end so; read as data it would be a row of outliers, and with its label empty a row the app
    predicts."""
    found = _totals_row(loaded.df)
    if found is not None:
        row, word, column, value = found
        df = loaded.df.drop(index=row)
        for c in df.columns[(df.dtypes == float).to_numpy()]:      # whole numbers made float by the row's empty cell
            if pd.isna(loaded.df.at[row, c]) and df[c].notna().all() and (df[c] == df[c].round()).all():
                df[c] = df[c].astype(np.int64)
        loaded.df = df
        loaded.notes.append(f"left out the last row ({word!r}): it totals the rows above ({column!r} {value} is "
                            "their sum), so it is not one of them")
    return loaded


def table_format(name: str) -> str:
    """'csv', 'tsv', 'parquet' or 'excel' from a file name's suffix; TableError otherwise."""
    suffix = Path(name).suffix.lower()
    if suffix == ".xls":
        raise TableError(f"{name}: the old Excel .xls format is not supported.",
                         "Save the workbook as .xlsx or CSV and use that.")
    if suffix not in FORMATS:
        raise TableError(f"{name}: unsupported file type {suffix or '(no extension)'!r}.", f"Use {ACCEPTED}.")
    return FORMATS[suffix]


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
    if b"\x00" in data[:SNIFF_BYTES]:
        raise TableError(
            f"{name}: the bytes are not text (they contain NUL bytes), so they cannot be decoded as a table.",
            "Check that this is the right file; a spreadsheet or database file needs its own extension "
            f"({ACCEPTED}), or export it to CSV in UTF-8.")
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
        f"Save the file as CSV with UTF-8 encoding, or give its encoding (one of {', '.join(ENCODINGS)}).")


def sniff_delimiter(text: str) -> str:
    """The delimiter among , ; tab | that splits the first lines most consistently (csv.Sniffer's, else the one
    whose most common field count, times the share of lines with it, is largest)."""
    lines = [ln for ln in text.splitlines()[:50] if ln.strip()]
    if not lines:
        return ","
    try:
        return csv.Sniffer().sniff("\n".join(lines[:20]), delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        pass
    best, best_score = ",", -1.0
    for d in DELIMITERS:       # the most fields that most lines agree on (a title line above the table has one)
        counts = [len(next(csv.reader([ln], delimiter=d))) for ln in lines]
        usual = max(set(counts), key=counts.count)
        if usual < 2:
            continue
        score = usual * (counts.count(usual) / len(counts))
        if score > best_score:
            best, best_score = d, score
    return best


def _lines(text: str) -> io.StringIO:
    """`text` as the csv module reads a file: a line break of any kind inside a quoted value stays in the value."""
    return io.StringIO(text, newline="")


def _head_rows(text: str, delimiter: str) -> list[tuple[int, list[str]]]:
    """The first HEAD_ROWS non-blank rows of a text file's head, each with the line it starts on."""
    reader = csv.reader(_lines(text), delimiter=delimiter)
    rows, start = [], 0
    for row in reader:
        if any(c.strip() for c in row):
            rows.append((start, row))
            if len(rows) == HEAD_ROWS:
                break
        start = reader.line_num
    return rows


def _preamble(text: str, delimiter: str) -> tuple[int, list[str]]:
    """Lines above the table in a text file's head (a title, blank lines: rows with fewer fields, and fewer up to the
    last one written, than most of the first HEAD_ROWS rows have), and what each row of them says."""
    rows = _head_rows(text, delimiter)
    if not rows:
        return 0, []
    fields = [len(r) for _, r in rows]
    written = [max(j for j, c in enumerate(r) if c.strip()) + 1 for _, r in rows]      # up to the last cell written
    usual = max(set(fields), key=fields.count), max(set(written), key=written.count)
    first = next(i for i, w in enumerate(zip(fields, written)) if w[0] >= usual[0] or w[1] >= usual[1])
    return rows[first][0], [" ".join(c.strip() for c in r if c.strip()) for _, r in rows[:first]]


def _skipped(skip: int, above: list[str], unit: str) -> list[str]:
    """The note on the `skip` lines or rows above a table that say `above` (none where none)."""
    return [f"skipped {skip} {unit}{'s' * (skip > 1)} above the table ({' / '.join(above)[:80]!r})"] if above else []


def _no_header(text: str, delimiter: str) -> bool:
    """Whether the first row of the text file's head is data, not names: no cell reads as a name (a cell is data where
    it is a number with decimals over numbers, or a value its column holds below; a whole number over numbers, as a
    year, proves nothing), and some cell is data or the row repeats a cell."""
    rows = [r for _, r in _head_rows(text, delimiter)]
    if len(rows) < 3:
        return False
    first, below = [c.strip() for c in rows[0]], [[c.strip() for c in r] for r in rows[1:]]
    data = 0
    for j, cell in enumerate(first):
        column = [r[j] for r in below if j < len(r) and r[j]]
        parsed = pd.to_numeric(pd.Series(column, dtype=object), errors="coerce")
        numeric = bool(column) and parsed.notna().mean() >= 0.95
        value = float(pd.to_numeric(cell, errors="coerce")) if cell else np.nan
        if not cell or (numeric and value == np.round(value)):
            continue                                      # empty, or a whole number over numbers: no evidence
        if (numeric and not np.isnan(value)) or cell in column:
            data += 1
        else:
            return False                                  # a name
    named = [c for c in first if c]
    return data > 0 or len(set(named)) < len(named)


def _check_header(cells: list, name: str) -> None:
    """Duplicate column names, named (pandas would silently rename them)."""
    seen, dupes = set(), []
    for c in (str(c).strip() for c in cells):
        if c in seen and c not in dupes:
            dupes.append(c)
        seen.add(c)
    if dupes:
        raise TableError(f"{name}: duplicate column names {', '.join(repr(d) for d in dupes[:5])}.",
                         "Rename the columns so that each name appears once.")


# --------------------------------------------------------------------------- readers

def _read_text(data: bytes, name: str, fmt: str, delimiter: str, encoding: str) -> Loaded:
    """CSV or TSV bytes: encoding and delimiter detected when 'auto', header checked, parsed."""
    enc = detect_encoding(data, name) if encoding == "auto" else encoding
    try:
        head = data[:SNIFF_BYTES].decode(enc, errors="ignore")
    except LookupError:
        raise TableError(f"{name}: unknown encoding {enc!r}.", f"Give one of {', '.join(ENCODINGS)}, or auto.") from None
    ends = "\n" if b"\r" in data and b"\n" in data and b"\r\n" not in data else None   # lines end in \n alone:
    if ends:                                    # a carriage return is part of a value (pandas' to_csv leaves it bare)
        head = head.replace("\r", " ")
    if delimiter == "auto":
        sep = "\t" if fmt == "tsv" else sniff_delimiter(head)
    else:
        sep = delimiter
    skip, above = _preamble(head, sep)
    body = "".join(_lines(head).readlines()[skip:])
    header = next((r for _, r in _head_rows(body, sep)), [])
    headless = _no_header(body, sep)
    if not headless:
        _check_header(header, name)
    try:
        df = pd.read_csv(io.BytesIO(data), sep=sep, encoding=enc, engine="c", skip_blank_lines=True, low_memory=False,
                         header=None if headless else "infer", skiprows=skip, lineterminator=ends)
    except UnicodeDecodeError as e:
        raise TableError(f"{name}: cannot decode the bytes as {enc} ({e}).",
                         "Give another encoding, or leave the encoding on auto.") from None
    except pd.errors.EmptyDataError:
        raise TableError(f"{name}: no columns found.", "Use a file with a header row and data rows.") from None
    except pd.errors.ParserError as e:
        msg = str(e).strip().splitlines()[-1]
        raise TableError(
            f"{name}: rows have different numbers of fields with delimiter {DELIMITERS.get(sep, repr(sep))} ({msg}).",
            "Set the right delimiter, or check the quoting of values that contain it.") from None
    others = [d for d in DELIMITERS if d != sep and d in header[0]] if df.shape[1] == 1 and header else []
    if others:
        raise TableError(
            f"{name}: with delimiter {DELIMITERS.get(sep, repr(sep))} the table has one column, but the header "
            f"{header[0][:60]!r} contains {DELIMITERS[others[0]]}s: the delimiter looks wrong.",
            f"Set the delimiter to {DELIMITERS[others[0]]}.")
    notes = [] if enc in ("utf-8", "utf-8-sig") else [f"read as {enc} (the bytes are not UTF-8)"]
    notes += _skipped(skip, above, "line")
    if headless:
        df.columns = [f"column {j + 1}" for j in range(df.shape[1])]
        shown = ", ".join(c.strip() for c in header[:4]) + (", ..." if len(header) > 4 else "")
        notes.append(f"the first row is data, not column names ({shown}): the columns are named column 1 to column "
                     f"{df.shape[1]}")
    comma = decimal_comma_columns(df) if sep != "," else []
    if comma:
        for c in comma:
            df[c] = decimal_comma_numbers(df[c])
        notes.append(f"column{'s' if len(comma) > 1 else ''} {', '.join(repr(c) for c in comma)} read as numbers "
                     "written with a decimal comma (1.234,5 = 1234.5)")
    return Loaded(df, name, "tsv" if sep == "\t" else "csv", enc, sep, notes)


@contextmanager
def _parquet_errors(name: str) -> Iterator[None]:
    """pyarrow's errors on a file that is not readable Parquet, as a TableError naming it."""
    try:
        yield
    except TableError:
        raise
    except Exception as e:  # ArrowInvalid, OSError ...
        raise TableError(f"{name}: not a readable Parquet file ({type(e).__name__}: {str(e)[:200]}).",
                         "Check that the file is complete and really Parquet, or export it to CSV.") from None


def _read_parquet(data: bytes, name: str) -> Loaded:
    """Parquet bytes, with the column names checked from the schema before the data is read."""
    import pyarrow.parquet as pq
    with _parquet_errors(name):
        _check_header(pq.read_schema(io.BytesIO(data)).names, name)
        return Loaded(pd.read_parquet(io.BytesIO(data)), name, "parquet")


def parquet_schema(path: str | os.PathLike) -> pd.DataFrame:
    """An empty frame with the columns and dtypes of a Parquet file, read from its footer alone;
    TableError, in `read_table`'s words, for a missing or unreadable file or a repeated column name."""
    import pyarrow.parquet as pq
    name = str(path)
    if not Path(path).is_file():
        raise TableError(f"{name}: file not found.", "Check the path.")
    with _parquet_errors(name):
        schema = pq.read_schema(path)
        _check_header(schema.names, name)
        return schema.empty_table().to_pandas()


def _read_excel(data: bytes, name: str) -> Loaded:
    """The first sheet of an .xlsx/.xlsm workbook, rows above its table skipped (`_preamble`, on the head's cells up to
    the last written of each row); a note says so, and when there are more sheets."""
    try:
        with pd.ExcelFile(io.BytesIO(data), engine="openpyxl") as book:
            head = pd.read_excel(book, header=None, nrows=HEAD_ROWS, dtype=str).fillna("").values.tolist()
            text = io.StringIO()         # the head as CSV, each row up to its last cell written: a title row is short
            csv.writer(text).writerows(r[:max([j + 1 for j, c in enumerate(r) if c.strip()] or [0])] for r in head)
            skip, above = _preamble(text.getvalue(), ",")
            if head:
                _check_header([c for c in head[skip] if c], name)
            df, sheets = pd.read_excel(book, skiprows=skip), book.sheet_names
    except TableError:
        raise
    except Exception as e:  # zipfile.BadZipFile, InvalidFileException, KeyError ...
        raise TableError(f"{name}: not a readable Excel .xlsx workbook ({type(e).__name__}: {str(e)[:200]}).",
                         "Open it in a spreadsheet program and save it as .xlsx or CSV.") from None
    notes = [f"read the first sheet {sheets[0]!r} of {len(sheets)}"] if len(sheets) > 1 else []
    return Loaded(df, name, "excel", notes=notes + _skipped(skip, above, "row"))


def _check_content(data: bytes, name: str, fmt: str) -> None:
    """Empty files, and content that contradicts a text extension."""
    if not data or data.isspace():
        raise TableError(f"{name}: the file is empty (0 bytes)." if not data else f"{name}: the file holds only whitespace.",
                         "Use a file with a header row and at least one data row.")
    if fmt in ("csv", "tsv") and data[:4] == b"PAR1":
        raise TableError(f"{name}: this is a Parquet file with a text extension.", "Rename it to .parquet.")
    if fmt in ("csv", "tsv") and data[:2] == b"PK":
        raise TableError(f"{name}: this looks like an Excel workbook (a zip) with a text extension.",
                         "Rename it to .xlsx, or export it to CSV.")


def load_table(data: bytes, name: str, delimiter: str = "auto", encoding: str = "auto") -> Loaded:
    """Read the bytes of a file called `name` (its suffix gives the format).

    `delimiter` and `encoding` apply to text files; "auto" detects them. Column names come back
    as strings. A file without a data row or column raises TableError, like one that cannot be read.
    """
    fmt = table_format(name)
    _check_content(data, name, fmt)
    if fmt == "parquet":
        loaded = _read_parquet(data, name)
    elif fmt == "excel":
        loaded = _read_excel(data, name)
    else:
        loaded = _read_text(data, name, fmt, delimiter, encoding)
    rows, cols = loaded.df.shape
    if rows == 0 or cols == 0:
        raise TableError(f"{name}: the table is empty ({rows} rows x {cols} columns after the header).",
                         "Use a file with a header row and at least one data row.")
    if not all(isinstance(c, str) for c in loaded.df.columns):
        loaded.df = loaded.df.rename(columns=str)
    return nested_as_text(without_totals_row(loaded))


def load_source(source: str | os.PathLike | IO[bytes] | bytes, name: str | None = None,
                delimiter: str = "auto", encoding: str = "auto") -> Loaded:
    """Read one table from a path, a binary buffer or bytes (`load_table`). `name` (a file name such as "data.xlsx")
    picks the format when `source` is a buffer or bytes; for a path it defaults to the path itself."""
    if isinstance(source, (str, os.PathLike)):
        name = name or str(source)
        if not Path(source).is_file():
            raise TableError(f"{name}: file not found.", "Check the path.")
        data = Path(source).read_bytes()
    elif name is None:
        raise TableError("reading a buffer needs a file name (for its format).")
    else:
        data = source if isinstance(source, bytes) else source.read()
    return load_table(data, name, delimiter, encoding)


def read_table(source: str | os.PathLike | IO[bytes] | bytes, name: str | None = None,
               delimiter: str = "auto", encoding: str = "auto") -> pd.DataFrame:
    """The frame of `load_source`, without the reader's notes."""
    return load_source(source, name, delimiter, encoding).df


def output_directory(path: str | os.PathLike) -> Path:
    """A directory for Parquet parts, created if missing. TableError for a table file name and for a
    directory that holds anything, whose old parts would mix with the new."""
    out = Path(path)
    if out.suffix.lower() in FORMATS or out.is_file():
        raise TableError(f"{out}: a directory or pattern of query files is written as a directory of Parquet "
                         "files, not one file.", "Give a directory as the output.")
    if out.is_dir() and any(out.iterdir()):
        raise TableError(f"{out}: the output directory is not empty.", "Give a new or empty directory.")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_table(df: pd.DataFrame, path: str | os.PathLike, index: bool = False) -> None:
    """Write df in the format of the path's suffix."""
    kind = table_format(str(path))
    if kind == "csv":
        df.to_csv(path, index=index)
    elif kind == "tsv":
        df.to_csv(path, sep="\t", index=index)
    elif kind == "parquet":
        df.to_parquet(path, index=index)
    else:
        df.to_excel(path, index=index)
