"""AFBM's context pass at inference on a CPU, as one numba kernel.

For each column sequence c and head k, with a_t = exp(dt_t A_k), the two scans run row by row in fp32:

    forward   H_t = a_t H_{t-1} + dt_t x_t B_t^T,   y_f[t] = H_t C_t + D_k x_t
    backward  y_b[t] = a_t H_{t+1} C_t,             H_t = a_t H_{t+1} + dt_t x_t B_t^T

so the backward stream reads its state before row t adds itself: the diagonal is counted once (forward), with
nothing to subtract. The backward pass also applies the gate SiLU(z_t) to both streams and gives the per-row
RMSNorm scale; W_fuse stays a torch matmul. The state is h x n x p per sequence (8 KB at the shipped sizes),
in cache for the whole scan: a multiply and two multiply-adds per state entry, row and direction, and no
chunk tensors.

The kernel is compiled on first use (cached on disk by numba); a call's column sequences are split over torch's
threads on the main thread, and run on one thread in `inference.map_runs`' workers. `context` gives what `AFBM.context` gives, to
fp32 rounding (tests/test_cpu_scan.py); the PyTorch path stays the fallback and the training path.
"""
from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

if TYPE_CHECKING:
    from .afbm import AFBM

# FEAT_CPU_KERNELS=0 keeps the PyTorch path (for A/B measurements, or a numba that misbehaves)
ENABLED = os.environ.get("FEAT_CPU_KERNELS", "1") != "0"


def _scan(x, dt, a, B, C, D, gate, eps, y, scale, s_f, s_b):  # pragma: no cover - compiled by numba
    """x, gate (b, L, h p) and D (h p,), heads side by side; dt, a (b, L, h); B, C (b, L, n): fp32 inputs.
    Writes y (b, L, 2, h p), the gated streams [y_f || y_b] * SiLU(z); scale (b, L), the RMSNorm factor; and
    the final states s_f, s_b (b, h, p, n). The state is kept as H[j, k p + i]: the innermost loop runs over
    all h p = 128 lanes of a row at once."""
    nb, L, hp = x.shape
    h, n = dt.shape[2], B.shape[2]
    p = hp // h
    for c in range(nb):
        H = np.zeros((n, hp), np.float32)
        av = np.empty(hp, np.float32)                        # a_t and dt_t x_t per lane
        xd = np.empty(hp, np.float32)
        acc = np.empty(hp, np.float32)
        for t in range(L):                                   # forward: H = a H + dt x B^T; y_f = H C + D x
            for k in range(h):
                for i in range(k * p, (k + 1) * p):
                    av[i] = a[c, t, k]
                    xd[i] = x[c, t, i] * dt[c, t, k]
            for i in range(hp):
                acc[i] = D[i] * x[c, t, i]
            for j in range(n):
                bj, cj = B[c, t, j], C[c, t, j]
                for i in range(hp):
                    hv = av[i] * H[j, i] + bj * xd[i]
                    H[j, i] = hv
                    acc[i] += cj * hv
            y[c, t, 0] = acc
        for k in range(h):
            for i in range(p):
                for j in range(n):
                    s_f[c, k, i, j] = H[j, k * p + i]
        H[:] = 0
        for t in range(L - 1, -1, -1):                       # backward: y_b = (a H) C, then H = a H + dt x B^T
            for k in range(h):
                for i in range(k * p, (k + 1) * p):
                    av[i] = a[c, t, k]
                    xd[i] = x[c, t, i] * dt[c, t, k]
            acc[:] = 0
            for j in range(n):
                bj, cj = B[c, t, j], C[c, t, j]
                for i in range(hp):
                    hv = av[i] * H[j, i]
                    acc[i] += cj * hv
                    H[j, i] = hv + bj * xd[i]
            ss = np.float32(0)
            for i in range(hp):                              # the gate, and the sum of squares for the norm
                vf = y[c, t, 0, i] * gate[c, t, i]
                vb = acc[i] * gate[c, t, i]
                y[c, t, 0, i] = vf
                y[c, t, 1, i] = vb
                ss += vf * vf + vb * vb
            scale[c, t] = 1 / np.sqrt(ss / (2 * hp) + eps)
        for k in range(h):
            for i in range(p):
                for j in range(n):
                    s_b[c, k, i, j] = H[j, k * p + i]


@functools.lru_cache(maxsize=1)
def _kernel() -> Any | None:
    """`_scan` compiled (it releases the GIL, so threads run it side by side), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(nogil=True, cache=True, fastmath={"contract", "reassoc"}, error_model="numpy")(_scan)


def available() -> bool:
    """Whether numba imports."""
    return _kernel() is not None


def usable(u: Tensor) -> bool:
    """The kernel serves `u` when it is on the CPU, no gradient is wanted, numba imports and `ENABLED`."""
    return ENABLED and u.device.type == "cpu" and not torch.is_grad_enabled() and available()


def _threads() -> int:
    """Threads to split a call's column sequences over: torch's count on the main thread; one in
    `inference.map_runs`' workers, which already run one engine run each on every core."""
    return torch.get_num_threads() if threading.current_thread() is threading.main_thread() else 1


def _np(t: Tensor):
    """A contiguous fp32 numpy view of `t` (a copy only when it is not one already)."""
    return t.detach().float().contiguous().numpy()


def context(m: AFBM, u: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """`m.context(u)` through the kernel: u (b, N, d) -> the output (b, N, d) and the final (forward, backward)
    states (b, h, p, n) fp32. The projection and W_fuse are torch matmuls (bf16 under autocast, as in the
    PyTorch path); everything between them runs in fp32."""
    if not available():
        raise RuntimeError("the CPU kernel needs numba (pip install 'numba>=0.60,<1')")
    z, x, B, C, dt = m._project(u)
    A = -torch.exp(m.A_log.detach().float())
    b, N, h, p = x.shape
    y = torch.empty(b, N, 2, h * p)
    scale = torch.empty(b, N)
    s_f, s_b = torch.empty(b, h, p, m.d_state), torch.empty(b, h, p, m.d_state)
    eps = m.norm.eps or torch.finfo(torch.float32).eps
    inputs = [_np(t) for t in (x.flatten(2), dt, torch.exp(dt * A), B, C)]
    shared = [_np(m.D.repeat_interleave(p))]
    gate = _np(F.silu(z.float()))
    outputs = [t.numpy() for t in (y, scale, s_f, s_b)]

    def scan(rows: slice) -> None:
        _kernel()(*[a[rows] for a in inputs], *shared, gate[rows], float(eps), *[a[rows] for a in outputs])

    splits = np.array_split(np.arange(b), min(_threads(), b))
    if len(splits) == 1:
        scan(slice(0, b))
    else:
        with ThreadPoolExecutor(len(splits)) as pool:
            list(pool.map(scan, [slice(int(r[0]), int(r[-1]) + 1) for r in splits]))
    out = F.linear(y.view(b, N, 2 * h * p), m.fuse.weight * m.norm.weight)
    return torch.addcmul(m.fuse.bias, out, scale.unsqueeze(-1)), (s_f, s_b)
