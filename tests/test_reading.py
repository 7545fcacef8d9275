"""What the estimators hand the model: target statistics for nominal columns, relevance-ranked
features for wide tables, local contexts for long ones, and query independence through each."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import PowerTransformer

import feat_engine.estimators.runner as runner
import feat_engine.reading.local_parts as lc_mod
from feat_engine import FEATClassifier, FEATRegressor
from feat_engine.errors import FEATDataWarning, FEATInputError
from feat_engine.estimators import in_context
from feat_engine.inference import RunResult
from feat_engine.preprocess import TablePreprocessor, standardise
from feat_engine.reading import coded_levels
from feat_engine.reading.blend import blend_prediction
from feat_engine.reading.context_size import HOLDOUT, WHOLE_ROWS, choose_local_context
from feat_engine.reading.local_parts import GROUP, OVERLAP, local_contexts
from feat_engine.reading.members import content_order, plan_members, ranked_features
from feat_engine.reading.power_target import fit_power_target
from feat_engine.reading.quantile_transform import quantile_normal
from feat_engine.reading.read_budget import ReadPlan, context_cells, plan_reading
from feat_engine.reading.relevance import relevance
from feat_engine.reading.stacked_model import fit_additive_model, fit_stacked_models, fit_tree_model
from feat_engine.reading.target_stats import with_target_stats

try:
    from .oracles import per_table
except ImportError:
    from oracles import per_table


def nominal_table(n=240, levels=12, seed=0):
    """A numeric column, a many-level nominal column whose level sets the target, a 2-level and
    an ordered column; some nominal cells missing."""
    rng = np.random.default_rng(seed)
    level = rng.integers(0, levels, n)
    effect = rng.normal(scale=2.0, size=levels)
    X = pd.DataFrame({
        "x": rng.normal(size=n),
        "state": pd.Series([f"s{v:02d}" for v in level], dtype=object),
        "flag": rng.choice(["yes", "no"], n),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"], ordered=True),
    })
    X.loc[X.index[::17], "state"] = None
    y = effect[level] + 0.3 * X["x"].to_numpy() + rng.normal(scale=0.1, size=n)
    return X, y


def test_only_unordered_many_level_categoricals_are_nominal():
    X, _ = nominal_table()
    pre = TablePreprocessor().fit(X)
    assert [pre.feature_names_[j] for j in pre.nominal_] == ["state"]
    q = pd.DataFrame({"x": [0.0, 1.0], "state": ["s03", "never-seen"], "flag": ["yes", "no"], "size": ["S", "L"]})
    q.loc[1, "x"] = np.nan
    codes = pre.nominal_codes(pd.concat([q, X.iloc[[0]]], ignore_index=True))
    assert codes[0, 0] == 3 and codes[1, 0] == -1          # unseen level -> -1
    assert np.isnan(pre.nominal_codes(X)[0, 0])             # row 0's state is missing


def panel_table(n=600, units=60, seed=0):
    """Rows of units that recur (an id in no order the target follows, whose unit sets most of the target), a
    whole-number age with a smooth effect, and whole numbers of noise."""
    rng = np.random.default_rng(seed)
    unit = rng.integers(0, units, n)
    X = pd.DataFrame({"unit": rng.permutation(10 * units)[:units][unit] + 100, "age": rng.integers(18, 80, n),
                      "noise": rng.integers(0, 40, n)})
    y = rng.normal(scale=2.0, size=units)[unit] + 0.05 * X["age"].to_numpy() + rng.normal(scale=0.3, size=n)
    return X, y


def test_whole_numbers_whose_levels_tell_more_than_their_order_are_read_again_as_levels(monkeypatch):
    X, y = panel_table()
    Y = coded_levels.targets(y, classification=False)
    gains = [coded_levels.level_gain(X[c].to_numpy(float), Y, seed=0) for c in X.columns]
    assert gains[0] >= coded_levels.MIN_GAIN > max(gains[1:])
    assert coded_levels.targets(np.repeat([0, 1, 2], 5), classification=True).shape == (15, 3)
    assert coded_levels.targets(np.repeat([0, 1], 5), classification=True).shape == (10, 1)
    v = X["unit"].to_numpy(float)
    v[:5] = np.nan                                          # a class only where the column is missing: two left
    three = np.where(np.arange(len(v)) < 5, 0, 1 + (y > np.median(y)))
    assert np.isfinite(coded_levels.level_gain(v, coded_levels.targets(three, classification=True), seed=0))
    q = X.iloc[480:].copy()
    q.iloc[0, 0] = 99_999                                   # a unit the context never had: no note, the mean
    with warnings.catch_warnings():
        warnings.simplefilter("error", FEATDataWarning)
        est = FEATRegressor(n_estimators=1).fit(X.iloc[:480], y[:480])
        pred = est.predict(q)
    assert est.preprocessor_.feature_names_ == ["unit", "unit (levels)", "age", "noise"]
    assert "(unit (levels))" in est.reading_
    from app.engine import what_feat_did
    assert any("'unit' both as a number and as a category" in line for line in what_feat_did(est))
    np.testing.assert_allclose(est.predict(q.iloc[:3]), pred[:3], rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(coded_levels, "MIN_GAIN", np.inf)
    alone = FEATRegressor(n_estimators=1).fit(X.iloc[:480], y[:480])
    assert alone.preprocessor_.feature_names_ == ["unit", "age", "noise"]
    mse = lambda p: float(np.mean((p - y[480:])[1:] ** 2))
    assert mse(pred) < 0.5 * mse(alone.predict(q))


def test_a_date_that_rows_share_is_read_again_as_levels_measured_on_the_targets_ranks():
    X, y = panel_table()
    y = np.exp(1.5 * y)                                   # a heavy tail: a few rows would decide the squared errors
    v = X["unit"].to_numpy(float)
    standardised = ((y - y.mean()) / y.std())[:, None]
    ranks = coded_levels.targets(y, classification=False)
    assert coded_levels.level_gain(v, ranks, seed=0) > 3 * coded_levels.level_gain(v, standardised, seed=0)
    day = (pd.Timestamp("2020-01-01") + pd.to_timedelta(X["unit"], unit="D")).dt.strftime("%Y-%m-%d")
    X = pd.DataFrame({"day": day.astype("category"), "age": X["age"]})      # dates given as categories
    with pytest.warns(FEATDataWarning, match="'day' holds dates"):
        est = FEATRegressor(n_estimators=1).fit(X.iloc[:480], y[:480])
    assert est.preprocessor_.feature_names_ == ["day.days", "day.month", "day.weekday", "day (levels)", "age"]
    from app.engine import what_feat_did
    said = what_feat_did(est)
    assert any("'day' both as a date and as a category" in line for line in said)
    assert "480 example rows and 2 columns (read as 5 features: 'day' as its date, month and weekday)" in said[0]
    assert np.isfinite(est.predict(X.iloc[480:])).all()
    with pytest.warns(FEATDataWarning, match="'day' holds dates"):
        one = FEATRegressor(n_estimators=1).fit(X[["day"]].iloc[:480], y[:480])
    assert "480 example rows and 1 column (read as 4 features" in what_feat_did(one)[0]


def test_target_stats_are_cross_fitted_and_queries_get_level_means():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 4, 400).astype(float)
    y = np.array([-3.0, -1.0, 1.0, 3.0])[codes.astype(int)] + rng.normal(scale=0.1, size=400)
    codes[0], y[0] = 9.0, 100.0            # a level seen once, with an extreme label
    x = rng.normal(size=(400, 2)).astype(np.float32)
    q = np.zeros((5, 2), np.float32)
    qc = np.array([[0.0], [1.0], [2.0], [3.0], [-1.0]])
    ctx, qo = with_target_stats(x, y, q, codes[:, None], qc, np.array([1]), seed=0)
    np.testing.assert_array_equal(ctx[:, 0], x[:, 0])                    # other columns untouched
    assert np.all(np.diff(qo[:4, 1]) > 0)                                 # queries: level means, in order
    # row 0 is its level's only member: its cross-fitted value cannot depend on its own label
    y2 = y.copy()
    y2[0] = -100.0
    ctx2, _ = with_target_stats(x, y2, q, codes[:, None], qc, np.array([1]), seed=0)
    raw = lambda c: c[0, 1] * 1.0
    assert raw(ctx) != pytest.approx(3.0)                                 # not standardised 100
    assert abs(ctx[0, 1] - ctx2[0, 1]) < 0.05 * abs(ctx[1:, 1]).max()     # own label barely moves it


def test_relevance_ranks_informative_features_first():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 6))
    y = 2 * x[:, 4] + x[:, 1] ** 2 + rng.normal(scale=0.1, size=600)
    r = relevance(x, y, False, np.array([], int), seed=0)
    assert set(np.argsort(-r)[:2]) == {1, 4}
    labels = (x[:, 2] > 0).astype(int)
    assert np.argmax(relevance(x, labels, True, np.array([], int), seed=0)) == 2
    x[:, 0] = np.arange(600)                 # a nominal column whose every level is seen once: nothing to measure
    assert relevance(x, y, False, np.array([0]), seed=0)[0] == pytest.approx(0.0, abs=1e-9)
    assert relevance(x, labels, True, np.array([0]), seed=0)[0] == pytest.approx(0.0, abs=1e-9)


def test_relevance_and_local_parts_take_one_thread(monkeypatch):
    """Their many small steps run on one OpenMP thread: threads that spin for cores another process holds made two
    fits side by side 80 times slower (docs/decisions/0014-relevance-ranked-features.md)."""
    from threadpoolctl import threadpool_info

    import feat_engine.reading.relevance as relevance_mod
    seen = []

    def spy(fn):
        return lambda *a, **k: seen.append({p["num_threads"] for p in threadpool_info() if p["user_api"] == "openmp"}) \
            or fn(*a, **k)
    monkeypatch.setattr(relevance_mod, "mutual_info_regression", spy(relevance_mod.mutual_info_regression))
    monkeypatch.setattr(lc_mod, "MiniBatchKMeans", spy(lc_mod.MiniBatchKMeans))
    x = np.random.default_rng(0).normal(size=(3000, 4))
    alone = relevance(x, x[:, 0], False, np.array([], int), seed=0)
    assert local_contexts(x, 1024, alone, seed=0) is not None
    assert seen == [{1}, {1}]


def test_ranked_members_keep_the_top_features_and_draw_the_rest_by_relevance():
    rel = np.r_[np.linspace(1, 0.5, 10), np.zeros(30)]
    members = plan_members(100, 40, 3, 8, None, 0, relevance=rel)
    assert len(members) == 3
    for m in members:
        assert len(m.features) == 8 == len(set(m.features))
        assert set(range(4)) <= set(m.features)                # TOP_SHARE * 8 = 4 most relevant
    draws = np.concatenate([ranked_features(rel, 8, np.random.default_rng(i))[4:] for i in range(200)])
    assert np.mean(draws < 10) > 0.9                            # the other draws favour relevant features


def test_local_contexts_split_blobs_and_route_queries_to_their_blob():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    blob = np.repeat(np.arange(3), 100)
    x = (centres[blob] + rng.normal(scale=0.5, size=(300, 2))).astype(np.float32)
    lc = local_contexts(x, 100, None, seed=0, overlap=1.0)
    assert lc.parts.shape == (3, 100)
    part_blob = [np.bincount(blob[p], minlength=3).argmax() for p in lc.parts]
    assert sorted(part_blob) == [0, 1, 2] and all((blob[p] == b).all() for p, b in zip(lc.parts, part_blob))
    q = centres + 0.1
    assert [part_blob[i] for i in lc.route(q)] == [0, 1, 2]
    assert local_contexts(x, 200, None, seed=0) is None          # fewer than two parts: whole context
    lc4 = local_contexts(x, 100, None, seed=0, overlap=4.0)         # 12 parts: each row read by about 4
    assert lc4.parts.shape == (12, 100) and np.bincount(lc4.parts.ravel(), minlength=300).mean() == 4
    q = x[::7]
    centre = np.array([lc4.parts[p] for p in lc4.route(q)])        # the part a row reads holds its neighbours
    assert all(np.isin(blob[c], blob[i]).all() for c, i in zip(centre, range(0, 300, 7)))


def test_grouped_local_contexts_match_the_flat_ones(monkeypatch):
    """Past GROUP parts, centres and parts are found within coarse groups (a linear fit). The
    parts must be as local as the flat search's: as many of each part's rows among the rows
    nearest the part's mean, and the cover as wide."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6000, 3)).astype(np.float32)
    size = 24

    def locality(lc) -> float:
        exact = NearestNeighbors(n_neighbors=size).fit(x).kneighbors(x[lc.parts].mean(1), return_distance=False)
        return float(np.mean([len(np.intersect1d(p, e)) / size for p, e in zip(lc.parts, exact)]))

    grouped = local_contexts(x, size, None, seed=0)
    n_parts = round(OVERLAP * len(x) / size)
    assert n_parts > GROUP and abs(len(grouped.parts) - n_parts) <= 0.05 * n_parts
    monkeypatch.setattr(lc_mod, "GROUP", 10**9)
    flat = local_contexts(x, size, None, seed=0)
    assert grouped.parts.shape[1] == size and len(flat.parts) == n_parts
    assert locality(grouped) > locality(flat) - 0.02 and locality(flat) > 0.8
    assert len(np.unique(grouped.parts)) > 0.95 * len(np.unique(flat.parts))
    assert (grouped.route(x[:200]) < len(grouped.parts)).all()


