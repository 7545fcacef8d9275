"""The whole FEAT model and the streamed runner: query independence, chunking invariance,
the attention path, shapes and dtypes, class masking (issue 2, tests bullets 4 and 5)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from feat_engine import FEAT, InferenceConfig, ModelConfig
from feat_engine.inference import run
from feat_engine.model.feature_attn import FeatureAttention

SMALL = ModelConfig(d_model=32, n_blocks=4, attn_heads=4, d_state=8, ssm_heads=4, chunk_size=8,
                    gla_heads=4, d_hidden=32, dfe_rank=8)
TINY = ModelConfig(d_model=16, n_blocks=4, attn_heads=2, d_state=4, ssm_heads=2, chunk_size=16,
                   gla_heads=2, d_hidden=16, dfe_rank=4)   # shapes only: the size does not matter there
TOL = 1e-5


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = FEAT(SMALL).eval()
    with torch.no_grad():   # larger SSM steps than the init, so the scans carry real signal
        for blk in m.blocks:
            if hasattr(blk.mixer, "dt_bias"):
                blk.mixer.dt_bias.add_(2.0)
    return m


def table(B, N, D, seed=0, p_nan=0.1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N, D, generator=g)
    x[torch.rand(B, N, D, generator=g) < p_nan] = float("nan")
    return x


def labels(B, n, task, k=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, k, (B, n), generator=g).float() if task == "classification" else torch.randn(B, n, generator=g)


def maxdiff(a, b):
    """Largest |a - b| over finite entries; -inf (masked classes) must sit in the same places."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    assert torch.equal(torch.isinf(a), torch.isinf(b)), "masked entries differ"
    fin = torch.isfinite(a)
    return float((a[fin] - b[fin]).abs().max()) if fin.any() else 0.0


# -- query independence ------------------------------------------------------------------

@pytest.mark.parametrize("task", ["classification", "regression"])
def test_queries_together_equal_one_at_a_time(model, task):
    B, n_ctx, M, D = 2, 30, 5, 5
    x = table(B, n_ctx + M, D, seed=2)
    y = labels(B, n_ctx, task)
    with torch.no_grad():
        together = model(x, y, task, 3)
        singles = [model(torch.cat([x[:, :n_ctx], x[:, n_ctx + j:n_ctx + j + 1]], 1), y, task, 3) for j in range(M)]
    key = "logits" if task == "classification" else "pred"
    out = getattr(together, key)
    alone = torch.cat([getattr(s, key) for s in singles], 1)
    assert out.shape[:2] == (B, M)
    assert maxdiff(out, alone) < TOL
    # reconstructions of the query rows too
    rec_alone = torch.cat([s.recon[:, n_ctx:] for s in singles], 1)
    assert maxdiff(together.recon[:, n_ctx:], rec_alone) < TOL
    # and the predictions are not all the same (the test would be vacuous otherwise)
    assert out[..., :3].std(1).mean() > 1e-3


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_permuting_queries_permutes_outputs(model, task):
    B, n_ctx, M, D = 2, 30, 12, 4
    x = table(B, n_ctx + M, D, seed=3)
    y = labels(B, n_ctx, task)
    perm = torch.randperm(M, generator=torch.Generator().manual_seed(0))
    xp = torch.cat([x[:, :n_ctx], x[:, n_ctx:][:, perm]], 1)
    with torch.no_grad():
        a, b = model(x, y, task, 3), model(xp, y, task, 3)
    key = "logits" if task == "classification" else "pred"
    assert maxdiff(getattr(a, key)[:, perm], getattr(b, key)) < TOL
    assert maxdiff(a.recon[:, n_ctx:][:, perm], b.recon[:, n_ctx:]) < TOL
    assert maxdiff(a.recon[:, :n_ctx], b.recon[:, :n_ctx]) < TOL     # context untouched by queries


def test_context_rows_do_matter(model):
    """Guard: the predictions depend on the context (labels and rows), so the independence
    tests above are not passing because queries ignore everything."""
    x = table(1, 50, 4, seed=4)
    y = labels(1, 40, "classification")
    with torch.no_grad():
        base = model(x, y, "classification", 3).logits
        other_labels = model(x, (y + 1) % 3, "classification", 3).logits
        x2 = x.clone()
        x2[:, 0] = torch.randn(4)        # change the first context row only
        other_row = model(x2, y, "classification", 3).logits
    assert maxdiff(base[..., :3], other_labels[..., :3]) > 1e-4
    assert maxdiff(base[..., :3], other_row[..., :3]) > 1e-6


