"""Linear layers whose fp32 product takes oneDNN on an x86-64 CPU at inference.

PyTorch sends an fp32 linear layer on such a CPU to MKL, which keeps to its AVX2 kernels on AMD's AVX-512 CPUs
(measured on a Zen 5 EPYC). oneDNN, which PyTorch ships beside it (`torch.ops.mkldnn._linear_pointwise`, the op
torch.compile emits for a CPU linear layer), runs AVX-512 there: 1.6-2.2 times as fast on the engine's shapes, with
the same rounding; held to AVX2 the two tie (docs/decisions/0041-cpu-scan-kernel.md). oneDNN gives a row the same
bits in any call of two rows or more (one row alone takes another kernel), so it takes every fp32 product, however
few its rows: `run`'s query blocks of 64 rows keep a query's numbers to the bit whatever the other queries. bf16
autocast already takes oneDNN, and gradients (training) keep `F.linear`.
"""
from __future__ import annotations

import functools
import platform

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import cpu_scan


@functools.lru_cache(maxsize=1)
def _onednn() -> bool:
    """Whether this is an x86-64 CPU (elsewhere PyTorch's own BLAS, Accelerate on a Mac, is the one to keep) and the
    torch build has oneDNN's linear op."""
    return (platform.machine().lower() in ("x86_64", "amd64") and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`F.linear(x, weight, bias)`; through oneDNN for fp32 on a CPU without gradients or autocast (tests/test_model.py
    compares the two), unless FEAT_CPU_KERNELS=0 (`cpu_scan.ENABLED`)."""
    if (cpu_scan.ENABLED and x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32
            and not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu") and _onednn()):
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """`nn.Linear` (the same parameters and state-dict keys) whose forward is `linear`."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)