def recording_run(calls):
    def run(model, x_ctx, y_ctx, x_query, task, n_classes=None, **_):
        calls.append((np.array(x_ctx), np.array(x_query)))
        d = np.nansum((x_query[:, None, :] - x_ctx[None]) ** 2, axis=-1)
        nn = np.argmin(d, axis=1)
        if task == "regression":
            return RunResult(logits=None, pred=np.asarray(y_ctx)[nn], recon=None, attention=None)
        logits = np.full((len(x_query), 10), -np.inf)
        logits[:, :n_classes] = 0.0
        logits[np.arange(len(x_query)), np.asarray(y_ctx)[nn].astype(int)] = 30.0
        return RunResult(logits=logits, pred=None, recon=None, attention=None)
    return run


def test_each_query_reads_only_its_local_part_standardised_like_a_prior_table(monkeypatch):
    calls = []
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run(calls)))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = 100 + 10 * (X[:, 0] + X[:, 1])
    reg = FEATRegressor(n_estimators=2, local_context=100, view=None).fit(X, y)
    n_parts = round(OVERLAP * 400 / 100)
    assert all(m.local is not None and m.local.parts.shape == (n_parts, 100) for m in reg.members_)
    pred = reg.predict(X[:50])
    assert pred.shape == (50,) and len(calls) > 2
    for c, _ in calls:                                           # each run reads one part of 100 rows,
        assert len(c) == 100                                     # standardised with its own statistics
        np.testing.assert_allclose(c.mean(0), 0, atol=1e-6)
        np.testing.assert_allclose(c.std(0), 1, atol=1e-6)
    assert np.isin(np.round(pred, 6), np.round(y, 6)).mean() > 0  # 1-NN answers come back in y's units
    assert 80 < pred.mean() < 120
    # a query reads the part its own member routes it to
    m = reg.members_[0]
    route = m.local.route(reg.preprocessor_.transform(pd.DataFrame(X[:50]))[:, m.features])
    part = reg.context_[m.rows][:, m.features][m.local.parts[route[0]]]
    q0 = reg.preprocessor_.transform(pd.DataFrame(X[:1]))[:, m.features]
    expected = standardise(np.vstack([part, q0]), len(part))
    assert any(np.allclose(c, expected[:-1]) and np.any(np.all(np.isclose(q, expected[-1]), axis=1))
               for c, q in calls[:len(np.unique(route))])


