"""Where the time of `fit` and `predict` goes: wall time and CPU time of each stage at the defaults.

Each stage is a function of the estimators' layout (docs/architecture.md, "Fit, stage by stage") wrapped with a timer for the run;
nothing else changes. Stages nest (the blend's choice reads the engine, the stacked model's fit holds its
candidates' cross-fits), so a stage's time includes its children's. Engine runs on local parts run on worker
threads: their wall time is summed over the threads, and "parts on all cores" is the wall time of the parallel
section around them. CPU / wall near the number of cores means every core is busy.

    python bench/stage_profile.py                                  # every development table, 2,048 context rows
    python bench/stage_profile.py --tables adult_income --max-context 10000
    python bench/stage_profile.py --probes                         # the synthetic probes of probes.py instead

Writes the "stage-profile" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import threading
import time
from collections import defaultdict
from contextlib import contextmanager

import common as C
import numpy as np
from quality import fit_predict

# (label, module, attribute): the stages, in the order `fit` and `predict` meet them
STAGES = [
    ("preprocessing", "feat_engine.estimators.base", "FEATBase._fit_features"),
    ("reading choice (local_context='auto')", "feat_engine.estimators.in_context", "choose_local_context"),
    ("relevance", "feat_engine.estimators.in_context", "relevance"),
    ("members", "feat_engine.estimators.in_context", "plan_members"),
    ("local parts", "feat_engine.estimators.in_context", "local_contexts"),
    ("target statistics", "feat_engine.reading.run_inputs", "fit_target_stats"),
    ("stacked model (choice and cross-fits)", "feat_engine.reading.run_inputs", "fit_stacked_models"),
    ("  additive model cross-fits", "feat_engine.reading.stacked_model", "_additive_candidates"),
    ("  tree model cross-fits", "feat_engine.reading.stacked_model", "_tree_candidate"),
    ("power target", "feat_engine.reading.run_inputs", "fit_power_target"),
    ("members and blend (held-out rows read, fits on the way)", "feat_engine.estimators.in_context",
     "InContextBase._choose_members_and_blend"),
    ("routing queries to parts", "feat_engine.estimators.in_context", "InContextBase._routes"),
    ("query rows preprocessed", "feat_engine.estimators.in_context", "InContextBase._query_rows"),
    ("run matrices (statistics, stacked model applied)", "feat_engine.estimators.in_context",
     "InContextBase._run_matrices"),
    ("parts on all cores (map_runs)", "feat_engine.estimators.runner", "map_runs"),
    ("quantile transform", "feat_engine.estimators.runner", "quantile_normal"),
    ("engine runs (summed over threads)", "feat_engine.estimators.runner", "run_tables"),
]


class Timers:
    """Wall and process CPU time per stage, across threads."""

    def __init__(self):
        self.wall, self.cpu, self.calls = defaultdict(float), defaultdict(float), defaultdict(int)
        self.lock = threading.Lock()

    def wrap(self, label: str, fn):
        def timed(*args, **kwargs):
            w0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.wall[label] += time.perf_counter() - w0
                    self.cpu[label] += time.process_time() - c0
                    self.calls[label] += 1
        return timed


@contextmanager
def timed_stages(timers: Timers):
    """Every stage of STAGES wrapped with `timers` for the duration; put back afterwards."""
    import importlib

    undo = []
    for label, module, attr in STAGES:
        owner = importlib.import_module(module)
        *path, name = attr.split(".")
        for p in path:
            owner = getattr(owner, p)
        real = owner.__dict__[name]
        wrapped = timers.wrap(label, real.__func__ if isinstance(real, staticmethod) else real)
        setattr(owner, name, staticmethod(wrapped) if isinstance(real, staticmethod) else wrapped)
        undo.append((owner, name, real))
    try:
        yield
    finally:
        for owner, name, real in reversed(undo):
            setattr(owner, name, real)


def profile(task: str, Xc, yc, Xq, k: int, args) -> dict:
    """fit + predict at the defaults with every stage timed; the split into fit and predict is timed apart."""
    timers = Timers()
    from feat_engine import FEATClassifier, FEATRegressor

    real_fit = {cls: cls.fit for cls in (FEATClassifier, FEATRegressor)}
    for cls in real_fit:
        cls.fit = timers.wrap("fit", real_fit[cls])
    try:
        with timed_stages(timers):
            w0, c0 = time.perf_counter(), time.process_time()
            fit_predict("feat", task, Xc, yc, Xq, k, args)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    finally:
        for cls, fn in real_fit.items():
            cls.fit = fn
    return {"wall": dict(timers.wall), "cpu": dict(timers.cpu), "calls": dict(timers.calls),
            "total_wall": wall, "total_cpu": cpu}


def run_table(name: str, task: str, args) -> dict:
    X, y, _ = C.load_table(name)
    yy, labels = C.encode_labels(y) if task == "classification" else (y.to_numpy(dtype=float), [])
    tr, te = C.split(yy, task, args.max_context, args.max_test)
    rec = profile(task, X.iloc[tr], yy[tr], X.iloc[te], len(labels), args)
    print(f"[stage-profile] {name}: {rec['total_wall']:.1f} s wall, {rec['total_cpu']:.1f} s CPU", flush=True)
    return {"table": name, "task": task, "n_context": len(tr), **rec}


def run_probe(name: str, args) -> dict:
    from probes import N_TEST, PROBES

    make, sizes = PROBES[name]
    X, y, task = make(sizes[0] + N_TEST, np.random.default_rng(0))
    n = sizes[0]
    rec = profile(task, X.iloc[:n], y[:n], X.iloc[n:], 2 if task == "classification" else 0, args)
    print(f"[stage-profile] probe {name}: {rec['total_wall']:.1f} s wall", flush=True)
    return {"table": f"probe: {name}", "task": task, "n_context": n, **rec}


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float):
    labels = ["fit"] + [s[0] for s in STAGES]
    wall = {lab: sum(r["wall"].get(lab, 0.0) for r in recs) for lab in labels}
    cpu = {lab: sum(r["cpu"].get(lab, 0.0) for r in recs) for lab in labels}
    total = sum(r["total_wall"] for r in recs)
    total_cpu = sum(r["total_cpu"] for r in recs)
    rows = [["fit + predict", C.fmt(total, 1), "100%", C.fmt(total_cpu, 1), C.fmt(total_cpu / total, 2)]]
    small = []                                   # stages under 1% of the wall time: one line, not rows
    for lab in labels:
        if wall[lab] <= 0:
            continue
        if wall[lab] < 0.01 * total and not lab.startswith(" "):
            small.append(f"{lab.split(' (')[0]} {wall[lab]:.1f}")
            continue
        rows.append([lab, C.fmt(wall[lab], 1), f"{100 * wall[lab] / total:.0f}%", C.fmt(cpu[lab], 1),
                     C.fmt(cpu[lab] / wall[lab], 2)])
    body = [
        "## Stage profile of fit and predict",
        "",
        f"FEAT at its defaults (`n_estimators={args.n_estimators}`, {C.precision_text(args.precision, args.device)}), "
        f"context capped at {args.max_context:,} rows, at most {args.max_test:,} query rows, summed over "
        f"{len(recs)} table(s). A stage's time includes the stages nested in it (indented ones, and the engine runs "
        "inside the blend's choice); engine runs on local parts are summed over the worker threads. Per table: "
        f"{C.results_ref(args.section, args.out)}.",
        "",
        *C.markdown_table(["stage", "wall s", "share of wall", "CPU s", "CPU / wall"], rows),
        "",
        *([*C.wrap("Under 1% each (wall s): " + ", ".join(small) + "."), ""] if small else []),
        *C.provenance(command, started, info, seconds),
    ]
    return body, {"stages": wall, "total": total}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", default=None, help="comma-separated development tables (default: all)")
    p.add_argument("--probes", action="store_true", help="the synthetic probes instead of the development tables")
    p.add_argument("--max-context", type=int, default=2048)
    p.add_argument("--max-test", type=int, default=500)
    p.add_argument("--n-estimators", type=int, default=None,
                   help="FEAT ensemble members (default: the estimators' own, `members.planned_members`)")
    p.add_argument("--device", default="auto")
    C.add_precision_arg(p)
    C.add_view_arg(p)
    C.add_local_context_arg(p)
    C.add_common_args(p, section="stage-profile")
    args = p.parse_args(argv)
    args.multiclass = "ovr"
    if args.probes:
        from probes import PROBES
        measure = lambda: [run_probe(name, args) for name in PROBES]  # noqa: E731
    else:
        measure = lambda: [run_table(n, t, args) for n, t in C.pick_tables(args.tables)]  # noqa: E731
    return C.run_benchmark("stage_profile.py", argv, args, measure, lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
