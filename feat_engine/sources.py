"""Tables on this machine's disk, for data too large to upload: a CSV/TSV (or Excel) file, a Parquet file,
a directory or glob of Parquet files, or a SQL query over such files. Parquet files and queries are read
through an embedded DuckDB, which reads only the columns and row groups a query needs; text and Excel files
through `load_table`, so their encoding, delimiter and notes are those an upload of the file gets.

    got = open_path("data/")                                     # Loaded: the directory's Parquet parts, in order
    files = parquet_parts("data/*.parquet")                      # a directory or glob of Parquet files, in order
    meta = parts_schema(files)                                   # their shared columns and dtypes, from the footers
    got = run_sql("SELECT a, b FROM 'data/*.parquet' WHERE c > 3")
    stamp = source_stamp("data/")                                # the files read, with their size and mtime
    changed = source_stamp("data/") != stamp                     # a file changed, came or went

Every problem raises `TableError` whose `problem` names the path, the query or the value and whose `fix`
says what to do; DuckDB's own errors are quoted by their first line.
"""
from __future__ import annotations

import glob
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd

from .errors import TableError
from .io import FORMATS, Loaded, load_table, nested_as_text, parquet_schema, table_format

QUERY_STARTS = ("select", "with", "from", "values", "(")   # the first word of a query run_sql runs
_QUOTED = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"")   # 'a string' or "an identifier" in SQL
_TEXT_TABLE = re.compile(r"\b(from|join)(\s+)'((?:[^']|'')*)'", re.IGNORECASE)   # FROM 'a file' or JOIN 'a file'

Stamp = tuple[tuple[str, int, int], ...]


def names_parts(source: str) -> bool:
    """Whether `source` names a set of files, a directory or a glob pattern (* ? [), rather than one file."""
    return not Path(source).is_file() and (Path(source).is_dir() or any(c in source for c in "*?["))


def _natural(path: Path) -> list:
    """Sort key putting part.2 before part.10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def parquet_parts(source: str) -> list[str]:
    """The Parquet files of a directory (every file but those named .* or _*, such as _SUCCESS) or of a
    glob pattern, in natural order (part.2 before part.10). TableError when none match or one is not
    Parquet by its suffix."""
    if Path(source).is_dir():
        paths = [p for p in Path(source).iterdir() if p.is_file() and not p.name.startswith((".", "_"))]
    else:
        paths = [Path(p) for p in glob.glob(source) if Path(p).is_file()]
    if not paths:
        raise TableError(f"{source}: {'the directory holds no files' if Path(source).is_dir() else 'no files match'}.",
                         "Check the path or pattern; it should name Parquet files (.parquet, .pq).")
    for p in paths:
        if FORMATS.get(p.suffix.lower()) != "parquet":
            raise TableError(f"{p}: not a Parquet file; a directory or pattern of files takes Parquet "
                             "files (.parquet, .pq) only.", "Move the file out, or narrow the pattern (dir/*.parquet).")
    return [str(p) for p in sorted(paths, key=_natural)]


def parts_schema(files: list[str]) -> pd.DataFrame:
    """`parquet_schema` of the first of some Parquet parts, read from the footers; TableError names a part
    whose columns differ from the first's (in their names or their order)."""
    meta = parquet_schema(files[0])
    for path in files[1:]:
        columns = list(parquet_schema(path).columns)
        if columns != list(meta.columns):
            differ = "in another order" if set(columns) == set(meta.columns) else (
                f"missing {[c for c in meta.columns if c not in columns]}, "
                f"unexpected {[c for c in columns if c not in meta.columns]}")
            raise TableError(f"{path}: columns differ from those of {files[0]}: {differ}.",
                             "Give Parquet files that share one set of columns, in one order.")
    return meta


def _where() -> str:
    return f"paths are read on the machine FEAT runs on; a relative path starts from {os.getcwd()}"


