"""The scikit-learn estimators: determinism, query independence, >10 classes, wide tables,
imputation, bounded memory on 200k rows, and bad input (scikit-learn's own suite and the refusals
it asks for: test_sklearn_contract.py).

The shipped checkpoint may be untrained, so nothing here asserts accuracy of the real
model; the one-vs-rest and label-rotation routing is checked with a 1-nearest-neighbour stand-in
for the engine.
"""
import subprocess
import sys
import textwrap
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import feat_engine.estimators.in_context as in_context
import feat_engine.estimators.runner as runner
from feat_engine import FEATClassifier, FEATImputer, FEATInputError, FEATRegressor, load_model
from feat_engine.errors import FEATDataWarning
from feat_engine.estimators import COLUMN_MEMBERS
from feat_engine.estimators.in_context import InContextBase
from feat_engine.inference import RunResult, uses_bf16
from feat_engine.reading.members import plan_members
from feat_engine.targets import TargetScaler

try:
    from .oracles import per_table
except ImportError:
    from oracles import per_table

from test_preprocess import mixed_table


def data(n=80, d=4, seed=0):
    """A linear target with noise (an exact one is read as its stacked model's prediction alone: decision 0024)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n)


def test_model_is_loaded_once():
    assert load_model() is load_model()


def test_classifier_labels_probabilities_and_determinism():
    X, y = data()
    labels = np.where(y > 0, "high", "low")
    clf = FEATClassifier(n_estimators=2, random_state=3).fit(X[:60], labels[:60])
    p = clf.predict_proba(X[60:])
    assert list(clf.classes_) == ["high", "low"]
    assert p.shape == (20, 2) and np.allclose(p.sum(1), 1) and (p >= 0).all()
    assert set(clf.predict(X[60:])) <= {"high", "low"}
    again = FEATClassifier(n_estimators=2, random_state=3).fit(X[:60], labels[:60]).predict_proba(X[60:])
    np.testing.assert_array_equal(p, again)
    other = FEATClassifier(n_estimators=2, random_state=4).fit(X[:60], labels[:60]).predict_proba(X[60:])
    assert not np.array_equal(p, other)


@pytest.mark.parametrize("checkpoint", [None, "fast"])
@pytest.mark.parametrize("Est", [FEATClassifier, FEATRegressor])
def test_query_rows_are_independent(Est, checkpoint):
    """On both shipped checkpoints; "fast" is another model, so its answers differ from feat-small's."""
    X, y = data()
    y = (y > 0).astype(int) if Est is FEATClassifier else y
    m = Est(n_estimators=1, checkpoint=checkpoint).fit(X[:60], y[:60])
    f = m.predict_proba if Est is FEATClassifier else m.predict
    full = f(X[60:])
    if checkpoint == "fast":
        small = Est(n_estimators=1).fit(X[:60], y[:60])
        assert np.abs((small.predict_proba if Est is FEATClassifier else small.predict)(X[60:]) - full).max() > 1e-3
    alone = np.concatenate([f(X[60 + i:61 + i]) for i in range(3)])
    np.testing.assert_allclose(alone, full[:3], rtol=1e-5, atol=1e-6)
    perm = np.random.default_rng(0).permutation(20)
    np.testing.assert_allclose(f(X[60:][perm]), full[perm], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("Est", [FEATClassifier, FEATRegressor])
def test_a_shuffled_context_gives_the_same_predictions(Est):
    """A table's rows are a set: the members' orders, local parts and folds come from the rows' content."""
    X, y = data(n=240)
    y = (y > 0).astype(int) if Est is FEATClassifier else y
    frame = pd.DataFrame(X, columns=list("abcd")).assign(kind=np.where(X[:, 2] > 0, "p", "q"))
    perm = np.random.default_rng(1).permutation(200)
    fits = [Est(n_estimators=1, local_context=64).fit(frame.iloc[rows], y[rows]) for rows in (np.arange(200), perm)]
    f = [m.predict_proba if Est is FEATClassifier else m.predict for m in fits]
    assert fits[0].members_[0].local is not None                    # the local parts' path
    np.testing.assert_allclose(f[0](frame.iloc[200:]), f[1](frame.iloc[200:]), rtol=0, atol=1e-9)


@pytest.mark.parametrize("Est", [FEATClassifier, FEATRegressor])
def test_query_rows_scored_in_batches_give_the_unbatched_predictions(Est, monkeypatch):
    """predict scores QUERY_BATCH rows at a time under one progress stream; the batches change no number."""
    X, y = data(n=300)
    y = (y > 0).astype(int) if Est is FEATClassifier else y
    reports = []
    m = Est(n_estimators=2, local_context=64, progress=lambda *r: reports.append(r)).fit(X[:200], y[:200])
    f = m.predict_proba if Est is FEATClassifier else m.predict
    whole = f(X[200:])
    seen, outputs = [], InContextBase._outputs
    monkeypatch.setattr(in_context, "QUERY_BATCH", 32)
    monkeypatch.setattr(InContextBase, "_outputs", lambda self, xq, *a: seen.append(len(xq)) or outputs(self, xq, *a))
    reports.clear()
    batched = f(X[200:])
    assert seen == [32, 32, 32, 4] and m.members_[0].local is not None
    np.testing.assert_allclose(batched, whole, rtol=1e-6, atol=1e-7)
    done = [d / t for d, t, _ in reports]
    assert done == sorted(done) and done[-1] == 1 and len({t for _, t, _ in reports}) == 1


def test_the_stacked_models_column_of_a_row_does_not_move_with_the_rows_beside_it():
    """Scored as they came, a ridge's float32 scores of 20 rows moved by 1.2e-7 when scored seven at a time."""
    X = 3 * np.random.RandomState(0).uniform(size=(20, 3))
    est = FEATRegressor(n_estimators=1, random_state=1).fit(X, X[:, 0].astype(int))
    stacked = est.run_inputs_[0][None].stacked
    whole = stacked.queries(*est._query_rows(X))
    blocks = np.concatenate([stacked.queries(*est._query_rows(X[i:i + 7])) for i in range(0, 20, 7)])
    assert stacked.kind == "additive"
    np.testing.assert_array_equal(whole, blocks)


def test_regressor_predicts_in_original_units():
    X, y = data()
    y = 1000 + 50 * y
    pred = FEATRegressor(n_estimators=1).fit(X[:60], y[:60]).predict(X[60:])
    assert pred.shape == (20,) and np.isfinite(pred).all()
    assert y[:60].min() - 5 * y[:60].std() < pred.mean() < y[:60].max() + 5 * y[:60].std()


def test_a_constant_target_is_predicted_as_itself():
    """A context whose target never varies holds one answer; the engine's output on it is noise (2.88-3.09 on a
    target of 3.0 before this was caught)."""
    X, _ = data()
    pred = FEATRegressor(n_estimators=1).fit(X[:60], np.full(60, 3.0)).predict(X[60:])
    assert np.array_equal(pred, np.full(len(X) - 60, 3.0))


def test_predictions_stay_within_the_context_targets_range():
    """A prediction beyond the context targets' range is farther from every truth within it than the range's end:
    queries far outside the context's x, where the stacked additive model runs straight on (ggplot2movies' filled
    budgets went to -2.75M before this, every one observed at least 0)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (200, 3))
    y = 10 * x[:, 0] + rng.normal(0, 0.1, 200)
    far = np.vstack([np.full((5, 3), -6.0), np.full((5, 3), 7.0)])
    est = FEATRegressor(n_estimators=1, random_state=0).fit(x, y)
    pred = est.predict(far)
    assert pred.min() >= y.min() and pred.max() <= y.max(), pred
    assert pred[:5].max() < pred[5:].min()                       # the two ends still apart
    np.testing.assert_allclose(TargetScaler().fit(pd.Series(y)).inverse_transform(np.array([-50.0, 0.0, 50.0])),
                               [y.min(), y.mean(), y.max()], rtol=1e-6)


def nearest_neighbour_run(model, x_ctx, y_ctx, x_query, task, n_classes=None, **_):
    """Stand-in for inference.run: the label of the nearest context row gets all the mass."""
    d = np.nansum((x_query[:, None, :] - x_ctx[None]) ** 2, axis=-1)
    nn = y_ctx[np.argmin(d, axis=1)].astype(int)
    logits = np.full((len(x_query), 10), -np.inf)
    logits[:, :n_classes] = 0.0
    logits[np.arange(len(x_query)), nn] = 30.0
    return RunResult(logits=logits, pred=None, recon=None, attention=None)


@pytest.mark.parametrize("k, multiclass", [(2, "ovr"), (5, "head"), (5, "ovr"), (11, "ovr"), (30, "ovr")])
def test_class_routing_with_an_oracle_engine(k, multiclass, monkeypatch):
    monkeypatch.setattr(runner, "run_tables", per_table(nearest_neighbour_run))
    rng = np.random.default_rng(k)
    centres = rng.normal(scale=10, size=(k, 3))
    y = np.repeat(np.arange(k), 4)
    X = centres[y] + rng.normal(scale=0.1, size=(len(y), 3))
    labels = np.array([f"class{c:02d}" for c in y])
    clf = FEATClassifier(n_estimators=3, multiclass=multiclass, view=None).fit(X, labels)   # the oracle reads x
    p = clf.predict_proba(X)
    assert p.shape == (len(y), k) and np.allclose(p.sum(1), 1)
    # every member rotates the labels differently; each must map its slots back to the right class
    np.testing.assert_array_equal(clf.predict(X), labels)
    assert (p.max(1) > 0.99).all()


def test_one_vs_rest_parts_without_their_class_are_not_read(monkeypatch):
    """A one-vs-rest run reads no local part whose context holds no row of its class: that table gets the rule of
    succession, 1 / (n + 2), and every other table the engine's own answer, as in a run without the shortcut."""
    read = []

    def spy(model, x_ctx, y_ctx, x_query, task, n_classes=None, **kw):
        read.append(np.unique(y_ctx).size)
        return nearest_neighbour_run(model, x_ctx, y_ctx, x_query, task, n_classes)

    monkeypatch.setattr(runner, "run_tables", per_table(spy))
    rng = np.random.default_rng(0)
    k = 6
    centres = rng.normal(scale=10, size=(k, 3))
    y = np.repeat(np.arange(k), 60)
    X = centres[y] + rng.normal(scale=0.5, size=(len(y), 3))
    clf = FEATClassifier(n_estimators=2, local_context=64, view=None).fit(X, y)
    parts = clf.members_[0].local.parts
    assert len(parts) > 2 and min(np.unique(clf.y_[clf.members_[0].rows[p]]).size for p in parts) < k   # a part lacks a class
    read.clear()
    predicted = clf.predict(X)
    assert read and min(read) == 2                        # every table the engine read holds its class and the rest
    assert len(read) < 2 * k * len(parts)                 # and some were not read
    np.testing.assert_array_equal(predicted, y)

    ctxs = [rng.normal(size=(n, 3)) for n in (40, 50, 60)]
    ys = [np.r_[np.ones(5), np.zeros(35)].astype(int), np.zeros(50, int), np.r_[np.zeros(30), np.ones(30)].astype(int)]
    qs = [rng.normal(size=(m, 3)) for m in (3, 4, 5)]
    member = clf.members_[0]
    run = runner.MemberRun(clf._loaded_model(), member, 2, False, clf._engine_settings(), "test",
                           one_vs_rest=True)
    fast = runner.engine_call(run, ctxs, ys, qs, None)
    slow = [runner.engine_call(replace(run, one_vs_rest=False), [c], [t], [q], None)[0]
            for c, t, q in zip(ctxs, ys, qs)]
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[2], slow[2])
    np.testing.assert_array_equal(fast[1], np.tile([1 - 1 / 52, 1 / 52], (4, 1)))


