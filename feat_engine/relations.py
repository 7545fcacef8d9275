"""Feature-relation matrices (paper section 6.4): FEAT attention, Pearson and Spearman.

`relation_matrix` reads the feature-axis attention of the pretrained model. The runner
returns, per block, the attention (heads, C, C) averaged over rows, where C = D + 1 and the
last token is the label. We average it over blocks and heads, drop the label token when
there is no target, zero the diagonal (a token attending to itself says nothing about
relations) and normalise each row to sum to 1. Entry [i, j] is then the share of row
feature i's attention to *other* features that goes to column feature j: "i reads from j".
The matrix is not symmetric. Each member of the ensemble draws its own row subsample
(`max_rows`, default 1024: attention is an average over rows, which settles long before
that), row order, column order and S-DFE identities from `random_state`, so the result is
reproducible for a fixed seed. All three matrices share one column order: the encoded
features (datetime columns expand into parts), then the target.
"""
from __future__ import annotations

import os
from typing import Any, Hashable

import numpy as np
import pandas as pd

from .ensemble import Progress, StepCounter, plan_members, resolve_model
from .inference import run
from .model import FEAT
from .preprocess import (
    ClassEncoder, FEATInputError, TablePreprocessor, TargetScaler, as_frame, infer_task, target_rows,
)


def _split(X: Any, target: Hashable | None) -> tuple[pd.DataFrame, pd.Series | None]:
    X = as_frame(X, "X")
    if target is None:
        return X, None
    if target not in X.columns:
        raise FEATInputError(f"target column {target!r} does not exist (columns: {list(X.columns)})")
    y = X[target]
    X = X.drop(columns=[target])
    if X.shape[1] == 0:
        raise FEATInputError(f"no feature columns besides the target {target!r}")
    return X, y


def encoded_table(X: Any, target: Hashable | None = None) -> pd.DataFrame:
    """The numeric table all three matrices describe: encoded features, then the target (codes for classes)."""
    X, y = _split(X, target)
    enc = TablePreprocessor().fit(X).encode(X)
    if y is not None:
        enc[str(target)] = y.to_numpy() if infer_task(y) == "regression" else _codes(y, target).astype(float)
    return enc


def _codes(y: pd.Series, name: Hashable) -> np.ndarray:
    codes = ClassEncoder().fit(y.dropna(), str(name)).transform(y).astype(float)
    codes[codes < 0] = np.nan
    return codes


def pearson_matrix(X: Any, target: Hashable | None = None) -> pd.DataFrame:
    """Pearson correlation (pairwise complete rows) of the encoded table, in relation_matrix's order."""
    return encoded_table(X, target).corr(method="pearson")


def spearman_matrix(X: Any, target: Hashable | None = None) -> pd.DataFrame:
    """Spearman rank correlation of the encoded table, in relation_matrix's order."""
    return encoded_table(X, target).corr(method="spearman")


def relation_matrix(
    X: Any, target: Hashable | None = None, n_estimators: int = 2, max_rows: int = 1024,
    random_state: int | None = 0, device: str = "auto",
    checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
) -> pd.DataFrame:
    """D x D (or (D+1) x (D+1) with `target`, a column of X) FEAT attention relations.

    Rows attend, columns are attended; zero diagonal; each row sums to 1 (see the module docstring).
    """
    X, y = _split(X, target)
    model, _ = resolve_model(checkpoint)
    pre = TablePreprocessor().fit(X)
    names = pre.feature_names_
    x = pre.transform(X)
    y_ctx, task, n_classes = None, None, None
    if y is not None:
        keep = target_rows(y, len(X), str(target))
        x, y = x[keep], y.iloc[keep]
        task = infer_task(y)
        if task == "regression":
            y_ctx = TargetScaler().fit(y, str(target)).transform(y)
        else:
            enc = ClassEncoder().fit(y, str(target))
            n_classes = len(enc.classes_)
            if n_classes > model.cfg.max_classes:
                raise FEATInputError(f"target {target!r} has {n_classes} classes; "
                                     f"relation_matrix supports at most {model.cfg.max_classes}")
            y_ctx = enc.transform(y).astype(np.float32)
        names = names + [str(target)]
    d = x.shape[1]
    members = plan_members(len(x), d, n_estimators, d, max_rows, random_state)
    steps = StepCounter(progress, len(members))
    total = np.zeros((d + 1, d + 1))
    for i, m in enumerate(members):
        res = run(model, x[m.rows][:, m.features], None if y_ctx is None else y_ctx[m.rows], None, task,
                  n_classes=n_classes, column_ids=m.column_ids(model), device=device, want_attention=True,
                  progress=steps.callback(f"member {i + 1}/{len(members)}"))
        a = np.mean([blk.mean(0) for blk in res.attention], axis=0)      # (C, C), member's feature order
        order = np.append(m.features, d)                                  # back to the table's order
        total[np.ix_(order, order)] += a
    a = total if y is not None else total[:d, :d]
    np.fill_diagonal(a, 0.0)
    a = a / np.where(a.sum(1, keepdims=True) > 0, a.sum(1, keepdims=True), 1.0)
    return pd.DataFrame(a, index=names, columns=names)
