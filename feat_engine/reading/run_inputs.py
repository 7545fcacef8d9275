"""What a member's runs read beyond its features, fitted once at `fit` for one labelling of the context (the target, or
one class against the rest): the target statistics of the nominal columns (`target_stats.py`), the stacked model
(`stacked_model.py`) and, for half of a regressor's members, the target's power scale (`power_target.py`).
`predict` only applies them to the query rows, so repeated calls and the partitions of a Dask frame pay for the fits
once (docs/decisions/0025-fitted-once.md)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..preprocess import CLIP, UnclippedRows
from .power_target import PowerTarget, fit_power_target
from .stacked_model import StackedModel, Tick, fit_stacked_models
from .target_stats import TargetStats, fit_target_stats


@dataclass
class RunInputs:
    """One member's fitted statistics and stacked model for one labelling of its context rows."""

    features: np.ndarray            # the member's feature columns, in token order
    stats: TargetStats | None
    stacked: StackedModel | None
    target: PowerTarget | None = None      # the labels' power scale (None: read as they are)
    beside: StackedModel | None = None     # the other kind's stacked model, read as the last feature (None: none)

    def labels(self, y: np.ndarray) -> np.ndarray:
        """The labels the runs read for the member's context labels y."""
        return y if self.target is None else self.target.forward(y)

    def output(self, pred: np.ndarray) -> np.ndarray:
        """A run's predictions (of `labels`) in the labels' own units: on the power scale, their means."""
        return pred if self.target is None else self.target.mean_of(pred)

    def context(self, x_ctx: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The (N, width) matrix of the member's standardised (N, D) context rows: the stacked model's column (when
        there is one), then the member's features with nominal columns as statistics, then the other stacked model's
        column (when there is one); the stacked models' columns as they predict, which `clipped` makes the runs'.
        With `rows`, x_ctx holds only the context rows at those positions (of the rows these inputs were fitted
        on, in their order), and the cross-fitted values are theirs."""
        pick = (lambda v: v) if rows is None else (lambda v: v[rows])     # noqa: E731
        x = x_ctx if self.stats is None else replace(self.stats, context=pick(self.stats.context)).context_matrix(x_ctx)
        return self._with_stacked(x[:, self.features], *[None if v is None else pick(v.context)
                                                          for v in (self.stacked, self.beside)])

    def queries(self, x_query: np.ndarray, detail: UnclippedRows) -> np.ndarray:
        """The same for (M, D) standardised query rows and their `detail` (nominal level codes, values before
        the clip); each row's values depend on that row alone."""
        x = x_query if self.stats is None else self.stats.query_matrix(x_query, detail.codes)
        return self._with_stacked(x[:, self.features], *[None if v is None else v.queries(x, detail)
                                                          for v in (self.stacked, self.beside)])

    def reordered(self, rows: np.ndarray, features: np.ndarray) -> "RunInputs":
        """These inputs, fitted on the context rows in table order, for a member that reads those rows in the
        order `rows` (a permutation) and the `features`: the cross-fitted columns follow the rows, the fitted
        encoder, model and power scale are shared."""
        stats = None if self.stats is None else replace(self.stats, context=self.stats.context[rows])
        stacked, beside = (None if v is None else replace(v, context=v.context[rows])
                           for v in (self.stacked, self.beside))
        return RunInputs(features, stats, stacked, self.target, beside)

    def clipped(self, matrix: np.ndarray) -> np.ndarray:
        """`context`'s or `queries`' matrix as the runs read it, in place: the stacked models' columns clipped to
        +-CLIP, as the features are. The blend reads the stacked model's prediction itself: clipped, the largest
        predictions of a heavy-tailed target were cut to 5 deviations (docs/decisions/0024-blend.md)."""
        for j, model in ((0, self.stacked), (matrix.shape[1] - 1, self.beside)):
            if model is not None:
                np.clip(matrix[:, j], -CLIP, CLIP, out=matrix[:, j])
        return matrix

    @staticmethod
    def _with_stacked(x: np.ndarray, stacked: np.ndarray | None, beside: np.ndarray | None) -> np.ndarray:
        return np.column_stack([v for v in (stacked, x, beside) if v is not None])


def fit_run_inputs(x_ctx: np.ndarray, detail: UnclippedRows, labels: np.ndarray, features: np.ndarray,
                   nominal: np.ndarray, classification: bool, view: str | None, seed: int,
                   power: tuple[float, float] | None = None, threads: int | None = None,
                   read: np.ndarray | None = None, beside: bool = False, tick: Tick | None = None) -> RunInputs:
    """Fit on a member's standardised (N, D) context rows, their `detail` (the level codes of the nominal
    columns, the values before the clip), the `nominal` columns that get statistics (none where the labels
    are not one target) and one labelling: the statistics, then the stacked model on the context with them
    (`stacked_model.fit_stacked_models`, on `threads` threads; `view` None for none; out-of-fold values for the rows
    `read`, None: every row; with `beside`, the other kind's model too, where it loses little more; the tree model's
    fits told to `tick`). With `power`, the (origin, scale) of standardised numeric labels, the labels are first put
    on their power scale, and the stacked model's out-of-fold residuals there (of the rows read) are what its means
    average over (`power_target.py`)."""
    target = None if power is None else fit_power_target(labels, *power)
    if target is not None:
        labels = target.forward(labels)
    stats = fit_target_stats(detail.codes, labels, nominal, seed)
    x = x_ctx if stats is None else stats.context_matrix(x_ctx)
    fitted, other = fit_stacked_models(x, labels, classification, seed, view, detail, nominal, threads, read, beside,
                                       tick)
    if target is not None and fitted is not None:
        target = target.with_residuals(labels - fitted.predicted(fitted.context))
    return RunInputs(features, stats, fitted, target, other)
