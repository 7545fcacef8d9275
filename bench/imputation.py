"""Imputation on complete copies of the development tables: FEAT versus the usual imputers.

Protocol (paper section 6.3, issue 6 item 3): take a table's feature columns (the target is
left out), drop every row with a missing value, subsample --max-rows rows and at most
--max-cols columns (fixed seed), then hide 20% of the cells with the engine's own mask
generator `feat_engine.prior.masks.make_mask` (cell 50%, stripe 30%, block 20%). Each method
fills the hidden cells from the rest of the table; the hidden truth is known.

Methods:
  feat          FEATImputer().fit_transform on the DataFrame (categoricals as category), at its defaults:
                the default, chained in-context predictions per column
  feat-recon    the same with method="reconstruction" (the imputation head)
  mean/mode     column mean (numeric) / most frequent level (categorical)
  knn           KNNImputer(n_neighbors=5) on the standardised table
  iter-bayes    IterativeImputer(BayesianRidge) on the standardised table
  iter-trees    IterativeImputer(ExtraTreesRegressor(n_estimators=10)) on the standardised table
                (scikit-learn's missForest-style example)
For the scikit-learn imputers categoricals are integer codes (standardised like numerics); their
imputed value is rounded to the nearest valid code.

Metrics: NRMSE on numeric hidden cells, the RMSE of each column divided by the standard
deviation of that column's true values, averaged over columns; accuracy on categorical hidden
cells (all of them pooled); wall time.

    python bench/imputation.py            # all 13 tables, 3,000 rows, 24 columns
    python bench/imputation.py --quick    # 5 tables, 1,000 rows
    python bench/imputation.py --feat-members 1,4   # FEAT with 1 and with 4 members side by side
    python bench/imputation.py --tables none --probes 100000 --rate 0.01   # a long synthetic table

A probe (`--probes`) is a synthetic table of that many rows whose 20 columns all depend on five latent factors
(`probe`), for long tables, where the development tables' copies are capped at --max-rows.

Writes the "imputation" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import time
import traceback

import numpy as np
import pandas as pd

import common as C

METHODS = ["feat", "feat-recon", "mean/mode", "knn", "iter-bayes", "iter-trees"]
LABEL = {"feat": "FEAT", "feat-recon": "FEAT (reconstruction)", "mean/mode": "mean/mode", "knn": "KNNImputer", "iter-bayes": "Iterative (BayesianRidge)",
         "iter-trees": "Iterative (ExtraTrees)"}
QUICK_TABLES = ["phoneme", "compas_two_year_recid", "concrete_strength", "cps1988_wage", "adult_income"]


def complete_copy(name: str, max_rows: int, max_cols: int, seed: int) -> pd.DataFrame:
    """The table's features without incomplete rows, subsampled to max_rows x max_cols (fixed seed),
    without columns that are constant in the subsample."""
    X, _, _ = C.load_table(name)
    rng = np.random.default_rng(seed)
    X = X.dropna().reset_index(drop=True)
    if len(X) > max_rows:
        X = X.iloc[np.sort(rng.choice(len(X), max_rows, replace=False))].reset_index(drop=True)
    X = X[[c for c in X.columns if X[c].nunique() > 1]]
    if X.shape[1] > max_cols:
        X = X[[X.columns[i] for i in np.sort(rng.choice(X.shape[1], max_cols, replace=False))]]
    for c in X.columns:
        if isinstance(X[c].dtype, pd.CategoricalDtype):
            X[c] = X[c].cat.remove_unused_categories()
    return X


def probe(n: int, seed: int) -> pd.DataFrame:
    """A synthetic table of n rows whose 20 columns all depend on five latent factors: 16 numbers, 2 positive
    heavy-tailed ones (as budgets or prices) and 2 categories (a factor cut into 4 and into 12 levels)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 5))
    X = pd.DataFrame(z @ rng.normal(size=(5, 16)) + 0.5 * rng.normal(size=(n, 16)), columns=[f"x{j}" for j in range(16)])
    X["h0"] = np.exp(z[:, 0] + 0.5 * rng.normal(size=n))
    X["h1"] = np.exp(z[:, 1] - z[:, 2] + 0.5 * rng.normal(size=n))
    for name, factor, levels in (("a", 3, 4), ("b", 4, 12)):
        cut = np.quantile(z[:, factor], np.arange(1, levels) / levels)
        X[name] = pd.Categorical([f"{name}{v}" for v in np.digitize(z[:, factor] + 0.3 * rng.normal(size=n), cut)])
    return X


def _codes(X: pd.DataFrame, cats: list) -> pd.DataFrame:
    """Numeric view: categorical columns as their integer codes (NaN stays NaN)."""
    out = X.copy()
    for c in cats:
        codes = out[c].cat.codes.astype(float)
        out[c] = codes.where(codes >= 0, np.nan)
    return out.astype(float)


