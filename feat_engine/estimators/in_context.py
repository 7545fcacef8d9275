"""The classifier's and regressor's shared `fit`: the stages of `feat_engine.reading` run in order on a
labelled context, and the matrices each engine run then reads (docs/architecture.md, "Fit, stage by stage")."""
from __future__ import annotations

import os
import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import check_is_fitted

from ..errors import FEATDataWarning, FEATInputError
from ..inference import StateCache
from ..model import FEAT
from ..preprocess import UnclippedRows
from ..progress import CLASSICAL, Progress, StepCounter, blend_note
from ..reading.blend import (HELD_SHARE, MIN_HELD, Blend, choose_blend, clear_side, held_in_parts, held_out_rows,
                              holds_rows, prior_blend, stacked_alone)
from ..reading.coded_levels import coded_level_columns
from ..reading.context_size import HeldOutLoss, choose_local_context
from ..reading.giveaways import giveaways
from ..reading.local_parts import local_contexts, rows_per_run
from ..reading.members import (MEMBER_TOL, RULE_MEMBERS, SHORT_MEMBERS, SURE_ONES, Member, MemberChoice,
                               content_order, engine_runs_expected, plan_members, planned_members, positions,
                               prediction_change)
from ..reading.read_budget import READ_CELLS, ReadPlan, plan_reading
from ..reading.relevance import relevance
from ..reading.run_inputs import RunInputs, fit_run_inputs
from ..reading.stacked_model import STOP_ROWS, check_stacked_model
from . import runner
from .base import FEATBase
from .describe import describe_reading

LOCAL_CONTEXT = 1024    # default rows per local context (docs/decisions/0015-local-parts.md)
UNREAD_ROUTED = 65_536  # unread context rows routed to a one-member read's parts to draw its held rows from
QUERY_BATCH = 131_072   # query rows scored and combined at a time (`_predicted`): a multiple of the stacked model's
                        # and the engine's blocks (QUERY_ROWS, the query chunk), so every row meets the same kernels
KEPT_MEMBERS = (f"Ensemble members at most: where a blend is read (see `blend`), `fit` reads its held-out context "
                f"rows member by member and keeps the members up to the first that changes their predictions by "
                f"less than {MEMBER_TOL:g} (`member_choice_`). None plans {RULE_MEMBERS} members there, and where no "
                f"rows are held out (contexts under {MIN_HELD * HELD_SHARE:,} rows) {SHORT_MEMBERS}, or one where more "
                f"than two classes are each read against the rest (`members.planned_members`). ")


class RunMatrices(NamedTuple):
    """What one member's engine runs read under one labelling: the context matrix and its labels, the query
    matrix, and the stacked model's own prediction for each query (NaN without one)."""

    context: np.ndarray
    labels: np.ndarray
    queries: np.ndarray
    stacked: np.ndarray


