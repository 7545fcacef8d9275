"""A same-size FEAT whose sample axis is full softmax attention, for the scaling contrast.

Everything but the sample-axis mixer is FEAT's own (cell and label embeddings, feature-axis
MHSA+FFN, heads, the streamed runner). The mixer of every block is replaced by multi-head
softmax attention along the rows of each column:

* context rows attend to all context rows (bidirectional, N_ctx x N_ctx per column);
* query rows attend to the context rows only (their keys/values are cached as the "state"),
  the same read-only query semantics FEAT uses, so `feat_engine.inference.run` drives it unchanged.

Attention goes through `F.scaled_dot_product_attention`, which on CPU uses a flash-style
kernel: memory stays O(N) per column (the K/V cache), time grows as O(N^2). This is the
best case for full attention; an explicit softmax would also need O(N^2) memory.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from feat_engine.config import ModelConfig
from feat_engine.model import FEAT
from feat_engine.model.linear import Linear


class RowAttention(nn.Module):
    """Softmax attention along the rows. Input and output: (b, N, d) for b column sequences."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.heads, self.head_dim = cfg.attn_heads, d // cfg.attn_heads
        self.qkv = Linear(d, 3 * d)           # FEAT's own linear layers (oneDNN's fp32 products on a CPU)
        self.out = Linear(d, d)

    def _split(self, t: Tensor) -> Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.heads, self.head_dim).transpose(1, 2)       # (b, H, n, e)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        a = F.scaled_dot_product_attention(self._split(q), self._split(k), self._split(v))
        return self.out(a.transpose(1, 2).flatten(-2))

    def context(self, u: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Context rows attend to every context row; K and V are kept for the queries."""
        q, k, v = self.qkv(u).chunk(3, -1)
        return self._attend(q, k, v), (k.contiguous(), v.contiguous())

    def query(self, u: Tensor, state: tuple[Tensor, Tensor]) -> Tensor:
        """Query rows attend to the cached context K/V only (never to each other)."""
        k, v = state
        q = self.qkv(u).chunk(3, -1)[0]
        return self._attend(q, k, v)


def attention_feat(cfg: ModelConfig = ModelConfig()) -> FEAT:
    """FEAT with every sample-axis mixer replaced by `RowAttention` (same width, same depth)."""
    model = FEAT(cfg)
    for blk in model.blocks:
        blk.mixer = RowAttention(cfg)
    return model
