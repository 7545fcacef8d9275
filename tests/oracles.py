"""Slow, obviously-correct references the fast engine paths are checked against.

Everything here is written for clarity, not speed, and runs in float64:

* `naive_ssd`: the SSD recurrence one step at a time, H_t = a_t H_{t-1} + x_t B_t^T, y_t = H_t C_t.
* `mamba2_dense`: the full N x N Mamba-2 operator of one direction, built entry by entry.
* `afbm_dense`: AFBM's context output from the two dense operators (forward with the
  diagonal and D skip, backward strictly upper), gated, normalised and fused.
* `afbm_query_dense`: a query row as if appended after the last context row (forward)
  and before the first (backward), again from the dense operators.
* `conv_gla_dense`: Conv-GLA with the direct N x N attention form (a tap-by-tap conv and
  an explicit phi(q_i).phi(k_j) matrix).
* `per_table`: `inference.run_tables` as one `run` per table, in turn.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

F64 = torch.float64


def naive_ssd(x: Tensor, log_a: Tensor, B: Tensor, C: Tensor, initial_state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Step-by-step recurrence in fp64. Shapes as `ssd_scan`: x (b,L,h,p), log_a (b,L,h), B/C (b,L,n)."""
    x, log_a, B, C = (t.detach().to(F64) for t in (x, log_a, B, C))
    b, L, h, p = x.shape
    n = B.shape[-1]
    H = torch.zeros(b, h, p, n, dtype=F64) if initial_state is None else initial_state.detach().to(F64).clone()
    ys = []
    for t in range(L):
        a = torch.exp(log_a[:, t])[:, :, None, None]                          # (b, h, 1, 1)
        H = a * H + x[:, t][:, :, :, None] * B[:, t][:, None, None, :]          # (b, h, p, n)
        ys.append(torch.einsum("bhpn,bn->bhp", H, C[:, t]))
    y = torch.stack(ys, 1) if ys else torch.zeros(b, 0, h, p, dtype=F64)
    return y, H


def mamba2_dense(dt: Tensor, A: Tensor, B: Tensor, C: Tensor, direction: str) -> Tensor:
    """The N x N Mamba-2 operator of one sequence, per head: (h, N, N), fp64.

    forward:  M[i, k] = (C_i . B_k) dt_k exp(sum_{k<j<=i} dt_j A)    for k <= i, else 0
    backward: M[i, k] = (C_i . B_k) dt_k exp(sum_{i<=j<k} dt_j A)    for k >= i, else 0
    (the backward one is the forward operator of the reversed sequence, read back in order).
    dt: (N, h), A: (h,), B/C: (N, n).
    """
    dt, A, B, C = (t.to(F64) for t in (dt, A, B, C))      # no detach: differentiable for Jacobians
    N, h = dt.shape
    i, k, j = (torch.arange(N).view(*s) for s in ((N, 1, 1), (1, N, 1), (1, 1, N)))
    if direction == "forward":
        inside, keep = (k < j) & (j <= i), k <= i          # decays of rows k < j <= i; entries k <= i
    elif direction == "backward":
        inside, keep = (i <= j) & (j < k), k >= i          # decays of rows i <= j < k; entries k >= i
    else:
        raise ValueError(direction)
    log_decay = torch.einsum("ikj,jh->hik", inside.to(F64), dt * A)   # sum of dt_j A over the rows in between
    M = (C @ B.T)[None] * dt.T[:, None, :] * torch.exp(log_decay)      # (h, i, k): (C_i . B_k) dt_k decay
    return M * keep[..., 0].to(F64)


def _afbm_parts(m, u: Tensor):
    """AFBM projections in fp64 (same parameters as the module)."""
    W, bias = m.in_proj.weight.detach().to(F64), m.in_proj.bias.detach().to(F64)
    proj = u.to(F64) @ W.T + bias                          # differentiable in u
    di, n, h = m.d_inner, m.d_state, m.heads
    z, x, B, C, dt = proj.split([di, di, n, n, h], -1)
    x = F.silu(x).view(*x.shape[:-1], h, m.head_dim)
    dt = F.softplus(dt + m.dt_bias.detach().to(F64))
    A = -torch.exp(m.A_log.detach().to(F64))
    return z, x, B, C, dt, A


def _afbm_fuse(m, z: Tensor, y_f: Tensor, y_b: Tensor) -> Tensor:
    gate = F.silu(z)
    y = torch.cat([y_f.flatten(-2) * gate, y_b.flatten(-2) * gate], -1)
    eps = m.norm.eps if m.norm.eps is not None else torch.finfo(torch.float32).eps
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps) * m.norm.weight.detach().to(F64)
    return y @ m.fuse.weight.detach().to(F64).T + m.fuse.bias.detach().to(F64)


