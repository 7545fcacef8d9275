"""How much each feature tells about the target, measured on the context alone: mutual information (scikit-learn's
kNN estimator) on a random subsample of at most MAX_ROWS context rows, so that the cost does not grow with the table
(docs/decisions/0014-relevance-ranked-features.md)."""
from __future__ import annotations

import numpy as np
from sklearn.feature_selection import mutual_info_classif, mutual_info_regression

from ..preprocess import CLIP

MAX_ROWS = 4096     # context rows the scores are estimated on


def relevance(
    x: np.ndarray, y: np.ndarray, classification: bool, nominal: np.ndarray, seed: int | None,
) -> np.ndarray:
    """(D,) mutual information of each standardised feature with the target: class indices for
    classification, a numeric target otherwise. The `nominal` columns are scored as discrete
    (their codes have no order; missing is a level of its own); elsewhere NaN reads as the
    context mean, 0."""
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(x))[:MAX_ROWS]
    xs = np.asarray(x, dtype=np.float64)[rows]
    discrete = np.zeros(xs.shape[1], bool)
    discrete[nominal] = True
    for j in np.flatnonzero(discrete):        # level labels 0..L-1, missing the last
        xs[:, j] = np.unique(np.nan_to_num(xs[:, j], nan=2 * CLIP), return_inverse=True)[1]
    xs = np.nan_to_num(xs, nan=0.0)
    if classification:
        return mutual_info_classif(xs, np.asarray(y)[rows], discrete_features=discrete, random_state=seed)
    return mutual_info_regression(xs, np.asarray(y, dtype=np.float64)[rows], discrete_features=discrete,
                                  random_state=seed)
