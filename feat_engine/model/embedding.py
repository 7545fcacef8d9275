"""Cell-level embedding (paper section 4.2) and the label token (section 4.4).

    e_ij = MLP(x_ij) if x_ij is observed, else m_mask
    loc_j = o_j W_dfe                  S-DFE: o_j rows of a random orthogonal O (D x r)
    X0_ij = LayerNorm(e_ij + loc_j)

The label token of a context row encodes its label (a class embedding or a value MLP);
for a query row, or when there is no target, it is a learned mask embedding.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..config import ModelConfig
from .linear import Linear


def sample_column_ids(n_tables: int, n_features: int, rank: int, generator: torch.Generator | None = None) -> Tensor:
    """S-DFE identities O: (n_tables, D, r), drawn on the CPU so every device sees the same draw.

    For D <= r the rows are orthonormal (QR of a Gaussian). For D > r they cannot all be
    orthogonal, so each row is an independent random unit vector (nearly orthogonal).
    """
    g = torch.randn(n_tables, rank, max(n_features, 1), generator=generator)
    if n_features <= rank:
        q, _ = torch.linalg.qr(g)                              # (T, r, D) orthonormal columns
        o = q.transpose(1, 2)
    else:
        o = torch.nn.functional.normalize(g.transpose(1, 2), dim=-1)
    return o[:, :n_features]


def _value_mlp(d: int) -> nn.Sequential:
    return nn.Sequential(Linear(1, d), nn.GELU(), Linear(d, d))


class CellEmbedding(nn.Module):
    """Feature cells -> tokens. NaN (missing or masked) cells become the mask token."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.value = _value_mlp(d)
        self.mask_token = nn.Parameter(torch.randn(d) * 0.02)
        self.dfe = Linear(cfg.dfe_rank, d, bias=False)          # W_dfe
        self.norm = nn.LayerNorm(d)

    def forward(self, x: Tensor, column_ids: Tensor) -> Tensor:
        """x: (B, N, D) with NaN for missing; column_ids: (B, D, r). Returns (B, N, D, d)."""
        missing = torch.isnan(x)
        e = self.value(torch.where(missing, 0.0, x).unsqueeze(-1))
        e = torch.where(missing.unsqueeze(-1), self.mask_token.to(e.dtype), e)
        loc = self.dfe(column_ids.to(e.dtype)).unsqueeze(1)           # (B, 1, D, d)
        return self.norm(e + loc)


class LabelEmbedding(nn.Module):
    """Label token: class embedding or value MLP for context rows, a mask embedding for the rest."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.classes = nn.Embedding(cfg.max_classes, d)
        self.value = _value_mlp(d)
        self.mask_token = nn.Parameter(torch.randn(d) * 0.02)
        self.identity = nn.Parameter(torch.randn(d) * 0.02)         # marks the token as the label
        self.norm = nn.LayerNorm(d)

    def forward(self, y: Tensor | None, task: str | None, n_rows: int, batch: int) -> Tensor:
        """y: (B, N_ctx) labels of the first rows (class index or standardised value), or None.

        Returns (B, n_rows, d): label tokens for the N_ctx labelled rows, then mask tokens.
        """
        d = self.identity.shape[0]
        mask = self.mask_token.expand(batch, n_rows, d)
        if y is None or task is None or y.shape[1] == 0:
            return self.norm(mask + self.identity)
        if task == "classification":
            lab = self.classes(y.long())
        else:
            lab = self.value(y.unsqueeze(-1).to(self.identity.dtype))
        tok = torch.cat([lab, mask[:, y.shape[1]:].to(lab.dtype)], dim=1)
        return self.norm(tok + self.identity)
