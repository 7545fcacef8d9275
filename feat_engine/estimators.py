"""scikit-learn estimators over the pretrained FEAT model: `fit` stores the context, no gradient steps.

    FEATClassifier().fit(X, y).predict_proba(X_test)
    FEATRegressor().fit(X, y).predict(X_test)
    FEATImputer().fit_transform(X)          # same shape, dtypes and categories; only NaN cells change

Every prediction averages `n_estimators` members (row permutation, feature shuffle, S-DFE
draw, one seed each), drawn at `fit`. The classifier and regressor hand the model what it
reads best (docs/design.md, "Reading real tables"): nominal columns as in-context target
statistics (`target_stats.py`), the most relevant features first on wide tables
(`relevance.py`), on long contexts the local part of the context nearest each query
(`local_context.py`), a cross-fitted classical model's prediction as one more feature (an
additive model's or boosted trees', whichever predicts the context better: `views.py`), and to
their odd members numeric columns spread out by their context quantiles (`quantile_view.py`) and,
in the regressor, the target on a power scale whose predictions map back as means (`power_target.py`).
Query rows never see each other, so a row's prediction does not depend on the other query rows.
Bad input raises `FEATInputError` (a ValueError) in scikit-learn's words where its checks apply
(docs/design.md, "What the estimators refuse"); sparse input is refused; `predict` before `fit`
raises scikit-learn's `NotFittedError` (also a ValueError).
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .blend import Blend, blend_prediction, blend_probability, choose_blend, held_out_rows
from .config import InferenceConfig
from .ensemble import Member, Progress, StepCounter, plan_members, resolve_model, trained_max_features
from .inference import map_runs, run, run_tables, tables_per_run, uses_bf16
from .local_context import local_contexts, rows_per_run
from .model import FEAT
from .preprocess import (
    ClassEncoder, FEATDataWarning, FEATInputError, RowDetail, TablePreprocessor, TargetScaler, as_frame, is_continuous,
    sklearn_words, standardise, target_rows,
)
from .quantile_view import in_quantile_view, quantile_normal
from .reading_choice import HeldOutLoss, choose_local_context
from .relevance import relevance
from .run_inputs import RunInputs, fit_run_inputs
from .state_cache import StateCache
from .views import STOP_ROWS, check_view

LOCAL_CONTEXT = 1024    # default rows per local context (docs/design.md, "Local contexts")
COLUMN_MEMBERS = 1      # default members per column of the chained imputer (docs/design.md, "Imputation")
PRECISIONS = ("auto", "fp32", "bf16")

# one engine run on tables of one shape, a member's (contexts, labels, queries), with a label for progress -> each
# table's per-query output
Call = Callable[[list[np.ndarray], list[np.ndarray], list[np.ndarray], str], list[np.ndarray]]


class _FEATBase(BaseEstimator):
    """Parameters and context handling shared by the three estimators.

    n_estimators: ensemble members (row permutation, feature shuffle, S-DFE draw each); in the
        classifier and regressor the odd ones (the 2nd, 4th, ...) read the quantile view.
    random_state: int for reproducible results, None for a fresh draw (per fit for the classifier
        and regressor, per call for the imputer).
    device: "auto" (CUDA when available, else CPU), "cpu" or "cuda".
    max_context: context rows per member (a random subset per member); None = all rows.
    max_features: features per member; None = the width the checkpoint was pretrained on.
    checkpoint: a checkpoint path, a loaded FEAT model, or None for the shipped one.
    progress: callback (done, total, message) over all engine runs of a call.
    precision: "auto" (default), "fp32" or "bf16". bf16 autocasts the matrix products and keeps the
        scan's states in fp32; "auto" takes it where it is fast (a GPU, or a CPU that multiplies bf16
        natively: AMX or AVX512-BF16) and fp32 elsewhere, where bf16 is emulated and slow. On the
        development tables bf16 scores as fp32 does at about half the time on such a CPU
        (docs/design.md, "The compute floor"); "fp32" gives the same numbers on every CPU.
    """

    def __init__(
        self, n_estimators: int = 4, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        precision: str = "auto",
    ):
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.device = device
        self.max_context = max_context
        self.max_features = max_features
        self.checkpoint = checkpoint
        self.progress = progress
        self.precision = precision

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.sparse = False       # refused with a message: see `as_frame`
        return tags

    def _context_frame(self, X: Any, y: Any = "no_validation", what: str = "context") -> pd.DataFrame:
        """The context X as a DataFrame after scikit-learn's checks: `as_frame` with at least two rows,
        and y not None where the estimator needs a target. Records `n_features_in_` and, for string
        column names, `feature_names_in_`."""
        if self.precision not in PRECISIONS:
            raise FEATInputError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        frame = as_frame(X, what, min_rows=2)
        with sklearn_words("target"):
            validate_data(self, _sklearn_view(frame), y, skip_check_array=True)
        return frame

    def _query_frame(self, X: Any, what: str) -> pd.DataFrame:
        """Rows to predict or impute as a DataFrame: a DataFrame's columns are matched to the context's
        by name, in any order (the message names those at fault), then scikit-learn checks the number
        of features ("X has 1 features, but ... is expecting 4 features as input")."""
        frame = as_frame(X, what)
        if isinstance(X, pd.DataFrame):
            frame = self.preprocessor_.check_columns(frame, what)
        with sklearn_words(what):
            validate_data(self, _sklearn_view(frame), reset=False, skip_check_array=True)
        return frame

    def _fit_features(self, X: pd.DataFrame) -> RowDetail:
        """Fit the preprocessor on the context X and keep its matrix; returns the rows' detail beside it."""
        self.preprocessor_ = TablePreprocessor().fit(X)
        detail = self.preprocessor_.detail(X, "context")
        self.context_ = detail.clipped()
        return detail

    def _model(self) -> tuple[FEAT, int]:
        model, meta = resolve_model(self.checkpoint)
        return model, self.max_features or trained_max_features(meta)

    def _engine(self) -> dict[str, Any]:
        """The device and precision every engine run of this estimator takes."""
        return {"device": self.device, "cfg": InferenceConfig(autocast_bf16=uses_bf16(self.precision, self.device))}


