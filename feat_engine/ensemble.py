"""Shared machinery of the estimators and the relation matrix: the model cache, ensemble
members (row permutation or subset, feature shuffle or subset, S-DFE seed) and progress.

See docs/design.md, "Ensembling" and "More features than the model was trained on".
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from torch import Tensor

from .checkpoint import DEFAULT_CHECKPOINT, load_checkpoint
from .config import PriorConfig
from .local_context import LocalContexts
from .model import FEAT
from .preprocess import FEATInputError

Progress = Callable[[int, int, str], None]

_CACHE: dict[tuple, tuple[FEAT, dict[str, Any]]] = {}
_LOCK = threading.Lock()


def load_model_and_meta(path: str | os.PathLike | None = None) -> tuple[FEAT, dict[str, Any]]:
    """Load a checkpoint once per (path, mtime, size) and keep it in a module-level cache.

    The key includes the file's mtime and size, so a checkpoint replaced on disk is reloaded.
    """
    p = Path(DEFAULT_CHECKPOINT if path is None else path).resolve()
    st = p.stat() if p.is_file() else None
    key = (str(p), st.st_mtime_ns if st else None, st.st_size if st else None)
    with _LOCK:
        if key not in _CACHE:
            for old in [k for k in _CACHE if k[0] == key[0]]:
                del _CACHE[old]
            _CACHE[key] = load_checkpoint(p)       # raises CheckpointError naming the file
        return _CACHE[key]


def load_model(path: str | os.PathLike | None = None) -> FEAT:
    """The FEAT model of a checkpoint (default: the shipped assets/feat-small.pt), cached."""
    return load_model_and_meta(path)[0]


def resolve_model(checkpoint: str | os.PathLike | FEAT | None) -> tuple[FEAT, dict[str, Any]]:
    """An estimator's `checkpoint` parameter (path, loaded model or None) -> (model, meta)."""
    if isinstance(checkpoint, FEAT):
        return checkpoint.eval(), {}
    return load_model_and_meta(checkpoint)


def trained_max_features(meta: dict[str, Any]) -> int:
    """Widest table the checkpoint was pretrained on (its prior config, else the default prior)."""
    prior = meta.get("prior") or meta.get("config", {}).get("prior") or {}
    return int(prior.get("max_features", PriorConfig().max_features))


@dataclass
class Member:
    """One ensemble member: which context rows in which order, which features in which order."""

    seed: int                  # S-DFE draw and any member-level randomness
    rows: np.ndarray           # context row indices, in scan order (a permutation, or a subset)
    features: np.ndarray       # feature indices, in token order (a shuffle, or a subset)
    index: int = 0             # position in the ensemble (the classifier's label rotation)
    local: LocalContexts | None = None   # the member's local contexts (positions in `rows`), if any

    def column_ids(self, model: FEAT, width: int | None = None) -> Tensor:
        """The member's S-DFE column identities for `width` columns (default: its features)."""
        return model.column_ids(1, width or len(self.features), seed=self.seed)


def plan_members(
    n_rows: int, n_features: int, n_estimators: int, max_features: int,
    max_context: int | None, random_state: int | None, relevance: np.ndarray | None = None,
) -> list[Member]:
    """Draw the ensemble. With more features than `max_features` and a `relevance` score per
    feature, every member takes the TOP_SHARE most relevant features and fills its width with
    others drawn with probability proportional to their relevance (`ranked_features`).
    Without scores, members are grouped in rounds of ceil(D / max_features): each round splits
    a fresh feature permutation into parts, and each member takes one part topped up with
    random other features, so there are max(n_estimators, ceil(D / max_features)) members and
    every feature is seen at least once."""
    if n_estimators < 1:
        raise FEATInputError(f"n_estimators must be >= 1, got {n_estimators}")
    if max_context is not None and max_context < 1:
        raise FEATInputError(f"max_context must be >= 1 or None, got {max_context}")
    rng = np.random.default_rng(random_state)
    width = min(n_features, max_features)
    ranked = relevance is not None and n_features > width
    per_round = 1 if ranked else math.ceil(n_features / width)
    n_members = max(n_estimators, per_round)
    n_ctx = n_rows if max_context is None else min(n_rows, max_context)
    members, parts = [], []
    for i in range(n_members):
        if ranked:
            feats = rng.permutation(ranked_features(relevance, width, rng))
        else:
            if not parts:
                parts = list(np.array_split(rng.permutation(n_features), per_round))
            part = parts.pop(0)
            rest = np.setdiff1d(np.arange(n_features), part)
            feats = rng.permutation(np.concatenate([part, rng.choice(rest, width - len(part), replace=False)]))
        rows = rng.permutation(n_rows)[:n_ctx]
        members.append(Member(int(rng.integers(2**31 - 1)), rows, feats, i))
    return members


TOP_SHARE = 0.5     # share of a member's width given to the most relevant features


def ranked_features(relevance: np.ndarray, width: int, rng: np.random.Generator) -> np.ndarray:
    """`width` feature indices: the round(TOP_SHARE * width) most relevant, then others drawn
    without replacement with probability proportional to relevance (plus a floor of 1% of the
    mean, so that a feature scored 0 can still be drawn)."""
    order = np.argsort(-np.asarray(relevance), kind="stable")
    n_top = int(round(TOP_SHARE * width))
    top, rest = order[:n_top], order[n_top:]
    p = np.maximum(np.asarray(relevance, np.float64)[rest], 0) + 0.01 * max(float(np.mean(relevance)), 1e-12)
    return np.concatenate([top, rng.choice(rest, width - n_top, replace=False, p=p / p.sum())])


class StepCounter:
    """Turns the runner's per-run progress into one (done, total, message) stream over all runs. Runs may
    report from worker threads (`inference.map_runs`): their latest report waits for `flush`, which the
    thread that made the counter calls, and the stream never moves back."""

    def __init__(self, progress: Progress | None, n_runs: int):
        self.progress, self.n_runs, self.run = progress, n_runs, 0
        self._owner, self._lock, self._shown, self._pending = threading.get_ident(), threading.Lock(), -1, None

    def callback(self, label: str) -> Progress | None:
        """Progress callback for the next run (None when nobody listens)."""
        if self.progress is None:
            return None
        with self._lock:
            i, self.run = self.run, self.run + 1

        def cb(done: int, total: int, msg: str) -> None:
            with self._lock:
                if i * total + done < self._shown:
                    return
                self._shown = i * total + done
                self._pending = (self._shown, self.n_runs * total, f"{label}: {msg}")
            if threading.get_ident() == self._owner:
                self.flush()
        return cb

    def flush(self) -> None:
        """Hand the latest report to `progress`; only on the counter's own thread (elsewhere it does nothing)."""
        if threading.get_ident() != self._owner:
            return
        with self._lock:
            report, self._pending = self._pending, None
        if report is not None and self.progress is not None:
            self.progress(*report)
