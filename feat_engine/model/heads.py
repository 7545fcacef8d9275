"""Task heads (paper section 4.4).

    classification  y^ = W_c2 GELU(W_c1 z_y)                 (logits over max_classes)
    regression      y^ = W_r2 GELU(LayerNorm(W_r1 z_y))
    imputation      x^ = W_f2 GELU(LayerNorm(W_f1 z_x))       (every feature token)
"""
from __future__ import annotations

from torch import nn

from ..config import ModelConfig
from .linear import Linear


def classification_head(cfg: ModelConfig) -> nn.Sequential:
    return nn.Sequential(Linear(cfg.d_model, cfg.d_hidden), nn.GELU(), Linear(cfg.d_hidden, cfg.max_classes))


def regression_head(cfg: ModelConfig) -> nn.Sequential:
    """Also the imputation head's shape (one scalar per token)."""
    return nn.Sequential(
        Linear(cfg.d_model, cfg.d_hidden), nn.LayerNorm(cfg.d_hidden), nn.GELU(), Linear(cfg.d_hidden, 1)
    )