def test_the_engine_gives_a_class_its_context_lacks_about_the_rule_of_succession():
    """The premise of not reading such parts: the pretrained model's own probability of a class with no row in a
    300-row context is small, near 1 / (n + 2) (0.0021 on average against 0.0033 when measured)."""
    from scipy.special import softmax

    from feat_engine.inference import run_tables
    rng = np.random.default_rng(0)
    x, q = rng.normal(size=(300, 6)).astype(np.float32), rng.normal(size=(50, 6)).astype(np.float32)
    p = [softmax(run_tables(load_model(), [x], [np.full(300, slot, np.float32)], [q], "classification",
                            n_classes=2)[0].logits[:, :2].astype(np.float64), axis=1)[:, 1 - slot] for slot in (0, 1)]
    p = np.concatenate(p)
    assert p.max() < 0.05 and 1 / 302 / 5 < p.mean() < 5 / 302


def test_multiclass_option_is_checked():
    X, y = np.random.default_rng(0).normal(size=(33, 2)), np.arange(33) % 11
    with pytest.raises(ValueError, match="multiclass must be"):
        FEATClassifier(multiclass="ecoc").fit(X, y)
    with pytest.raises(ValueError, match="at most 10 classes"):
        FEATClassifier(multiclass="head").fit(X, y).predict_proba(X)


