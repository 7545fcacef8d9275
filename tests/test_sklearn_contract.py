"""scikit-learn's whole estimator-check suite on the three estimators, each refusal the suite asks
for (in FEAT's words and scikit-learn's), and the one task rule that the CLI and the app share
(docs/decisions/0036-scikit-learn-contract.md)."""
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

from app import io as aio
from feat_engine import FEATClassifier, FEATImputer, FEATInputError, FEATRegressor, infer_task
from feat_engine.cli import main

@parametrize_with_checks([FEATClassifier(n_estimators=1), FEATRegressor(n_estimators=1), FEATImputer(n_estimators=1)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # FEAT's notes on dropped constant columns
        check(estimator)


def data(n=30, d=4, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, X[:, 0] + 0.5 * X[:, 1]


def test_classifier_refuses_a_continuous_target_and_names_the_regressor():
    X, y = data()
    with pytest.raises(FEATInputError, match="Unknown label type: continuous.*'price'.*use FEATRegressor"):
        FEATClassifier(n_estimators=1).fit(X, pd.Series(y, name="price"))
    clf = FEATClassifier(n_estimators=1).fit(X, np.round(y))     # whole numbers held as floats are classes
    np.testing.assert_array_equal(clf.classes_, np.unique(np.round(y)))


@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csr_array, sp.coo_array])
def test_sparse_input_is_refused_with_a_way_out(container):
    X, y = data()
    assert get_tags(FEATRegressor()).input_tags.sparse is False
    with pytest.raises(FEATInputError, match=r"context is a sparse .*not supported.*context\.toarray\(\)"):
        FEATRegressor(n_estimators=1).fit(container(X), y)
    reg = FEATRegressor(n_estimators=1).fit(X, y)
    with pytest.raises(FEATInputError, match=r"query is a sparse .*not supported.*query\.toarray\(\)"):
        reg.predict(container(X))


def test_complex_numbers_are_refused_in_x_and_y():
    X, y = data()
    with pytest.raises(FEATInputError, match="context: Complex data not supported"):
        FEATRegressor(n_estimators=1).fit(X + 1j, y)
    frame = pd.DataFrame({"a": X[:, 0], "z": X[:, 1] + 1j})
    with pytest.raises(FEATInputError, match=r"Complex data not supported: columns \['z'\]"):
        FEATImputer(n_estimators=1).fit(frame)
    with pytest.raises(FEATInputError, match="target: Complex data not supported"):
        FEATRegressor(n_estimators=1).fit(X, y + 1j)
    with pytest.raises(FEATInputError, match="target 'y': Complex data not supported"):
        FEATRegressor(n_estimators=1).fit(X, pd.Series(y + 1j))


def test_repeated_names_and_cells_of_lists_are_refused_naming_the_column():
    X, y = data()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": np.where(X[:, 2] > 0, "hi", "lo")})
    with pytest.raises(FEATInputError, match=r"context: columns \['a'\] appear more than once"):
        FEATRegressor(n_estimators=1).fit(frame.rename(columns={"b": "a"}), y)
    with pytest.raises(FEATInputError, match=r"context: column 'c' holds cells that are neither numbers"):
        FEATRegressor(n_estimators=1).fit(frame.assign(c=[["hi"]] * len(frame)), y)
    reg = FEATRegressor(n_estimators=1).fit(frame, y)
    query = frame.astype(object)
    query.at[0, "c"] = ["hi"]
    with pytest.raises(FEATInputError, match=r"query: column 'c' holds cells that are neither numbers"):
        reg.predict(query)


def test_a_column_vector_target_warns_and_is_read_as_1d():
    X, y = data()
    with pytest.warns(DataConversionWarning, match="A column-vector y was passed"):
        reg = FEATRegressor(n_estimators=1).fit(X, y[:, None])
    np.testing.assert_array_equal(reg.predict(X), FEATRegressor(n_estimators=1).fit(X, y).predict(X))


@pytest.mark.parametrize("Est, fit, message", [
    (FEATRegressor, lambda e, X, y: e.fit(X, y).predict(X[:, :3]),
     r"query: X has 3 features, but FEATRegressor is expecting 4 features as input"),
    (FEATImputer, lambda e, X, y: e.fit(X).transform(X[:, :3]),
     r"X: X has 3 features, but FEATImputer is expecting 4 features as input"),
    (FEATClassifier, lambda e, X, y: e.fit(X, y > 0).predict(X[0]), r"(?s)query: Expected 2D array.*Reshape your data"),
    (FEATRegressor, lambda e, X, y: e.fit(X[:, :0], y), r"context: Found array with 0 feature\(s\) \(shape=\(30, 0\)\)"),
    (FEATImputer, lambda e, X, y: e.fit(pd.DataFrame(index=range(5))), r"X: Found array with 0 feature\(s\)"),
    (FEATRegressor, lambda e, X, y: e.fit(X[:1], y[:1]), r"context: Found array with 1 sample\(s\)"),
    (FEATClassifier, lambda e, X, y: e.fit(X, None), r"requires y to be passed, but the target y is None"),
    (FEATRegressor, lambda e, X, y: e.fit(X, X[:, :2]), r"y should be a 1d array, got an array of shape \(30, 2\)"),
], ids=["n-features", "n-features-imputer", "1-d", "0-features", "0-features-frame", "1-sample", "y-none", "y-2-d"])
def test_refusals_use_sklearn_wording(Est, fit, message):
    X, y = data()
    with pytest.raises(FEATInputError, match=message):
        fit(Est(n_estimators=1), X, y)


def test_frames_are_matched_by_name_and_mixed_names_still_fit():
    X, y = data()
    df = pd.DataFrame(X, columns=["region", 2019, 2020, "d"])      # an Excel header with years
    reg = FEATRegressor(n_estimators=1).fit(df, y)
    assert not hasattr(reg, "feature_names_in_") and reg.n_features_in_ == 4
    np.testing.assert_array_equal(reg.predict(df[["d", 2020, "region", 2019]]), reg.predict(df))
    with pytest.raises(FEATInputError, match=r"missing \['d'\], unexpected \[\]"):
        reg.predict(df.drop(columns=["d"]))


def test_numbers_held_as_objects_are_a_numeric_target():
    X, y = data()
    codes = (y > 0).astype(int)
    as_objects = FEATRegressor(n_estimators=1).fit(X, codes.astype(object)).predict(X)
    np.testing.assert_array_equal(as_objects, FEATRegressor(n_estimators=1).fit(X, codes).predict(X))


TARGETS = {                      # column -> the task both the CLI's --task auto and the app must pick
    "codes": ("classification", lambda rng, n: rng.integers(0, 3, n)),
    "rating": ("classification", lambda rng, n: rng.integers(1, 6, n).astype(float)),
    "label": ("classification", lambda rng, n: rng.choice(["red", "green", "blue"], n)),
    "flag": ("classification", lambda rng, n: rng.uniform(size=n) > 0.5),
    "price": ("regression", lambda rng, n: rng.lognormal(size=n).round(2)),
    "count": ("regression", lambda rng, n: np.arange(n)),
}


def test_cli_and_app_pick_the_same_task(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40)})
    for name, (_, draw) in TARGETS.items():
        table[name] = draw(rng, 40)
    table.to_csv(tmp_path / "table.csv", index=False)
    read = pd.read_csv(tmp_path / "table.csv")
    for name, (task, _) in TARGETS.items():
        read[["a", "b", name]].to_csv(tmp_path / "context.csv", index=False)
        assert main(["predict", "--context", str(tmp_path / "context.csv"), "--target", name, "--query",
                     str(tmp_path / "context.csv"), "-o", str(tmp_path / "out.csv"), "--n-estimators", "1"]) == 0
        cli = "classification" if any(c.startswith("p(") for c in pd.read_csv(tmp_path / "out.csv")) else "regression"
        assert cli == aio.detect_task(read[name]) == infer_task(read[name]) == task, name


def test_cli_reports_a_continuous_target_forced_to_classification(tmp_path, capsys):
    X, y = data()
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "price": y}).to_csv(tmp_path / "t.csv", index=False)
    assert main(["predict", "--context", str(tmp_path / "t.csv"), "--target", "price", "--query", str(tmp_path / "t.csv"),
                 "-o", str(tmp_path / "out.csv"), "--task", "classification"]) == 2
    err = capsys.readouterr().err      # said with its fix (before: scikit-learn's "Unknown label type: continuous")
    assert "almost every row is its own class. Give --task regression" in err


def test_app_refuses_a_continuous_target_as_classes():
    price = pd.Series(np.repeat([0.5, 1.5, 2.5], 10), name="price")
    with pytest.raises(aio.TableError, match="not all whole.*Set the task to regression"):
        aio.check_target(price, "classification")
    aio.check_target(price.astype("category"), "classification")          # declared categorical: classes
