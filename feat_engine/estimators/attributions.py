"""Why a prediction: each feature priced by hiding its cell and reading the row again, as the dependence matrix
prices a column (docs/decisions/0034-masked-attributions.md). FEAT reads a missing cell natively, and the context
states are kept between calls, so pricing D features costs D more readings of the query rows, made in one call."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .classifier import FEATClassifier
from .regressor import FEATRegressor


def masked_attributions(estimator: FEATClassifier | FEATRegressor, X: Any) -> pd.DataFrame:
    """How much each cell of X moves its row's prediction: the prediction with every cell, less the prediction with
    that cell hidden (made missing). For a classifier, in probability of the class predicted with every cell; for
    a regressor, in the target's units. Positive: the cell pushed the prediction towards what it is.

    Parameters
    ----------
    estimator : FEATClassifier or FEATRegressor
        A fitted estimator.
    X : DataFrame or array-like of shape (M, D)
        Query rows, with the columns of the estimator's context.

    Returns
    -------
    DataFrame of shape (M, D)
        One row per query row (X's index) and one column per feature. Its mean absolute value per column ranks
        the features for these rows. A row's values do not depend on the other rows of X.
    """
    frame = estimator._query_frame(X, "X")          # the context's columns, checked; arrays get its names
    m = len(frame)
    hidden = [frame] + [_hide(frame, c) for c in frame.columns]
    stacked = pd.concat(hidden, ignore_index=True)
    if isinstance(estimator, FEATClassifier):
        proba = estimator.predict_proba(stacked).reshape(len(hidden), m, -1)
        chosen = np.argmax(proba[0], axis=1)
        score = proba[:, np.arange(m), chosen]
    else:
        score = np.asarray(estimator.predict(stacked), np.float64).reshape(len(hidden), m)
    return pd.DataFrame((score[0] - score[1:]).T, index=frame.index, columns=frame.columns)


def _hide(frame: pd.DataFrame, column: Any) -> pd.DataFrame:
    """frame with every cell of `column` missing, in the column's own kind where it can hold a missing value."""
    out = frame.copy()
    out[column] = frame[column].where(np.zeros(len(frame), bool))
    return out
