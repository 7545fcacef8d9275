"""Scaling benchmark: time and peak RSS versus rows N, for FEAT and what users would pick instead.

Two tables, every measurement in a fresh subprocess (so its peak RSS is honest), D = 10 and half
of the N rows context, half query:

* **Forward** (issue 2): one `feat_engine.inference.run` call (context pass + prediction of every
  query row) at the shipped model size with random weights, against the same network with full
  softmax attention on the sample axis (bench/attention_baseline.py).
* **End to end** (issue 6): fit + predict of `FEATClassifier` on the shipped checkpoint, of
  TabICL v2's architecture (`tabicl.TabICLClassifier` with random weights, loaded from a local
  file: the speed is that of trained weights) and of LightGBM at its defaults. FEAT and TabICL
  both run one ensemble member (their cost is linear in members).

A run that passes its time or memory limit is stopped and reported as such; larger N of that
method are then skipped.

    python bench/scaling.py                            # end to end, N up to 1M (~40 min)
    python bench/scaling.py --quick                    # end to end, N up to 100k
    python bench/scaling.py --variants feat,attention  # forward, N up to 1M (~30 min)
    python bench/scaling.py --precision fp32           # fp32 also where bf16 is fast (default: as the estimators)
    python bench/scaling.py --device cuda --variants feat,feat_e2e --sizes 100000,1000000   # a GPU (bf16)

Each table is its own section of docs/benchmarks.md (between <!-- scaling:start --> and
<!-- scaling:end -->, and <!-- scaling-e2e:start --> and <!-- scaling-e2e:end -->; the rest of the
file is kept), with a log-log plot at docs/scaling.png and docs/scaling-e2e.png; on a GPU
(--device cuda) both go into one table, the section "scaling-cuda", without a plot. The raw
results go to bench/results/<section>.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PNG = ROOT / "docs" / "scaling.png"
PNG_E2E = ROOT / "docs" / "scaling-e2e.png"
SECTIONS = {"forward": "scaling", "e2e": "scaling-e2e", "cuda": "scaling-cuda"}   # docs/benchmarks.md sections
D = 10
GiB = 1024 ** 3


# -- child: one measurement ------------------------------------------------------------------

def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


FORWARD = ("feat", "attention")          # one engine call, random weights
END_TO_END = ("feat_e2e", "tabicl", "lightgbm")   # fit + predict of an estimator
GROUPS = {"forward": FORWARD, "e2e": END_TO_END}
LABELS = {"feat": "FEAT (AFBM + Conv-GLA)", "attention": "full softmax attention",
          "feat_e2e": "FEATClassifier", "tabicl": "TabICL v2 architecture", "lightgbm": "LightGBM"}


def _table(n: int, seed: int):
    """N rows of D standard normal features; the label of the first N/2 (context) rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, D), dtype=np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    return x, y, n // 2


def _forward(variant: str, n: int, bf16: bool, seed: int, device: str):
    """(timed call, parameter count) for one engine forward at the shipped size, random weights."""
    import numpy as np
    import torch

    from feat_engine import FEAT, InferenceConfig, ModelConfig
    from feat_engine.inference import run

    torch.manual_seed(seed)
    cfg = ModelConfig()
    if variant == "feat":
        model = FEAT(cfg).eval()
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from attention_baseline import attention_feat
        model = attention_feat(cfg).eval()
    icfg = InferenceConfig(autocast_bf16=bf16)
    x, y, n_ctx = _table(n, seed)
    y = y[:n_ctx].astype(np.float32)
    # warm-up on a small table (kernel selection, allocator), not timed
    run(model, x[:256], y[:256], x[n_ctx:n_ctx + 256], "classification", 2, cfg=icfg, device=device)

    def call():
        res = run(model, x[:n_ctx], y, x[n_ctx:], "classification", 2, cfg=icfg, device=device)
        assert res.logits.shape == (n - n_ctx, cfg.max_classes) and np.isfinite(res.logits[:, :2]).all()
    return call, sum(p.numel() for p in model.parameters())


def _tabicl_checkpoint(seed: int) -> tuple[Path, int]:
    """A local checkpoint of TabICL's default architecture with random weights (no download),
    and its parameter count."""
    import tempfile

    import torch
    from tabicl._model.tabicl import TabICL

    torch.manual_seed(seed)
    path = Path(tempfile.mkdtemp()) / "tabicl-random.ckpt"
    model = TabICL()
    torch.save({"config": {}, "state_dict": model.state_dict()}, path)
    return path, sum(p.numel() for p in model.parameters())