# -- the streamed runner -----------------------------------------------------------------

CHUNKED = [
    InferenceConfig(row_chunk=7, col_chunk=2, query_chunk=5),
    InferenceConfig(row_chunk=1, col_chunk=1, query_chunk=1),
    InferenceConfig(row_chunk=64, col_chunk=3, query_chunk=4096),
    InferenceConfig(cpu_chunk_tokens=20),           # 3 rows (of 6 tokens) a feature-axis chunk
]


def test_cpu_chunks_hold_at_most_their_tokens_and_query_passes_whole_blocks():
    from feat_engine.inference import QUERY_BLOCK, chunk_rows
    cfg = InferenceConfig()
    for columns, tables in [(6, 1), (21, 1), (101, 1), (21, 32), (1001, 1)]:
        rows, queries = chunk_rows(cfg, columns, tables, torch.device("cpu"))
        assert 1 <= rows <= cfg.row_chunk and rows * columns * tables <= max(cfg.cpu_chunk_tokens, columns * tables)
        assert queries % QUERY_BLOCK == 0 and QUERY_BLOCK <= queries <= cfg.query_chunk
        assert queries * columns * tables <= max(cfg.cpu_chunk_tokens, QUERY_BLOCK * columns * tables)
    assert chunk_rows(cfg, 101, 1, torch.device("cpu")) == (40, 64)
    assert chunk_rows(cfg, 101, 1, torch.device("meta")) == (cfg.row_chunk, cfg.query_chunk)


@pytest.mark.parametrize("icfg", CHUNKED, ids=["7-2-5", "1-1-1", "64-3-big", "20-tokens"])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_run_chunked_equals_forward(model, task, icfg):
    n_ctx, M, D = 21, 7, 5
    x = table(1, n_ctx + M, D, seed=5)
    y = labels(1, n_ctx, task)
    with torch.no_grad():
        ref = model(x, y, task, 3)
    res = run(model, x[0, :n_ctx].numpy(), y[0].numpy(), x[0, n_ctx:].numpy(), task, n_classes=3,
              cfg=icfg, device="cpu")
    if task == "classification":
        assert res.logits.shape == (M, 10) and res.pred is None
        assert np.isneginf(res.logits[:, 3:]).all()
        assert np.abs(res.logits[:, :3] - ref.logits[0, :, :3].numpy()).max() < TOL
    else:
        assert res.pred.shape == (M,) and res.logits is None
        assert np.abs(res.pred - ref.pred[0].numpy()).max() < TOL


def test_run_reports_every_context_block_then_every_query_chunk(model):
    n_ctx, M, D = 21, 9, 4
    x = table(1, n_ctx + M, D, seed=7)
    seen = []
    run(model, x[0, :n_ctx].numpy(), labels(1, n_ctx, "regression")[0].numpy(), x[0, n_ctx:].numpy(),
        "regression", cfg=InferenceConfig(query_chunk=4), device="cpu", progress=lambda d, t, m: seen.append((d, t)))
    n = model.cfg.n_blocks
    assert seen == [(i, n + 3) for i in range(n + 4)]   # 0, each block, each of 3 query chunks


def test_run_imputation_recon_and_attention(model):
    """Imputation (y None): every row is context; recon and the row-averaged attention of the
    chunked runner equal FEAT.forward's."""
    N, D = 45, 5
    x = table(1, N, D, seed=6)
    with torch.no_grad():
        ref = model(x, None, None, return_attention=True)
    res = run(model, x[0].numpy(), None, None, None, cfg=InferenceConfig(row_chunk=8, col_chunk=2, query_chunk=4),
              device="cpu", want_recon=True, want_attention=True)
    assert res.logits is None and res.pred is None
    assert res.recon.shape == (N, D)
    assert np.abs(res.recon - ref.recon[0].numpy()).max() < TOL
    assert len(res.attention) == SMALL.n_blocks
    for a, r in zip(res.attention, ref.attention):
        assert a.shape == (SMALL.attn_heads, D + 1, D + 1)
        assert np.abs(a - r[0].numpy()).max() < TOL


