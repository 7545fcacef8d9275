"""FEATRegressor: numeric targets, standardised with the context's statistics and read in context."""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import RegressorMixin

from ..preprocess import UnclippedRows
from ..progress import StepCounter
from ..reading.blend import blend_prediction
from ..reading.members import Member
from ..reading.power_target import reads_power
from ..reading.quantile_transform import reads_quantiles
from ..targets import TargetScaler, as_target, numeric_target, target_rows
from . import runner
from .base import documented
from .in_context import KEPT_MEMBERS, InContextBase


@documented(
    "Zero-shot regressor: `fit` stores the context, `predict` reads it with the pretrained model; targets are "
    "standardised with the context's statistics and mapped back.",
    {"n_estimators": ("int or None, default None",
                      KEPT_MEMBERS + "Each member has its own row order, feature order (or subset) "
                      "and column-identity draw; the 2nd, 4th, ... read numeric columns through their context "
                      "quantiles and the target on a power scale (unless one value holds half of the targets).")},
    {"reading_": ("str", "One sentence on how the members read the fitted table."),
     "power_scale_": ("bool", "Whether the quantile members read the target on a power scale: not where one value "
                      "holds half of the context's targets."),
     "read_plan_": ("ReadPlan", "What the engine read within `read_budget`: members, context rows per member, cells."),
     "member_choice_": ("MemberChoice or None", "How many members `fit` kept, and the change each made to the "
                        "held-out predictions; None where no rows are held out.")},
)
class FEATRegressor(RegressorMixin, InContextBase):
    def fit(self, X: Any, y: Any) -> "FEATRegressor":
        """Store the context table X and its numeric targets y (rows with a missing target are dropped)."""
        X, y = self._context_frame(X, y), numeric_target(as_target(y))
        keep = target_rows(y, len(X))
        self.scaler_ = TargetScaler().fit(y.iloc[keep])
        z = self.scaler_.transform(y.iloc[keep])
        self.power_scale_ = reads_power(z)
        self._fit_supervised(X.iloc[keep], z, classification=False)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets in the original units, averaged over the members, within the context targets' range."""
        z = self._predicted(X)     # checks it is fitted first
        return self.scaler_.inverse_transform(z)

    def _member_output(self, m: Member, route: np.ndarray | None, xq: np.ndarray, detail: UnclippedRows,
                       held: np.ndarray | None, steps: StepCounter | None) -> tuple[np.ndarray, np.ndarray]:
        """(M,) predictions of the standardised target and the stacked model's beside them."""
        mats = self._run_matrices(m, None, xq, detail, held)
        if steps is None:                              # the stacked model alone: 0 weighs nothing at weight 1
            return np.zeros(len(mats.queries)), mats.stacked
        run = runner.MemberRun(self._loaded_model(), m, 0, reads_quantiles(m), self._engine_settings(),
                               f"member {m.index + 1}/{len(self.members_)}")
        return runner.member_output(run, route, mats.context, mats.labels, mats.queries, steps), mats.stacked

    def _power(self, m: Member) -> tuple[float, float] | None:
        """The members that read the quantile transform read the target on its power scale, unless one value holds
        half of the targets (`power_target.py`)."""
        return (self.scaler_.mean_, self.scaler_.std_) if self.power_scale_ and reads_quantiles(m) else None

    def _combine(self, outputs: list[tuple[np.ndarray, np.ndarray]], weight: float) -> np.ndarray:
        """The members' predictions blended with their stacked models' (on the scale the member reads), mapped to
        the standardised target and averaged."""
        return np.mean([inputs[None].output(blend_prediction(pred, stacked, weight))
                        for inputs, (pred, stacked) in zip(self.run_inputs_, outputs)], axis=0)

    def _unexplained(self) -> float:
        """The stacked models' mean out-of-fold squared error: the share of the standardised target's variance (on
        the scale each member reads) they leave unexplained."""
        return float(np.mean([r.stacked.loss for inputs in self.run_inputs_ for r in inputs.values()
                              if r.stacked is not None]))

    @staticmethod
    def _row_loss(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Squared error of each row's standardised target."""
        return (pred - y) ** 2
