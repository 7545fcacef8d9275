"""The numba kernel of AFBM's context pass (`feat_engine/model/cpu_scan.py`) against the fp64 oracles: both
streams, the final states, the query read, and the whole model with and without it (issue 66, item 3)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

pytest.importorskip("numba")

from feat_engine import FEAT, ModelConfig  # noqa: E402
from feat_engine.inference import run  # noqa: E402
from feat_engine.model import cpu_scan  # noqa: E402
from feat_engine.model.afbm import AFBM  # noqa: E402

try:
    from .oracles import F64, _afbm_parts, afbm_dense, afbm_query_dense, naive_ssd, rel_err
except ImportError:
    from oracles import F64, _afbm_parts, afbm_dense, afbm_query_dense, naive_ssd, rel_err

SHIPPED = dict(d_model=128, ssm_heads=4, d_state=16, chunk_size=16)   # h = 4, p = 32, n = 16
SMALL = dict(d_model=16, ssm_heads=2, d_state=4, chunk_size=4)
ODD = dict(d_model=16, ssm_heads=2, d_state=3, chunk_size=4)        # the kernel pads the state to an even size


def make_afbm(seed: int, sizes: dict) -> AFBM:
    torch.manual_seed(seed)
    m = AFBM(ModelConfig(**sizes)).eval()
    with torch.no_grad():   # larger steps than the init, so that decays and both streams matter
        m.dt_bias.add_(torch.linspace(1.0, 3.0, m.heads))
        m.D.copy_(torch.linspace(0.5, 1.5, m.heads))
        m.norm.weight.copy_(torch.linspace(0.5, 2.0, m.norm.weight.numel()))
    return m


def kernel_streams(m: AFBM, u: Tensor):
    """The raw kernel's outputs: gated streams (b, N, 2, h, p), norm scale (b, N), final states."""
    z, x, B, C, dt = m._project(u)
    b, N, h, p = x.shape
    y, scale = np.empty((b, N, 2, h * p), np.float32), np.empty((b, N), np.float32)
    s_f, s_b = (np.empty((b, h, p, m.d_state), np.float32) for _ in range(2))
    A = -torch.exp(m.A_log.float())
    cpu_scan._kernel()(
        cpu_scan._np(x.flatten(2)), cpu_scan._np(dt), cpu_scan._np(torch.exp(dt * A)), cpu_scan._np(B),
        cpu_scan._np(C), cpu_scan._np(m.D.repeat_interleave(p)), cpu_scan._np(F.silu(z)), 1e-6,
        y, scale, s_f, s_b)
    y = torch.from_numpy(y).view(b, N, 2, h, p)
    return y, torch.from_numpy(scale), torch.from_numpy(s_f), torch.from_numpy(s_b)


@pytest.mark.parametrize("sizes", [SHIPPED, SMALL], ids=["shipped", "small"])
@pytest.mark.parametrize("N", [1, 7, 40])
def test_streams_and_states_match_the_oracles(sizes, N):
    m = make_afbm(N, sizes)
    u = torch.randn(3, N, m.fuse.out_features, generator=torch.Generator().manual_seed(N))
    with torch.no_grad():
        y, _, s_f, s_b = kernel_streams(m, u)
    _, y_f, y_b = afbm_dense(m, u)                               # y_f with the D skip, y_b strictly upper
    z, x, B, C, dt, A = _afbm_parts(m, u)
    gate = F.silu(z).view(*z.shape[:-1], m.heads, m.head_dim)
    assert rel_err(y[:, :, 0], y_f * gate) < 1e-5
    assert rel_err(y[:, :, 1], y_b * gate) < 1e-5
    xd, log_a = x * dt[..., None], dt * A
    _, ref_f = naive_ssd(xd, log_a, B, C)
    _, ref_b = naive_ssd(xd.flip(1), log_a.flip(1), B.flip(1), C.flip(1))
    assert rel_err(s_f, ref_f) < 1e-5 and rel_err(s_b, ref_b) < 1e-5


