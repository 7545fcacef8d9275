"""AFBM: bidirectional Mamba-2 along the rows of each column, fused by W_fuse (paper Eq. W_fuse).

Each column is one sequence of rows. With the Mamba-2 operator M (lower triangular,
M[i, k] = (C_i . B_k) dt_k exp(sum_{k<j<=i} dt_j A)), the two streams are

    forward  y_f = M x + D x          (rows k <= i, the diagonal and the skip once)
    backward y_b = strict_upper(M') x (rows k > i: the reversed scan minus its diagonal)

so that the diagonal is counted once, and the fused output is
W_fuse [RMSNorm(y_f * SiLU(z)) || RMSNorm(y_b * SiLU(z))].

The scan runs over the context rows only. A query row reads the final forward state as if it
came right after the last context row, and the final backward state as if it came right before
the first: it never writes to any state, so its output does not depend on the other query rows
(docs/decisions/0001-query-rows-only-read.md and docs/decisions/0002-row-mixers.md).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import ModelConfig
from . import cpu_scan
from .kernels import selective_scan
from .linear import Linear, linear

# sequences longer than LONG chunks are scanned with chunks twice as long: the same result, and faster
# on long sequences (docs/decisions/0003-ssd-scan.md)
LONG = 8


def _init_decay(heads: int, slow: int) -> tuple[Tensor, Tensor]:
    """Initial step dt and rate |A| per head. A state decays by e over 1 / (dt |A|) rows.
    Mamba-2's ranges (dt log-uniform on [1e-3, 0.1], |A| on [1, 16]: 0.6 to 1,000 rows) for
    the first heads; the last `slow` heads start slow (dt on [1e-4, 1e-3], |A| on [1, 2]:
    500 to 10,000 rows), so that a long context reaches the queries through the scan."""
    fast = heads - slow
    log_dt = torch.cat([torch.empty(fast).uniform_(math.log(1e-3), math.log(0.1)),
                        torch.empty(slow).uniform_(math.log(1e-4), math.log(1e-3))])
    A = torch.cat([torch.empty(fast).uniform_(1, 16), torch.empty(slow).uniform_(1, 2)])
    return torch.exp(log_dt), A


def _dt_bias(dt: Tensor) -> Tensor:
    """softplus^-1(dt): the bias that gives step dt at zero input."""
    return dt + torch.log(-torch.expm1(-dt))


class AFBM(nn.Module):
    """Bidirectional Mamba-2 sample-axis mixer. Input and output: (b, N, d) for b column sequences."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, h, n = cfg.d_model, cfg.ssm_heads, cfg.d_state
        self.d_inner = round(cfg.expand * d)
        self.heads, self.head_dim, self.d_state = h, self.d_inner // h, n
        self.chunk_size = cfg.chunk_size
        self.in_proj = Linear(d, 2 * self.d_inner + 2 * n + h)     # z, x, B, C, dt
        dt, A = _init_decay(h, round(cfg.slow_heads * h))
        self.dt_bias = nn.Parameter(_dt_bias(dt))
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(h))
        self.norm = nn.RMSNorm(2 * self.d_inner)
        self.fuse = Linear(2 * self.d_inner, d)                        # W_fuse

    def horizons(self) -> Tensor:
        """Rows over which each head's state decays by e at zero input: 1 / (softplus(dt_bias) |A|)."""
        return 1 / (F.softplus(self.dt_bias.float()) * torch.exp(self.A_log.float()))

    @torch.no_grad()
    def slow_down(self, share: float) -> None:
        """Give the `share` of heads with the longest horizons the slow initial decay of
        `_init_decay` (for weights trained before slow heads existed); the others are kept."""
        slow = round(share * self.heads)
        if slow:
            dt, A = _init_decay(slow, slow)
            idx = self.horizons().argsort(descending=True)[:slow]
            self.dt_bias[idx] = _dt_bias(dt).to(self.dt_bias.dtype)
            self.A_log[idx] = torch.log(A).to(self.A_log.dtype)

    def _project(self, u: Tensor):
        z, x, B, C, dt = self.in_proj(u).split([self.d_inner, self.d_inner, self.d_state, self.d_state, self.heads], -1)
        x = F.silu(x).view(*x.shape[:-1], self.heads, self.head_dim)
        dt = F.softplus(dt.float() + self.dt_bias)
        return z, x, B, C, dt

    def _fuse(self, z: Tensor, y_f: Tensor, y_b: Tensor) -> Tensor:
        """W_fuse RMSNorm(y_f * SiLU(z) || y_b * SiLU(z)). The norm's per-row scale commutes with W_fuse, so
        it is applied to the d-wide output, and its weight is folded into W_fuse: the 2 d_inner-wide tensor
        is built once and read once. Checked against the fp64 oracle, which applies them in turn
        (tests/test_afbm.py)."""
        gate = F.silu(z.float()).view(*z.shape[:-1], 1, self.heads, self.head_dim)
        y = (torch.stack([y_f, y_b], -3) * gate).flatten(-3)                     # (b, N, 2 d_inner) fp32
        eps = self.norm.eps or torch.finfo(y.dtype).eps
        return self.fused(y, torch.rsqrt(torch.linalg.vector_norm(y, dim=-1, keepdim=True) ** 2 / y.shape[-1] + eps))

    def fused(self, y: Tensor, scale: Tensor) -> Tensor:
        """W_fuse (y * RMSNorm's weight) * scale + bias: y the gated streams (..., 2 d_inner), scale (..., 1)."""
        return torch.addcmul(self.fuse.bias, linear(y, self.fuse.weight * self.norm.weight), scale)

    def context(self, u: Tensor, backend: str = "auto") -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Scan the context rows both ways. Returns the output and the final (forward, backward) states.
        On a CPU without gradients, 'auto' runs the fused numba kernel where numba imports (`cpu_scan`);
        'numba' asks for it, 'torch' for the PyTorch path, which `selective_scan` serves otherwise."""
        if backend == "numba" or (backend == "auto" and cpu_scan.usable(u)):
            return cpu_scan.context(self, u)
        z, x, B, C, dt = self._project(u)
        A = -torch.exp(self.A_log.float())
        q = self.chunk_size if u.shape[1] <= LONG * self.chunk_size else 2 * self.chunk_size
        y_f, s_f = selective_scan(x, dt, A, B, C, q, backend=backend)
        flip = lambda t: t.flip(1)  # noqa: E731
        y_b, s_b = selective_scan(flip(x), flip(dt), A, flip(B), flip(C), q, backend=backend)
        CB = (C.float() * B.float()).sum(-1)                               # (b, N)
        # drop the backward diagonal
        y_b = torch.addcmul(flip(y_b), (CB.unsqueeze(-1) * dt).unsqueeze(-1), x, value=-1)
        y_f = torch.addcmul(y_f, self.D[:, None], x)
        return self._fuse(z, y_f, y_b), (s_f, s_b)

    def query(self, u: Tensor, state: tuple[Tensor, Tensor]) -> Tensor:
        """Query rows read the context's final states; no query writes to them."""
        s_f, s_b = state
        z, x, B, C, dt = self._project(u)
        A = -torch.exp(self.A_log.float())
        a = torch.exp(dt * A).unsqueeze(-1)                                # (b, M, h, 1)
        Cf = C.float()
        read_f = torch.einsum("bmn,bhpn->bmhp", Cf, s_f)
        read_b = torch.einsum("bmn,bhpn->bmhp", Cf, s_b)
        own = (Cf * B.float()).sum(-1)[..., None, None] * x.float() * dt.unsqueeze(-1)
        y_f = a * read_f + own + self.D[:, None] * x.float()
        y_b = a * read_b
        return self._fuse(z, y_f, y_b)
