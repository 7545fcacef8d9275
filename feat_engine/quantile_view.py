"""A second view of a table's numbers for half of the ensemble (docs/design.md, "Quantile view").

Standardising with the context's mean and std leaves a heavy-tailed column (an income, a count,
a price) with most rows squeezed near zero and a few at the clip: the model then reads little
of how the bulk of the rows differ. In the quantile view each such column goes through its
context quantiles to a standard normal (scikit-learn's `QuantileTransformer`), which keeps
the order of the values and spreads them evenly. Odd members read this view and even members
the standardised one, as TabPFN v2 and TabICL give part of their ensembles a quantile or
power transform. The transform is fit on the context alone, so a query's value depends on
that query alone. Columns with fewer than MIN_VALUES distinct context values (binary flags,
small counts, codes) keep their standardised values; missing cells stay missing.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.preprocessing import QuantileTransformer

from .ensemble import Member
from .preprocess import standardise

MIN_VALUES = 10       # distinct context values a column needs to be mapped
N_QUANTILES = 1000    # quantiles per column (scikit-learn's default), fewer on short contexts


def in_quantile_view(member: Member) -> bool:
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
    z = standardise(np.vstack([qt.transform(a[:, cols].astype(np.float64)) if len(a) else np.empty((0, len(cols)))
                               for a in (x_ctx, x_query)]), len(x_ctx))
    x_ctx, x_query = x_ctx.copy(), x_query.copy()
    x_ctx[:, cols], x_query[:, cols] = z[:len(x_ctx)], z[len(x_ctx):]
    return x_ctx, x_query
