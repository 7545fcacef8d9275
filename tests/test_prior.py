"""The hybrid SCM prior, real-table tasks and training batches."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from feat_engine.config import PriorConfig
from feat_engine.preprocess import CLIP, standardise
from feat_engine.prior import batches, real
from feat_engine.prior.batches import local_part, make_batch
from feat_engine.prior.scm import (
    SCMTable,
    _additive_teacher,
    _linear_teacher,
    _tree_teacher,
    kumaraswamy_warp,
    prototype_roots,
    sample_scm,
    scale_free_dag,
)


def test_dag_is_acyclic_and_has_hubs():
    rng = np.random.default_rng(0)
    parents = scale_free_dag(300, rng, n_roots=3)
    out_deg = np.zeros(300)
    for j, pa in enumerate(parents):
        assert all(p < j for p in pa)            # topological order => acyclic
        out_deg[pa] += 1
    assert parents[0] == [] and len(parents[10]) >= 1
    # preferential attachment: the biggest hub has far more children than the typical node
    assert out_deg.max() > 8 * np.median(out_deg[out_deg > 0])


def test_prototype_roots_are_clustered_mixtures():
    x = prototype_roots(500, 4, np.random.default_rng(1))
    assert x.shape == (500, 4) and np.isfinite(x).all()


def test_kumaraswamy_warp_is_monotone():
    rng = np.random.default_rng(2)
    v = rng.normal(size=200)
    w = kumaraswamy_warp(v, rng)
    order = np.argsort(v)
    assert np.all(np.diff(w[order]) >= -1e-12)
    assert w.min() > 0 and w.max() < 1


@pytest.mark.parametrize("task,k", [("classification", 2), ("classification", 7), ("regression", 0)])
def test_scm_table(task, k):
    t = sample_scm(np.random.default_rng(3), 300, 8, task, max(k, 2), p_categorical=1.0, p_missing=1.0)
    assert t.X.shape == (300, 8) and t.y.shape == (300,)
    assert np.isnan(t.X).any()                   # p_missing=1: some cells are missing
    assert t.edges.shape == (8, 8) and not np.any(np.diag(t.edges))
    if task == "classification":
        assert set(np.unique(t.y)) <= set(range(k))
    # p_categorical=1: at least one column of small non-negative integer codes
    whole = [np.all(np.mod(c[np.isfinite(c)], 1) == 0) and np.nanmin(c) >= 0 for c in t.X.T]
    assert any(whole)


def test_additive_teacher_has_no_interactions():
    # on a grid of (a, b) pairs, f(a, b) - f(a', b) - f(a, b') + f(a', b') = 0 for a sum of 1-D maps
    rng = np.random.default_rng(5)
    a, b = np.meshgrid(np.linspace(-2, 2, 7), np.linspace(-2, 2, 7), indexing="ij")
    X = np.stack([a.ravel(), b.ravel()], 1)
    for _ in range(20):
        f = _additive_teacher(X, 3, rng).reshape(7, 7, 3)
        mixed = f[1:, 1:] - f[:-1, 1:] - f[1:, :-1] + f[:-1, :-1]
        assert np.abs(mixed).max() < 1e-9 * max(1.0, np.abs(f).max())
        assert np.ptp(f) > 0


def test_additive_share_is_off_by_default_and_changes_tables_when_on():
    base = sample_scm(np.random.default_rng(4), 200, 6, "regression")
    same = sample_scm(np.random.default_rng(4), 200, 6, "regression", p_additive=0.0)
    gam = sample_scm(np.random.default_rng(4), 200, 6, "regression", p_additive=1.0)
    assert np.array_equal(base.y, same.y) and np.array_equal(base.X, same.X, equal_nan=True)
    assert not np.allclose(base.y, gam.y) and np.isfinite(gam.y).all()


def test_linear_teacher_is_exactly_linear_and_dense():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 5))
    f = _linear_teacher(X, 2, rng)
    w, *_ = np.linalg.lstsq(X, f, rcond=None)
    assert np.abs(X @ w - f).max() < 1e-9 and np.all(np.abs(w) > 0)


def test_tree_teacher_is_a_step_function_with_few_steps():
    # on one feature, at most 32 trees x depth 4 thresholds: the output changes value at most 128 times
    rng = np.random.default_rng(7)
    x = np.sort(rng.normal(size=(2000, 1)), axis=0)
    for _ in range(10):
        f = _tree_teacher(x, 1, rng)[:, 0]
        changes = np.count_nonzero(np.diff(f))
        assert 0 < changes <= 128


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_nominal_share_adds_a_many_level_column_that_moves_the_target(task):
    shares = []
    for seed in range(8):
        t = sample_scm(np.random.default_rng(seed), 2000, 5, task, 2, p_categorical=0.0, p_missing=0.0, p_nominal=1.0)
        if len(t.nominal) == 0:      # overwritten by the prior's occasional duplicated or constant column
            continue
        col = t.X[:, t.nominal[0]]
        assert np.all(col == np.round(col)) and len(np.unique(col)) >= 3
        level_mean = pd.Series(t.y).groupby(col).transform("mean").to_numpy()
        shares.append(np.var(level_mean) / np.var(t.y))      # target variance explained by the level
    assert len(shares) >= 5 and np.mean(shares) > 0.15
    off = sample_scm(np.random.default_rng(0), 2000, 5, task, 2, p_categorical=0.0, p_missing=0.0)
    assert len(off.nominal) == 0


def test_batches_hand_nominal_columns_over_as_target_statistics(monkeypatch):
    """A level column whose levels carry the target in random order: its raw codes barely
    correlate with y, its cross-fitted statistics (what the estimators hand the model) do."""
    def table(rng, n, d, task, *args, **kwargs):
        level = rng.integers(0, 12, n)
        X = rng.normal(size=(n, d))
        X[:, 0] = level
        y = rng.normal(size=12)[level] + 0.1 * rng.normal(size=n)
        return SCMTable(X, y, task, 0, np.zeros((d, d), bool), "test", np.array([0]))

    monkeypatch.setattr(batches, "sample_scm", table)
    cfg = PriorConfig(min_rows=200, max_rows=256, min_features=4, max_features=4, p_real=0.0,
                      p_classification=0.0, p_impute_only=0.0)
    for index in range(3):
        bt = make_batch(0, index, cfg, None)
        for x, y in zip(bt.x_true, bt.y):
            ctx = slice(0, bt.n_ctx)
            corr = [abs(np.corrcoef(x[ctx, j], y[ctx])[0, 1]) for j in range(x.shape[1])]
            assert max(corr) > 0.9


def test_local_part_is_the_rows_nearest_one_row_ignoring_nominal_columns():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 3)) * [1.0, 10.0, 1.0]
    X[:, 2] = rng.integers(0, 50, 400)                       # nominal codes: no order, not a distance
    rows = local_part(X, 100, np.array([2]), np.random.default_rng(9))
    centre = int(np.random.default_rng(9).integers(400))
    z = (X[:, :2] - X[:, :2].mean(0)) / X[:, :2].std(0)
    d = ((z - z[centre]) ** 2).sum(1)
    assert set(rows) == set(np.argsort(d)[:100]) and centre in rows
    assert np.all(X[rows, :2].std(0) < 0.8 * X[:, :2].std(0))   # a part is narrower than the table


def test_local_share_builds_batches_of_parts(monkeypatch):
    """Parts are cut from tables 4x larger, or with `max_local_pool` from tables up to that many times larger
    (a spread of sizes, as a part of 1,024 rows is of contexts of 2,048 to 500,000 rows at inference)."""
    drawn, sample = [], batches.sample_scm

    def spy(rng, n, d, *args, **kwargs):
        drawn.append(n)
        return sample(rng, n, d, *args, **kwargs)
    monkeypatch.setattr(batches, "sample_scm", spy)
    cfg = PriorConfig(min_rows=100, max_rows=128, max_features=6, p_real=0.0, p_local=1.0)
    for pool in (4, 64):
        ratios = []
        for i in range(6):
            drawn.clear()
            bt = make_batch(3, i, replace(cfg, max_local_pool=pool), None)
            assert bt.x.shape[:2] == bt.y.shape and np.isfinite(bt.y).all()
            ratios += [m / bt.x.shape[1] for m in drawn]
        if pool == 4:
            assert set(ratios) == {4.0}
        else:
            assert min(ratios) >= 3.5 and max(ratios) <= 64.5 and max(ratios) > 16


def test_quantile_share_hands_supervised_batches_over_in_the_quantile_view(monkeypatch):
    calls, quantile_normal = [], batches.quantile_normal

    def spy(ctx, query):
        calls.append(quantile_normal(ctx, query))
        return calls[-1]
    monkeypatch.setattr(batches, "quantile_normal", spy)
    plain = PriorConfig(max_rows=256, max_features=6, p_real=0.0)
    for i in range(4):
        make_batch(5, i, plain, None)
    assert calls == []                                   # off by default: the stream is unchanged
    supervised = 0
    for i in range(8):
        calls.clear()
        bt = make_batch(5, i, replace(plain, p_quantile=1.0), None)
        if bt.task is None:                              # imputation batches keep z-scores
            assert calls == []
            continue
        supervised += 1
        assert len(calls) == len(bt.x_true)              # every table of the batch, context and queries
        for t, (ctx, query) in enumerate(calls):
            np.testing.assert_allclose(bt.x_true[t, :bt.n_ctx], ctx, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(bt.x_true[t, bt.n_ctx:], query, rtol=1e-6, atol=1e-6)
    assert supervised > 0


def test_view_share_hands_tables_over_with_the_additive_view_first(monkeypatch):
    """In a view batch every table's first column is the additive view fitted on its context (the spy's
    own view, for context and query rows), it is never masked, and multiclass tables come as one
    one-vs-rest run; off by default."""
    calls, fit = [], batches.fit_additive_model

    def spy(x, y, classification, seed):
        view, seen = fit(x, y, classification, seed), {}
        if view is not None:                             # record what the queries' column was made of
            queries = view.queries
            view.queries = lambda xq: seen.setdefault("out", (xq.copy(), queries(xq)))[1]
        calls.append((x.copy(), view, seen))
        return view
    monkeypatch.setattr(batches, "fit_additive_model", spy)
    plain = PriorConfig(max_rows=256, max_features=6, p_real=0.0)
    for i in range(4):
        make_batch(5, i, plain, None)
    assert calls == []
    supervised = 0
    for i in range(10):
        calls.clear()
        bt = make_batch(5, i, replace(plain, p_view=1.0), None)
        if bt.task is None:                              # imputation batches have no target, so no view
            assert calls == []
            continue
        supervised += 1
        assert len(calls) == len(bt.x_true) and bt.x.shape[2] <= plain.max_features
        for t, (x_ctx, view, seen) in enumerate(calls):
            np.testing.assert_allclose(bt.x_true[t, :bt.n_ctx, 1:], x_ctx, atol=1e-6)
            if view is not None:
                xq, col = seen["out"]
                # the column clipped as the estimators' runs read it (`RunInputs.clipped`)
                np.testing.assert_allclose(bt.x_true[t, :bt.n_ctx, 0], np.clip(view.context, -CLIP, CLIP), atol=1e-6)
                np.testing.assert_allclose(bt.x_true[t, bt.n_ctx:, 1:], xq, atol=1e-6)
                np.testing.assert_allclose(bt.x_true[t, bt.n_ctx:, 0], np.clip(col, -CLIP, CLIP), atol=1e-6)
        assert not bt.recon[:, :, 0].any() and np.isfinite(bt.x[:, :, 0]).all()
        if bt.task == "classification":
            assert (bt.n_classes == 2).all() and set(np.unique(bt.y)) <= {0.0, 1.0}
    assert supervised >= 3


def test_wide_share_cuts_wider_tables_to_the_most_relevant_features(monkeypatch):
    """Wide batches draw more features than the width and keep the relevance-ranked ones: four signal
    features among 40 all reach every table, where a random 24 of 40 keeps all four about one time in nine."""
    def table(rng, n, d, task, *args, **kwargs):
        X = rng.normal(size=(n, d))
        y = X[:, :4].sum(1) + 0.3 * rng.normal(size=n)
        return SCMTable(X, y, task, 0, np.zeros((d, d), bool), "test", np.empty(0, np.int64))

    monkeypatch.setattr(batches, "sample_scm", table)
    cfg = PriorConfig(min_rows=300, max_rows=400, p_real=0.0, p_classification=0.0, p_impute_only=0.0, p_wide=1.0,
                      max_wide_features=40)
    checked = 0
    for i in range(4):
        bt = make_batch(2, i, cfg, None)
        assert bt.x.shape[2] == cfg.max_features
        for x, y in zip(bt.x_true, bt.y):
            corr = np.abs([np.corrcoef(x[:, j], y)[0, 1] for j in range(x.shape[1])])
            assert (corr > 0.3).sum() == 4
            checked += 1
    assert checked >= 4


def test_wide_batches_of_real_tables_ask_for_more_columns_than_the_width(monkeypatch):
    """Real tables in a wide batch are drawn with more columns than the width (the allowlist holds 90 tables
    of 26 columns or more) and cut by relevance like the synthetic ones."""
    asked, sample = [], real.sample_real_task

    def spy(rng, refs, task, n_rows, n_features, *args, **kwargs):
        asked.append(n_features)
        return sample(rng, refs, task, n_rows, n_features, *args, **kwargs)
    monkeypatch.setattr(batches, "sample_real_task", spy)
    refs = [r for r in real.allowlist() if r.cols >= 30 and r.rows >= 400][:20]
    cfg = PriorConfig(min_rows=128, max_rows=256, p_real=1.0, p_impute_only=0.0, p_wide=1.0, max_wide_features=28)
    sources = [make_batch(4, i, cfg, refs) for i in range(6)]
    assert asked and min(asked) > cfg.max_features
    assert any(b.source == "real" for b in sources) and all(b.x.shape[2] == cfg.max_features for b in sources)


def test_standardise_uses_context_statistics_only():
    X = np.vstack([np.ones((10, 2)) * [1.0, 5.0] + np.arange(10)[:, None], np.full((5, 2), 1000.0)])
    Z = standardise(X, 10)
    assert np.allclose(Z[:10].mean(0), 0) and np.allclose(Z[:10].std(0), 1)
    assert np.all(Z[10:] == 5.0)                 # far outliers clipped at +5 sigma


def test_standardise_reads_a_column_empty_in_the_context_without_a_warning(monkeypatch):
    """A column with no value in the context keeps mean 0 and deviation 1, and numpy is never asked for the
    statistics of an empty slice: its warning, raised on a worker thread, reached the app's page (a
    `catch_warnings` block there is no guard: the filters are the process's, and other threads change them)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)).astype(np.float32)
    X[:30, 1], X[4, 2] = np.nan, np.nan
    for name in ("nanmean", "nanstd"):
        def checked(a, axis=None, f=getattr(np, name), **kw):
            assert not np.isnan(a).all(0).any(), "statistics of an empty slice asked for"
            return f(a, axis, **kw)
        monkeypatch.setattr(np, name, checked)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Z = standardise(X, 30)
    monkeypatch.undo()
    assert Z.dtype == np.float32 and np.isnan(Z[:30, 1]).all() and np.array_equal(Z[30:, 1], X[30:, 1])
    for j in (0, 2):
        ctx = X[:30, j][~np.isnan(X[:30, j])].astype(np.float64)
        assert np.allclose(Z[:, j], np.clip((X[:, j] - ctx.mean()) / ctx.std(), -CLIP, CLIP), atol=1e-5,
                           equal_nan=True)


