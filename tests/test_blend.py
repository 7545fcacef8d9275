"""The blend of FEAT's output with its view's own prediction (`blend.py`), and how the tree view reads
the rows (`views.TreeRows`: values before the clip, native categories) and how long it boosts."""
import dataclasses

import numpy as np
import pytest
from scipy.special import expit

import feat_engine.estimators.runner as runner
from feat_engine import FEATClassifier, FEATRegressor
from feat_engine.inference import RunResult
from feat_engine.preprocess import CLIP, UnclippedRows
from feat_engine.progress import BLEND_OPEN, SO_FAR
from feat_engine.reading.blend import (MAX_HELD, PRIOR_WEIGHT, WEIGHTS, blend_prediction, blend_probability,
                                       choose_blend, clear_side, held_in_parts, held_out_rows, prior_blend)
from feat_engine.reading.stacked_model import MAX_LEVELS, TreeRows, fit_stacked_models, fit_tree_model

try:
    from .oracles import per_table
except ImportError:
    from oracles import per_table


def nearest_row_run(model, x_ctx, y_ctx, x_query, task, n_classes=None, **_):
    """A stand-in for the engine: each query gets the label of its nearest context row, exactly the row's
    own label if it sits in the context."""
    d = np.nansum((x_query[:, None, :] - x_ctx[None]) ** 2, axis=-1)
    y = np.asarray(y_ctx)[np.argmin(d, axis=1)]
    if task == "regression":
        return RunResult(logits=None, pred=y, recon=None, attention=None)
    logits = np.full((len(x_query), 10), -np.inf)
    logits[:, :n_classes] = 0.0
    logits[np.arange(len(x_query)), y.astype(int)] = 5.0
    return RunResult(logits=logits, pred=None, recon=None, attention=None)


def test_the_blend_reads_the_stacked_models_prediction_the_runs_its_clipped_column():
    """A target of 1 with 1,000 on one row in a hundred, which a feature marks: the additive model predicts several
    hundred there, past 5 deviations of its out-of-fold predictions. The runs read its column clipped to +-CLIP, as
    every feature; the blend reads the prediction itself, recalibrated (it read the clipped column, and a
    heavy-tailed table's largest values were cut: eq_passengercars' R2 0.66 against LightGBM's 0.98,
    docs/decisions/0024-blend.md)."""
    rng = np.random.default_rng(0)
    flag = (np.arange(400) % 100 == 0).astype(float)
    X = np.column_stack([flag, rng.normal(size=400)])
    y = 1 + 999 * flag + 0.1 * rng.normal(size=400)
    est = FEATRegressor(n_estimators=1, view="additive").fit(X[:300], y[:300])
    xq, detail = est._query_rows(X[300:])
    mats = est._run_matrices(est.members_[0], None, xq, detail, None)
    stacked = est.run_inputs_[0][None].stacked
    z = stacked.queries(xq, detail)
    assert stacked.context.max() > CLIP and z.max() > CLIP
    assert np.abs(mats.context[:, 0]).max() <= CLIP and np.abs(mats.queries[:, 0]).max() <= CLIP
    np.testing.assert_allclose(mats.stacked, stacked.predicted(z), rtol=1e-6)


def test_blend_formulas_and_held_out_share():
    p, s = np.array([0.2, 0.9, 0.5]), np.array([2.0, np.nan, -1.0])
    np.testing.assert_array_equal(blend_probability(p, s, 0.0), p)
    np.testing.assert_allclose(blend_probability(p, s, 1.0), [expit(2.0), 0.9, expit(-1.0)])
    np.testing.assert_allclose(blend_probability(p, s, 0.5)[0], expit(0.5 * np.log(0.25) + 1.0))
    np.testing.assert_allclose(blend_prediction(np.array([1.0, 2.0]), np.array([3.0, np.nan]), 0.25), [1.5, 2.0])
    assert held_out_rows(4095, None, 0) is None                  # 511 rows: too few to choose on
    assert len(held_out_rows(4096, None, 0)) == 512
    y = np.r_[np.zeros(9000), np.ones(1000)].astype(int)
    held = held_out_rows(10_000, y, 0)
    assert len(held) == 1250 and np.all(np.diff(held) > 0) and y[held].mean() == pytest.approx(0.1, abs=1e-3)
    assert len(held_out_rows(10**6, None, 0)) == MAX_HELD