@pytest.mark.parametrize("k", [11, 30])
def test_more_classes_than_the_head_with_the_real_model(k):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(k), 3)
    X = rng.normal(size=(len(y), 3)) + y[:, None]
    progress = []
    clf = FEATClassifier(n_estimators=1, progress=lambda d, t, m: progress.append((d, t))).fit(X, y)
    p = clf.predict_proba(X[:10])
    assert p.shape == (10, k) and np.allclose(p.sum(1), 1) and (p > 0).all()
    assert progress[-1][0] == progress[-1][1] and progress[0][0] == 0


def test_wide_tables_use_feature_subsets_that_cover_every_feature():
    members = plan_members(100, 50, 2, 24, None, 0)
    assert len(members) == 3 and all(len(m.features) == 24 == len(set(m.features)) for m in members)
    assert set(np.concatenate([m.features for m in members])) == set(range(50))
    X = np.random.default_rng(0).normal(size=(40, 50))
    p = FEATClassifier(n_estimators=1).fit(X, X[:, 0] > 0).predict_proba(X[:5])
    assert p.shape == (5, 2)


def test_max_context_caps_rows_per_member():
    members = plan_members(1000, 3, 2, 24, 100, 0)
    assert all(len(m.rows) == 100 for m in members)
    assert not np.array_equal(members[0].rows, members[1].rows)
    X, y = data(300)
    assert FEATRegressor(n_estimators=1, max_context=50).fit(X, y).predict(X[:7]).shape == (7,)


def test_missing_targets_are_dropped_with_a_warning():
    X, y = data()
    y[:5] = np.nan
    with pytest.warns(UserWarning, match="dropped 5 context rows"):
        reg = FEATRegressor(n_estimators=1).fit(X, y)
    assert len(reg.context_) == len(X) - 5


def test_query_values_the_context_cannot_read_are_named_in_a_warning():
    """Text in a numeric column, a value that is not a date, a level the context lacks: each is read as
    missing, and a warning names the column, the rows and an example; a clean query warns of nothing."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 80, 120).astype(float), "city": rng.choice(["Bern", "Genf"], 120),
                       "day": pd.date_range("2020-01-01", periods=120).strftime("%Y-%m-%d")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                   # the dates-as-text note at fit
        clf = FEATClassifier(n_estimators=1).fit(df, df["age"] > 40)
    query = df.iloc[:4].astype(object)
    query.loc[0, "age"], query.loc[1, "age"], query.loc[2, "city"], query.loc[3, "day"] = "n/a", "n/a", "Basel", "soon"
    with pytest.warns(FEATDataWarning) as rec:
        clf.predict_proba(query)
    assert sorted(str(w.message) for w in rec) == [
        "query column 'age': 2 rows hold a value that is not a finite number (e.g. 'n/a'), read as missing",
        "query column 'city': 1 row holds a level the context does not have (e.g. 'Basel'), read as missing",
        "query column 'day': 1 row holds a value that is not a date (e.g. 'soon'), read as missing"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict_proba(df.iloc[4:8])


def test_a_column_that_gives_the_target_away_is_named_at_fit():
    """reading/giveaways.py: a threshold, a level-for-class recoding and a monotone copy of the target are named at
    fit; a strong but noisy feature, a one-row-a-level column, a class of a few rows and noise on more classes than
    a rule could be told from are not."""
    from feat_engine.reading.giveaways import giveaways

    rng = np.random.default_rng(0)
    n = 400
    w = rng.normal(3000, 700, n)
    low = (w < 2500).astype(int)
    noisy = w + rng.normal(0, 300, n)                       # ROC-AUC about 0.9 for low: honest
    grade = np.array(["A", "B"])[low]
    x = np.column_stack([w, noisy, low, np.arange(n), np.log(w - w.min() + 1), w + rng.normal(0, 300, n)])
    names = ["bwt", "noisy", "grade", "ticket", "log_bwt", "noisy_too"]
    nominal = np.array([2, 3])
    said = giveaways(x, low, True, nominal, names)
    assert [s.split(":")[0] for s in said] == ["column 'bwt' gives the target away",
                                              "column 'grade' gives the target away",
                                              "column 'log_bwt' gives the target away"]
    assert all("leave it out" in s for s in said)
    assert giveaways(x, (np.arange(n) < 5).astype(int), True, nominal, names) == []   # 5 rows of one class
    many = np.concatenate([np.zeros(20), np.ones(20), np.arange(2, 62)]).astype(int)  # 62 classes in 100 rows
    assert giveaways(rng.normal(size=(100, 1)), many, True, np.empty(0, int), ["noise"]) == []
    said = giveaways(x, w, False, nominal, names)
    assert [s.split(":")[0] for s in said] == ["column 'bwt' gives the target away",
                                              "column 'log_bwt' gives the target away"]
    df = pd.DataFrame({"bwt": w, "noisy": noisy, "smoke": rng.integers(0, 2, n)})
    with pytest.warns(FEATDataWarning, match="column 'bwt' gives the target away"):
        FEATClassifier(n_estimators=1).fit(df, grade)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FEATDataWarning)
        FEATClassifier(n_estimators=1).fit(df.drop(columns="bwt"), grade)
    # a number read again as its levels, or a date's parts, are named as the column the analyst knows, once (the
    # app said "column 'tch (levels)'", which Data does not list)
    teacher = rng.integers(0, 40, n)
    degree = np.array(["BA", "MA", "PhD"])[rng.integers(0, 3, 40)][teacher]
    with pytest.warns(FEATDataWarning) as rec:
        FEATClassifier(n_estimators=1).fit(pd.DataFrame({"teacher": teacher, "smoke": df["smoke"]}), degree)
    named = [str(r.message) for r in rec if "gives the target away" in str(r.message)]
    assert len(named) == 1 and named[0].startswith("column 'teacher' gives the target away"), named
    assert len(giveaways(x[:, [0, 0, 1]], low, True, np.empty(0, int), ["bwt", "bwt", "noisy"])) == 1
    # a column empty on the rows of one class alone (mroz's wage, kept for the women who work: inlf); empty cells
    # spread over both classes are no rule
    wage = np.column_stack([np.where(low == 0, w, np.nan), np.where(rng.uniform(size=n) < 0.3, np.nan, noisy)])
    said = giveaways(wage, low, True, np.empty(0, int), ["wage", "patchy"])
    assert len(said) == 1 and said[0].startswith("column 'wage' gives the target away: it is empty on the rows of one")


@pytest.mark.parametrize("method", ["chained", "reconstruction"])
def test_imputer_fills_every_nan_and_leaves_observed_cells_and_dtypes(method):
    df = mixed_table(60)
    out = FEATImputer(n_estimators=2, method=method).fit_transform(df)
    assert (out.dtypes == df.dtypes).all()
    assert not out.isna().any().any()
    for c in df.columns:
        obs = df[c].notna().to_numpy()
        pd.testing.assert_series_equal(out[c][obs], df[c][obs])


def test_imputer_fills_missing_marks_of_text_numbers_in_the_columns_format():
    """"?" in a column of numbers written as text is a hole the model reads and the imputer fills, written as the
    column writes its numbers, and so is "?" in a column of categories, filled with one of them; every other cell
    keeps its text."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=80)
    df = pd.DataFrame({"a": a, "fee": [f"${v:,.2f}" for v in 1000 * np.exp(a)], "side": np.where(a > 0, "up", "down")})
    df.loc[[3, 7, 11], "fee"] = ["?", "n.a.", "?"]
    df.loc[[5, 9], "side"] = "?"
    with pytest.warns(FEATDataWarning, match="'fee' holds numbers such as"):
        out = FEATImputer(n_estimators=1).fit_transform(df)
    filled = out.loc[[3, 7, 11], "fee"]
    assert filled.str.fullmatch(r"\$[\d,]+\.\d\d").all(), filled.tolist()
    assert out.loc[[5, 9], "side"].isin(["up", "down"]).all()
    pd.testing.assert_frame_equal(out.drop(index=[3, 5, 7, 9, 11]), df.drop(index=[3, 5, 7, 9, 11]))


