"""Cell, stripe and block masks (feat_engine/prior/masks.py): rate, shape of each kind, determinism."""
from __future__ import annotations

import numpy as np
import pytest

from feat_engine.prior.masks import MASK_MIX, block_mask, cell_mask, make_mask, stripe_mask


def vertical_runs(mask: np.ndarray) -> list[int]:
    """Lengths of the maximal runs of True down each column."""
    runs = []
    for col in mask.T:
        padded = np.concatenate([[False], col, [False]]).astype(np.int8)
        d = np.diff(padded)
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        runs += (ends - starts).tolist()
    return runs


@pytest.mark.parametrize("shape", [(1000, 20), (400, 10), (300, 30)])
@pytest.mark.parametrize("rate", [0.05, 0.1, 0.2, 0.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_make_mask_rate_honoured(shape, rate, seed):
    m = make_mask(shape, rate, seed)
    assert m.shape == shape and m.dtype == bool
    target = round(rate * shape[0] * shape[1])
    # never under the target (cells top it up); overshoot at most one stripe + one block
    assert m.sum() >= target
    assert m.mean() <= rate + 0.02


def test_make_mask_small_table_overshoot_bounded():
    n, d = 50, 1
    for seed in range(10):
        m = make_mask((n, d), 0.05, seed)
        # one stripe (<= 20% of rows) plus one block (<= 10% of rows) at most, beyond the target
        assert round(0.05 * n) <= m.sum() <= round(0.05 * n) + round(0.2 * n) + round(0.1 * n)


def test_make_mask_edge_rates():
    assert not make_mask((30, 4), 0.0, 0).any()
    assert make_mask((30, 4), 1.0, 0).all()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            make_mask((10, 3), bad, 0)


def test_make_mask_mixes_all_kinds():
    """The default mix leaves stripe/block structure: long vertical runs and multi-column rows."""
    m = make_mask((1000, 20), 0.2, 3)
    runs = np.array(vertical_runs(m))
    assert runs.max() >= 20                          # a stripe or block of >= 2% of rows exists
    assert (runs == 1).sum() > 100                   # and plenty of isolated cells
    assert MASK_MIX == (0.5, 0.3, 0.2)


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.3])
def test_cell_mask_exact_and_unstructured(rate):
    n, d = 500, 8
    m = cell_mask((n, d), rate, np.random.default_rng(0))
    assert m.sum() == round(rate * n * d)
    # independent cells: runs are short on average; every column gets its share
    assert np.mean(vertical_runs(m)) < 1 + 3 * rate
    per_col = m.sum(0)
    if rate * n >= 30:                               # enough cells per column for a loose spread check
        assert per_col.min() > 0.5 * rate * n and per_col.max() < 1.5 * rate * n


@pytest.mark.parametrize("shape", [(1000, 10), (200, 3)])
def test_stripe_mask_shape(shape):
    n, d = shape
    m = stripe_mask(shape, 0.1, np.random.default_rng(1))
    runs = vertical_runs(m)
    # every run is at least one stripe long (2% of rows), and at most the rows
    assert min(runs) >= max(1, round(0.02 * n))
    assert m.sum() >= round(0.1 * n * d)
    # a stripe is one column wide: compared with a block mask there are rows with exactly one masked cell
    assert (m.sum(1) == 1).any()


@pytest.mark.parametrize("shape", [(1000, 12), (300, 4), (200, 2)])
def test_block_mask_shape(shape):
    n, d = shape
    m = block_mask(shape, 0.1, np.random.default_rng(2))
    runs = vertical_runs(m)
    assert min(runs) >= max(1, round(0.02 * n))
    hit = m.sum(1)
    assert (hit[hit > 0] >= 2).all()                  # a block spans at least 2 columns
    assert m.sum() >= round(0.1 * n * d)


def test_block_mask_single_column():
    m = block_mask((100, 1), 0.2, np.random.default_rng(0))
    assert m.sum() >= 20 and min(vertical_runs(m)) >= 2


@pytest.mark.parametrize("fn", [make_mask, cell_mask, stripe_mask, block_mask])
def test_deterministic_per_seed(fn):
    shape = (300, 7)
    if fn is make_mask:
        a, b, c = fn(shape, 0.15, 42), fn(shape, 0.15, 42), fn(shape, 0.15, 43)
        g = fn(shape, 0.15, np.random.default_rng(42))
        assert np.array_equal(a, g)                   # an int seed == a Generator with that seed
    else:
        a, b, c = (fn(shape, 0.15, np.random.default_rng(s)) for s in (42, 42, 43))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