def impute(method: str, Xm: pd.DataFrame, cats: list, args) -> pd.DataFrame:
    """Xm with every NaN filled; categorical columns come back as codes (float) for the sklearn
    imputers and as labels for FEAT and mean/mode."""
    if method.startswith("feat"):
        from feat_engine import FEATImputer

        n = int(method.split(":")[1]) if ":" in method else args.n_estimators
        return FEATImputer(n_estimators=n, random_state=C.SEED, device=args.device, checkpoint=args.checkpoint,
                           method="reconstruction" if method == "feat-recon" else "chained").fit_transform(Xm)
    if method == "mean/mode":
        out = Xm.copy()
        for c in Xm.columns:
            out[c] = out[c].fillna(Xm[c].mode().iloc[0] if c in cats else Xm[c].mean())
        return out
    from sklearn.ensemble import ExtraTreesRegressor
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer, KNNImputer
    from sklearn.linear_model import BayesianRidge

    Z = _codes(Xm, cats)
    mu, sd = Z.mean(), Z.std().replace(0, 1.0).fillna(1.0)
    Zs = np.array(((Z - mu) / sd).to_numpy(dtype=float), copy=True)   # writable (pandas copy-on-write)
    if method == "knn":
        imp = KNNImputer(n_neighbors=5, keep_empty_features=True)
    elif method == "iter-bayes":
        imp = IterativeImputer(estimator=BayesianRidge(), random_state=C.SEED, keep_empty_features=True)
    elif method == "iter-trees":
        imp = IterativeImputer(estimator=ExtraTreesRegressor(n_estimators=10, random_state=C.SEED, n_jobs=args.threads),
                               random_state=C.SEED, keep_empty_features=True)
    else:
        raise ValueError(method)
    filled = pd.DataFrame(imp.fit_transform(Zs) * sd.to_numpy() + mu.to_numpy(), columns=Xm.columns)
    for c in cats:
        filled[c] = np.clip(np.round(filled[c]), 0, len(Xm[c].cat.categories) - 1)
    return filled


def score(X: pd.DataFrame, filled: pd.DataFrame, mask: np.ndarray, cats: list) -> dict:
    nrmse, hits, n_cat = [], 0, 0
    for j, c in enumerate(X.columns):
        rows = mask[:, j]
        if not rows.any():
            continue
        if c in cats:
            truth = X[c].cat.codes.to_numpy()[rows]
            got = filled[c]
            if isinstance(got.dtype, pd.CategoricalDtype) or got.dtype == object:
                got = pd.Categorical(got, categories=X[c].cat.categories).codes
            got = np.asarray(got, dtype=float)[rows]
            hits += int((got == truth).sum())
            n_cat += int(rows.sum())
        else:
            truth = X[c].to_numpy(dtype=float)
            got = np.asarray(filled[c], dtype=float)[rows]
            sd = truth[rows].std() if rows.sum() > 1 else 0.0
            sd = sd if sd > 0 else truth.std()
            if sd > 0:
                nrmse.append(float(np.sqrt(np.nanmean((got - truth[rows]) ** 2)) / sd) if np.isfinite(got).all() else float("nan"))
    return {"nrmse": float(np.mean(nrmse)) if nrmse else float("nan"),
            "cat_acc": hits / n_cat if n_cat else float("nan"), "n_num_cols": len(nrmse), "n_cat_cells": n_cat}


