"""The table `feat predict` and the app's downloads write for query rows: the predicted value in a column named
after the target and, for classification, one `p(<class>)` probability column per class, in `classes_` order;
and `roc_auc`, the one ROC-AUC rule of the app, the benchmarks and the trainer.

    table = prediction_frame(clf, query, "y")      # columns y, p(no), p(yes); query's index
    meta = prediction_meta(clf, "y")               # the same columns and dtypes, no rows, no model run

The CLI writes it for one query file here, and partition by partition on Dask (`dask_scoring.py`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from .estimators import FEATClassifier, FEATRegressor

Fitted = FEATClassifier | FEATRegressor


def prediction_frame(estimator: Fitted, query: pd.DataFrame, target: str) -> pd.DataFrame:
    """The fitted estimator's predictions for the query rows, on query's index; a query column named
    `target`, if present, is ignored."""
    query = query.drop(columns=[target], errors="ignore")
    out = estimator.predict_proba(query) if isinstance(estimator, FEATClassifier) else estimator.predict(query)
    return prediction_table(out, estimator.classes_ if out.ndim == 2 else None, target, query.index)


def prediction_meta(estimator: Fitted, target: str, index: pd.Index | None = None) -> pd.DataFrame:
    """An empty frame with `prediction_frame`'s columns and dtypes (and `index`, default an empty
    RangeIndex), without running the model: the table of one made-up output row, emptied."""
    one = np.zeros((1, len(estimator.classes_))) if isinstance(estimator, FEATClassifier) else np.zeros(1)
    meta = prediction_table(one, estimator.classes_ if one.ndim == 2 else None, target, pd.RangeIndex(1)).iloc[:0]
    return meta if index is None else meta.set_axis(index[:0])


def prediction_table(out: np.ndarray, classes: Sequence | None, target: str, index: pd.Index) -> pd.DataFrame:
    """The table from a model's output: class probabilities (M, K) of `classes` (the most probable one under
    `target`, then a `p(<class>)` column per class), or predicted values (M,) under `target`."""
    if out.ndim == 1:
        return pd.DataFrame({target: out}, index=index)
    labels = classes if isinstance(classes, np.ndarray) else np.asarray(list(classes), dtype=object)
    table = pd.DataFrame(out, columns=[f"p({c})" for c in labels], index=index)
    table.insert(0, target, labels[out.argmax(1)])
    return table


def roc_auc(y: np.ndarray, proba: np.ndarray) -> float:
    """ROC-AUC of class codes y (code c is proba's column c): binary on p(class 1); for more classes the macro
    one-vs-rest mean over the classes present in y (scikit-learn's multi_class="ovr" when all are present). NaN
    when fewer than two classes are present, or y holds a code that proba has no column for."""
    y = np.asarray(y)
    present = np.unique(y)
    k = proba.shape[1]
    if len(present) < 2 or present.max() >= k or present.min() < 0:
        return float("nan")
    if k == 2:
        return float(roc_auc_score(y, proba[:, 1]))
    return float(np.mean([roc_auc_score(y == c, proba[:, int(c)]) for c in present]))