def test_rows_given_as_an_array_after_a_dataframe_context_are_read_by_position():
    """As in scikit-learn, an array of query rows for a context given as a DataFrame is read column by column in
    the context's order, with its warning that X has no feature names: the same predictions, and the same filled
    cells from the imputer, whose chained fits read the array's cells (Python objects) as the context's dtypes."""
    rng = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame({"a": rng.normal(size=n), "b": pd.Categorical(rng.choice(["u", "v", "w"], n)),
                      "c": rng.integers(0, 9, n), "d": pd.date_range("2020-01-01", periods=n)})
    y = np.where(X["a"] + (X["b"] == "u") + rng.normal(size=n) > 0.5, "pos", "neg")
    est = FEATClassifier(n_estimators=1).fit(X.iloc[:120], y[:120])
    rows = X.iloc[120:]
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(est.predict_proba(rows.to_numpy()), est.predict_proba(rows))
    with pytest.raises(FEATInputError, match="X has 3 features, but FEATClassifier is expecting 4"):
        est.predict(rows.to_numpy()[:, :3])
    holes = X.assign(a=X["a"].mask(rng.uniform(size=n) < 0.2), c=X["c"].mask(rng.uniform(size=n) < 0.2))
    imp = FEATImputer().fit(holes.iloc[:120])
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        filled = imp.transform(holes.iloc[120:].to_numpy())
    np.testing.assert_array_equal(filled[:, [0, 2]].astype(float),
                                  imp.transform(holes.iloc[120:])[["a", "c"]].to_numpy(float))


def test_chained_imputer_predicts_each_column_in_context():
    """A column that is a function of another comes back far closer than its mean would, a
    categorical one as its true labels, and a column with more levels than the head reads keeps
    to the head's classes: its 9 most frequent levels and the most frequent of the rest."""
    rng = np.random.default_rng(0)
    n = 300
    a = rng.normal(size=n)
    levels = [f"l{i:02d}" for i in range(15)]
    df = pd.DataFrame({"a": a, "b": 2 * a + 0.1 * rng.normal(size=n),
                       "sign": pd.Categorical(np.where(a > 0, "pos", "neg")),
                       "level": pd.Categorical(rng.choice(levels, n, p=np.arange(15, 0, -1) / 120))})
    hide = rng.uniform(size=df.shape) < 0.2
    out = FEATImputer(n_estimators=1).fit_transform(df.mask(hide))
    b = hide[:, 1]
    assert np.sqrt(np.mean((out["b"][b] - df["b"][b]) ** 2)) / df["b"].std() < 0.3
    assert (out["sign"][hide[:, 2]] == df["sign"][hide[:, 2]]).mean() > 0.9
    counts = df.mask(hide)["level"].value_counts()
    assert set(out["level"][hide[:, 3]]) <= set(counts.index[:10])
    with pytest.raises(FEATInputError, match="method must be 'chained' or 'reconstruction', got 'mice'"):
        FEATImputer(method="mice").fit(df)


