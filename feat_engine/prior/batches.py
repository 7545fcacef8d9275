"""Training batches: tables from the SCM prior or from real tables, split into context and
query rows, standardised with context statistics, masked for reconstruction.

Batch `index` of a run with seed `seed` is a pure function of (seed, index), so a resumed
run regenerates exactly the batches it had not consumed. `BatchStream` builds them in
a worker process so that generation does not stall the training step.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
from dataclasses import dataclass, replace

import numpy as np
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from ..config import PriorConfig
from ..preprocess import CLIP, standardise
from ..reading.members import ranked_features
from ..reading.quantile_transform import quantile_normal
from ..reading.relevance import relevance
from ..reading.stacked_model import fit_additive_model
from ..reading.target_stats import with_target_stats
from .masks import make_mask
from .real import TableRef, allowlist, sample_real_task
from .scm import sample_scm


@dataclass
class Batch:
    """B tables of N rows and D features; the first n_ctx rows are context."""

    x: np.ndarray            # (B, N, D) float32 model input: NaN where missing or masked
    x_true: np.ndarray       # (B, N, D) float32 standardised truth, NaN where never observed
    recon: np.ndarray        # (B, N, D) bool: cells hidden for reconstruction
    y: np.ndarray            # (B, N) float32 targets (class index, or standardised value)
    n_ctx: int
    task: str | None         # 'classification', 'regression' or None (imputation only)
    n_classes: np.ndarray    # (B,) int
    source: str              # 'scm' or 'real'


def _has_signal(X: np.ndarray, y: np.ndarray, n_ctx: int, task: str) -> bool:
    """Does a depth-3 tree fitted on the context beat a constant on the queries?"""
    Xf = np.nan_to_num(X, nan=0.0)
    if task == "classification":
        tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(Xf[:n_ctx], y[:n_ctx])
        base = np.mean(y[n_ctx:] == np.bincount(y[:n_ctx].astype(int)).argmax())
        return tree.score(Xf[n_ctx:], y[n_ctx:]) > base + 0.02
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(Xf[:n_ctx], y[:n_ctx])
    return tree.score(Xf[n_ctx:], y[n_ctx:]) > 0.02


def _shape(rng: np.random.Generator, cfg: PriorConfig, tokens: int) -> tuple[int, int, int, int]:
    """(N, D, n_ctx, B): rows log-uniform, small feature counts oversampled, B by a token budget."""
    n = int(np.exp(rng.uniform(np.log(cfg.min_rows), np.log(cfg.max_rows))))
    d = cfg.min_features + int((cfg.max_features - cfg.min_features + 1) * rng.uniform() ** 1.5)
    d = min(d, cfg.max_features)
    n_ctx = int(np.clip(rng.uniform(cfg.min_ctx_frac, cfg.max_ctx_frac) * n, 8, n - cfg.min_query))
    return n, d, n_ctx, _tables(tokens, n, d + 1)


def _tables(tokens: int, n: int, width: int) -> int:
    """Tables of n rows and `width` tokens a row (features and label) in a batch of about `tokens` cells;
    one when a table alone passes the budget."""
    return int(np.clip(tokens // (n * width), 1, 64))


def _n_classes(rng: np.random.Generator, cfg: PriorConfig) -> int:
    return 2 if rng.uniform() < cfg.p_binary else int(rng.integers(3, cfg.max_classes + 1))


def _compact_labels(y: np.ndarray, n_ctx: int) -> tuple[np.ndarray, int] | None:
    """Relabel to 0..K-1 over the classes present; None if a class is missing from the context
    or fewer than two remain."""
    present = np.unique(y)
    if len(present) < 2 or not np.isin(present, y[:n_ctx]).all():
        return None
    return np.searchsorted(present, y).astype(float), len(present)


LOCAL_POOL = 4              # a local part is drawn from a table this many times larger (at least)
LOCAL_POOL_ROWS = 65_536    # rows of the table a part is cut from, at most (bounds the time a draw takes)


def _pool(rng: np.random.Generator, cfg: PriorConfig, n: int) -> int:
    """How many times larger than its n rows the table a local part is cut from is: LOCAL_POOL, or with
    `max_local_pool` above it log-uniform up to that (and LOCAL_POOL_ROWS rows). At inference a part of
    1,024 rows is 1 / 2 to 1 / 500 of its context, not a fixed quarter."""
    top = min(cfg.max_local_pool, LOCAL_POOL_ROWS // n)
    if top <= LOCAL_POOL:
        return LOCAL_POOL
    return int(round(np.exp(rng.uniform(np.log(LOCAL_POOL), np.log(top)))))


def local_part(X: np.ndarray, n: int, nominal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of the n rows nearest a random row, in the standardised feature space with the
    nominal columns left out (their codes have no order) and NaN at the mean: the kind of
    part the estimators' local contexts hand the model (`reading/local_parts.py`)."""
    z = np.nan_to_num(standardise(X, len(X)), nan=0.0)
    z[:, nominal] = 0.0
    dist = ((z - z[int(rng.integers(len(z)))]) ** 2).sum(1)
    return np.argpartition(dist, n - 1)[:n]