def test_run_attention_with_queries(model):
    n_ctx, M, D = 20, 6, 3
    x = table(1, n_ctx + M, D, seed=7)
    y = labels(1, n_ctx, "classification")
    with torch.no_grad():
        ref = model(x, y, "classification", 3, return_attention=True)
    res = run(model, x[0, :n_ctx], y[0], x[0, n_ctx:], "classification", 3,
              cfg=InferenceConfig(row_chunk=6, col_chunk=1, query_chunk=4), device="cpu", want_attention=True)
    for a, r in zip(res.attention, ref.attention):
        assert np.abs(a - r[0].numpy()).max() < TOL
        assert np.allclose(a.sum(-1), 1.0, atol=1e-5)      # rows of softmax weights, averaged


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize("capability, native", [("AVX512", True), ("AVX2", False)])
def test_bf16_is_native_only_where_torchs_kernels_may_use_the_cpus_bf16(monkeypatch, capability, native):
    """A CPU with AVX512-BF16 whose process is held to AVX2 (`ATEN_CPU_CAPABILITY=avx2`, how an AVX2-only CPU is
    stood in for) computes in fp32 at precision "auto", as an AVX2-only CPU does."""
    from feat_engine import inference
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert inference.native_bf16() is native and inference.uses_bf16("auto", "cpu") is native


def test_run_bf16_close_to_fp32(model):
    n_ctx, M, D = 30, 10, 4
    x = table(1, n_ctx + M, D, seed=8, p_nan=0.0)
    y = labels(1, n_ctx, "regression")
    args = (model, x[0, :n_ctx].numpy(), y[0].numpy(), x[0, n_ctx:].numpy(), "regression")
    ref = run(*args, cfg=InferenceConfig(row_chunk=16, col_chunk=2), device="cpu")
    half = run(*args, cfg=InferenceConfig(row_chunk=16, col_chunk=2, autocast_bf16=True), device="cpu")
    assert half.pred.dtype == np.float32 and np.isfinite(half.pred).all()
    err = np.linalg.norm(half.pred - ref.pred) / np.linalg.norm(ref.pred)
    assert 0 < err < 0.1


def test_onednn_linear_equals_f_linear_and_keeps_a_rows_bits(monkeypatch):
    """`model.linear` (oneDNN's fp32 product at inference on a CPU) against F.linear on random inputs of 2-4 axes, a
    strided one and no bias; a row gets the same bits in calls of 2 to 700 rows; with gradients, under autocast or
    with FEAT_CPU_KERNELS=0 it is F.linear itself."""
    import torch.nn.functional as F

    from feat_engine.model import cpu_scan, linear as lin
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(48, 40, generator=g) / 6, torch.randn(48, generator=g)
    routed = []
    monkeypatch.setattr(lin, "_onednn", lambda: routed.append(1) or True)
    inputs = [torch.randn(700, 40, generator=g), torch.randn(3, 50, 40, generator=g),
              torch.randn(2, 5, 9, 40, generator=g), torch.randn(40, 300, generator=g).t()]
    with torch.no_grad():
        for x in inputs:
            for bias in (b, None):
                assert torch.allclose(lin.linear(x, w, bias), F.linear(x, w, bias), rtol=1e-5, atol=1e-5)
        full = lin.linear(inputs[0], w, b)
        assert all(torch.equal(lin.linear(inputs[0][:m], w, b), full[:m]) for m in (2, 64, 129, 333))
        assert len(routed) == 13
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert lin.linear(inputs[0], w, b).dtype == torch.bfloat16
        monkeypatch.setattr(cpu_scan, "ENABLED", False)
        lin.linear(inputs[0], w, b)
    lin.linear(inputs[0].requires_grad_(), w, b).sum().backward()
    assert len(routed) == 13 and inputs[0].grad is not None


# -- attention path ----------------------------------------------------------------------

def test_returning_attention_does_not_change_outputs(model):
    x = table(2, 30, 7, seed=9)
    y = labels(2, 22, "classification")
    with torch.no_grad():
        a = model(x, y, "classification", 3)
        b = model(x, y, "classification", 3, return_attention=True)
    assert a.attention is None
    assert maxdiff(a.logits[..., :3], b.logits[..., :3]) < TOL
    assert maxdiff(a.recon, b.recon) < TOL
    assert len(b.attention) == SMALL.n_blocks
    for w in b.attention:
        assert w.shape == (2, SMALL.attn_heads, 8, 8)
        assert torch.allclose(w.sum(-1), torch.ones(()), atol=1e-5)
        assert (w >= 0).all()