def test_imputer_draws_keep_each_columns_spread_and_every_filled_cell_has_a_confidence():
    """On a synthetic table whose category (60/30/10) is independent of the other columns and whose number is
    half noise, the most likely values collapse the category onto its commonest level and shrink the number's
    spread; draws (`sample_posterior=True`) keep the observed level shares within sampling error (four standard
    errors) and the spread within a fifth. Each filled category cell has the probability of its level, and each
    filled number, drawn or most likely, its own typical error on the column's scale, about the noise's standard
    deviation of 1."""
    from feat_engine.estimators.imputer import HELD_NUMBERS, HELD_SHARE

    rng = np.random.default_rng(7)
    n = 1500
    x = rng.normal(size=(n, 2))
    df = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "num": x[:, 0] + rng.normal(size=n),
                       "cat": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])})
    hide = np.zeros(df.shape, bool)
    hide[:, 2:] = rng.uniform(size=(n, 2)) < 0.4
    holes = df.mask(hide)
    shares = holes["cat"].value_counts(normalize=True)
    likely = FEATImputer(n_estimators=1).fit(holes)
    out, conf = likely.transform_with_confidence(holes)
    pd.testing.assert_frame_equal(likely.transform(holes), out)
    cat, num = hide[:, 3], hide[:, 2]
    assert (out["cat"][cat] == "a").mean() > 0.9                                    # collapsed
    assert out["num"][num].std() < 0.85 * holes["num"].std()                         # shrunk
    assert conf["cat"][cat].between(0.34, 1.0).all() and conf["cat"][~cat].isna().all()
    assert conf["num"][~num].isna().all() and conf[["x1", "x2"]].isna().all().all()
    around = conf["num"][num]                          # a most likely number's own typical error, as a draw's is
    assert around.between(0.6, 1.5).all() and 0.8 < around.median() < 1.3 and around.nunique() > 1
    drawn, sure = FEATImputer(n_estimators=1, sample_posterior=True).fit(holes).transform_with_confidence(holes)
    got = drawn["cat"][cat].value_counts(normalize=True)
    for level, p in shares.items():
        assert abs(got.get(level, 0.0) - p) < 4 * np.sqrt(p * (1 - p) / cat.sum()), (level, got.to_dict())
    assert abs(drawn["num"][num].std() / holes["num"].std() - 1) < 0.2
    spread = sure["num"][num]
    assert spread.between(0.6, 1.5).all() and 0.8 < spread.median() < 1.3           # the noise's sd is 1
    probs = sure["cat"][cat]
    assert probs.between(0.0, 1.0).all() and probs.min() < 0.34                      # a drawn rare level: its own p
    assert drawn.mask(hide).equals(holes) and min(HELD_NUMBERS, (~num).sum() // HELD_SHARE) > 50
    again = FEATImputer(n_estimators=1, sample_posterior=True).fit_transform(holes)
    pd.testing.assert_frame_equal(again, drawn)                                      # random_state fixes the draws
    other = FEATImputer(n_estimators=1, sample_posterior=True, random_state=1).fit_transform(holes)
    assert (other["cat"][cat] != drawn["cat"][cat]).any()                            # another imputation


@pytest.mark.parametrize("draws", [False, True])
def test_imputed_numbers_keep_their_columns_support(draws):
    """A skewed budget never below zero, a whole-number year and a 1-10 rating: every filled cell, most likely or
    drawn, stays within the column's observed range, whole where the column is whole; the typical errors differ
    from cell to cell (wider where the budget is large, on its own scale)."""
    rng = np.random.default_rng(3)
    n = 600
    x = rng.normal(size=n)
    df = pd.DataFrame({"x": x, "budget": np.exp(14 + 1.5 * x + rng.normal(size=n)).round(-3),
                       "year": np.clip(np.round(1990 + 8 * x + 6 * rng.normal(size=n)), 1950, 2024).astype(int),
                       "rating": np.clip(np.round(6 + x + rng.normal(size=n)), 1, 10)})
    hide = np.zeros(df.shape, bool)
    hide[:, 1:] = rng.uniform(size=(n, 3)) < 0.3
    holes = df.mask(hide)
    out, sure = FEATImputer(n_estimators=1, sample_posterior=draws).fit(holes).transform_with_confidence(holes)
    for j, c in enumerate(["budget", "year", "rating"], start=1):
        filled, seen = out[c][hide[:, j]], holes[c].dropna()
        assert filled.between(seen.min(), seen.max()).all(), (c, filled.min(), filled.max())
        if c != "budget":
            assert (filled == np.round(filled)).all(), c
    assert out["budget"].min() >= 0 and sure["budget"][hide[:, 1]].nunique() > 10


def test_chained_imputer_with_more_levels_than_the_head_fills_the_most_likely_level():
    """A category of more levels than the head: the rarer levels share one class, its probability split among them
    by their counts; the probabilities cover every level and sum to one, and the most likely fill is the level of the
    highest probability: on a category that tells nothing of the other columns, its commonest level (30% of the rows),
    not the commonest of the rarer ones, whose shared class holds 42% (stevedata/TV16's `state`)."""
    from feat_engine.estimators.imputer import _level_probabilities

    rng = np.random.default_rng(3)
    n = 400
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    levels = np.array(["common"] + [f"l{i:02d}" for i in range(20)])
    y = pd.Series(rng.choice(levels, n, p=[0.3] + [0.035] * 20))
    clf = FEATClassifier(n_estimators=1, multiclass="head")
    proba, found, likely = _level_probabilities(clf, X[:300], y[:300], X[300:])
    counts = y[:300].value_counts()
    assert list(found) == list(counts.index) and proba.shape == (100, len(counts))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(likely, proba.argmax(axis=1))
    assert (found[likely] == "common").mean() > 0.9, pd.Series(found[likely]).value_counts()


def test_chained_imputer_columns_on_two_workers_fill_as_one_at_a_time(monkeypatch):
    """The chained imputer predicts its incomplete columns at once (`map_runs`: two workers of one torch thread
    on two threads); the cells come back as when the columns are predicted one after another on one thread. A table
    longer than PARALLEL_ROWS has its columns predicted one after another on every thread, with the same cells."""
    import torch

    from feat_engine.estimators import imputer

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5))
    X[:, 1] += X[:, 0]
    X[:, 3] = X[:, 2] ** 2
    X[rng.uniform(size=X.shape) < 0.15] = np.nan
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = FEATImputer(n_estimators=1, precision="fp32").fit_transform(X)
        torch.set_num_threads(2)
        two = FEATImputer(n_estimators=1, precision="fp32").fit_transform(X)
        monkeypatch.setattr(imputer, "PARALLEL_ROWS", len(X) - 1)
        monkeypatch.setattr(imputer, "map_runs", lambda *a: pytest.fail("a long table's columns ran at once"))
        long = FEATImputer(n_estimators=1, precision="fp32").fit_transform(X)
    finally:
        torch.set_num_threads(threads)
    assert not np.isnan(two).any()
    np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(long, one, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method, members", [("chained", f"member {COLUMN_MEMBERS}/{COLUMN_MEMBERS}"),
                                             ("reconstruction", "member 4/4")])
