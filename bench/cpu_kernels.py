"""The CPU kernels (AFBM's context pass as a numba kernel, feat_engine/model/cpu_scan.py, and oneDNN's fp32 linear
layers, model/linear.py; both off with `cpu_scan.ENABLED`) against the PyTorch paths, A/B/A/B in one process on the
same threads: (a) AFBM.context alone on 21 columns, taken as many at a time as an engine run takes them, (b) one
engine run of a local part's shape, (c) one-member fit + predict_proba of FEATClassifier without the stacked model
and the blend, one run on the whole context. Prints a markdown table; writes nothing.

    taskset -c 1 python bench/cpu_kernels.py --threads 1 --cases a,b

With `--against DIR` it times case (c) alone, in fresh processes that import the engine from DIR (another checkout,
say `git worktree add /tmp/old <commit>`) and from this checkout in turn, and prints the two medians, their ratio
and the largest difference between their probabilities: issue 66's engine-bound case, old code against new.

    python bench/cpu_kernels.py --threads 2 --against /tmp/old

With `--scoring` it times `case_scoring` instead: 2,048 labelled rows at the defaults scoring 50,000 (decision 0005's
chunks by tokens).

`--checkpoint PATH` with `--against` runs this checkout on that checkpoint (issue 66's student against the teacher
on the old code); the probability difference then compares two models.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from feat_engine import FEATClassifier
from feat_engine.checkpoint import load_model
from feat_engine.config import InferenceConfig
from feat_engine.inference import autocast, cpu_name, run


def table(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n rows of d standard normal features and a binary label from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (x @ rng.standard_normal(d) + rng.standard_normal(n) > 0).astype(np.int64)
    return x, y


def case_context(rows: int, bf16: bool):
    """AFBM.context of block 0 on 21 columns of `rows` rows, as many columns a call as `inference.run` takes."""
    mixer = load_model().blocks[0].mixer
    u = torch.randn(21, rows, mixer.fuse.out_features, generator=torch.Generator().manual_seed(0))
    cfg = InferenceConfig()
    cols = max(1, min(cfg.col_chunk, cfg.cpu_mixer_tokens // rows))

    def go():
        with torch.no_grad(), autocast(torch.device("cpu"), bf16):
            for j in range(0, 21, cols):
                mixer.context(u[j:j + cols])
    return go


def case_run(bf16: bool, rows: int = 1024, features: int = 20, queries: int = 128):
    """One engine run of a local part's shape (the stacked model's column makes the 20 features 21 tokens)."""
    x, y = table(rows + queries, features)
    model, cfg = load_model(), InferenceConfig(autocast_bf16=bf16)
    return lambda: run(model, x[:rows], y[:rows].astype(np.float32), x[rows:], "classification", 2, cfg=cfg,
                       device="cpu")


def case_estimator(bf16: bool, rows: int = 8192, features: int = 20, queries: int = 2000, checkpoint: str | None = None):
    """FEATClassifier(n_estimators=1, local_context=None, view=None, blend=False): fit + predict_proba."""
    x, y = table(rows + queries, features)
    est = FEATClassifier(n_estimators=1, local_context=None, view=None, blend=False, device="cpu",
                         precision="bf16" if bf16 else "fp32", checkpoint=checkpoint)
    return lambda: est.fit(x[:rows], y[:rows]).predict_proba(x[rows:])


def case_scoring(bf16: bool, rows: int = 2048, features: int = 20, queries: int = 50_000,
                 checkpoint: str | None = None):
    """FEATClassifier() at its defaults fitted once on `rows` rows, then predict_proba of `queries` rows: a large table
    scored from a small labelled one, few local parts with many queries each. The estimator keeps the parts' states
    after the first call (decision 0027), so later calls time the query passes."""
    x, y = table(rows + queries, features)
    est = FEATClassifier(device="cpu", precision="bf16" if bf16 else "fp32", checkpoint=checkpoint, random_state=0)
    est.fit(x[:rows], y[:rows])
    return lambda: est.predict_proba(x[rows:])


CASES = {
    "a": [(f"AFBM.context, 21 cols x {r:,} rows", lambda bf16, r=r: case_context(r, bf16)) for r in (1024, 8192)],
    "b": [("engine run, 1,024 ctx x 20 feat, 128 queries", case_run)],
    "c": [("FEATClassifier 1 member, 8,192 ctx x 20 feat, 2,000 queries", case_estimator)],
}


def ab(fn, reps: int) -> dict[bool, list[float]]:
    """Seconds of `fn` with the kernel off and on, interleaved A/B/A/B after one warm-up call each."""
    from feat_engine.model import cpu_scan
    times: dict[bool, list[float]] = {False: [], True: []}
    for rep in range(reps + 1):
        for on in (False, True):
            cpu_scan.ENABLED = on
            t = time.perf_counter()
            fn()
            if rep:
                times[on].append(time.perf_counter() - t)
    cpu_scan.ENABLED = True
    return times


def child(precision: str, reps: int, out: str, checkpoint: str | None = None, scoring: bool = False) -> None:
    """Case (c), or `case_scoring`, in this process, whichever engine it imports: one warm-up call, then `reps` timed
    ones; writes the seconds and the last call's probabilities to `out` (.npz)."""
    go = (case_scoring if scoring else case_estimator)(precision == "bf16", checkpoint=checkpoint)
    proba = go()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        proba = go()
        times.append(time.perf_counter() - t)
    np.savez(out, times=np.array(times), proba=proba)