def _end_to_end(variant: str, n: int, bf16: bool, seed: int, device: str):
    """(timed fit + predict, parameter count) of one estimator on the N-row table (FEAT in bf16 if asked)."""
    import numpy as np

    x, y, n_ctx = _table(n, seed)
    if variant == "feat_e2e":
        from feat_engine import FEATClassifier, load_model
        est = FEATClassifier(n_estimators=1, random_state=seed, device=device, precision="bf16" if bf16 else "fp32")
        params = sum(p.numel() for p in load_model().parameters())
    elif variant == "tabicl":
        from tabicl import TabICLClassifier
        path, params = _tabicl_checkpoint(seed)
        est = TabICLClassifier(n_estimators=1, model_path=path, allow_auto_download=False,
                               device=device, random_state=seed, verbose=False)
    else:
        import lightgbm as lgb
        est, params = lgb.LGBMClassifier(n_jobs=os.cpu_count(), random_state=seed, verbose=-1), 0
    est.fit(x[:200], y[:200]).predict_proba(x[200:300])     # warm-up (imports, model load), not timed

    def call():
        proba = est.fit(x[:n_ctx], y[:n_ctx]).predict_proba(x[n_ctx:])
        assert proba.shape == (n - n_ctx, 2) and np.isfinite(proba).all()
    return call, params


def child(variant: str, n: int, bf16: bool, repeats: int, seed: int, device: str = "cpu",
          tables_per_run: int | None = None) -> dict:
    import torch

    from feat_engine.inference import TABLES_PER_RUN, tables_per_run as per_run
    if tables_per_run is not None:
        TABLES_PER_RUN[torch.device(device).type] = tables_per_run

    make = _forward if variant in FORWARD else _end_to_end
    call, params = make(variant, n, bf16, seed, device)
    base_rss = _rss_bytes()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024     # Linux: KiB
    return {"variant": variant, "n": n, "n_ctx": n // 2, "d": D, "bf16": bf16, "time_s": min(times),
            "times_s": times, "peak_rss_bytes": peak, "base_rss_bytes": base_rss,
            "params": params, "device": device,
            "gpu_peak_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else None,
            "threads": torch.get_num_threads(), "tables_per_run": per_run(device), "status": "ok"}


# -- parent: run children under limits ----------------------------------------------------------

def measure(variant: str, n: int, args) -> dict:
    import psutil

    repeats = 3 if n <= 1_000 else 1
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", variant, "--n", str(n),
           "--repeats", str(repeats), "--seed", str(args.seed), "--device", args.device, "--precision", "bf16" if args.bf16 else "fp32"]
    if args.tables_per_run is not None:
        cmd += ["--tables-per-run", str(args.tables_per_run)]
    limit_s = args.time_limit if variant in ("attention", "tabicl") else args.feat_time_limit
    limit_b = args.mem_limit_gb * GiB
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    ps, peak, why = psutil.Process(proc.pid), 0, None
    while proc.poll() is None:
        try:
            peak = max(peak, ps.memory_info().rss)
        except psutil.Error:
            pass
        elapsed = time.perf_counter() - t0
        if peak > limit_b:
            why = f"stopped: RSS passed {args.mem_limit_gb:g} GiB after {elapsed:.0f} s"
        elif elapsed > limit_s:
            why = f"stopped: passed the {limit_s:g} s limit"
        if why:
            proc.kill()
            proc.wait()
            break
        time.sleep(0.2)
    out, err = proc.communicate()
    if why:
        return {"variant": variant, "n": n, "status": why, "peak_rss_bytes": peak, "wall_s": time.perf_counter() - t0}
    if proc.returncode != 0:
        tail = (err or "").strip().splitlines()[-3:]
        return {"variant": variant, "n": n, "status": f"failed (exit {proc.returncode}): {' | '.join(tail)}",
                "peak_rss_bytes": peak}
    rec = json.loads(out.strip().splitlines()[-1])
    rec["wall_s"] = time.perf_counter() - t0
    return rec


# -- report ---------------------------------------------------------------------------------------