def test_held_out_rows_never_reach_a_part_and_are_read_without_their_labels(monkeypatch):
    """On a target of pure noise the nearest-row stand-in would score the held-out rows perfectly if their
    own labelled rows sat in the parts they read; held out, FEAT's loss is about twice the variance."""
    monkeypatch.setattr(runner, "run_tables", per_table(nearest_row_run))
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(4800, 3)), rng.normal(size=4800)
    reg = FEATRegressor(n_estimators=2, local_context=256, view="additive").fit(X, y)
    assert reg.blend_ is not None and reg.blend_.rows == 600
    held = held_out_rows(4800, None, 0)
    for m in reg.members_:
        assert not np.isin(m.rows[m.local.parts], held).any()
        assert np.isin(np.setdiff1d(m.rows, held), m.rows[m.local.parts]).mean() > 0.9
    assert reg.blend_.loss[0.0] > 1.5                            # FEAT alone: no row saw its own label
    assert set(reg.blend_.loss) == set(WEIGHTS) and reg.blend_.weight == min(WEIGHTS, key=reg.blend_.loss.get)
    assert "chosen on 600 context rows held out of the parts" in reg.reading_


def test_one_member_reading_some_rows_holds_out_unread_rows_in_a_few_parts(monkeypatch):
    """`held_in_parts`: of 4,000 unread rows in 50 parts, those of HELD_PARTS parts (all 50 here), MAX_HELD of them
    stratified; of 10 parts, their 800 rows; of 4 parts, 320 rows: too few. A member that reads 3,000 of 10,000
    context rows (`max_context`) takes its held rows so from the 7,000 it does not read: their engine runs read 4
    parts where HELD_PARTS is 4, and a query's prediction depends on that query alone. Its blend keeps the stacked
    models alone unless FEAT clearly improves on them, so its progress says so from the start, never "open"."""
    import feat_engine.estimators.in_context as in_context
    import feat_engine.reading.blend as blend

    rows, route, y = np.arange(5000, 9000), np.arange(4000) % 50, np.r_[np.zeros(3000), np.ones(1000)].astype(int)
    held = held_in_parts(rows, route, 50, y, 0)
    assert len(held) == MAX_HELD and np.all(np.diff(held) > 0)
    assert y[held - 5000].mean() == pytest.approx(0.25, abs=1e-3)
    monkeypatch.setattr(blend, "HELD_PARTS", 10)
    held = held_in_parts(rows, route, 50, None, 0)
    assert len(held) == 800 and len(np.unique(route[held - 5000])) == 10
    monkeypatch.setattr(blend, "HELD_PARTS", 4)
    assert held_in_parts(rows, route, 50, y, 0) is None
    drawn, read = [], []
    monkeypatch.setattr(in_context, "held_in_parts", lambda *a: drawn.append(blend.held_in_parts(*a)) or drawn[-1])
    monkeypatch.setattr(runner, "run_tables", lambda model, ctxs, *a, **kw: read.append(len(ctxs)) or per_table(
        nearest_row_run)(model, ctxs, *a, **kw))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(10_100, 4))
    target = X[:, 0] + 0.1 * rng.normal(size=10_100)
    told = []
    reg = FEATRegressor(n_estimators=1, local_context=256, view="additive", max_context=3000,
                        progress=lambda done, total, msg: told.append(msg)).fit(X[:10_000], target[:10_000])
    assert reg.blend_.rows == len(drawn[0]) >= 512 and not np.isin(drawn[0], reg.members_[0].rows).any()
    assert sum(read) == 4
    notes = [m for m in told if BLEND_OPEN in m or SO_FAR[0] in m or SO_FAR[1] in m]
    assert notes[0] == told[0] == SO_FAR[1] and BLEND_OPEN not in notes and len(notes) == 2
    full = reg.predict(X[10_000:])
    np.testing.assert_allclose(np.concatenate([reg.predict(X[10_000 + i:10_001 + i]) for i in range(3)]), full[:3],
                               rtol=1e-6, atol=1e-9)


def test_the_weight_goes_to_whichever_predicts_held_out_rows_better(monkeypatch):
    """A target the additive view fits and the stand-in cannot (a sum over many features) takes the view;
    a ragged one-feature target that the nearest row reads and five spline knots cannot takes FEAT."""
    monkeypatch.setattr(runner, "run_tables", per_table(nearest_row_run))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4800, 12))
    dense = X @ rng.normal(size=12)
    reg = FEATRegressor(n_estimators=1, local_context=256, view="additive").fit(X, dense)
    assert reg.blend_.weight == 1.0
    x1 = rng.uniform(size=(4800, 1))
    ragged = np.sign(np.sin(60 * x1[:, 0]))
    reg = FEATRegressor(n_estimators=1, local_context=256, view="additive").fit(x1, ragged)
    assert reg.blend_.weight == 0.0
    off = FEATRegressor(n_estimators=1, local_context=256, view="additive", blend=False).fit(X, dense)
    assert off.blend_ is None and "blended" not in off.reading_
    def whole(y):                                                                   # no rows held out
        return FEATRegressor(n_estimators=1, local_context=None, view="additive").fit(X, y)

    noisy = whole(dense + 2 * np.linalg.norm(dense) / np.sqrt(len(dense)) * rng.normal(size=len(dense)))
    assert (noisy.blend_.weight, noisy.blend_.rows, noisy.blend_.loss) == (PRIOR_WEIGHT, 0, {})
    assert "too short to hold rows out" in noisy.reading_ and "unexplained out of fold" in noisy.reading_
    exact = whole(dense)                 # the view misses almost nothing out of fold: its prediction alone
    missed = np.mean([r.stacked.loss for inputs in exact.run_inputs_ for r in inputs.values()])
    assert exact.blend_.unexplained == pytest.approx(missed) and missed < 0.02 and exact.blend_.weight == 1.0
    assert FEATRegressor(n_estimators=1, local_context=256, view=None).fit(X, dense).blend_ is None


