"""The blend: FEAT's output and its stacked model's own prediction s, weighted on held-out context rows. When a member's
context is split into local parts, a share of its rows (`held_out_rows`) is kept out of every part and read as
queries, and the weight w in WEIGHTS whose blend loses least on their labels is kept: logit p' = (1 - w) logit p + w s
for each binary run, y' = (1 - w) y + w s for regression (w = 0: FEAT alone). A context too short to hold rows out
is blended at PRIOR_WEIGHT, or for a regression whose stacked models leave little of the target unexplained out of
fold at the weight of PRIOR_BANDS (`prior_blend`). A query's blend reads that query's own output and s, so it
depends on that query alone; at w = 1 the engine does not read the queries (`stacked_alone`: it would change no
number). A member that reads only some context rows (the reading budget's cap) takes its held rows from those it
does not read, in HELD_PARTS of its parts (`held_in_parts`), and keeps weight 1 unless a lower weight clearly beats it
(`choose_blend`'s `clear`). docs/decisions/0024-blend.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from scipy.special import expit, logit
from sklearn.model_selection import train_test_split

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)   # the stacked model's weight in the blend
HELD_SHARE = 8       # one context row in HELD_SHARE is held out of the parts ...
MIN_HELD = 512       # ... if that makes at least this many (shorter contexts blend at PRIOR_WEIGHT)
MAX_HELD = 2048      # ... and at most this many
HELD_PARTS = 64      # where a member reads only some rows, they are drawn from its unread rows in this many of its
                     # parts (`held_in_parts`): 32 rows a part at MAX_HELD
# the weight where no rows are held out to choose one (contexts under MIN_HELD x HELD_SHARE rows, or read whole): on
# contexts of at most 2,048 rows it raised R2 on 58 of 63 tables and probes and lowered it on 5, ROC-AUC on 27 of 51
# and lowered it on 11 (`bench/blend_weights.py`; docs/decisions/0024-blend.md)
PRIOR_WEIGHT = 0.25
# ... but a regression whose stacked models leave at most this share of the standardised target's variance unexplained
# out of fold takes this weight: the engine re-reads their column on a part of the rows, and its own error does not
# shrink with theirs (187 allowlisted regressions: R2 0.7177 -> 0.7218, 87 up and 2 down; docs/decisions/0024-blend.md)
PRIOR_BANDS = ((0.02, 1.0), (0.05, 0.75), (0.10, 0.5))
# a blend read on part of the held rows is told as the outcome (the predictions read the engine or not: `clear_side`)
# where one side of weight 1 wins by this many standard errors
CLEAR_Z = 2.0


def _held_count(n: int) -> int:
    """How many of a context's n rows are held out of its parts: one in HELD_SHARE, at most MAX_HELD; 0 where that
    would be fewer than MIN_HELD."""
    k = min(MAX_HELD, n // HELD_SHARE)
    return k if k >= MIN_HELD else 0


def held_in_parts(rows: np.ndarray, route: np.ndarray, n_parts: int, y: np.ndarray | None,
                  seed: int | None) -> np.ndarray | None:
    """Sorted held-out rows for a member that reads only some context rows: of the unread `rows` (each routed to one
    of its n_parts local parts by `route`), those routed to HELD_PARTS parts drawn at random, at most MAX_HELD of
    them (class labels y, where given, stratify the draw); None where that makes fewer than MIN_HELD. Reading them
    reads those parts alone, where rows drawn from the whole context reach every part (a 1M-row fit read 364 parts
    for 2,048 rows, 44 of its 76 s)."""
    picked = np.random.default_rng(seed).choice(n_parts, min(n_parts, HELD_PARTS), replace=False)
    pool = np.flatnonzero(np.isin(route, picked))
    if len(pool) < MIN_HELD:
        return None
    if len(pool) > MAX_HELD:
        stratify = y is not None and np.unique(y[pool], return_counts=True)[1].min() >= 2
        _, pool = train_test_split(pool, test_size=MAX_HELD, random_state=seed,
                                   stratify=y[pool] if stratify else None)
    return np.sort(rows[pool])


def holds_rows(n: int) -> bool:
    """Whether a context of n rows has rows held out of its parts (`held_out_rows`)."""
    return _held_count(n) > 0


def held_out_rows(n: int, y: np.ndarray | None, seed: int | None) -> np.ndarray | None:
    """Sorted indices of the context rows (of n) held out of the local parts to choose the weight; None
    where that would be fewer than MIN_HELD. Class labels y, where given, stratify the choice."""
    k = _held_count(n)
    if not k:
        return None
    stratify = y is not None and np.unique(y, return_counts=True)[1].min() >= 2
    _, held = train_test_split(np.arange(n), test_size=k, random_state=seed, stratify=y if stratify else None)
    return np.sort(held)


def stacked_alone(blend: Blend | None, stacked: Iterable) -> bool:
    """Whether `blend` gives every query its stacked models' prediction alone: weight 1, with a stacked model beside
    every run (a run without one keeps its own output), so that no engine run on the queries would change a number."""
    return blend is not None and blend.weight == 1.0 and all(s is not None for s in stacked)


def blend_probability(p: np.ndarray, s: np.ndarray, w: float) -> np.ndarray:
    """Binary runs' probabilities p blended with their stacked models' logits s at weight w (in logit space); p is
    kept where s is NaN (a run without a stacked model)."""
    if w == 0.0:
        return p
    mixed = expit((1.0 - w) * logit(np.clip(p, 1e-7, 1.0 - 1e-7)) + w * np.nan_to_num(s))
    return np.where(np.isnan(s), p, mixed)


def blend_prediction(y: np.ndarray, s: np.ndarray, w: float) -> np.ndarray:
    """Regression runs' predictions y blended with their stacked models' predictions s at weight w; y is kept
    where s is NaN (a run without a stacked model)."""
    return np.where(np.isnan(s), y, (1.0 - w) * y + w * np.nan_to_num(s))


@dataclass
class Blend:
    """The chosen weight of the stacked model, and the evidence: the mean held-out loss at each weight (none for
    `prior_blend`'s)."""

    weight: float
    loss: dict[float, float]
    rows: int               # held-out context rows scored (0: the prior weight, no rows to choose on)
    unexplained: float | None = None    # the prior weight's evidence: the share of a regression target's variance the
                                        # stacked models leave unexplained out of fold
    clear: bool = False     # weight 1 beat every lower weight by CLEAR_Z standard errors on those rows (`clear_side`)

    def describe(self) -> str:
        """One phrase for the estimator's reading sentence."""
        if not self.rows:
            said = (f"the output blended with the view's own prediction at weight {self.weight:g}, the weight for "
                    f"contexts too short to hold rows out and choose one")
            if self.unexplained is not None:
                said += (f", where the view leaves {self.unexplained:.1%} of the target's variance unexplained "
                         "out of fold")
            return said
        scores = ", ".join(f"{w:g}: {v:.4f}" for w, v in self.loss.items())
        kept = "" if min(self.loss, key=self.loss.get) == self.weight else (
            f"; weight 1 kept, no lower one beating it by {CLEAR_Z:g} standard errors")
        return (f"the output blended with the view's own prediction at weight {self.weight:g}, chosen on "
                f"{self.rows:,} context rows held out of the parts (mean loss by weight: {scores}){kept}")


def choose_blend(row_loss: Callable[[float], np.ndarray], clear: bool = False) -> Blend:
    """The weight in WEIGHTS whose blend has the lowest mean held-out loss (`row_loss(w)`: one loss per held-out
    row); ties go to the smaller weight. With `clear`, weight 1 unless a lower one beats it clearly (`clear_side`):
    at weight 1 the predictions read no engine, so there FEAT's own reading is paid for only where the held rows show
    that it helps."""
    losses = {w: row_loss(w) for w in WEIGHTS}
    mean = {w: float(v.mean()) for w, v in losses.items()}
    best = min(WEIGHTS, key=lambda w: mean[w])
    side = clear_side(losses.__getitem__)
    if clear and best < 1.0 and side is not False:
        best = 1.0
    return Blend(best, mean, len(losses[WEIGHTS[0]]), clear=side is True)


def clear_side(row_loss: Callable[[float], np.ndarray]) -> bool | None:
    """Which side of weight 1 the held-out rows read so far clearly choose: True where weight 1 (the stacked models
    alone) loses less than the best lower weight by CLEAR_Z standard errors of the rows' paired loss differences,
    False where that lower weight does so, None where neither (`row_loss(w)`: one loss per row read)."""
    one = row_loss(1.0)
    d = min((row_loss(w) for w in WEIGHTS[:-1]), key=np.mean) - one
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
    z = d.mean() / se if se > 0 else np.inf * np.sign(d.mean())
    return True if z >= CLEAR_Z else False if z <= -CLEAR_Z else None


def prior_blend(unexplained: float | None = None) -> Blend:
    """The blend of a context with no rows held out: the stacked model's own prediction at PRIOR_WEIGHT, or, given
    the share of a regression target's variance its stacked models leave `unexplained` out of fold, at the weight of
    the first band of PRIOR_BANDS that share falls in."""
    weight = next((w for share, w in PRIOR_BANDS if unexplained is not None and unexplained <= share), PRIOR_WEIGHT)
    return Blend(weight, {}, 0, unexplained)
