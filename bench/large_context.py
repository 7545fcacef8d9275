"""A 1M-row context on this machine: `FEATClassifier` fits N rows x 10 features and predicts
held-out rows, with time, peak RSS and the held-out ROC-AUC.

The table is synthetic (so its size is free): 10 standard normal features and a binary label
from a nonlinear score (quadratic and interaction terms plus noise). One ensemble member (time
is linear in members); the regressor and the imputer run through the same engine path.

    python bench/large_context.py                    # 1,000,000 context rows, 10,000 query rows
    python bench/large_context.py --context 100000   # a smaller run

Writes the "large-context" section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

D = 10


def table(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """X (n, D) and a binary label from a nonlinear score."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, D), dtype=np.float32)
    score = x[:, 0] + 0.5 * x[:, 1] ** 2 - x[:, 2] * x[:, 3] + 0.3 * x[:, 4:].sum(1)
    noisy = score + 0.3 * rng.standard_normal(n)
    return x, (noisy > np.median(noisy)).astype(np.int64)


def measure(args) -> list[dict]:
    from sklearn.metrics import roc_auc_score

    from feat_engine import FEATClassifier

    x, y = table(args.context + args.query, C.SEED)
    ctx, qry = slice(0, args.context), slice(args.context, None)
    model = FEATClassifier(n_estimators=1, random_state=C.SEED, device="cpu",
                           progress=lambda d, t, m: print(f"[large-context] {m} {d}/{t}", flush=True))
    t0 = time.perf_counter()
    proba = model.fit(x[ctx], y[ctx]).predict_proba(x[qry])[:, 1]
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024      # Linux: KiB
    rec = {"estimator": "FEATClassifier", "context": args.context, "query": args.query, "seconds": seconds,
           "peak_rss_gib": peak / C.GiB, "auc": float(roc_auc_score(y[qry], proba))}
    print(f"[large-context] {rec}", flush=True)
    return [rec]


def report(recs: list[dict], info: dict, command: str, started: str, elapsed: float):
    rows = [[r["estimator"], f"{r['context']:,}", f"{r['query']:,}", f"{r['seconds']:.0f}", f"{r['peak_rss_gib']:.2f}",
             f"{r['auc']:.3f}"] for r in recs]
    body = [
        f"## A {recs[0]['context']:,}-row context",
        "",
        f"`FEATClassifier` (shipped checkpoint, `n_estimators=1`, fp32, CPU) fits a context of "
        f"{recs[0]['context']:,} rows x {D} features and predicts {recs[0]['query']:,} held-out rows of the same "
        "synthetic table (10 standard normal features; a nonlinear score with quadratic and interaction terms plus "
        "noise, thresholded at its median for the label). Time is fit + predict including preprocessing; peak RSS "
        "is the process's maximum (Python, torch and the data included).",
        "",
        *C.markdown_table(["estimator", "context rows", "query rows", "time (s)", "peak RSS (GiB)", "held-out ROC-AUC"],
                          rows, "lrrrrr"),
        "",
        *C.provenance(command, started, info, elapsed),
    ]
    return body, {k: recs[0][k] for k in ("seconds", "peak_rss_gib", "auc")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context", type=int, default=1_000_000, help="context rows")
    p.add_argument("--query", type=int, default=10_000, help="query rows")
    C.add_common_args(p, "large-context")
    args = p.parse_args(argv)
    return C.run_benchmark("large_context.py", argv, args, lambda: measure(args), report)


if __name__ == "__main__":
    raise SystemExit(main())
