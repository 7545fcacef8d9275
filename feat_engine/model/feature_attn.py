"""Feature-axis modelling: pre-LN MHSA + FFN over the D+1 tokens of each row (paper section 4.3.1).

    F~ = F + MHSA(LN(F))
    F^ = F~ + FFN(LN(F~))

Rows never interact here. The attention is written out, its softmax too (`softmax_last`): on rows of
a dozen tokens that runs faster on a CPU core, in fp32 and bf16, than PyTorch's fused
`scaled_dot_product_attention`, which the tests check it against (docs/decisions/0006-cpu-speed.md).
With `return_attention=True` the softmax weights are also returned as (..., heads, C, C):
entry [i, j] is how much token i (the reader) attends to token j (the source). They do not
change the output.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..config import ModelConfig
from .linear import Linear, linear


def softmax_last(s: Tensor) -> Tensor:
    """Softmax over the last axis, written out. On CPUs `torch.softmax` vectorises along that axis, which is
    a dozen tokens long here, and runs several times slower, and slower still with the backward pass included
    (docs/decisions/0006-cpu-speed.md)."""
    e = torch.exp(s - s.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


class FeatureAttention(nn.Module):
    """MHSA + FFN across the columns of each row. Input: (..., C, d)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.heads, self.inner = cfg.attn_heads, cfg.attn_dim or d
        self.norm1 = nn.LayerNorm(d)
        self.qkv = Linear(d, 3 * self.inner)
        self.proj = Linear(self.inner, d)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(Linear(d, cfg.ffn_mult * d), nn.GELU(), Linear(cfg.ffn_mult * d, d))

    def forward(self, x: Tensor, return_attention: bool = False, last_only: bool = False) -> tuple[Tensor, Tensor | None]:
        """x: (..., C, d) -> (..., C, d), or (..., 1, d) with `last_only`: the last token (the label)
        alone, reading every token's keys and values, as the full output's last token is."""
        *lead, C, d = x.shape
        e = self.inner
        hd = e // self.heads
        n = self.norm1(x)
        if last_only:   # queries of the last token only; keys and values of all
            kv = linear(n, self.qkv.weight[e:], self.qkv.bias[e:]).view(-1, C, 2, self.heads, hd).permute(2, 0, 3, 1, 4)
            # the label token's rows as one 2-D matrix: a strided (..., 1, d) slice sends F.linear to a batched
            # matmul against a copy of the weight per row
            q = linear(n[..., -1, :].reshape(-1, d), self.qkv.weight[:e], self.qkv.bias[:e]).view(-1, 1, self.heads, hd).transpose(1, 2)
            k, v = kv[0], kv[1]
            x, C = x[..., -1:, :], 1
        else:
            q, k, v = self.qkv(n).view(-1, C, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        w = softmax_last((q @ k.transpose(-1, -2)).float() * hd ** -0.5)
        a = w.to(v.dtype) @ v
        a = a.transpose(1, 2).reshape(*lead, C, e)
        x = x + self.proj(a)
        x = x + self.ffn(self.norm2(x))
        return x, (w.view(*lead, self.heads, C, w.shape[-1]) if return_attention else None)
