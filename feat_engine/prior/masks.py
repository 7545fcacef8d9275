"""Cell, stripe and block masks (paper section 6.3): one generator for pretraining, the
imputation benchmark and the app's masking demo.

* cell:   independent cells.
* stripe: a run of consecutive rows in one column (a sensor that was off for a while).
* block:  a rectangle of consecutive rows x several columns (a form page never filled).

`make_mask` mixes them (50/30/20 by default) until the requested share of cells is hidden.
"""
from __future__ import annotations

import numpy as np

MASK_MIX = (0.5, 0.3, 0.2)


def _fill(mask: np.ndarray, target: int, rng: np.random.Generator, draw) -> None:
    """Add shapes from `draw` to `mask` until it holds at least `target` True cells (or no progress)."""
    for _ in range(10_000):
        if mask.sum() >= target:
            return
        rows, cols = draw()
        mask[np.ix_(rows, cols)] = True


def cell_mask(shape: tuple[int, int], rate: float, rng: np.random.Generator) -> np.ndarray:
    """Independent cells, exactly round(rate * size) of them."""
    n, d = shape
    k = int(round(rate * n * d))
    mask = np.zeros(n * d, dtype=bool)
    mask[rng.choice(n * d, size=min(k, n * d), replace=False)] = True
    return mask.reshape(n, d)


def _run(n: int, rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    length = max(1, int(round(rng.uniform(lo, hi) * n)))
    start = int(rng.integers(0, max(1, n - length + 1)))
    return np.arange(start, min(n, start + length))


def stripe_mask(shape: tuple[int, int], rate: float, rng: np.random.Generator) -> np.ndarray:
    """Runs of 2-20% of the rows in single columns."""
    n, d = shape
    mask = np.zeros(shape, dtype=bool)
    _fill(mask, int(round(rate * n * d)), rng, lambda: (_run(n, rng, 0.02, 0.2), [int(rng.integers(d))]))
    return mask


def block_mask(shape: tuple[int, int], rate: float, rng: np.random.Generator) -> np.ndarray:
    """Rectangles of 2-10% of the rows over 2..max(2, D/3) columns."""
    n, d = shape
    mask = np.zeros(shape, dtype=bool)

    def draw():
        width = int(rng.integers(min(2, d), max(2, d // 3) + 1)) if d > 1 else 1
        return _run(n, rng, 0.02, 0.1), rng.choice(d, size=min(width, d), replace=False)

    _fill(mask, int(round(rate * n * d)), rng, draw)
    return mask


def make_mask(
    shape: tuple[int, int], rate: float, rng: np.random.Generator | int | None = None,
    mix: tuple[float, float, float] = MASK_MIX,
) -> np.ndarray:
    """Boolean (N, D) mask hiding about `rate` of the cells: cell, stripe and block shares by `mix`.

    Stripes and blocks are placed first; cells then top the mask up to the target, so the
    hidden share is round(rate * N * D) cells unless stripes and blocks overshoot it.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"mask rate must be in [0, 1], got {rate}")
    rng = np.random.default_rng(rng)
    n, d = shape
    total = int(round(rate * n * d))
    w = np.asarray(mix, dtype=float) / np.sum(mix)
    mask = stripe_mask(shape, rate * w[1], rng) | block_mask(shape, rate * w[2], rng)
    missing = total - int(mask.sum())
    if missing > 0:
        free = np.flatnonzero(~mask.ravel())
        mask.ravel()[rng.choice(free, size=min(missing, free.size), replace=False)] = True
    return mask
