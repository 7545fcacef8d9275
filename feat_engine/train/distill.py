"""A narrower FEAT taught by the shipped one (issue 66's student): its start by pruning, and the distillation loss.

The student keeps the teacher's width d, its embeddings, norms, heads and Conv-GLA blocks, and is narrower inside
each block: fewer feature-attention heads, a narrower FFN and fewer AFBM heads. `prune` starts it from the
teacher's weights, whole heads and FFN units at a time, the ones with the largest weights: a kept attention or
AFBM head computes what it computed in the teacher, so training begins from the teacher's function minus the
dropped parts rather than from noise. `distill_loss` then pulls its outputs to the teacher's on prior tables:

    L_distill = KL(p_teacher || p_student)
              + LOGIT_WEIGHT (log p_student - log p_teacher)^2   on classification queries (centred, from -10)
              + (pred_student - pred_teacher)^2  on regression queries (standardised targets)
              + (recon_student - recon_teacher)^2  on the masked cells

KL at temperature 1 weighs a query's error by its probability mass: among the many queries a teacher gives a rare
class 1-3%, the student's order hardly counts, and ROC-AUC is that order. On census (6% positives) a student taught
by KL alone ranked the teacher's lower half of queries with Spearman 0.56 and scored 0.76 ROC-AUC against 0.85.
The squared error on centred log-probabilities (Ba and Caruana's logit matching) weighs every query alike;
clipped at log p = -10 so that it does not chase what no order depends on.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.linalg import vector_norm as vnorm

from ..config import ModelConfig
from ..model import FEAT, FEATOutput
from ..model.afbm import AFBM
from ..model.feature_attn import FeatureAttention

LOGIT_WEIGHT = 0.25      # the logit term ran 5-10 times the KL on a step-1,700 student's batches
LOG_P_FLOOR = -10.0


def _top(scores: Tensor, k: int) -> Tensor:
    """Indices of the k largest scores, in ascending index order."""
    return scores.topk(k).indices.sort().values


def _channels(heads: Tensor, width: int) -> Tensor:
    """Channel indices of whole heads of `width` channels each."""
    return (heads[:, None] * width + torch.arange(width)).flatten()


@torch.no_grad()
def _prune_attention(t: FeatureAttention, s: FeatureAttention) -> None:
    hd, e = t.inner // t.heads, t.inner
    if s.inner // s.heads != hd:
        raise ValueError(f"the student's attention head dim {s.inner // s.heads} differs from the teacher's {hd}")
    w_v = t.qkv.weight[2 * e:].view(t.heads, hd, -1)
    w_o = t.proj.weight.view(-1, t.heads, hd)
    keep = _channels(_top(vnorm(w_v, dim=(1, 2)) * vnorm(w_o, dim=(0, 2)), s.heads), hd)
    rows = torch.cat([keep, keep + e, keep + 2 * e])
    s.qkv.weight.copy_(t.qkv.weight[rows])
    s.qkv.bias.copy_(t.qkv.bias[rows])
    s.proj.weight.copy_(t.proj.weight[:, keep])
    s.proj.bias.copy_(t.proj.bias)
    up, down = t.ffn[0], t.ffn[2]
    units = _top(up.weight.norm(dim=1) * down.weight.norm(dim=0), s.ffn[0].out_features)
    s.ffn[0].weight.copy_(up.weight[units])
    s.ffn[0].bias.copy_(up.bias[units])
    s.ffn[2].weight.copy_(down.weight[:, units])
    s.ffn[2].bias.copy_(down.bias)
    for name in ("norm1", "norm2"):
        getattr(s, name).load_state_dict(getattr(t, name).state_dict())


@torch.no_grad()
def _prune_afbm(t: AFBM, s: AFBM) -> None:
    """Keep whole heads, the slow and the fast halves of the kept heads taken from the teacher's slow and fast
    heads (by horizon), each half by weight."""
    p = t.head_dim
    if s.head_dim != p:
        raise ValueError(f"the student's AFBM head dim {s.head_dim} differs from the teacher's {p}")
    w_x = vnorm(t.in_proj.weight[t.d_inner:2 * t.d_inner].view(t.heads, p, -1), dim=(1, 2))
    w_f = vnorm(t.fuse.weight.view(-1, 2, t.heads, p), dim=(0, 1, 3))
    order = t.horizons().argsort(descending=True)
    slow, fast = order[:t.heads // 2], order[t.heads // 2:]
    n_slow = s.heads // 2
    score = w_x * w_f
    heads = torch.cat([slow[_top(score[slow], n_slow)], fast[_top(score[fast], s.heads - n_slow)]]).sort().values
    ch = _channels(heads, p)
    di, n = t.d_inner, t.d_state
    rows = torch.cat([ch, ch + di, torch.arange(2 * di, 2 * di + 2 * n), 2 * di + 2 * n + heads])
    s.in_proj.weight.copy_(t.in_proj.weight[rows])
    s.in_proj.bias.copy_(t.in_proj.bias[rows])
    for name in ("dt_bias", "A_log", "D"):
        getattr(s, name).copy_(getattr(t, name)[heads])
    both = torch.cat([ch, ch + di])
    s.norm.weight.copy_(t.norm.weight[both])
    s.fuse.weight.copy_(t.fuse.weight[:, both])
    s.fuse.bias.copy_(t.fuse.bias)


@torch.no_grad()
def prune(teacher: FEAT, cfg: ModelConfig) -> FEAT:
    """A student of config `cfg` started from `teacher`'s weights (see the module docstring). `cfg` may narrow
    `attn_heads`/`attn_dim` (same head dim), `ffn_mult` and `ssm_heads`/`expand` (same head dim); the rest
    must be the teacher's."""
    tc = teacher.cfg
    same = ("d_model", "n_blocks", "schedule", "d_state", "chunk_size", "conv_kernel", "gla_heads", "max_classes",
            "d_hidden", "dfe_rank")
    diff = [k for k in same if getattr(cfg, k) != getattr(tc, k)]
    if diff:
        raise ValueError(f"a pruned student keeps the teacher's {', '.join(diff)}")
    student = FEAT(cfg)
    student.load_state_dict({k: v for k, v in teacher.state_dict().items() if ".blocks." not in f".{k}"}, strict=False)
    for tb, sb in zip(teacher.blocks, student.blocks):
        _prune_attention(tb.rows, sb.rows)
        sb.norm.load_state_dict(tb.norm.state_dict())
        if isinstance(tb.mixer, AFBM):
            _prune_afbm(tb.mixer, sb.mixer)
        else:
            sb.mixer.load_state_dict(tb.mixer.state_dict())
    return student


