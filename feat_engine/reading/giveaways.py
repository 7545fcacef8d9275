"""Columns that give the target away: a feature that decides the target on every context row by itself.

Such a column is most often computed from the target (a birth weight beside "low birth weight") or recorded after
it (a refund date beside "returned"). A model leans on it and scores well, and then fails on new rows, which will
not have it. The estimators name it at `fit` (a `FEATDataWarning`) and read it as given: whether it belongs is the
analyst's call. The test is exact, not statistical, so that a strong but honest feature is not named:
- classes: along the feature's sorted values the class changes at most twice per class beyond the first (a
  threshold, or an interval, per class), with at least `MIN_CLASS` rows in two classes and `MIN_CLASS` rows a class
  on average (on fewer, as with 69 classes in 114 rows, any column with distinct values passes); for a nominal
  feature, every level holds one class, with at least `LEVEL_ROWS` rows a level on average;
- a numeric target: the feature's ranks are the target's (|Spearman| at least `MIN_RANK_CORR`);
- classes: the feature is empty on every row of one class and on no other row (at least `MIN_CLASS` rows each way:
  a wage recorded only for those who work, beside "in the labour force").
It reads a random subsample of at most `MAX_ROWS` context rows, on which an exact rule stays exact.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

MAX_ROWS = 20_000
MIN_CLASS = 10           # rows of each of two classes, and rows a class on average, before a rule is believed
LEVEL_ROWS = 10          # rows a level, on average, for a nominal feature's levels to count as a rule
MIN_RANK_CORR = 0.999


def giveaways(x: np.ndarray, y: np.ndarray, classification: bool, nominal: np.ndarray, names: list[str],
              seed: int | None = 0) -> list[str]:
    """One sentence per column whose feature of the context x (n, d; NaN missing; `nominal` columns hold level codes)
    decides the target y (class indices, or numbers) on its own. `names` gives each feature's column: a date's parts
    and a number's levels (decision 0044) name their column, once, as the analyst knows it."""
    rows = np.random.default_rng(seed).permutation(len(x))[:MAX_ROWS]
    x, y = np.asarray(x, dtype=np.float64)[rows], np.asarray(y)[rows]
    out: dict[str, str] = {}                  # column -> how it gives the target away; each column once
    for j, name in enumerate(names):
        if name in out:
            continue
        seen = ~np.isnan(x[:, j])
        v, t = x[seen, j], y[seen]
        empty = np.unique(y[~seen]) if classification else ()       # the classes of the rows where it is empty
        if len(empty) == 1 and min(seen.sum(), (~seen).sum()) >= MIN_CLASS and empty[0] not in t:
            out[name] = "it is empty on the rows of one class and filled on the others, on every context row"
            continue
        if classification:
            counts = np.bincount(t.astype(np.int64))
            present = int((counts > 0).sum())
            if (counts >= MIN_CLASS).sum() < 2:
                continue
            if j in nominal:
                levels, code = np.unique(v, return_inverse=True)
                mixed = np.unique(np.stack([code, t]), axis=1).shape[1] > len(levels)
                if not mixed and len(levels) * LEVEL_ROWS <= len(v):
                    out[name] = "each of its levels holds one class only, on every context row"
                continue
            s = t[np.argsort(v, kind="stable")]
            if present * MIN_CLASS <= len(v) and int((s[1:] != s[:-1]).sum()) <= 2 * (present - 1):
                out[name] = "a threshold on it separates the classes on every context row"
        elif j not in nominal and len(v) > 2 and np.ptp(v) > 0 and np.ptp(t) > 0:
            rho = float(spearmanr(v, t).statistic)
            if abs(rho) >= MIN_RANK_CORR:
                out[name] = f"its order is the target's on the context rows (Spearman {rho:.4f})"
    return [f"column {name!r} gives the target away: {why}. If it is computed from the target or recorded after it, "
            "leave it out: the predictions lean on it, and new rows will not have it" for name, why in out.items()]
