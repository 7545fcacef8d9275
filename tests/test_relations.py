"""Relation matrices: shape, names, normalisation, reproducibility, and Pearson/Spearman alignment."""
import numpy as np
import pandas as pd
import pytest
import torch

from feat_engine import (
    FEATInputError,
    dependence_matrix,
    edge_matrix,
    load_model,
    mutual_information_matrix,
    pearson_matrix,
    relation_matrix,
    spearman_matrix,
)
from feat_engine.checkpoint import (
    DEFAULT_CHECKPOINT, edge_head_path, load_checkpoint, load_edge_head, save_checkpoint, save_edge_head,
)
from feat_engine.errors import CheckpointError
from feat_engine.model.edge_head import DEPTHS, N_STATS, EdgeHead
from feat_engine.relations.correlations import _filled_standardised, mutual_information_among, pair_statistics


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
    # a target written as money is its numbers, as for the estimators
    money = table.assign(c=[f"${v:,.6f}" for v in table["c"]])
    pd.testing.assert_frame_equal(pearson_matrix(money, target="c"), pearson_matrix(table, target="c"), atol=1e-5)


def test_correlations_leave_out_categories_without_an_order(table):
    """A category of three levels without an order, and a target of three classes named as text, have no correlation:
    their codes follow the alphabet (renaming one level would change it). An ordered category keeps its order, two
    levels and the numbers keep theirs."""
    levels = np.array(["low", "mid", "high"])[np.digitize(table["c"], [-0.5, 0.5])]
    df = table.assign(shade=levels, size=pd.Categorical(levels, ["low", "mid", "high"], ordered=True),
                      cls=np.array(["hi", "lo", "mid"])[np.digitize(table["a"], [-0.5, 0.5])]).drop(columns="y")
    for m in (pearson_matrix(df, target="cls"), spearman_matrix(df, target="cls"), pearson_matrix(df)):
        assert m[["shade", "cls"]].isna().all().all() and m.loc[["shade", "cls"]].isna().all().all()
        kept = m.drop(index=["shade", "cls"], columns=["shade", "cls"])
        assert kept.notna().all().all() and abs(kept.loc["size", "c"]) > 0.5 and abs(kept.loc["colour", "b"]) > 0.5


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


def test_mutual_information_in_threads_equals_one_column_at_a_time():
    """The columns' estimates run in threads on all cores: the same numbers as scikit-learn called serially, each
    column against all others, or with `once` against the later ones alone (one estimate a pair, symmetric)."""
    from sklearn.feature_selection import mutual_info_regression

    rng = np.random.default_rng(3)
    z = rng.normal(size=(600, 5))
    z[:, 1] += z[:, 0] ** 2
    z[rng.random(z.shape) < 0.05] = np.nan
    z[:, 4] = 1.0                                                    # a constant column scores 0
    got, once = mutual_information_among(z, random_state=7), mutual_information_among(z, random_state=7, once=True)
    filled, varies = _filled_standardised(z)
    want, want_once = np.zeros((5, 5)), np.zeros((5, 5))
    for j in np.flatnonzero(varies):
        others, later = np.delete(np.arange(5), j), np.arange(j + 1, 5)[varies[j + 1:]]
        want[others, j] = mutual_info_regression(filled[:, others], filled[:, j], n_neighbors=3, random_state=7)
        if len(later):
            want_once[later, j] = want_once[j, later] = mutual_info_regression(filled[:, later], filled[:, j],
                                                                               n_neighbors=3, random_state=7)
    want[~varies] = 0.0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(once, want_once)
    assert once[1, 0] > 0.2 and not once[4].any()
    assert got[1, 0] > 0.2 and not got[4].any()


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


def test_dependence_matrix_reads_a_wide_table_at_the_pretrained_width():
    """Past the width the model was pretrained on (24 other columns), each column's run reads the 24 columns most
    related to it by mutual information and leaves the others 0: its row is, to the bit, the row of the matrix of
    that column and those 24 alone (which reads every column, as before)."""
    from feat_engine.relations.matrices import _encoded_columns, _read_beside

    rng = np.random.default_rng(2)
    a = rng.normal(size=160)
    noise = {f"n{j}": rng.normal(size=160) for j in range(26)}
    df = pd.DataFrame({"a": a, "b": a + 0.3 * rng.normal(size=160), **noise})
    wide = dependence_matrix(df, max_rows=160, n_query=8)
    z, names, _ = _encoded_columns(df, None, None, 10)
    context = np.random.default_rng(0).permutation(len(z))[8:]          # the function's draw: queries first
    beside = _read_beside(z[context], 24, 0)
    i = names.index("b")
    assert all(len(cols) == 24 for cols in beside) and names.index("a") in beside[i]
    read = [names[j] for j in beside[i]]
    alone = dependence_matrix(df.iloc[:, sorted([i, *beside[i]])], max_rows=160, n_query=8)
    np.testing.assert_array_equal(wide.loc["b", read].to_numpy(), alone.loc["b", read].to_numpy())
    assert (wide.loc["b"].drop(read) == 0).all() and wide.loc["b", "a"] > 0.3