def test_the_reading_budget_lowers_members_first_then_rows():
    """Within the budget every member reads every row; past it fewer members, then one member of the rows that
    fit (never fewer than two parts, so it still reads local parts); one-vs-rest classes count once each."""
    one = context_cells(10_000, 20, 1, 1024)
    assert one == 10_000 * 21 * OVERLAP and context_cells(1_000, 20, 1, 1024) == 1_000 * 21
    assert plan_reading(10_000, 20, 1, 4, None, 1024, 4 * one) == ReadPlan(4, 10_000, 4 * one, False, 20)
    assert plan_reading(10_000, 20, 1, 4, None, 1024, 2 * one + 5) == ReadPlan(2, 10_000, 2 * one, True, 20)
    capped = plan_reading(10_000, 20, 1, 4, None, 1024, one // 2)
    assert capped.members == 1 and capped.rows == 5_000 and capped.cells <= one // 2 and capped.capped
    assert plan_reading(10_000, 20, 2, 4, None, 1024, one).rows == 5_000          # two labellings (classes)
    assert plan_reading(10_000, 20, 1, 4, None, 1024, 10).rows == 2_048          # two parts at least
    assert plan_reading(10_000, 20, 1, 4, 3_000, 1024, None) == ReadPlan(4, 3_000, 4 * 3_000 * 21 * 2, False, 20)


def test_a_budget_capped_fit_reads_fewer_rows_and_fits_the_stacked_model_on_every_row(monkeypatch):
    """A read budget below one member of every row: one member of a random share of the rows is read (each run
    one of its local parts), while the target statistics and the stacked model are fitted on every row; each
    query's prediction is its own, whatever else is predicted with it."""
    calls = []
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run(calls)))
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1_200, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=1_200) > 0).astype(int)
    budget = context_cells(600, 4, 1, 100)
    clf = FEATClassifier(n_estimators=3, local_context=100, view="additive", read_budget=budget).fit(X, y)
    assert clf.read_plan_.members == 1 and clf.read_plan_.rows == 600 and len(clf.members_) == 1
    assert len(clf.members_[0].rows) == 600 and "600 of the 1,200 context rows" in clf.reading_
    assert len(clf.run_inputs_[0][None].stacked.context) == 1_200              # fitted on every row
    assert all(len(c) == 100 for c, _ in calls)
    full = clf.predict_proba(X[:40])
    np.testing.assert_allclose(np.concatenate([clf.predict_proba(X[i:i + 1]) for i in range(5)]), full[:5],
                               rtol=1e-6, atol=1e-7)


def test_a_fit_reading_a_fifth_of_the_rows_or_fewer_fits_their_out_of_fold_values_once(monkeypatch):
    """A budget-capped member that reads at most a fifth of the context rows: its tree model is fitted twice, on
    the rows it does not read (their out-of-fold values) and on every row (the queries'), not once per fold; the
    rows it reads have values, the others none; each query's prediction is its own."""
    from feat_engine.reading import stacked_model

    calls, fits = [], []
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run(calls)))
    fit = stacked_model.BoostedTrees.fit
    monkeypatch.setattr(stacked_model.BoostedTrees, "fit", lambda self, x, y: fits.append(len(x)) or fit(self, x, y))
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2_000, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=2_000) > 0).astype(int)
    budget = context_cells(400, 4, 1, 100)
    clf = FEATClassifier(n_estimators=2, local_context=100, view="trees", read_budget=budget).fit(X, y)
    assert len(clf.members_) == 1 and len(clf.members_[0].rows) == 400 and fits == [1_600, 2_000]
    column = clf.run_inputs_[0][None].stacked.context          # in the member's fit order: its own rows first
    assert np.isfinite(column[:400]).all() and np.isnan(column[400:]).all()
    full = clf.predict_proba(X[:40])
    np.testing.assert_allclose(np.concatenate([clf.predict_proba(X[i:i + 1]) for i in range(5)]), full[:5],
                               rtol=1e-6, atol=1e-7)


def test_quantile_view_spreads_heavy_tails_keeps_order_and_leaves_flags_and_missing_cells():
    rng = np.random.default_rng(0)
    raw = np.column_stack([rng.lognormal(0, 1.5, 500), rng.integers(0, 2, 500), rng.lognormal(0, 1.0, 500)])
    raw[rng.random(500) < 0.2, 2] = np.nan
    x = standardise(raw, 400).astype(np.float32)
    ctx, q = quantile_normal(x[:400], x[400:])
    assert ctx.shape == (400, 3) and q.shape == (100, 3)
    np.testing.assert_array_equal(ctx[:, 1], x[:400, 1])                 # two values: left as it is
    np.testing.assert_array_equal(np.isnan(ctx), np.isnan(x[:400]))      # missing stays missing
    np.testing.assert_array_equal(np.isnan(q), np.isnan(x[400:]))
    for j in (0, 2):
        ok = np.isfinite(x[:400, j])
        assert (np.diff(ctx[ok, j][np.argsort(x[:400, j][ok])]) >= 0).all()   # order kept
        assert abs(np.nanmean(ctx[:, j])) < 1e-5 and abs(np.nanstd(ctx[:, j]) - 1) < 1e-4

    def skew(v):
        v = v[np.isfinite(v)]
        return float(np.mean(((v - v.mean()) / v.std()) ** 3))
    assert skew(x[:400, 0]) > 2 and abs(skew(ctx[:, 0])) < 0.15 * skew(x[:400, 0])   # the tail is spread out
    alone = np.vstack([quantile_normal(x[:400], x[400 + i:401 + i])[1] for i in range(5)])
    np.testing.assert_array_equal(alone, q[:5])                          # a query depends on itself only
    np.testing.assert_array_equal(quantile_normal(x[:400], x[:0])[0], ctx)  # no queries: the same context
    from sklearn.preprocessing import QuantileTransformer     # the library's transform of each matrix on its own
    qt = QuantileTransformer(n_quantiles=400, output_distribution="normal", random_state=0)
    qt.fit(x[:400, [0, 2]].astype(np.float64))
    each = standardise(np.vstack([qt.transform(a[:, [0, 2]].astype(np.float64)) for a in (x[:400], x[400:])]), 400)
    np.testing.assert_array_equal(np.vstack([ctx, q])[:, [0, 2]], each.astype(np.float32))


