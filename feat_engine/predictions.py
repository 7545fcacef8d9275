"""The table `feat predict` writes for query rows: the predicted value in a column named after the
target and, for classification, one `p(<class>)` probability column per class, in `classes_` order.

    table = prediction_frame(clf, query, "y")      # columns y, p(no), p(yes); query's index
    meta = prediction_meta(clf, "y")               # the same columns and dtypes, no rows, no model run

The CLI writes it for one query file here, and partition by partition on Dask (`dask_scoring.py`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .estimators import FEATClassifier, FEATRegressor

Fitted = FEATClassifier | FEATRegressor


def prediction_frame(estimator: Fitted, query: pd.DataFrame, target: str) -> pd.DataFrame:
    """The fitted estimator's predictions for the query rows, on query's index; a query column named
    `target`, if present, is ignored."""
    query = query.drop(columns=[target], errors="ignore")
    out = estimator.predict_proba(query) if isinstance(estimator, FEATClassifier) else estimator.predict(query)
    return _table(estimator, out, target, query.index)


def prediction_meta(estimator: Fitted, target: str, index: pd.Index | None = None) -> pd.DataFrame:
    """An empty frame with `prediction_frame`'s columns and dtypes (and `index`, default an empty
    RangeIndex), without running the model: the table of one made-up output row, emptied."""
    one = np.zeros((1, len(estimator.classes_))) if isinstance(estimator, FEATClassifier) else np.zeros(1)
    meta = _table(estimator, one, target, pd.RangeIndex(1)).iloc[:0]
    return meta if index is None else meta.set_axis(index[:0])


def _table(estimator: Fitted, out: np.ndarray, target: str, index: pd.Index) -> pd.DataFrame:
    """The table from the model's output: class probabilities (M, K) or predicted values (M,)."""
    if out.ndim == 1:
        return pd.DataFrame({target: out}, index=index)
    table = pd.DataFrame(out, columns=[f"p({c})" for c in estimator.classes_], index=index)
    table.insert(0, target, estimator.classes_[out.argmax(1)])
    return table
