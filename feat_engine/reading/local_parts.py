"""Local contexts: a long context split into overlapping parts of `size` rows, the size the model reads well. At fit,
k-means (`MiniBatchKMeans`) places one centre per `size` / overlap context rows in the relevance-weighted standardised
space, and each part is the `size` context rows nearest its centre; past GROUP parts this is done within coarse
k-means groups, so that the fit stays O(N). At predict a query reads the part whose centre is nearest to it, a choice
that depends on that query alone (docs/decisions/0015-local-parts.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

OVERLAP = 2.0   # parts per `size` context rows: how many parts read a typical row
GROUP = 64      # parts per coarse group when the context needs more than this many


@dataclass
class LocalContexts:
    """One member's partition of its context rows."""

    weights: np.ndarray        # (D,) per-feature scale of the distance
    centres: NearestNeighbors  # fitted on the K centres, in the weighted space
    parts: np.ndarray          # (K, size) context row indices (positions in the member's context)

    def space(self, x: np.ndarray) -> np.ndarray:
        """Standardised rows -> the weighted space of the distances (NaN at the mean, 0)."""
        return np.nan_to_num(np.asarray(x, dtype=np.float32), nan=0.0) * self.weights

    def route(self, x_query: np.ndarray) -> np.ndarray:
        """(M,) the part each query row reads: the one whose centre is nearest to it."""
        return self.centres.kneighbors(self.space(x_query), n_neighbors=1, return_distance=False)[:, 0]


def rows_per_run(n_context: int, size: int | None) -> int:
    """Context rows one engine run reads: `size` when a context of n_context rows is split into
    local parts of that size (it holds at least twice as many), else all of them."""
    return n_context if size is None or n_context < 2 * size else size


def local_contexts(x: np.ndarray, size: int, weights: np.ndarray | None, seed: int,
                   overlap: float = OVERLAP) -> LocalContexts | None:
    """Cover the (N, D) standardised context with about overlap * N / size parts of `size`
    rows; None when N < 2 * size (the whole context is then read)."""
    if rows_per_run(len(x), size) == len(x):
        return None
    n_parts = max(2, round(overlap * len(x) / size))
    w = np.ones(x.shape[1], np.float32) if weights is None else np.asarray(weights, np.float32)
    w = w / w.max() if w.max() > 0 else np.ones_like(w)
    lc = LocalContexts(w, NearestNeighbors(n_neighbors=1), np.empty((0, size), np.int64))
    z = lc.space(x)
    rows = np.arange(len(z))
    with threadpool_limits(1):     # small steps whose OpenMP threads would spin for cores another process holds
        groups = ([(rows, rows, n_parts)] if n_parts <= GROUP
                  else _groups(z, math.ceil(n_parts / GROUP), size, overlap, seed))
        centres, parts = [], []
        for primary, candidates, k in groups:
            km = MiniBatchKMeans(k, random_state=seed, batch_size=4096, n_init=1, compute_labels=False).fit(z[primary])
            near = NearestNeighbors(n_neighbors=size, algorithm="brute").fit(z[candidates])
            centres.append(km.cluster_centers_)
            parts.append(candidates[near.kneighbors(km.cluster_centers_, return_distance=False)])
    lc.centres.fit(np.concatenate(centres))
    lc.parts = np.concatenate(parts)
    return lc


def _groups(z: np.ndarray, n_groups: int, size: int, overlap: float,
            seed: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Coarse k-means groups as (primary rows, candidate rows, parts): a group's primary rows
    are those nearest its centre, its candidates those for which it is the nearest or the
    second-nearest (at least the `size` rows nearest its centre), and it gets parts in
    proportion to its primary rows."""
    km = MiniBatchKMeans(n_groups, random_state=seed, batch_size=4096, n_init=1, compute_labels=False).fit(z)
    near = NearestNeighbors(n_neighbors=2).fit(km.cluster_centers_).kneighbors(z, return_distance=False)
    primary = _by_group(near[:, 0], np.arange(len(z)), n_groups)
    candidates = _by_group(near.ravel(), np.repeat(np.arange(len(z)), 2), n_groups)
    out = []
    for g in range(n_groups):
        if len(primary[g]) == 0:
            continue
        cand = candidates[g]
        if len(cand) < size:
            cand = np.argpartition(((z - km.cluster_centers_[g]) ** 2).sum(1), size - 1)[:size]
        k = min(len(primary[g]), max(1, round(overlap * len(primary[g]) / size)))
        out.append((primary[g], np.sort(cand), k))
    return out


def _by_group(group: np.ndarray, rows: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """rows split by their group label (one array per group 0..n_groups-1)."""
    order = np.argsort(group, kind="stable")
    return np.split(rows[order], np.searchsorted(group[order], np.arange(1, n_groups)))