def test_odd_members_read_the_quantile_view(monkeypatch):
    calls = []
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run(calls)))
    X = np.random.default_rng(2).lognormal(0, 1.5, size=(300, 3))
    reg = FEATRegressor(n_estimators=2, local_context=None, view=None).fit(X, np.log(X[:, 0]))
    reg.predict(X[:20])
    assert len(calls) == 2
    for m, (c, q) in zip(reg.members_, calls):
        ctx, xq = reg.context_[m.rows][:, m.features], reg.preprocessor_.transform(pd.DataFrame(X[:20]))[:, m.features]
        want = quantile_normal(ctx, xq) if m.index % 2 else (ctx, xq)
        np.testing.assert_allclose(c, want[0], atol=1e-6)
        np.testing.assert_allclose(q, want[1], atol=1e-6)
    assert not np.allclose(calls[0][0], calls[1][0], atol=1e-2)
    assert reg.reading_.startswith("2 member(s), 1 reading numbers in the quantile view and the target on a power scale;")


def lognormal_target(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return x, 250.0 * np.exp(x[:, 0] + 0.3 * rng.normal(size=n))


def test_power_target_round_trips_caps_lambda_and_ignores_the_targets_units():
    _, target = lognormal_target()
    origin, scale = target.mean(), target.std()
    y = (target - origin) / scale
    pt = fit_power_target(y, origin, scale)
    z = pt.forward(y)
    assert abs(z.mean()) < 1e-5 and abs(z.std() - 1) < 1e-4
    np.testing.assert_allclose((pt.lo, pt.hi), (z.min(), z.max()), atol=1e-6)
    free = PowerTransformer(standardize=False).fit((target / np.median(target))[:, None]).lambdas_[0]
    assert free < 0 and pt.transformer.lambdas_[0] == 0.0        # the MLE is past the log: kept at the log
    np.testing.assert_allclose(pt.mean_of(z), y, atol=1e-5)     # no residuals: the plain inverse
    ten = fit_power_target(y, 10 * origin, 10 * scale)          # the same target in other units
    np.testing.assert_allclose(ten.forward(y), z, atol=1e-6)
    skew = lambda v: float(np.mean(((v - v.mean()) / v.std()) ** 3))  # noqa: E731
    assert skew(y) > 2 and abs(skew(z)) < 0.25 * skew(y)                 # the tail drawn in


def test_power_target_means_average_the_inverse_over_the_residual_quantiles():
    _, target = lognormal_target()
    y = (target - target.mean()) / target.std()
    pt = fit_power_target(y, target.mean(), target.std())
    res = np.random.default_rng(1).normal(scale=0.4, size=300)
    res -= res.mean()                                           # centred: Jensen's inequality below
    smeared = pt.with_residuals(res)
    assert len(smeared.residuals) == 64
    z = np.array([-1.0, 0.0, 0.5, 2.0, 10.0])
    want = []                                                   # the slow version: one inverse per residual
    for zi in z:
        vals = []
        for r in smeared.residuals:
            t = np.clip(zi + r, pt.lo, pt.hi) * pt.std + pt.mean
            raw = pt.transformer.inverse_transform([[t]])[0, 0] * pt.unit
            vals.append((raw - pt.origin) / pt.scale)
        want.append(np.mean(vals))
    np.testing.assert_allclose(smeared.mean_of(z), want, rtol=1e-10)
    assert (smeared.mean_of(z[:3]) > pt.mean_of(z[:3])).all()   # a convex inverse: the mean is above the median
    assert smeared.mean_of(z).max() <= y.max() + 1e-9           # bounded by the context's range


def test_power_members_map_their_outputs_back_and_each_query_still_reads_alone(monkeypatch):
    calls, labels = [], []
    record = recording_run(calls)

    def run(model, x_ctx, y_ctx, x_query, task, **kw):
        labels.append(np.array(y_ctx))
        return record(model, x_ctx, y_ctx, x_query, task, **kw)
    monkeypatch.setattr(runner, "run_tables", per_table(run))
    X, target = lognormal_target()
    reg = FEATRegressor(n_estimators=2, local_context=None).fit(X[:300], target[:300])
    pred = reg.predict(X[300:])
    inputs = [r[None] for r in reg.run_inputs_]
    assert inputs[0].target is None and inputs[1].target is not None and len(inputs[1].target.residuals) == 64
    np.testing.assert_allclose(labels[0], reg.y_[reg.members_[0].rows], atol=1e-6)
    np.testing.assert_allclose(labels[1], inputs[1].target.forward(reg.y_[reg.members_[1].rows]), atol=1e-6)
    outs = reg._outputs(*reg._query_rows(X[300:]))
    member = [inputs[i].output(blend_prediction(p, v, reg._weight())) for i, (p, v) in enumerate(outs)]
    np.testing.assert_allclose(pred, reg.scaler_.inverse_transform(np.mean(member, axis=0)), rtol=1e-6)
    power = np.asarray(member[1], np.float64) * reg.scaler_.std_ + reg.scaler_.mean_      # before the range's clip
    assert target[:300].min() - 1e-6 <= power.min() and power.max() <= target[:300].max() + 1e-6
    alone = np.concatenate([reg.predict(X[300 + i:301 + i]) for i in range(4)])
    np.testing.assert_allclose(alone, pred[:4], rtol=1e-6)


def test_a_target_one_value_of_which_holds_half_the_rows_is_read_as_it_is(monkeypatch):
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run([])))
    X, target = lognormal_target()
    mostly_zero = np.where(np.arange(len(target)) % 3 == 0, target, 0.0)          # two thirds of the rows 0
    reg = FEATRegressor(n_estimators=2, local_context=None).fit(X[:300], mostly_zero[:300])
    assert not reg.power_scale_ and all(r[None].target is None for r in reg.run_inputs_)
    assert "power scale" not in reg.reading_
    skewed = FEATRegressor(n_estimators=2, local_context=None).fit(X[:300], target[:300])
    assert skewed.power_scale_ and skewed.run_inputs_[1][None].target is not None


@pytest.mark.parametrize("Est, k", [(FEATRegressor, 0), (FEATClassifier, 2), (FEATClassifier, 3)])
def test_query_rows_are_independent_with_stats_ranking_and_local_contexts(Est, k):
    X, y = nominal_table(n=300)
    for j in range(30):                                  # wide: 34 features > 24
        X[f"noise{j}"] = np.random.default_rng(j).normal(size=len(X))
    y = y if k == 0 else np.digitize(y, np.quantile(y, np.linspace(0, 1, k + 1)[1:-1]))
    m = Est(n_estimators=2, local_context=64).fit(X.iloc[:240], y[:240])
    assert m.relevance_ is not None and all(mm.local is not None for mm in m.members_)
    assert "23 of 34 features per member, most relevant first" in m.reading_ and "local parts of 64 rows" in m.reading_
    assert "prediction as one more feature (boosted trees for" in m.reading_      # 23 + 1: the trained width
    f = m.predict if Est is FEATRegressor else m.predict_proba
    Xq = X.iloc[240:]
    full = f(Xq)
    alone = np.concatenate([f(Xq.iloc[i:i + 1]) for i in range(4)])
    np.testing.assert_allclose(alone, full[:4], rtol=1e-5, atol=1e-6)
    perm = np.random.default_rng(0).permutation(len(Xq))
    np.testing.assert_allclose(f(Xq.iloc[perm]), full[perm], rtol=1e-5, atol=1e-6)


