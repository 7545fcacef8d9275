"""Relation matrices: shape, names, normalisation, reproducibility, and Pearson/Spearman alignment."""
import numpy as np
import pandas as pd
import pytest

from feat_engine import FEATInputError, pearson_matrix, relation_matrix, spearman_matrix


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


def test_relation_errors(table):
    with pytest.raises(FEATInputError, match="'nope' does not exist"):
        relation_matrix(table, target="nope")
    many = table.assign(y=np.arange(len(table)) % 12).astype({"y": str})
    with pytest.raises(FEATInputError, match="12 classes"):
        relation_matrix(many, target="y", n_estimators=1)
    with pytest.raises(FEATInputError, match=r"Found array with 0 sample\(s\)"):
        relation_matrix(pd.DataFrame())
