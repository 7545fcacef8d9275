"""The stacked model: a cross-fitted classical model whose prediction the engine reads as one more feature (the
estimators' `view=` parameter). Two are fitted, an additive model (`fit_additive_model`) and boosted trees
(`fit_tree_model`), and a run reads the one whose out-of-fold predictions of the context's labels lose less once
recalibrated (`view="auto"`, `_calibrated`); where the estimator asks (a short context whose run has a feature slot
free), it reads the best of the other kind too, as one more feature. Context rows get out-of-fold predictions, so that
no row sees its own label, and query rows the prediction of the model fitted on the whole context; the column is
standardised on the context (docs/decisions/0022-stacked-model.md and docs/decisions/0023-tree-model.md)."""
from __future__ import annotations

import itertools
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import numpy as np
from scipy.linalg import LinAlgWarning
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split
from sklearn.preprocessing import SplineTransformer

from ..errors import FEATInputError
from ..preprocess import UnclippedRows
from ..progress import SCORING_PACE
from .read_budget import READ_CELLS

Tick = Callable[[float, int], None]     # (fits done, fits planned) of a stacked model: the trees' folds, the whole
VIEWS = ("auto", "additive", "trees")   # the estimators' `view` values, besides None (no view)
FOLDS = 5           # cross-fitting folds
KNOTS = 5           # spline knots per feature, at the context's quantiles
FIT_ROWS = 50_000   # rows one fit of the additive model reads at most (a random subset beyond): a model of about 8
                    # coefficients a feature is settled long before; the trees read every row (a large table's signal)
MAX_LEVELS = 255    # nominal columns with at most this many levels are the tree model's native categories
STOP_ROWS = 10_000  # the tree model stops boosting early (on a tenth of its rows) beyond this many context rows ...
STOP_AFTER = 50     # ... after this many rounds without a better loss on that tenth; otherwise it boosts LightGBM's 100
MIN_ROUNDS, MAX_ROUNDS = 500, 2_000    # ... up to as many rounds as BOOST_WORK allows a fit, between these
BOOST_WORK = MIN_ROUNDS * READ_CELLS    # cells x rounds a fit may boost: MIN_ROUNDS rounds of the engine's reading
                                        # budget, so a fit of fewer cells may boost longer and none costs more
BIN_ROWS = 20       # the tree model's histogram: a bin per this many rows of a fit (LightGBM's smallest leaf), ...
MIN_BINS, MAX_BINS = 63, 255    # ... between these (255, LightGBM's default, from 5,100 rows on)
MAX_BASIS = 256     # columns of the additive model's design at most with the splines (32 features); past it, none
NEWTON_COLUMNS = 2_048   # columns a binary additive model solves by Newton steps at most; lbfgs past them
SIDE_BY_SIDE_ROWS = STOP_ROWS    # the tree model's folds are fitted side by side, one thread each, and its whole fit
                                 # on one thread, up to this many context rows: there LightGBM's own threads cost more
                                 # than they give, and spin for cores another process holds
QUERY_ROWS = 1_024  # query rows the additive model scores at a time, the last block padded (`StackedModel.queries`)
ROUND_REPORTS = 50  # a tree model's fit whose progress is asked tells its rounds about this many times, ...
BEGUN = 1e-6        # ... and this share of itself as it begins, so that the pace the fits are told at counts their
                    # set-up (LightGBM's bins: 0.65 s of a 6.7-s fit of 650,000 rows): from its first round, the
                    # 1M walk's later fits took 1.1-1.6 times the first's
BESIDE_LOSS = 1.5   # the other kind's model is read beside the chosen one where its out-of-fold loss is at most this
                    # many times the chosen one's: a column far worse adds noise more than what the chosen one misses


def basis(splines: SplineTransformer | None, x: np.ndarray) -> np.ndarray:
    """Each column (missing cells at the mean, 0) and its B-splines (`splines`, fitted on the context; None:
    the columns alone)."""
    x = np.nan_to_num(x)
    return x if splines is None else np.hstack([x, splines.transform(x)])


def _score(model: Any, design: np.ndarray) -> np.ndarray:
    """A regressor's prediction, or a binary classifier's logit; the seconds per row go to `SCORING_PACE`."""
    began = time.monotonic()
    s = model.decision_function(design) if hasattr(model, "decision_function") else model.predict(design)
    SCORING_PACE.add(time.monotonic() - began, len(design))
    return s