class InContextBase(FEATBase, ABC):
    """Classifier and regressor: a labelled context read by members, in local parts on long contexts.
    Subclasses provide `_member_output`, `_combine` and `_row_loss`."""

    def __init__(
        self, n_estimators: int | None = None, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None, local_context: int | str | None = LOCAL_CONTEXT,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        precision: str = "auto", view: str | None = "auto", blend: bool = True, read_budget: int | None = READ_CELLS,
    ):
        super().__init__(n_estimators, random_state, device, max_context, max_features, checkpoint, progress, precision)
        self.local_context = local_context
        self.view = view
        self.blend = blend
        self.read_budget = read_budget

    # ----------------------------------------------------------------------------------- what subclasses provide

    @abstractmethod
    def _member_output(self, m: Member, route: np.ndarray | None, xq: np.ndarray, detail: UnclippedRows,
                       held: np.ndarray | None, steps: StepCounter | None) -> tuple[np.ndarray, np.ndarray]:
        """Member m's engine output for the query rows xq (routed by `route`) and the stacked model's prediction
        beside it; its runs report to `steps` (None: no run, a placeholder output that a blend at weight 1 ignores)."""

    @abstractmethod
    def _combine(self, outputs: list[tuple[np.ndarray, np.ndarray]], weight: float) -> np.ndarray:
        """The members' outputs blended with their stacked models' at `weight`, averaged."""

    @staticmethod
    @abstractmethod
    def _row_loss(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Each row's loss of `pred` against the model targets y (the blend's choice reads it)."""

    # ----------------------------------------------------------------------------------- fit

    def _fit_supervised(self, X: pd.DataFrame, y: np.ndarray, classification: bool) -> None:
        """Run the reading stages on the context X with model targets y (class indices or standardised values),
        its rows first put in their content's order (`content_order`), so that their given order changes nothing."""
        size = self._checked_local_context()
        order = content_order(X, y)
        X, y = X.iloc[order], np.asarray(y)[order]
        detail = self._fit_levels(X, y, classification, self._fit_features(X))
        for note in giveaways(self.context_, y, classification, self.preprocessor_.nominal_,
                              [str(c.name) for c in self.preprocessor_.plan_ for _ in c.features()]):
            warnings.warn(note, FEATDataWarning, stacklevel=3)
        self.y_ = y
        n, d = self.context_.shape
        width = max(1, self._model_width() - (self.view is not None))     # the stacked model takes one slot
        self.read_plan_ = self.read_plan(n, d, len(self._ovr_classes()))
        n_ctx = self.read_plan_.rows
        self.reading_choice_ = None
        if size == "auto":
            self.reading_choice_ = choose_local_context(n, self._held_out_loss(X, y, classification, n_ctx), LOCAL_CONTEXT,
                                                        y if classification else None, self.random_state, n_ctx)
            size = self.reading_choice_.size
        self.local_context_ = size
        local = rows_per_run(n_ctx, size) < n_ctx
        self.relevance_ = None
        if d > width or local:
            self.relevance_ = relevance(self.context_, y, classification, self.preprocessor_.nominal_, self.random_state)
        self.members_ = plan_members(n, d, self.read_plan_.members, width,
                                     n_ctx if self.read_plan_.capped else self.max_context, self.random_state,
                                     self.relevance_ if d > width else None)
        held = self._split_contexts(size, classification) if local else None
        routes = None if held is None else self._routes(self.context_[held])
        steps = runner.fit_steps(self.progress, self.members_, routes, self.device, len(self._ovr_classes()),
                                 self._n_fits())
        self._states = StateCache()
        self.member_choice_, self.blend_ = None, None
        if held is None:
            shared: dict[tuple, RunInputs] = {}
            self.run_inputs_ = [self._fit_member_inputs(m, alone, detail, classification, steps, shared)
                                for m, alone in zip(self.members_, self._fits_alone())]
            if self.blend and any(r.stacked is not None for inputs in self.run_inputs_ for r in inputs.values()):
                self.blend_ = prior_blend(self._unexplained())
        else:
            self.blend_ = self._choose_members_and_blend(held, detail, routes, classification, steps)
        self.reading_ = describe_reading(self)

    def _fit_levels(self, X: pd.DataFrame, y: np.ndarray, classification: bool,
                    detail: UnclippedRows) -> UnclippedRows:
        """Read the whole-number and date columns of the context X whose levels tell more about the targets y than
        their order a second time, as nominal levels (`coded_levels.py`); returns the rows' detail (`detail` where
        there are none)."""
        coded = coded_level_columns(self.preprocessor_, X, y, classification, self.random_state)
        if not coded:
            return detail
        detail = self.preprocessor_.add_levels(X, coded).detail(X, "context")
        self.context_ = detail.clipped()
        return detail

    def read_plan(self, n_rows: int, n_features: int, runs: int = 1) -> ReadPlan:
        """What `fit` reads of a context of n_rows labelled rows and n_features features (after preprocessing) whose
        members read `runs` labellings each (the classes, where more than two are read one against the rest): the
        members and context rows per member within `read_budget` (`reading.read_budget.plan_reading`), the members
        by `n_estimators` or, at its default, by whether the member rule can choose them (`members.planned_members`)."""
        width = min(n_features, max(1, self._model_width() - (self.view is not None))) + (self.view is not None)
        size = LOCAL_CONTEXT if self.local_context == "auto" else self.local_context
        rows = n_rows if self.max_context is None else min(n_rows, self.max_context)
        rule = self.blend and self.view is not None and rows_per_run(rows, size) < rows and holds_rows(rows)
        members = planned_members(self.n_estimators, rule, runs)
        return plan_reading(n_rows, width, runs, members, self.max_context, size, self.read_budget)

    def _beside(self, n_features: int, held: np.ndarray | None) -> bool:
        """Whether runs that read n_features features also read the stacked model of the other kind: with `view`
        "auto", where no context rows are `held` out (a long context's blend, chosen on them, already carries the
        stacked model's signal: docs/decisions/0022-stacked-model.md), and where a slot is free beside those features
        and the chosen model's column: never in a feature's place."""
        return self.view == "auto" and held is None and n_features + 2 <= self._model_width()

    def _checked_local_context(self) -> int | str | None:
        """`local_context` and `view`, refused with a message where they are not one of their values."""
        size = self.local_context
        if not (size is None or size == "auto" or (isinstance(size, (int, np.integer)) and size >= 1)):
            raise FEATInputError(f"local_context must be >= 1, None or 'auto', got {size!r}")
        check_stacked_model(self.view)
        return size

    def _split_contexts(self, size: int, classification: bool) -> np.ndarray | None:
        """Split each member's context into local parts of `size` rows; where a blend is read, first hold rows out
        of the parts for it (`held_out_rows`), or, for one member that reads only some rows, draw them from the rows
        it does not read, in a few of its parts (`held_in_parts`). Returns the held rows, None where none are held
        (no blend, or too few rows left outside them to split, when the parts are drawn again from every row)."""
        held, y, m = None, self.y_ if classification else None, self.members_[0]
        if self.blend and self.view is not None and self._one_reads_some() and holds_rows(len(self.context_)):
            if self._split_member_contexts(size, None):                # held rows from the rows it does not read
                unread = np.ones(len(self.context_), bool)
                unread[m.rows] = False
                unread = np.random.default_rng(self.random_state).permutation(np.flatnonzero(unread))[:UNREAD_ROUTED]
                held = held_in_parts(unread, m.local.route(self.context_[unread][:, m.features]),
                                     len(m.local.parts), None if y is None else y[unread], self.random_state)
            if held is not None:
                return held
        if self.blend and self.view is not None:
            held = held_out_rows(len(self.context_), y, self.random_state)
        if not self._split_member_contexts(size, held):
            held = None
            self._split_member_contexts(size, None)
        return held

    def _one_reads_some(self) -> bool:
        """Whether one member reads only some of the context rows (the reading budget's cap, or `max_context`): its held
        rows then come from the rows it does not read, in a few of its parts (`held_in_parts`), and its blend keeps
        weight 1 unless a lower weight clearly beats it (`choose_blend`: docs/decisions/0024-blend.md)."""
        return len(self.members_) == 1 and len(self.members_[0].rows) < len(self.context_)

    def _split_member_contexts(self, size: int, held: np.ndarray | None) -> bool:
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

    def _choose_members_and_blend(self, held: np.ndarray, detail: UnclippedRows, routes: list[np.ndarray | None],
                                  classification: bool, steps: StepCounter) -> Blend | None:
        """Read the context rows `held` out of the parts as queries (`detail`: every context row's; `routes`: each
        member's routing of the held rows), member by member, each member's target statistics and stacked models
        fitted when it is reached. Stop after the first member that changes the blended predictions of the held
        rows by less than MEMBER_TOL (`members.MemberChoice`), and keep the members read; after SURE_ONES in a row
        chose weight 1, or one chose it clearly (`Blend.clear`), read for their stacked models alone (fitted on every
        context row), as `steps` expects after each blend. Returns the blend (None: no run has a stacked model). Only
        context rows are read, so the number of members never depends on the query rows. Where the runs have stacked
        models, `steps` is told from the start whether the predictions would read the engine (`progress.blend_note`)."""
        xq, own, alone, shared = self.context_[held], detail[held], self._fits_alone(), {}
        self.run_inputs_, outputs, changes, blend, engine, ones = [], [], [], None, 0, 0
        if self._one_target(self._ovr_classes()[0], classification):         # the runs have stacked models
            steps.note(blend_note(None, self._one_reads_some()))        # whether the predictions read the engine
        member_runs = [runner.count_runs([m], [r], self.device) for m, r in zip(self.members_, routes)]
        for k, (m, route) in enumerate(zip(self.members_, routes)):
            settled = ones >= SURE_ONES
            self.run_inputs_.append(self._fit_member_inputs(m, alone[m.index], detail, classification, steps, shared,
                                                            held, settled))
            outputs.append(self._member_output(m, route, xq, own, held, None) if settled else
                           self._held_output(m, route, xq, own, held, outputs, steps))
            if not settled:
                blend, engine = self._choose_blend(outputs, held), engine + 1
                ones = 0 if blend is None or blend.weight < 1.0 else SURE_ONES if blend.clear else ones + 1
                steps.expect(engine_runs_expected(member_runs, k + 1, ones) * len(self._ovr_classes()))
            if len(outputs) > 1:
                w = 0.0 if blend is None else blend.weight
                changes.append(prediction_change(self._combine(outputs[:-1], w), self._combine(outputs, w)))
                if changes[-1] < MEMBER_TOL:
                    break
        self.member_choice_ = MemberChoice(len(outputs), len(self.members_), changes, len(held), engine)
        self.members_ = self.members_[:len(outputs)]
        return blend

    def _held_output(self, m: Member, route: np.ndarray | None, xq: np.ndarray, own: UnclippedRows, held: np.ndarray,
                     before: list[tuple[np.ndarray, np.ndarray]], steps: StepCounter) -> tuple[np.ndarray, np.ndarray]:
        """Member m's `_member_output` for the `held` rows xq, read in chunks of its local parts (`runner.part_chunks`:
        the same runs); after each chunk, `steps` is told whether the blend on the rows read so far, with the outputs
        of the members `before`, clearly keeps the stacked models alone or not (`blend.clear_side`), in the words of
        `progress.blend_note`."""
        if route is None or all(r.stacked is None for inputs in self.run_inputs_ for r in inputs.values()):
            return self._member_output(m, route, xq, own, held, steps)        # one read; no blend to tell of
        chunks, out = runner.part_chunks(route, self.device), None
        for i, rows in enumerate(chunks):
            got = self._member_output(m, route[rows], xq[rows], own[rows], held[rows], steps)
            out = out or tuple(np.empty((len(held),) + g.shape[1:], g.dtype) for g in got)
            for whole, part in zip(out, got):
                whole[rows] = part
            read = np.concatenate(chunks[:i + 1])
            outs = [(p[read], s[read]) for p, s in [*before, out]]
            side = clear_side(lambda w: self._row_loss(self._combine(outs, w), self.y_[held[read]]))
            steps.note(blend_note(side, self._one_reads_some()))
        return out

    def _choose_blend(self, outputs: list[tuple[np.ndarray, np.ndarray]], held: np.ndarray) -> Blend | None:
        """The blend's weight for the members' `outputs` on the `held` rows; None where no run has a stacked
        model."""
        if all(np.isnan(s).all() for _, s in outputs):
            return None
        return choose_blend(lambda w: self._row_loss(self._combine(outputs, w), self.y_[held]), self._one_reads_some())

    def _unexplained(self) -> float | None:
        """The share of the labels' variance the stacked models leave unexplained out of fold, which sets the prior
        blend's weight (`blend.prior_blend`); None: the prior weight alone (a class label's)."""
        return None

    def _weight(self) -> float:
        """The stacked model's weight in the blend (0 where there is none)."""
        return 0.0 if self.blend_ is None else self.blend_.weight

    def _engine_settings(self) -> runner.EngineSettings:
        """The device, precision and kept context states of every engine run."""
        settings = super()._engine_settings()
        settings.cache = self._states
        return settings

    def _ovr_classes(self) -> list[int | None]:
        """The labellings of the context the runs read: None for the target itself; the classifier's
        one-vs-rest runs read class c against the rest (c)."""
        return [None]

    def _labels(self, cls: int | None) -> np.ndarray:
        """The context's labels: the target (cls None), or 1 for class cls and 0 for the rest."""
        return self.y_ if cls is None else (self.y_ == cls).astype(np.int64)

    def _fits_alone(self) -> list[bool]:
        """Per member, whether it fits its own target statistics and stacked models (a capped context, or one longer
        than STOP_ROWS) rather than share one fit per labelling and power scale with the others."""
        n = len(self.context_)
        return [len(m.rows) < n or n > STOP_ROWS for m in self.members_]

    def _n_fits(self) -> int:
        """The fits `_fit_member_inputs` makes for every member."""
        alone, classes = self._fits_alone(), self._ovr_classes()
        shared = {(cls, self._power(m)) for m, a in zip(self.members_, alone) if not a for cls in classes}
        return sum(alone) * len(classes) + len(shared)

    def _fit_member_inputs(self, m: Member, alone: bool, detail: UnclippedRows, classification: bool,
                           steps: StepCounter, shared: dict[tuple, RunInputs], held: np.ndarray | None = None,
                           held_only: bool = False) -> dict[int | None, RunInputs]:
        """Member m's target statistics and stacked model for every labelling (`run_inputs.py`), fitted on every
        context row with its `detail` (the member's own rows first, in its order: `_fit_order`), also where the
        member reads only some of them: then out-of-fold values are made for its rows and the `held` ones alone,
        which are all its runs read. A member that reads every row of a context of at most `STOP_ROWS` rows
        (not `alone`) takes the fit per labelling and power scale in `shared`, made by the first member that needs
        it and reordered to its rows; others fit their own (docs/decisions/0025-fitted-once.md), out of fold for the
        `held` rows alone with `held_only` (a member no engine reads)."""
        power, name, order = self._power(m), f"member {m.index + 1}/{len(self.members_)}", self._fit_order(m)
        beside = self._beside(len(m.features), held)
        if alone:
            own, read = detail[order], positions(order)[held] if held_only else None
            if not held_only and len(m.rows) < len(self.context_):
                read = np.arange(len(m.rows)) if held is None else np.union1d(np.arange(len(m.rows)),
                                                                              positions(order)[held])
            return {cls: self._fit_run_inputs(order, m.features, m.seed, power, cls, own, classification, steps, name,
                                              read, beside)
                    for cls in self._ovr_classes()}
        mine = {}
        for cls in self._ovr_classes():
            if (cls, power) not in shared:
                shared[cls, power] = self._fit_run_inputs(np.arange(len(self.context_)), m.features, m.seed, power,
                                                          cls, detail, classification, steps, "all members", None,
                                                          beside)
            mine[cls] = shared[cls, power].reordered(order, m.features)
        return mine

    def _fit_order(self, m: Member) -> np.ndarray:
        """Every context row: member m's rows in its order, then those it does not read, in table order."""
        unread = np.ones(len(self.context_), bool)
        unread[m.rows] = False                     # a mask rather than setdiff1d's sort: 1M rows, three times a fit
        return np.concatenate([m.rows, np.flatnonzero(unread)])

    def _fit_run_inputs(self, rows: np.ndarray, features: np.ndarray, seed: int, power: tuple[float, float] | None,
                        cls: int | None, detail: UnclippedRows, classification: bool, steps: StepCounter,
                        name: str, read: np.ndarray | None = None, beside: bool = False) -> RunInputs:
        """The target statistics (where the labels are one target: numbers, or 0/1) and stacked model of the
        context `rows` (with their `detail`) under labelling `cls`, for a member reading `features`, out of fold for
        the `read` ones of them (None: all), with `beside` the other kind's model too (`_beside`); its start and end
        reported to `steps` under `name`, and each fit of the tree model's folds."""
        say = steps.callback(name if cls is None else f"{name}, class {cls + 1}/{len(self._ovr_classes())}", fit=True)
        if say is not None:
            say(0, 1, f"{CLASSICAL[0]} on the context")
        labels = self._labels(cls)[rows]
        nominal = self.preprocessor_.nominal_ if self._one_target(cls, classification) else np.empty(0, np.int64)
        tick = None if say is None else lambda k, n: say(k, n, f"{CLASSICAL[0]} ({int(k)} of {n} tree fits)")
        inputs = fit_run_inputs(self.context_[rows], detail, labels, features, nominal, classification, self.view,
                                seed, power, torch.get_num_threads(), read, beside, tick)
        if say is not None:
            say(1, 1, CLASSICAL[1])
        return inputs

    def _one_target(self, cls: int | None, classification: bool) -> bool:
        """Whether the labels under labelling `cls` are one target (numbers, or 0/1), which target statistics and a
        stacked model read: classes 0..k-1 are, where k <= 2."""
        return not classification or cls is not None or self.y_.max(initial=0) <= 1

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

    # ----------------------------------------------------------------------------------- predict

    def _predicted(self, X: Any) -> np.ndarray:
        """The members' combined output for every row of X, scored and combined QUERY_BATCH rows at a time under
        one progress stream: what a call holds beyond X's preprocessed rows does not grow with their number, and
        since a row's output depends on its own values alone, the batches change no number."""
        xq, detail = self._query_rows(X)
        if stacked_alone(self.blend_, (r.stacked for inputs in self.run_inputs_ for r in inputs.values())):
            return self._combine([self._member_output(m, None, xq, detail, None, None) for m in self.members_], 1.0)
        routes = self._routes(xq)
        batches = [slice(i, i + QUERY_BATCH) for i in range(0, max(len(xq), 1), QUERY_BATCH)]
        batch_routes = [[None if r is None else r[b] for r in routes] for b in batches]
        steps = StepCounter(self.progress, sum(runner.count_runs(self.members_, r, self.device) for r in batch_routes)
                            * len(self._ovr_classes()))
        return np.concatenate([self._combine(self._outputs(xq[b], detail[b], r, steps), self._weight())
                               for b, r in zip(batches, batch_routes)])

    def _outputs(self, xq: np.ndarray, detail: UnclippedRows, routes: list[np.ndarray | None] | None = None,
                 steps: StepCounter | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per member: the engine's output for the query rows xq (`routes`, else `_routes`) and the stacked model's."""
        routes = self._routes(xq) if routes is None else routes
        steps = steps or StepCounter(self.progress, runner.count_runs(self.members_, routes, self.device)
                                     * len(self._ovr_classes()))
        return [self._member_output(m, route, xq, detail, None, steps) for m, route in zip(self.members_, routes)]

    def _query_rows(self, X: Any) -> tuple[np.ndarray, UnclippedRows]:
        """Standardised query rows and their detail."""
        check_is_fitted(self, "members_")
        frame = self._query_frame(X, "query")
        detail = self.preprocessor_.detail(frame, "query")
        self.preprocessor_.warn_unreadable(frame, detail.values, "query")
        return detail.clipped(), detail

    def _routes(self, xq: np.ndarray) -> list[np.ndarray | None]:
        """Each member's routing of the standardised query rows to its local parts (None: its whole context)."""
        return [None if m.local is None else m.local.route(xq[:, m.features]) for m in self.members_]

    def _run_matrices(self, m: Member, cls: int | None, xq: np.ndarray, detail: UnclippedRows,
                      held: np.ndarray | None) -> RunMatrices:
        """Member m's matrices under labelling `cls`, its fitted target statistics and stacked model applied
        (`run_inputs_`). `held` gives the context row of each query row when the queries are context rows held
        out of the parts: they read their cross-fitted values, whether the member reads them or not."""
        inputs, order, n = self.run_inputs_[m.index][cls], self._fit_order(m), len(m.rows)
        need = np.arange(n) if held is None else np.concatenate([np.arange(n), positions(order)[held]])
        values = inputs.context(self.context_[order[need]], need)  # the member's rows (then held ones'), out of fold
        q = inputs.queries(xq, detail) if held is None else values[n:]
        stacked = inputs.stacked       # the blend reads its prediction, recalibrated; the runs, its column clipped
        own = np.full(len(q), np.nan) if stacked is None else stacked.predicted(q[:, 0])
        return RunMatrices(inputs.clipped(values[:n]), inputs.labels(self._labels(cls)[m.rows]), inputs.clipped(q), own)
