"""FEATImputer: fills the NaN cells of a table, every other cell returned unchanged
(docs/decisions/0031-imputation.md)."""
from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import TransformerMixin
from sklearn.preprocessing import QuantileTransformer
from sklearn.utils.validation import check_is_fitted

from ..errors import FEATDataWarning, FEATInputError, named
from ..inference import map_runs
from ..model import FEAT
from ..progress import Progress, StepCounter
from ..reading.members import Member, plan_members
from ..reading.quantile_transform import N_QUANTILES
from ..reading.read_budget import READ_CELLS, ReadPlan
from . import runner
from .base import FEATBase, documented
from .classifier import FEATClassifier
from .in_context import LOCAL_CONTEXT
from .regressor import FEATRegressor

COLUMN_MEMBERS = 1      # default members per column of the chained imputer (docs/decisions/0031-imputation.md)
HELD_NUMBERS = 256      # known cells of a number column held out of its context to measure FEAT's errors
HELD_SHARE = 10         # ... at most one known cell in HELD_SHARE
ERROR_CONTEXT = 4096    # context rows at most of the fit that measures those errors for the most likely numbers
PARALLEL_ROWS = 2 * LOCAL_CONTEXT   # tables of at most this many rows fill their columns concurrently (`_fill_chained`)
SURE_RANGE = (0.16, 0.84)   # a filled number's typical error: half the range that holds this share of its errors


