"""Sample-axis scan kernels, picked at run time.

The pure-PyTorch `ssd_scan` runs everywhere. When the tensors are on CUDA and the
optional `mamba_ssm` package (extra `gpu`) imports, the same parameters go through
its fused `mamba_chunk_scan_combined` instead. The import is lazy, so the CPU path
never imports triton.
"""
from __future__ import annotations

import functools

import torch
from torch import Tensor

from .ssd import head_major, ssd_scan


@functools.lru_cache(maxsize=1)
def _mamba_chunk_scan():
    try:
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except Exception:  # not installed, or no triton/CUDA: fall back to PyTorch
        return None
    return mamba_chunk_scan_combined


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