@contextmanager
def _connection(what: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory DuckDB connection that installs no extension; DuckDB's errors become TableError
    naming `what` and quoting DuckDB's first line."""
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
    try:
        yield con
    except duckdb.Error as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        said = " ".join(lines[:1] + [ln for ln in lines[1:] if ln.startswith("Candidate bindings")])
        raise TableError(f"{what}: {said}", _fix(e)) from None
    finally:
        con.close()


def _fix(e: duckdb.Error) -> str:
    """What to do about a DuckDB error, by its kind."""
    if isinstance(e, duckdb.ParserException):
        return ("Correct the SQL near the word DuckDB names; one SELECT query, such as "
                "SELECT a, b FROM 'data/*.parquet'.")
    if isinstance(e, duckdb.BinderException):
        return ("Check the column names against the files' (DuckDB lists the candidates); write a name with spaces "
                "or capitals in double quotes.")
    if isinstance(e, duckdb.CatalogException):
        return ("The query sees no tables, only files: name them in single quotes (FROM 'data/*.parquet') or "
                "with read_parquet(...) or read_csv(...).")
    if isinstance(e, duckdb.IOException):
        return f"Check the path in the query; {_where()}."
    if isinstance(e, duckdb.OutOfMemoryException):
        return "Select fewer columns or rows, or a sample (USING SAMPLE 100000 ROWS)."
    return "Check the files the query reads (files on this machine only) and the values it compares or casts."


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def open_path(path: str | os.PathLike, delimiter: str = "auto", encoding: str = "auto") -> Loaded:
    """Read the table at `path`: a CSV/TSV or Excel file (by `load_table`, `delimiter` and `encoding` as there),
    a Parquet file, or a directory or glob of Parquet parts (`parquet_parts`: read in natural order, their
    columns checked to agree by `parts_schema`). Parquet goes through DuckDB; its columns are those pandas
    would read (a stored pandas index is left out). TableError for a missing path, an unsupported suffix, a
    directory without Parquet files, unreadable files or an empty table."""
    name = str(path).strip()
    if not name:
        raise TableError("No path given.", "Type the path of a CSV or Parquet file, or of a folder of Parquet files.")
    where = os.path.expanduser(name)
    if names_parts(where):
        files = parquet_parts(where)
    elif not Path(where).is_file():
        raise TableError(f"{name}: file not found.", f"Check the path; {_where()}.")
    elif table_format(where) == "parquet":
        files = [where]
    else:
        return load_table(Path(where).read_bytes(), name, delimiter, encoding)
    columns = list(parts_schema(files).columns)
    with _connection(name) as con:
        df = con.read_parquet(files, union_by_name=True).project(", ".join(map(_quoted, columns))).df()
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise TableError(f"{name}: the table is empty ({df.shape[0]} rows x {df.shape[1]} columns).",
                         "Use Parquet files with at least one column and one row.")
    notes = [f"{len(files)} Parquet files, in order: {Path(files[0]).name} to {Path(files[-1]).name}"] \
        if len(files) > 1 else []
    return nested_as_text(Loaded(df, name, "parquet", notes=notes))


def _first_word(query: str) -> str:
    """The first word of a query (or its opening parenthesis), lower case, after any comments."""
    tokens = [(p, t) for p, t in duckdb.tokenize(query) if t != duckdb.token_type.comment]
    if not tokens:
        return ""
    start, end = tokens[0][0], tokens[1][0] if len(tokens) > 1 else len(query)
    word = query[start:end].strip().lower()
    return "(" if word.startswith("(") else word


def _text_tables(con: duckdb.DuckDBPyConnection, query: str, delimiter: str, encoding: str) -> str:
    """The query with each text file it reads as a table (FROM or JOIN 'file.csv') read by `load_table`, the
    upload's reader, and registered with the connection under the file's stem (DuckDB's own name for it, made
    unique): the query then sees the values that opening the file shows, where DuckDB's sniffer would read a
    column of yes and no as booleans."""
    names: dict[str, str] = {}

    def read(m: re.Match) -> str:
        path = os.path.expanduser(m[3].replace("''", "'"))
        if not Path(path).is_file() or table_format(path) not in ("csv", "tsv"):
            return m[0]
        if path not in names:
            stem, taken = Path(path).stem, set(names.values())
            names[path] = next(n for n in [stem] + [f"{stem}_{i}" for i in range(2, len(names) + 3)] if n not in taken)
            con.register(names[path], load_table(Path(path).read_bytes(), path, delimiter, encoding).df)
        return f"{m[1]}{m[2]}{_quoted(names[path])}"
    return _TEXT_TABLE.sub(read, query)


def run_sql(query: str, delimiter: str = "auto", encoding: str = "auto") -> Loaded:
    """The result of one SQL query (SELECT, WITH ... SELECT, or DuckDB's FROM ...) over files on this machine,
    run by DuckDB in a fresh in-memory connection, which reads only the columns and rows the query needs of
    Parquet files; a CSV or TSV file it names after FROM or JOIN is read as opening it reads it (`_text_tables`,
    `delimiter` and `encoding` as for `open_path`). TableError for anything but a single query (COPY, ATTACH,
    INSTALL, SET, writes, several statements), for DuckDB's parser and binder errors (quoted) and for a result
    without rows."""
    text = query.strip()
    shown = " ".join(text.split())
    what = f"SQL query {shown[:120] + (' ...' if len(shown) > 120 else '')!r}"
    if not text:
        raise TableError("No SQL query given.", "Type a query such as SELECT * FROM 'data/*.parquet'.")
    with _connection(what) as con:
        statements = duckdb.extract_statements(text)
        if len(statements) != 1:
            raise TableError(f"{what}: holds {len(statements)} statements.", "Run one SELECT query at a time.")
        word = _first_word(text)
        if statements[0].type != duckdb.StatementType.SELECT or word not in QUERY_STARTS:
            raise TableError(f"{what}: {word.upper()} statements are not run here, only a query that reads files.",
                             "Write one SELECT query, such as SELECT a, b FROM 'data/*.parquet' WHERE c > 3.")
        df = con.sql(_text_tables(con, text, delimiter, encoding)).df()
    if df.shape[0] == 0:
        raise TableError(f"{what}: returns no rows (columns {', '.join(map(repr, df.columns[:8]))}).",
                         "Loosen the WHERE clause, or check that the files it reads hold rows.")
    return nested_as_text(Loaded(df, "SQL query", "sql"))


def _path_files(path: str) -> list[str]:
    """The files `open_path` reads for `path` (none when it would refuse a directory or pattern)."""
    where = os.path.expanduser(path.strip())
    if names_parts(where):
        try:
            return parquet_parts(where)
        except TableError:
            return []
    return [where] if Path(where).is_file() else []


def _query_files(query: str) -> list[str]:
    """The files a query names: each quoted string or identifier in it that names files, globs expanded."""
    names = [m[1].replace("''", "'") if m[1] is not None else m[2].replace('""', '"') for m in _QUOTED.finditer(query)]
    return [f for n in names for f in glob.glob(os.path.expanduser(n), recursive=True) if Path(f).is_file()]


def source_stamp(source: str, sql: bool = False) -> Stamp:
    """The files a path (`open_path`) or, with `sql`, a query (`run_sql`: each quoted name in it that names
    files, globs expanded) reads, each as (file, size in bytes, modification time in ns), sorted. A file that
    changes, comes or goes changes the stamp; files not found are left out, so it never raises."""
    files = _query_files(source) if sql else _path_files(source)
    stamps = set()
    for f in files:
        try:
            st = os.stat(f)
        except OSError:      # gone since it was listed
            continue
        stamps.add((f, st.st_size, st.st_mtime_ns))
    return tuple(sorted(stamps))
