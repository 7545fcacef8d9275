"""Conv-GLA: the streamed memory and readout against the direct N x N attention form
(issue 2, tests bullet 3)."""
from __future__ import annotations

import pytest
import torch

from feat_engine.config import ModelConfig
from feat_engine.model.conv_gla import ConvGLA

try:
    from .oracles import conv_gla_dense, conv_gla_query_dense, rel_err
except ImportError:
    from oracles import conv_gla_dense, conv_gla_query_dense, rel_err


def make_gla(seed=0, d=16, heads=4, kernel=5):
    torch.manual_seed(seed)
    m = ConvGLA(ModelConfig(d_model=d, gla_heads=heads, conv_kernel=kernel)).eval()
    with torch.no_grad():   # non-trivial conv taps and LayerNorm affine parameters
        m.out_norm.weight.normal_(1.0, 0.3)
        m.out_norm.bias.normal_(0.0, 0.3)
    return m


@pytest.mark.parametrize("N,kernel", [(1, 5), (2, 5), (7, 3), (33, 5), (64, 7)])
def test_context_matches_direct(N, kernel):
    m = make_gla(seed=N, kernel=kernel)
    u = torch.randn(3, N, 16, generator=torch.Generator().manual_seed(N))
    with torch.no_grad():
        out, (S, s) = m.context(u)
    assert out.shape == (3, N, 16) and out.dtype == torch.float32
    assert S.shape == (3, 4, 4, 4) and s.shape == (3, 4, 4)
    assert S.dtype == torch.float32 and s.dtype == torch.float32
    assert rel_err(out, conv_gla_dense(m, u)) < 1e-5


@pytest.mark.parametrize("row_chunk", [1, 3, 8, 50, 10_000])
def test_streamed_memory_equals_one_shot(row_chunk):
    """memory() accumulated over small row chunks == the sum over all rows at once, and the
    readout from the streamed memory == the direct N x N computation."""
    m = make_gla(seed=1)
    N = 50
    u = torch.randn(2, N, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        u_conv = m.conv(u.transpose(1, 2)).transpose(1, 2)
        q, k, gv = m._qkv(u_conv)
        S, s = m.memory(k, gv, row_chunk=row_chunk)
        fk = torch.nn.functional.elu(k.double()) + 1
        S_ref = torch.einsum("bnhe,bnhf->bhef", fk, gv.double())
        assert rel_err(S, S_ref) < 1e-6 and rel_err(s, fk.sum(1)) < 1e-6
        out = m._read(q, S, s)
    assert rel_err(out, conv_gla_dense(m, u)) < 1e-5


def test_context_row_order_only_through_conv():
    """Without the conv's neighbour taps the readout is permutation-equivariant in the rows;
    with them, it is not (the conv is the only order-dependent part)."""
    m = make_gla(seed=2, kernel=1)
    u = torch.randn(1, 20, 16, generator=torch.Generator().manual_seed(2))
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        a, _ = m.context(u)
        b, _ = m.context(u[:, perm])
    assert (a[:, perm] - b).abs().max() < 1e-5
    m5 = make_gla(seed=2, kernel=5)
    with torch.no_grad():
        a5, _ = m5.context(u)
        b5, _ = m5.context(u[:, perm])
    assert (a5[:, perm] - b5).abs().max() > 1e-4


@pytest.mark.parametrize("N,M", [(1, 1), (10, 4), (40, 7)])
def test_query_matches_direct(N, M):
    m = make_gla(seed=4 + N)
    g = torch.Generator().manual_seed(N)
    u_ctx, u_q = torch.randn(2, N, 16, generator=g), torch.randn(2, M, 16, generator=g)
    with torch.no_grad():
        _, st = m.context(u_ctx)
        out = m.query(u_q, st)
        alone = torch.cat([m.query(u_q[:, j:j + 1], st) for j in range(M)], 1)
    assert rel_err(out, conv_gla_query_dense(m, u_ctx, u_q)) < 1e-5
    assert (out - alone).abs().max() < 1e-5


def test_bf16_autocast_memory_fp32():
    m = make_gla(seed=6)
    u = torch.randn(2, 300, 16, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        ref, (S, s) = m.context(u)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, (S16, s16) = m.context(u)
    assert S16.dtype == torch.float32 and s16.dtype == torch.float32
    assert rel_err(S16, S) < 2e-2 and rel_err(out.float(), ref) < 5e-2
