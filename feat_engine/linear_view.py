"""The linear view: a cross-fitted linear model's prediction handed to FEAT as one more feature
(docs/design.md, "The linear view").

The small pretrained model reads a target that sums many features' small effects worse than a
linear model does (the dense-linear probe; on real tables logistic regression and ridge beat it
where the signal is additive). A linear model summarises that signal in one number per row, which
the model reads as it reads any strong feature. As with the target statistics, the context rows get
out-of-fold predictions, so that no row sees its own label, and query rows the prediction of the model
fitted on the whole context, so that a query's value depends on that query alone. The model is ridge
for a numeric target and logistic regression (its logit) for the 0/1 label of a binary run, on the
standardised features with missing cells at the mean (0); the column is standardised on the context.
"""
from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold

from .preprocess import CLIP

FOLDS = 5       # cross-fitting folds


def linear_view(x_ctx: np.ndarray, y_ctx: np.ndarray, x_query: np.ndarray, classification: bool,
                seed: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(N,) out-of-fold linear predictions for the standardised (N, D) context and (M,) predictions for
    the (M, D) queries, both standardised with the context's statistics. None where there is no single
    linear target (more than two classes) or too few rows (or rows of a class) to cross-fit."""
    x_ctx, x_query = np.nan_to_num(x_ctx), np.nan_to_num(x_query)
    if classification:
        counts = np.bincount(np.asarray(y_ctx, dtype=np.int64))
        counts = counts[counts > 0]
        if len(counts) != 2 or counts.min() < 2:
            return None
        folds = StratifiedKFold(min(FOLDS, int(counts.min())), shuffle=True, random_state=seed)
    else:
        if len(y_ctx) < 2 * FOLDS:
            return None
        folds = KFold(FOLDS, shuffle=True, random_state=seed)

    def fitted(rows: np.ndarray | slice):
        model = LogisticRegression(max_iter=1000) if classification else Ridge()
        return model.fit(x_ctx[rows], y_ctx[rows])

    def predict(model, x: np.ndarray) -> np.ndarray:
        return model.decision_function(x) if classification else model.predict(x)

    s_ctx = np.empty(len(x_ctx))
    for train, held in folds.split(x_ctx, y_ctx):
        s_ctx[held] = predict(fitted(train), x_ctx[held])
    s_query = predict(fitted(slice(None)), x_query)
    mean, std = s_ctx.mean(), s_ctx.std()
    std = std if std > 0 else 1.0
    return (np.clip((s_ctx - mean) / std, -CLIP, CLIP).astype(np.float32),
            np.clip((s_query - mean) / std, -CLIP, CLIP).astype(np.float32))