def test_held_rows_read_in_chunks_choose_the_same_blend_and_tell_it_so_far(monkeypatch):
    """Held rows read in chunks of parts (`runner.part_chunks`) give the blend the same losses as one read; after each
    chunk, the progress says whether the blend so far clearly keeps the classical models alone (`SO_FAR`), clearly
    not, or neither yet (`BLEND_OPEN`): in the end yes where the additive view fits the target, no where only the
    nearest row reads it, and never the other way; nothing where no run has a stacked model."""
    monkeypatch.setattr(runner, "run_tables", per_table(nearest_row_run))
    rng = np.random.default_rng(1)
    X, x1 = rng.normal(size=(4800, 12)), rng.uniform(size=(4800, 1))
    for x, y, said in [(X, X @ rng.normal(size=12), SO_FAR[1]), (x1, np.sign(np.sin(60 * x1[:, 0])), SO_FAR[0])]:
        told, losses = [], []
        for batches in (10**6, 4):                                    # one chunk; five
            monkeypatch.setattr(runner, "CHUNKED_BATCHES", batches)
            reg = FEATRegressor(n_estimators=1, local_context=256, view="additive",
                                progress=lambda done, total, msg: told.append(msg)).fit(x, y)
            losses.append(reg.blend_.loss)
        notes = [m for m in told if BLEND_OPEN in m or SO_FAR[0] in m or SO_FAR[1] in m]
        assert losses[0] == losses[1]
        one, chunked = notes[:notes.index(BLEND_OPEN, 1)], notes[notes.index(BLEND_OPEN, 1):]
        assert one[0] == chunked[0] == BLEND_OPEN and one[-1] == chunked[-1] == said and len(one) == 2
        assert len(chunked) == 2 + len(runner.CHUNKS) and set(chunked) == {BLEND_OPEN, said}
    told.clear()                       # three classes read by one head have no stacked model: no blend to tell of
    clf = FEATClassifier(n_estimators=1, local_context=256, view="additive", multiclass="head",
                         progress=lambda done, total, msg: told.append(msg)).fit(x1, np.digitize(x1[:, 0], [0.3, 0.6]))
    assert clf.blend_ is None and told and not [m for m in told if BLEND_OPEN in m]


def test_a_side_of_weight_one_is_clear_only_past_clear_z_standard_errors():
    """`clear_side` and `choose_blend` on 400 rows whose loss moves by `gap` per unit of weight under 1, with noise of
    0.1 per row and weight: weight 1 clearly best where lower weights lose 0.025 more, a lower weight where they
    lose less, and neither where the gap is 0.002 (0.0005 at weight 0.75: a tenth of a standard error); with
    `clear`, the blend then keeps weight 1."""
    rng = np.random.default_rng(7)
    noise = {w: 0.1 * rng.normal(size=400) for w in WEIGHTS}
    side = lambda gap: clear_side(lambda w: 1.0 + gap * (1.0 - w) + noise[w])   # noqa: E731
    assert (side(0.1), side(-0.1), side(0.002)) == (True, False, None)
    # with `clear`, the blend keeps weight 1 (no engine read at predict) unless a lower weight clearly beats it
    loss = lambda gap: lambda w: 1.0 + gap * (1.0 - w) + noise[w]     # noqa: E731
    chosen = {gap: choose_blend(loss(gap), clear=True) for gap in (-0.1, -0.002, 0.1)}
    assert [b.weight for b in chosen.values()] == [0.0, 1.0, 1.0] and choose_blend(loss(-0.002)).weight < 1.0
    assert "weight 1 kept" in chosen[-0.002].describe() and "kept" not in chosen[-0.1].describe()


def test_the_prior_weight_grows_as_a_regressions_view_misses_less():
    """Where no rows are held out, a class label's blend reads PRIOR_WEIGHT; a regression's the weight of the band its
    view's out-of-fold unexplained share falls in (PRIOR_BANDS)."""
    assert prior_blend().weight == prior_blend(0.3).weight == PRIOR_WEIGHT
    assert [prior_blend(u).weight for u in (0.1, 0.08, 0.05, 0.03, 0.02, 0.0)] == [0.5, 0.5, 0.75, 0.75, 1.0, 1.0]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    clf = FEATClassifier(n_estimators=1, view="additive").fit(X, (X[:, 0] > 0).astype(int))
    assert (clf.blend_.weight, clf.blend_.unexplained) == (PRIOR_WEIGHT, None)


