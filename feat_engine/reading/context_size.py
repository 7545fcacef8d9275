"""How a context is read, chosen on the context itself (`local_context="auto"`): each candidate in CANDIDATES (local
parts of 512 or 1,024 rows, or the whole context up to WHOLE_ROWS context rows) is scored by one-member fits on some
context rows that predict the held-out rest (FOLDS folds up to FOLD_ROWS rows, one set of HOLDOUT rows beyond). The
default reading stays unless another lowers the mean held-out loss by more than Z paired standard errors
(docs/decisions/0016-reading-chosen-per-table.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

from .local_parts import rows_per_run

CANDIDATES: tuple[int | None, ...] = (512, 1024, None)   # rows per local part; None = the whole context
Z = 2.0             # paired standard errors by which a reading must beat the default
FOLDS = 5
FOLD_ROWS = 4096    # contexts up to this many rows are cross-fitted over all their rows
HOLDOUT = 2048      # longer ones are scored on this many held-out rows
WHOLE_ROWS = 50_000  # the whole context is a candidate up to this many context rows

# (rows per part or None, fit rows, held-out rows) -> per-held-out-row loss of a one-member fit
HeldOutLoss = Callable[[int | None, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class ReadingChoice:
    """The chosen reading and the evidence: each distinct candidate's mean held-out loss and its
    paired z-score of improvement over the default (positive = better than the default)."""

    size: int | None
    loss: dict[int | None, float]
    z: dict[int | None, float]
    rows: int                  # held-out rows scored

    def describe(self) -> str:
        """One phrase for the estimator's reading sentence."""
        name = {s: "whole context" if s is None else f"parts of {s:,}" for s in self.loss}
        scores = ", ".join(f"{name[s]} {self.loss[s]:.4f}" for s in self.loss)
        return f"chosen on {self.rows:,} held-out context rows (mean loss: {scores})"


def choose_local_context(n: int, held_out_loss: HeldOutLoss, default: int | None, y: np.ndarray | None = None,
                         seed: int | None = 0, n_context: int | None = None) -> ReadingChoice:
    """The reading for a table of n labelled rows whose members read n_context of them (default all):
    the candidate whose held-out loss improves most on the default's, if by more than Z paired standard
    errors, else the default. y (class labels) stratifies the folds."""
    n_context = n if n_context is None else n_context
    reading = {s: s if rows_per_run(n_context, s) < n_context else None for s in (*CANDIDATES, default)}
    distinct = list(dict.fromkeys(reading[s] for s in CANDIDATES if s is not None or n_context <= WHOLE_ROWS))
    base = reading[default]
    if base not in distinct:
        distinct.append(base)
    if len(distinct) == 1:
        return ReadingChoice(base, {base: float("nan")}, {base: 0.0}, 0)
    folds = _folds(n, y, seed)
    held = np.concatenate([va for _, va in folds])
    loss = {s: np.empty(len(held)) for s in distinct}
    at = 0
    for tr, va in folds:
        for s in distinct:
            size = None if s is None else max(1, round(s * len(tr) / n))
            loss[s][at:at + len(va)] = held_out_loss(size, tr, va)
        at += len(va)
    z = {s: _paired_z(loss[base] - loss[s]) for s in distinct}
    better = [s for s in distinct if z[s] > Z]
    size = max(better, key=lambda s: loss[base].mean() - loss[s].mean()) if better else base
    return ReadingChoice(size, {s: float(v.mean()) for s, v in loss.items()}, z, len(held))


def _paired_z(d: np.ndarray) -> float:
    """Mean of the paired differences over its standard error (0 when they are all equal)."""
    se = d.std() / np.sqrt(len(d))
    return float(d.mean() / se) if se > 0 else 0.0


def _folds(n: int, y: np.ndarray | None, seed: int | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, held-out rows) pairs: 5 folds over all n rows, or one held-out set of HOLDOUT rows;
    stratified by y when every class has enough rows."""
    stratify = y is not None and np.unique(y, return_counts=True)[1].min() >= FOLDS
    if n <= FOLD_ROWS:
        splitter = StratifiedKFold if stratify else KFold
        return [(tr, va) for tr, va in splitter(FOLDS, shuffle=True, random_state=seed).split(np.zeros(n), y)]
    tr, va = train_test_split(np.arange(n), test_size=HOLDOUT, random_state=seed, stratify=y if stratify else None)
    return [(np.sort(tr), np.sort(va))]
