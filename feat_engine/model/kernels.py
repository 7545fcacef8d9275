"""Sample-axis scan kernels, picked at run time.

The pure-PyTorch `ssd_scan` runs everywhere. When the tensors are on CUDA and the
optional `mamba_ssm` package (extra `gpu`) imports, the same parameters go through
its fused `mamba_chunk_scan_combined` instead. The import is lazy, so the CPU path
never imports triton.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import sys

import torch
from torch import Tensor

from .ssd import head_major, ssd_scan

KERNEL = "mamba_ssm.ops.triton.ssd_combined"


@functools.lru_cache(maxsize=1)
def _mamba_chunk_scan():
    """mamba-ssm's `mamba_chunk_scan_combined`, or None (not installed, or no triton: PyTorch's scan then).

    The package's `__init__` imports its compiled CUDA extension, which an install without the CUDA build
    (`MAMBA_SKIP_CUDA_BUILD=TRUE`) lacks, while the Triton kernel needs none of it. Where that import fails,
    the package is entered without running its `__init__` (docs/decisions/0003-ssd-scan.md)."""
    try:
        return importlib.import_module(KERNEL).mamba_chunk_scan_combined
    except ImportError:
        if "mamba_ssm" in sys.modules:                    # the package imported, the kernel did not (no triton)
            return None
    except Exception:
        return None
    spec = importlib.util.find_spec("mamba_ssm")         # finds the package; runs nothing
    if spec is None or spec.submodule_search_locations is None:
        return None
    sys.modules["mamba_ssm"] = importlib.util.module_from_spec(spec)
    try:
        return importlib.import_module(KERNEL).mamba_chunk_scan_combined
    except Exception:
        for name in [m for m in sys.modules if m == "mamba_ssm" or m.startswith("mamba_ssm.")]:
            del sys.modules[name]
        return None


def cuda_kernel_available() -> bool:
    """True when CUDA is present and mamba-ssm's SSD kernel imports."""
    return torch.cuda.is_available() and _mamba_chunk_scan() is not None


def selective_scan(
    x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk_size: int,
    initial_state: Tensor | None = None, backend: str = "auto",
) -> tuple[Tensor, Tensor]:
    """Mamba-2 scan with discretisation: H_t = exp(dt_t A) H_{t-1} + dt_t x_t B_t^T, y_t = H_t C_t.

    Args:
        x: (b, L, h, p); dt: (b, L, h) positive step sizes; A: (h,) negative decay rates;
        B, C: (b, L, n); initial_state: (b, h, p, n) or None.
        backend: 'auto' (mamba-ssm on CUDA when available), 'torch' or 'mamba'.
    Returns:
        y (b, L, h, p) fp32 and the final state (b, h, p, n) fp32.
    """
    use_mamba = backend == "mamba" or (backend == "auto" and x.is_cuda and cuda_kernel_available())
    if use_mamba:
        kernel = _mamba_chunk_scan()
        if kernel is None:
            raise RuntimeError("backend='mamba' needs CUDA and the mamba-ssm package (pip install '.[gpu]')")
        y, state = kernel(
            x.contiguous(), dt.float().contiguous(), A.float(), B.unsqueeze(2).contiguous(),
            C.unsqueeze(2).contiguous(), chunk_size,
            initial_states=None if initial_state is None else initial_state.contiguous(),
            return_final_states=True,
        )
        return y.float(), state.float()
    dt = dt.float()
    return ssd_scan(head_major(x, dt), dt * A.float(), B, C, chunk_size, initial_state)