@pytest.mark.parametrize("Est, k, n", [(FEATRegressor, 0, 4096), (FEATClassifier, 2, 4096), (FEATClassifier, 3, 4096),
                                        (FEATRegressor, 0, 2048), (FEATClassifier, 2, 2048)])
def test_blended_predictions_are_the_blend_of_each_query_alone(monkeypatch, Est, k, n):
    """With a blend in force, chosen on held-out rows (4,096 context rows) or at the prior weight (2,048), a query's
    prediction is the weighted blend of the model's output and its view's, and does not depend on the other query
    rows; where no rows are held out, the runs read the other kind's model too (four features leave a slot free)."""
    monkeypatch.setattr(runner, "run_tables", per_table(nearest_row_run))
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n + 304, 4))
    t = X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(0, 0.5, len(X))        # noisy: both kinds read part of it
    y = t if k == 0 else np.digitize(t, np.quantile(t, np.linspace(0, 1, k + 1)[1:-1]))
    est = Est(n_estimators=2, local_context=256).fit(X[:n], y[:n])
    assert est.blend_ is not None and (est.blend_.rows == 0) is (n < 4096)
    assert all((r.beside is not None and r.beside.kind != r.stacked.kind) is (n < 4096)
               for i in est.run_inputs_ for r in i.values())
    f = est.predict if Est is FEATRegressor else est.predict_proba
    full = f(X[n:])
    alone = np.concatenate([f(X[n + i:n + i + 1]) for i in range(3)])
    np.testing.assert_allclose(alone, full[:3], rtol=1e-6, atol=1e-9)
    outputs = est._outputs(*est._query_rows(X[n:]))
    w = est.blend_.weight
    if Est is FEATRegressor:
        # each member's blend on the scale it reads, its power-scale members' mapped back as means
        want = np.mean([r[None].output((1 - w) * p + w * s) for r, (p, s) in zip(est.run_inputs_, outputs)], axis=0)
        assert est.run_inputs_[1][None].target is not None
        np.testing.assert_allclose(full, est.scaler_.inverse_transform(want))
    else:
        for scores, views in outputs:
            assert scores.shape == (len(X) - n, k) and views.shape == (len(X) - n, 1 if k == 2 else k)
        assert np.allclose(full.sum(axis=1), 1.0)
        if k == 2:
            want = np.mean([blend_probability(p[:, 1], s[:, 0], w) for p, s in outputs], axis=0)
            np.testing.assert_allclose(full[:, 1], want)


@pytest.mark.parametrize("Est, k", [(FEATRegressor, 0), (FEATClassifier, 2), (FEATClassifier, 3)])
def test_at_weight_one_the_queries_are_not_read_and_predict_the_same(monkeypatch, Est, k):
    """Where the blend gives the stacked models' prediction alone (weight 1), the engine does not read the queries:
    the predictions are those of the runs' outputs blended at weight 1, and no run is made."""
    calls, stand_in = [], per_table(nearest_row_run)
    monkeypatch.setattr(runner, "run_tables", lambda *a, **kw: calls.append(1) or stand_in(*a, **kw))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2048 + 100, 4))
    t = X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(0, 0.5, len(X))
    y = t if k == 0 else np.digitize(t, np.quantile(t, np.linspace(0, 1, k + 1)[1:-1]))
    est = Est(n_estimators=2, local_context=256).fit(X[:2048], y[:2048])
    est.blend_ = dataclasses.replace(est.blend_, weight=1.0)
    calls.clear()
    fast = est.predict(X[2048:]) if Est is FEATRegressor else est.predict_proba(X[2048:])
    assert not calls
    slow = est._combine(est._outputs(*est._query_rows(X[2048:])), 1.0)
    assert calls
    np.testing.assert_allclose(fast, est.scaler_.inverse_transform(slow) if Est is FEATRegressor else slow,
                               rtol=1e-6, atol=1e-9)


def lightgbm_regressor(seed: int):
    """LightGBM's regressor as the tree view sets it up on fewer than 1,260 rows (a test's oracle): its defaults but
    63 bins a feature."""
    import lightgbm as lgb
    import torch

    return lgb.LGBMRegressor(random_state=seed, verbose=-1, n_jobs=torch.get_num_threads(), deterministic=True,
                             force_row_wise=True, max_bin=63)