def against(other: str, args: argparse.Namespace) -> None:
    """Case (c) with the engine of the checkout `other` and of this one, each in a fresh process, in turn, twice."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print("| precision | other checkout, median (min) | this checkout, median (min) | this / other | largest "
          "probability difference |")
    print("| :--- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for prec in args.precisions.split(","):
            runs: dict[str, list[float]] = {other: [], here: []}
            proba = {}
            for turn in range(2):
                for code in (other, here):
                    out = os.path.join(tmp, f"{prec}-{turn}-{code == here}.npz")
                    env = {**os.environ, "PYTHONPATH": code}
                    ckpt = ["--checkpoint", args.checkpoint] if args.checkpoint and code == here else []
                    subprocess.run([sys.executable, __file__, "--child", prec, "--threads", str(args.threads),
                                    "--reps", str(args.reps), "--child-out", out, *ckpt,
                                    *(["--scoring"] if args.scoring else [])], env=env, check=True)
                    got = np.load(out)
                    runs[code] += list(got["times"])
                    proba[code] = got["proba"]
            cell = lambda c: f"{np.median(runs[c]):.2f} s ({min(runs[c]):.2f})"  # noqa: E731
            diff = float(np.abs(proba[other] - proba[here]).max())
            print(f"| {prec} | {cell(other)} | {cell(here)} | {np.median(runs[here]) / np.median(runs[other]):.2f} "
                  f"| {diff:.2g} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch's (and numba's) threads (default 1)")
    ap.add_argument("--cases", default="a,b,c", help="which of a, b, c (default all)")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--reps", type=int, default=5, help="timed calls per variant (default 5; c: 2)")
    ap.add_argument("--against", metavar="DIR", help="case (c), the engine of checkout DIR against this one's")
    ap.add_argument("--checkpoint", help="with --against: this checkout runs this checkpoint (a student), the other "
                    "its default")
    ap.add_argument("--scoring", action="store_true", help="with --against: time `case_scoring` (2,048 labelled rows "
                    "at the defaults scoring 50,000) instead of the engine-bound case")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        return child(args.child, args.reps, args.child_out, args.checkpoint, args.scoring)
    print(f"{cpu_name()}, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f} at the start\n")
    if args.against:
        against(os.path.abspath(args.against), args)
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
        return
    from feat_engine.model import cpu_scan
    if not cpu_scan.available():
        raise SystemExit("numba is not installed: pip install 'numba>=0.60,<1'")
    print("| case | precision | PyTorch path, median (min) | kernel, median (min) | old / new |")
    print("| :--- | :--- | ---: | ---: | ---: |")
    for key in args.cases.split(","):
        for name, make in CASES[key]:
            for prec in args.precisions.split(","):
                t = ab(make(prec == "bf16"), 2 if key == "c" and args.reps > 2 else args.reps)
                old, new = (np.median(t[k]) * 1e3 for k in (False, True))
                cell = lambda k: f"{np.median(t[k]) * 1e3:,.1f} ms ({min(t[k]) * 1e3:,.1f})"  # noqa: E731
                print(f"| {name} | {prec} | {cell(False)} | {cell(True)} | {old / new:.2f}x |", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