def _loss(scores: np.ndarray, y: np.ndarray, classification: bool) -> float:
    """Mean log-loss of logits for 0/1 labels, or mean squared error of predictions."""
    if classification:
        return float(np.mean(np.logaddexp(0.0, scores) - y * scores))
    return float(np.mean((scores - y) ** 2))


@dataclass
class StackedModel:
    """A stacked model fitted on one run's context: its column for the context rows, and the model for queries.
    A candidate holds its out-of-fold predictions only; `fitted` makes the whole-context fit of the one chosen."""

    kind: str                                 # "additive" or "trees"
    context: np.ndarray                       # (N,) out-of-fold predictions, standardised, not clipped (float32)
    design: Callable[[np.ndarray], np.ndarray] | None   # the model's inputs from standardised rows (None: as they are)
    model: Any                                # fitted on every context row (None until `fitted`)
    mean: float                               # statistics of the out-of-fold predictions
    std: float
    loss: float                               # their mean loss on the context's labels, recalibrated (`_calibrated`)
    calibration: tuple[float, float]          # (slope, intercept): the prediction from the standardised column
    rows: TreeRows | None = None              # how the tree model reads the rows' detail (None: the matrix alone)
    fit_whole: Callable[[], Any] | None = field(default=None, repr=False)   # makes `model`; dropped once it has

    def fitted(self) -> StackedModel:
        """This model with its whole-context fit made: candidates are compared on their out-of-fold losses first,
        so a candidate that is not chosen is never fitted on every row."""
        if self.model is None:
            self.model, self.fit_whole = self.fit_whole(), None
        return self

    def predicted(self, z: np.ndarray) -> np.ndarray:
        """The model's calibrated prediction (a logit, or a value of the target) from its standardised column z."""
        slope, intercept = self.calibration
        return slope * z + intercept

    def queries(self, x_query: np.ndarray, detail: UnclippedRows | None = None) -> np.ndarray:
        """(M,) the stacked model's prediction for the (M, D) standardised query rows (with their `detail` where the
        model reads it), standardised by its out-of-fold predictions' mean and deviation and not clipped (the runs
        clip their column: `RunInputs.clipped`). Each row's value depends on that row alone, to the bit: a model
        whose rows are scored each on its own (`rows_alone`: the trees) scores them all in one call; the others in
        blocks of QUERY_ROWS, the last padded with copies of its last row, so that every row meets the same matrix
        kernels (scored as they came, a ridge's float32 score moved by 1.2e-7 with the number of rows beside it:
        docs/decisions/0001-query-rows-only-read.md)."""
        if not len(x_query):                # no rows: nothing to score (a model's own predict refuses none)
            return np.empty(0, np.float32)
        if self.rows is not None:
            x_query = self.rows.matrix(x_query, detail)
        design = x_query if self.design is None else self.design(x_query)
        if getattr(self.model, "rows_alone", False):
            s = _score(self.model, design)
        else:
            m = len(design)
            pad = np.concatenate([design, np.repeat(design[-1:], -m % QUERY_ROWS, axis=0)])
            s = np.concatenate([_score(self.model, pad[i:i + QUERY_ROWS]) for i in range(0, len(pad), QUERY_ROWS)])[:m]
        return ((s - self.mean) / self.std).astype(np.float32)


@dataclass
class TreeRows:
    """The matrix the tree model reads: the rows' values before the clip, but for the `nominal` columns,
    which keep the run's values (target statistics), and of those the `categories` columns, of at most
    MAX_LEVELS levels, which hold the level codes of `codes` columns (`UnclippedRows.codes`) as native categories."""

    nominal: np.ndarray
    categories: np.ndarray
    codes: np.ndarray

    @classmethod
    def of(cls, codes_ctx: np.ndarray, nominal: np.ndarray) -> TreeRows:
        """The reading of a context whose `nominal[j]` column has the level codes codes_ctx[:, j]."""
        nominal = np.asarray(nominal, dtype=np.int64)
        levels = np.array([np.nanmax(c, initial=-1) + 1 for c in codes_ctx.T]) if len(nominal) else np.zeros(0)
        keep = np.flatnonzero(levels <= MAX_LEVELS)
        return cls(nominal, nominal[keep], keep)

    def matrix(self, x: np.ndarray, detail: UnclippedRows) -> np.ndarray:
        """The (N, D) matrix of rows whose run reads x and whose detail is `detail`: unclipped values, the
        nominal columns from x, the `categories` as level codes (missing, and levels the context never saw, NaN)."""
        out = detail.values.copy()
        out[:, self.nominal] = x[:, self.nominal]
        c = detail.codes[:, self.codes]
        out[:, self.categories] = np.where(c >= 0, c, np.nan)
        return out


