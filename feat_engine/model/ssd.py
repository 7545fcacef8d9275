"""The Mamba-2 state-space duality (SSD) scan in pure PyTorch.

One direction of the recurrence, per head h, with scalar decay a_t = exp(log_a_t):

    H_t = a_t * H_{t-1} + x_t B_t^T        (H_t: P x N state)
    y_t = H_t C_t

`ssd_scan` evaluates it chunk by chunk (chunk length Q): inside a chunk with the
quadratic "attention" form, across the chunks of a segment (16 by default) with the same
form one level up, and across segments in a loop. Time and memory are O(L): nothing
of size L x L, or (L/Q) x (L/Q), is ever built.
Cumulative sums, exponentials and the carried states are kept in fp32, also
under bf16 autocast; only the chunk-local matmuls may run in bf16.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def _decay(cum: Tensor) -> Tensor:
    """(..., T) cumulative log decays -> (..., T, T) with [i, j] = exp(cum_i - cum_j) for j <= i, else 0."""
    t = cum.shape[-1]
    causal = torch.ones(t, t, dtype=torch.bool, device=cum.device).tril()
    return torch.exp((cum[..., :, None] - cum[..., None, :]).masked_fill(~causal, float("-inf")))


def _ssd_segment(x: Tensor, log_a: Tensor, B: Tensor, C: Tensor, q: int, state: Tensor) -> tuple[Tensor, Tensor]:
    """SSD over one segment, head-major: x (b, h, T, p), log_a (b, h, T), B and C (b, T, n), T a multiple
    of q, starting from `state` (b, h, p, n) fp32. Returns y (b, h, T, p) fp32 and the final state."""
    b, h, T, p = x.shape
    c = T // q
    xc = x.reshape(b, h, c, q, p)                             # a view when x is contiguous
    a_cum = torch.cumsum(log_a.float().reshape(b, h, c, q), dim=-1)               # (b, h, c, q) fp32
    Bc, Cc = (t.reshape(b, 1, c, q, t.shape[-1]) for t in (B, C))                 # (b, 1, c, q, n)

    # 1. the state each chunk adds: sum_j exp(a_cum_last - a_cum_j) x_j B_j^T (the decay scales B, the smaller)
    to_end = torch.exp(a_cum[..., -1:] - a_cum).unsqueeze(-1)          # (b, h, c, q, 1)
    added = (xc.transpose(-1, -2) @ (Bc * to_end).to(xc.dtype)).float()  # (b, h, c, p, n)

    # 2. pass states across the segment's c chunks at once: with S_0 = `state`, S_i = added_{i-1},
    #    H_in_i = sum_{k<=i} exp(A_i - A_k) S_k, A = cumulative chunk log decays (a (c+1) x (c+1) matrix)
    A = torch.cumsum(F.pad(a_cum[..., -1], (1, 0)), dim=-1)   # (b, h, c+1), 0 for the entering state
    S = torch.cat([state.unsqueeze(2), added], dim=2)         # (b, h, c+1, p, n)
    with torch.autocast(x.device.type, enabled=False):       # states stay fp32 under autocast
        H = (_decay(A) @ S.flatten(-2)).view_as(S)            # H_i: the state after chunk i-1
    h_in, state = H[:, :, :-1], H[:, :, -1]                   # (b, h, c, p, n) fp32; final state

    # 3. y_i = sum_{j<=i} exp(a_cum_i - a_cum_j) (C_i . B_j) x_j   (within the chunk)
    #        + exp(a_cum_i) C_i H_in                                (the entering state)
    #    as one batched product-and-add over the b * h * c chunks
    within = (_decay(a_cum) * (Cc @ Bc.transpose(-1, -2))).to(xc.dtype)                 # (b, h, c, q, q)
    entering = ((Cc * torch.exp(a_cum).unsqueeze(-1)) @ h_in.transpose(-1, -2)).float()  # (b, h, c, q, p)
    y = torch.baddbmm(entering.flatten(0, 2), within.flatten(0, 2), xc.flatten(0, 2).to(within.dtype))
    return y.float().view(b, h, T, p), state


def ssd_scan(
    x: Tensor,
    log_a: Tensor,
    B: Tensor,
    C: Tensor,
    chunk_size: int = 64,
    initial_state: Tensor | None = None,
    segment_chunks: int = 16,
) -> tuple[Tensor, Tensor]:
    """Chunked SSD scan.

    Args:
        x: (b, L, h, p) inputs (already scaled by dt). The scan works head-major: when x is a
            (b, L, h, p) view of (b, h, L, p) memory (`head_major`), it reads x without a copy.
        log_a: (b, L, h) log decays (dt * A, <= 0).
        B, C: (b, L, n) input and output projections, shared by the heads.
        chunk_size: Q; L need not be a multiple of it (zero padding, decay 1).
        initial_state: (b, h, p, n) or None for zeros.
        segment_chunks: chunks per segment; segments are scanned one after the
            other so that the (q x q) chunk tensors stay bounded for any L. Segments of
            256-512 rows keep them in cache, which longer segments spill out of
            (docs/decisions/0003-ssd-scan.md).

    Returns:
        y: (b, L, h, p) fp32 outputs, a view of (b, h, L, p) memory, and the final state (b, h, p, n) fp32.
    """
    b, L, h, p = x.shape
    n = B.shape[-1]
    q = max(1, min(chunk_size, L))
    pad = (-L) % q
    xh, log_a = x.transpose(1, 2), log_a.transpose(1, 2)     # (b, h, L, p), (b, h, L)
    if pad:
        xh, log_a = F.pad(xh, (0, 0, 0, pad)), F.pad(log_a, (0, pad))
        B, C = F.pad(B, (0, 0, 0, pad)), F.pad(C, (0, 0, 0, pad))
    state = (torch.zeros(b, h, p, n, device=x.device, dtype=torch.float32)
             if initial_state is None else initial_state.float())
    seg = q * segment_chunks
    ys = []
    for s in range(0, L + pad, seg):
        y, state = _ssd_segment(xh[:, :, s:s + seg], log_a[:, :, s:s + seg], B[:, s:s + seg], C[:, s:s + seg], q, state)
        ys.append(y)
    y = ys[0] if len(ys) == 1 else torch.cat(ys, dim=2)
    return y[:, :, :L].transpose(1, 2), state


def head_major(x: Tensor, scale: Tensor) -> Tensor:
    """x * scale[..., None] for x (b, L, h, p) and scale (b, L, h), in fp32, returned as a (b, L, h, p)
    view of contiguous (b, h, L, p) memory: the layout `ssd_scan` reads without a copy."""
    if torch.is_grad_enabled():   # out= has no autograd: the same product, then one copy into the layout
        return (x.float() * scale.unsqueeze(-1)).transpose(1, 2).contiguous().transpose(1, 2)
    b, L, h, p = x.shape
    out = torch.empty(b, h, L, p, dtype=torch.float32, device=x.device)
    torch.mul(x.transpose(1, 2), scale.transpose(1, 2).unsqueeze(-1), out=out)
    return out.transpose(1, 2)