def test_local_context_is_checked_and_can_be_switched_off():
    X, y = nominal_table()
    with pytest.raises(ValueError, match="local_context must be"):
        FEATRegressor(local_context=0).fit(X, y)
    reg = FEATRegressor(n_estimators=1, local_context=None).fit(X, y)
    assert reg.members_[0].local is None and reg.relevance_ is None
    assert "target statistics for 1 nominal column(s) (state)" in reg.reading_
    assert "all 4 features" in reg.reading_ and "the whole context of 240 rows" in reg.reading_


def test_reading_choice_keeps_the_default_unless_another_is_clearly_better():
    calls = []

    def held_out_loss(better):
        def loss(size, tr, va):
            calls.append((size, len(tr), va))
            noise = np.random.default_rng(len(calls)).normal(scale=0.01, size=len(va))
            return 1.0 + noise - (0.1 if size is not None and size < 512 * 0.9 and better else 0.0)
        return loss

    choice = choose_local_context(3000, held_out_loss(True), 1024, seed=0)
    assert choice.size == 512 and choice.z[512] > 2 and choice.rows == 3000
    held = np.concatenate([va for size, _, va in calls if size == 1024 * 2400 // 3000])
    assert np.array_equal(np.sort(held), np.arange(3000))             # 5 folds score every row once
    assert sorted({s for s, _, _ in calls}, key=str) == sorted({410, 819, None}, key=str)  # parts scaled to 4/5
    assert choose_local_context(3000, held_out_loss(False), 1024, seed=0).size == 1024
    calls.clear()
    long = choose_local_context(20_000, held_out_loss(False), 1024, seed=0)
    assert long.rows == HOLDOUT and len(calls) == 3                    # long tables: one held-out set
    calls.clear()
    choose_local_context(WHOLE_ROWS + 1, held_out_loss(False), 1024, seed=0)
    assert {s for s, _, _ in calls} == {round(512 * (WHOLE_ROWS + 1 - HOLDOUT) / (WHOLE_ROWS + 1)),
                                        round(1024 * (WHOLE_ROWS + 1 - HOLDOUT) / (WHOLE_ROWS + 1))}  # no whole reading
    calls.clear()
    assert choose_local_context(900, held_out_loss(True), 1024).size is None and not calls   # one reading only


def test_auto_reading_chooses_small_parts_where_the_target_is_local(monkeypatch):
    """With a model that predicts the mean of the context it reads, smaller parts predict a local
    target better; on a target that is noise the default reading stays."""
    def mean_run(model, x_ctx, y_ctx, x_query, task, progress=None, **_):
        if progress is not None:
            progress(1, 1, "read")
        return RunResult(logits=None, pred=np.full(len(x_query), float(np.mean(y_ctx))), recon=None, attention=None)
    monkeypatch.setattr(runner, "run_tables", per_table(mean_run))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2400, 2))
    seen = []
    local = X[:, 0] + 0.5 * rng.normal(size=2400)      # with noise: an exact target is its stacked model's alone
    reg = FEATRegressor(n_estimators=2, local_context="auto", progress=lambda d, t, msg: seen.append(msg)).fit(X, local)
    assert any(msg.startswith("choosing the reading, parts of 410: member 1/1") for msg in seen)   # 512 x 4/5
    assert reg.local_context_ == 512 and reg.members_[0].local.parts.shape[1] == 512
    assert "parts of 512 rows" in reg.reading_ and "chosen on 2,400 held-out context rows" in reg.reading_
    noise = FEATRegressor(n_estimators=1, local_context="auto").fit(X, rng.normal(size=2400))
    assert noise.local_context_ == 1024 and noise.reading_choice_.z[512] < 2
    with pytest.raises(ValueError, match="local_context must be >= 1, None or 'auto'"):
        FEATRegressor(local_context="best").fit(X, X[:, 0])