@pytest.mark.parametrize("sizes", [SHIPPED, SMALL, ODD], ids=["shipped", "small", "odd-state"])
def test_context_and_query_read_match_the_oracles(sizes):
    m = make_afbm(3, sizes)
    g = torch.Generator().manual_seed(3)
    u, u_q = torch.randn(2, 37, m.fuse.out_features, generator=g), torch.randn(2, 5, m.fuse.out_features, generator=g)
    with torch.no_grad():
        out, state = m.context(u, backend="numba")
        ref_out, ref_state = m.context(u, backend="torch")
        q = m.query(u_q, state)
    assert rel_err(out, afbm_dense(m, u)[0]) < 1e-5
    assert all(rel_err(s, r) < 1e-5 for s, r in zip(state, ref_state))
    assert rel_err(q, afbm_query_dense(m, u, u_q)) < 1e-5


def test_sequences_split_over_threads_give_the_one_thread_result(monkeypatch):
    m = make_afbm(4, SHIPPED)
    u = torch.randn(5, 50, 128, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        monkeypatch.setattr(cpu_scan, "_threads", lambda: 1)
        one = m.context(u, backend="numba")
        monkeypatch.setattr(cpu_scan, "_threads", lambda: 3)
        three = m.context(u, backend="numba")
    assert torch.equal(one[0], three[0]) and all(torch.equal(s, t) for s, t in zip(one[1], three[1]))


def test_bf16_autocast_is_no_further_from_fp64_than_the_torch_path():
    m = make_afbm(5, SHIPPED)
    u = torch.randn(4, 300, 128, generator=torch.Generator().manual_seed(5))
    ref = afbm_dense(m, u)[0]
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        kern, torch_path = m.context(u, backend="numba")[0], m.context(u, backend="torch")[0]
    assert kern.dtype == torch_path.dtype
    assert rel_err(kern, ref) < 2e-2 and rel_err(kern, ref) <= 1.1 * rel_err(torch_path, ref)


def test_dispatch(monkeypatch):
    """'auto' takes the kernel on a CPU without gradients, on the main thread and in a worker (one thread there);
    with gradients, or FEAT_CPU_KERNELS=0 (`ENABLED`), the PyTorch path."""
    m = make_afbm(6, SMALL)
    u = torch.randn(2, 9, 16)
    calls, threads = [], []
    kernel = cpu_scan.context
    monkeypatch.setattr(cpu_scan, "context", lambda mod, v: calls.append(1) or kernel(mod, v))

    def in_worker():
        threads.append(cpu_scan._threads())
        with torch.no_grad():
            m.context(u)

    with torch.no_grad():
        m.context(u)
    worker = threading.Thread(target=in_worker)
    worker.start()
    worker.join()
    assert len(calls) == 2 and threads == [1] and cpu_scan._threads() == torch.get_num_threads()
    m.context(u.requires_grad_())
    monkeypatch.setattr(cpu_scan, "ENABLED", False)
    with torch.no_grad():
        m.context(u)
    assert len(calls) == 2


def test_whole_model_predictions_with_and_without_the_kernel(monkeypatch):
    torch.manual_seed(0)
    model = FEAT(ModelConfig(d_model=32, attn_heads=4, d_state=8, ssm_heads=4, chunk_size=8, gla_heads=4,
                             d_hidden=32, dfe_rank=8)).eval()
    with torch.no_grad():
        for blk in model.blocks:
            if isinstance(blk.mixer, AFBM):
                blk.mixer.dt_bias.add_(2.0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((150, 6)).astype(np.float32)
    y = rng.integers(0, 3, 120).astype(np.float32)
    preds = {}
    for on in (True, False):
        monkeypatch.setattr(cpu_scan, "ENABLED", on)
        preds[on] = run(model, x[:120], y, x[120:], "classification", 3, device="cpu").logits[:, :3]
    assert np.abs(preds[True] - preds[False]).max() < 1e-4
    assert rel_err(torch.from_numpy(preds[True]).to(F64), torch.from_numpy(preds[False])) < 1e-5
