"""Pretraining throughput: seconds per step and tables per hour of `Trainer.train_step`, fp32
against bf16 autocast, on one fixed sequence of prior batches (issue 18, item 1).

The batches are drawn up front (`prior.batches.make_batch`, seeds 0..N-1 of the config's
prior), so that only the step is timed and both precisions see the same tables; the first
three steps are warm-up and not counted. The losses of the last steps are printed for both
precisions, so that a faster step that changes the loss shows up.

    python bench/train_throughput.py                       # stage-2 config, 24 batches
    python bench/train_throughput.py --config configs/pretrain-small-stage3.yaml --batches 12

Writes the "train-throughput" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import tempfile
import time

import common as C

WARMUP = 3


def measure(config: str, n: int, bf16: bool) -> dict:
    """Time n train steps of a fresh model of `config` in one precision."""
    from feat_engine.prior.batches import make_batch
    from feat_engine.prior.real import allowlist
    from feat_engine.train.cli import apply_overrides, load_config
    from feat_engine.train.loop import Trainer

    cfg = apply_overrides(load_config(config), [f"bf16={str(bf16).lower()}", f"out_dir={tempfile.mkdtemp()}"])
    trainer = Trainer(cfg)
    refs = allowlist() if cfg.prior.p_real > 0 else None
    batches = [make_batch(cfg.seed, i, cfg.prior, refs) for i in range(n)]
    times, losses = [], []
    for b in batches:
        t0 = time.perf_counter()
        terms = trainer.train_step(b)
        times.append(time.perf_counter() - t0)
        losses.append(sum(v for k, v in terms.items() if k != "grad_norm"))
    timed = times[WARMUP:]
    tables = sum(b.x.shape[0] for b in batches[WARMUP:])
    return {"precision": "bf16" if trainer.bf16 else "fp32", "s_per_step": sum(timed) / len(timed),
            "tables_per_h": tables / sum(timed) * 3600, "mean_rows": sum(b.x.shape[1] for b in batches) / n,
            "last_losses": losses[-3:]}


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float):
    rows = [[r["precision"], C.fmt(r["s_per_step"], 2), f"{r['tables_per_h']:,.0f}",
             ", ".join(f"{v:.3f}" for v in r["last_losses"])] for r in recs]
    body = [
        "## Pretraining throughput",
        "",
        f"`Trainer.train_step` on {args.batches} fixed prior batches of `{args.config}` (mean "
        f"{recs[0]['mean_rows']:.0f} rows per table), the first {WARMUP} not timed; a fresh model per precision.",
        "",
        *C.markdown_table(["precision", "s / step", "tables / h", "losses of the last 3 steps"], rows),
        "",
        *C.provenance(command, started, info, seconds),
    ]
    return body, {r["precision"]: r["tables_per_h"] for r in recs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/pretrain-small-stage2.yaml")
    p.add_argument("--batches", type=int, default=24)
    C.add_common_args(p, section="train-throughput")
    args = p.parse_args(argv)
    return C.run_benchmark("train_throughput.py", argv, args,
                           lambda: [measure(args.config, args.batches, bf16) for bf16 in (False, True)],
                           lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
