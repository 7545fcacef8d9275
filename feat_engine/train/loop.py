"""The pretraining loop: schedule-free AdamW with warmup and clipping, optional bf16
autocast, checkpoints every few minutes that resume exactly (on the CPU or a GPU, and from
one to the other), JSONL logs that say on which device the steps ran, evaluation that keeps
the best checkpoint by the real-table score, and data parallelism under torchrun (gloo on CPU).
"""
from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import schedulefree
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ..checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from ..config import TrainConfig
from ..inference import bf16_is_fast, cpu_name, resolve_device
from ..model import FEAT
from ..model.afbm import AFBM
from ..prior.batches import Batch, BatchStream
from ..prior.real import allowlist
from .distill import distill_loss, prune
from .evaluate import baseline_scores, evaluate, real_eval_tasks, summarise
from .losses import batch_tensors, feat_loss


def device_name(device: torch.device) -> str:
    """'cpu: <model name>' or 'cuda: <GPU name>': the key under which a run counts its training time."""
    return f"cuda: {torch.cuda.get_device_name(device)}" if device.type == "cuda" else f"cpu: {cpu_name()}"


class Trainer:
    """One pretraining run living in `cfg.out_dir` (last.pt to resume, best.pt to ship, log.jsonl)."""

    def __init__(self, cfg: TrainConfig, resume: str | None = None, init_from: str | None = None):
        self.cfg = cfg
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("gloo")
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.device = resolve_device(cfg.device)
        self.bf16 = cfg.bf16 and bf16_is_fast(self.device)
        if cfg.bf16 and not self.bf16:
            warnings.warn("bf16: true, but this CPU has no native bf16 matmuls (AMX or AVX512-BF16), "
                          "where autocast is far slower than fp32: training in fp32", stacklevel=2)
        torch.manual_seed(cfg.seed + self.rank)
        self.out = Path(cfg.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.teacher = None
        if cfg.teacher:             # frozen, in eval mode; the student starts from it, pruned, unless resumed
            self.teacher = load_checkpoint(cfg.teacher, self.device)[0].requires_grad_(False)
            self.teacher_sha256 = read_checkpoint(cfg.teacher)["sha256"]
        self.model = (FEAT(cfg.model) if self.teacher is None or resume or init_from
                      else prune(self.teacher, cfg.model)).to(self.device)
        self.net = DistributedDataParallel(self.model, find_unused_parameters=True) if self.world > 1 else self.model
        self.opt = schedulefree.AdamWScheduleFree(
            self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, warmup_steps=cfg.warmup_steps)
        self.step = 0
        self.tables_seen = 0
        self.train_seconds = 0.0
        self.seconds_on: dict[str, float] = {}     # training seconds per device_name
        self.best = -float("inf")
        if resume:
            self._load(resume)
        elif init_from:
            self._init_from(init_from)

    # -- checkpoints -------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "opt": self.opt.state_dict(), "step": self.step,
                "tables_seen": self.tables_seen, "train_seconds": self.train_seconds, "seconds_on": self.seconds_on,
                "best": self.best, "torch_rng": torch.get_rng_state(), "config": self.cfg.to_dict()}

    def save_last(self) -> None:
        """Atomic write of everything needed to continue exactly."""
        if self.rank:
            return
        tmp = self.out / "last.pt.tmp"
        torch.save(self._state(), tmp)
        os.replace(tmp, self.out / "last.pt")

    def _load(self, path: str) -> None:
        st = torch.load(path, map_location="cpu", weights_only=False)
        self.model.load_state_dict(st["model"])
        self.opt.load_state_dict(st["opt"])
        self.step, self.tables_seen = st["step"], st["tables_seen"]
        self.train_seconds, self.best = st.get("train_seconds", 0.0), st.get("best", -float("inf"))
        self.seconds_on = st.get("seconds_on") or {"cpu": self.train_seconds}   # runs before devices were counted
        torch.set_rng_state(st["torch_rng"])

    def _init_from(self, path: str) -> None:
        """Start from a shipped checkpoint's weights (fresh optimiser state), continuing its
        step, table and time counters so the data stream moves on to unseen batches."""
        model, meta = load_checkpoint(path)
        if model.cfg != self.cfg.model:
            raise ValueError(f"{path}: its model config {model.cfg} differs from the run's {self.cfg.model}")
        self.model.load_state_dict(model.state_dict())
        if self.cfg.slow_down_init:
            for blk in self.model.blocks:
                if isinstance(blk.mixer, AFBM):
                    blk.mixer.slow_down(self.cfg.model.slow_heads)
        self.step, self.tables_seen = int(meta.get("step", 0)), int(meta.get("tables_seen", 0))
        self.train_seconds = float(meta.get("train_hours", 0.0)) * 3600
        self.seconds_on = {k: h * 3600 for k, h in (meta.get("hours_on") or {"cpu": meta.get("train_hours", 0.0)}).items()}

    def _meta(self, scores: dict[str, float]) -> dict[str, Any]:
        cpu_seconds = sum(v for k, v in self.seconds_on.items() if k.startswith("cpu"))
        return {"name": "feat-fast" if self.cfg.teacher else "feat-small", "step": self.step,
                "tables_seen": self.tables_seen,
                "cpu_hours": cpu_seconds * max(1, torch.get_num_threads()) / 3600 * self.world,
                "train_hours": self.train_seconds / 3600, "hours_on": {k: v / 3600 for k, v in self.seconds_on.items()},
                "scores": scores, "prior": self.cfg.prior.to_dict(),
                **({"teacher": self.cfg.teacher, "teacher_sha256": self.teacher_sha256} if self.teacher else {})}

    def log(self, rec: dict[str, Any]) -> None:
        if self.rank:
            return
        with open(self.out / "log.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")

    # -- the loop ----------------------------------------------------------------------
    def train_step(self, b: Batch) -> dict[str, float]:
        x, y_ctx, y_q, x_true, recon, n_cls = batch_tensors(b, self.device)
        self.model.train()
        self.opt.train()
        ids = self.model.column_ids(x.shape[0], x.shape[2])      # a fresh S-DFE draw, the teacher's too
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            out = self.net(x, y_ctx, b.task, n_cls, column_ids=ids)
            if self.teacher is not None:
                with torch.no_grad():
                    taught = self.teacher(x, y_ctx, b.task, n_cls, column_ids=ids)
        loss, terms = feat_loss(out, y_q, b.task, x_true, recon, self.cfg.huber_delta)
        if self.teacher is not None:
            kd, kd_terms = distill_loss(out, taught, b.task, recon)
            loss = loss + self.cfg.distill_weight * kd
            terms.update(kd_terms)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        terms["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip))
        self.opt.step()
        return terms

    def run_eval(self, tasks) -> dict[str, float]:
        self.opt.eval()            # schedule-free: evaluate and ship the averaged weights
        res = evaluate(self.model, tasks)
        if res["score"] > self.best:
            self.best = res["score"]
            save_checkpoint(self.out / "best.pt", self.model, self._meta(res))
        self.opt.train()
        return res

    def fit(self, hours: float | None = None) -> None:
        cfg = self.cfg
        deadline = time.time() + hours * 3600 if hours else float("inf")
        refs = allowlist() if cfg.prior.p_real > 0 else None
        stream = BatchStream(cfg.seed, self.step, cfg.prior, cfg.workers, stride=self.world, offset=self.rank,
                             use_real=refs is not None, tokens=cfg.batch_tokens)
        tasks = real_eval_tasks() if self.rank == 0 else []
        where = device_name(self.device)
        self.log({"event": "start", "step": self.step, "tables_seen": self.tables_seen, "device": where, "cpu": cpu_name(),
                  "threads": torch.get_num_threads(), "world": self.world, "precision": "bf16" if self.bf16 else "fp32",
                  "eval_tables": [t.name for t in tasks], "prior": cfg.prior.to_dict()})
        if self.rank == 0 and tasks:          # every start, so each log carries its reference lines
            base = baseline_scores(tasks)
            self.log({"event": "baselines", **{f"{k}_{m}": v for k, r in base.items() for m, v in r.items()},
                      **{f"{m}_summary": summarise({k: r[m] for k, r in base.items() if m in r}, tasks)
                         for m in ("logreg", "knn", "ridge")}})
        last_ckpt = last_eval = time.time()
        window: list[dict[str, float]] = []
        t_window = time.time()
        try:
            while self.step < cfg.max_steps and time.time() < deadline:
                t0 = time.time()
                b = stream.get()
                t_data = time.time() - t0
                terms = self.train_step(b)
                self.step += 1
                self.tables_seen += b.x.shape[0] * self.world
                took = time.time() - t0
                self.train_seconds += took
                self.seconds_on[where] = self.seconds_on.get(where, 0.0) + took
                window.append({**terms, "data_s": t_data, "tables": b.x.shape[0], "rows": b.x.shape[1], "feats": b.x.shape[2]})
                if self.step % 25 == 0:
                    dt = time.time() - t_window
                    agg = {k: float(np.mean([w[k] for w in window if k in w])) for k in {k for w in window for k in w}}
                    agg["tables_per_s"] = sum(w["tables"] for w in window) * self.world / dt
                    agg["s_per_step"] = dt / len(window)
                    self.log({"event": "train", "step": self.step, "tables_seen": self.tables_seen,
                              "train_hours": self.train_seconds / 3600, **agg})
                    window, t_window = [], time.time()
                if time.time() - last_ckpt > cfg.checkpoint_minutes * 60:
                    self.save_last()
                    last_ckpt = time.time()
                if self.rank == 0 and time.time() - last_eval > cfg.eval_minutes * 60:
                    self.log({"event": "eval", "step": self.step, "tables_seen": self.tables_seen,
                              "train_hours": self.train_seconds / 3600, **self.run_eval(tasks)})
                    last_eval = time.time()
        finally:
            stream.close()
        self.save_last()
        if self.rank == 0 and tasks:
            self.log({"event": "eval", "step": self.step, "tables_seen": self.tables_seen,
                      "train_hours": self.train_seconds / 3600, **self.run_eval(tasks)})
