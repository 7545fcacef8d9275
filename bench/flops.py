"""The compute floor of the forward pass (issue 20): the model's matmul FLOP per token, counted on the
model the config builds, and the machine's measured matmul throughput.

    python bench/flops.py                 # FLOP per token at D = 10, fp32 (and bf16 where native) GFLOP/s

`flop_per_token` runs `feat_engine.inference.run` under `torch.utils.flop_counter.FlopCounterMode` at two
row counts and takes the slope, so fixed costs (the S-DFE draw, the label head on a fixed number of query
chunks) drop out. It counts the matrix products (mm, bmm, addmm, baddbmm, convolutions, SDPA), 2 FLOP per
multiply-add: the work a matmul-bound floor assumes. Elementwise work (decays, gates, norms, casts) is not
counted, since no matmul throughput bounds it. `bench/scaling.py` divides the count by its measured times.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from feat_engine import FEAT, ModelConfig
from feat_engine.inference import native_bf16, run


def _count(model: FEAT, n: int, d: int, seed: int) -> int:
    """Matmul FLOP of one classification run on n rows (half context, half query) of d features."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    n_ctx = n // 2
    y = (x[:n_ctx, 0] > 0).astype(np.float32)
    with FlopCounterMode(display=False) as counter:
        run(model, x[:n_ctx], y, x[n_ctx:], "classification", 2, device="cpu")
    return counter.get_total_flops()


def flop_per_token(cfg: ModelConfig = ModelConfig(), d: int = 10, n: int = 2048, seed: int = 0) -> float:
    """Matmul FLOP per cell token (rows x (d + 1) tokens, the label token included) of the forward pass
    of the model `cfg` builds: the slope between n and 2n rows."""
    torch.manual_seed(seed)
    model = FEAT(cfg).eval()
    extra = _count(model, 2 * n, d, seed) - _count(model, n, d, seed)
    return extra / (n * (d + 1))


def matmul_gflops(dtype: torch.dtype = torch.float32, m: int = 4096, k: int = 1024, n: int = 1024,
                  seconds: float = 2.0, device: str = "cpu") -> float:
    """Measured GFLOP/s of an (m, k) x (k, n) matmul in `dtype` on this process's CPU threads (or a GPU):
    the best of repeated calls over about `seconds`."""
    a, b = torch.randn(m, k, dtype=dtype, device=device), torch.randn(k, n, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if a.is_cuda else (lambda: None)
    a @ b                                                   # warm-up
    sync()
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - t0)
    return 2 * m * k * n / best / 1e9


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=10, help="features (the scaling benchmark's D)")
    args = p.parse_args(argv)
    print(f"matmul FLOP per token (D = {args.d}): {flop_per_token(d=args.d) / 1e6:.3f} M")
    print(f"fp32 matmul: {matmul_gflops():.1f} GFLOP/s on {torch.get_num_threads()} threads")
    if native_bf16():
        print(f"bf16 matmul: {matmul_gflops(torch.bfloat16):.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