def test_feature_attention_weights_are_the_softmax():
    """The written-out attention equals PyTorch's fused kernel and softmax, with and without gradients;
    returning the weights changes nothing."""
    import torch.nn.functional as F

    from feat_engine.model.feature_attn import softmax_last
    torch.manual_seed(1)
    fa = FeatureAttention(SMALL).eval()
    x = torch.randn(3, 5, 6, 32)
    y_train, _ = fa(x)
    with torch.no_grad():
        y0, w0 = fa(x)
        y1, w1 = fa(x, return_attention=True)
        q, k, v = fa.qkv(fa.norm1(x)).view(3, 5, 6, 3, 4, 8).unbind(3)
        ref = torch.softmax(torch.einsum("bnihe,bnjhe->bnhij", q, k) / 8 ** 0.5, -1)
        a = F.scaled_dot_product_attention(*(t.transpose(2, 3) for t in (q, k, v))).transpose(2, 3).reshape(3, 5, 6, 32)
        x1 = x + fa.proj(a)
        y_ref = x1 + fa.ffn(fa.norm2(x1))
    assert w0 is None and w1.shape == (3, 5, 4, 6, 6)
    assert maxdiff(y0, y_ref) < TOL and maxdiff(y1, y_ref) < TOL and maxdiff(y_train.detach(), y_ref) < TOL
    assert maxdiff(w1, ref) < 1e-6
    s = torch.randn(4, 7, 11) * 30
    s[0, 0] = torch.tensor([1e4] + [-1e4] * 10)                   # far apart: no overflow
    assert maxdiff(softmax_last(s), torch.softmax(s, -1)) < 1e-6


# -- shapes and dtypes -------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(5)
    return FEAT(TINY).eval()


@pytest.mark.parametrize("N", [1, 7, 1000])
@pytest.mark.parametrize("D", [1, 3, 50])
def test_shapes_and_dtypes(tiny, N, D):
    model = tiny
    B = 2 if N < 1000 else 1
    x = table(B, N, D, seed=N + D)
    n_ctx = (N + 1) // 2
    M = N - n_ctx
    with torch.no_grad():
        cls = model(x, labels(B, n_ctx, "classification"), "classification", 3)
        reg = model(x, labels(B, n_ctx, "regression"), "regression")
        imp = model(x, None, None)
    for out in (cls, reg, imp):
        assert out.recon.shape == (B, N, D) and out.recon.dtype == torch.float32
        assert torch.isfinite(out.recon).all()
        assert out.attention is None
    if M:
        assert cls.logits.shape == (B, M, TINY.max_classes) and cls.logits.dtype == torch.float32
        assert torch.isfinite(cls.logits[..., :3]).all()
        assert reg.pred.shape == (B, M) and reg.pred.dtype == torch.float32 and torch.isfinite(reg.pred).all()
    else:   # N = 1: the single row is context, nothing to predict
        assert cls.logits is None and reg.pred is None
    assert cls.pred is None and reg.logits is None
    assert imp.logits is None and imp.pred is None


@pytest.mark.parametrize("N,D", [(1, 1), (7, 3), (1000, 10)])
def test_run_shapes(tiny, N, D):
    model = tiny
    x = table(1, N + 3, D, seed=N)[0]
    res = run(model, x[:N], labels(1, N, "classification")[0], x[N:], "classification", 3,
              cfg=InferenceConfig(row_chunk=256, col_chunk=8, query_chunk=2), device="cpu", want_recon=True)
    assert res.logits.shape == (3, 10) and res.logits.dtype == np.float32
    assert res.recon.shape == (N, D) and res.recon.dtype == np.float32
    reg = run(model, x[:N], labels(1, N, "regression")[0], x[N:], "regression", device="cpu")
    assert reg.pred.shape == (3,) and reg.pred.dtype == np.float32


# -- class masking -----------------------------------------------------------------------

@pytest.mark.parametrize("K", [1, 2, 5, 10])
def test_n_classes_masks_beyond_k(model, K):
    x = table(1, 20, 3, seed=K)
    y = labels(1, 15, "classification", k=K)
    with torch.no_grad():
        lg = model(x, y, "classification", K).logits
    assert torch.isneginf(lg[..., K:]).all()
    assert torch.isfinite(lg[..., :K]).all()


