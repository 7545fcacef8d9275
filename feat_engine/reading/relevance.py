"""How much each feature tells about the target, measured on the context alone: mutual information (scikit-learn's
kNN estimator) on a random subsample of at most MAX_ROWS context rows, so that the cost does not grow with the table.
The estimator runs on one thread: it makes a thousand small neighbour searches, each of which would start OpenMP
threads that spin for cores another process holds (docs/decisions/0014-relevance-ranked-features.md)."""
from __future__ import annotations

import numpy as np
from sklearn.feature_selection import mutual_info_classif, mutual_info_regression
from threadpoolctl import threadpool_limits

from ..preprocess import CLIP

MAX_ROWS = 4096     # context rows the scores are estimated on


def relevance(
    x: np.ndarray, y: np.ndarray, classification: bool, nominal: np.ndarray, seed: int | None,
) -> np.ndarray:
    """(D,) mutual information of each standardised feature with the target: class indices for
    classification, a numeric target otherwise. The `nominal` columns are scored as discrete
    (their codes have no order; missing is a level of its own; a column none of whose levels recurs in
    the rows read scores 0); elsewhere NaN reads as the context mean, 0."""
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(x))[:MAX_ROWS]
    xs = np.asarray(x, dtype=np.float64)[rows]
    discrete = np.zeros(xs.shape[1], bool)
    discrete[nominal] = True
    for j in np.flatnonzero(discrete):        # level labels 0..L-1, missing the last
        levels, xs[:, j] = np.unique(np.nan_to_num(xs[:, j], nan=2 * CLIP), return_inverse=True)
        if len(levels) == len(xs):            # no level seen twice tells nothing (and scikit-learn's estimator
            xs[:, j] = 0.0                    # of a discrete feature against a number needs a level seen twice)
    xs = np.nan_to_num(xs, nan=0.0)
    with threadpool_limits(1):
        if classification:
            return mutual_info_classif(xs, np.asarray(y)[rows], discrete_features=discrete, random_state=seed)
        return mutual_info_regression(xs, np.asarray(y, dtype=np.float64)[rows], discrete_features=discrete,
                                      random_state=seed)
