"""In-context target statistics for nominal columns (docs/design.md, "Nominal categoricals").

A nominal column reaches the model as level codes in alphabetical order, which carry no
signal the model can read; the mean target of each level does. The statistics come from
the context alone, through scikit-learn's `TargetEncoder` (empirical-Bayes shrinkage toward
the context mean): cross-fitted for the context rows, so that no row sees its own label, and
from the whole context for query rows, so that a query's value depends on that query alone.
Missing is a level of its own; a level the context never saw gets the context's mean.
"""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import KFold
from sklearn.preprocessing import TargetEncoder

from .preprocess import CLIP

CV = 5          # cross-fitting folds (scikit-learn's default)


def with_target_stats(
    x_ctx: np.ndarray, y_ctx: np.ndarray, x_query: np.ndarray,
    codes_ctx: np.ndarray, codes_query: np.ndarray, columns: np.ndarray, seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the standardised (N, D) context and (M, D) query matrices whose `columns`
    hold the standardised target statistics of the level codes `codes_*` (one code column per
    entry of `columns`). `y_ctx` is a numeric target or the 0/1 label of one binary run.
    With no nominal column, or fewer context rows than folds, the inputs come back unchanged."""
    if len(columns) == 0 or len(y_ctx) < 2 * CV:
        return x_ctx, x_query
    enc = TargetEncoder(target_type="continuous", cv=KFold(CV, shuffle=True, random_state=seed))
    s_ctx = enc.fit_transform(codes_ctx, np.asarray(y_ctx, dtype=np.float64))
    s_query = enc.transform(codes_query)
    mean, std = s_ctx.mean(axis=0), s_ctx.std(axis=0)
    std[std == 0] = 1.0
    x_ctx, x_query = x_ctx.copy(), x_query.copy()
    x_ctx[:, columns] = np.clip((s_ctx - mean) / std, -CLIP, CLIP)
    x_query[:, columns] = np.clip((s_query - mean) / std, -CLIP, CLIP)
    return x_ctx, x_query
