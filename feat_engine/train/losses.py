"""The pretraining loss, paper Eq. (dynamic_loss).

    L = I_cls mean_{i in B_cls} CE_i + I_reg mean_{i in B_reg} Huber_i + I_mask mean_{(i,j) in M} Huber_ij

Each term is averaged over its own valid set and switched off when that set is empty.
Boolean masks select the valid entries before any arithmetic, so NaN or Inf targets
never reach a gradient.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ..model import FEATOutput
from ..prior.batches import Batch


def batch_tensors(b: Batch, device: torch.device) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor, Tensor, Tensor]:
    """A prior batch as the tensors the model and `feat_loss` read, on `device`:
    x, context labels, query labels (None without a task), x_true, recon mask, n_classes."""
    on = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    y_ctx = None if b.task is None else on(b.y[:, :b.n_ctx])
    y_q = None if b.task is None else on(b.y[:, b.n_ctx:])
    return on(b.x), y_ctx, y_q, on(b.x_true), on(b.recon), on(b.n_classes)


def feat_loss(
    out: FEATOutput, y_query: Tensor | None, task: str | None, x_true: Tensor, recon_mask: Tensor, delta: float = 1.0,
) -> tuple[Tensor, dict[str, float]]:
    """Total loss and its terms. y_query: (B, M) targets of the query rows; x_true/recon_mask: (B, N, D)."""
    total = out.recon.new_zeros(())
    terms: dict[str, float] = {}
    if task is not None and y_query is not None:
        valid = torch.isfinite(y_query)
        if valid.any():
            if task == "classification":
                loss = F.cross_entropy(out.logits[valid], y_query[valid].long())
                terms["cls"] = loss.item()
            else:
                loss = F.huber_loss(out.pred[valid], y_query[valid], delta=delta)
                terms["reg"] = loss.item()
            total = total + loss
    m = recon_mask & torch.isfinite(x_true)
    if m.any():
        loss = F.huber_loss(out.recon[m], x_true[m], delta=delta)
        terms["recon"] = loss.item()
        total = total + loss
    return total, terms