def afbm_dense(m, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """AFBM context output from the dense operators. u: (b, N, d). Returns (out, y_f, y_b) in fp64."""
    z, x, B, C, dt, A = _afbm_parts(m, u)
    b, N, h, p = x.shape
    y_f = torch.zeros(b, N, h, p, dtype=F64)
    y_b = torch.zeros(b, N, h, p, dtype=F64)
    for s in range(b):
        Mf = mamba2_dense(dt[s], A, B[s], C[s], "forward")
        Mb = mamba2_dense(dt[s], A, B[s], C[s], "backward").triu(1)            # strictly upper: drop the diagonal
        y_f[s] = torch.einsum("hik,khp->ihp", Mf, x[s]) + m.D.detach().to(F64)[:, None] * x[s]
        y_b[s] = torch.einsum("hik,khp->ihp", Mb, x[s])
    return _afbm_fuse(m, z, y_f, y_b), y_f, y_b


def afbm_query_dense(m, u_ctx: Tensor, u_q: Tensor) -> Tensor:
    """Each query row alone, placed after the context for the forward stream and before it
    for the backward stream; its own diagonal term counted once (forward). u_q: (b, M, d)."""
    b, M, _ = u_q.shape
    outs = []
    for j in range(M):
        # forward: sequence = context + [q]; read the last row
        seq_f = torch.cat([u_ctx, u_q[:, j:j + 1]], 1)
        zf, xf, Bf, Cf, dtf, A = _afbm_parts(m, seq_f)
        # backward: sequence = [q] + context; read the first row
        seq_b = torch.cat([u_q[:, j:j + 1], u_ctx], 1)
        _, xb, Bb, Cb, dtb, _ = _afbm_parts(m, seq_b)
        y_f = torch.zeros(b, 1, m.heads, m.head_dim, dtype=F64)
        y_b = torch.zeros(b, 1, m.heads, m.head_dim, dtype=F64)
        for s in range(b):
            Mf = mamba2_dense(dtf[s], A, Bf[s], Cf[s], "forward")
            Mb = mamba2_dense(dtb[s], A, Bb[s], Cb[s], "backward").triu(1)
            y_f[s, 0] = torch.einsum("hk,khp->hp", Mf[:, -1], xf[s]) + m.D.detach().to(F64)[:, None] * xf[s, -1]
            y_b[s, 0] = torch.einsum("hk,khp->hp", Mb[:, 0], xb[s])
        outs.append(_afbm_fuse(m, zf[:, -1:], y_f, y_b))
    return torch.cat(outs, 1)


def _phi(t: Tensor) -> Tensor:
    return F.elu(t) + 1.0


def conv_gla_dense(m, u: Tensor, eps: float = 1e-6) -> Tensor:
    """Conv-GLA context output via the N x N attention matrix. u: (b, N, d) -> (b, N, d) fp64."""
    u = u.detach().to(F64)
    b, N, d = u.shape
    w = m.conv.weight.detach().to(F64)[:, 0]                                   # (d, K)
    K = w.shape[1]
    half = K // 2
    uc = torch.zeros_like(u) + m.conv.bias.detach().to(F64)
    for t in range(K):                                                          # tap t reads row i + t - half
        off = t - half
        for i in range(N):
            r = i + off
            if 0 <= r < N:
                uc[:, i] += w[:, t] * u[:, r]
    P = uc @ m.proj.weight.detach().to(F64).T + m.proj.bias.detach().to(F64)
    q, k, v, g = P.chunk(4, -1)
    H, e = m.heads, m.head_dim
    q, k, gv = (t.reshape(b, N, H, e) for t in (q, k, F.silu(g) * v))
    A = torch.einsum("bihe,bjhe->bhij", _phi(q), _phi(k))                      # (b, H, N, N)
    o = torch.einsum("bhij,bjhe->bihe", A, gv) / (A.sum(-1).permute(0, 2, 1)[..., None] + eps)
    o = F.layer_norm(o, (e,), m.out_norm.weight.detach().to(F64), m.out_norm.bias.detach().to(F64), m.out_norm.eps)
    return o.reshape(b, N, d) @ m.out.weight.detach().to(F64).T + m.out.bias.detach().to(F64)


def conv_gla_query_dense(m, u_ctx: Tensor, u_q: Tensor, eps: float = 1e-6) -> Tensor:
    """Query rows through the N x N form: keys/values from the context rows only; a query's
    conv sees its own row alone (the other taps read zeros)."""
    u_ctx, u_q = u_ctx.detach().to(F64), u_q.detach().to(F64)
    b, N, d = u_ctx.shape
    w = m.conv.weight.detach().to(F64)[:, 0]
    K = w.shape[1]
    half = K // 2
    bias = m.conv.bias.detach().to(F64)
    uc = torch.zeros_like(u_ctx) + bias
    for t in range(K):
        for i in range(N):
            r = i + t - half
            if 0 <= r < N:
                uc[:, i] += w[:, t] * u_ctx[:, r]
    uq = u_q * w[:, half] + bias
    Wp, bp = m.proj.weight.detach().to(F64), m.proj.bias.detach().to(F64)
    _, k, v, g = (uc @ Wp.T + bp).chunk(4, -1)
    q = (uq @ Wp.T + bp).chunk(4, -1)[0]
    H, e = m.heads, m.head_dim
    M = uq.shape[1]
    q = q.reshape(b, M, H, e)
    k, gv = k.reshape(b, N, H, e), (F.silu(g) * v).reshape(b, N, H, e)
    A = torch.einsum("bihe,bjhe->bhij", _phi(q), _phi(k))                      # (b, H, M, N)
    o = torch.einsum("bhij,bjhe->bihe", A, gv) / (A.sum(-1).permute(0, 2, 1)[..., None] + eps)
    o = F.layer_norm(o, (e,), m.out_norm.weight.detach().to(F64), m.out_norm.bias.detach().to(F64), m.out_norm.eps)
    return o.reshape(b, M, d) @ m.out.weight.detach().to(F64).T + m.out.bias.detach().to(F64)


def rel_err(a: Tensor, b: Tensor) -> float:
    """||a - b|| / ||b|| in fp64."""
    a, b = a.detach().to(F64), b.detach().to(F64)
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def per_table(run):
    """A stand-in for `inference.run_tables` that calls `run` (the engine's, or a test's stand-in for it)
    on each table in turn."""
    def run_tables(model, x_ctx, y_ctx, x_query, task, *args, **kwargs):
        return [run(model, x, None if y_ctx is None else y_ctx[b], x_query[b], task, *args, **kwargs)
                for b, x in enumerate(x_ctx)]
    return run_tables
