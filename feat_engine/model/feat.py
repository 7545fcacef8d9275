"""The FEAT model: cell embedding -> L dual-axis blocks -> task heads.

Tensor layout throughout: (B, N, C, E) = tables, rows, columns (D features then the
label token), embedding. Rows are split into context rows (first N_ctx, labelled) and
query rows. The context is encoded once (`encode_context`), which leaves a small
per-layer state for every column; query rows are then decoded in any number of
chunks (`decode_queries`) by reading those states. `forward` does both at once.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..config import ModelConfig
from .afbm import AFBM
from .conv_gla import ConvGLA
from .embedding import CellEmbedding, LabelEmbedding, sample_column_ids
from .feature_attn import FeatureAttention
from .heads import classification_head, regression_head

INFERENCE_SEED = 0


@dataclass
class FEATOutput:
    """What the heads produce. Query rows only for the task heads; every row for recon."""

    logits: Tensor | None          # (B, M, max_classes); classes >= n_classes are -inf
    pred: Tensor | None            # (B, M) standardised regression prediction
    recon: Tensor                  # (B, N, D) reconstructed features (context rows, then queries)
    attention: list[Tensor] | None = None   # per block (B, heads, C, C), averaged over rows


class Block(nn.Module):
    """One dual-axis block: feature-axis MHSA+FFN, then a sample-axis mixer with pre-LN and residual."""

    def __init__(self, cfg: ModelConfig, mixer: str):
        super().__init__()
        self.rows = FeatureAttention(cfg)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.mixer = AFBM(cfg) if mixer == "afbm" else ConvGLA(cfg)

    def feature_axis(self, x: Tensor, row_chunk: int | None, return_attention: bool,
                     label_only: bool = False) -> tuple[Tensor, Tensor | None]:
        """Feature attention over row chunks; returns x (only its label token, (B, N, 1, E), with
        `label_only`) and the row-summed attention (B, heads, C, C)."""
        if row_chunk is None or x.shape[1] <= row_chunk:
            y, w = self.rows(x, return_attention, label_only)
            return y, (None if w is None else w.float().sum(1))
        if torch.is_grad_enabled():
            raise RuntimeError("row-chunked feature attention is for inference (it updates in place)")
        out = x.new_empty(*x.shape[:2], 1, x.shape[3]) if label_only else x
        wsum = None
        for i in range(0, x.shape[1], row_chunk):
            y, w = self.rows(x[:, i:i + row_chunk], return_attention, label_only)
            out[:, i:i + row_chunk] = y
            if w is not None:
                wsum = w.float().sum(1) if wsum is None else wsum + w.float().sum(1)
        return out, wsum

    def context(self, x: Tensor, col_chunk: int | None) -> tuple[Tensor, Any]:
        """Sample-axis mixer over the context rows of each column, `col_chunk` columns at a time."""
        B, N, C, E = x.shape
        if col_chunk is None or col_chunk >= C:
            u = self.norm(x).permute(0, 2, 1, 3).reshape(-1, N, E)
            y, st = self.mixer.context(u)
            return x + y.view(B, C, N, E).permute(0, 2, 1, 3).to(x.dtype), tuple(s.view(B, C, *s.shape[1:]) for s in st)
        if torch.is_grad_enabled():
            raise RuntimeError("column-chunked mixing is for inference (it updates in place)")
        states = []
        for j in range(0, C, col_chunk):
            u = self.norm(x[:, :, j:j + col_chunk]).permute(0, 2, 1, 3).reshape(-1, N, E)
            y, st = self.mixer.context(u)
            x[:, :, j:j + col_chunk] += y.view(B, -1, N, E).permute(0, 2, 1, 3).to(x.dtype)
            states.append(tuple(s.view(B, -1, *s.shape[1:]) for s in st))
        return x, tuple(torch.cat([s[i] for s in states], 1) for i in range(2))

    def query(self, x: Tensor, state: Any) -> Tensor:
        B, M, C, E = x.shape
        u = self.norm(x).permute(0, 2, 1, 3).reshape(-1, M, E)
        y = self.mixer.query(u, tuple(s.flatten(0, 1) for s in state))
        return x + y.view(B, C, M, E).permute(0, 2, 1, 3).to(x.dtype)


class FEAT(nn.Module):
    """The FEAT network."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.cells = CellEmbedding(cfg)
        self.label = LabelEmbedding(cfg)
        self.blocks = nn.ModuleList(Block(cfg, cfg.mixer(i)) for i in range(cfg.n_blocks))
        self.final_norm = nn.LayerNorm(cfg.d_model)
        self.cls_head = classification_head(cfg)
        self.reg_head = regression_head(cfg)
        self.imp_head = regression_head(cfg)

    # -- parts -------------------------------------------------------------------------
    def column_ids(self, n_tables: int, n_features: int, seed: int | None = None) -> Tensor:
        """S-DFE draw: fresh in training, seeded (reproducible) otherwise."""
        gen = None
        if seed is not None or not self.training:
            gen = torch.Generator().manual_seed(INFERENCE_SEED if seed is None else seed)
        return sample_column_ids(n_tables, n_features, self.cfg.dfe_rank, gen).to(self.cells.mask_token.device)

    def embed(self, x: Tensor, y: Tensor | None, task: str | None, column_ids: Tensor) -> Tensor:
        """(B, N, D) cells (+ labels for the first y.shape[1] rows) -> (B, N, D+1, E)."""
        B, N, _ = x.shape
        cells = self.cells(x, column_ids)
        label = self.label(y, task, N, B).to(cells.dtype)
        return torch.cat([cells, label.unsqueeze(2)], dim=2)

    def encode_context(
        self, x: Tensor, y: Tensor | None, task: str | None, column_ids: Tensor,
        row_chunk: int | None = None, col_chunk: int | None = None, return_attention: bool = False,
        on_block: Callable[[int], None] | None = None, label_only: bool = False,
    ) -> tuple[Tensor, list[Any], list[Tensor] | None]:
        """Run the context rows through every block (calling `on_block(i)` after block i). Returns
        their final tokens, per-block states and (optionally) per-block attention summed over rows.

        `label_only` is for the task heads alone, which read the query rows' final label tokens: those
        read only the label column's state of the last block, so the last block computes the context's
        label tokens (from every token's keys and values) and that one state; the tokens returned are
        then the label tokens, (B, N, 1, E). The same numbers as the full pass (tests/test_model.py)."""
        if x.shape[1] == 0:
            raise ValueError("the context has no rows: at least one context row is needed")
        if row_chunk is None or x.shape[1] <= row_chunk or torch.is_grad_enabled():
            h = self.embed(x, y, task, column_ids)
        else:   # embed row chunks into one preallocated tensor: no full-size temporaries
            h = None
            for i in range(0, x.shape[1], row_chunk):
                part = self.embed(x[:, i:i + row_chunk], None if y is None else y[:, i:i + row_chunk], task, column_ids)
                if h is None:
                    h = part.new_empty(x.shape[0], x.shape[1], *part.shape[2:])
                h[:, i:i + row_chunk] = part
        states, attn = [], ([] if return_attention else None)
        last = len(self.blocks) - 1
        for i, blk in enumerate(self.blocks):
            h, w = blk.feature_axis(h, row_chunk, return_attention, label_only and i == last)
            h, st = blk.context(h, col_chunk)
            states.append(st)
            if attn is not None:
                attn.append(w)
            if on_block is not None:
                on_block(i)
        return h, states, attn

    def column_tokens(self, x: Tensor, column_ids: Tensor, depths: tuple[int, ...]) -> list[Tensor]:
        """Unlabelled rows (B, N, D), every one context, through the blocks: the feature tokens (B, N, D, E)
        at each of `depths` (0 = the cell embedding, b = after block b), in that order."""
        h = self.embed(x, None, None, column_ids)
        out = [h[:, :, :-1]] if 0 in depths else []
        for b, blk in enumerate(self.blocks[:max(depths)], 1):
            h, _ = blk.feature_axis(h, None, False)
            h, _ = blk.context(h, None)
            if b in depths:
                out.append(h[:, :, :-1])
        return out

    def decode_queries(
        self, x: Tensor, states: list[Any], column_ids: Tensor, return_attention: bool = False,
        label_only: bool = False,
    ) -> tuple[Tensor, list[Tensor] | None]:
        """Query rows (B, M, D) through every block, reading the context states only; with
        `label_only` (states from `encode_context(label_only=True)`) the last block computes the
        label tokens alone, (B, M, 1, E)."""
        h = self.embed(x, None, None, column_ids)
        attn = [] if return_attention else None
        last = len(self.blocks) - 1
        for i, (blk, st) in enumerate(zip(self.blocks, states)):
            h, w = blk.feature_axis(h, None, return_attention, label_only and i == last)
            h = blk.query(h, st)
            if attn is not None:
                attn.append(w)
        return h, attn

    def heads(self, h_query: Tensor, task: str | None, n_classes: Tensor | int | None = None) -> tuple[Tensor | None, Tensor | None]:
        """Task heads on the label tokens of query rows."""
        z = self.final_norm(h_query[:, :, -1])
        if task == "classification":
            logits = self.cls_head(z).float()
            if n_classes is not None:
                k = torch.arange(logits.shape[-1], device=logits.device)
                n = torch.as_tensor(n_classes, device=logits.device).view(-1, 1, 1)
                logits = logits.masked_fill(k >= n, float("-inf"))
            return logits, None
        if task == "regression":
            return None, self.reg_head(z).squeeze(-1).float()
        return None, None

    def reconstruct(self, h: Tensor) -> Tensor:
        """Imputation head on every feature token: (B, N, D+1, E) -> (B, N, D)."""
        return self.imp_head(self.final_norm(h[:, :, :-1])).squeeze(-1).float()

    # -- the whole model ---------------------------------------------------------------
    def forward(
        self, x: Tensor, y_ctx: Tensor | None, task: str | None, n_classes: Tensor | int | None = None,
        column_ids: Tensor | None = None, return_attention: bool = False,
    ) -> FEATOutput:
        """x: (B, N, D) with NaN for missing; the first N_ctx = y_ctx.shape[1] rows are context.

        With y_ctx None, every row is context and unlabelled (imputation).
        """
        B, N, D = x.shape
        n_ctx = N if y_ctx is None else y_ctx.shape[1]
        if column_ids is None:
            column_ids = self.column_ids(B, D)
        h_ctx, states, attn_c = self.encode_context(x[:, :n_ctx], y_ctx, task, column_ids, return_attention=return_attention)
        logits = pred = None
        h = h_ctx
        attn = attn_c
        if n_ctx < N:
            h_q, attn_q = self.decode_queries(x[:, n_ctx:], states, column_ids, return_attention)
            logits, pred = self.heads(h_q, task, n_classes)
            h = torch.cat([h_ctx, h_q], 1)
            if return_attention:
                attn = [a + b for a, b in zip(attn_c, attn_q)]
        if attn is not None:
            attn = [a / N for a in attn]
        return FEATOutput(logits, pred, self.reconstruct(h), attn)