@documented(
    """Fills the NaN cells of a table with FEAT's in-context predictions; every other cell is returned unchanged,
    in the table's dtypes and categories.

    `transform(X)` reads the fitted rows and the rows of X as context (X alone when X is the fitted table, as in
    `fit_transform`). FEAT reads missing cells natively, so one pass fills them: no initial fill is iterated.""",
    {"n_estimators": ("int or None, default None", 'Members per imputed column ("chained") or per table '
                      '("reconstruction"); None gives COLUMN_MEMBERS per column and 4 per table (a chained pass '
                      "already costs a run per incomplete column)."),
     "max_context": ("int or None, default None", '"chained": each column\'s context is a random subset of this many '
                     'rows; "reconstruction": the rows are imputed in random blocks of this many rows, each block its '
                     "own context. None reads every row."),
     "method": ('{"chained", "reconstruction"}, default "chained"', '"chained" predicts each incomplete numeric or '
                "categorical column from the other columns with `FEATRegressor` or `FEATClassifier`; "
                '"reconstruction" fills every cell from the imputation head in one run per member (it also fills '
                'date columns under "chained").'),
     "sample_posterior": ("bool, default False", '"chained": fill each cell with a draw from FEAT\'s predicted '
                          "distribution instead of its most likely value, so that a column keeps its spread (as "
                          "scikit-learn's `IterativeImputer(sample_posterior=True)`; several `random_state` give "
                          "multiple imputations). A category is drawn from its predicted probabilities; a number is "
                          "its prediction plus the error FEAT made on one of up to 256 known cells of the column, "
                          "held out of its context for that, added on the column's own scale (`NumberScale`), so "
                          "that the draw stays within the observed range. `transform_with_confidence` says how sure "
                          "FEAT is of each filled cell."),
     "read_budget": ("int or None, default 8,000,000", '"chained": context cells the engine reads at most over the '
                     "whole transform, shared equally by the incomplete columns: each column's estimator gets its "
                     "share as its own `read_budget` (see FEATRegressor), so a long table with many incomplete "
                     "columns costs about one estimator's reading rather than one per column; the classical "
                     "models beside the engine still read every known cell of a column. None reads every row.")},
)
class FEATImputer(TransformerMixin, FEATBase):
    def __init__(
        self, n_estimators: int | None = None, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None, method: str = "chained",
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        precision: str = "auto", sample_posterior: bool = False, read_budget: int | None = READ_CELLS,
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, checkpoint, progress, precision)
        self.method = method
        self.sample_posterior = sample_posterior
        self.read_budget = read_budget

    def fit(self, X: Any, y: Any = None) -> "FEATImputer":
        """Store the table whose rows serve as context."""
        if self.method not in ("chained", "reconstruction"):
            raise FEATInputError(f"method must be 'chained' or 'reconstruction', got {self.method!r}")
        frame = self._context_frame(X, what="X")
        self._loaded_model()               # a bad checkpoint is refused at fit, missing cells or not
        self._fit_features(frame)
        self.frame_ = frame.copy()
        return self

    def transform(self, X: Any) -> Any:
        """X with every NaN cell filled, in X's dtypes and categories (DataFrame in, DataFrame out)."""
        return self.transform_with_confidence(X)[0]

    def transform_with_confidence(self, X: Any) -> tuple[Any, pd.DataFrame]:
        """`transform(X)`, and beside it how sure FEAT is of each cell it filled under "chained": the predicted
        probability of the category filled in, or for a number its typical error in the column's units: half the
        range that FEAT's errors on up to HELD_NUMBERS known cells held out of a fit, put on the column's scale at
        that cell's prediction, span between their 16th and 84th percentiles (one standard deviation, for normal
        errors); NaN elsewhere. A draw (`sample_posterior`) is made by that fit; a most likely number by a fit on
        every known cell, its errors measured by a second fit of at most ERROR_CONTEXT context rows. A filled
        number stays within its column's observed range, at the decimals its values carry (whole where they are
        whole), one of its values where it takes few (`preprocess.support`), a filled date within its range and on
        its calendar grid. A DataFrame of X's shape, on X's index and columns."""
        check_is_fitted(self, "context_")
        frame = self.preprocessor_.marks_as_missing(self._query_frame(X, "X"))     # "?" in a column of numbers: a hole
        xz = self.preprocessor_.transform(frame, "query")
        same = xz.shape == self.context_.shape and np.array_equal(xz, self.context_, equal_nan=True)
        if not same:                                                  # the table's own notes were given at fit
            self.preprocessor_.warn_unreadable(frame, xz, "X")
        chained = self._chained_columns(frame) if self.method == "chained" else []
        confidence = pd.DataFrame(np.nan, index=frame.index, columns=frame.columns)
        z = np.zeros(xz.shape)
        recon = any(frame[c.name].isna().any() for c in self.preprocessor_.plan_ if c not in chained)
        table = (xz if same else np.vstack([self.context_, xz])) if recon else None
        plan = self._recon_plan(table) if recon else ([], 0, 0)
        steps = StepCounter(self.progress, len(plan[0]) * plan[2] + len(chained))     # one stream over both stages
        if recon:
            z = self._reconstruct(table, plan, steps)[len(table) - len(xz):]
        if chained:
            rows = frame if same else _typed_like(pd.concat([self.frame_, frame], ignore_index=True), self.frame_)
            self._fill_chained(z, confidence, frame, chained, rows, steps)
        out = self.preprocessor_.inverse_transform(z, frame)
        left = [c for c in out.columns if out[c].isna().any() and frame[c].isna().any()]
        if left:
            why = ", ".join(dict.fromkeys(self.preprocessor_.dropped_[c] for c in left))      # each reason once
            warnings.warn(f"columns {named(left)} were dropped ({why}) and keep their missing cells", FEATDataWarning,
                          stacklevel=2)
        return (out if isinstance(X, pd.DataFrame) else out.to_numpy(dtype=np.asarray(X).dtype)), confidence

    def column_read_plan(self, n_rows: int, n_features: int, n_columns: int) -> ReadPlan:
        """What each incomplete column's estimator reads under "chained" (`FEATRegressor.read_plan`) of a table of
        n_rows rows whose column is known and n_features other features (after preprocessing), when n_columns
        columns are incomplete and share `read_budget`."""
        return FEATRegressor(n_estimators=self.n_estimators or COLUMN_MEMBERS, max_context=self.max_context,
                             max_features=self.max_features, checkpoint=self.checkpoint,
                             read_budget=self._budget_share(n_columns)).read_plan(n_rows, n_features)

    def _budget_share(self, n_columns: int) -> int | None:
        """Each of n_columns incomplete columns' share of `read_budget` (None: no budget)."""
        return None if self.read_budget is None else self.read_budget // max(n_columns, 1)

    def _chained_columns(self, frame: pd.DataFrame) -> list:
        """The incomplete numeric and categorical columns of frame (dates go to the imputation head)."""
        return [c for c in self.preprocessor_.plan_ if c.kind in ("numeric", "categorical") and frame[c.name].isna().any()]

    def _fill_chained(self, z: np.ndarray, sure: pd.DataFrame, frame: pd.DataFrame, columns: list,
                      table: pd.DataFrame, steps: StepCounter) -> None:
        """Write into z (standardised, frame's rows) each column's in-context prediction for its NaN cells, and into
        `sure` how sure FEAT is of each. table: the context rows (the fitted rows and frame's, or frame alone), frame's
        last; the fits and their queries read it. Each column is a run of `steps`."""
        pre = self.preprocessor_
        offset = dict(zip([c.name for c in pre.plan_], np.cumsum([0] + [len(c.features()) for c in pre.plan_])))
        usable = [c.name for c in pre.plan_]
        share = self._budget_share(len(columns))
        # callbacks made here, in column order: a run's place in the stream must not depend on which worker starts first
        say = {c.name: steps.callback(f"column {c.name!r}") for c in columns}

        def predicted(c) -> tuple[np.ndarray, Any, np.ndarray]:
            # a numeric column is predicted as its numbers (read from text too, where it is text)
            target = pd.Series(c.encode(table[c.name])[:, 0], index=table.index) if c.kind == "numeric" else table[c.name]
            known = target.notna().to_numpy()
            rows = np.flatnonzero(frame[c.name].isna().to_numpy())
            y = target[known]
            X = table.loc[known, [n for n in usable if n != c.name]]
            query = table.iloc[len(table) - len(frame) + rows][[n for n in usable if n != c.name]]
            kw = dict(n_estimators=self.n_estimators or COLUMN_MEMBERS, random_state=self.random_state, device=self.device,
                      max_context=self.max_context, max_features=self.max_features, checkpoint=self.checkpoint,
                      progress=say[c.name], precision=self.precision, read_budget=share)
            rng = np.random.default_rng(None if self.random_state is None else [self.random_state, usable.index(c.name)])
            if not X.shape[1] or y.nunique() < 2:
                return rows, np.repeat(y.mode().iloc[0], len(rows)), np.full(len(rows), 1.0 if c.kind == "categorical" else 0.0)
            if c.kind == "categorical":
                proba, levels, likely = _level_probabilities(FEATClassifier(multiclass="head", **kw), X, y, query)
                pick = _draws(proba, rng) if self.sample_posterior else likely
                return rows, levels[pick], proba[np.arange(len(rows)), pick]
            held = rng.choice(len(y), min(HELD_NUMBERS, len(y) // HELD_SHARE), replace=False)
            rest = np.setdiff1d(np.arange(len(y)), held)
            if not len(held):                # too few known cells to hold any out: the prediction, of no known range
                return rows, FEATRegressor(**kw).fit(X, y).predict(query), np.full(len(rows), np.nan)
            if self.sample_posterior:        # one fit without the held cells, which it predicts beside the queries
                both = FEATRegressor(**kw).fit(X.iloc[rest], y.iloc[rest]).predict(pd.concat([query, X.iloc[held]]))
                pred, guess = both[:len(rows)], both[len(rows):]
            else:                            # the fill from every known cell; its errors from a second, shorter fit
                pred = FEATRegressor(**kw).fit(X, y).predict(query)
                short = {**kw, "max_context": min(kw["max_context"] or ERROR_CONTEXT, ERROR_CONTEXT), "progress": None}
                guess = FEATRegressor(**short).fit(X.iloc[rest], y.iloc[rest]).predict(X.iloc[held])
            scale, known = NumberScale(y.to_numpy(np.float64)), y.to_numpy(np.float64)
            at, errors = scale.to_normal(pred), scale.to_normal(known[held]) - scale.to_normal(guess)
            low, high = (scale.from_normal(at + np.quantile(errors, q)) for q in SURE_RANGE)
            filled = scale.from_normal(at + rng.choice(errors, len(rows))) if self.sample_posterior else pred
            return rows, filled, (high - low) / 2

        with warnings.catch_warnings():         # on this thread, so the filter holds for the workers' whole runs
            warnings.simplefilter("ignore", FEATDataWarning)          # the table's own notes were given at fit
            # the columns on all cores at once on a short table; on a long one a column after another, each
            # reading local parts, which the regressor already spreads over the cores, so that the table's copies
            # a column's fit holds are made one at a time (the peak memory of an app's Impute at 1M rows)
            read = len(table) if self.max_context is None else min(len(table), self.max_context)
            preds = (map_runs(predicted, columns, self.device, steps.flush) if read <= PARALLEL_ROWS
                     else [predicted(c) for c in columns])
        for c, (rows, pred, confidence) in zip(columns, preds):
            j = offset[c.name]
            raw = c.categories.get_indexer(pd.Index(pred)) if c.kind == "categorical" else np.asarray(pred, np.float64)
            z[rows, j] = (raw - pre.mean_[j]) / pre.std_[j]
            sure.iloc[rows, sure.columns.get_loc(c.name)] = confidence

    def _recon_plan(self, table: np.ndarray) -> tuple[list[Member], int, int]:
        """The members `_reconstruct` reads `table` with, its rows a block and its blocks a member."""
        # no max_context for the members: the rows are blocked
        members = plan_members(len(table), table.shape[1], self.n_estimators or 4, self._model_width(), None,
                               self.random_state)
        block = len(table) if self.max_context is None else self.max_context
        return members, block, math.ceil(len(table) / block)

    def _reconstruct(self, table: np.ndarray, plan: tuple[list[Member], int, int], steps: StepCounter) -> np.ndarray:
        """(N, D) standardised reconstruction, averaged over the members of `plan` (`_recon_plan`; per feature, over
        the members that saw it); each member's block is a run of `steps`."""
        model = self._loaded_model()
        members, block, n_blocks = plan
        total, count = np.zeros(table.shape), np.zeros(table.shape[1])
        for i, m in enumerate(members):
            order = np.random.default_rng(m.seed).permutation(len(table))
            for b in range(n_blocks):
                rows = order[b * block:(b + 1) * block]
                recon = runner.reconstruction(model, table[rows][:, m.features], m, self._engine_settings(),
                                              steps.callback(f"member {i + 1}/{len(members)}, block {b + 1}/{n_blocks}"))
                total[np.ix_(rows, m.features)] += recon
            count[m.features] += 1
        return total / count


class NumberScale:
    """A number column's own scale for FEAT's errors: its observed values through their quantiles to a standard
    normal (scikit-learn's `QuantileTransformer`), where an error on a skewed, positive column such as a budget is
    as wide at 1,000 as at 10 million in proportion, and back. From that scale a value never leaves the observed
    range, so a draw keeps the column's support (docs/decisions/0031-imputation.md)."""

    def __init__(self, observed: np.ndarray):
        self.qt = QuantileTransformer(n_quantiles=min(N_QUANTILES, len(observed)), output_distribution="normal",
                                      random_state=0).fit(observed[:, None])

    def to_normal(self, values: np.ndarray) -> np.ndarray:
        return self.qt.transform(np.asarray(values, np.float64)[:, None])[:, 0]

    def from_normal(self, z: np.ndarray) -> np.ndarray:
        return self.qt.inverse_transform(np.asarray(z, np.float64)[:, None])[:, 0]


def _level_probabilities(clf: "FEATClassifier", X: pd.DataFrame, y: pd.Series,
                         query: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A categorical column's (M, L) level probabilities for the query rows, its L levels, and each row's most likely
    level (an index into them), in one run per member from the classification head. When the column has more levels
    than the head reads, the most frequent head-size - 1 keep their own class and the rest share one, whose
    probability is split among them by their counts; the most likely level is the one of highest probability among
    them all, not the commonest of the rarer ones where their shared class is likeliest (docs/decisions/
    0031-imputation.md)."""
    limit = clf._loaded_model().cfg.max_classes
    counts = y.value_counts()
    if len(counts) <= limit:
        proba = clf.fit(X, y).predict_proba(query)
        return proba, np.asarray(clf.classes_, dtype=object), np.argmax(proba, axis=1)
    top = counts.index[:limit - 1]
    codes = pd.Series(top.get_indexer(y), index=y.index)        # -1: one of the rarer levels
    head = clf.fit(X, codes).predict_proba(query)               # columns: -1, then the top levels' codes
    share = (counts.iloc[limit - 1:] / counts.iloc[limit - 1:].sum()).to_numpy()
    proba = np.column_stack([head[:, 1:], head[:, :1] * share])
    return proba, np.asarray(counts.index, dtype=object), np.argmax(proba, axis=1)


def _draws(proba: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One level index per row, drawn from that row's probabilities."""
    cum = np.cumsum(proba, axis=1)
    u = rng.random(len(proba)) * cum[:, -1]
    return np.minimum((cum < u[:, None]).sum(axis=1), proba.shape[1] - 1)


def _typed_like(table: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """table with each column that holds Python objects where `like`'s holds numbers, dates or categories (query
    rows given as an array, concatenated to the fitted table) read as `like` holds it: the chained fits then type
    their columns as at fit, whatever container the rows came in (missing: what the column cannot read); table
    itself where every column already is."""
    out = table
    for c in like.columns:
        kind = like[c].dtype
        if out[c].dtype != object or kind == object:
            continue
        out = table.copy() if out is table else out
        if isinstance(kind, pd.CategoricalDtype):
            out[c] = pd.Categorical(out[c], categories=kind.categories, ordered=kind.ordered)
        elif pd.api.types.is_datetime64_any_dtype(kind):
            out[c] = pd.to_datetime(out[c], errors="coerce")
        elif pd.api.types.is_numeric_dtype(kind) and not pd.api.types.is_bool_dtype(kind):
            out[c] = pd.to_numeric(out[c], errors="coerce")
    return out