def test_dependence_matrix_with_a_class_target(table):
    m1 = dependence_matrix(table, target="y", max_rows=200, n_query=48, random_state=3)
    m2 = dependence_matrix(table, target="y", max_rows=200, n_query=48, random_state=3)
    assert list(m1.columns) == ["a", "b", "c", "e", "colour", "y"]
    pd.testing.assert_frame_equal(m1, m2)
    assert np.allclose(np.diag(m1), 0) and (m1.to_numpy() >= 0).all()
    assert m1.loc["y", ["a", "b"]].min() > m1.loc["y", "c"]        # y = [a + b > 0]: c is noise
    with pytest.raises(FEATInputError, match="at least 8 rows"):
        dependence_matrix(table.head(5))


def test_feat_matrices_in_bf16_follow_the_fp32_reference(table):
    """bf16 autocast (what precision="auto" takes on a GPU or a CPU that multiplies bf16 natively) against fp32 on
    the same rows and draws: each FEAT matrix within a small share of its range, the same strongest link found."""
    kw = dict(target="y", max_rows=128, random_state=3)         # small: bf16 is emulated, and slow, on AVX2-only CPUs
    for fn, extra in ((relation_matrix, {"n_estimators": 1}), (dependence_matrix, {"n_query": 32}), (edge_matrix, {})):
        ref, fast = (fn(table, precision=p, **kw, **extra).to_numpy() for p in ("fp32", "bf16"))
        assert not np.array_equal(ref, fast), fn.__name__              # bf16 did run
        assert np.abs(fast - ref).max() <= 0.01 * np.abs(ref).max(), fn.__name__   # measured: 0.0005-0.0028
        assert np.array_equal(ref[-1].argsort()[-2:], fast[-1].argsort()[-2:]), fn.__name__  # y's two strongest
    with pytest.raises(FEATInputError, match="precision must be one of"):
        dependence_matrix(table, precision="fp16")


def test_relation_errors(table):
    with pytest.raises(FEATInputError, match="'nope' does not exist"):
        relation_matrix(table, target="nope")
    many = table.assign(y=[f"c{k % 12}" for k in range(len(table))])     # (text of numbers would be numbers)
    with pytest.raises(FEATInputError, match="12 classes"):
        relation_matrix(many, target="y", n_estimators=1)
    with pytest.raises(FEATInputError, match=r"Found array with 0 sample\(s\)"):
        relation_matrix(pd.DataFrame())


def test_edge_head_is_symmetric_and_follows_the_columns():
    """Random weights: logits are symmetric, and permuting the columns permutes them (no column is special);
    the pair statistics move them."""
    torch.manual_seed(0)
    head = EdgeHead(16, k=4, width=8)
    with torch.no_grad():
        head.gate.fill_(0.7)                                            # the tokens' path open (trained: nonzero)
    tokens = [torch.randn(50, 6, 16) for _ in DEPTHS]
    stats = torch.rand(6, 6, N_STATS)
    stats = stats + stats.transpose(0, 1)
    z = head(tokens, stats)
    assert z.shape == (6, 6) and torch.allclose(z, z.T)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    zp = head([t[:, perm] for t in tokens], stats[perm][:, perm])
    assert torch.allclose(zp, z[perm][:, perm], atol=1e-5)
    assert not torch.allclose(head(tokens, torch.zeros_like(stats)), z, atol=1e-3)
    assert not torch.allclose(head([t.flip(0) ** 2 for t in tokens], stats), z, atol=1e-3)


def test_pair_statistics_tell_a_direct_link_from_a_chain():
    """a -> b -> c (linear, Gaussian): every marginal statistic links a and c, the partial correlations do not;
    the mutual-information channel is one estimate a pair (`mutual_information_among`, once); a constant column
    scores 0."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=2000)
    b = a + 0.5 * rng.normal(size=2000)
    z = np.column_stack([a, b, b + 0.5 * rng.normal(size=2000), np.full(2000, 3.0), rng.normal(size=2000)])
    s = pair_statistics(z)
    assert s.shape == (5, 5, N_STATS) and np.allclose(s, s.transpose(1, 0, 2)) and (s >= 0).all()
    assert np.allclose(s[range(5), range(5)], 0) and np.allclose(s[3], 0)
    assert (s[0, 2, :3] > 0.3).all() and (s[0, 2, 3:] < 0.05).all() and (s[1, 2, 3:] > 0.5).all()
    mi = mutual_information_among(z, once=True)
    assert np.allclose(s[..., 0], mi, atol=1e-6) and np.allclose(mi, mi.T)
    z[::4, 1] = np.nan                                                  # missing cells: still finite
    assert np.isfinite(pair_statistics(z)).all()


def test_column_tokens_end_where_the_context_encoder_does():
    """The tokens the edge head reads after the last block are encode_context's feature tokens."""
    model = load_model()
    x = torch.as_tensor(np.random.default_rng(0).normal(size=(1, 90, 5)), dtype=torch.float32)
    ids = model.column_ids(1, 5, seed=3)
    with torch.no_grad():
        toks = model.column_tokens(x, ids, DEPTHS)
        h, _, _ = model.encode_context(x, None, None, ids)
    assert [t.shape for t in toks] == [(1, 90, 5, model.cfg.d_model)] * len(DEPTHS)
    assert torch.allclose(toks[-1], h[:, :, :-1], atol=1e-6)