def _table(rng, cfg, refs, real: bool, task: str, n: int, d: int, n_ctx: int, wide: bool = False):
    """One (X, y, n_classes, nominal feature indices) table or None when the draw is rejected. A `wide`
    table is drawn with more than d features and cut to d by relevance (`_ranked`)."""
    d_raw = int(rng.integers(d + 1, cfg.max_wide_features + 1)) if wide else d
    if real:
        t = sample_real_task(rng, refs, task, n, d_raw, cfg.max_classes)
        if t is None:
            return None
    else:
        local = cfg.p_local > 0 and rng.uniform() < cfg.p_local
        t = sample_scm(rng, _pool(rng, cfg, n) * n if local else n, d_raw, task, _n_classes(rng, cfg),
                       cfg.p_categorical_table, cfg.p_missing_table, cfg.max_missing_rate, cfg.p_additive, cfg.p_linear,
                       cfg.p_tree, cfg.p_nominal)
        if local:
            rows = local_part(t.X, n, t.nominal, rng)
            t = replace(t, X=t.X[rows], y=t.y[rows])
    perm, fperm = rng.permutation(n), rng.permutation(d_raw)
    X, y = t.X[perm][:, fperm], t.y[perm]
    nominal = np.flatnonzero(np.isin(fperm, t.nominal))
    k = 0
    if task == "classification":
        out = _compact_labels(y, n_ctx)
        if out is None:
            return None
        y, k = out
    if d_raw > d:
        X, nominal = _ranked(X, y, n_ctx, task, nominal, d, rng)
    if not real and not _has_signal(X, y, n_ctx, task) and rng.uniform() < 0.9:
        return None
    return X, y, k, nominal