def test_n_classes_per_table(model):
    x = table(3, 20, 3, seed=11)
    y = labels(3, 15, "classification", k=2)
    K = torch.tensor([2, 4, 10])
    with torch.no_grad():
        lg = model(x, y, "classification", K).logits
        free = model(x, y, "classification", None).logits
    for t, k in enumerate(K.tolist()):
        assert torch.isneginf(lg[t, :, k:]).all() and torch.isfinite(lg[t, :, :k]).all()
        assert maxdiff(lg[t, :, :k], free[t, :, :k]) == 0    # masking changes nothing else
    assert torch.isfinite(free).all()


# -- S-DFE and training mode ------------------------------------------------------------

def test_column_ids_reproducible_at_inference_resampled_in_training():
    torch.manual_seed(2)
    m = FEAT(SMALL)
    x, y = table(1, 12, 4, seed=12), labels(1, 8, "regression")
    m.eval()
    with torch.no_grad():
        a, b = m(x, y, "regression").pred, m(x, y, "regression").pred
    assert torch.equal(a, b)
    m.train()
    ids1, ids2 = m.column_ids(1, 4), m.column_ids(1, 4)
    assert not torch.allclose(ids1, ids2)
    # D <= rank: orthonormal rows
    assert torch.allclose(ids1[0] @ ids1[0].T, torch.eye(4), atol=1e-5)


def test_training_forward_backward():
    torch.manual_seed(3)
    m = FEAT(SMALL).train()
    x, y = table(2, 24, 3, seed=13), labels(2, 16, "classification")
    out = m(x, y, "classification", 3)
    loss = torch.nn.functional.cross_entropy(out.logits[..., :3].reshape(-1, 3), torch.zeros(16, dtype=torch.long)) + out.recon.pow(2).mean()
    loss.backward()
    grads = [p.grad for p in m.parameters() if p.requires_grad]
    assert all(g is None or torch.isfinite(g).all() for g in grads)
    # every mixer gets a gradient
    for blk in m.blocks:
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in blk.mixer.parameters())


def test_chunked_paths_refuse_grad():
    torch.manual_seed(4)
    m = FEAT(SMALL)
    x, y = table(1, 20, 3, seed=14), labels(1, 20, "regression")
    with pytest.raises(RuntimeError, match="inference"):
        m.encode_context(x, y, "regression", m.column_ids(1, 3, seed=0), row_chunk=4)


def test_empty_context_is_a_clear_error(model):
    x = table(1, 5, 3)
    with pytest.raises(ValueError, match="context has no rows"):
        model(x, torch.zeros(1, 0), "classification", 3)


@pytest.mark.parametrize("task,shape", [("classification", (0, 10)), ("regression", (0,))])
def test_run_with_no_query_rows(model, task, shape):
    x = table(1, 20, 3)[0]
    y = labels(1, 20, task)[0]
    r = run(model, x, y, x[:0], task, 3 if task == "classification" else None, device="cpu")
    out = r.logits if task == "classification" else r.pred
    assert out.shape == shape


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_label_only_last_block_equals_the_full_pass(model, task):
    """The heads-only path (the last block computes the label tokens and the label column's
    state alone) gives the full pass's predictions, and really is pruned."""
    n_ctx, M, D = 40, 9, 6
    x = table(1, n_ctx + M, D, seed=11)
    y = labels(1, n_ctx, task)
    ids = model.column_ids(1, D)
    with torch.no_grad():
        full_h, full_st, _ = model.encode_context(x[:, :n_ctx], y, task, ids)
        cut_h, cut_st, _ = model.encode_context(x[:, :n_ctx], y, task, ids, row_chunk=16, label_only=True)
        full_q, _ = model.decode_queries(x[:, n_ctx:], full_st, ids)
        cut_q, _ = model.decode_queries(x[:, n_ctx:], cut_st, ids, label_only=True)
        full, cut = model.heads(full_q, task, 3), model.heads(cut_q, task, 3)
    assert cut_h.shape == (1, n_ctx, 1, SMALL.d_model) and cut_q.shape == (1, M, 1, SMALL.d_model)
    assert all(s.shape[1] == 1 for s in cut_st[-1]) and all(s.shape[1] == D + 1 for s in full_st[-1])
    assert maxdiff(cut_h[:, :, 0], full_h[:, :, -1]) < TOL
    key = 0 if task == "classification" else 1
    assert maxdiff(cut[key], full[key]) < TOL


