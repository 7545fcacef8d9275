"""The quantile view of a table's numbers, read by the odd ensemble members (`reads_quantiles`): each column with at
least MIN_VALUES distinct context values goes through its context quantiles to a standard normal (scikit-learn's
`QuantileTransformer`), which keeps the values' order and spreads a heavy-tailed column's bulk evenly; other columns
keep their standardised values and missing cells stay missing. The transform is fitted on the context alone, so a
query's value depends on that query alone (docs/decisions/0019-quantile-transform.md)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.preprocessing import QuantileTransformer

from ..preprocess import standardise
from .members import Member

MIN_VALUES = 10       # distinct context values a column needs to be mapped
N_QUANTILES = 1000    # quantiles per column (scikit-learn's default), fewer on short contexts


def reads_quantiles(member: Member) -> bool:
    """Whether an ensemble member of the classifier or regressor reads the quantile view: the odd ones."""
    return member.index % 2 == 1


def quantile_normal(x_ctx: np.ndarray, x_query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the (N, D) context and (M, D) query matrices in which every column with at least
    MIN_VALUES distinct context values is mapped through its context quantiles to a standard
    normal, then standardised with the context's statistics and clipped (`standardise`)."""
    cols = np.flatnonzero(pd.DataFrame(x_ctx).nunique().to_numpy() >= MIN_VALUES)
    if len(cols) == 0:
        return x_ctx, x_query
    qt = QuantileTransformer(n_quantiles=min(N_QUANTILES, len(x_ctx)), output_distribution="normal",
                             random_state=0).fit(x_ctx[:, cols].astype(np.float64))
    # one transform of both: the transform is column by column and row by row, and half its time is per call
    z = standardise(qt.transform(np.vstack([x_ctx[:, cols], x_query[:, cols]]).astype(np.float64)), len(x_ctx))
    x_ctx, x_query = x_ctx.copy(), x_query.copy()
    x_ctx[:, cols], x_query[:, cols] = z[:len(x_ctx)], z[len(x_ctx):]
    return x_ctx, x_query