def _ranked(X: np.ndarray, y: np.ndarray, n_ctx: int, task: str, nominal: np.ndarray, width: int,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The `width` columns an estimator's member takes from a wider table: relevance scored on the context
    rows (`reading/relevance.py`), then the most relevant and a relevance-weighted draw of the rest in a
    random order (`reading/members.py`'s `ranked_features`, as `plan_members` calls it); and the nominal
    columns' new positions."""
    score = relevance(standardise(X, n_ctx)[:n_ctx], y[:n_ctx], task == "classification", nominal,
                      int(rng.integers(2**31 - 1)))
    feats = rng.permutation(ranked_features(score, width, rng))
    return X[:, feats], np.flatnonzero(np.isin(feats, nominal))


def _with_view(Xs: np.ndarray, y: np.ndarray, n_ctx: int, task: str, seed: int) -> np.ndarray:
    """The standardised table with the additive stacked model's prediction (`reading/stacked_model.py`'s
    `fit_additive_model`, cross-fitted on the context rows) as its first column, as the estimators' runs read
    a stacked model; a column of zeros where it cannot be fitted (a class with a single context row). The
    boosted trees, which the estimators' runs may read instead, are not drawn yet
    (docs/decisions/0010-prior.md and docs/decisions/0022-stacked-model.md)."""
    view = fit_additive_model(Xs[:n_ctx], y[:n_ctx], task == "classification", seed)
    col = np.zeros(len(Xs), np.float32)
    if view is not None:
        col[:n_ctx], col[n_ctx:] = view.context, view.queries(Xs[n_ctx:])
    return np.column_stack([np.clip(col, -CLIP, CLIP), Xs])


def _one_vs_rest(y: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """A multiclass table's labels as one of its one-vs-rest runs reads them: a random class against the
    rest (every class is in the context, so both labels are)."""
    if k <= 2:
        return y, k
    return (y == rng.integers(k)).astype(float), 2


def make_batch(seed: int, index: int, cfg: PriorConfig, refs: list[TableRef] | None, tokens: int = 49152) -> Batch:
    """Batch `index` of the stream with `seed`: deterministic in (seed, index). A share `p_view` of the
    supervised batches hand each table over with the additive stacked model's prediction as its first
    column (multiclass tables as one-vs-rest runs) and `p_wide` draw their tables with more features than
    the batch's width, cut to it by relevance: what the estimators hand the model."""
    rng = np.random.default_rng([seed, index])
    n, d, n_ctx, b = _shape(rng, cfg, tokens)
    impute_only = rng.uniform() < cfg.p_impute_only
    task = "classification" if rng.uniform() < cfg.p_classification else "regression"
    real = bool(refs) and rng.uniform() < cfg.p_real
    view = not impute_only and cfg.p_view > 0 and rng.uniform() < cfg.p_view
    wide = not impute_only and cfg.p_wide > 0 and rng.uniform() < cfg.p_wide
    if wide:              # the width a member of a wider table reads: the model's, less the stacked model's slot
        d = cfg.max_features - view
        b = _tables(tokens, n, d + 1 + view)
    elif view and d == cfg.max_features:
        d -= 1
    if impute_only:
        n_ctx = n
    tables = []
    for _ in range(50 * b):
        if len(tables) == b:
            break
        t = _table(rng, cfg, refs, real, task, n, d, n_ctx if not impute_only else max(8, n // 2), wide)
        if t is None and real:
            real = len(tables) > 0 and rng.uniform() < 0.5   # this shape fits few real tables
            continue
        if t is not None:
            tables.append(t)
    if len(tables) < b:   # could not fill the batch: fall back to more synthetic draws
        return make_batch(seed, index + 1_000_003, cfg, refs, tokens)

    xs, xt, rec, ys, ks = [], [], [], [], []
    lo, hi = cfg.mask_rate
    quantile = not impute_only and cfg.p_quantile > 0 and rng.uniform() < cfg.p_quantile  # as odd members read
    for X, y, k, nominal in tables:
        Xs = standardise(X, n_ctx)
        y = y if task == "classification" else _standardise_target(y, n_ctx)
        if view:
            y, k = _one_vs_rest(y, k, rng)
        if not impute_only and k <= 2 and len(nominal):    # as the estimators hand nominal columns over
            Xs[:n_ctx], Xs[n_ctx:] = with_target_stats(Xs[:n_ctx], y[:n_ctx], Xs[n_ctx:], X[:n_ctx, nominal],
                                                       X[n_ctx:, nominal], nominal, int(rng.integers(2**31 - 1)))
        if view:
            Xs = _with_view(Xs, y, n_ctx, task, int(rng.integers(2**31 - 1)))
        if quantile:
            Xs[:n_ctx], Xs[n_ctx:] = quantile_normal(Xs[:n_ctx], Xs[n_ctx:])
        ys.append(y)
        rate = rng.uniform(lo, hi) if not impute_only else rng.uniform(0.1, 0.3)
        w = Xs.shape[1]
        m = np.zeros((n, w), dtype=bool)
        if n_ctx < n:
            m[n_ctx:] = make_mask((n - n_ctx, w), rate, rng, cfg.mask_mix)
            m[:n_ctx] = make_mask((n_ctx, w), rate / 2, rng, cfg.mask_mix)
        else:
            m[:] = make_mask((n, w), rate, rng, cfg.mask_mix)
        m &= np.isfinite(Xs)
        m[:, 0] &= not view                               # the stacked model's column is never missing in a run
        xin = Xs.copy()
        xin[m] = np.nan
        xs.append(xin), xt.append(Xs), rec.append(m), ks.append(k)
    return Batch(
        x=np.stack(xs).astype(np.float32), x_true=np.stack(xt).astype(np.float32), recon=np.stack(rec),
        y=np.stack(ys).astype(np.float32), n_ctx=n_ctx, task=None if impute_only else task,
        n_classes=np.asarray(ks, dtype=np.int64), source="real" if real else "scm",
    )


def _standardise_target(y: np.ndarray, n_ctx: int) -> np.ndarray:
    mu, sd = y[:n_ctx].mean(), y[:n_ctx].std()
    return (y - mu) / (sd if sd > 1e-8 else 1.0)


PARENT_CHECK_S = 1.0    # a worker waiting on a full queue checks this often that its run is still alive


def _worker(seed: int, start: int, step: int, cfg_dict: dict, use_real: bool, tokens: int, out: mp.Queue) -> None:
    """Build batches start, start + step, ... into `out` until the process that started this one is gone
    (a run killed with SIGKILL runs no exit handler, so its workers must notice it themselves)."""
    cfg = PriorConfig.from_dict(cfg_dict)
    refs = allowlist() if use_real else None
    parent = mp.parent_process()
    out.cancel_join_thread()        # at exit, do not wait to flush batches nobody will read
    i = start
    while parent is None or parent.is_alive():
        b = make_batch(seed, i, cfg, refs, tokens)
        while True:
            try:
                out.put((i, b), timeout=PARENT_CHECK_S)
                break
            except queue.Full:
                if parent is not None and not parent.is_alive():
                    return
        i += step


class BatchStream:
    """Batches start, start+stride, ... in order, built by `workers` background processes."""

    def __init__(self, seed: int, start: int, cfg: PriorConfig, workers: int = 1, stride: int = 1,
                 offset: int = 0, use_real: bool = True, tokens: int = 49152, prefetch: int = 8):
        ctx = mp.get_context("spawn")
        self.q: mp.Queue = ctx.Queue(maxsize=prefetch)
        self.next = start * stride + offset
        self.stride = stride
        self.pending: dict[int, Batch] = {}
        old = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.procs = [
            ctx.Process(target=_worker, args=(seed, self.next + w * stride, workers * stride, cfg.to_dict(), use_real, tokens, self.q), daemon=True)
            for w in range(workers)
        ]
        for p in self.procs:
            p.start()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def get(self, timeout: float = 600.0) -> Batch:
        """The next batch in index order."""
        while self.next not in self.pending:
            try:
                i, b = self.q.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError("prior worker produced nothing in time") from None
            self.pending[i] = b
        b = self.pending.pop(self.next)
        self.next += self.stride
        return b

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