def distill_loss(student: FEATOutput, teacher: FEATOutput, task: str | None,
                 recon_mask: Tensor) -> tuple[Tensor, dict[str, float]]:
    """The student's distance to the teacher's outputs (module docstring) and its terms."""
    total = student.recon.new_zeros(())
    terms: dict[str, float] = {}
    if task == "classification":
        valid = torch.isfinite(teacher.logits)
        log_t, log_s = torch.log_softmax(teacher.logits.float(), -1), torch.log_softmax(student.logits.float(), -1)
        kl = (log_t.exp() * (log_t - log_s).masked_fill(~valid, 0)).sum(-1).mean()
        gap = (log_s.clamp_min(LOG_P_FLOOR) - log_t.clamp_min(LOG_P_FLOOR)).masked_fill(~valid, 0)
        gap = (gap - gap.sum(-1, keepdim=True) / valid.sum(-1, keepdim=True)).masked_fill(~valid, 0)
        logit = (gap ** 2).sum() / valid.sum()
        terms["kd_cls"], terms["kd_logit"] = kl.item(), logit.item()
        total = total + kl + LOGIT_WEIGHT * logit
    elif task == "regression":
        loss = F.mse_loss(student.pred.float(), teacher.pred.float())
        terms["kd_reg"] = loss.item()
        total = total + loss
    m = recon_mask & torch.isfinite(teacher.recon)
    if m.any():
        loss = F.mse_loss(student.recon[m].float(), teacher.recon[m].float())
        terms["kd_recon"] = loss.item()
        total = total + loss
    return total, terms
