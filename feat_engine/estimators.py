"""scikit-learn estimators over the pretrained FEAT model: `fit` stores the context, no gradient steps.

    FEATClassifier().fit(X, y).predict_proba(X_test)
    FEATRegressor().fit(X, y).predict(X_test)
    FEATImputer().fit_transform(X)          # same shape, dtypes and categories; only NaN cells change

Every prediction averages `n_estimators` members (row permutation, feature shuffle, S-DFE
draw, one seed each). Query rows never see each other, so a row's prediction does not
depend on the other query rows. Bad input raises `FEATInputError` (a ValueError); `predict`
before `fit` raises scikit-learn's `NotFittedError` (also a ValueError).
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .ensemble import Member, Progress, StepCounter, plan_members, resolve_model, trained_max_features
from .inference import run
from .model import FEAT
from .preprocess import (
    ClassEncoder, FEATDataWarning, FEATInputError, TablePreprocessor, TargetScaler, as_frame, target_rows,
)


class _FEATBase(BaseEstimator):
    """Parameters and context handling shared by the three estimators.

    n_estimators: ensemble members (row permutation, feature shuffle, S-DFE draw each).
    random_state: int for reproducible results, None for a fresh draw per call.
    device: "auto" (CUDA when available, else CPU), "cpu" or "cuda".
    max_context: context rows per member (a random subset per member); None = all rows.
    max_features: features per member; None = the width the checkpoint was pretrained on.
    checkpoint: a checkpoint path, a loaded FEAT model, or None for the shipped one.
    progress: callback (done, total, message) over all engine runs of a call.
    """

    def __init__(
        self, n_estimators: int = 4, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
    ):
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.device = device
        self.max_context = max_context
        self.max_features = max_features
        self.checkpoint = checkpoint
        self.progress = progress

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    def _fit_features(self, X: pd.DataFrame) -> None:
        self.n_features_in_ = X.shape[1]
        if all(isinstance(c, str) for c in X.columns):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.preprocessor_ = TablePreprocessor().fit(X)
        self.context_ = self.preprocessor_.transform(X, "context")

    def _model(self) -> tuple[FEAT, int]:
        model, meta = resolve_model(self.checkpoint)
        return model, self.max_features or trained_max_features(meta)

    def _members(self, n_rows: int, n_features: int, max_features: int, max_context: int | None) -> list[Member]:
        return plan_members(n_rows, n_features, self.n_estimators, max_features, max_context, self.random_state)

    def _query(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "context_")
        return self.preprocessor_.transform(as_frame(X, "query"), "query")


def _target(y: Any) -> pd.Series:
    """y as a Series (a single-column 2-D array is flattened)."""
    if isinstance(y, pd.Series):
        return y
    y = np.asarray(y)
    return pd.Series(y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y)


class FEATClassifier(ClassifierMixin, _FEATBase):
    """Zero-shot classifier for labels of any type and any number of classes.

    multiclass: "ovr" (default) scores each of K > 2 classes with its own binary run
    (class vs rest) and normalises the K scores; "head" reads all classes from the
    classification head in one run (at most 10 classes). Either way each member presents the
    classes in a rotated order, so the head's class slots are used evenly
    (docs/design.md, "Classes: one-vs-rest and label rotation").
    """

    def __init__(
        self, n_estimators: int = 4, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        multiclass: str = "ovr",
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, checkpoint, progress)
        self.multiclass = multiclass

    def fit(self, X: Any, y: Any) -> "FEATClassifier":
        """Store the context table X and its labels y (rows with a missing label are dropped)."""
        if self.multiclass not in ("ovr", "head"):
            raise FEATInputError(f"multiclass must be 'ovr' or 'head', got {self.multiclass!r}")
        X, y = as_frame(X, "context"), _target(y)
        keep = target_rows(y, len(X))
        y = y.iloc[keep]
        self._fit_features(X.iloc[keep])
        self.encoder_ = ClassEncoder().fit(y)
        self.classes_ = self.encoder_.classes_
        limit = self._model()[0].cfg.max_classes
        if self.multiclass == "head" and len(self.classes_) > limit:
            raise FEATInputError(f"multiclass='head' reads at most {limit} classes from the head, the target has "
                                 f"{len(self.classes_)}; use multiclass='ovr'")
        self.y_ = self.encoder_.transform(y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """(M, n_classes) class probabilities, columns in the order of `classes_`."""
        xq = self._query(X)
        model, max_features = self._model()
        k = len(self.classes_)
        one_run = k == 2 or self.multiclass == "head"
        members = self._members(len(self.context_), xq.shape[1], max_features, self.max_context)
        steps = StepCounter(self.progress, len(members) * (1 if one_run else k))
        proba = np.zeros((len(xq), k))
        for m in members:
            ctx, y, q = self.context_[m.rows][:, m.features], self.y_[m.rows], xq[:, m.features]
            name = f"member {m.index + 1}/{len(members)}"
            if one_run:
                proba += _rotated_proba(model, ctx, y, q, k, m, self.device, steps.callback(name))
            else:
                scores = np.stack([
                    _rotated_proba(model, ctx, (y == c).astype(np.int64), q, 2, m, self.device,
                                   steps.callback(f"{name}, class {c + 1}/{k}"))[:, 1]
                    for c in range(k)], axis=1)
                proba += scores / scores.sum(axis=1, keepdims=True)
        return proba / len(members)

    def predict(self, X: Any) -> np.ndarray:
        """Most probable label per query row, in the labels' own type."""
        proba = self.predict_proba(X)
        return self.encoder_.inverse_transform(np.argmax(proba, axis=1))