def test_tree_view_reads_unclipped_values_and_few_level_nominal_columns_as_native_categories():
    """The tree view reads the rows' values before the clip, but for the nominal columns: those of at most
    MAX_LEVELS levels hold their level codes (missing and unseen levels NaN) and are the boosting's categorical
    features, one of more levels keeps its statistics; cross-fitted as before."""
    from sklearn.model_selection import KFold

    from feat_engine.reading.stacked_model import FOLDS

    rng = np.random.default_rng(3)
    n = 400
    codes = np.column_stack([rng.integers(0, 6, n), rng.integers(0, MAX_LEVELS + 8, n)]).astype(float)
    codes[::23, 0] = np.nan
    wide = np.column_stack([rng.exponential(3, n), rng.normal(size=n), rng.normal(size=n)]).astype(np.float32)
    x = np.clip(wide, -CLIP, CLIP)                       # column 0: a long tail the clip flattens
    x[:, 1:] = rng.normal(size=(n, 2))                   # cols 1, 2: the run's statistics
    y = np.array([3, -2, 0, 1, -1, 2], float)[np.nan_to_num(codes[:, 0]).astype(int)] + wide[:, 0]
    rows = TreeRows.of(codes, np.array([1, 2]))
    np.testing.assert_array_equal(rows.categories, [1])
    np.testing.assert_array_equal(rows.codes, [0])
    design = rows.matrix(x, UnclippedRows(codes, wide))
    np.testing.assert_array_equal(design[:, 0], wide[:, 0])
    np.testing.assert_array_equal(design[:, 1], codes[:, 0])
    np.testing.assert_array_equal(design[:, 2], x[:, 2])
    v = fit_stacked_models(x, y, False, 5, "trees", UnclippedRows(codes, wide), np.array([1, 2]))[0]
    oof = np.empty(n)
    for tr, va in KFold(FOLDS, shuffle=True, random_state=5).split(design):
        oof[va] = lightgbm_regressor(5).fit(design[tr], y[tr], categorical_feature=[1]).predict(design[va])
    np.testing.assert_allclose(v.context, (oof - oof.mean()) / oof.std(), rtol=1e-5, atol=1e-5)
    xq, cq, wq = x[:4].copy(), codes[:4].copy(), wide[:4].copy()
    cq[0, 0] = -1                                                   # a level the context never saw
    full = lightgbm_regressor(5).fit(design, y, categorical_feature=[1])
    want = full.predict(np.column_stack([wq[:, 0], [np.nan, *cq[1:, 0]], xq[:, 2]]))
    np.testing.assert_allclose(v.queries(xq, UnclippedRows(cq, wq)), (want - oof.mean()) / oof.std(), rtol=1e-5, atol=1e-5)
    clipped = fit_stacked_models(x, y, False, 5, "trees", UnclippedRows(codes, x), np.array([1, 2]))[0]
    assert v.loss < 0.5 * clipped.loss                   # the tail beyond the clip carries signal the trees use
    assert fit_tree_model(x, y, False, 5).rows is None