def run_table(name: str, methods: list[str], args, rows: int | None = None) -> dict:
    """Every method on the development table `name`'s complete copy, or on a probe of `rows` rows."""
    X = complete_copy(name, args.max_rows, args.max_cols, C.SEED) if rows is None else probe(rows, C.SEED)
    cats = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    from feat_engine.prior.masks import make_mask

    mask = make_mask(X.shape, args.rate, C.SEED)
    Xm = X.mask(pd.DataFrame(mask, columns=X.columns))
    for c in cats:   # keep every level, also those hidden entirely
        Xm[c] = pd.Categorical(Xm[c], categories=X[c].cat.categories)
    rec = {"table": name, "rows": len(X), "cols": X.shape[1], "cat_cols": len(cats), "hidden": float(mask.mean()),
           "methods": {}}
    for m in methods:
        r: dict = {}
        try:
            t0 = time.perf_counter()
            filled = impute(m, Xm, cats, args)
            r["time_s"] = time.perf_counter() - t0
            left = int(pd.DataFrame(filled).isna().to_numpy()[mask].sum())
            if left:
                r["unfilled"] = left
            r.update(score(X, filled, mask, cats))
        except Exception as e:
            r["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        rec["methods"][m] = r
        print(f"[imputation] {name:24s} {m:12s} "
              f"{ {k: round(v, 4) for k, v in r.items() if isinstance(v, float)} if 'error' not in r else r['error']}",
              flush=True)
    return rec


def _label(m: str) -> str:
    return f"FEAT ({m.split(':')[1]} member{'s' if m.split(':')[1] != '1' else ''})" if m.startswith("feat:") else LABEL[m]


def _v(r: dict, m: str, k: str) -> float:
    return float(r["methods"].get(m, {}).get(k, float("nan")))


def report(recs: list[dict], methods: list[str], args, info, command, started, elapsed) -> tuple[list[str], dict]:
    copies = ("Complete copies of the development tables (feature columns only; rows with any missing value dropped; "
              f"at most {args.max_rows:,} rows and {args.max_cols} columns, fixed seed {C.SEED}; columns constant in "
              "the copy dropped). " if args.tables != "none" else "")
    lines = ["## Imputation", "",
             f"{copies}{args.rate:.0%} of the cells hidden with `feat_engine.prior.masks.make_mask` "
             "(cell 50 % / stripe 30 % / block 20 %, seed 0). NRMSE: per numeric column, RMSE over its hidden cells "
             "divided by the standard deviation of their true values, averaged over columns (lower is better; "
             "mean imputation scores about 1). Accuracy: share of hidden categorical cells restored exactly."
             + (" Probes: synthetic tables of 20 columns on five latent factors (`probe`)." if args.probes != "none"
                else "")
             + f" FEAT checkpoint {C.checkpoint_line(args.checkpoint)}. Best per table in bold.", ""]
    summary = {}
    for key, title, higher in (("nrmse", "NRMSE on numeric cells", False), ("cat_acc", "Accuracy on categorical cells", True)):
        rs = [r for r in recs if any(not np.isnan(_v(r, m, key)) for m in methods)]
        if not rs:
            continue
        rows = []
        for r in rs:
            vals = {m: _v(r, m, key) for m in methods}
            fin = [v for v in vals.values() if not np.isnan(v)]
            best = (max(fin) if higher else min(fin)) if fin else None
            rows.append([r["table"], f"{r['rows']:,} × {r['cols']}", *[
                ("failed" if "error" in r["methods"].get(m, {}) else
                 (f"**{C.fmt(vals[m])}**" if vals[m] == best else C.fmt(vals[m]))) for m in methods]])
        rk = [C.ranks({m: _v(r, m, key) for m in methods}, higher) for r in rs]
        means = {m: float(np.mean([_v(r, m, key) for r in rs])) for m in methods}
        mranks = {m: float(np.mean([x[m] for x in rk])) for m in methods}
        rows.append(["**mean**", f"{len(rs)} tables", *[C.fmt(means[m]) for m in methods]])
        rows.append(["**mean rank**", "", *[C.fmt(mranks[m], 2) for m in methods]])
        summary[key] = {"mean": means, "rank": mranks, "tables": [r["table"] for r in rs]}
        lines += [*C.markdown_table([title, "rows × cols", *map(_label, methods)], rows), ""]
    times = {m: float(np.nansum([_v(r, m, "time_s") for r in recs])) for m in methods}
    summary["time_s"] = times
    lines += ["**Time** (s, all tables, wall clock): " + ", ".join(f"{_label(m)} {times[m]:.1f}" for m in methods), ""]
    failed = [f"{_label(m)} on {r['table']} ({r['methods'][m]['error'][:80]})" for r in recs for m in methods
              if "error" in r["methods"].get(m, {})]
    if failed:
        lines += ["Failed runs: " + "; ".join(failed) + ".", ""]
    lines += C.provenance(command, started, info, elapsed)
    return lines, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"tables {QUICK_TABLES}, at most 1,000 rows")
    p.add_argument("--tables", default=None, help="development tables ('none' for none)")
    p.add_argument("--probes", default="none", help="rows of the synthetic probes, comma-separated ('none' for none)")
    p.add_argument("--max-rows", type=int, default=None, help="rows per table (default 3,000; quick 1,000)")
    p.add_argument("--max-cols", type=int, default=24, help="columns per table (FEAT's pretrained width)")
    p.add_argument("--rate", type=float, default=0.2, help="share of hidden cells")
    p.add_argument("--n-estimators", type=int, default=None,
                   help="FEAT members (default: FEATImputer's, 1 per column chained, 4 for the reconstruction)")
    p.add_argument("--feat-members", default=None,
                   help="comma-separated member counts to run FEAT with (default: --n-estimators only)")
    p.add_argument("--methods", default=None, help=f"comma-separated subset of {METHODS}")
    p.add_argument("--device", default="auto")
    C.add_common_args(p, section="imputation")
    args = p.parse_args(argv)
    args.max_rows = args.max_rows or (1000 if args.quick else 3000)
    methods = args.methods.split(",") if args.methods else list(METHODS)
    if args.feat_members and "feat" in methods:
        i = methods.index("feat")
        methods[i:i + 1] = [f"feat:{n}" for n in args.feat_members.split(",")]
    tables = [] if args.tables == "none" else C.pick_tables(args.tables, QUICK_TABLES if args.quick else None)
    probes = [] if args.probes == "none" else [int(v) for v in args.probes.split(",")]
    return C.run_benchmark('imputation.py', argv, args,
                           lambda: [run_table(n, methods, args) for n, _ in tables]
                           + [run_table(f"probe {n:,}", methods, args, n) for n in probes],
                           lambda recs, *rest: report(recs, methods, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