def _cross_fitted(kind: str, design: Callable[[np.ndarray], np.ndarray],
                  transform: Callable[[np.ndarray], np.ndarray] | None, y: np.ndarray, classification: bool,
                  make_model: Callable[[int | None], Any], seed: int, capped: bool = True, threads: int | None = None,
                  read: np.ndarray | None = None, tick: Tick | None = None) -> StackedModel | None:
    """A candidate: out-of-fold predictions of `make_model(threads)` (a model fitting on that many threads) on the
    design matrix of the context rows, and the fit on all of them for `StackedModel.fitted` to make, each fit on at
    most FIT_ROWS of its rows where `capped`; None where there is no single target (more than two classes) or too few
    rows (or rows of a class) to cross-fit. `design(rows)` is the design matrix of those context rows alone, made
    for the rows each fit and fold reads, so a long context's spline basis is never held whole (1.28 GB at
    1,000,000 x 20). With `threads` > 1 on at most SIDE_BY_SIDE_ROWS rows the folds are fitted `threads` at a
    time, each on one thread: the same models, sooner (`side_by_side`).

    `read` names the rows whose out-of-fold values a run reads (None: every row). Where they are at most FOLDS - 1 in
    FOLDS of the rows, folds of the rows read alone give theirs (`_read_folds`: one fit where they are at most one
    in FOLDS), each fit on every other row, so that none reads fewer rows than the FOLDS folds would; the other rows'
    values are NaN, and the column's statistics and loss are those of the rows read. `tick(k, n)` is told the fits
    done, k of the n - 1 folds' and the whole one, as each fold's fit ends (on the workers' threads where they are
    fitted side by side) and, where the fits are made in turn and the model says its rounds (`BoostedTrees.
    on_round`), in fractions of a fit as it goes, from its start (BEGUN)."""
    if classification:
        counts = np.bincount(np.asarray(y, dtype=np.int64))
        counts = counts[counts > 0]
        if len(counts) != 2 or counts.min() < 2:
            return None
    elif len(y) < 2 * FOLDS:
        return None
    rng = np.random.default_rng(seed)

    def rows_read(rows: np.ndarray) -> np.ndarray:
        return rng.choice(rows, FIT_ROWS, replace=False) if capped and len(rows) > FIT_ROWS else rows

    def fitted(rows: np.ndarray, threads: int | None, at: int | None = None):
        model = make_model(threads)
        if tick is not None and at is not None and hasattr(model, "on_round"):    # its rounds told as they go
            model.on_round = lambda done, rounds: tick(at + done / rounds, len(splits) + 1)
            tick(at + BEGUN, len(splits) + 1)
        with warnings.catch_warnings():     # a Newton solver that meets a singular Hessian says so and goes on with
            warnings.simplefilter("ignore", LinAlgWarning)      # lbfgs: nothing the user could act on
            return model.fit(design(rows), y[rows])

    splits = _read_folds(y, read, classification, seed)
    if splits is None:
        read = None
        folds = (StratifiedKFold(min(FOLDS, int(counts.min())), shuffle=True, random_state=seed) if classification
                 else KFold(FOLDS, shuffle=True, random_state=seed))
        splits = list(folds.split(np.zeros(len(y)), y))
    splits = [(rows_read(train), held) for train, held in splits]
    short = len(y) <= SIDE_BY_SIDE_ROWS
    workers = threads if threads is not None and short and len(splits) > 1 else 1
    ended = itertools.count(1)

    def fold(k: int) -> np.ndarray:
        train, held = splits[k]
        score = _score(fitted(train, 1 if workers > 1 else threads, None if workers > 1 else k), design(held))
        if tick is not None:
            tick(next(ended), len(splits) + 1)
        return score

    scores = side_by_side(fold, list(range(len(splits))), workers)
    s = np.full(len(y), np.nan)
    for (_, held), v in zip(splits, scores):
        s[held] = v
    known = s if read is None else s[read]
    mean, std = float(known.mean()), float(known.std())
    std = std if std > 0 else 1.0
    whole = np.arange(len(y))
    y_known = np.asarray(y if read is None else y[read], dtype=float)
    loss, calibration = _calibrated((known - mean) / std, y_known, classification)
    return StackedModel(kind, ((s - mean) / std).astype(np.float32), transform, None, mean, std, loss, calibration,
                        fit_whole=lambda: fitted(rows_read(whole), 1 if short else threads, len(splits)))