def test_map_runs_keeps_order_shares_the_threads_and_restores_them():
    """Runs on worker threads: results in the items' order, one torch thread each on two, an error raised in
    the caller, and the caller's thread count back afterwards, also for threads started later."""
    import threading

    from feat_engine.inference import map_runs

    def later_thread_count() -> int:
        out = []
        t = threading.Thread(target=lambda: out.append(torch.get_num_threads()))
        t.start(), t.join()
        return out[0]

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        seen = map_runs(lambda i: (i, threading.get_ident(), torch.get_num_threads()), range(8), device="cpu")
        assert [i for i, _, _ in seen] == list(range(8))
        assert {n for _, _, n in seen} == {1} and threading.get_ident() not in {t for _, t, _ in seen}
        assert torch.get_num_threads() == 2 and later_thread_count() == 2
        with pytest.raises(ZeroDivisionError):
            map_runs(lambda i: 1 / (i - 3), range(8), device="cpu")
        assert torch.get_num_threads() == 2 and later_thread_count() == 2
        torch.set_num_threads(1)                                  # one thread: the caller runs them in turn
        assert {t for _, t, _ in map_runs(lambda i: (i, threading.get_ident(), 0), range(3))} == {threading.get_ident()}
    finally:
        torch.set_num_threads(before)


def test_step_counter_reports_workers_progress_on_its_own_thread_and_never_back():
    import threading

    from feat_engine.progress import StepCounter
    seen = []
    steps = StepCounter(lambda d, t, m: seen.append((d / t, m, threading.get_ident())), 4)
    cbs = [steps.callback(f"part {i}") for i in range(4)]
    worker = threading.Thread(target=lambda: [cbs[2](k, 2, "block") for k in range(3)] + [steps.flush()])
    worker.start(), worker.join()
    assert seen == []                                             # nothing from a worker's thread, flush included
    steps.flush()
    assert seen == [(6 / 8, "part 2: block", threading.get_ident())]
    cbs[0](1, 2, "block")                                         # an earlier run's late report: not shown
    steps.flush()
    cbs[3](1, 2, "block")                                         # on the counter's own thread: at once
    assert seen[1:] == [(7 / 8, "part 3: block", threading.get_ident())]


def _counter_after_a_fit(monkeypatch, runs: int, fit_s: float):
    """A StepCounter over one classical-model fit and `runs` - 1 engine runs on a clock the test sets (now[0]), its
    shares (seen), after a fit of `fit_s` seconds."""
    import feat_engine.progress as fp
    now, seen = [0.0], []
    monkeypatch.setattr(fp.time, "monotonic", lambda: now[0])
    steps = fp.StepCounter(lambda d, t, m: seen.append(d / t), runs, fits=1)
    fit = steps.callback("member 1/1", fit=True)
    fit(0, 1, "fitting")
    now[0] = fit_s
    fit(1, 1, "fitted")
    return steps, now, seen


def test_step_counter_weighs_fits_and_engine_runs_by_the_seconds_they_took(monkeypatch):
    """A fit of the classical models that took 10 s against engine runs of 1 s: the share done is a share of the
    time, re-estimated when the first engine run ends (a kind not timed yet weighs what the other did)."""
    steps, now, seen = _counter_after_a_fit(monkeypatch, 3, 10.0)
    assert seen == [0.0, pytest.approx(1 / 3)]        # the engine runs not timed yet: 10 s each, as the fit
    run = steps.callback("member 1/1, part 1/2")
    run(0, 2, "encoding")
    now[0] = 11.0
    run(2, 2, "done")
    assert seen[-1] == pytest.approx(11 / 12)        # 10 s of fit and 1 s of engine done, 1 s left
    steps.callback("member 1/1, part 2/2")(1, 2, "encoding")
    assert seen[-1] == pytest.approx(11.5 / 12) and seen == sorted(seen)


