"""The Mamba-2 state-space duality (SSD) scan in pure PyTorch.

One direction of the recurrence, per head h, with scalar decay a_t = exp(log_a_t):

    H_t = a_t * H_{t-1} + x_t B_t^T        (H_t: P x N state)
    y_t = H_t C_t

`ssd_scan` evaluates it chunk by chunk (chunk length Q): inside a chunk with the
quadratic "attention" form, across the chunks of a segment (at most 64) with the same
form one level up, and across segments in a loop. Time and memory are O(L): nothing
of size L x L, or (L/Q) x (L/Q), is ever built.
Cumulative sums, exponentials and the carried states are kept in fp32, also
under bf16 autocast; only the chunk-local matmuls may run in bf16.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def _chunk(x: Tensor, q: int) -> Tensor:
    """(b, L, ...) -> (b, L/q, q, ...)."""
    return x.reshape(x.shape[0], x.shape[1] // q, q, *x.shape[2:])


def _decay(cum: Tensor) -> Tensor:
    """(..., T) cumulative log decays -> (..., T, T) with [i, j] = exp(cum_i - cum_j) for j <= i, else 0."""
    t = cum.shape[-1]
    causal = torch.ones(t, t, dtype=torch.bool, device=cum.device).tril()
    return torch.exp((cum[..., :, None] - cum[..., None, :]).masked_fill(~causal, float("-inf")))


def _ssd_segment(x: Tensor, log_a: Tensor, B: Tensor, C: Tensor, q: int, state: Tensor) -> tuple[Tensor, Tensor]:
    """SSD over one segment whose length is a multiple of q, starting from `state` (b, h, p, n) fp32."""
    xc = _chunk(x, q).permute(0, 3, 1, 2, 4)                 # (b, h, c, q, p)
    a_cum = torch.cumsum(_chunk(log_a.float(), q).permute(0, 3, 1, 2), dim=-1)   # (b, h, c, q) fp32
    Bc, Cc = _chunk(B, q), _chunk(C, q)                      # (b, c, q, n)

    # 1. within a chunk: y_i = sum_{j<=i} exp(a_cum_i - a_cum_j) (C_i . B_j) x_j
    CB = Cc @ Bc.transpose(-1, -2)                            # (b, c, q, q)
    y = (_decay(a_cum) * CB.unsqueeze(1)).to(xc.dtype) @ xc   # (b, h, c, q, p)

    # 2. the state each chunk adds: sum_j exp(a_cum_last - a_cum_j) x_j B_j^T
    to_end = torch.exp(a_cum[..., -1:] - a_cum)               # (b, h, c, q)
    added = ((xc * to_end.unsqueeze(-1).to(xc.dtype)).transpose(-1, -2) @ Bc.unsqueeze(1)).float()  # (b, h, c, p, n)

    # 3. pass states across the segment's c chunks at once: with S_0 = `state`, S_i = added_{i-1},
    #    H_in_i = sum_{k<=i} exp(A_i - A_k) S_k, A = cumulative chunk log decays (a (c+1) x (c+1) matrix)
    A = torch.cumsum(F.pad(a_cum[..., -1], (1, 0)), dim=-1)   # (b, h, c+1), 0 for the entering state
    passing = _decay(A)                                       # (b, h, c+1, c+1)
    S = torch.cat([state.unsqueeze(2), added], dim=2)         # (b, h, c+1, p, n)
    with torch.autocast(x.device.type, enabled=False):       # states stay fp32 under autocast
        H = (passing @ S.flatten(-2)).view_as(S)              # H_i: the state after chunk i-1
    h_in, state = H[:, :, :-1], H[:, :, -1]                   # (b, h, c, p, n) fp32; final state

    # 4. what the entering state contributes: exp(a_cum_i) C_i H_in
    from_start = torch.exp(a_cum).unsqueeze(-1)               # (b, h, c, q, 1)
    y_off = (Cc.unsqueeze(1).float() @ h_in.transpose(-1, -2)) * from_start   # (b, h, c, q, p)
    y = y.float() + y_off
    return y.permute(0, 2, 3, 1, 4).reshape(x.shape[0], -1, x.shape[2], x.shape[3]), state


def ssd_scan(
    x: Tensor,
    log_a: Tensor,
    B: Tensor,
    C: Tensor,
    chunk_size: int = 64,
    initial_state: Tensor | None = None,
    segment_chunks: int = 64,
) -> tuple[Tensor, Tensor]:
    """Chunked SSD scan.

    Args:
        x: (b, L, h, p) inputs (already scaled by dt).
        log_a: (b, L, h) log decays (dt * A, <= 0).
        B, C: (b, L, n) input and output projections, shared by the heads.
        chunk_size: Q; L need not be a multiple of it (zero padding, decay 1).
        initial_state: (b, h, p, n) or None for zeros.
        segment_chunks: chunks per segment; segments are scanned one after the
            other so that the (q x q) chunk tensors stay bounded for any L.

    Returns:
        y: (b, L, h, p) fp32 outputs and the final state (b, h, p, n) fp32.
    """
    b, L, h, p = x.shape
    n = B.shape[-1]
    q = max(1, min(chunk_size, L))
    pad = (-L) % q
    if pad:
        x, B, C = (F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) for t in (x, B, C))
        log_a = F.pad(log_a, (0, 0, 0, pad))
    state = (torch.zeros(b, h, p, n, device=x.device, dtype=torch.float32)
             if initial_state is None else initial_state.float())
    seg = q * segment_chunks
    ys = []
    for s in range(0, L + pad, seg):
        y, state = _ssd_segment(x[:, s:s + seg], log_a[:, s:s + seg], B[:, s:s + seg], C[:, s:s + seg], q, state)
        ys.append(y)
    return torch.cat(ys, dim=1)[:, :L], state