def _rotated_proba(
    model: FEAT, ctx: np.ndarray, y: np.ndarray, xq: np.ndarray, k: int, m: Member, device: str,
    progress: Progress | None,
) -> np.ndarray:
    """P(class | query) for classes 0..k-1 from one run in which class c sits in head slot
    (c + m.index) mod k, so that across members every class visits every slot."""
    slot = (np.arange(k) + m.index) % k
    res = run(model, ctx, slot[y].astype(np.float32), xq, "classification", n_classes=k,
              column_ids=m.column_ids(model), device=device, progress=progress)
    return softmax(res.logits[:, :k].astype(np.float64), axis=1)[:, slot]


class FEATRegressor(RegressorMixin, _FEATBase):
    """Zero-shot regressor; targets are standardised with context statistics and mapped back."""

    def fit(self, X: Any, y: Any) -> "FEATRegressor":
        """Store the context table X and its numeric targets y (rows with a missing target are dropped)."""
        X, y = as_frame(X, "context"), _target(y)
        keep = target_rows(y, len(X))
        self.scaler_ = TargetScaler().fit(y.iloc[keep])
        self._fit_features(X.iloc[keep])
        self.y_ = self.scaler_.transform(y.iloc[keep])
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets in the original units, averaged over the members."""
        xq = self._query(X)
        model, max_features = self._model()
        members = self._members(len(self.context_), xq.shape[1], max_features, self.max_context)
        steps = StepCounter(self.progress, len(members))
        pred = np.zeros(len(xq))
        for i, m in enumerate(members):
            res = run(model, self.context_[m.rows][:, m.features], self.y_[m.rows], xq[:, m.features], "regression",
                      column_ids=m.column_ids(model), device=self.device,
                      progress=steps.callback(f"member {i + 1}/{len(members)}"))
            pred += res.pred
        return self.scaler_.inverse_transform(pred / len(members))


class FEATImputer(TransformerMixin, _FEATBase):
    """Fills the NaN cells of a table from the imputation head; every other cell is returned unchanged.

    `transform(X)` uses the fitted rows plus the rows of X as one unlabelled context (X alone
    when X is the fitted table, as in `fit_transform`). With `max_context`, the rows are imputed
    in random blocks of that many rows, each block its own context.
    """

    def fit(self, X: Any, y: Any = None) -> "FEATImputer":
        """Store the table whose rows serve as context."""
        self._fit_features(as_frame(X, "X"))
        return self

    def transform(self, X: Any) -> Any:
        """X with every NaN cell filled, in X's dtypes and categories (DataFrame in, DataFrame out)."""
        frame = as_frame(X, "X")
        xz = self._query(frame)
        same = xz.shape == self.context_.shape and np.array_equal(xz, self.context_, equal_nan=True)
        table = xz if same else np.vstack([self.context_, xz])
        recon = self._reconstruct(table)[len(table) - len(xz):]
        out = self.preprocessor_.inverse_transform(recon, frame)
        left = [c for c in out.columns if out[c].isna().any() and frame[c].isna().any()]
        if left:
            warnings.warn(f"columns {left} were dropped ({', '.join(self.preprocessor_.dropped_[c] for c in left)}) "
                          "and keep their missing cells", FEATDataWarning, stacklevel=2)
        return out if isinstance(X, pd.DataFrame) else out.to_numpy(dtype=np.asarray(X).dtype)

    def _reconstruct(self, table: np.ndarray) -> np.ndarray:
        """(N, D) standardised reconstruction, averaged over members (per feature, over the members that saw it)."""
        model, max_features = self._model()
        members = self._members(len(table), table.shape[1], max_features, None)   # rows are blocked below
        block = len(table) if self.max_context is None else self.max_context
        n_blocks = math.ceil(len(table) / block)
        total, count = np.zeros(table.shape), np.zeros(table.shape[1])
        steps = StepCounter(self.progress, len(members) * n_blocks)
        for i, m in enumerate(members):
            order = np.random.default_rng(m.seed).permutation(len(table))
            for b in range(n_blocks):
                rows = order[b * block:(b + 1) * block]
                res = run(model, table[rows][:, m.features], None, None, None, column_ids=m.column_ids(model),
                          device=self.device, want_recon=True,
                          progress=steps.callback(f"member {i + 1}/{len(members)}, block {b + 1}/{n_blocks}"))
                total[np.ix_(rows, m.features)] += res.recon
            count[m.features] += 1
        return total / count
