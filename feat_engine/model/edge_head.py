"""The edge head: how likely two columns are directly linked, read from FEAT's column tokens at a few depths
and the pair's classical statistics (`relations.correlations.pair_statistics`), as a symmetric logit per pair.
Trained on the prior's causal graphs with the backbone frozen (`feat_engine.train.edges`;
docs/decisions/0033-edge-head.md).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .linear import Linear

DEPTHS = (0, 2, 4)          # token depths read: 0 = the cell embedding, b = after block b
N_STATS = 5                 # classical statistics per pair (relations.correlations.pair_statistics)


class EdgeHead(nn.Module):
    """Column tokens at `DEPTHS` and pair statistics -> (D, D) symmetric logits of a direct link (diagonal
    meaningless).

    For each depth in `DEPTHS` (the cell embedding, after block 2, after block 4) every column token goes
    through a small MLP into k features; standardised over the rows, their cross-correlation between
    columns i and j,

        S_ij = (1/N) sum_n phi(h_ni)^T phi(h_nj)    (k x k per depth: a learnt kernel dependence statistic),

    is the tokens' evidence on the pair. Beside it the head reads N_STATS classical statistics of the pair
    (mutual information, correlations, partial correlations). Each goes through its own MLP into a pair
    vector, f_ij = stats(s_ij) + gate * pair(S_ij), the gate starting at 0 so that training begins from the
    statistics and lets the tokens in as far as they help (ReZero-style). Each pair then also reads the mean
    vector of the other pairs of i and of j (what else i and j are linked to, so that an indirect link can
    score below the direct ones) and a last MLP gives g(i, j). The logit is (g(i, j) + g(j, i)) / 2.
    """

    def __init__(self, d_model: int, k: int = 16, width: int = 64):
        super().__init__()
        self.k = k
        self.tokens = nn.ModuleList(nn.Sequential(Linear(d_model, width), nn.GELU(), Linear(width, k))
                                    for _ in DEPTHS)
        self.pair = nn.Sequential(Linear(len(DEPTHS) * k * k, 2 * width), nn.GELU(),
                                  Linear(2 * width, width), nn.GELU())
        self.stats = nn.Sequential(Linear(N_STATS, 2 * width), nn.GELU(), Linear(2 * width, width), nn.GELU())
        self.gate = nn.Parameter(torch.zeros(()))       # the tokens' share starts at 0: statistics first
        self.out = nn.Sequential(Linear(3 * width, width), nn.GELU(), Linear(width, 1))

    def forward(self, tokens: list[Tensor], stats: Tensor) -> Tensor:
        """tokens: one (N, D, E) tensor per depth in `DEPTHS`; stats: (D, D, N_STATS) -> (D, D) logits."""
        n, d = tokens[0].shape[:2]
        evidence = []
        for phi, h in zip(self.tokens, tokens):
            p = phi(h)
            p = (p - p.mean(0)) / (p.std(0) + 1e-4)                         # per column and feature, over rows
            evidence.append(torch.einsum("nik,njm->ijkm", p, p).flatten(2) / n)
        f = self.stats(stats) + self.gate * self.pair(torch.cat(evidence, -1))   # (D, D, width)
        others = (~torch.eye(d, dtype=torch.bool, device=f.device)).to(f.dtype)[..., None]
        mean = (f * others).sum(1, keepdim=True) / max(d - 1, 1)            # (D, 1, width): i's other pairs
        g = self.out(torch.cat([f, mean.expand(-1, d, -1), mean.transpose(0, 1).expand(d, -1, -1)], -1))
        g = g.squeeze(-1)
        return (g + g.T) / 2
