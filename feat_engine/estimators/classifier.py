"""FEATClassifier: labels of any type and any number of classes, read in context."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin

from ..errors import FEATInputError
from ..model import FEAT
from ..preprocess import UnclippedRows
from ..progress import Progress, StepCounter
from ..reading.blend import blend_probability
from ..reading.members import Member
from ..reading.quantile_transform import reads_quantiles
from ..reading.read_budget import READ_CELLS
from ..targets import ClassEncoder, as_target, is_continuous, target_name, target_rows
from . import runner
from .base import documented
from .in_context import KEPT_MEMBERS, LOCAL_CONTEXT, InContextBase


@documented(
    "Zero-shot classifier: `fit` stores the context, `predict_proba` reads it with the pretrained model.",
    {"n_estimators": ("int or None, default None",
                      KEPT_MEMBERS + "Each member has its own row order, feature order (or subset), "
                      "column-identity draw and class-slot rotation; the 2nd, 4th, ... read numeric columns through "
                      "their context quantiles."),
     "multiclass": ('{"ovr", "head"}, default "ovr"', '"ovr" reads each of K > 2 classes against the rest in a run '
                    'of its own and normalises the K scores; "head" reads all classes from the classification head '
                    "in one run (at most 10 classes).")},
    {"classes_": ("ndarray", "The labels, in the order of `predict_proba`'s columns."),
     "reading_": ("str", "One sentence on how the members read the fitted table."),
     "read_plan_": ("ReadPlan", "What the engine read within `read_budget`: members, context rows per member, cells."),
     "member_choice_": ("MemberChoice or None", "How many members `fit` kept, and the change each made to the "
                        "held-out predictions; None where no rows are held out.")},
)
class FEATClassifier(ClassifierMixin, InContextBase):
    def __init__(
        self, n_estimators: int | None = None, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None, local_context: int | str | None = LOCAL_CONTEXT,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        multiclass: str = "ovr", precision: str = "auto", view: str | None = "auto", blend: bool = True,
        read_budget: int | None = READ_CELLS,
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, local_context, checkpoint,
                         progress, precision, view, blend, read_budget)
        self.multiclass = multiclass

    def fit(self, X: Any, y: Any) -> "FEATClassifier":
        """Store the context table X and its labels y (rows with a missing label are dropped)."""
        if self.multiclass not in ("ovr", "head"):
            raise FEATInputError(f"multiclass must be 'ovr' or 'head', got {self.multiclass!r}")
        X, y = self._context_frame(X, y), as_target(y)
        keep = target_rows(y, len(X))
        y = y.iloc[keep]
        if is_continuous(y):
            raise FEATInputError(
                f"Unknown label type: continuous. Target {target_name(y)!r} holds {y.nunique()} distinct numbers, not "
                "all whole, which FEATClassifier cannot take as classes: use FEATRegressor to predict a number, or "
                "pass the labels as strings if they are classes")
        self.encoder_ = ClassEncoder().fit(y)
        self.classes_ = self.encoder_.classes_
        limit = self._loaded_model().cfg.max_classes
        if self.multiclass == "head" and len(self.classes_) > limit:
            raise FEATInputError(f"multiclass='head' reads at most {limit} classes from the head, the target has "
                                 f"{len(self.classes_)}; use multiclass='ovr'")
        self._fit_supervised(X.iloc[keep], self.encoder_.transform(y), classification=True)
        return self

    def _ovr_classes(self) -> list[int | None]:
        """One run per member on the classes themselves (two classes, or `multiclass="head"`), else one
        per class against the rest."""
        k = len(self.classes_)
        return [None] if k == 2 or self.multiclass == "head" else list(range(k))

    def predict_proba(self, X: Any) -> np.ndarray:
        """(M, n_classes) class probabilities, columns in the order of `classes_`."""
        return self._predicted(X)

    def predict(self, X: Any) -> np.ndarray:
        """Most probable label per query row, in the labels' own type."""
        proba = self.predict_proba(X)
        return self.encoder_.inverse_transform(np.argmax(proba, axis=1))

    def _member_output(self, m: Member, route: np.ndarray | None, xq: np.ndarray, detail: UnclippedRows,
                       held: np.ndarray | None, steps: StepCounter | None) -> tuple[np.ndarray, np.ndarray]:
        """(M, k) probabilities of one run on the classes, or (M, k) one-vs-rest scores, and beside them the
        stacked models' logits, one column per run."""
        model, settings = self._loaded_model(), self._engine_settings()
        k = len(self.classes_)
        classes = self._ovr_classes()
        one_run = classes == [None]
        name = f"member {m.index + 1}/{len(self.members_)}"
        scores, stacked = [], []
        for c in classes:
            mats = self._run_matrices(m, c, xq, detail, held)
            if steps is None:                     # the stacked model alone: 0.5 weighs nothing in a blend at weight 1
                out = np.full((len(mats.queries), k if one_run else 2), 0.5)
            else:
                run = runner.MemberRun(model, m, k if one_run else 2, reads_quantiles(m), settings,
                                       name if one_run else f"{name}, class {c + 1}/{k}", one_vs_rest=not one_run)
                out = runner.member_output(run, route, mats.context, mats.labels, mats.queries, steps)
            scores.append(out if one_run else out[:, 1])
            stacked.append(mats.stacked)
        return scores[0] if one_run else np.stack(scores, axis=1), np.stack(stacked, axis=1)

    def _combine(self, outputs: list[tuple[np.ndarray, np.ndarray]], weight: float) -> np.ndarray:
        """Each binary run's probability of its class blended with its stacked model's logit, one-vs-rest scores
        normalised, averaged over the members."""
        one_run = self._ovr_classes() == [None]       # a "head" run on K > 2 classes has no stacked model
        proba = 0.0
        for scores, stacked in outputs:
            if not one_run:
                scores = blend_probability(scores, stacked, weight)
                scores = scores / scores.sum(axis=1, keepdims=True)
            elif scores.shape[1] == 2:
                p = blend_probability(scores[:, 1], stacked[:, 0], weight)
                scores = np.column_stack([1.0 - p, p])
            proba = proba + scores
        return proba / len(outputs)

    @staticmethod
    def _row_loss(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Log-loss of each row's true class (class indices y)."""
        return -np.log(np.clip(proba[np.arange(len(y)), y], 1e-6, 1.0))