def test_batches_are_deterministic_and_consistent():
    cfg = PriorConfig(max_rows=128, max_features=6, p_real=0.0)
    a, b = make_batch(7, 3, cfg, None), make_batch(7, 3, cfg, None)
    np.testing.assert_array_equal(a.x, b.x)
    c = make_batch(7, 4, cfg, None)
    assert a.x.shape != c.x.shape or not np.array_equal(np.nan_to_num(a.x), np.nan_to_num(c.x))
    for i in range(12):
        bt = make_batch(11, i, cfg, None)
        B, N, D = bt.x.shape
        assert bt.recon.shape == (B, N, D) and bt.y.shape == (B, N)
        assert np.isfinite(bt.x_true[bt.recon]).all()      # reconstruction targets exist
        assert np.isnan(bt.x[bt.recon]).all()              # and are hidden from the model
        if bt.task == "classification":
            for t in range(B):                             # every class is in the context
                assert set(np.unique(bt.y[t])) <= set(np.unique(bt.y[t, :bt.n_ctx]))
                assert bt.n_classes[t] == len(np.unique(bt.y[t, :bt.n_ctx]))
        if bt.task is None:
            assert bt.n_ctx == N


def test_real_tasks_read_only_allowlisted_tables(monkeypatch):
    refs = real.allowlist()
    allowed = {(r.package, r.item) for r in refs}
    assert len(refs) > 1000
    for dev in [("modeldata", "concrete"), ("modeldata", "ames"), ("AER", "CPS1988"), ("ggplot2", "diamonds"), ("nycflights13", "flights")]:
        assert dev not in allowed                          # development tables are never trained on
    seen = []
    original = real.load_table

    def spy(pkg, item):
        seen.append((pkg, item))
        return original(pkg, item)

    monkeypatch.setattr(real, "load_table", spy)
    rng = np.random.default_rng(5)
    got = [real.sample_real_task(rng, refs[:60], task, 100, 2) for task in ("classification", "regression") * 3]
    assert seen and set(seen) <= allowed
    ok = [g for g in got if g is not None]
    assert ok
    for g in ok:
        assert g.X.shape == (100, 2) and np.isfinite(g.y).all()
        if g.task == "classification":
            assert 2 <= g.n_classes <= 10 and set(np.unique(g.y)) <= set(range(g.n_classes))


def test_a_table_past_the_token_budget_comes_alone():
    """Tables whose cells alone pass the batch's token budget come one per batch, not two (two
    4,096 x 25 tables took 22.5 GB in a training step and were killed for memory)."""
    from feat_engine.config import PriorConfig
    from feat_engine.prior.batches import make_batch

    cfg = PriorConfig(min_rows=200, max_rows=300, min_features=4, max_features=6, p_real=0.0)
    b = make_batch(0, 0, cfg, None, tokens=500)
    assert b.x.shape[0] == 1 and b.x.shape[1] >= 200
