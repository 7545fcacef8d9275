"""Scaling benchmark: forward time and peak RSS of FEAT versus N, with a full-attention contrast.

For each N (total rows; half context, half query) at D=10, a fresh subprocess builds the
model at the shipped size (ModelConfig() defaults, random weights), then times one
`feat_engine.inference.run` call: the context pass plus the prediction of every query row
(classification, 2 classes). Each N runs in its own process, so the peak RSS
(ru_maxrss of that process) is honest. The same is done for a same-size model whose sample
axis is full softmax attention (bench/attention_baseline.py); a run that passes the time or
memory limit is stopped and reported as such.

    python bench/scaling.py            # N = 1k, 10k, 100k, 1M
    python bench/scaling.py --quick    # N up to 100k
    python bench/scaling.py --bf16     # bf16 autocast

Writes the "Scaling" section of docs/benchmarks.md (between <!-- scaling:start --> and
<!-- scaling:end -->; the rest of the file is kept) and a log-log plot at docs/scaling.png.
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
DOC = ROOT / "docs" / "benchmarks.md"
PNG = ROOT / "docs" / "scaling.png"
START, END = "<!-- scaling:start -->", "<!-- scaling:end -->"
D = 10
GiB = 1024 ** 3


# -- child: one measurement ------------------------------------------------------------------

def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(variant: str, n: int, bf16: bool, repeats: int, seed: int) -> dict:
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
    n_params = sum(p.numel() for p in model.parameters())
    icfg = InferenceConfig(autocast_bf16=bf16)

    rng = np.random.default_rng(seed)
    n_ctx = n // 2
    x = rng.standard_normal((n, D), dtype=np.float32)
    y = (x[:n_ctx, 0] + 0.5 * x[:n_ctx, 1] > 0).astype(np.float32)

    # warm-up on a small table (kernel selection, allocator), not timed
    run(model, x[:256], y[:256], x[n_ctx:n_ctx + 256], "classification", 2, cfg=icfg, device="cpu")
    base_rss = _rss_bytes()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = run(model, x[:n_ctx], y, x[n_ctx:], "classification", 2, cfg=icfg, device="cpu")
        times.append(time.perf_counter() - t0)
    assert res.logits.shape == (n - n_ctx, cfg.max_classes) and np.isfinite(res.logits[:, :2]).all()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024     # Linux: KiB
    return {"variant": variant, "n": n, "n_ctx": n_ctx, "d": D, "bf16": bf16, "time_s": min(times),
            "times_s": times, "peak_rss_bytes": peak, "base_rss_bytes": base_rss, "params": n_params,
            "threads": torch.get_num_threads(), "status": "ok"}


# -- parent: run children under limits ----------------------------------------------------------

def measure(variant: str, n: int, args) -> dict:
    import psutil

    repeats = 3 if n <= 1_000 else 1
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", variant, "--n", str(n),
           "--repeats", str(repeats), "--seed", str(args.seed)] + (["--bf16"] if args.bf16 else [])
    limit_s = args.time_limit if variant == "attention" else args.feat_time_limit
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
    return f"{r['time_s']:.2f}" if r.get("status") == "ok" else "—"


def _cell_mem(r):
    return f"{r['peak_rss_bytes'] / GiB:.2f}" if r.get("status") == "ok" else "—"


def report(results: list[dict], info: dict, command: str, started: str, args) -> str:
    by = {(r["variant"], r["n"]): r for r in results}
    sizes = sorted({r["n"] for r in results})
    params = next((r["params"] for r in results if r.get("params")), 0)
    lines = [
        START,
        "## Scaling",
        "",
        f"Forward time (context pass + prediction of every query row through `feat_engine.inference.run`) and "
        f"peak RSS of a fresh process per N, at D = {D}, half of the N rows context and half query, random weights "
        f"at the shipped model size (`ModelConfig()`, {params:,} parameters), "
        f"default `InferenceConfig`{' with bf16 autocast' if args.bf16 else ' (fp32)'}. "
        "The contrast model is the same network with each sample-axis mixer replaced by full softmax attention "
        "(context rows attend to context rows, queries to the context; `bench/attention_baseline.py`, "
        "PyTorch SDPA, i.e. flash-style kernels with O(N) memory and O(N²) time).",
        "",
        "| N (rows) | context | FEAT time (s) | FEAT peak RSS (GiB) | attention time (s) | attention peak RSS (GiB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for n in sizes:
        f, a = by.get(("feat", n), {}), by.get(("attention", n), {})
        lines.append(f"| {n:,} | {n // 2:,} | {_cell_time(f)} | {_cell_mem(f)} | {_cell_time(a)} | {_cell_mem(a)} |")
        for r in (f, a):
            if r and r.get("status") != "ok":
                notes.append(f"- {r['variant']} at N = {n:,}: {r['status']}"
                             + (f" (RSS {r['peak_rss_bytes'] / GiB:.1f} GiB when stopped)" if r.get("peak_rss_bytes") else ""))
    lines.append("")
    if notes:
        lines += ["Runs that did not finish:", "", *notes, ""]
    ok = {n: by[("feat", n)] for n in sizes if by.get(("feat", n), {}).get("status") == "ok"}
    big = [n for n in (100_000, 1_000_000) if n in ok]
    if len(big) == 2:
        t_ratio = ok[1_000_000]["time_s"] / ok[100_000]["time_s"]
        m_ratio = ok[1_000_000]["peak_rss_bytes"] / ok[100_000]["peak_rss_bytes"]
        inc = [(ok[n]["peak_rss_bytes"] - ok[sizes[0]]["peak_rss_bytes"]) for n in big]
        lines.append(f"**Target** time(1M)/time(100k) ≤ 11: measured **{t_ratio:.1f}** "
                     f"({'met' if t_ratio <= 11 else 'not met'}). Peak RSS grows {m_ratio:.1f}× from 100k to 1M "
                     f"({inc[1] / max(inc[0], 1):.1f}× above the {_fmt_n(sizes[0])}-row process).")
        lines.append("")
    elif len(ok) >= 2:
        ns = sorted(ok)
        lo, hi = ns[-2], ns[-1]
        lines.append(f"time({_fmt_n(hi)})/time({_fmt_n(lo)}) = {ok[hi]['time_s'] / ok[lo]['time_s']:.1f} "
                     f"for {hi / lo:.0f}× the rows; peak RSS ratio {ok[hi]['peak_rss_bytes'] / ok[lo]['peak_rss_bytes']:.1f}.")
        lines.append("")
    la = info["loadavg"]
    lines += [
        "![FEAT vs full attention, log-log](scaling.png)",
        "",
        f"- Command: `{command}`",
        f"- Date: {started}",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']:.0f} GiB RAM; torch {info['torch']} "
        f"({info['threads']} threads), Python {info['python']}",
        f"- Git commit: {info['commit']}",
        f"- Load: 1-min load average {la[0]:.1f} at the start on {info['cores']} cores"
        + (" (the cores were shared with other jobs, so absolute times are pessimistic and noisy)" if la[0] > 1.5 else "")
        + "; N = 1k is the best of 3 runs, "
        "larger N a single run. Limits: attention runs stopped after "
        f"{args.time_limit:g} s, any run stopped above {args.mem_limit_gb:g} GiB RSS.",
        END,
    ]
    return "\n".join(lines)


def write_doc(section: str) -> None:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n\nMeasured numbers and the commands that produced them.\n"
    if START in text and END in text:
        pre, rest = text.split(START, 1)
        post = rest.split(END, 1)[1]
        text = pre + section + post
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOC.write_text(text)


def plot(results: list[dict], path: Path, bf16: bool) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for variant, label, style in (("feat", "FEAT (AFBM + Conv-GLA)", "o-"), ("attention", "full softmax attention", "s--")):
        rs = sorted((r for r in results if r["variant"] == variant and r.get("status") == "ok"), key=lambda r: r["n"])
        if rs:
            ns = [r["n"] for r in rs]
            ax_t.plot(ns, [r["time_s"] for r in rs], style, label=label)
            ax_m.plot(ns, [r["peak_rss_bytes"] / GiB for r in rs], style, label=label)
        stopped = [r for r in results if r["variant"] == variant and r.get("status", "ok") != "ok"]
        for r in stopped:
            ax_t.annotate("stopped", (r["n"], ax_t.get_ylim()[1] if rs else 1), fontsize=8)
    feat = sorted((r for r in results if r["variant"] == "feat" and r.get("status") == "ok"), key=lambda r: r["n"])
    if feat:
        n0, t0 = feat[0]["n"], feat[0]["time_s"]
        xs = [n0, max(r["n"] for r in results)]
        ax_t.plot(xs, [t0, t0 * xs[1] / n0], ":", color="gray", label="linear (slope 1)")
    for ax, yl in ((ax_t, "forward time (s)"), (ax_m, "peak RSS (GiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows N (half context, half query), D = 10")
        ax.set_ylabel(yl)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"FEAT scaling on CPU ({'bf16' if bf16 else 'fp32'}, shipped model size, random weights)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N up to 100k")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast")
    p.add_argument("--sizes", type=lambda s: [int(float(v)) for v in s.split(",")], default=None,
                   help="comma-separated N values (overrides --quick)")
    p.add_argument("--variants", default="feat,attention")
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds before an attention run is stopped")
    p.add_argument("--feat-time-limit", type=float, default=7200.0, help="seconds before a FEAT run is stopped")
    p.add_argument("--mem-limit-gb", type=float, default=16.0, help="RSS (GiB) at which any run is stopped")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/ untouched")
    p.add_argument("--log", default=None, help="append each result as a JSON line to this file")
    p.add_argument("--child", choices=["feat", "attention"], help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        print(json.dumps(child(args.child, args.n, args.bf16, args.repeats, args.seed)), flush=True)
        return 0

    command = "python bench/scaling.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    started = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    import common

    info = common.machine()
    sizes = args.sizes or ([1_000, 10_000, 100_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000])
    results = []
    for variant in args.variants.split(","):
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
    section = report(results, info, command, started, args)
    print(section)
    if not args.no_write:
        write_doc(section)
        plot(results, PNG, args.bf16)
        print(f"[scaling] wrote {DOC.relative_to(ROOT)} and {PNG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
