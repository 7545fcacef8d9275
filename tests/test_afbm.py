"""AFBM: the bidirectional fusion against the dense N x N Mamba-2 operators, query reads,
and the influence Jacobian of paper Theorem 3 (issue 2, tests bullet 2)."""
from __future__ import annotations

import pytest
import torch

from feat_engine.config import ModelConfig
from feat_engine.model.afbm import AFBM

try:
    from .oracles import F64, _afbm_fuse, _afbm_parts, afbm_dense, afbm_query_dense, mamba2_dense, naive_ssd, rel_err
except ImportError:
    from oracles import F64, _afbm_fuse, _afbm_parts, afbm_dense, afbm_query_dense, mamba2_dense, naive_ssd, rel_err


def make_afbm(seed=0, chunk=4, d=16, heads=2, d_state=4, expand=1):
    torch.manual_seed(seed)
    m = AFBM(ModelConfig(d_model=d, ssm_heads=heads, d_state=d_state, chunk_size=chunk, expand=expand)).eval()
    with torch.no_grad():   # larger steps than the init so that decays and both streams matter
        m.dt_bias.add_(torch.linspace(1.0, 3.0, heads))
        m.D.copy_(torch.linspace(0.5, 1.5, heads))
        m.norm.weight.copy_(torch.linspace(0.5, 2.0, m.norm.weight.numel()))   # the fold into W_fuse is seen
    return m


def test_dense_operator_matches_recurrence():
    """Guard the oracles against each other: dense forward operator == naive recurrence."""
    g = torch.Generator().manual_seed(0)
    N, h, p, n = 9, 2, 3, 4
    dt = torch.rand(N, h, generator=g) * 0.5 + 0.05
    A = -torch.rand(h, generator=g) * 3
    B, C, x = torch.randn(N, n, generator=g), torch.randn(N, n, generator=g), torch.randn(N, h, p, generator=g)
    M = mamba2_dense(dt, A, B, C, "forward")
    y_dense = torch.einsum("hik,khp->ihp", M, x.to(F64))
    x64, dt64, A64 = x.to(F64), dt.to(F64), A.to(F64)
    y_rec, _ = naive_ssd((x64 * dt64[..., None])[None], (dt64 * A64)[None], B[None], C[None])
    assert rel_err(y_dense, y_rec[0]) < 1e-12
    # backward operator == the forward operator of the reversed sequence, read back in order
    Mb = mamba2_dense(dt, A, B, C, "backward")
    Mr = mamba2_dense(dt.flip(0), A, B.flip(0), C.flip(0), "forward")
    assert rel_err(Mb, Mr.flip(1, 2)) < 1e-12


@pytest.mark.parametrize("N,chunk", [(1, 4), (2, 4), (7, 4), (13, 4), (16, 8), (23, 64)])
def test_context_matches_dense_reference(N, chunk):
    m = make_afbm(seed=N, chunk=chunk)
    u = torch.randn(3, N, 16, generator=torch.Generator().manual_seed(N))
    with torch.no_grad():
        out, (s_f, s_b) = m.context(u, backend="torch")
    ref, _, _ = afbm_dense(m, u)
    assert out.shape == (3, N, 16) and out.dtype == torch.float32
    assert s_f.shape == s_b.shape == (3, 2, 8, 4)
    assert rel_err(out, ref) < 1e-5