def test_step_counter_weighs_a_fit_under_way_and_engine_runs_not_timed_yet_by_what_it_knows(monkeypatch):
    """A classical-model fit that has told under TOLD_SHARE of itself is not weighed by its pace yet; one that tells a
    sixth done after 4 s (its set-up told no share) and a third after 7 s goes at 18 s a whole: 19 s in all; the 4
    engine runs planned after it, not timed yet, take the 6 s expected of them (`engine_s`, from the pace measured so
    far). Once the fit and a run end, what they took replaces both."""
    import feat_engine.progress as fp
    now, seen = [0.0], []
    monkeypatch.setattr(fp.time, "monotonic", lambda: now[0])
    early = fp.StepCounter(lambda d, t, m: seen.append(d / t), 5, fits=1, engine_s=6.0)
    fit = early.callback("member 1/1", fit=True)
    fit(0, 3, "fitting")
    now[0] = 2.0
    fit(0.03, 3, "rounds")                   # under TOLD_SHARE of itself: its length is not told from that yet
    assert seen[-1] < 0.05
    now[0], seen[:] = 0.0, []
    steps = fp.StepCounter(lambda d, t, m: seen.append(d / t), 5, fits=1, engine_s=6.0)
    fit = steps.callback("member 1/1", fit=True)
    fit(0, 3, "fitting")
    now[0] = 4.0
    fit(0.5, 3, "half a tree fit")
    assert seen[-1] == pytest.approx(4 / (24 + 6), abs=1e-6)                 # one share told: the clock over it
    now[0] = 7.0
    fit(1, 3, "1 of 3 tree fits")
    assert seen[-1] == pytest.approx(7 / (19 + 6), abs=1e-6)
    now[0] = 20.0
    fit(3, 3, "fitted")
    assert seen[-1] == pytest.approx(20 / 26, abs=1e-6)
    run = steps.callback("member 1/1, part 1/4")
    run(0, 1, "encoding")
    now[0] = 21.0
    run(1, 1, "done")                                  # 1 s a run, not 1.5: 21 s of 20 + 4 x 1
    assert seen[-1] == pytest.approx(21 / 24, abs=1e-6)


def test_a_pace_is_the_seconds_per_unit_of_the_latest_runs():
    """`Pace`: nothing before a measure; then the runs' seconds over their units, the earlier ones halved at each."""
    from feat_engine.progress import Pace
    pace = Pace()
    assert pace.seconds(10) is None
    pace.add(2.0, 100)
    assert pace.seconds(50) == pytest.approx(1.0)
    pace.add(1.0, 100)                                  # (2 / 2 + 1) s over (100 / 2 + 100) units
    assert pace.seconds(150) == pytest.approx(2.0)


def test_the_engines_pace_carries_over_between_runs_read_one_at_a_time_and_side_by_side(monkeypatch, model):
    """`engine_seconds`: the pace of reads made with as many runs at once, else of those one at a time, carried over
    by `AT_ONCE`; `warm_up` (a checkpoint's load calls it) times both, the first paces of a process."""
    from collections import defaultdict

    import feat_engine.progress as fp
    from feat_engine.inference import runs_at_once, warm_up
    monkeypatch.setattr(fp, "ENGINE_PACE", defaultdict(fp.Pace))
    monkeypatch.setattr(fp, "AT_ONCE", {1: 1.0, 2: 0.7})
    assert fp.engine_seconds(100, 2) is None
    fp.ENGINE_PACE[1].add(1.0, 100)
    assert fp.engine_seconds(100, 1) == pytest.approx(1.0) and fp.engine_seconds(100, 2) == pytest.approx(0.7)
    fp.ENGINE_PACE[2].add(0.5, 100)
    assert fp.engine_seconds(100, 2) == pytest.approx(0.5) and fp.engine_seconds(100, 1) == pytest.approx(1.0)
    monkeypatch.setattr("feat_engine.inference.AT_ONCE", at_once := {1: 1.0})
    monkeypatch.setattr("feat_engine.inference.ENGINE_PACE", paces := defaultdict(fp.Pace))
    warm_up(model, "cpu")
    assert set(at_once) == set(paces) == {1, runs_at_once(2, "cpu")} and all(v > 0 for v in at_once.values())
    assert all(p.seconds(1e6) > 0 for p in paces.values())


def test_step_counter_plans_the_runs_expected_as_things_stand(monkeypatch):
    """A fit of 2 s and 4 planned runs of 1 s: expected to be 1 (never fewer than made, and put back), then 2 of
    them; after those two the stream is done."""
    steps, now, seen = _counter_after_a_fit(monkeypatch, 5, 2.0)
    steps.expect(1)
    assert steps.n_runs == 2
    steps.expect(3)
    assert steps.n_runs == 4
    steps.expect(2)
    for i in range(2):
        run = steps.callback(f"part {i + 1}/2")
        run(0, 1, "encoding")
        now[0] += 1.0
        run(1, 1, "done")
    assert seen[-1] == pytest.approx(1.0) and seen == sorted(seen)


