"""Whole-number and date columns whose levels tell more about the target than their order: the id of a unit that
recurs (a firm, a school, a patient in panel data), a category written as a number, or a date that rows share (a
day's weather, a week's prices) beyond what the calendar's trend tells. Measured on the context alone:
the cross-fitted squared error of the column's levels (scikit-learn's `TargetEncoder`, as `target_stats.py`)
against that of a small tree on its value (at most LEAVES leaves: what the order can tell) or of no feature at
all. Where the levels' error is lower by MIN_GAIN of the target's variance, the column is read twice: as the number
(the date's parts), and as nominal levels with target statistics (docs/decisions/0044-whole-number-levels.md)."""
from __future__ import annotations

from typing import Hashable

import numpy as np
import pandas as pd
from scipy.stats import norm, rankdata
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.preprocessing import TargetEncoder
from sklearn.tree import DecisionTreeRegressor

from ..preprocess import TablePreprocessor
from .target_stats import CV

MIN_GAIN = 0.05        # share of the target's variance the levels must explain beyond the order
LEAVES = 16            # leaves of the tree that reads the column's order
MIN_LEAF = 10          # rows per leaf of that tree
MIN_LEVELS = 3         # columns of fewer distinct values are read as numbers alone
MAX_ROWS = 50_000      # context rows the errors are measured on, so that the cost does not grow with the table
MAX_CLASSES = 20       # the most frequent classes whose indicators stand for a many-class target


def targets(y: np.ndarray, classification: bool) -> np.ndarray:
    """(N, T) what the errors are measured on: the target's normal scores (its ranks mapped onto the standard normal,
    so that a few extreme values do not decide the squared errors), or the indicators of the classes (one column for
    two classes; the MAX_CLASSES most frequent and one for the rest where there are more)."""
    if not classification:
        y = np.asarray(y, dtype=np.float64)
        return norm.ppf((rankdata(y) - 0.5) / len(y))[:, None]
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    rank = np.argsort(np.argsort(-counts, kind="stable"))           # 0 for the most frequent class
    indicators = np.eye(min(len(classes), MAX_CLASSES + 1))[np.minimum(rank[inverse], MAX_CLASSES)]
    return indicators[:, 1:] if len(classes) == 2 else indicators


def level_gain(v: np.ndarray, Y: np.ndarray, seed: int | None) -> float:
    """Share of the variance of the targets Y (N, T) that the levels of the values v (N,; whole numbers, or a date's
    days) explain beyond their order, out of fold: (min(tree's error, variance) - levels' error) / variance, summed
    over Y's columns.
    NaN rows are left out; NaN with fewer than MIN_LEVELS levels or 2 * CV rows."""
    seen = np.isfinite(v)
    v, Y = v[seen], Y[seen]
    values, levels = np.unique(v, return_inverse=True)
    if len(v) < 2 * CV or len(values) < MIN_LEVELS:
        return np.nan
    folds = KFold(CV, shuffle=True, random_state=seed)
    variance = Y.var(axis=0).sum()
    if variance <= 0:
        return np.nan
    tree = DecisionTreeRegressor(max_leaf_nodes=LEAVES, min_samples_leaf=MIN_LEAF, random_state=seed)
    # the tree reads the levels' ranks, which order the rows as the values do (and stay finite in float32)
    by_order = cross_val_predict(tree, levels[:, None].astype(np.float64), Y, cv=folds).reshape(Y.shape)
    labels = Y.argmax(axis=1)
    if Y.shape[1] > 1 and len(present := np.unique(labels)) > 2:     # Y one-hot: the classes' statistics at once
        by_levels = np.zeros_like(Y)
        by_levels[:, present] = TargetEncoder(target_type="multiclass", cv=folds).fit_transform(levels[:, None], labels)
    else:
        by_levels = np.column_stack([TargetEncoder(target_type="continuous", cv=folds)
                                     .fit_transform(levels[:, None], Y[:, t])[:, 0] for t in range(Y.shape[1])])
    order_error = min(((by_order - Y) ** 2).mean(axis=0).sum(), variance)
    return float((order_error - ((by_levels - Y) ** 2).mean(axis=0).sum()) / variance)


def coded_level_columns(pre: TablePreprocessor, X: pd.DataFrame, y: np.ndarray, classification: bool,
                        seed: int | None) -> list[Hashable]:
    """The whole-number and date columns of the context X (as `pre`, fitted on it, reads them) whose levels explain
    at least MIN_GAIN of the target's variance beyond their order (`level_gain`; a date's order is its days),
    measured on at most MAX_ROWS context rows drawn with `seed`."""
    ordered = [c for c in pre.plan_ if (c.kind == "numeric" and c.integer) or c.kind == "datetime"]
    if not ordered:
        return []
    rows = np.random.default_rng(seed).permutation(len(X))[:MAX_ROWS]
    Y = targets(np.asarray(y)[rows], classification)
    return [c.name for c in ordered if level_gain(c.values(X[c.name].iloc[rows]), Y, seed) >= MIN_GAIN]
