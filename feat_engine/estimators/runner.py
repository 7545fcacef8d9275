"""The estimators' one door to the engine: route query rows to a member's local parts, batch the parts into
engine runs, standardise each part as the prior's tables are, and make the call (`engine_call`). Tests that
watch what the engine reads patch `run_tables` here.

A query row is routed by its own features alone, and a batch is a fixed run of consecutive parts whatever the
queries, so a query's prediction never depends on the other query rows (docs/decisions/0015-local-parts.md).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from scipy.special import softmax

from ..config import InferenceConfig
from ..inference import StateCache, map_runs, run, run_tables, runs_at_once, tables_per_run
from ..model import FEAT
from ..preprocess import standardise
from ..progress import ENGINE_PACE, Progress, StepCounter, engine_seconds
from ..reading.local_parts import LocalContexts
from ..reading.members import Member
from ..reading.quantile_transform import quantile_normal


@dataclass
class EngineSettings:
    """The device, arithmetic and kept context states (None: none kept) of an estimator's engine runs."""

    device: str
    cfg: InferenceConfig
    cache: StateCache | None = None


@dataclass
class MemberRun:
    """What one member's engine runs under one labelling read besides the tables: the model, the task (`n_classes`
    head slots for classification, 0 for regression), whether the member reads the quantile transform, the name
    its progress reports carry, and whether the labelling is one class against the rest (then a table whose context
    holds no row of the class is not read: `absent_class`)."""

    model: FEAT
    member: Member
    n_classes: int
    quantile: bool
    settings: EngineSettings
    name: str
    one_vs_rest: bool = False