def test_diagonal_counted_once():
    """The naive sum fwd(x) + flip(fwd(flip(x))) counts the diagonal twice; the module must not."""
    m = make_afbm(seed=1)
    u = torch.randn(2, 10, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out, _ = m.context(u, backend="torch")
    ref, y_f, y_b = afbm_dense(m, u)
    # the same fusion with the diagonal included in the backward stream
    z, x, B, C, dt, A = _afbm_parts(m, u)
    diag = ((C * B).sum(-1) * 1.0)[..., None, None] * x * dt[..., None]
    twice = _afbm_fuse(m, z, y_f, y_b + diag)
    assert rel_err(out, ref) < 1e-5
    assert rel_err(out, twice) > 1e-3


@pytest.mark.parametrize("N,M", [(1, 3), (9, 4), (20, 2)])
def test_query_reads_final_states(N, M):
    """A query = the row appended after the context (forward) / before it (backward)."""
    m = make_afbm(seed=2 + N, chunk=4)
    g = torch.Generator().manual_seed(N)
    u_ctx, u_q = torch.randn(2, N, 16, generator=g), torch.randn(2, M, 16, generator=g)
    with torch.no_grad():
        _, st = m.context(u_ctx, backend="torch")
        out_q = m.query(u_q, st)
        ref = afbm_query_dense(m, u_ctx, u_q)
        assert rel_err(out_q, ref) < 1e-5
        # ... which equals the context output of the last (first) row of the extended sequence
        ext, _ = m.context(torch.cat([u_ctx, u_q[:, :1]], 1), backend="torch")
    ref_f, yf, _ = afbm_dense(m, torch.cat([u_ctx, u_q[:, :1]], 1))
    assert rel_err(ext[:, -1], ref_f[:, -1]) < 1e-5


def test_query_with_autograd_matches_dense_reference():
    """Training decodes queries with autograd on: the same output as without it, and the Jacobians with
    respect to the query and the context rows equal the dense operators' (an in-place update autograd
    cannot see, or a read of the wrong state, shows here)."""
    m = make_afbm(seed=7, chunk=2)
    g = torch.Generator().manual_seed(7)
    u_ctx, u_q = torch.randn(1, 5, 16, generator=g), torch.randn(1, 3, 16, generator=g)
    with torch.no_grad():
        plain = m.query(u_q, m.context(u_ctx, backend="torch")[1])
    assert rel_err(m.query(u_q, m.context(u_ctx, backend="torch")[1]), plain) < 1e-6
    jac = torch.autograd.functional.jacobian(lambda c, q: m.query(q, m.context(c, backend="torch")[1]), (u_ctx, u_q))
    ref = torch.autograd.functional.jacobian(lambda c, q: afbm_query_dense(m, c, q), (u_ctx.to(F64), u_q.to(F64)))
    assert rel_err(jac[0], ref[0]) < 1e-4 and rel_err(jac[1], ref[1]) < 1e-4
    assert jac[0].abs().max() > 0 and jac[1].abs().max() > 0


def test_query_independent_of_other_queries():
    m = make_afbm(seed=5)
    g = torch.Generator().manual_seed(5)
    u_ctx, u_q = torch.randn(2, 12, 16, generator=g), torch.randn(2, 6, 16, generator=g)
    with torch.no_grad():
        _, st = m.context(u_ctx, backend="torch")
        together = m.query(u_q, st)
        alone = torch.cat([m.query(u_q[:, j:j + 1], st) for j in range(6)], 1)
        perm = torch.randperm(6, generator=g)
        permuted = m.query(u_q[:, perm], st)
    assert (together - alone).abs().max() < 1e-5
    assert torch.equal(permuted, together[:, perm]) or (permuted - together[:, perm]).abs().max() < 1e-6


def _jacobian_norms(m, N, seed):
    u = torch.randn(1, N, 16, generator=torch.Generator().manual_seed(seed))
    J = torch.autograd.functional.jacobian(lambda t: m.context(t, backend="torch")[0], u)   # (1,N,d,1,N,d)
    return J[0, :, :, 0].pow(2).sum((1, 3)).sqrt()                                          # I(i, k): (N, N)


def test_influence_jacobian_nonzero_both_directions():
    """Paper Theorem 3: every context row influences every other, earlier and later."""
    N = 12
    m = make_afbm(seed=3, chunk=4)
    inf = _jacobian_norms(m, N, seed=3)
    scale = inf.diagonal().mean()
    off = ~torch.eye(N, dtype=torch.bool)
    lower, upper = inf[off & torch.ones(N, N).tril().bool()], inf[off & torch.ones(N, N).triu().bool()]
    assert (lower > 1e-7 * scale).all(), "some earlier row has no influence on a later one"
    assert (upper > 1e-7 * scale).all(), "some later row has no influence on an earlier one"


def test_influence_jacobian_matches_dense_reference():
    """The module's Jacobian equals the dense operator's; the forward stream alone is causal
    (its strictly-upper influence is exactly zero), so the non-zero upper part comes from the
    backward stream."""
    N = 5
    m = make_afbm(seed=4, chunk=2)
    u = torch.randn(1, N, 16, generator=torch.Generator().manual_seed(4))
    J = torch.autograd.functional.jacobian(lambda t: m.context(t, backend="torch")[0], u)
    J_ref, Jf, Jb = torch.autograd.functional.jacobian(lambda t: afbm_dense(m, t), u.to(F64))  # out, y_f, y_b
    assert rel_err(J, J_ref) < 1e-4
    inf_f = Jf[0, :, :, :, 0].pow(2).sum((1, 2, 4))      # (1,N,h,p,1,N,d) -> I(i, k): (N, N)
    inf_b = Jb[0, :, :, :, 0].pow(2).sum((1, 2, 4))
    up = torch.ones(N, N).triu(1).bool()
    assert (inf_f[up] == 0).all() and (inf_f[~up] > 0).all()
    assert (inf_b[up] > 0).all()
    assert (inf_b[torch.ones(N, N).tril(-1).bool()] == 0).all()   # backward stream: strictly anti-causal


def test_chunk_size_does_not_change_output():
    u = torch.randn(2, 50, 16, generator=torch.Generator().manual_seed(8))
    outs = []
    for chunk in (1, 4, 16, 64):
        m = make_afbm(seed=8, chunk=chunk)
        with torch.no_grad():
            outs.append(m.context(u, backend="torch")[0])
    for o in outs[1:]:
        assert rel_err(o, outs[0]) < 1e-5


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_bf16_autocast_close_to_fp32():
    m = make_afbm(seed=9, chunk=8)
    u = torch.randn(2, 100, 16, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        ref, (sf, sb) = m.context(u, backend="torch")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, (sf16, sb16) = m.context(u, backend="torch")
    assert sf16.dtype == torch.float32 and sb16.dtype == torch.float32
    assert torch.isfinite(out).all()
    assert rel_err(out.float(), ref) < 5e-2
    assert rel_err(sf16, sf) < 2e-2 and rel_err(sb16, sb) < 2e-2


def test_slow_heads_start_with_long_horizons():
    """At init a state decays by e over 1 / (softplus(dt_bias) |A|) rows: the slow share of the
    heads must reach past 500 rows, the others keep Mamba-2's short range."""
    torch.manual_seed(0)
    m = AFBM(ModelConfig(ssm_heads=8, slow_heads=0.5))
    horizon = 1.0 / (torch.nn.functional.softplus(m.dt_bias) * torch.exp(m.A_log)).detach()
    assert (horizon[4:] >= 500).all() and (horizon[4:] <= 10_000).all()
    assert (horizon[:4] <= 1_000).all()
    none_slow = AFBM(ModelConfig(ssm_heads=8, slow_heads=0.0))
    assert (1.0 / (torch.nn.functional.softplus(none_slow.dt_bias) * torch.exp(none_slow.A_log)) <= 1_000).all()


def test_slow_down_gives_the_longest_heads_slow_decay_and_keeps_the_rest():
    """Weights trained with fast heads only: the `share` of heads with the longest horizons get
    the slow initial range, the other heads' parameters are untouched."""
    torch.manual_seed(1)
    m = AFBM(ModelConfig(ssm_heads=4, slow_heads=0.0))
    before = m.horizons()
    keep = before.argsort()[:2]
    dt_keep, a_keep = m.dt_bias[keep].clone(), m.A_log[keep].clone()
    m.slow_down(0.5)
    after = m.horizons()
    assert int((after >= 500).sum()) == 2 and (after[keep] < 500).all()
    assert torch.equal(m.dt_bias[keep], dt_keep) and torch.equal(m.A_log[keep], a_keep)