def _sklearn_view(frame: pd.DataFrame) -> pd.DataFrame:
    """frame for scikit-learn's feature-name checks: column names that mix strings with other types
    (an Excel header with years, say), which scikit-learn refuses, become positions, which it does
    not record; FEAT itself matches columns by name."""
    mixed = len({isinstance(c, str) for c in frame.columns}) > 1
    return frame.set_axis(range(frame.shape[1]), axis=1) if mixed else frame


class _InContextBase(_FEATBase):
    """Classifier and regressor: a labelled context, members drawn at fit, local contexts.

    local_context: rows per local context: a member whose context holds at least twice as many
        rows splits it into parts of this size, and each query reads the part nearest to it;
        None = every query reads the member's whole context; "auto" = parts of 512, of 1,024 or the
        whole context, whichever predicts held-out context rows best (`reading_choice.py`; the
        default 1,024 unless another is clearly better), at the cost of up to 15 one-member fits.
    view: hand the model a cross-fitted classical model's prediction as one more feature, in place of one
        feature slot (`views.py`): "additive" (ridge, or logistic regression for a binary run, over each
        feature and its B-splines), "trees" (histogram gradient boosting), "auto" (whichever of the two
        predicts the context's labels better out of fold, per run) or None.
    blend: where the context is split into local parts and a view is read, hold one context row in eight
        (512 to 2,048) out of the parts and blend the output with the view's own prediction at the weight
        that predicts those rows best (`blend.py`); False = the model's output alone.
    """

    def __init__(
        self, n_estimators: int = 4, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None, local_context: int | str | None = LOCAL_CONTEXT,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        precision: str = "auto", view: str | None = "auto", blend: bool = True,
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, checkpoint, progress, precision)
        self.local_context = local_context
        self.view = view
        self.blend = blend

    def _fit_supervised(self, X: pd.DataFrame, y: np.ndarray, classification: bool) -> None:
        """Preprocess the context X with model targets y (class indices or standardised values),
        score feature relevance where it is used, draw the members and their local contexts, fit each
        member's target statistics and view for every labelling its runs read (`run_inputs.py`), and choose
        the blend's weight on the context rows held out of the local parts (`blend.py`)."""
        size = self.local_context
        if not (size is None or size == "auto" or (isinstance(size, (int, np.integer)) and size >= 1)):
            raise FEATInputError(f"local_context must be >= 1, None or 'auto', got {size!r}")
        check_view(self.view)
        detail = self._fit_features(X)
        self.y_ = y
        n, d = self.context_.shape
        max_features = max(1, self._model()[1] - (self.view is not None))     # the view takes one slot
        n_ctx = n if self.max_context is None else min(n, self.max_context)
        self.reading_choice_ = None
        if size == "auto":
            self.reading_choice_ = choose_local_context(n, self._held_out_loss(X, y, classification, n_ctx), LOCAL_CONTEXT,
                                                        y if classification else None, self.random_state, n_ctx)
            size = self.reading_choice_.size
        self.local_context_ = size
        local = rows_per_run(n_ctx, size) < n_ctx
        self.relevance_ = None
        if d > max_features or local:
            self.relevance_ = relevance(self.context_, y, classification, self.preprocessor_.nominal_, self.random_state)
        self.members_ = plan_members(n, d, self.n_estimators, max_features, self.max_context, self.random_state,
                                     self.relevance_ if d > max_features else None)
        held = None
        if local:
            if self.blend and self.view is not None:
                held = held_out_rows(n, y if classification else None, self.random_state)
            if not self._split_contexts(size, held):     # too few rows left outside `held`: no blend
                held = None
                self._split_contexts(size, None)
        self.run_inputs_ = self._fit_all_run_inputs(detail, classification)
        self._states = StateCache()
        self.blend_ = None if held is None else self._choose_blend(held, detail[held])
        self.reading_ = self._reading()

    def _split_contexts(self, size: int, held: np.ndarray | None) -> bool:
        """Split each member's context rows, less the `held` ones, into local parts of `size` rows, the
        distances weighted by relevance (nominal columns not at all); False if some member's rows are then
        too few to split (it would read its whole context, held rows included)."""
        d = self.context_.shape[1]
        weights = np.where(np.isin(np.arange(d), self.preprocessor_.nominal_), 0.0, self.relevance_)
        for m in self.members_:
            keep = np.arange(len(m.rows)) if held is None else np.flatnonzero(~np.isin(m.rows, held))
            m.local = local_contexts(self.context_[m.rows[keep]][:, m.features], size, weights[m.features], m.seed)
            if m.local is None:
                return False
            m.local.parts = keep[m.local.parts]
        return True

    def _choose_blend(self, held: np.ndarray, detail: RowDetail) -> Blend | None:
        """The blend's weight, chosen on the context rows `held` out of the parts (with their `detail`),
        read as queries; None where no run has a view."""
        x = self.context_[held]
        outputs = self._outputs(x, detail, self._routes(x), held)
        if all(np.isnan(s).all() for _, s in outputs):
            return None
        return choose_blend(lambda w: self._row_loss(self._combine(outputs, w), self.y_[held]))

    def _weight(self) -> float:
        """The view's weight in the blend (0 where there is none)."""
        return 0.0 if self.blend_ is None else self.blend_.weight

    def _engine(self) -> dict[str, Any]:
        """The device, precision and kept context states (`state_cache.py`) of every engine run."""
        return {**super()._engine(), "cache": self._states}

    def _labellings(self) -> list[int | None]:
        """The labellings of the context the runs read: None for the target itself; the classifier's
        one-vs-rest runs read class c against the rest (key c)."""
        return [None]

    def _labels(self, key: int | None) -> np.ndarray:
        """The context's labels under labelling `key`."""
        return self.y_ if key is None else (self.y_ == key).astype(np.int64)

    def _fit_all_run_inputs(self, detail: RowDetail, classification: bool) -> list[dict[int | None, RunInputs]]:
        """Each member's target statistics and view for every labelling (`run_inputs.py`), with the `detail`
        of the context rows. Where members read every context row (each in its own order) of a context of at
        most `STOP_ROWS` rows, they share one fit per labelling and power scale, reordered to their rows:
        fitted once per member, those fits would see the same rows and labels and differ only in their folds.
        On longer contexts each member's tree view stops boosting early on a validation split of its own, so
        the members' views are different models whose average is a bagged one, and each member keeps its own
        fits, as does a member of a capped context (`max_context`), which reads a subset of its own
        (docs/design.md, "Fitted once")."""
        n = len(self.context_)
        shared: dict[tuple, RunInputs] = {}
        inputs = []
        for m in self.members_:
            power, mine = self._power(m), {}
            if len(m.rows) < n or n > STOP_ROWS:
                own = detail[m.rows]
                inputs.append({key: self._fit_run_inputs(m.rows, m.features, m.seed, power, key, own, classification)
                               for key in self._labellings()})
                continue
            for key in self._labellings():
                if (key, power) not in shared:
                    shared[key, power] = self._fit_run_inputs(np.arange(n), m.features, m.seed, power, key, detail,
                                                              classification)
                mine[key] = shared[key, power].reordered(m.rows, m.features)
            inputs.append(mine)
        return inputs

    def _fit_run_inputs(self, rows: np.ndarray, features: np.ndarray, seed: int, power: tuple[float, float] | None,
                        key: int | None, detail: RowDetail, classification: bool) -> RunInputs:
        """The target statistics (where the labels are one target: numbers, or 0/1) and view of the context
        `rows` (with their `detail`) under labelling `key`, for a member reading `features`."""
        labels = self._labels(key)[rows]
        single = not classification or key is not None or self.y_.max(initial=0) <= 1    # classes 0..k-1: k <= 2
        nominal = self.preprocessor_.nominal_ if single else np.empty(0, np.int64)
        return fit_run_inputs(self.context_[rows], detail, labels, features, nominal,
                              classification, self.view, seed, power)

    def _power(self, m: Member) -> tuple[float, float] | None:
        """The (origin, scale) of the labels of a member that reads them on their power scale; None: as they are."""
        return None

    def _held_out_loss(self, X: pd.DataFrame, y: np.ndarray, classification: bool, n_ctx: int) -> HeldOutLoss:
        """Per-row held-out loss of a one-member fit of this estimator with a given reading, on the rows
        of X: log-loss of the true class, or squared error of the standardised target. With `max_context`,
        the fit's context is capped in proportion (n_ctx of the len(X) rows)."""
        params = self.get_params(deep=False)

        def loss(size: int | None, tr: np.ndarray, va: np.ndarray) -> np.ndarray:
            cap = None if self.max_context is None else max(2, round(len(tr) * n_ctx / len(X)))
            name = "whole context" if size is None else f"parts of {size:,}"
            progress = None if self.progress is None else (
                lambda done, total, msg: self.progress(done, total, f"choosing the reading, {name}: {msg}"))
            est = type(self)(**{**params, "n_estimators": 1, "local_context": size, "max_context": cap,
                                "progress": progress})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FEATDataWarning)      # the table's own notes were given at fit
                est.fit(X.iloc[tr], y[tr])
                if not classification:
                    return (est.predict(X.iloc[va]) - y[va]) ** 2
                p = est.predict_proba(X.iloc[va])
            col = np.searchsorted(est.classes_, y[va]).clip(0, len(est.classes_) - 1)
            p_true = np.where(est.classes_[col] == y[va], p[np.arange(len(va)), col], 0.0)
            return -np.log(np.clip(p_true, 1e-6, 1.0))
        return loss

    def _reading(self) -> str:
        """One sentence on how the members read the fitted table (the app's Predict view shows it)."""
        n, d = self.context_.shape
        names = [self.preprocessor_.feature_names_[j] for j in self.preprocessor_.nominal_]
        width = len(self.members_[0].features)
        n_quantile = sum(in_quantile_view(m) for m in self.members_)
        power = any(r.target is not None for inputs in self.run_inputs_ for r in inputs.values())
        parts = [f"{len(self.members_)} member(s)"
                 + (f", {n_quantile} reading numbers in the quantile view" if n_quantile else "")
                 + (" and the target on a power scale" if power else ""),
                 f"target statistics for {len(names)} nominal column(s) ({', '.join(names[:5])}"
                 f"{', ...' if len(names) > 5 else ''})" if names else "no nominal columns",
                 f"{width} of {d} features per member, most relevant first" if width < d else f"all {d} features"]
        views = {id(r.view.model): r.view for inputs in self.run_inputs_ for r in inputs.values() if r.view is not None}
        kinds = [v.kind for v in views.values()]
        if kinds:
            n_trees = kinds.count("trees")
            parts.append(f"a cross-fitted model's prediction as one more feature (boosted trees for {n_trees} of "
                         f"{len(kinds)} fitted views, the additive model for {len(kinds) - n_trees})")
        local = self.members_[0].local
        rows = len(self.members_[0].rows)
        parts.append(f"each query reads the nearest of {len(local.parts)} local parts of {local.parts.shape[1]:,} "
                     f"rows out of {rows:,} context rows" if local is not None else f"the whole context of {rows:,} rows")
        if self.reading_choice_ is not None:
            parts.append(f"that reading {self.reading_choice_.describe()}")
        if self.blend_ is not None:
            parts.append(self.blend_.describe())
        return "; ".join(parts) + "."

    def _query_rows(self, X: Any) -> tuple[np.ndarray, RowDetail, list[np.ndarray | None]]:
        """Standardised query rows, their detail, and each member's routing of them."""
        check_is_fitted(self, "members_")
        frame = self._query_frame(X, "query")
        detail = self.preprocessor_.detail(frame, "query")
        self.preprocessor_.warn_unreadable(frame, detail.values, "query")
        xq = detail.clipped()
        return xq, detail, self._routes(xq)

    def _routes(self, xq: np.ndarray) -> list[np.ndarray | None]:
        """Each member's routing of the standardised query rows to its local parts (None: its whole context)."""
        return [None if m.local is None else m.local.route(xq[:, m.features]) for m in self.members_]

    def _n_runs(self, routes: list[np.ndarray | None]) -> int:
        """Engine runs that reading queries routed by `routes` takes (`_in_context`)."""
        size = tables_per_run(self.device)
        return sum(1 if r is None else len(np.unique(r // size)) for r in routes)

    def _run_matrices(self, m: Member, key: int | None, xq: np.ndarray, detail: RowDetail,
                      held: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Member m's context matrix, query matrix and the view's own prediction for each query (NaN
        without a view) under labelling `key`: its fitted target statistics and view (`run_inputs_`)
        applied. `held` gives the context row of each query row when the queries are context rows held
        out of the parts: those of the member's context read their cross-fitted values."""
        inputs = self.run_inputs_[m.index][key]
        ctx, q = inputs.context(self.context_[m.rows]), inputs.queries(xq, detail)
        if held is not None:
            at = np.full(len(self.context_), -1)
            at[m.rows] = np.arange(len(m.rows))
            pos = at[held]
            q[pos >= 0] = ctx[pos[pos >= 0]]
        view = inputs.view
        return ctx, q, np.full(len(q), np.nan) if view is None else q[:, 0] * view.std + view.mean

    def _in_context(
        self, m: Member, route: np.ndarray | None, key: int | None, ctx: np.ndarray, q: np.ndarray,
        call: Call, steps: StepCounter, regression: bool = False,
    ) -> np.ndarray:
        """Member m's output for every query row of q under labelling `key` (`_run_matrices`): one `call`
        on the whole context, or one per batch of local parts that holds a part some query row is routed
        to, the batches on all cores (`map_runs`). A batch is `tables_per_run` consecutive parts, the
        same whatever the queries, so a part's states never depend on which other parts were asked for."""
        yr = self.run_inputs_[m.index][key].labels(self._labels(key)[m.rows])
        if in_quantile_view(m):
            call = _in_quantile_view(call)
        if route is None:
            return call([ctx], [yr], [q], "")[0]
        order = np.argsort(route, kind="stable")               # queries grouped by part: O(M log M)
        parts, starts = np.unique(route[order], return_index=True)
        sels = dict(zip(parts.tolist(), np.split(order, starts[1:])))
        size, n_parts = tables_per_run(self.device), len(m.local.parts)
        batches = [range(b * size, min(n_parts, (b + 1) * size)) for b in np.unique(parts // size)]
        noun = "part" if size == 1 else "batch of parts"

        def read(j: int) -> list[np.ndarray]:
            rows = [m.local.parts[p] for p in batches[j]]
            return _read_parts(call, [ctx[r] for r in rows], [yr[r] for r in rows],
                               [q[sels.get(p, order[:0])] for p in batches[j]], regression,
                               f", {noun} {j + 1}/{len(batches)}")
        outs = [r for rs in map_runs(read, range(len(batches)), self.device, steps.flush) for r in rs]
        out = np.empty((len(q),) + outs[0].shape[1:], outs[0].dtype)
        for p, r in zip([p for b in batches for p in b], outs):
            if p in sels:
                out[sels[p]] = r
        return out


def _in_quantile_view(call: Call) -> Call:
    """`call`, with each table's context and queries handed over in the quantile view (`quantile_view.py`)."""
    def read(ctxs: list[np.ndarray], ys: list[np.ndarray], qs: list[np.ndarray], label: str) -> list[np.ndarray]:
        views = [quantile_normal(c, q) for c, q in zip(ctxs, qs)]
        return call([c for c, _ in views], ys, [q for _, q in views], label)
    return read


def _read_parts(call: Call, ctxs: list[np.ndarray], ys: list[np.ndarray], qs: list[np.ndarray], regression: bool,
                label: str) -> list[np.ndarray]:
    """Local parts read as the prior's tables are: each part's features (and regression target)
    standardised with its own context statistics, predictions mapped back."""
    zs = [standardise(np.vstack([c, q]), len(c)) for c, q in zip(ctxs, qs)]
    ctxs, qs = [z[:len(c)] for z, c in zip(zs, ctxs)], [z[len(c):] for z, c in zip(zs, ctxs)]
    if not regression:
        return call(ctxs, ys, qs, label)
    mus = [float(y.mean()) for y in ys]
    sds = [sd if sd > 1e-8 else 1.0 for sd in (float(y.std()) for y in ys)]
    outs = call(ctxs, [(y - mu) / sd for y, mu, sd in zip(ys, mus, sds)], qs, label)
    return [o * sd + mu for o, mu, sd in zip(outs, mus, sds)]


def _target(y: Any) -> pd.Series:
    """y as a Series, numbers held as objects made numbers. A Series is taken as it is; anything else
    goes through scikit-learn's `column_or_1d`, which warns (DataConversionWarning) on a column
    vector and refuses other shapes and complex numbers."""
    if not isinstance(y, pd.Series):
        with sklearn_words("target"):
            y = pd.Series(column_or_1d(y, warn=True))
    return y.infer_objects()


class FEATClassifier(ClassifierMixin, _InContextBase):
    """Zero-shot classifier for labels of any type and any number of classes.

    multiclass: "ovr" (default) scores each of K > 2 classes with its own binary run
    (class vs rest) and normalises the K scores; "head" reads all classes from the
    classification head in one run (at most 10 classes). Either way each member presents the
    classes in a rotated order, so the head's class slots are used evenly
    (docs/design.md, "Classes: one-vs-rest and label rotation"). Nominal columns get the target
    statistics of each binary run's own label; "head" runs with K > 2 read their level codes.
    """

    def __init__(
        self, n_estimators: int = 4, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None, local_context: int | str | None = LOCAL_CONTEXT,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        multiclass: str = "ovr", precision: str = "auto", view: str | None = "auto", blend: bool = True,
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, local_context, checkpoint,
                         progress, precision, view, blend)
        self.multiclass = multiclass

    def fit(self, X: Any, y: Any) -> "FEATClassifier":
        """Store the context table X and its labels y (rows with a missing label are dropped)."""
        if self.multiclass not in ("ovr", "head"):
            raise FEATInputError(f"multiclass must be 'ovr' or 'head', got {self.multiclass!r}")
        X, y = self._context_frame(X, y), _target(y)
        keep = target_rows(y, len(X))
        y = y.iloc[keep]
        if is_continuous(y):
            raise FEATInputError(
                f"Unknown label type: continuous. Target {y.name or 'y'!r} holds {y.nunique()} distinct numbers, not "
                "all whole, which FEATClassifier cannot take as classes: use FEATRegressor to predict a number, or "
                "pass the labels as strings if they are classes")
        self.encoder_ = ClassEncoder().fit(y)
        self.classes_ = self.encoder_.classes_
        limit = self._model()[0].cfg.max_classes
        if self.multiclass == "head" and len(self.classes_) > limit:
            raise FEATInputError(f"multiclass='head' reads at most {limit} classes from the head, the target has "
                                 f"{len(self.classes_)}; use multiclass='ovr'")
        self._fit_supervised(X.iloc[keep], self.encoder_.transform(y), classification=True)
        return self

    def _labellings(self) -> list[int | None]:
        """One run per member on the classes themselves (two classes, or `multiclass="head"`), else one
        per class against the rest."""
        k = len(self.classes_)
        return [None] if k == 2 or self.multiclass == "head" else list(range(k))

    def predict_proba(self, X: Any) -> np.ndarray:
        """(M, n_classes) class probabilities, columns in the order of `classes_`."""
        return self._combine(self._outputs(*self._query_rows(X)), self._weight())

    def _outputs(self, xq: np.ndarray, detail: RowDetail, routes: list[np.ndarray | None],
                 held: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per member: (M, k) probabilities of one run on the classes, or (M, k) one-vs-rest scores, and
        beside them the views' logits, one column per run."""
        model = self._model()[0]
        k = len(self.classes_)
        keys = self._labellings()
        one_run = keys == [None]
        steps = StepCounter(self.progress, self._n_runs(routes) * len(keys))
        outputs = []
        for m, route in zip(self.members_, routes):
            name = f"member {m.index + 1}/{len(self.members_)}"

            def call(n_classes: int, label: str) -> Call:
                return lambda ctxs, ys, qs, part: _rotated_proba(model, ctxs, ys, qs, n_classes, m, self._engine(),
                                                                 steps.callback(label + part))
            scores, views = [], []
            for c in keys:
                ctx, q, view = self._run_matrices(m, c, xq, detail, held)
                label = name if one_run else f"{name}, class {c + 1}/{k}"
                out = self._in_context(m, route, c, ctx, q, call(k if one_run else 2, label), steps)
                scores.append(out if one_run else out[:, 1])
                views.append(view)
            outputs.append((scores[0] if one_run else np.stack(scores, axis=1), np.stack(views, axis=1)))
        return outputs

    def _combine(self, outputs: list[tuple[np.ndarray, np.ndarray]], weight: float) -> np.ndarray:
        """Each binary run's probability of its class blended with its view's logit, one-vs-rest scores
        normalised, averaged over the members."""
        one_run = self._labellings() == [None]       # a "head" run on K > 2 classes has no view
        proba = 0.0
        for scores, views in outputs:
            if not one_run:
                scores = blend_probability(scores, views, weight)
                scores = scores / scores.sum(axis=1, keepdims=True)
            elif scores.shape[1] == 2:
                p = blend_probability(scores[:, 1], views[:, 0], weight)
                scores = np.column_stack([1.0 - p, p])
            proba = proba + scores
        return proba / len(outputs)

    @staticmethod
    def _row_loss(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Log-loss of each row's true class (class indices y)."""
        return -np.log(np.clip(proba[np.arange(len(y)), y], 1e-6, 1.0))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable label per query row, in the labels' own type."""
        proba = self.predict_proba(X)
        return self.encoder_.inverse_transform(np.argmax(proba, axis=1))


def _rotated_proba(
    model: FEAT, ctxs: list[np.ndarray], ys: list[np.ndarray], xqs: list[np.ndarray], k: int, m: Member,
    engine: dict[str, Any], progress: Progress | None,
) -> list[np.ndarray]:
    """Each table's P(class | query) for classes 0..k-1, from one run in which class c sits in head slot
    (c + m.index) mod k, so that across members every class visits every slot."""
    slot = (np.arange(k) + m.index) % k
    res = run_tables(model, ctxs, [slot[y].astype(np.float32) for y in ys], xqs, "classification", n_classes=k,
                     column_ids=m.column_ids(model, ctxs[0].shape[1]), progress=progress, **engine)
    return [softmax(r.logits[:, :k].astype(np.float64), axis=1)[:, slot] for r in res]


class FEATRegressor(RegressorMixin, _InContextBase):
    """Zero-shot regressor; targets are standardised with context statistics and mapped back."""

    def fit(self, X: Any, y: Any) -> "FEATRegressor":
        """Store the context table X and its numeric targets y (rows with a missing target are dropped)."""
        X, y = self._context_frame(X, y), _target(y)
        keep = target_rows(y, len(X))
        self.scaler_ = TargetScaler().fit(y.iloc[keep])
        self._fit_supervised(X.iloc[keep], self.scaler_.transform(y.iloc[keep]), classification=False)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets in the original units, averaged over the members."""
        z = self._combine(self._outputs(*self._query_rows(X)), self._weight())     # checks it is fitted first
        return self.scaler_.inverse_transform(z)

    def _outputs(self, xq: np.ndarray, detail: RowDetail, routes: list[np.ndarray | None],
                 held: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per member: its (M,) predictions of the standardised target and its view's beside them."""
        model = self._model()[0]
        steps = StepCounter(self.progress, self._n_runs(routes))
        outputs = []
        for m, route in zip(self.members_, routes):
            name = f"member {m.index + 1}/{len(self.members_)}"
            ctx, q, view = self._run_matrices(m, None, xq, detail, held)
            pred = self._in_context(m, route, None, ctx, q, lambda ctxs, ys, qs, part: [r.pred for r in run_tables(
                model, ctxs, ys, qs, "regression", column_ids=m.column_ids(model, ctxs[0].shape[1]),
                progress=steps.callback(name + part), **self._engine())], steps, regression=True)
            outputs.append((pred, view))
        return outputs

    def _power(self, m: Member) -> tuple[float, float] | None:
        """The members in the quantile view read the target on its power scale (`power_target.py`)."""
        return (self.scaler_.mean_, self.scaler_.std_) if in_quantile_view(m) else None

    def _combine(self, outputs: list[tuple[np.ndarray, np.ndarray]], weight: float) -> np.ndarray:
        """The members' predictions blended with their views' (on the scale the member reads), mapped to the
        standardised target and averaged."""
        return np.mean([inputs[None].output(blend_prediction(pred, view, weight))
                        for inputs, (pred, view) in zip(self.run_inputs_, outputs)], axis=0)

    @staticmethod
    def _row_loss(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Squared error of each row's standardised target."""
        return (pred - y) ** 2


class FEATImputer(TransformerMixin, _FEATBase):
    """Fills the NaN cells of a table; every other cell is returned unchanged.

    method="chained" (default; docs/design.md, "Imputation"): each incomplete numeric or
    categorical column is predicted in context from the other columns, missing cells and all,
    by `FEATRegressor` or `FEATClassifier` (real labels for categoricals), with everything they
    hand the model (target statistics, ranked features, local contexts). One pass: FEAT reads
    missing cells natively, so no initial fill is iterated. method="reconstruction": the
    imputation head fills every cell in one run per member; it also fills date columns under
    "chained". `transform(X)` uses the fitted rows plus the rows of X as context (X alone when X
    is the fitted table, as in `fit_transform`). With `max_context`, each column's context is a
    random subset of that many rows (chained), or the rows are imputed in random blocks of that
    many rows, each block its own context (reconstruction).

    n_estimators: members per imputed column (chained) or per table (reconstruction); None, the
    default, gives COLUMN_MEMBERS per column and 4 per table: a chained pass already costs a run
    per incomplete column, and more members per column bought no numeric accuracy for 4x the time.
    """

    def __init__(
        self, n_estimators: int | None = None, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None, method: str = "chained",
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        precision: str = "auto",
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, checkpoint, progress, precision)
        self.method = method

    def fit(self, X: Any, y: Any = None) -> "FEATImputer":
        """Store the table whose rows serve as context."""
        if self.method not in ("chained", "reconstruction"):
            raise FEATInputError(f"method must be 'chained' or 'reconstruction', got {self.method!r}")
        frame = self._context_frame(X, what="X")
        self._model()                      # a bad checkpoint is refused at fit, missing cells or not
        self._fit_features(frame)
        self.frame_ = frame.copy()
        return self

    def transform(self, X: Any) -> Any:
        """X with every NaN cell filled, in X's dtypes and categories (DataFrame in, DataFrame out)."""
        check_is_fitted(self, "context_")
        frame = self._query_frame(X, "X")
        xz = self.preprocessor_.transform(frame, "query")
        same = xz.shape == self.context_.shape and np.array_equal(xz, self.context_, equal_nan=True)
        if not same:                                                  # the table's own notes were given at fit
            self.preprocessor_.warn_unreadable(frame, xz, "X")
        chained = self._chained_columns(frame) if self.method == "chained" else []
        z = np.zeros(xz.shape)
        if any(frame[c.name].isna().any() for c in self.preprocessor_.plan_ if c not in chained):
            table = xz if same else np.vstack([self.context_, xz])
            z = self._reconstruct(table)[len(table) - len(xz):]
        if chained:
            self._fill_chained(z, frame, chained, frame if same else pd.concat([self.frame_, frame], ignore_index=True))
        out = self.preprocessor_.inverse_transform(z, frame)
        left = [c for c in out.columns if out[c].isna().any() and frame[c].isna().any()]
        if left:
            warnings.warn(f"columns {left} were dropped ({', '.join(self.preprocessor_.dropped_[c] for c in left)}) "
                          "and keep their missing cells", FEATDataWarning, stacklevel=2)
        return out if isinstance(X, pd.DataFrame) else out.to_numpy(dtype=np.asarray(X).dtype)

    def _chained_columns(self, frame: pd.DataFrame) -> list:
        """The incomplete numeric and categorical columns of frame (dates go to the imputation head)."""
        return [c for c in self.preprocessor_.plan_ if c.kind in ("numeric", "categorical") and frame[c.name].isna().any()]

    def _fill_chained(self, z: np.ndarray, frame: pd.DataFrame, columns: list, table: pd.DataFrame) -> None:
        """Write into z (standardised, frame's rows) each column's in-context prediction for its NaN cells.
        table: the context rows (the fitted rows and frame's, or frame alone)."""
        pre = self.preprocessor_
        offset = dict(zip([c.name for c in pre.plan_], np.cumsum([0] + [len(c.features()) for c in pre.plan_])))
        usable = [c.name for c in pre.plan_]
        steps = StepCounter(self.progress, len(columns))
        # callbacks made here, in column order: a run's place in the stream must not depend on which worker starts first
        say = {c.name: steps.callback(f"column {c.name!r}") for c in columns}

        def predicted(c) -> tuple[np.ndarray, Any]:
            # a numeric column is predicted as its numbers (read from text too, where it is text)
            target = pd.Series(c.encode(table[c.name])[:, 0], index=table.index) if c.kind == "numeric" else table[c.name]
            known = target.notna().to_numpy()
            rows = np.flatnonzero(frame[c.name].isna().to_numpy())
            y = target[known]
            X = table.loc[known, [n for n in usable if n != c.name]]
            query = frame.iloc[rows][[n for n in usable if n != c.name]]
            kw = dict(n_estimators=self.n_estimators or COLUMN_MEMBERS, random_state=self.random_state, device=self.device,
                      max_context=self.max_context, max_features=self.max_features, checkpoint=self.checkpoint,
                      progress=say[c.name], precision=self.precision)
            if not X.shape[1] or y.nunique() < 2:
                return rows, np.repeat(y.mode().iloc[0], len(rows))
            if c.kind == "categorical":
                return rows, _predict_levels(FEATClassifier(multiclass="head", **kw), X, y, query)
            return rows, FEATRegressor(**kw).fit(X, y).predict(query)

        with warnings.catch_warnings():         # on this thread, so the filter holds for the workers' whole runs
            warnings.simplefilter("ignore", FEATDataWarning)          # the table's own notes were given at fit
            preds = map_runs(predicted, columns, self.device, steps.flush)     # the columns on all cores
        for c, (rows, pred) in zip(columns, preds):
            j = offset[c.name]
            raw = c.categories.get_indexer(pd.Index(pred)) if c.kind == "categorical" else np.asarray(pred, np.float64)
            z[rows, j] = (raw - pre.mean_[j]) / pre.std_[j]


    def _reconstruct(self, table: np.ndarray) -> np.ndarray:
        """(N, D) standardised reconstruction, averaged over members (per feature, over the members that saw it)."""
        model, max_features = self._model()
        members = plan_members(len(table), table.shape[1], self.n_estimators or 4, max_features, None,  # rows are blocked below
                               self.random_state)
        block = len(table) if self.max_context is None else self.max_context
        n_blocks = math.ceil(len(table) / block)
        total, count = np.zeros(table.shape), np.zeros(table.shape[1])
        steps = StepCounter(self.progress, len(members) * n_blocks)
        for i, m in enumerate(members):
            order = np.random.default_rng(m.seed).permutation(len(table))
            for b in range(n_blocks):
                rows = order[b * block:(b + 1) * block]
                res = run(model, table[rows][:, m.features], None, None, None, column_ids=m.column_ids(model),
                          want_recon=True, **self._engine(),
                          progress=steps.callback(f"member {i + 1}/{len(members)}, block {b + 1}/{n_blocks}"))
                total[np.ix_(rows, m.features)] += res.recon
            count[m.features] += 1
        return total / count


def _predict_levels(clf: "FEATClassifier", X: pd.DataFrame, y: pd.Series, query: pd.DataFrame) -> np.ndarray:
    """A categorical column's levels for the query rows in one run per member, from the classification
    head: when the column has more levels than the head reads, the most frequent head-size - 1 keep
    their own class and the rest share one, which fills its cells with the most frequent of them."""
    limit = clf._model()[0].cfg.max_classes
    counts = y.value_counts()
    if len(counts) <= limit:
        return clf.fit(X, y).predict(query)
    top = counts.index[:limit - 1]
    codes = pd.Series(top.get_indexer(y), index=y.index)        # -1: one of the rarer levels
    pred = clf.fit(X, codes).predict(query)
    return np.where(pred >= 0, np.asarray(top, dtype=object)[np.maximum(pred, 0)], counts.index[limit - 1])