def test_tree_view_boosts_longer_with_early_stopping_on_long_contexts():
    """Up to STOP_ROWS context rows the tree view boosts the library's 100 rounds; beyond, early stopping on a
    tenth of the rows chooses up to `max_rounds`, one setting for every fold: MAX_ROUNDS for a fit of few cells,
    MIN_ROUNDS past BOOST_WORK / MIN_ROUNDS cells. Its histogram has a bin per BIN_ROWS rows: MIN_BINS on a short
    context, LightGBM's 255 on a long one."""
    from feat_engine.reading.stacked_model import (BOOST_WORK, MAX_ROUNDS, MIN_BINS, MIN_ROUNDS, STOP_ROWS,
                                                   max_rounds)

    assert max_rounds(STOP_ROWS, 3) == MAX_ROUNDS
    assert max_rounds(BOOST_WORK // MIN_ROUNDS, 1) == MIN_ROUNDS == max_rounds(10**6, 50)
    assert MIN_ROUNDS < max_rounds(200_000, 12) < MAX_ROUNDS

    rng = np.random.default_rng(0)
    for n, stops, bins in ((1_000, False, MIN_BINS), (STOP_ROWS, False, 255), (STOP_ROWS + 1, True, 255)):
        x = rng.normal(size=(n, 3)).astype(np.float32)
        y = np.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.1 * rng.normal(size=n)
        model = fit_tree_model(x, y, False, 0).model.model
        assert model.n_estimators == (max_rounds(*x.shape) if stops else 100)
        assert model.max_bin == bins
        assert (model.best_iteration_ > 100) is stops   # this smooth target keeps improving past 100 rounds


@pytest.mark.parametrize("classification", [True, False])
def test_tree_folds_fitted_side_by_side_are_the_folds_fitted_in_turn(monkeypatch, classification):
    """On a short context with two threads the tree view's folds are fitted two at a time on threads of their own,
    one LightGBM thread each: the same out-of-fold column, to the bit, as the folds fitted in turn on one thread;
    the whole-context fit takes one thread too (LightGBM's threads spin for cores another process holds)."""
    import threading

    from feat_engine.reading import stacked_model

    seen = []
    fit = stacked_model.BoostedTrees.fit
    monkeypatch.setattr(stacked_model.BoostedTrees, "fit", lambda self, x, y: seen.append(
        (threading.current_thread() is threading.main_thread(), self.threads)) or fit(self, x, y))
    rng = np.random.default_rng(4)
    x = rng.normal(size=(700, 6)).astype(np.float32)
    y = x[:, 0] + np.sin(2 * x[:, 1]) + 0.3 * rng.normal(size=700)
    y = (y > 0).astype(float) if classification else y
    in_turn = fit_tree_model(x, y, classification, 2, threads=1)
    assert seen == [(True, 1)] * 6
    seen.clear()
    together = fit_tree_model(x, y, classification, 2, threads=2)
    assert sorted(seen[:5]) == [(False, 1)] * 5 and seen[5] == (True, 1)
    np.testing.assert_array_equal(together.context, in_turn.context)
    assert (together.mean, together.std, together.loss) == (in_turn.mean, in_turn.std, in_turn.loss)
    np.testing.assert_array_equal(together.queries(x[:50]), in_turn.queries(x[:50]))


def test_tree_fits_made_in_turn_tell_their_start_then_their_rounds():
    """Each fold's fit tells BEGUN of itself as it begins (its set-up counts in the pace it is told at), then its
    rounds, then its end: a stream of fits done that never goes back and reaches each fold's end."""
    from feat_engine.reading.stacked_model import BEGUN, FOLDS, _tree_candidate
    rng = np.random.default_rng(6)
    x = rng.normal(size=(700, 4)).astype(np.float32)
    told = []
    candidate = _tree_candidate(x, x[:, 0] + 0.1 * rng.normal(size=700), False, 0, None, None, threads=1,
                                tick=lambda k, n: told.append((k, n)))
    candidate.fitted()
    ks = [k for k, n in told]
    assert {n for _, n in told} == {FOLDS + 1} and ks == sorted(ks)
    begun = [k for k in ks if abs(k % 1 - BEGUN) < 1e-9]
    np.testing.assert_allclose(begun, np.arange(FOLDS + 1) + BEGUN, rtol=0, atol=1e-9)     # the whole fit's too
    assert [k for k in ks if k % 1 == 0] == list(range(1, FOLDS + 1))                      # the folds' ends
    assert len(ks) > 4 * (FOLDS + 1)                                                         # rounds in between


@pytest.mark.parametrize("kind", ["trees", "additive"])
def test_a_query_rows_stacked_prediction_is_the_same_scored_alone_or_among_many(kind):
    """The tree model scores every query row in one call (`rows_alone`), the additive model in padded blocks of
    QUERY_ROWS: either way a row's standardised prediction is the same, to the bit, alone as among 2,500 rows (more
    than one block) in another order."""
    from feat_engine.reading.stacked_model import QUERY_ROWS, fit_additive_model
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3_000, 5)).astype(np.float32)
    y = x[:, 0] - x[:, 1] ** 2 + 0.3 * rng.normal(size=3_000)
    model = (fit_tree_model if kind == "trees" else fit_additive_model)(x[:500], y[:500], False, 0).fitted()
    assert getattr(model.model, "rows_alone", False) == (kind == "trees")
    many = x[500:]
    assert len(many) > QUERY_ROWS
    order = rng.permutation(len(many))
    together = model.queries(many[order])[np.argsort(order)]
    for i in (0, 1_234, len(many) - 1):
        np.testing.assert_array_equal(model.queries(many[i:i + 1]), together[i:i + 1])
    assert model.queries(many[:0]).shape == (0,)                # no rows: none scored, as before the one call