def test_edge_matrix_finds_the_links_of_a_chain():
    """a -> b -> c with noise columns: the shipped head rates the two links above every pair with noise."""
    rng = np.random.default_rng(4)
    a = rng.normal(size=800)
    b = np.tanh(a) + 0.3 * rng.normal(size=800)
    df = pd.DataFrame({"a": a, "b": b, "c": b ** 2 + 0.2 * rng.normal(size=800),
                       "n1": rng.normal(size=800), "n2": rng.uniform(size=800)})
    m = edge_matrix(df)
    assert list(m.index) == list(m.columns) == ["a", "b", "c", "n1", "n2"]
    v = m.to_numpy()
    assert np.allclose(v, v.T) and np.allclose(np.diag(v), 0) and ((v >= 0) & (v <= 1)).all()
    noise = max(m.loc[i, j] for i in ["a", "b", "c", "n1"] for j in ["n1", "n2"] if i != j)
    assert min(m.loc["a", "b"], m.loc["b", "c"]) > noise
    pd.testing.assert_frame_equal(m, edge_matrix(df))                          # seeded
    with_target = edge_matrix(df.assign(y=(a > 0).astype(int)), target="y", n_estimators=1)
    assert list(with_target.columns)[-1] == "y" and with_target.loc["y", "a"] > with_target.loc["y", "n2"]


def test_edge_head_files_name_the_problem(tmp_path):
    with pytest.raises(CheckpointError, match="file not found"):
        load_edge_head(tmp_path / "none-edges.pt")
    (tmp_path / "junk-edges.pt").write_bytes(b"not a head")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_edge_head(tmp_path / "junk-edges.pt")
    other = tmp_path / "other.pt"                       # another backbone: the shipped weights, nudged
    model, _ = load_checkpoint(DEFAULT_CHECKPOINT)    # a fresh copy, not the cached model
    with torch.no_grad():
        model.final_norm.weight.add_(0.5)
    save_checkpoint(other, model)
    head, _ = load_edge_head(edge_head_path(DEFAULT_CHECKPOINT), DEFAULT_CHECKPOINT)
    save_edge_head(tmp_path / "mine-edges.pt", head, DEFAULT_CHECKPOINT)
    with pytest.raises(CheckpointError, match="another backbone"):
        load_edge_head(tmp_path / "mine-edges.pt", other)
    with pytest.raises(CheckpointError, match="file not found"):
        edge_matrix(pd.DataFrame({"a": [1.0, 2, 3], "b": [2.0, 1, 3]}), checkpoint=other)
    with pytest.raises(FEATInputError, match="needs its `edge_head`"):
        edge_matrix(pd.DataFrame({"a": [1.0, 2, 3], "b": [2.0, 1, 3]}), checkpoint=load_model())
    with pytest.raises(CheckpointError, match="feat-fast-edges.pt: file not found"):   # no head ships with "fast"
        edge_matrix(pd.DataFrame({"a": [1.0, 2, 3], "b": [2.0, 1, 3]}), checkpoint="fast")
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(40, 3)), columns=list("abc"))
    pd.testing.assert_frame_equal(edge_matrix(X, checkpoint=load_model(), edge_head=edge_head_path(DEFAULT_CHECKPOINT)),
                                  edge_matrix(X))          # a loaded model with its head's file: the shipped pair


def test_edge_head_trains_on_a_small_cache(tmp_path):
    """`tokens` then `fit` on three prior tables (fewer than one batch): a head that loads against its backbone."""
    from feat_engine.train.edges import main as edges_main
    from feat_engine.train.edges import write_tokens
    write_tokens(tmp_path / "tok", 990_000_000, 3)          # as `tokens` does, without its one-thread setting
    assert len(list((tmp_path / "tok").glob("*.npz"))) == 3
    edges_main(["fit", "--cache", str(tmp_path / "tok"), "--out", str(tmp_path / "h-edges.pt"), "--epochs", "1"])
    head, meta = load_edge_head(tmp_path / "h-edges.pt", DEFAULT_CHECKPOINT)
    assert meta["tables"] == 3 and isinstance(head, EdgeHead)
