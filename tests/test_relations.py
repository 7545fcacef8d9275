"""Relation matrices: shape, names, normalisation, reproducibility, and Pearson/Spearman alignment."""
import numpy as np
import pandas as pd
import pytest

from feat_engine import (
    FEATInputError, dependence_matrix, mutual_information_matrix, pearson_matrix, relation_matrix, spearman_matrix,
)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    df["e"] = np.exp(df["a"])                                 # monotone in a
    df["colour"] = np.where(df["b"] > 0, "red", "blue")
    df["y"] = (df["a"] + df["b"] > 0).astype(int)
    return df


def test_relation_matrix_without_target(table):
    X = table.drop(columns=["y"])
    m = relation_matrix(X, n_estimators=1, max_rows=128)
    assert list(m.index) == list(m.columns) == ["a", "b", "c", "e", "colour"]
    assert np.allclose(np.diag(m), 0) and np.allclose(m.sum(axis=1), 1) and (m.to_numpy() >= 0).all()


def test_relation_matrix_with_target_is_reproducible(table):
    m1 = relation_matrix(table, target="y", n_estimators=1, max_rows=64, random_state=5)
    m2 = relation_matrix(table, target="y", n_estimators=1, max_rows=64, random_state=5)
    m3 = relation_matrix(table, target="y", n_estimators=1, max_rows=64, random_state=6)
    assert m1.shape == (6, 6) and list(m1.columns)[-1] == "y"
    pd.testing.assert_frame_equal(m1, m2)
    assert not np.array_equal(m1.to_numpy(), m3.to_numpy())


def test_pearson_and_spearman_share_the_order(table):
    p, s = pearson_matrix(table, target="y"), spearman_matrix(table, target="y")
    assert list(p.columns) == list(s.columns) == ["a", "b", "c", "e", "colour", "y"]
    assert s.loc["a", "e"] == pytest.approx(1.0)             # monotone -> rank correlation 1
    assert p.loc["a", "e"] < 0.95                            # ... but not linear
    assert abs(p.loc["b", "colour"]) > 0.5


def test_mutual_information_sees_what_the_correlations_cannot(table):
    """y = x² with x symmetric about 0: no linear or monotone association, but x determines y."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=800)
    df = pd.DataFrame({"x": x, "y": x ** 2 + 0.05 * rng.normal(size=800), "n": rng.normal(size=800)})
    m = mutual_information_matrix(df)
    assert list(m.index) == list(m.columns) == ["x", "y", "n"]
    assert np.allclose(np.diag(m), 0) and (m.to_numpy() >= 0).all()
    assert abs(pearson_matrix(df).loc["x", "y"]) < 0.2 and abs(spearman_matrix(df).loc["x", "y"]) < 0.2
    assert min(m.loc["x", "y"], m.loc["y", "x"]) > 1.0
    assert m.loc["x", "y"] > 10 * max(m.loc["x", "n"], m.loc["n", "x"], 0.01)
    with_target = mutual_information_matrix(table, target="y")
    assert list(with_target.columns) == list(pearson_matrix(table, target="y").columns)
    pd.testing.assert_frame_equal(with_target, mutual_information_matrix(table, target="y"))
    sub = mutual_information_matrix(table, target="y", max_rows=100)         # a seeded subset of the 200 rows
    pd.testing.assert_frame_equal(sub, mutual_information_matrix(table, target="y", max_rows=100))
    assert not np.allclose(sub.to_numpy(), with_target.to_numpy())


def test_dependence_matrix_sees_through_a_chain():
    """a -> b -> c, noise n: c is predicted from b; a adds nothing once b is known, though it
    correlates with c at about 0.7 (Pearson cannot tell the two apart)."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=600)
    b = a + rng.normal(size=600)
    df = pd.DataFrame({"a": a, "b": b, "c": b + 0.1 * rng.normal(size=600), "n": rng.normal(size=600)})
    m = dependence_matrix(df, max_rows=600, n_query=128)
    assert list(m.index) == list(m.columns) == ["a", "b", "c", "n"]
    assert np.allclose(np.diag(m), 0) and (m.to_numpy() >= 0).all()
    assert abs(pearson_matrix(df).loc["c", "a"]) > 0.6
    assert m.loc["c", "b"] > 0.3 and m.loc["c", "b"] > 5 * max(m.loc["c", "a"], m.loc["c", "n"], 0.01)


def test_dependence_matrix_with_a_class_target(table):
    m1 = dependence_matrix(table, target="y", max_rows=200, n_query=48, random_state=3)
    m2 = dependence_matrix(table, target="y", max_rows=200, n_query=48, random_state=3)
    assert list(m1.columns) == ["a", "b", "c", "e", "colour", "y"]
    pd.testing.assert_frame_equal(m1, m2)
    assert np.allclose(np.diag(m1), 0) and (m1.to_numpy() >= 0).all()
    assert m1.loc["y", ["a", "b"]].min() > m1.loc["y", "c"]        # y = [a + b > 0]: c is noise
    with pytest.raises(FEATInputError, match="at least 8 rows"):
        dependence_matrix(table.head(5))


def test_relation_errors(table):
    with pytest.raises(FEATInputError, match="'nope' does not exist"):
        relation_matrix(table, target="nope")
    many = table.assign(y=np.arange(len(table)) % 12).astype({"y": str})
    with pytest.raises(FEATInputError, match="12 classes"):
        relation_matrix(many, target="y", n_estimators=1)
    with pytest.raises(FEATInputError, match=r"Found array with 0 sample\(s\)"):
        relation_matrix(pd.DataFrame())
