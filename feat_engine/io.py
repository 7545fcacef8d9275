"""Reading and writing tables: CSV, TSV, Parquet and Excel, chosen by the file name's suffix.

    df = read_table("train.csv")                       # a path
    df = read_table(uploaded_bytes_io, "train.xlsx")   # a buffer; the name gives the format
    write_table(df, "out.parquet")

Unreadable input raises `FEATInputError` naming the file and the problem.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import IO, Any

import pandas as pd

from .preprocess import FEATInputError

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
           ".xlsx": "excel", ".xlsm": "excel", ".xls": "excel"}


def table_format(name: str) -> str:
    """'csv', 'tsv', 'parquet' or 'excel' from a file name's suffix; FEATInputError otherwise."""
    suffix = Path(name).suffix.lower()
    if suffix not in FORMATS:
        raise FEATInputError(f"{name}: unsupported file type {suffix or '(no suffix)'!r}; "
                             f"use one of {', '.join(sorted(FORMATS))}")
    return FORMATS[suffix]


def read_table(source: str | os.PathLike | IO[bytes] | bytes, name: str | None = None) -> pd.DataFrame:
    """Read one table from a path, a binary buffer or bytes.

    `name` (a file name such as "data.xlsx") picks the format when `source` is a buffer or
    bytes; for a path it defaults to the path itself. Excel reads the first sheet.
    """
    if isinstance(source, (str, os.PathLike)):
        name = name or str(source)
        if not Path(source).is_file():
            raise FEATInputError(f"{name}: file not found")
    elif name is None:
        raise FEATInputError("read_table needs a file name (for its format) when reading a buffer")
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    kind = table_format(name)
    readers: dict[str, Any] = {
        "csv": lambda: pd.read_csv(source),
        "tsv": lambda: pd.read_csv(source, sep="\t"),
        "parquet": lambda: pd.read_parquet(source),
        "excel": lambda: pd.read_excel(source),
    }
    try:
        df = readers[kind]()
    except Exception as e:  # parser errors, bad encodings, corrupt archives ...
        raise FEATInputError(f"{name}: cannot be read as {kind} ({type(e).__name__}: {e})") from None
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise FEATInputError(f"{name}: the table is empty ({df.shape[0]} rows x {df.shape[1]} columns)")
    return df


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