def test_imputer_default_members(method, members):
    """n_estimators=None: COLUMN_MEMBERS runs per incomplete column (chained), 4 per table (reconstruction)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    X[rng.uniform(size=80) < 0.2, 0] = np.nan
    X[rng.uniform(size=80) < 0.2, 2] = np.nan
    seen = []
    FEATImputer(method=method, progress=lambda d, t, m: seen.append(m)).fit_transform(X)
    assert members in seen[-1]
    if method == "chained":   # the columns run at once, and the stream shows the furthest run: column 2's at the end
        assert "column 2" in seen[-1] and {m.split(":")[0] for m in seen} <= {"column 0", "column 2"}


def test_imputer_progress_is_one_stream_over_its_dates_and_columns():
    """A date column's holes (filled by the reconstruction) and a number's (by its column's estimator) report one
    stream that never moves back and ends done (`feat impute` ran to 100% and again from 0)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"when": pd.date_range("2020-01-01", periods=80, freq="D"), "x": rng.normal(size=80),
                       "z": rng.normal(size=80)})
    df.loc[rng.uniform(size=80) < 0.2, "when"] = pd.NaT
    df.loc[rng.uniform(size=80) < 0.2, "x"] = np.nan
    seen = []
    FEATImputer(n_estimators=1, progress=lambda d, t, m: seen.append((d / t, m))).fit_transform(df)
    shares = [d for d, _ in seen]
    assert shares == sorted(shares) and shares[-1] == 1.0
    assert any(m.startswith("member") for _, m in seen) and any(m.startswith("column 'x'") for _, m in seen)


def test_imputer_shares_its_reading_budget_among_the_incomplete_columns(monkeypatch):
    """Each incomplete column's estimator reads the imputer's `read_budget` divided by the number of incomplete
    columns, so a transform reads about one estimator's budget however many columns it fills; None reads all."""
    from feat_engine.estimators import imputer

    budgets = []

    def spy(cls):
        class Spy(cls):
            def fit(self, X, y):
                budgets.append(self.read_budget)
                return super().fit(X, y)
        return Spy

    monkeypatch.setattr(imputer, "FEATRegressor", spy(FEATRegressor))
    monkeypatch.setattr(imputer, "FEATClassifier", spy(FEATClassifier))
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 4)), columns=list("abcd"))
    X["d"] = pd.Categorical(np.where(X["d"] > 0, "up", "down"))
    for c in "abd":
        X.loc[rng.uniform(size=80) < 0.2, c] = np.nan
    FEATImputer(read_budget=30_000).fit_transform(X)
    assert budgets and set(budgets) == {10_000}          # a, b (its fill and its errors' fit) and d
    budgets.clear()
    FEATImputer(read_budget=None).fit_transform(X)
    assert budgets and set(budgets) == {None}


def test_imputer_progress_order_does_not_depend_on_which_column_starts_first(monkeypatch):
    """The columns' runs keep their column order in the progress stream whichever worker starts first (a
    worker that started column 2 first used to take its place, and column 0's report then ended the stream)."""
    from feat_engine.estimators import imputer

    def last_first(fn, items, device="auto", on_wait=None):     # the columns run in reverse order
        out = [fn(item) for item in reversed(list(items))][::-1]
        on_wait()
        return out

    monkeypatch.setattr(imputer, "map_runs", last_first)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    X[rng.uniform(size=80) < 0.2, 0] = np.nan
    X[rng.uniform(size=80) < 0.2, 2] = np.nan
    seen = []
    FEATImputer(n_estimators=1, progress=lambda d, t, m: seen.append(m)).fit_transform(X)
    assert seen[-1].startswith("column 2")


def test_imputer_ndarray_new_rows_and_blocks():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4))
    X[rng.uniform(size=X.shape) < 0.15] = np.nan
    imp = FEATImputer(n_estimators=1, max_context=40).fit(X[:60])
    out = imp.transform(X[60:])
    assert isinstance(out, np.ndarray) and out.shape == (30, 4) and not np.isnan(out).any()
    obs = ~np.isnan(X[60:])
    np.testing.assert_array_equal(out[obs], X[60:][obs])