def part_batches(parts: np.ndarray, n_parts: int, device: str) -> list[range]:
    """The engine runs that read the local `parts` some query is routed to: each run reads `tables_per_run`
    consecutive parts (one on a CPU), the same batch whatever the queries."""
    size = tables_per_run(device)
    return [range(b * size, min(n_parts, (b + 1) * size)) for b in np.unique(np.asarray(parts) // size)]


CHUNKED_BATCHES = 32         # a read of at least this many batches of parts is told in chunks (`part_chunks`)
CHUNKS = (1 / 16, 1 / 8, 1 / 4, 1 / 2)  # ... whose first batches hold these shares of them


def part_chunks(route: np.ndarray, device: str) -> list[np.ndarray]:
    """The query rows routed by `route` (their indices), in chunks of consecutive batches of parts (`part_batches`),
    the chunks beginning at the CHUNKS shares of the batches reached; one chunk under CHUNKED_BATCHES batches. Read
    chunk by chunk, the engine makes the same runs as in one read, and the caller can tell what it found after each."""
    batch = np.asarray(route) // tables_per_run(device)
    reached = np.unique(batch)
    if len(reached) < CHUNKED_BATCHES:
        return [np.arange(len(batch))]
    chunk = np.searchsorted(np.asarray(CHUNKS) * len(reached), np.searchsorted(reached, batch), side="right")
    return [np.flatnonzero(chunk == c) for c in range(len(CHUNKS) + 1)]


def count_runs(members: list[Member], routes: list[np.ndarray | None], device: str) -> int:
    """Engine runs that reading queries routed by `routes` takes, over all members (`member_output`)."""
    return sum(1 if r is None else len(part_batches(np.unique(r), len(m.local.parts), device))
               for m, r in zip(members, routes))


def fit_steps(progress: Progress | None, members: list[Member], routes: list[np.ndarray] | None, device: str,
              labellings: int, fits: int) -> StepCounter:
    """One progress stream over a fit's `fits` classical-model fits and the engine runs that read its held rows
    (each member's `routes`, None where none are held, under each of `labellings`), these expected to take the
    seconds their cells take at the engine's pace (`progress.engine_seconds`) until one is timed."""
    if routes is None:
        return StepCounter(progress, fits, fits)
    runs, cells = count_runs(members, routes, device), count_cells(members, routes, device)
    seconds = engine_seconds(cells * labellings, runs_at_once(runs, device))
    return StepCounter(progress, fits + runs * labellings, fits, seconds)


def count_cells(members: list[Member], routes: list[np.ndarray], device: str) -> int:
    """Cells those runs read (`progress.ENGINE_PACE`'s unit): the rows of each batch of parts reached and the queries
    routed there, times the member's features + 1."""
    return sum(_cells(m, part_batches(np.unique(r), len(m.local.parts), device), len(r))
               for m, r in zip(members, routes))


def _cells(member: Member, batches: list[range], queries: int) -> int:
    """Cells the member's runs on these batches of its local parts read, with `queries` rows routed to them."""
    return (sum(len(member.local.parts[p]) for b in batches for p in b) + queries) * (len(member.features) + 1)


def member_output(run: MemberRun, route: np.ndarray | None, ctx: np.ndarray, labels: np.ndarray, q: np.ndarray,
                  steps: StepCounter) -> np.ndarray:
    """The member's output for every query row of q: one engine run on its whole context (route None), or one per
    batch of the local parts that some query row is routed to, the batches on all cores (`map_runs`). The seconds
    per cell read go to `ENGINE_PACE`, by the runs read at once."""
    began = time.monotonic()
    if route is None:
        out = engine_call(run, [ctx], [labels], [q], steps.callback(run.name))[0]
        ENGINE_PACE[1].add(time.monotonic() - began, (len(ctx) + len(q)) * (len(run.member.features) + 1))
        return out
    local: LocalContexts = run.member.local
    order = np.argsort(route, kind="stable")               # queries grouped by part: O(M log M)
    parts, starts = np.unique(route[order], return_index=True)
    asked = dict(zip(parts.tolist(), np.split(order, starts[1:])))
    batches, size = part_batches(parts, len(local.parts), run.settings.device), tables_per_run(run.settings.device)
    noun = "part" if size == 1 else "batch of parts"      # numbered among all of the member's, reached or not
    jobs = [([local.parts[p] for p in b], [asked.get(p, order[:0]) for p in b],
             f"{run.name}, {noun} {b.start // size + 1}/{-(-len(local.parts) // size)}") for b in batches]
    read = partial(_read_parts, run, ctx, labels, q, steps)
    outs = [r for rs in map_runs(read, jobs, run.settings.device, steps.flush) for r in rs]
    out = np.empty((len(q),) + outs[0].shape[1:], outs[0].dtype)
    for p, r in zip([p for b in batches for p in b], outs):
        if p in asked:
            out[asked[p]] = r
    at_once = runs_at_once(len(batches), run.settings.device)
    ENGINE_PACE[at_once].add(time.monotonic() - began, _cells(run.member, batches, len(q)))
    return out


def _read_parts(run: MemberRun, ctx: np.ndarray, labels: np.ndarray, q: np.ndarray, steps: StepCounter,
                job: tuple[list[np.ndarray], list[np.ndarray], str]) -> list[np.ndarray]:
    """One engine run on a batch of local parts (their context rows, the query rows routed to each), read as the
    prior's tables are: each part's features (and regression target) standardised with its own context
    statistics, predictions mapped back."""
    rows, asked, name = job
    zs = [standardise(np.vstack([ctx[r], q[a]]), len(r)) for r, a in zip(rows, asked)]
    ctxs, qs = [z[:len(r)] for z, r in zip(zs, rows)], [z[len(r):] for z, r in zip(zs, rows)]
    ys = [labels[r] for r in rows]
    if run.n_classes:
        return engine_call(run, ctxs, ys, qs, steps.callback(name))
    mus = [float(y.mean()) for y in ys]
    sds = [sd if sd > 1e-8 else 1.0 for sd in (float(y.std()) for y in ys)]
    outs = engine_call(run, ctxs, [(y - mu) / sd for y, mu, sd in zip(ys, mus, sds)], qs, steps.callback(name))
    return [o * sd + mu for o, mu, sd in zip(outs, mus, sds)]


def absent_class(n_context: int, n_queries: int) -> np.ndarray:
    """(M, 2) probabilities of "the rest" and "the class" where a one-vs-rest context of n rows holds no row of its
    class: the rule of succession, 1 / (n + 2), for the class. The engine is not read there; its own answer on
    such contexts is as small (median 0.002 at 1,024 rows on texture; docs/decisions/0026-one-vs-rest-classes.md)."""
    p = 1.0 / (n_context + 2)
    return np.tile([1.0 - p, p], (n_queries, 1))


def engine_call(run: MemberRun, ctxs: list[np.ndarray], ys: list[np.ndarray], qs: list[np.ndarray],
                progress: Progress | None) -> list[np.ndarray]:
    """One engine run on tables of one shape: each table's (M, k) class probabilities or (M,) predictions.
    A member in the quantile transform reads each table's numbers through it. For classification, class c
    sits in head slot (c + member index) mod k, so that across members every class visits every slot. A
    one-vs-rest table whose context holds no row of its class is not read (`absent_class`)."""
    present = [bool((y == 1).any()) for y in ys] if run.one_vs_rest else [True] * len(ys)
    if not all(present):
        out = [absent_class(len(y), len(q)) for y, q in zip(ys, qs)]
        read = np.flatnonzero(present)
        if len(read):
            tables = ([xs[i] for i in read] for xs in (ctxs, ys, qs))
            for i, o in zip(read, engine_call(replace(run, one_vs_rest=False), *tables, progress)):
                out[i] = o
        elif progress is not None:      # the run counts as done in the progress stream
            progress(1, 1, "no context row of the class here, nothing to read")
        return out
    if run.quantile:
        transformed = [quantile_normal(c, q) for c, q in zip(ctxs, qs)]
        ctxs, qs = [c for c, _ in transformed], [q for _, q in transformed]
    model, s = run.model, run.settings
    ids = run.member.column_ids(model, ctxs[0].shape[1])
    if not run.n_classes:
        return [r.pred for r in run_tables(model, ctxs, ys, qs, "regression", column_ids=ids, progress=progress,
                                           device=s.device, cfg=s.cfg, cache=s.cache)]
    k = run.n_classes
    slot = (np.arange(k) + run.member.index) % k
    res = run_tables(model, ctxs, [slot[y].astype(np.float32) for y in ys], qs, "classification", n_classes=k,
                     column_ids=ids, progress=progress, device=s.device, cfg=s.cfg, cache=s.cache)
    return [softmax(r.logits[:, :k].astype(np.float64), axis=1)[:, slot] for r in res]


def reconstruction(model: FEAT, table: np.ndarray, member: Member, settings: EngineSettings,
                   progress: Progress | None) -> np.ndarray:
    """The imputation head's (N, D) reconstruction of every cell of `table`, all rows read as unlabelled context."""
    return run(model, table, None, None, None, column_ids=member.column_ids(model), want_recon=True,
               device=settings.device, cfg=settings.cfg, progress=progress).recon