def _fmt_n(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (f"{n // 1000}k" if n % 1000 == 0 else str(n))


def _cell_time(r):
    """A finished run's seconds, or why there are none ("stopped at the 600 s limit", "not run")."""
    status = r.get("status")
    if status == "ok":
        return f"{r['time_s']:.2f}"
    if not status:
        return "—"
    if status.startswith("stopped: passed the"):
        return "stopped at the" + status.removeprefix("stopped: passed the")
    if status.startswith("stopped: RSS passed"):
        return f"stopped at {status.split('RSS passed ')[1].split(' after')[0]} RSS"
    return status.split(" (")[0]                  # "not run", "failed"


def _cell_mem(r, gpu: bool = False):
    if r.get("status") != "ok":
        return f"({r['peak_rss_bytes'] / GiB:.1f} when stopped)" if r.get("status", "").startswith("stopped") \
            and r.get("peak_rss_bytes") else ""
    if gpu:
        return f"{r['gpu_peak_bytes'] / GiB:.2f}" if r.get("gpu_peak_bytes") else "—"
    return f"{r['peak_rss_bytes'] / GiB:.2f}"


def _time_ratio(a: dict, b: dict) -> float | None:
    """time(a) / time(b) when both runs finished, else None."""
    ok = a.get("status") == "ok" and b.get("status") == "ok"
    return a["time_s"] / b["time_s"] if ok else None


def _ratio(a: dict, b: dict) -> str:
    r = _time_ratio(a, b)
    return "—" if r is None else f"{r:.2f}"


def _gflops(r: dict, info: dict) -> str:
    """Achieved matmul GFLOP/s of a finished FEAT forward run: counted FLOP per token x tokens / time."""
    if r.get("status") != "ok":
        return "—"
    return f"{info['flop_per_token'] * r['n'] * (D + 1) / r['time_s'] / 1e9:,.0f}"


def _growth(by: dict, variant: str, sizes: list[int], what: str) -> str:
    """time(1M)/time(100k) of a variant's finished runs (or of its two largest), in one sentence."""
    ok = {n: by[(variant, n)] for n in sizes if by.get((variant, n), {}).get("status") == "ok"}
    if 100_000 in ok and 1_000_000 in ok:
        lo, hi = 100_000, 1_000_000
    elif len(ok) >= 2:
        lo, hi = sorted(ok)[-2:]
    else:
        return ""
    return (f"{what}: time({_fmt_n(hi)})/time({_fmt_n(lo)}) = **{ok[hi]['time_s'] / ok[lo]['time_s']:.1f}** for "
            f"{hi / lo:.0f}× the rows; peak RSS {ok[hi]['peak_rss_bytes'] / ok[lo]['peak_rss_bytes']:.1f}×.")


def _share(by: dict, sizes: list[int], info: dict, args) -> str:
    """The largest finished forward run's achieved share of the machine's measured matmul peak."""
    peaks = info.get("matmul_gflops") or {}
    precision = "bf16" if args.bf16 else "fp32"
    done = [n for n in sizes if by.get(("feat", n), {}).get("status") == "ok"]
    if not done or not peaks:
        return ""
    n, peak = max(done), peaks.get(precision, peaks["fp32"])
    g = float(_gflops(by[("feat", n)], info).replace(",", ""))
    return (f" At {_fmt_n(n)} rows the forward pass reaches {g:,.0f} GFLOP/s, {g / peak:.0%} of this machine's measured "
            f"{precision} matmul rate ({peak:,.0f} GFLOP/s; `bench/flops.py`, {info['flop_per_token'] / 1e6:.2f} M matmul "
            "FLOP per cell token).")


def _forward_lines(results: list[dict], by: dict, args, info: dict, png: str | None) -> list[str]:
    import common

    sizes = sorted({r["n"] for r in results if r["variant"] in FORWARD})
    params = next((r["params"] for r in results if r["variant"] == "feat" and r.get("params")), 0)
    lines = [
        "### Forward pass (issue 2)",
        "",
        f"One `feat_engine.inference.run` call (context pass + prediction of every query row), random weights at the "
        f"shipped model size (`ModelConfig()`, {params:,} parameters), default `InferenceConfig`"
        f"{' with bf16 autocast' if args.bf16 else ' (fp32)'}. The contrast model is the same network with each "
        "sample-axis mixer replaced by full softmax attention (context rows attend to context rows, queries to the "
        "context; `bench/attention_baseline.py`, PyTorch SDPA: O(N) memory, O(N²) time).",
        "",
        "| N (rows) | context | FEAT time (s) | FEAT peak RSS (GiB) | attention time (s) | attention peak RSS (GiB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        f, a = by.get(("feat", n), {}), by.get(("attention", n), {})
        lines.append(f"| {n:,} | {n // 2:,} | {_cell_time(f)} | {_cell_mem(f)} | {_cell_time(a)} | {_cell_mem(a)} |")
    ok = {n: by[("feat", n)] for n in sizes if by.get(("feat", n), {}).get("status") == "ok"}
    if 100_000 in ok and 1_000_000 in ok:
        t_ratio = ok[1_000_000]["time_s"] / ok[100_000]["time_s"]
        m_ratio = ok[1_000_000]["peak_rss_bytes"] / ok[100_000]["peak_rss_bytes"]
        text = (f"**Target** time(1M)/time(100k) ≤ 11: measured **{t_ratio:.1f}** "
                f"({'met' if t_ratio <= 11 else 'not met'}). Peak RSS grows {m_ratio:.1f}× from 100k to 1M.")
    else:
        text = _growth(by, "feat", sizes, "FEAT")
    text += _share(by, sizes, info, args) + (f" ![FEAT vs full attention, log-log]({png})" if png else "")
    return lines + ["", *common.wrap(text.strip()), ""]


def _e2e_lines(results: list[dict], by: dict, args, png: str | None) -> list[str]:
    import common

    sizes = sorted({r["n"] for r in results if r["variant"] in END_TO_END})
    params = {v: next((r["params"] for r in results if r["variant"] == v and r.get("params")), 0) for v in END_TO_END}
    precision = common.precision_text(args.precision, args.device)
    per_run = sorted({r["tables_per_run"] for r in results if r["variant"] == "feat_e2e" and "tables_per_run" in r})
    parts = f", {' / '.join(map(str, per_run))} local part(s) per engine run" if per_run else ""
    tabicl = (", TabICL v2's architecture (`tabicl.TabICLClassifier(n_estimators=1)` with random weights of the "
              f"package's default `TabICL()` configuration, {params['tabicl']:,} parameters, loaded from a local file)"
              if any(r["variant"] == "tabicl" for r in results) else "")
    lines = [
        "### End to end: fit + predict (issue 6)",
        "",
        "Time and peak RSS of a fresh process per method and N. "
        f"`FEATClassifier(n_estimators=1)`, {precision}{parts}, on the shipped checkpoint ({params['feat_e2e']:,} parameters; preprocessing "
        f"included){tabicl} and "
        "LightGBM at its defaults (all cores). Same table for all: N rows, D = 10 standard normal features, a "
        "linear binary label, the first half context (training rows), the second half predicted. "
        "A ratio above 1 means FEAT is slower.",
        "",
        "| N (rows) | FEAT (s) | FEAT RSS (GiB) | TabICL (s) | TabICL RSS (GiB) | LightGBM (s) | LightGBM RSS (GiB) "
        "| FEAT/TabICL | FEAT/LightGBM |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        f, t, g = (by.get((v, n), {}) for v in END_TO_END)
        lines.append(f"| {n:,} | {_cell_time(f)} | {_cell_mem(f)} | {_cell_time(t)} | {_cell_mem(t)} | "
                     f"{_cell_time(g)} | {_cell_mem(g)} | {_ratio(f, t)} | {_ratio(f, g)} |")
    text = _growth(by, "feat_e2e", sizes, "FEAT") + (f" ![end-to-end fit + predict, log-log]({png})" if png else "")
    return lines + ["", *(common.wrap(text.strip()) + [""] if text.strip() else [])]


def _cuda_lines(results: list[dict], by: dict, info: dict, args) -> list[str]:
    """Both tables on a GPU in one: the forward pass and FEAT's fit + predict per N, any other method's seconds."""
    import common

    sizes = sorted({r["n"] for r in results})
    ran = {r["variant"] for r in results}
    per_run = sorted({r["tables_per_run"] for r in results if r["variant"] == "feat_e2e" and "tables_per_run" in r})
    cols = []                                     # (header, cell of N)
    if "feat" in ran:
        cols += [("forward, random weights (s)", lambda n: _cell_time(by.get(("feat", n), {}))),
                 ("forward GFLOP/s", lambda n: _gflops(by.get(("feat", n), {}), info))]
    if "attention" in ran:
        cols += [("forward, full attention (s)", lambda n: _cell_time(by.get(("attention", n), {})))]
    if "feat_e2e" in ran:
        cols += [("fit + predict, `FEATClassifier(n_estimators=1)` (s)", lambda n: _cell_time(by.get(("feat_e2e", n), {}))),
                 ("fit + predict, GPU peak (GiB)", lambda n: _cell_mem(by.get(("feat_e2e", n), {}), gpu=True))]
    for v in ("tabicl", "lightgbm"):
        if v in ran:
            cols += [(f"fit + predict, {LABELS[v]} (s)", lambda n, v=v: _cell_time(by.get((v, n), {})))]
    text = (f"**{info['cpu'].split('GPU ')[-1]}** ({info['cpu'].split(', GPU ')[0]}, {info['cores']} cores, "
            f"{info['ram_gib']:.0f} GiB; torch {info['torch']}, Python {info['python']}), "
            f"{common.precision_text(args.precision, args.device)}, the tables and settings of the CPU tables above"
            + (f"; {' / '.join(map(str, per_run))} local parts of a member per engine run" if per_run else "") + ".")
    lines = [*common.wrap(text), "",
             "| N (rows) | " + " | ".join(h for h, _ in cols) + " |", "|---:|" + "---:|" * len(cols),
             *(f"| {n:,} | " + " | ".join(c(n) for _, c in cols) + " |" for n in sizes), ""]
    notes = " ".join(t for t in (_growth(by, "feat", sizes, "Forward pass"), _growth(by, "feat_e2e", sizes, "Fit + predict"))
                     if t)
    peaks = info.get("matmul_gflops") or {}
    if notes and peaks:
        notes += " The card's measured matmul rate: " + ", ".join(f"{k} {v:,.0f} GFLOP/s" for k, v in peaks.items()) + "."
    return lines + ([*common.wrap(notes), ""] if notes else [])


def report(table: str, results: list[dict], info: dict, command: str, started: str, args, elapsed: float | None = None,
           png: str | None = None) -> list[str]:
    """The markdown section of one table ("forward", "e2e", or "cuda": both on a GPU) from its variants' results."""
    import common

    results = [r for r in results if r["variant"] in GROUPS.get(table, FORWARD + END_TO_END)]
    by = {(r["variant"], r["n"]): r for r in results}
    if table == "forward":
        lines = ["## Scaling", "", f"Time and peak RSS of a fresh process per method and N, at D = {D}, half of the "
                 "N rows context (training rows) and half query.", "", *_forward_lines(results, by, args, info, png)]
    elif table == "e2e":
        lines = _e2e_lines(results, by, args, png)
    else:
        lines = _cuda_lines(results, by, info, args)
    limits = (f"N = 1k the best of 3 runs, larger N one run each; attention and TabICL runs stopped after "
              f"{args.time_limit:g} s, any other after {args.feat_time_limit:g} s, any run above {args.mem_limit_gb:g} GiB "
              "RSS.")
    return lines + common.provenance(command, started, info, elapsed, [f"- {limits}"])


def plot(results: list[dict], variants: tuple[str, ...], path: Path, title: str, xlabel: str) -> None:
    """Log-log time and peak RSS against N for `variants`, with a slope-1 guide from the first one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for variant, style in zip(variants, ("o-", "s--", "^-.")):
        rs = sorted((r for r in results if r["variant"] == variant and r.get("status") == "ok"), key=lambda r: r["n"])
        if rs:
            ns = [r["n"] for r in rs]
            ax_t.plot(ns, [r["time_s"] for r in rs], style, label=LABELS[variant])
            ax_m.plot(ns, [r["peak_rss_bytes"] / GiB for r in rs], style, label=LABELS[variant])
    first = sorted((r for r in results if r["variant"] == variants[0] and r.get("status") == "ok"), key=lambda r: r["n"])
    if first:
        n0, t0 = first[0]["n"], first[0]["time_s"]
        xs = [n0, max(r["n"] for r in results if r["variant"] in variants)]
        ax_t.plot(xs, [t0, t0 * xs[1] / n0], ":", color="gray", label="linear (slope 1)")
    for ax, yl in ((ax_t, "time (s)"), (ax_m, "peak RSS (GiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(yl)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


FORWARD_SIZES = [1_000, 10_000, 100_000, 1_000_000]
E2E_SIZES = [1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000]


def main(argv: list[str] | None = None) -> int:
    import common
    from feat_engine.inference import uses_bf16

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N up to 100k")
    common.add_precision_arg(p)       # in the forward table and end to end
    p.add_argument("--sizes", type=lambda s: [int(float(v)) for v in s.split(",")], default=None,
                   help="comma-separated N values for every method (overrides --quick)")
    p.add_argument("--variants", default=",".join(END_TO_END),
                   help=f"any of {', '.join(LABELS)} (default: the end-to-end table; feat,attention for the forward one)")
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds before an attention or TabICL run is stopped")
    p.add_argument("--feat-time-limit", type=float, default=7200.0, help="seconds before any other run is stopped")
    p.add_argument("--mem-limit-gb", type=float, default=16.0, help="RSS (GiB) at which any run is stopped")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where FEAT and TabICL run (LightGBM: the CPU); a GPU run writes both tables into the "
                        "section scaling-cuda")
    p.add_argument("--tables-per-run", type=int, default=None,
                   help="local parts FEAT encodes per engine run (default: the device's, inference.TABLES_PER_RUN)")
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/ untouched")
    p.add_argument("--log", default=None, help="append each result as a JSON line to this file")
    p.add_argument("--child", choices=list(LABELS), help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.bf16 = uses_bf16(args.precision, args.device)

    if args.child:
        print(json.dumps(child(args.child, args.n, args.bf16, args.repeats, args.seed, args.device, args.tables_per_run)), flush=True)
        return 0

    command = "python bench/scaling.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    started, t0 = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), time.perf_counter()
    import torch

    info = common.machine()
    if args.device == "cuda":
        info["cpu"] += f", GPU {torch.cuda.get_device_name()}"
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in LABELS]
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {', '.join(LABELS)}")
    if set(variants) & set(FORWARD):
        from flops import flop_per_token, matmul_gflops
        from feat_engine.inference import native_bf16
        info["flop_per_token"] = flop_per_token(d=D)
        info["matmul_gflops"] = {"fp32": matmul_gflops(device=args.device)} | (
            {"bf16": matmul_gflops(torch.bfloat16, device=args.device)} if args.device == "cuda" or native_bf16() else {})
        print(f"[scaling] {info['flop_per_token'] / 1e6:.2f} M matmul FLOP per token; matmul GFLOP/s "
              f"{info['matmul_gflops']}", flush=True)
    results = []
    for variant in variants:
        sizes = args.sizes or (FORWARD_SIZES if variant in FORWARD else E2E_SIZES)
        if args.quick and not args.sizes:
            sizes = [n for n in sizes if n <= 100_000]
        stopped = False
        for n in sizes:
            if stopped:      # a smaller N already passed a limit: a larger one would too
                results.append({"variant": variant, "n": n, "status": "not run (a smaller N already passed a limit)"})
                continue
            print(f"[scaling] {variant} N={n:,} ...", flush=True)
            r = measure(variant, n, args)
            results.append(r)
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps(r) + "\n")
            if r.get("status") == "ok":
                print(f"[scaling]   {r['time_s']:.2f} s, peak RSS {r['peak_rss_bytes'] / GiB:.2f} GiB "
                      f"(base {r['base_rss_bytes'] / GiB:.2f} GiB)", flush=True)
            else:
                print(f"[scaling]   {r['status']}", flush=True)
                stopped = True
    precision = "bf16" if args.bf16 else "fp32"
    titles = {"forward": (PNG, f"FEAT forward on CPU ({precision}, shipped size, random weights)",
                          f"rows N (half context, half query), D = {D}"),
              "e2e": (PNG_E2E, "fit + predict on CPU (one ensemble member)",
                      f"rows N (half training, half predicted), D = {D}")}
    # on a GPU both tables go into one section, "scaling-cuda", with no plot; on the CPU each has its own
    tables = ["cuda"] if args.device == "cuda" else [name for name, group in GROUPS.items() if set(variants) & set(group)]
    for table in tables:
        png = None if table == "cuda" or args.no_write else titles[table][0]
        body = report(table, results, info, command, started, args, time.perf_counter() - t0,
                      png.name if png else None)
        print("\n".join(body))
        if not args.no_write:
            doc = common.write_section(SECTIONS[table], body)
            res = common.save_results(SECTIONS[table], None, {
                "markdown": "\n".join(body), "command": command, "started": started, "machine": info,
                "args": vars(args), "results": [r for r in results if table == "cuda" or r["variant"] in GROUPS[table]]})
            if png:
                plot(results, GROUPS[table], *titles[table])
            print(f"[scaling] wrote section '{SECTIONS[table]}' of {doc}"
                  + (f" and {png.relative_to(ROOT)}" if png else "") + f", results to {res}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