def test_step_counter_shares_the_clock_among_runs_that_ran_beside_each_other(monkeypatch):
    """Engine runs two at a time (`map_runs`' workers), each 2 s long: each has taken 1 s of the clock, so after a
    2-s fit and the first two runs the share done is 4 s of 6, not the 6 of 10 that their own lengths would give."""
    steps, now, seen = _counter_after_a_fit(monkeypatch, 5, 2.0)
    first, second = steps.callback("part 1/4"), steps.callback("part 2/4")
    first(0, 1, "encoding")
    second(0, 1, "encoding")
    now[0] = 4.0
    first(1, 1, "done")
    second(1, 1, "done")
    assert seen[-1] == pytest.approx(4 / 6)


@pytest.mark.parametrize("bf16", [False, True])
def test_a_query_alone_gets_the_same_numbers_as_in_a_batch(model, bf16):
    """`run` decodes queries in blocks padded to QUERY_BLOCK rows, so a row's output does not move with the number
    of rows predicted with it, even by rounding: without the padding a row alone differed by 2.4e-7 (fp32) and
    2.9e-3 (bf16) in its logits from the same row in this batch of 100."""
    from feat_engine.inference import QUERY_BLOCK
    rng = np.random.default_rng(7)
    x = rng.standard_normal((300, 6)).astype(np.float32)
    y = (x[:200, 0] > 0).astype(np.float32)
    cfg = InferenceConfig(autocast_bf16=bf16, query_chunk=2 * QUERY_BLOCK)
    full = run(model, x[:200], y, x[200:], "classification", 2, cfg=cfg, device="cpu").logits[:, :2]
    alone = np.concatenate([run(model, x[:200], y, x[200 + i:201 + i], "classification", 2, cfg=cfg,
                                device="cpu").logits[:, :2] for i in range(0, 100, 33)])
    np.testing.assert_allclose(alone, full[::33], rtol=0, atol=1e-7)
    assert full.shape == (100, 2) and np.isfinite(full).all()


@pytest.mark.parametrize("bf16", [False, True])
def test_tables_read_as_one_batch_equal_each_table_alone(model, bf16):
    """`run_tables` encodes B contexts of one shape as a batch and decodes each table's queries beside the others'
    (shorter ones padded): each table gets its own `run`'s numbers, and the same bits whatever the other tables
    hold or ask; its states go to the cache under a key that names the batch size."""
    from feat_engine.inference import StateCache, run_tables
    rng = np.random.default_rng(11)
    ctxs = [rng.standard_normal((96, 5)).astype(np.float32) for _ in range(3)]
    ys = [(c[:, 0] + c[:, 1] > 0).astype(np.float32) for c in ctxs]
    qs = [rng.standard_normal((n, 5)).astype(np.float32) for n in (70, 3, 0)]
    cfg = InferenceConfig(autocast_bf16=bf16, query_chunk=64)
    res = run_tables(model, ctxs, ys, qs, "classification", 2, cfg=cfg, device="cpu")
    for r, c, y, q in zip(res, ctxs, ys, qs):
        alone = run(model, c, y, q, "classification", 2, cfg=cfg, device="cpu").logits
        assert r.logits.shape == alone.shape == (len(q), 10)
        np.testing.assert_allclose(r.logits[:, :2], alone[:, :2], rtol=0, atol=2e-2 if bf16 else 1e-5)
    others = [ctxs[0], rng.standard_normal((96, 5)).astype(np.float32), ctxs[2]]
    longer = rng.standard_normal((200, 5)).astype(np.float32)     # a partner asking more rows pads table 0 further
    swapped = run_tables(model, others, [ys[0], ys[2], ys[2]], [qs[0], qs[1][:1], longer], "classification", 2,
                         cfg=cfg, device="cpu")
    np.testing.assert_array_equal(swapped[0].logits, res[0].logits)
    assert not np.allclose(swapped[1].logits[:, :2], res[1].logits[:1, :2])
    cache = StateCache()
    cached = [run_tables(model, ctxs, ys, qs, "regression", cfg=cfg, device="cpu", cache=cache) for _ in range(2)]
    assert len(cache) == 3
    for a, b in zip(*cached):
        np.testing.assert_array_equal(a.pred, b.pred)
    run(model, ctxs[0], ys[0], qs[0], "regression", cfg=cfg, device="cpu", cache=cache)
    assert len(cache) == 4                                  # alone, the same context rounds differently: its own key
    with pytest.raises(ValueError, match="as many query rows in every table"):
        run_tables(model, ctxs, ys, qs, "classification", 2, cfg=cfg, device="cpu", want_attention=True)