def test_bad_inputs_name_the_problem():
    X, y = data()
    with pytest.raises(FEATInputError, match=r"context: Found array with 0 sample\(s\)"):
        FEATClassifier().fit(np.empty((0, 3)), [])
    with pytest.raises(FEATInputError, match="no feature columns left"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        FEATClassifier().fit(pd.DataFrame({"a": [1] * 10, "b": [2] * 10}), [0, 1] * 5)
    with pytest.raises(FEATInputError, match="target 'y' has a single class"):
        FEATClassifier().fit(X, ["a"] * len(X))
    with pytest.raises(FEATInputError, match="target 'seen' has a single class"):    # a table's column: its name
        FEATClassifier().fit(X, pd.Series(["a"] * len(X), name="seen"))
    with pytest.raises(FEATInputError, match="all missing"):
        FEATRegressor().fit(X, np.full(len(X), np.nan))
    with pytest.raises(FEATInputError, match="all missing"):
        FEATClassifier().fit(X, [None] * len(X))
    with pytest.raises(FEATInputError, match="not numeric"):
        FEATRegressor().fit(X, np.array(["a", "b"] * (len(X) // 2)))
    with pytest.raises(NotFittedError):
        FEATClassifier().predict(X)
    with pytest.raises(NotFittedError):
        FEATImputer().transform(X)
    df = pd.DataFrame(X, columns=list("abcd"))
    clf = FEATRegressor(n_estimators=1).fit(df, y)
    with pytest.raises(FEATInputError, match=r"missing \['d'\], unexpected \['e'\]"):
        clf.predict(df.rename(columns={"d": "e"}))
    with pytest.raises(FEATInputError, match="n_estimators"):
        FEATRegressor(n_estimators=0).fit(df, y).predict(df)


@pytest.mark.slow
def test_200k_row_context_runs_in_bounded_memory():
    """Linear memory: a 200k-row context must stay far below what an N x N object would need
    (one float32 N x N matrix alone would be 149 GiB). One feature keeps the run short."""
    code = textwrap.dedent("""
        import resource, numpy as np
        from feat_engine import FEATClassifier
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200_000, 1)).astype(np.float32)
        p = FEATClassifier(n_estimators=1).fit(X, X[:, 0] > 0).predict_proba(X[:64])
        assert p.shape == (64, 2) and np.isfinite(p).all()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    peak_gib = int(out.stdout.split()[-1]) / 2**20
    print(f"200k-row context: peak RSS {peak_gib:.2f} GiB")
    assert peak_gib < 4.0, f"peak RSS {peak_gib:.2f} GiB"


@pytest.mark.parametrize("Est", [FEATClassifier, FEATRegressor])
def test_bf16_precision_is_close_to_fp32_and_a_wrong_value_is_named(Est):
    """precision="bf16" runs the engine under bf16 autocast: the outputs move by bf16 rounding only, and the
    permutation of the query rows still does not change a row's output."""
    X, y = data()
    y = (y > 0).astype(int) if Est is FEATClassifier else y
    f = "predict_proba" if Est is FEATClassifier else "predict"
    ref = getattr(Est(n_estimators=1, precision="fp32").fit(X[:60], y[:60]), f)(X[60:])
    m = Est(n_estimators=1, precision="bf16").fit(X[:60], y[:60])
    half = getattr(m, f)(X[60:])
    assert not np.array_equal(half, ref)                   # autocast really ran
    np.testing.assert_allclose(half, ref, atol=0.03 * max(1.0, np.abs(ref).max()))
    perm = np.random.default_rng(0).permutation(20)
    np.testing.assert_array_equal(getattr(m, f)(X[60:][perm]), half[perm])
    with pytest.raises(FEATInputError, match=r"precision must be one of \('auto', 'fp32', 'bf16'\), got 'fp16'"):
        Est(precision="fp16").fit(X[:60], y[:60])


@pytest.mark.parametrize("native", [False, True])
def test_auto_precision_is_bf16_only_where_the_cpu_multiplies_bf16_natively(native, monkeypatch):
    """The default precision "auto" gives exactly the bf16 numbers on a CPU with native bf16 and exactly
    the fp32 numbers elsewhere."""
    from feat_engine import inference

    X, y = data()
    monkeypatch.setattr(inference, "native_bf16", lambda: native)
    assert FEATRegressor().precision == "auto"
    auto = FEATRegressor(n_estimators=1, device="cpu").fit(X[:60], y[:60]).predict(X[60:])
    same = FEATRegressor(n_estimators=1, device="cpu", precision="bf16" if native else "fp32").fit(X[:60], y[:60])
    other = FEATRegressor(n_estimators=1, device="cpu", precision="fp32" if native else "bf16").fit(X[:60], y[:60])
    np.testing.assert_array_equal(auto, same.predict(X[60:]))
    assert not np.array_equal(auto, other.predict(X[60:]))


def _counting_encodes(monkeypatch) -> list[int]:
    """A counter of context encodings (every engine run that does not find its states kept)."""
    from feat_engine.model.feat import FEAT

    count, encode = [0], FEAT.encode_context

    def counted(self, *a, **k):
        count[0] += 1
        return encode(self, *a, **k)
    monkeypatch.setattr(FEAT, "encode_context", counted)
    return count


@pytest.mark.parametrize("Est", [FEATClassifier, FEATRegressor])
def test_kept_context_states_give_the_same_numbers_without_encoding_again(Est, monkeypatch):
    """A fitted estimator keeps each run's context states (`state_cache.py`): a second predict, and
    queries one row at a time, encode no context and give, bit for bit, what an estimator that keeps
    nothing gives; the states depend on the precision, so changing it reads the contexts anew."""
    from feat_engine.inference import StateCache

    count = _counting_encodes(monkeypatch)
    rng = np.random.default_rng(12)
    X = pd.DataFrame(rng.normal(size=(700, 4)), columns=list("abcd"))
    y = X["a"].to_numpy() + np.sin(3 * X["b"].to_numpy())
    y = y if Est is FEATRegressor else np.array(list("xyz"))[(y > 0).astype(int) + (y > 1).astype(int)]
    out = (lambda e, q: e.predict(q)) if Est is FEATRegressor else (lambda e, q: e.predict_proba(q))
    est = Est(n_estimators=2, local_context=128).fit(X[:600], y[:600])
    plain = Est(n_estimators=2, local_context=128).fit(X[:600], y[:600])
    plain._states = StateCache(max_bytes=0)                  # keeps nothing: every run encodes its context
    first = out(est, X[600:])
    runs = count[0]
    assert runs > 2 * len(est.members_) and len(est._states) == runs
    count[0] = 0
    np.testing.assert_array_equal(out(est, X[600:]), first)
    for i in (0, 7, 42):       # to rounding: on AVX2-only CPUs a 1-row matmul rounds unlike a 100-row one (6e-9)
        np.testing.assert_allclose(out(est, X[600 + i:601 + i])[0], first[i], rtol=1e-6, atol=1e-9)
    assert count[0] == 0
    np.testing.assert_array_equal(out(plain, X[600:]), first)
    assert count[0] == runs and len(plain._states) == 0
    other = "fp32" if uses_bf16("auto") else "bf16"          # the precision "auto" does not run here
    est.set_params(precision=other)
    plain.set_params(precision=other)
    count[0] = 0
    np.testing.assert_array_equal(out(est, X[600:]), out(plain, X[600:]))
    assert count[0] == 2 * runs


def test_kept_states_respect_their_budget_and_never_travel_in_a_pickle():
    import pickle

    import torch

    from feat_engine.inference import StateCache

    cache = StateCache(max_bytes=3 * 400)
    states = [(torch.zeros(10, 10),)]                        # 400 bytes
    keys = [StateCache.key(torch.full((2, 3), float(i)), None, "regression", torch.eye(3), ("m",)) for i in range(5)]
    assert len(set(keys)) == 5
    for k in keys:
        cache.put(k, states)
    assert len(cache) == 3 and cache.nbytes == 1200 and cache.get(keys[3]) is None and cache.get(keys[0]) is states
    assert StateCache.key(torch.zeros(2, 3), None, "regression", torch.eye(3), ("m",)) == keys[0]
    assert StateCache.key(torch.zeros(2, 3), None, "classification", torch.eye(3), ("m",)) != keys[0]
    assert StateCache.key(torch.zeros(2, 3), torch.ones(1, 2), "regression", torch.eye(3), ("m",)) != keys[0]
    assert StateCache.key(torch.zeros(2, 3), None, "regression", torch.eye(3), ("other model",)) != keys[0]
    copy = pickle.loads(pickle.dumps(cache))
    assert len(copy) == 0 and copy.max_bytes == cache.max_bytes

    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    est = FEATRegressor(n_estimators=1).fit(X[:250], y[:250])
    size = len(pickle.dumps(est))
    pred = est.predict(X[250:])
    assert len(est._states) == 1 and len(pickle.dumps(est)) == size
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X[250:]), pred)


def test_fit_reports_progress_while_it_fits_the_classical_models(monkeypatch):
    """The cross-fitted classical models are most of a short table's fit: `fit` reports each one's start and end,
    one per labelling where the members share them, and each fit of the tree model's folds where they are fitted in
    turn (past SIDE_BY_SIDE_ROWS rows), so a progress bar moves before the first engine run."""
    from feat_engine.reading import stacked_model
    monkeypatch.setattr(stacked_model, "SIDE_BY_SIDE_ROWS", 0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0], [-0.5, 0.5])                          # three classes: one run per class
    seen = []
    FEATClassifier(n_estimators=2, progress=lambda d, t, m: seen.append((d, t, m))).fit(X, y)
    assert [m.split(":")[0] for d, t, m in seen if "fitted" in m][-1] == "all members, class 3/3"
    assert seen[0] == (0, 3, "all members, class 1/3: fitting the classical models on the context")
    assert seen[-1][:2] == (3, 3) and all(a[0] / a[1] <= b[0] / b[1] for a, b in zip(seen, seen[1:]))
    folds = [m for d, t, m in seen if m.startswith("all members, class 1/3") and "tree fits" in m]
    assert folds and folds[-1].endswith("(5 of 6 tree fits)")        # FOLDS folds, then the whole fit
    seen.clear()
    FEATRegressor(n_estimators=2, view=None, progress=lambda d, t, m: seen.append((d, t, m))).fit(X, X[:, 1])
    assert seen[-1][:2] == (2, 2)                                   # the members' two scales of the target


def test_the_engines_pace_is_measured_in_the_cells_its_runs_read(monkeypatch):
    """Each read of a member's local parts adds its seconds and cells to `ENGINE_PACE`, under the runs it reads at
    once: the cells `count_cells` plans for the same routes (the parts reached and the queries routed there, times
    the features + 1)."""
    from collections import defaultdict

    from feat_engine.estimators import runner
    from feat_engine.inference import runs_at_once
    from feat_engine.progress import Pace
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2300, 3))
    y = X[:2000, 0] + rng.normal(size=2000)
    reg = FEATRegressor(n_estimators=1, local_context=256, view=None, blend=False).fit(X[:2000], y)
    monkeypatch.setattr(runner, "ENGINE_PACE", paces := defaultdict(Pace))
    reg.predict(X[2000:])
    routes = reg._routes(reg._query_rows(X[2000:])[0])
    assert list(paces) == [runs_at_once(runner.count_runs(reg.members_, routes, reg.device), reg.device)]
    pace = paces[list(paces)[0]]
    assert pace._units == runner.count_cells(reg.members_, routes, reg.device) > 300 * 4
    assert pace.seconds(1) > 0