def test_auto_reading_scores_classes_by_the_log_loss_of_the_true_class(monkeypatch):
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run([])))
    X, y = nominal_table(n=240)
    labels = np.array(["a", "b", "c"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    clf = FEATClassifier(n_estimators=1, random_state=0).fit(X, labels)
    loss = clf._held_out_loss(X, clf.y_, True, len(X))(None, np.arange(200), np.arange(200, 240))
    p = FEATClassifier(n_estimators=1, random_state=0, local_context=None).fit(X.iloc[:200], clf.y_[:200]) \
        .predict_proba(X.iloc[200:])
    np.testing.assert_allclose(loss, -np.log(np.clip(p[np.arange(40), clf.y_[200:]], 1e-6, 1)))


@pytest.mark.parametrize("Est", [FEATRegressor, FEATClassifier])
def test_local_parts_on_worker_threads_equal_the_parts_in_turn(Est):
    """The parts of a long context run two at a time on two threads (`map_runs`): the same predictions as
    one part at a time, and progress only ever reaches the caller on its own thread, in a stream per call (`fit`'s
    fits and blend, then `predict`'s runs) that never moves back."""
    import threading

    import torch
    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 4))
    y = X[:, 0] + np.sin(3 * X[:, 1])
    y = y if Est is FEATRegressor else (y > 0).astype(int)
    before, got = torch.get_num_threads(), {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            said, calls = [], []
            est = Est(n_estimators=1, local_context=64,
                      progress=lambda d, t, m: said.append((d / t, threading.get_ident()))).fit(X[:600], y[:600])
            calls.append(said[:])
            said.clear()
            got[threads] = est.predict(X[600:]) if Est is FEATRegressor else est.predict_proba(X[600:])
            calls.append(said[:])
            for call in calls:
                fracs = [f for f, _ in call]
                assert {t for _, t in call} == {threading.get_ident()} and fracs == sorted(fracs) and fracs[-1] == 1.0
    finally:
        torch.set_num_threads(before)
    assert len(np.unique(est.members_[0].local.route(est.preprocessor_.transform(pd.DataFrame(X[600:]))))) > 2
    np.testing.assert_allclose(got[2], got[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("Est", [FEATRegressor, FEATClassifier])
def test_local_parts_read_in_batches_equal_the_parts_one_by_one(Est, monkeypatch):
    """Where a device reads several parts per engine run (`TABLES_PER_RUN`, a GPU's 32), a member's parts go to
    `run_tables` in fixed batches of consecutive parts: the predictions of one part at a time, each query's
    the same alone as among the others, and progress counted in batches."""
    import feat_engine.inference as inf_mod
    rng = np.random.default_rng(5)
    X = rng.normal(size=(900, 4))
    y = X[:, 0] + np.sin(3 * X[:, 1])
    y = y if Est is FEATRegressor else (y > 0).astype(int)
    sizes, got = [], {}
    real = runner.run_tables

    def counted(model, x_ctx, *args, **kwargs):
        sizes.append(len(x_ctx))
        return real(model, x_ctx, *args, **kwargs)
    monkeypatch.setattr(runner, "run_tables", counted)
    for per_run in (1, 3):
        monkeypatch.setitem(inf_mod.TABLES_PER_RUN, "cpu", per_run)
        said = []
        est = Est(n_estimators=1, local_context=64, precision="fp32",
                  progress=lambda d, t, m: said.append((d / t, m))).fit(X[:800], y[:800])
        assert said[-1][0] == 1.0 and [frac for frac, _ in said] == sorted(frac for frac, _ in said)   # fit's stream
        f = est.predict if Est is FEATRegressor else est.predict_proba
        sizes.clear()
        said.clear()
        got[per_run] = f(X[800:])
        assert said[-1][0] == 1.0 and [frac for frac, _ in said] == sorted(frac for frac, _ in said)
        n_parts = len(est.members_[0].local.parts)
        assert set(sizes) == {1} if per_run == 1 else 3 in sizes and set(sizes) <= {3, n_parts % 3}
        if per_run == 3:
            assert any("batch of parts" in m for _, m in said)
            np.testing.assert_allclose(np.concatenate([f(X[800 + i:801 + i]) for i in (0, 50, 99)]),
                                       got[3][[0, 50, 99]], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[3], got[1], rtol=1e-5, atol=1e-5)


def _hand_basis(x: np.ndarray, xq: np.ndarray, splines: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Each column and its cubic B-splines with 5 knots at the context's quantiles, written out with scikit-learn
    (`splines` False: the columns alone)."""
    from sklearn.preprocessing import SplineTransformer

    if not splines:
        return x, xq
    s = SplineTransformer(n_knots=5, degree=3, knots="quantile", extrapolation="linear").fit(x)
    return np.c_[x, s.transform(x)], np.c_[xq, s.transform(xq)]


def test_the_spline_basis_of_some_rows_is_those_rows_of_the_whole_basis():
    """The additive view makes its design for the rows a fit or a fold reads (`_cross_fitted`'s `design`), never
    the whole context's: the same matrices only where each row's basis depends on that row alone, to the bit, for
    missing cells and values beyond the outer knots too."""
    from sklearn.preprocessing import SplineTransformer

    from feat_engine.reading.stacked_model import KNOTS, basis

    rng = np.random.default_rng(7)
    x = rng.standard_t(2, size=(5_000, 6))
    x[rng.uniform(size=x.shape) < 0.05] = np.nan
    splines = SplineTransformer(n_knots=KNOTS, degree=3, knots="quantile", extrapolation="linear")
    splines.fit(np.nan_to_num(x[:500]))                   # the other rows reach past its outer knots
    rows = rng.choice(5_000, 700, replace=False)
    np.testing.assert_array_equal(basis(splines, x[rows]), basis(splines, x)[rows])


def _view(x, y, xq, classification, seed):
    """The fitted view's context column and its values for the queries xq (None where there is no view)."""
    v = fit_additive_model(x, y, classification, seed)
    return None if v is None else (v.context, v.queries(xq))


def _hand_ridge_view(x, y, xq, seed, splines):
    """(out-of-fold mean squared error, standardised context column, standardised query column) of ridge on the
    hand-written basis, cross-fitted as the view is."""
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import KFold

    from feat_engine.reading.stacked_model import FOLDS

    b, bq = _hand_basis(np.nan_to_num(x), xq, splines)
    oof = np.empty(len(y))
    for tr, va in KFold(FOLDS, shuffle=True, random_state=seed).split(b):
        oof[va] = Ridge().fit(b[tr], y[tr]).predict(b[va])
    full = Ridge().fit(b, y).predict(bq)
    own = Ridge().fit(b, y).predict(b)
    return np.mean((oof - y) ** 2), (oof - oof.mean()) / oof.std(), (full - oof.mean()) / oof.std(), \
        (own - oof.mean()) / oof.std()


@pytest.mark.parametrize("curved", [True, False])
def test_additive_view_is_cross_fitted_and_a_query_reads_the_whole_context_model(curved):
    """The context column holds each row's prediction by the ridge fitted on the other folds, the query column
    the ridge fitted on every context row, both standardised with the context column's statistics, over each
    feature and its B-splines or over the features alone, whichever loses less out of fold: the splines where
    an effect is curved, the straight lines where the effects are; a query's value depends on that query alone."""
    rng = np.random.default_rng(0)
    x, xq = rng.normal(size=(60, 4)), rng.normal(size=(7, 4))
    x[3, 1] = np.nan                                                  # missing cells read as the mean, 0
    y = (x[:, 0] ** 2 if curved else x[:, 0]) - 2 * np.nan_to_num(x[:, 1]) + 0.1 * rng.normal(size=60)
    c, q = _view(x, y, xq, classification=False, seed=3)
    hand = {splines: _hand_ridge_view(x, y, xq, 3, splines) for splines in (True, False)}
    chosen = min(hand, key=lambda k: hand[k][0])
    assert chosen == curved
    np.testing.assert_allclose(c, hand[chosen][1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(q, hand[chosen][2], rtol=1e-5, atol=1e-5)
    assert not np.allclose(c, hand[chosen][3], atol=1e-3)            # no row reads its own label
    np.testing.assert_allclose(_view(x, y, xq[2:3], False, 3)[1], q[2:3], rtol=1e-6)


def test_additive_view_reads_curved_effects_and_heavy_tails_that_a_line_misses():
    """The splines let the view follow a U-shaped effect (a line through it predicts nothing) and a
    heavy-tailed feature whose effect saturates."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(600, 3))
    x[:, 1] = rng.standard_t(1.5, size=600).clip(-5, 5)              # standardised and clipped, as the runs get it
    y = x[:, 0] ** 2 + np.tanh(3 * x[:, 1]) + 0.1 * rng.normal(size=600)
    c, _ = _view(x, y, x[:5], classification=False, seed=0)
    assert np.corrcoef(c, y)[0, 1] > 0.95
    straight = np.c_[x, np.ones(600)] @ np.linalg.lstsq(np.c_[x, np.ones(600)], y, rcond=None)[0]
    assert np.corrcoef(straight, y)[0, 1] < 0.8                        # what a line through the same columns reads


def test_additive_view_of_a_wide_table_reads_straight_lines(monkeypatch):
    """Past MAX_BASIS design columns the splines are not fitted at all: the features enter alone, past
    NEWTON_COLUMNS through lbfgs for a binary run (a Cholesky factor of so many columns is too large)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import SplineTransformer

    import feat_engine.reading.stacked_model as lv

    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 40))
    y = x @ rng.normal(size=40) / np.sqrt(40) + 0.3 * rng.normal(size=300)
    v = fit_additive_model(x, y, False, 0)                              # 40 x 8 = 320 columns: the lines alone
    assert v.design(x[:2]).shape == (2, 40)
    fitted, solvers = [], []
    monkeypatch.setattr(lv, "MAX_BASIS", 39)
    monkeypatch.setattr(lv, "NEWTON_COLUMNS", 39)
    monkeypatch.setattr(SplineTransformer, "fit", lambda self, *a, **k: fitted.append(1) or self)
    real = LogisticRegression.fit
    monkeypatch.setattr(LogisticRegression, "fit",
                        lambda self, x, *a, **k: (solvers.append((self.solver, x.shape[1])), real(self, x, *a, **k))[1])
    w = fit_additive_model(x, (y > 0).astype(int), True, 0)
    models = {solver for solver, columns in solvers if columns > 1}        # not the 1-column recalibrations
    assert not fitted and models == {"lbfgs"} and w.design(x[:2]).shape == (2, 40)


def test_view_fits_read_at_most_fit_rows(monkeypatch):
    """Past FIT_ROWS a fit of the additive model reads a random subset of its rows; every context row still gets an
    out-of-fold value. A candidate that is not chosen is never fitted on the whole context. The trees read every
    row."""
    from sklearn.linear_model import Ridge

    import feat_engine.reading.stacked_model as lv

    seen = []
    real_fit = Ridge.fit
    monkeypatch.setattr(lv, "FIT_ROWS", 30)
    monkeypatch.setattr(Ridge, "fit", lambda self, b, y: (seen.append(len(b)), real_fit(self, b, y))[1])
    rng = np.random.default_rng(2)
    x = rng.normal(size=(100, 2))
    c, q = _view(x, x[:, 0], x[:4], classification=False, seed=0)
    # splines' and lines' folds, then the whole-context fit of the one chosen alone
    assert seen == [30] * (2 * lv.FOLDS + 1) and len(c) == 100 and np.isfinite(c).all()
    assert np.corrcoef(c, x[:, 0])[0, 1] > 0.9
    grown, real_trees = [], lv.BoostedTrees.fit
    monkeypatch.setattr(lv.BoostedTrees, "fit", lambda self, b, y: (grown.append(len(b)), real_trees(self, b, y))[1])
    fit_tree_model(x, x[:, 0], False, 0)
    assert grown == [80] * lv.FOLDS + [100]


def test_additive_view_of_a_binary_run_is_the_logit_and_absent_where_it_cannot_be_cross_fitted():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    x = rng.normal(size=(80, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)
    c, q = _view(x, y, x[:5], classification=True, seed=0)
    logits = [LogisticRegression(max_iter=1000).fit(b, y).decision_function(bq)
              for b, bq in (_hand_basis(x, x[:5], splines) for splines in (True, False))]
    assert max(np.corrcoef(q, lg)[0, 1] for lg in logits) > 0.999 and np.corrcoef(c, x[:, 0])[0, 1] > 0.8
    assert _view(x, np.arange(80) % 3, x[:5], True, 0) is None          # three classes: no single target
    assert _view(x, (np.arange(80) == 0).astype(int), x[:5], True, 0) is None   # one row of a class
    assert _view(x[:9], x[:9, 0], x[:5], False, 0) is None               # too few rows for five folds
    assert _view(x[:6], np.array([0, 1, 0, 1, 0, 1]), x[:2], True, 0) is not None  # folds fit the classes


def test_tree_view_is_cross_fitted_boosting_and_a_query_reads_the_whole_context_model():
    """The tree view's context column holds each row's out-of-fold prediction of LightGBM's gradient boosting at
    its defaults but for the bins, 63 on this short context (missing cells as they are), the query column the model
    fitted on every context row, both standardised with the context column's statistics; a query's value depends on
    that query alone."""
    from sklearn.model_selection import KFold

    from test_blend import lightgbm_regressor

    from feat_engine.reading.stacked_model import FOLDS

    rng = np.random.default_rng(0)
    x, xq = rng.normal(size=(120, 3)), rng.normal(size=(6, 3))
    x[5, 2] = np.nan
    y = (x[:, 0] > 0) * 2.0 + x[:, 1] + 0.1 * rng.normal(size=120)
    v = fit_tree_model(x, y, False, seed=4)
    oof = np.empty(120)
    for tr, va in KFold(FOLDS, shuffle=True, random_state=4).split(x):
        oof[va] = lightgbm_regressor(4).fit(x[tr], y[tr]).predict(x[va])
    full = lightgbm_regressor(4).fit(x, y).predict(xq)
    assert v.kind == "trees"
    np.testing.assert_allclose(v.context, (oof - oof.mean()) / oof.std(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v.queries(xq), (full - oof.mean()) / oof.std(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v.queries(xq[3:4]), v.queries(xq)[3:4], rtol=1e-6)
    slope, intercept = np.polyfit(oof, y, 1)                  # the loss of the column recalibrated by a line
    assert v.loss == pytest.approx(np.mean((slope * oof + intercept - y) ** 2))


def test_auto_view_is_the_one_that_predicts_the_context_better_out_of_fold():
    """"auto" reads boosted trees where the target is a threshold interaction, which no sum of smooth effects
    fits, and the additive model where it is a dense sum of many features at few rows, where trees
    overfit; either way the view with the lower out-of-fold loss, and a query's value still its own."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 4))
    step = ((x[:, 0] > 0) & (x[:, 1] > 0)).astype(int)                  # an AND of two thresholds
    auto, add, trees = (fit_stacked_models(x, step, True, 0, kind)[0] for kind in ("auto", "additive", "trees"))
    assert auto.kind == "trees" and trees.loss < add.loss
    np.testing.assert_array_equal(auto.context, trees.context)
    w = rng.normal(size=(150, 30))
    dense = w @ rng.normal(size=30)
    auto, add, trees = (fit_stacked_models(w, dense, False, 0, kind)[0] for kind in ("auto", "additive", "trees"))
    assert auto.kind == "additive" and add.loss < trees.loss
    assert fit_stacked_models(w, dense, False, 0, None) == (None, None)
    with pytest.raises(ValueError, match="'forest'"):
        fit_stacked_models(w, dense, False, 0, "forest")
    with pytest.raises(FEATInputError, match="view must be one of .* got 'forest'"):
        FEATRegressor(view="forest").fit(w, dense)


def test_views_are_compared_and_blended_recalibrated():
    """A view's out-of-fold loss is that of its column recalibrated (Platt's scaling of a class label's logit, a line
    for a number), as the engine reads the column through its own calibration: a model that ranks as well but is
    overconfident (its logits times 5) loses the same, where its raw log-loss is higher, and gives the blend the same
    prediction."""
    from sklearn.linear_model import LogisticRegression, Ridge

    from feat_engine.reading.stacked_model import _cross_fitted

    class Loud(LogisticRegression):
        def decision_function(self, x):
            return 5 * super().decision_function(x)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = (x[:, 0] + rng.normal(size=400) > 0).astype(int)
    quiet, loud = (_cross_fitted("additive", x.__getitem__, None, y, True, lambda threads, m=m: m(), 0)
                   for m in (LogisticRegression, Loud))
    raw = 5 * (quiet.context * quiet.std + quiet.mean)
    assert quiet.loss == pytest.approx(loud.loss, rel=1e-6)
    assert loud.loss < 0.8 * np.mean(np.logaddexp(0, raw) - y * raw)
    np.testing.assert_allclose(loud.predicted(loud.context), quiet.predicted(quiet.context), rtol=1e-5, atol=1e-5)
    target = x[:, 0] + x[:, 1]
    line = _cross_fitted("additive", x.__getitem__, None, target, False, lambda threads: Ridge(alpha=400.0), 0)
    shrunk = line.context * line.std + line.mean           # a ridge this strong shrinks its predictions by half
    assert line.loss < 0.5 * np.mean((shrunk - target) ** 2)
    assert np.mean((line.predicted(line.context) - target) ** 2) == pytest.approx(line.loss, rel=1e-4)


def test_the_other_kind_is_read_beside_where_it_loses_little_more():
    """With `beside`, the best candidate of the other kind comes second, fitted on the whole context, where its
    out-of-fold loss is at most BESIDE_LOSS times the chosen one's (a noisy sum of a line and a step: both kinds
    read part of it), and not where it is far worse (a pure step, which no sum of smooth effects fits)."""
    from feat_engine.reading.stacked_model import BESIDE_LOSS

    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 4))
    y = x[:, 0] + (x[:, 1] > 0) + rng.normal(size=600)
    chosen, beside = fit_stacked_models(x, y, False, 0, "auto", beside=True)
    assert (chosen.kind, beside.kind) == ("additive", "trees") and beside.model is not None
    assert chosen.loss < beside.loss <= BESIDE_LOSS * chosen.loss
    np.testing.assert_array_equal(beside.context, fit_stacked_models(x, y, False, 0, "trees")[0].context)
    assert fit_stacked_models(x, y, False, 0, "auto")[1] is None                  # only when asked
    assert fit_stacked_models(x, y, False, 0, "additive", beside=True)[1] is None    # only with "auto"
    step = ((x[:, 0] > 0) & (x[:, 1] > 0)).astype(int)
    chosen, beside = fit_stacked_models(x, step, True, 0, "auto", beside=True)
    additive = fit_stacked_models(x, step, True, 0, "additive")[0]
    assert chosen.kind == "trees" and beside is None and additive.loss > BESIDE_LOSS * chosen.loss


def test_the_view_reaches_the_model_in_one_feature_slot(monkeypatch):
    """With the view on, each run reads the member's features and one more column, the view, with
    column identities for that width; a dense linear target is predicted far better with it."""
    calls = []
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run(calls)))
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 30))
    y = X @ rng.normal(size=30)
    reg = FEATRegressor(n_estimators=1, local_context=None, blend=False).fit(X[:150], y[:150])   # the runs read it
    assert len(reg.members_[0].features) == 23                   # the trained width of 24, less the view's slot
    reg.predict(X[150:])
    ctx, q = calls[0]
    assert ctx.shape == (150, 24) and q.shape == (50, 24)
    assert np.corrcoef(ctx[:, 0], reg.y_[reg.members_[0].rows])[0, 1] > 0.9   # the first column is the view's prediction
    monkeypatch.undo()
    r2 = {}
    for on in (False, True):
        p = FEATRegressor(n_estimators=1, view="additive" if on else None).fit(X[:150], y[:150]).predict(X[150:])
        r2[on] = 1 - ((p - y[150:]) ** 2).mean() / y[150:].var()
    assert r2[True] > r2[False] + 0.1, r2


def test_statistics_and_view_are_fitted_at_fit_and_predict_only_applies_them(monkeypatch):
    """The target statistics and view are fitted once per labelling at `fit` (class c against the rest
    for one-vs-rest runs) on the context in table order, and each member reads them in its own row order;
    `predict` fits nothing, so repeated calls and the partitions of a Dask frame do not pay for them
    again, and each run reads what fitting them at predict would give."""
    import feat_engine.reading.run_inputs as ri_mod

    calls = []
    monkeypatch.setattr(runner, "run_tables", per_table(recording_run(calls)))
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    X["shop"] = rng.choice([f"s{i}" for i in range(12)], 300)
    noisy = X["a"] + 0.5 * rng.normal(size=300)         # noise, so that both kinds of view read part of the labels
    y = np.array(list("xyz"))[(noisy > 0).astype(int) + (X["b"] > 1).astype(int)]
    clf = FEATClassifier(n_estimators=2, local_context=None).fit(X[:240], y[:240])
    reg = FEATRegressor(n_estimators=2, local_context=None).fit(X[:240], X["a"][:240] + X["b"][:240])

    def refuse(*_, **__):
        raise AssertionError("fitted at predict")
    monkeypatch.setattr(ri_mod, "fit_stacked_models", refuse)
    monkeypatch.setattr(ri_mod, "fit_target_stats", refuse)
    first = clf.predict_proba(X[240:])
    np.testing.assert_array_equal(first, clf.predict_proba(X[240:]))
    reg.predict(X[240:])
    monkeypatch.undo()

    m = clf.members_[0]                         # the first member's run on the first class whose run also reads the
    c = next(c for c, r in clf.run_inputs_[0].items() if r.beside is not None)   # other kind (4 features: a slot)
    ctx, q = calls[c]
    labels, pre = (clf.y_ == c).astype(np.int64), clf.preprocessor_
    context = X[:240].iloc[content_order(X[:240], clf.encoder_.transform(y[:240]))]   # the rows as `fit` reads them
    x_ctx, x_q = with_target_stats(clf.context_, labels, pre.transform(X[240:], "query"),
                                   pre.nominal_codes(context), pre.nominal_codes(X[240:]), pre.nominal_, m.seed)
    view, beside = fit_stacked_models(x_ctx, labels, True, m.seed, "auto", pre.detail(context), pre.nominal_,
                                      beside=True)
    assert beside.kind != view.kind
    np.testing.assert_allclose(ctx, np.column_stack([view.context, x_ctx[:, m.features], beside.context])[m.rows],
                               atol=1e-6)
    detail = pre.detail(X[240:])
    np.testing.assert_allclose(q, np.column_stack([view.queries(x_q, detail), x_q[:, m.features],
                                                   beside.queries(x_q, detail)]), atol=1e-6)
    assert len(clf.run_inputs_) == 2 and sorted(clf.run_inputs_[0]) == [0, 1, 2] and list(reg.run_inputs_[0]) == [None]


def test_members_share_the_fits_of_a_whole_short_context_and_fit_their_own_otherwise(monkeypatch):
    """Members that read every row of a context of at most STOP_ROWS rows share one fit of the statistics
    and view per labelling (and, for the regressor, per power scale); members of a longer context (whose
    tree views stop early on splits of their own) or of a capped one each fit their own, on every row."""
    import feat_engine.reading.run_inputs as ri_mod

    fits = []
    real = ri_mod.fit_stacked_models

    def counting(x, labels, *args, **kwargs):
        fits.append(len(labels))
        return real(x, labels, *args, **kwargs)
    monkeypatch.setattr(ri_mod, "fit_stacked_models", counting)
    rng = np.random.default_rng(8)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    y = np.array(list("xyz"))[(X["a"] > 0).astype(int) + (X["b"] > 1).astype(int)]
    FEATClassifier(n_estimators=4, local_context=None).fit(X, y)
    assert fits == [200] * 3                               # one fit per class, shared by the four members
    fits.clear()
    FEATRegressor(n_estimators=4, local_context=None).fit(X, X["a"] + X["b"])
    assert fits == [200] * 2                               # the target as it is, and on its power scale
    fits.clear()
    FEATClassifier(n_estimators=3, local_context=None, max_context=150).fit(X, y)
    assert fits == [200] * 9            # each member its own fit, three classes each, on every row (not its 150)
    fits.clear()
    monkeypatch.setattr(in_context, "STOP_ROWS", 150)         # the 200 rows now count as a long context
    FEATClassifier(n_estimators=2, local_context=None).fit(X, y)
    assert fits == [200] * 6