def _calibrated(z: np.ndarray, y: np.ndarray, classification: bool) -> tuple[float, tuple[float, float]]:
    """The mean loss of out-of-fold predictions z (standardised) on labels y once recalibrated, and the
    recalibration (slope, intercept): a logistic regression of the 0/1 labels on z (Platt's scaling), or a
    least-squares line (0.2 s at 1,000,000 rows). The engine reads the column through its own calibration, so two
    models are compared on what their column tells it, not on their own scale: boosted trees on a short context
    rank well and are overconfident (wooldridge/loanapp: log-loss 0.237 against the additive model's 0.225, 0.175
    against 0.221 recalibrated). The blend reads the recalibrated prediction."""
    line = (LogisticRegression(solver="newton-cholesky") if classification else LinearRegression()).fit(z[:, None], y)
    calibration = (float(np.ravel(line.coef_)[0]), float(np.ravel(line.intercept_)[0]))
    return _loss(calibration[0] * z + calibration[1], y, classification), calibration


def _read_folds(y: np.ndarray, read: np.ndarray | None, classification: bool,
                seed: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """[(rows fitted, rows predicted)]: folds of the `read` rows alone, as few as hold out at most one in FOLDS of
    the context each, every fit on all the other rows; None where that takes FOLDS folds (the rows read are more
    than FOLDS - 1 in FOLDS of the context, or none are named), or a fit would see one class."""
    k = FOLDS if read is None or not len(read) else int(np.ceil(FOLDS * len(read) / len(y)))
    if k >= FOLDS:
        return None
    read = np.sort(read)
    parts = [read] if k == 1 else [read[held] for _, held in KFold(k, shuffle=True, random_state=seed).split(read)]
    rows = np.arange(len(y))
    splits = [(np.setdiff1d(rows, part, assume_unique=True), part) for part in parts]
    if classification and any(len(np.unique(np.asarray(y)[train])) < 2 for train, _ in splits):
        return None
    return splits


def side_by_side(fn: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    """[fn(item) for item in items], `workers` at a time on threads (in turn for one)."""
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def _chosen(candidates: list[StackedModel | None]) -> StackedModel | None:
    """The candidate with the lowest out-of-fold loss, recalibrated (the first of equals), fitted on the whole
    context."""
    best = min((v for v in candidates if v is not None), key=lambda v: v.loss, default=None)
    return None if best is None else best.fitted()


def fit_additive_model(x_ctx: np.ndarray, y_ctx: np.ndarray, classification: bool, seed: int) -> StackedModel | None:
    """The additive model of the standardised (N, D) context with labels y_ctx: ridge for a numeric target, logistic
    regression (its logit) for the 0/1 label of a binary run, over each feature (missing cells at the mean, 0) and its
    cubic B-splines with knots at the context's quantiles, or over the features alone (straight lines) where that
    loses less out of fold; past MAX_BASIS spline columns (a wide table), over the features alone."""
    return _chosen(_additive_candidates(x_ctx, y_ctx, classification, seed))


def _additive_candidates(x_ctx: np.ndarray, y_ctx: np.ndarray, classification: bool, seed: int,
                         read: np.ndarray | None = None) -> list[StackedModel | None]:
    """`fit_additive_model`'s candidates, not yet fitted on the whole context: splines (where the basis is small
    enough) and straight lines; out of fold on the rows `read` (`_cross_fitted`)."""
    # Newton steps on a Cholesky factor: exact on these few hundred columns, where lbfgs stops short; lbfgs past
    # NEWTON_COLUMNS columns (a wide table's features alone), where a Cholesky factor is too large
    wide = x_ctx.shape[1] > NEWTON_COLUMNS
    make = (lambda threads: LogisticRegression(solver="lbfgs" if wide else "newton-cholesky", max_iter=1000)) \
        if classification else (lambda threads: Ridge())
    fit = partial(_cross_fitted, "additive", y=y_ctx, classification=classification, make_model=make, seed=seed,
                  read=read)
    fits = []
    # cubic B-splines with knots at the context's quantiles, linear beyond the outer ones; the knots read the
    # context's features, never its labels. Each feature brings KNOTS + 2 of them, so on a wide table the spline
    # columns outnumber the rows and the Newton steps cost the cube of the columns (134 s and 3.5 GB at 2,000
    # features), and at 40 features they were most of a short multiclass table's fit: past MAX_BASIS columns the
    # features enter alone (docs/decisions/0022-stacked-model.md)
    if x_ctx.shape[1] * (1 + KNOTS + 2) <= MAX_BASIS:
        splines = SplineTransformer(n_knots=KNOTS, degree=3, knots="quantile", extrapolation="linear")
        splines = splines.fit(np.nan_to_num(x_ctx))
        fits.append(fit(design=lambda rows: basis(splines, x_ctx[rows]), transform=partial(basis, splines)))
    # the straight lines alone, where the splines' columns fit noise more than they follow curves
    fits.append(fit(design=lambda rows: basis(None, x_ctx[rows]), transform=partial(basis, None)))
    return fits


def fit_tree_model(x_ctx: np.ndarray, y_ctx: np.ndarray, classification: bool, seed: int,
                  detail: UnclippedRows | None = None, nominal: np.ndarray | None = None,
                  threads: int | None = None) -> StackedModel | None:
    """The tree model of the standardised (N, D) context with labels y_ctx: LightGBM's gradient boosting
    (`BoostedTrees`; its logit for a binary run), missing cells as they are, reading the rows' `detail` where given
    (`TreeRows`: the values before the clip, and the `nominal` columns, whose level codes are detail.codes' columns,
    of at most MAX_LEVELS levels as native categories). Past STOP_ROWS context rows early stopping chooses the number
    of boosting rounds, up to `max_rounds`; otherwise it boosts the library's 100. It boosts on `threads` threads
    (None: LightGBM's default, every core)."""
    return _chosen([_tree_candidate(x_ctx, y_ctx, classification, seed, detail, nominal, threads)])


def max_rounds(rows: int, features: int) -> int:
    """Boosting rounds an early-stopped tree model (a fit of more than STOP_ROWS rows) may take: as many as BOOST_WORK
    allows its rows x features, between MIN_ROUNDS and MAX_ROUNDS. A long table with much signal keeps gaining past
    500 rounds (nyc_flights: 1,000 rounds and more), and the work bound keeps a fit of a larger table, or one of many
    classes, from taking longer than a 500-round fit of 8M cells took before (docs/decisions/0023-tree-model.md)."""
    return int(np.clip(BOOST_WORK // max(rows * features, 1), MIN_ROUNDS, MAX_ROUNDS))


def tree_bins(rows: int) -> int:
    """Histogram bins per feature of a tree model fitted on `rows` rows: one per BIN_ROWS rows, between MIN_BINS and
    MAX_BINS. On a short context LightGBM's 255 candidate thresholds a feature split noise as finely as signal and
    were most of the boosting's time (docs/decisions/0023-tree-model.md)."""
    return int(np.clip(rows // BIN_ROWS, MIN_BINS, MAX_BINS))


class BoostedTrees:
    """LightGBM's gradient boosting at its defaults but for the histogram's bins (`tree_bins`), with the `categories`
    columns as its native categorical features; past STOP_ROWS rows it holds a tenth of them out (stratified for a
    class label) and stops boosting once STOP_AFTER rounds have not lowered their loss, up to `max_rounds`. Its score
    is a regressor's prediction or a binary classifier's logit, each row's from that row alone. It boosts on
    `threads` threads (the estimators pass torch's count on the calling thread, which `inference.map_runs` shares
    out; None: LightGBM's default). `on_round(done, rounds)`, where set, is told the rounds boosted of those planned
    about ROUND_REPORTS times during the next fit (not kept after it)."""

    rows_alone = True   # each row's score is its own walk down the trees, bit-equal however many rows beside it: the
                        # queries are scored in one call (on LightGBM's threads: 1.14 s for 250,000 rows against
                        # 1.42 s in blocks of QUERY_ROWS), at the pace of the folds' scoring that `SCORING_PACE` times

    def __init__(self, classification: bool, seed: int, categories: list[int], threads: int | None = None):
        self.classification, self.seed, self.categories, self.threads = classification, seed, categories, threads
        self.on_round: Callable[[int, int], None] | None = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> BoostedTrees:
        import lightgbm as lgb

        told, self.on_round = self.on_round, None           # a fitted model holds no callback (it is pickled)
        callbacks = [] if told is None else [partial(_rounds_told, told)]
        stop = len(x) > STOP_ROWS
        make = lgb.LGBMClassifier if self.classification else lgb.LGBMRegressor
        self.model = make(n_estimators=max_rounds(*x.shape) if stop else 100, random_state=self.seed, verbose=-1,
                          n_jobs=self.threads, deterministic=True, force_row_wise=True, max_bin=tree_bins(len(x)))
        fit = partial(self.model.fit, categorical_feature=self.categories)
        if not stop:
            fit(x, y, callbacks=callbacks)
            return self
        train, held = train_test_split(np.arange(len(x)), test_size=0.1, random_state=self.seed,
                                       stratify=y if self.classification else None)
        fit(x[train], y[train], eval_X=(x[held],), eval_y=(y[held],),
            callbacks=[lgb.early_stopping(STOP_AFTER, first_metric_only=True, verbose=False), *callbacks])
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """The regressor's prediction or the classifier's logit for each row of x."""
        return self.model.predict(x, raw_score=True)


def _rounds_told(told: Callable[[int, int], None], env: Any) -> None:
    """A LightGBM callback that tells `told` (rounds done, rounds planned) about ROUND_REPORTS times a fit, all rounds
    done never: the fit's end is told by whoever made it."""
    rounds = env.end_iteration - env.begin_iteration
    done = env.iteration + 1 - env.begin_iteration
    if done % max(1, rounds // ROUND_REPORTS) == 0 and done < rounds:
        told(done, rounds)


def _tree_candidate(x_ctx: np.ndarray, y_ctx: np.ndarray, classification: bool, seed: int,
                    detail: UnclippedRows | None, nominal: np.ndarray | None, threads: int | None = None,
                    read: np.ndarray | None = None, tick: Tick | None = None) -> StackedModel | None:
    """`fit_tree_model`'s candidate, not yet fitted on the whole context; out of fold on the rows `read`, each fold's
    fit told to `tick`."""
    rows = None if detail is None else TreeRows.of(detail.codes, np.zeros(0) if nominal is None else nominal)
    categories: list[int] = []
    if rows is not None:
        x_ctx, categories = rows.matrix(x_ctx, detail), [int(j) for j in rows.categories]
    view = _cross_fitted("trees", x_ctx.__getitem__, None, y_ctx, classification,
                         partial(BoostedTrees, classification, seed, categories), seed, capped=False, threads=threads,
                         read=read, tick=tick)
    if view is not None:
        view.rows = rows
    return view


def check_stacked_model(view: str | None) -> None:
    """Raise FEATInputError (a ValueError) naming `view` unless it is one of VIEWS or None."""
    if view is not None and view not in VIEWS:
        raise FEATInputError(f"view must be one of {', '.join(map(repr, VIEWS))} or None, got {view!r}")


def fit_stacked_models(x_ctx: np.ndarray, y_ctx: np.ndarray, classification: bool, seed: int,
                       view: str | None = "auto", detail: UnclippedRows | None = None,
                       nominal: np.ndarray | None = None, threads: int | None = None, read: np.ndarray | None = None,
                       beside: bool = False, tick: Tick | None = None
                       ) -> tuple[StackedModel | None, StackedModel | None]:
    """The stacked models a run reads: first the one in its view slot, `view` "additive" or "trees", or with "auto"
    whichever of the two has the lower out-of-fold loss on the context's labels, recalibrated (None for `view` None, or
    where none can be cross-fitted); then, with `beside` and `view` "auto", the best candidate of the other kind where
    its out-of-fold loss is at most BESIDE_LOSS times the first one's, fitted on the whole context too, which the run
    reads as one more feature (else None). The engine reads a column through its own calibration, and the two kinds see
    different things (sums of small effects, thresholds), so the one that loses more still adds what the first misses
    (docs/decisions/0022-stacked-model.md). The trees read the rows' `detail` on `threads` threads (`fit_tree_model`).
    `read`: the rows whose out-of-fold values a run reads (None: every row; `_cross_fitted`). `tick` is told as the
    tree model's folds are fitted, the bulk of a long context's fit (the additive model's fits read FIT_ROWS rows at
    most)."""
    check_stacked_model(view)
    if view is None:
        return None, None
    fits = {"additive": lambda: _additive_candidates(x_ctx, y_ctx, classification, seed, read),
            "trees": lambda: [_tree_candidate(x_ctx, y_ctx, classification, seed, detail, nominal, threads, read,
                                              tick)]}
    kinds = ("additive", "trees") if view == "auto" else (view,)
    candidates = [v for k in kinds for v in fits[k]() if v is not None]
    chosen = _chosen(candidates)
    other = min((v for v in candidates if beside and v.kind != chosen.kind), key=lambda v: v.loss, default=None)
    if other is None or other.loss > BESIDE_LOSS * chosen.loss:
        return chosen, None
    return chosen, other.fitted()