def test_masked_attributions_rank_the_features_that_make_the_target():
    """y = 3 a + b + noise over five features: hiding a moves the prediction most, then b, and the three
    irrelevant features barely; a row's attributions are the same alone as among others."""
    from feat_engine import masked_attributions

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 5)), columns=list("abcde"))
    y = 3 * X["a"] + X["b"] + 0.3 * rng.normal(size=400)
    reg = FEATRegressor(n_estimators=1).fit(X[:300], y[:300])
    attr = masked_attributions(reg, X[300:])
    rank = attr.abs().mean()
    assert list(rank.sort_values(ascending=False).index[:2]) == ["a", "b"]
    assert rank["a"] > 2 * rank["b"] and rank[["c", "d", "e"]].max() < 0.25 * rank["b"]
    assert list(attr.index) == list(X.index[300:]) and list(attr.columns) == list("abcde")
    alone = masked_attributions(reg, X[300:301])
    np.testing.assert_allclose(alone.to_numpy(), attr.iloc[:1].to_numpy(), rtol=1e-6, atol=1e-9)


def test_masked_attributions_of_a_classifier_over_every_column_kind():
    """A class read from one column of a table holding every dtype: that column is priced highest, in
    probability of the class predicted, and every kind of column can be hidden."""
    from feat_engine import masked_attributions

    df = mixed_table(240, seed=3)
    y = np.where(df["float"].fillna(10) > 10, "high", "low")
    clf = FEATClassifier(n_estimators=1).fit(df[:180], y[:180])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FEATDataWarning)
        attr = masked_attributions(clf, df[180:])
    assert attr.shape == (60, df.shape[1]) and np.isfinite(attr.to_numpy()).all()
    assert attr.abs().mean().idxmax() == "float" and (attr.abs().to_numpy() <= 1.0).all()
