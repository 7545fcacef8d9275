"""The linear view: a cross-fitted additive model's prediction handed to FEAT as one more feature
(docs/design.md, "The linear view").

The small pretrained model reads a target that sums many features' small effects worse than a
linear model does (the dense-linear probe; on real tables logistic regression and ridge beat it
where the signal is additive). A model linear in a spline basis of each feature (an additive model)
summarises that signal in one number per row, curved effects and heavy-tailed features included, and
the model reads it as it reads any strong feature. As with the target statistics, the context rows get
out-of-fold predictions, so that no row sees its own label, and query rows the prediction of the model
fitted on the whole context, so that a query's value depends on that query alone. The model is ridge
for a numeric target and logistic regression (its logit) for the 0/1 label of a binary run, over each
standardised feature (missing cells at the mean, 0) and its cubic B-splines with knots at the context's
quantiles; the column is standardised on the context.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import SplineTransformer

from .preprocess import CLIP

FOLDS = 5           # cross-fitting folds
KNOTS = 5           # spline knots per feature, at the context's quantiles
FIT_ROWS = 50_000   # rows one fit reads at most (a random subset beyond): the model has about 8 coefficients
                    # per feature, settled long before, and the fits stay O(1) in the context's rows


def basis(splines: SplineTransformer, x: np.ndarray) -> np.ndarray:
    """Each column (missing cells at the mean, 0) and its B-splines (`splines`, fitted on the context)."""
    x = np.nan_to_num(x)
    return np.hstack([x, splines.transform(x)])


def _score(model: Ridge | LogisticRegression, b: np.ndarray) -> np.ndarray:
    """Ridge's prediction, or logistic regression's logit."""
    return model.decision_function(b) if isinstance(model, LogisticRegression) else model.predict(b)


@dataclass
class LinearView:
    """The view fitted on one run's context: its column for the context rows, and the model for queries."""

    context: np.ndarray                       # (N,) out-of-fold predictions, standardised (float32)
    splines: SplineTransformer
    model: Ridge | LogisticRegression         # fitted on every context row
    mean: float                               # statistics of the out-of-fold predictions
    std: float

    def queries(self, x_query: np.ndarray) -> np.ndarray:
        """(M,) the view of the (M, D) standardised query rows: each row's value depends on that row alone."""
        s = _score(self.model, basis(self.splines, x_query))
        return np.clip((s - self.mean) / self.std, -CLIP, CLIP).astype(np.float32)


def fit_linear_view(x_ctx: np.ndarray, y_ctx: np.ndarray, classification: bool, seed: int) -> LinearView | None:
    """The view of the standardised (N, D) context with labels y_ctx: out-of-fold additive-model predictions
    for the context rows and the model fitted on all of them for the queries. None where there is no single
    target (more than two classes) or too few rows (or rows of a class) to cross-fit."""
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
    # cubic B-splines with knots at the context's quantiles, linear beyond the outer ones; the knots read the
    # context's features, never its labels
    splines = SplineTransformer(n_knots=KNOTS, degree=3, knots="quantile", extrapolation="linear").fit(np.nan_to_num(x_ctx))
    b_ctx = basis(splines, x_ctx)
    rng = np.random.default_rng(seed)

    def fitted(rows: np.ndarray):
        if len(rows) > FIT_ROWS:
            rows = rng.choice(rows, FIT_ROWS, replace=False)
        # Newton steps on a Cholesky factor: exact on these few hundred columns, where lbfgs stops short
        model = LogisticRegression(solver="newton-cholesky", max_iter=1000) if classification else Ridge()
        return model.fit(b_ctx[rows], y_ctx[rows])

    s_ctx = np.empty(len(b_ctx))
    for train, held in folds.split(b_ctx, y_ctx):
        s_ctx[held] = _score(fitted(train), b_ctx[held])
    full = fitted(np.arange(len(b_ctx)))
    mean, std = float(s_ctx.mean()), float(s_ctx.std())
    std = std if std > 0 else 1.0
    return LinearView(np.clip((s_ctx - mean) / std, -CLIP, CLIP).astype(np.float32), splines, full, mean, std)
