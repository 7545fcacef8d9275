"""Local contexts: a long context split into overlapping parts the size the model reads well
(docs/design.md, "Local contexts").

At fit, k-means (scikit-learn's `MiniBatchKMeans`) places one centre per `size` context
rows, in the standardised feature space weighted by each feature's relevance; each part is
the `size` context rows nearest its centre (`NearestNeighbors`), so neighbouring parts
overlap. At predict, a query reads the part whose centre is nearest to it: the choice
depends on that query alone. Every step is linear in the context rows for a fixed `size`,
except the centre-to-row distances (K x N with K = N / size), which are one batched
matrix product.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from sklearn.neighbors import NearestNeighbors

OVERLAP = 2.0   # parts per `size` context rows: how many parts read a typical row


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


def local_contexts(x: np.ndarray, size: int, weights: np.ndarray | None, seed: int,
                   overlap: float = OVERLAP) -> LocalContexts | None:
    """Cover the (N, D) standardised context with overlap * N / size parts of `size` rows;
    None when N < 2 * size (the whole context is then read)."""
    if len(x) < 2 * size:
        return None
    n_parts = max(2, round(overlap * len(x) / size))
    w = np.ones(x.shape[1], np.float32) if weights is None else np.asarray(weights, np.float32)
    w = w / w.max() if w.max() > 0 else np.ones_like(w)
    lc = LocalContexts(w, NearestNeighbors(n_neighbors=1), np.empty((0, size), np.int64))
    z = lc.space(x)
    km = MiniBatchKMeans(n_parts, random_state=seed, batch_size=4096, n_init=1).fit(z)
    lc.centres.fit(km.cluster_centers_)
    rows = NearestNeighbors(n_neighbors=size, algorithm="brute").fit(z)
    lc.parts = rows.kneighbors(km.cluster_centers_, return_distance=False)
    return lc
