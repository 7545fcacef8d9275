"""In-context target statistics for nominal columns: each level code is replaced by scikit-learn's `TargetEncoder`
statistic of the run's label (empirical-Bayes shrinkage toward the context mean), cross-fitted for the context rows,
so that no row sees its own label, and fitted on the whole context for the query rows, so that a query's value
depends on that query alone. Missing is a level of its own; a level the context never saw gets the context's mean
(docs/decisions/0013-nominal-target-statistics.md)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold
from sklearn.preprocessing import TargetEncoder

from ..preprocess import CLIP

CV = 5          # cross-fitting folds (scikit-learn's default)


@dataclass
class TargetStats:
    """The statistics fitted on one run's context: cross-fitted values for the context rows, and the
    encoder fitted on all of them for the queries; both standardised with the context values' statistics."""

    columns: np.ndarray          # the feature columns the statistics replace
    context: np.ndarray          # (N, len(columns)) standardised cross-fitted statistics (float32, as the features)
    encoder: TargetEncoder
    mean: np.ndarray
    std: np.ndarray

    def context_matrix(self, x_ctx: np.ndarray) -> np.ndarray:
        """A copy of the standardised (N, D) context whose `columns` hold the statistics."""
        x_ctx = x_ctx.copy()
        x_ctx[:, self.columns] = self.context
        return x_ctx

    def query_matrix(self, x_query: np.ndarray, codes_query: np.ndarray) -> np.ndarray:
        """A copy of the standardised (M, D) queries whose `columns` hold the statistics of their level codes."""
        x_query = x_query.copy()
        x_query[:, self.columns] = np.clip((self.encoder.transform(codes_query) - self.mean) / self.std, -CLIP, CLIP)
        return x_query


def fit_target_stats(codes_ctx: np.ndarray, y_ctx: np.ndarray, columns: np.ndarray, seed: int) -> TargetStats | None:
    """Statistics of the context's level codes `codes_ctx` (one code column per entry of `columns`) against
    `y_ctx`, a numeric target or the 0/1 label of one binary run. None with no nominal column, or fewer
    context rows than two per fold."""
    if len(columns) == 0 or len(y_ctx) < 2 * CV:
        return None
    enc = TargetEncoder(target_type="continuous", cv=KFold(CV, shuffle=True, random_state=seed))
    s_ctx = enc.fit_transform(codes_ctx, np.asarray(y_ctx, dtype=np.float64))
    mean, std = s_ctx.mean(axis=0), s_ctx.std(axis=0)
    std[std == 0] = 1.0
    return TargetStats(np.asarray(columns), np.clip((s_ctx - mean) / std, -CLIP, CLIP).astype(np.float32), enc, mean, std)


def with_target_stats(
    x_ctx: np.ndarray, y_ctx: np.ndarray, x_query: np.ndarray,
    codes_ctx: np.ndarray, codes_query: np.ndarray, columns: np.ndarray, seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the standardised (N, D) context and (M, D) query matrices whose `columns` hold the
    standardised target statistics (`fit_target_stats`); the inputs unchanged where there are none."""
    stats = fit_target_stats(codes_ctx, y_ctx, columns, seed)
    if stats is None:
        return x_ctx, x_query
    return stats.context_matrix(x_ctx), stats.query_matrix(x_query, codes_query)
