"""Conv-GLA: depthwise Conv1D along the rows, then gated linear attention (paper section 4.3.2).

    u~ = Conv1D(u, K)                         depthwise, a low-pass filter along the rows
    k, v, g, q = W_k u~, W_v u~, SiLU(W_g u~), W_q u~
    S = sum_i phi(k_i) (g_i * v_i)^T           memory, per head (fp32)
    s = sum_i phi(k_i)                         its normaliser
    o = phi(q)^T S / (phi(q)^T s + eps)        phi = ELU + 1

The memory sums over every context row, so the readout is the same for every row and
does not depend on the row order. Query rows read S and s but never add to them; their
convolution sees only their own row (the other taps meet zero padding), so a query's
output does not depend on the other query rows either.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import ModelConfig
from .linear import Linear

EPS = 1e-6


def phi(x: Tensor) -> Tensor:
    """Positive feature map for the keys and queries."""
    return F.elu(x.float()) + 1.0


class ConvGLA(nn.Module):
    """Conv-GLA sample-axis mixer. Input and output: (b, N, d) for b column sequences."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.heads, self.head_dim = cfg.gla_heads, d // cfg.gla_heads
        self.conv = nn.Conv1d(d, d, cfg.conv_kernel, padding=cfg.conv_kernel // 2, groups=d)
        self.proj = Linear(d, 4 * d)            # W_q, W_k, W_v, W_g
        self.out_norm = nn.LayerNorm(self.head_dim)
        self.out = Linear(d, d)

    def _heads(self, t: Tensor) -> Tensor:
        return t.view(*t.shape[:-1], self.heads, self.head_dim)

    def _qkv(self, u_conv: Tensor):
        q, k, v, g = self.proj(u_conv).chunk(4, -1)
        return self._heads(q), self._heads(k), self._heads(F.silu(g) * v)

    def _read(self, q: Tensor, S: Tensor, s: Tensor) -> Tensor:
        fq = phi(q)                                                        # (b, M, H, e)
        num = torch.einsum("bmhe,bhef->bmhf", fq, S)
        den = torch.einsum("bmhe,bhe->bmh", fq, s).unsqueeze(-1) + EPS
        o = self.out_norm((num / den).to(q.dtype))
        return self.out(o.flatten(-2))

    def memory(self, k: Tensor, gv: Tensor, row_chunk: int = 65536) -> tuple[Tensor, Tensor]:
        """S and s accumulated in fp32 over row chunks."""
        b, N, H, e = k.shape
        S = torch.zeros(b, H, e, e, dtype=torch.float32, device=k.device)
        s = torch.zeros(b, H, e, dtype=torch.float32, device=k.device)
        for i in range(0, N, row_chunk):
            fk = phi(k[:, i:i + row_chunk])
            S = S + torch.einsum("bnhe,bnhf->bhef", fk, gv[:, i:i + row_chunk].float())
            s = s + fk.sum(1)
        return S, s

    def context(self, u: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Every context row writes to the memory and reads all of it."""
        u_conv = self.conv(u.transpose(1, 2)).transpose(1, 2)
        q, k, gv = self._qkv(u_conv)
        S, s = self.memory(k, gv)
        return self._read(q, S, s), (S, s)

    def query(self, u: Tensor, state: tuple[Tensor, Tensor]) -> Tensor:
        """Query rows only read the memory; their conv sees their own row alone."""
        centre = self.conv.weight[:, 0, self.conv.kernel_size[0] // 2]
        q, _, _ = self._qkv(u * centre + self.conv.bias)
        return self._read(q, *state)
