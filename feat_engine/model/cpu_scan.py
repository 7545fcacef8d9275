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

# FEAT_CPU_KERNELS=0 keeps the PyTorch paths, here and in `linear` (for A/B measurements, or a numba or oneDNN that
# misbehaves)
ENABLED = os.environ.get("FEAT_CPU_KERNELS", "1") != "0"


AHEAD = 8   # rows the scan asks the CPU to load before it reaches them (`_prefetch`)


def _prefetch(row) -> None:
    """Ask the CPU to start loading `row`, a contiguous 1-d fp32 array, into its caches: a hint that changes no value.
    In Python it does nothing; in the kernel, one llvm.prefetch per 64-byte line (`_compile_prefetch`)."""


def _scan(x, dt, a, B, C, D, gate, eps, y, scale, s_f, s_b):  # pragma: no cover - compiled by numba
    """x, gate (b, L, h p) and D (h p,), heads side by side; dt, a (b, L, h); B, C (b, L, n), n even: fp32 inputs.
    Writes y (b, L, 2, h p), the gated streams [y_f || y_b] * SiLU(z); scale (b, L), the RMSNorm factor; and
    the final states s_f, s_b (b, h, p, n). The state is kept as H[j, k p + i]: the innermost loops run over
    all h p = 128 lanes of a row at once, two state rows j a pass (half the loads and stores of y's lanes). A
    step's rows are fetched `AHEAD` rows early: a context's streams outgrow the caches, and the two directions
    read them from both ends."""
    nb, L, hp = x.shape
    h, n = dt.shape[2], B.shape[2]
    p = hp // h
    for c in range(nb):
        H = np.zeros((n, hp), np.float32)
        av = np.empty(hp, np.float32)                        # a_t and dt_t x_t per lane
        xd = np.empty(hp, np.float32)
        acc = np.empty(hp, np.float32)
        for t in range(L):                                   # forward: H = a H + dt x B^T; y_f = H C + D x
            if t + AHEAD < L:
                _prefetch(x[c, t + AHEAD])
                _prefetch(y[c, t + AHEAD, 0])
            xt = x[c, t]
            for k in range(h):                               # per head, on slices: contiguous loops, not gathers
                ak, dk = a[c, t, k], dt[c, t, k]
                xk, avk, xdk = xt[k * p:(k + 1) * p], av[k * p:(k + 1) * p], xd[k * p:(k + 1) * p]
                for i in range(p):
                    avk[i] = ak
                    xdk[i] = xk[i] * dk
            for i in range(hp):
                acc[i] = D[i] * xt[i]
            for j in range(0, n, 2):
                b0, c0, b1, c1 = B[c, t, j], C[c, t, j], B[c, t, j + 1], C[c, t, j + 1]
                for i in range(hp):
                    h0 = av[i] * H[j, i] + b0 * xd[i]
                    h1 = av[i] * H[j + 1, i] + b1 * xd[i]
                    H[j, i] = h0
                    H[j + 1, i] = h1
                    acc[i] += c0 * h0 + c1 * h1
            y[c, t, 0] = acc
        for k in range(h):
            for i in range(p):
                for j in range(n):
                    s_f[c, k, i, j] = H[j, k * p + i]
        H[:] = 0
        for t in range(L - 1, -1, -1):                       # backward: y_b = (a H) C, then H = a H + dt x B^T
            if t >= AHEAD:
                _prefetch(x[c, t - AHEAD])
                _prefetch(gate[c, t - AHEAD])
                _prefetch(y[c, t - AHEAD, 0])
                _prefetch(y[c, t - AHEAD, 1])
            xt = x[c, t]
            for k in range(h):
                ak, dk = a[c, t, k], dt[c, t, k]
                xk, avk, xdk = xt[k * p:(k + 1) * p], av[k * p:(k + 1) * p], xd[k * p:(k + 1) * p]
                for i in range(p):
                    avk[i] = ak
                    xdk[i] = xk[i] * dk
            acc[:] = 0
            for j in range(0, n, 2):
                b0, c0, b1, c1 = B[c, t, j], C[c, t, j], B[c, t, j + 1], C[c, t, j + 1]
                for i in range(hp):
                    h0 = av[i] * H[j, i]
                    h1 = av[i] * H[j + 1, i]
                    acc[i] += c0 * h0 + c1 * h1
                    H[j, i] = h0 + b0 * xd[i]
                    H[j + 1, i] = h1 + b1 * xd[i]
            ss = np.float32(0)
            yf, yb, g = y[c, t, 0], y[c, t, 1], gate[c, t]
            for i in range(hp):                              # the gate, and the sum of squares for the norm
                vf = yf[i] * g[i]
                vb = acc[i] * g[i]
                yf[i] = vf
                yb[i] = vb
                ss += vf * vf + vb * vb
            scale[c, t] = 1 / np.sqrt(ss / (2 * hp) + eps)
        for k in range(h):
            for i in range(p):
                for j in range(n):
                    s_b[c, k, i, j] = H[j, k * p + i]


def _compile_prefetch(numba) -> None:
    """Give `_prefetch` its compiled form: llvm.prefetch (read, kept in every cache level) of each 64-byte line."""
    from llvmlite import ir
    from numba.core import cgutils
    from numba.extending import intrinsic, overload

    @intrinsic
    def line(typingctx, row, k):
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]], wraparound=False)
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p],
                                                  ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()
        return numba.types.void(row, k), codegen

    @overload(_prefetch, inline="always")
    def compiled(row):
        def go(row):
            for k in range(0, row.size, 16):
                line(row, k)
        return go


@functools.lru_cache(maxsize=1)
def _kernel() -> Any | None:
    """`_scan` compiled (it releases the GIL, so threads run it side by side), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    _compile_prefetch(numba)
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


@functools.lru_cache(maxsize=None)
def _pool(workers: int) -> ThreadPoolExecutor:
    """Threads kept for the process: starting them on every call cost 2-4 ms, as much as a short context's scan."""
    return ThreadPoolExecutor(workers, thread_name_prefix="feat-scan")


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
    n = m.d_state + m.d_state % 2            # the kernel takes state rows two at a time; a zero row stays zero
    y = torch.empty(b, N, 2, h * p)
    scale = torch.empty(b, N)
    s_f, s_b = torch.empty(b, h, p, n), torch.empty(b, h, p, n)
    eps = m.norm.eps or torch.finfo(torch.float32).eps
    pad = lambda t: F.pad(t, (0, n - m.d_state))  # noqa: E731
    inputs = [_np(t) for t in (x.flatten(2), dt, torch.exp(dt * A), pad(B), pad(C))]
    shared = [_np(m.D.repeat_interleave(p))]
    gate = _np(F.silu(z.float()))
    outputs = [t.numpy() for t in (y, scale, s_f, s_b)]

    def scan(rows: slice) -> None:
        _kernel()(*[a[rows] for a in inputs], *shared, gate[rows], float(eps), *[a[rows] for a in outputs])

    splits = np.array_split(np.arange(b), min(_threads(), b))
    if len(splits) == 1:
        scan(slice(0, b))
    else:
        list(_pool(len(splits)).map(scan, [slice(int(r[0]), int(r[-1]) + 1) for r in splits]))
    return m.fused(y.view(b, N, 2 * h * p), scale.unsqueeze(-1)), (s_f[..., :m.d_state], s_b[..., :m.d_state])