def test_out_of_fold_values_of_the_rows_read_come_from_folds_of_those_rows_alone(monkeypatch):
    """Where the rows read are at most one in FOLDS of the context, one fit on all the other rows gives their
    out-of-fold values (the other rows' are NaN) and the column's statistics and loss are theirs; twice as many read
    take two fits, each on every row but half of them; past FOLDS - 1 in FOLDS, the folds of every row as before."""
    from feat_engine.reading import stacked_model
    from feat_engine.reading.stacked_model import FOLDS, BoostedTrees

    rng = np.random.default_rng(5)
    n = 1_000
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = x[:, 0] + np.sin(2 * x[:, 1]) + 0.3 * rng.normal(size=n)
    read = np.sort(rng.choice(n, n // FOLDS, replace=False))
    v = fit_stacked_models(x, y, False, 3, "trees", threads=1, read=read)[0]
    rest = np.setdiff1d(np.arange(n), read)
    s = BoostedTrees(False, 3, [], 1).fit(x[rest], y[rest]).decision_function(x[read])
    np.testing.assert_array_equal(np.isfinite(v.context), np.isin(np.arange(n), read))
    np.testing.assert_allclose(v.context[read], np.clip((s - s.mean()) / s.std(), -CLIP, CLIP), rtol=1e-5, atol=1e-5)
    assert (v.mean, v.std) == pytest.approx((s.mean(), s.std()))
    slope, intercept = np.polyfit(s, y[read], 1)
    assert v.loss == pytest.approx(np.mean((slope * s + intercept - y[read]) ** 2))
    fits = []
    fit = stacked_model.BoostedTrees.fit
    monkeypatch.setattr(stacked_model.BoostedTrees, "fit", lambda self, x, y: fits.append(len(x)) or fit(self, x, y))
    two = np.sort(rng.choice(n, 2 * n // FOLDS, replace=False))
    v = fit_stacked_models(x, y, False, 3, "trees", threads=1, read=two)[0]
    assert fits == [n - n // FOLDS] * 2 + [n]           # two fits of the folds, then the whole context
    np.testing.assert_array_equal(np.isfinite(v.context), np.isin(np.arange(n), two))
    most = fit_stacked_models(x, y, False, 3, "trees", threads=1, read=np.arange(n - n // FOLDS + 1))[0]
    np.testing.assert_array_equal(most.context, fit_stacked_models(x, y, False, 3, "trees", threads=1)[0].context)


def seeded_run(noise: float):
    """A stand-in for the engine whose members differ only by a shift of the first slot's logit drawn from their
    column identities (`noise` its size): with noise 0 every member says the same (even odds), else the nearest
    row's label plus each member's shift."""
    def run(model, x_ctx, y_ctx, x_query, task, n_classes=None, column_ids=None, **_):
        res = nearest_row_run(model, x_ctx, y_ctx, x_query, task, n_classes)
        if noise == 0.0:
            res.logits[:, :n_classes] = 0.0
        seed = int(abs(float(column_ids.sum())) * 1e6) % 2**32
        res.logits[:, 0] += noise * np.random.default_rng(seed).normal()
        return res
    return run


def test_prediction_change_reads_probabilities_as_total_variation_and_numbers_as_they_are():
    from feat_engine.reading.members import prediction_change

    a = np.array([[0.2, 0.8], [0.5, 0.5]])
    b = np.array([[0.3, 0.7], [0.5, 0.5]])
    assert prediction_change(a, b) == pytest.approx(0.05)        # |change of p(class 1)|, averaged over rows
    assert prediction_change(np.array([1.0, 2.0]), np.array([1.5, 1.0])) == pytest.approx(0.75)


def test_the_engine_runs_a_fit_expects_are_those_of_members_that_will_read_the_engine_as_things_stand():
    """Four members of 10, 20, 30 and 40 runs (SURE_ONES = 2): after the first chose a lower weight than 1, all; after
    it chose 1, its own and the second's (two in a row settle the rest); after two in a row, the two read."""
    from feat_engine.reading.members import SURE_ONES, engine_runs_expected
    assert SURE_ONES == 2
    runs = [10, 20, 30, 40]
    assert engine_runs_expected(runs, 1, 0) == 100 and engine_runs_expected(runs, 1, 1) == 30
    assert engine_runs_expected(runs, 2, 2) == 30 and engine_runs_expected(runs, 3, 1) == 100
    assert engine_runs_expected(runs, 4, 1) == 100


def test_the_member_sentence_gives_each_change_and_says_when_there_was_none_to_measure():
    from feat_engine.reading.members import MemberChoice

    assert "by 0.0100, 0.0042 on average" in MemberChoice(3, 4, [0.01, 0.0042], 2048).describe()
    assert "classical models" not in MemberChoice(3, 4, [0.01, 0.0042], 2048, 3).describe()
    assert "the engine read the held rows for the first 2 member(s)" in MemberChoice(3, 4, [0.01, 0.004], 2048,
                                                                                     2).describe()
    one = MemberChoice(1, 1, [], 2048).describe()
    assert one.startswith("1 of 1 member(s) read") and "on average" not in one


@pytest.mark.parametrize("noise, kept", [(0.0, 2), (3.0, 4)])
def test_members_stop_when_the_next_one_no_longer_changes_held_out_context_rows(monkeypatch, noise, kept):
    """Members that agree stop at the second; members that disagree are all read. The choice is made at `fit` on
    held-out context rows: `predict` reads only the kept members, and a query's prediction does not depend on the
    other query rows."""
    from feat_engine.reading.members import MEMBER_TOL

    monkeypatch.setattr(runner, "run_tables", per_table(seeded_run(noise)))
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(4400, 1))
    y = (np.sin(60 * X[:, 0]) > 0).astype(int)               # ragged: the nearest row reads it, the splines not
    clf = FEATClassifier(n_estimators=4, local_context=256, view="additive").fit(X[:4096], y[:4096])
    choice = clf.member_choice_
    assert (choice.kept, choice.planned, choice.rows) == (kept, 4, 512) and len(clf.members_) == kept
    assert len(choice.changes) == kept - 1 and (choice.changes[-1] < MEMBER_TOL) == (kept < 4)
    assert all(c >= MEMBER_TOL for c in choice.changes[:-1]) and f"{kept} of 4 members kept" in clf.reading_
    clf.blend_ = dataclasses.replace(clf.blend_, weight=0.5)     # a blend that reads the members (at 1, none is)
    seen = []
    monkeypatch.setattr(runner, "run_tables", lambda model, *a, column_ids=None, **kw: seen.append(
        float(column_ids.sum())) or per_table(seeded_run(noise))(model, *a, column_ids=column_ids, **kw))
    full = clf.predict_proba(X[4096:])
    assert len(set(seen)) == kept                                # predict reads the kept members alone
    alone = np.concatenate([clf.predict_proba(X[4096 + i:4097 + i]) for i in range(3)])
    np.testing.assert_allclose(alone, full[:3], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("own_fits, clear", [(False, True), (True, False)])
def test_after_members_choose_weight_one_later_members_read_their_stacked_models_alone(monkeypatch, own_fits, clear):
    """A target the additive view fits exactly: the held rows choose weight 1 with the first member, clearly (by
    CLEAR_Z standard errors), or, where no margin counts as clear, again with two (SURE_ONES), so a later member's
    engine run would change no blended number, and it is read for its stacked model alone (no run); the member rule
    goes on measuring that model's change. A member that fits its own stacked model (a context longer than
    STOP_ROWS) cross-fits it for the held rows alone, and the progress of its fit ends at the whole; `predict` runs
    no engine, and a query's prediction depends on that query alone."""
    import feat_engine.estimators.in_context as in_context
    import feat_engine.reading.blend as blend
    from app.engine import what_feat_did

    assert in_context.SURE_ONES == 2
    monkeypatch.setattr(in_context, "MEMBER_TOL", -1.0)              # read every member planned
    if own_fits:
        monkeypatch.setattr(in_context, "STOP_ROWS", 1000)
    if not clear:
        monkeypatch.setattr(blend, "CLEAR_Z", np.inf)
    engine = 1 if clear else 2
    seen = []
    monkeypatch.setattr(runner, "run_tables", lambda model, *a, column_ids=None, **kw: seen.append(
        float(column_ids.sum())) or per_table(nearest_row_run)(model, *a, column_ids=column_ids, **kw))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4900, 12))
    dense = X @ rng.normal(size=12)
    told = []
    reg = FEATRegressor(n_estimators=3, local_context=256, view="additive",
                        progress=lambda done, total, msg: told.append(done / total)).fit(X[:4800], dense[:4800])
    if own_fits:                 # the last member's own fit reports last: the runs not made are out of the plan
        assert told[-1] == 1.0
    choice = reg.member_choice_
    assert reg.blend_.weight == 1.0 and reg.blend_.clear == clear
    assert (choice.kept, choice.engine) == (3, engine) and len(set(seen)) == engine
    assert f"after {engine}, FEAT's own reading had not clearly improved on the classical model on 600 example " \
        "rows" in " ".join(what_feat_did(reg))
    counts = [np.isfinite(inputs[None].stacked.context).sum() for inputs in reg.run_inputs_]
    assert counts == ([4800, 4800, 600] if own_fits else [4800] * 3)
    seen.clear()
    full = reg.predict(X[4800:])
    assert not seen
    np.testing.assert_allclose(np.concatenate([reg.predict(X[4800 + i:4801 + i]) for i in range(3)]), full[:3],
                               rtol=1e-6, atol=1e-9)


def test_default_members_follow_whether_the_member_rule_can_choose_them(monkeypatch):
    """`n_estimators=None` plans RULE_MEMBERS where context rows are held out for the member rule, SHORT_MEMBERS where
    none are (a short context, no blend, no stacked model, a capped context), one member where K > 2 classes are each
    read against the rest; an int is kept. A fit at the default reads the planned members, and a query's prediction
    does not depend on the other query rows."""
    from feat_engine.reading.members import RULE_MEMBERS, SHORT_MEMBERS

    plan = lambda n, runs=1, **kw: FEATClassifier(**kw).read_plan(n, 20, runs).members   # noqa: E731
    assert (plan(2048), plan(2048, 6), plan(5000), plan(5000, 6)) == (SHORT_MEMBERS, 1, RULE_MEMBERS, RULE_MEMBERS)
    assert plan(5000, blend=False) == plan(5000, view=None) == plan(5000, max_context=2048) == SHORT_MEMBERS
    assert plan(5000, local_context=None) == SHORT_MEMBERS and plan(2048, 6, n_estimators=3) == 3
    monkeypatch.setattr(runner, "run_tables", per_table(nearest_row_run))
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    for y, members in [((X[:, 0] > 0).astype(int), SHORT_MEMBERS), (np.digitize(X[:, 0], [-0.5, 0.5]), 1)]:
        clf = FEATClassifier(local_context=64).fit(X[:250], y[:250])
        assert len(clf.members_) == members and clf.member_choice_ is None
        full = clf.predict_proba(X[250:])
        np.testing.assert_allclose(np.concatenate([clf.predict_proba(X[250 + i:251 + i]) for i in range(3)]), full[:3],
                                   rtol=1e-6, atol=1e-9)
