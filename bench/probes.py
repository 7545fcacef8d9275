"""Synthetic probes of what real tables throw at FEAT: a many-level nominal column, a wide table
with few relevant features, a dense linear target, heavy-tailed features, a right-skewed target,
a long table whose target has local structure, classes that live in regions, and nominal columns of a few dozen
rows a level among many numeric ones (`large_tables.py`'s probe at a short context). Each is a generated table with a known answer, so a change to how
the estimators read tables can be checked on more than the development tables.

Methods (defaults everywhere): FEAT as shipped (target statistics, relevance-ranked features,
local contexts), FEAT reading the whole context (`local_context=None`), FEAT choosing its reading on
the context (`local_context="auto"`), FEAT given the nominal
column as plain integer codes (what it read before target statistics), ridge / logistic
regression (standardised numerics, one-hot categoricals) and LightGBM.

    python bench/probes.py             # 3 seeds per probe
    python bench/probes.py --quick     # 1 seed, long table at 2,048 and 8,192 context rows
    python bench/probes.py --probes "long table" --sizes 32768 --methods feat,lightgbm

Writes the "probes" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from sklearn.datasets import make_friedman1

import common as C
from feat_engine.estimators import LOCAL_CONTEXT
from large_tables import probe
from quality import fit_predict

N_TEST = 1000


def many_levels(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Regression: a 60-level nominal column (Zipf-like frequencies) whose level carries most of
    the signal, two numeric effects and two noise columns."""
    levels = 60
    p = 1.0 / np.arange(1, levels + 1) ** 0.8
    level = rng.choice(levels, n, p=p / p.sum())
    effect = rng.normal(size=levels)
    x = rng.normal(size=(n, 4))
    y = effect[level] + 0.5 * x[:, 0] - 0.3 * x[:, 1] + 0.3 * rng.normal(size=n)
    X = pd.DataFrame(x, columns=["x1", "x2", "noise1", "noise2"])
    # an unordered category, as the table loader types real tables
    X.insert(0, "level", pd.Categorical([f"L{v:02d}" for v in rng.permutation(levels)[level]]))
    return X, y, "regression"


def wide(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Classification: 60 features, 6 of them relevant (linear, an interaction, a sine)."""
    x = rng.normal(size=(n, 60))
    logit = x[:, 0] + x[:, 1] - x[:, 2] + 0.8 * x[:, 3] * x[:, 4] + np.sin(2 * x[:, 5])
    y = (logit + 0.5 * rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame(x[:, rng.permutation(60)], columns=[f"f{j}" for j in range(60)]), y, "classification"


def dense_linear(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Regression: y = Xw + 0.3 eps over 10 standard-normal features, |w| = 1."""
    x = rng.normal(size=(n, 10))
    w = rng.normal(size=10)
    return pd.DataFrame(x), x @ (w / np.linalg.norm(w)) + 0.3 * rng.normal(size=n), "regression"


def heavy_tails(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Regression: 6 log-normal features (incomes, counts, prices), a target smooth in their logs
    (linear, a sine, a square) plus noise 0.3: most rows sit near zero after standardisation."""
    x = rng.lognormal(0.0, 1.2, size=(n, 6))
    z = np.log(x)
    y = z[:, 0] + np.sin(z[:, 1]) - 0.5 * z[:, 2] + 0.2 * z[:, 3] ** 2 + 0.3 * rng.normal(size=n)
    return pd.DataFrame(x, columns=[f"x{j}" for j in range(6)]), y, "regression"


def skewed_target(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Regression: a log-normal target (a price, an income) of 6 normal features, its log smooth in them
    (linear, a sine, a square) plus noise 0.4: R² is read in the target's own units, where the tail weighs most."""
    x = rng.normal(size=(n, 6))
    f = x[:, 0] + np.sin(2 * x[:, 1]) + 0.4 * x[:, 2] ** 2 - 0.5 * x[:, 3]
    return pd.DataFrame(x, columns=[f"x{j}" for j in range(6)]), np.exp(0.8 * f + 0.4 * rng.normal(size=n)), "regression"


def long_table(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Regression: Friedman #1 (10 uniform features, 5 used, sin / square / linear terms), noise 1."""
    x, y = make_friedman1(n, noise=1.0, random_state=int(rng.integers(2**31 - 1)))
    return pd.DataFrame(x), y, "regression"


def many_classes(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Classification: 8 classes, each three Gaussian clusters in 6 features, and 2 noise features: classes live in
    regions of the feature space, as digits or textures do, so a local part holds some of the classes only."""
    k, per = 8, 3
    centres = rng.normal(scale=2.0, size=(k * per, 6))
    cluster = rng.integers(k * per, size=n)
    x = np.hstack([centres[cluster] + rng.normal(size=(n, 6)), rng.normal(size=(n, 2))])
    return pd.DataFrame(x, columns=[f"x{j}" for j in range(8)]), cluster % k, "classification"


def mixed_columns(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Regression: `large_tables.py`'s probe (16 normal features, a 12-level and a 40-level nominal column, two
    log-normal ones; interactions, a threshold, a level effect, noise 1) at a short context, where a level has a few
    dozen rows: how the tree model splits categories shows here (docs/decisions/0023-tree-model.md)."""
    X, y = probe(n, "regression", seed=int(rng.integers(2**31 - 1)))
    return X, y, "regression"


PROBES = {"many-level nominal": (many_levels, [2000]), "wide (60 features)": (wide, [2000]),
          "dense linear": (dense_linear, [1024]), "heavy tails": (heavy_tails, [2000]),
          "skewed target": (skewed_target, [2000]), "long table": (long_table, [2048, 32768]),
          "many classes": (many_classes, [8192]), "mixed columns": (mixed_columns, [2000])}


def as_codes(X: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns as integer codes in sorted order: what FEAT read before target statistics."""
    X = X.copy()
    for c in C.column_kinds(X)[1]:
        X[c] = pd.Categorical(X[c]).codes.astype(float)
    return X


def run_probe(name: str, n_ctx: int, seed: int, args) -> dict:
    make, _ = PROBES[name]
    X, y, task = make(n_ctx + N_TEST, np.random.default_rng(seed))
    Xc, Xq, yc, yq = X.iloc[:n_ctx], X.iloc[n_ctx:].reset_index(drop=True), y[:n_ctx], y[n_ctx:]
    k = int(y.max()) + 1 if task == "classification" else 0
    methods = ["feat", "feat-global", "feat-auto"] + (["feat-codes"] if C.column_kinds(X)[1] else []) + ["linear", "lightgbm"]
    methods = [m for m in methods if args.methods is None or m in args.methods.split(",")]
    rec = {"probe": name, "task": task, "n_context": n_ctx, "seed": seed, "methods": {}}
    for m in methods:
        t0 = time.perf_counter()
        args.local_context = {"feat-global": None, "feat-auto": "auto"}.get(m, LOCAL_CONTEXT)
        Xc_m, Xq_m = (as_codes(Xc), as_codes(Xq)) if m == "feat-codes" else (Xc, Xq)
        out = fit_predict(m.split("-")[0], task, Xc_m, yc, Xq_m, k, args)
        score = (C.classification_metrics(yq, out)["auc"] if task == "classification"
                 else C.regression_metrics(yq, out, yc)["r2"])
        rec["methods"][m] = {"score": score, "time_s": time.perf_counter() - t0}
        print(f"[probes] {name:20s} n={n_ctx:6d} seed={seed} {m:12s} {score:.4f}", flush=True)
    return rec


LABELS = {"feat": "FEAT", "feat-global": "FEAT, whole context", "feat-auto": "FEAT, reading chosen on the context",
          "feat-codes": "FEAT, level codes",
          "linear": "linear", "lightgbm": "LightGBM"}


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float):
    methods = list(LABELS)
    rows, summary = [], {}
    for name, (_, sizes) in PROBES.items():
        for n in sizes:
            rs = [r for r in recs if r["probe"] == name and r["n_context"] == n]
            if not rs:
                continue
            task = rs[0]["task"]
            cell = {m: [r["methods"][m]["score"] for r in rs if m in r["methods"]] for m in methods}
            metric = "ROC-AUC" if task == "classification" else "R²"
            rows.append([name, f"{n:,}", metric] + [C.fmt(np.mean(v)) if v else "—" for v in cell.values()])
            summary[f"{name} {n}"] = {m: float(np.mean(v)) for m, v in cell.items() if v}
    header = ["probe", "context rows", "metric"] + [LABELS[m] if m != "linear" else "ridge / logistic" for m in methods]
    body = [
        "## Synthetic probes",
        "",
        f"Generated tables with a known structure (bench/probes.py docstring), {N_TEST} test rows, mean over "
        f"{args.seeds} seed(s). FEAT with `n_estimators={args.n_estimators}`, {C.precision_text(args.precision, args.device)}, `view={args.view!r}`{'' if args.blend else ', `blend=False`'}, checkpoint {C.checkpoint_line(args.checkpoint)}; "
        "baselines at library defaults.",
        "",
        *C.markdown_table(header, rows),
        "",
        *C.provenance(command, started, info, seconds),
    ]
    return body, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1 seed; long table at 2,048 and 8,192 rows")
    p.add_argument("--seeds", type=int, default=None, help="tables per probe (default 3; quick 1)")
    p.add_argument("--n-estimators", type=int, default=None,
                   help="FEAT ensemble members (default: the estimators' own, `members.planned_members`)")
    p.add_argument("--device", default="auto")
    p.add_argument("--probes", default=None, help=f"comma-separated probe names (default: all of {list(PROBES)})")
    p.add_argument("--sizes", default=None, help="comma-separated context sizes (default: each probe's own)")
    p.add_argument("--methods", default=None, help=f"comma-separated subset of {list(LABELS)}")
    C.add_precision_arg(p)
    C.add_view_arg(p)
    C.add_common_args(p, section="probes")
    args = p.parse_args(argv)
    args.seeds = args.seeds or (1 if args.quick else 3)
    args.multiclass = "ovr"
    if args.quick:
        PROBES["long table"] = (long_table, [2048, 8192])
    cells = [(name, n) for name, (_, sizes) in PROBES.items() for n in sizes
             if (args.probes is None or name in args.probes.split(","))
             and (args.sizes is None or str(n) in args.sizes.split(","))]
    return C.run_benchmark("probes.py", argv, args,
                           lambda: [run_probe(name, n, s, args) for name, n in cells for s in range(args.seeds)],
                           lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
