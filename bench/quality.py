"""Zero-shot quality on the development tables: FEAT versus the tools users would pick instead.

Every table gets one fixed 80/20 split (stratified for classification, seed 0); the context
(training) part is then capped at --max-context rows and the test part at --max-test rows by
stratified subsampling with the same seed. Every method sees exactly the same rows.

Methods (all at their library defaults; no tuning anywhere):
  feat      FEATClassifier / FEATRegressor (zero-shot, --n-estimators members), raw DataFrame in
  xgboost   XGBClassifier / XGBRegressor, hist, native categoricals (enable_categorical), NaN native
  lightgbm  LGBMClassifier / LGBMRegressor, pandas categoricals native, NaN native
  catboost  CatBoostClassifier / CatBoostRegressor, categoricals as cat_features (NaN as its own level)
  linear    LogisticRegression(max_iter=1000) / Ridge(): numerics median-imputed and standardised,
            categoricals one-hot (missing as its own level, unknown levels ignored)
  knn       KNeighbors(k=15), same preprocessing as linear (scaled numerics, one-hot categoricals)

Metrics: ROC-AUC (macro one-vs-rest for multiclass), accuracy, macro F1; RMSE of the target
divided by the context's standard deviation ("RMSE on the standardised target") and R^2; wall
time of fit + predict. Means and ranks across tables.

    python bench/quality.py                                   # full: context <= 50,000, test <= 2,000
    python bench/quality.py --quick                           # context <= 2,048, test <= 500, no CatBoost
    python bench/quality.py --max-context 2048 --max-test 500 # the issue-3 bar -> section "quality-bar"

The section is "quality-bar" when the caps are the issue-3 bar's (2,048 context, 500 test rows),
else "quality" (override with --section). --out writes elsewhere (smoke runs).
"""
from __future__ import annotations

import argparse
import time
import traceback

import numpy as np
import pandas as pd

import common as C

ALL_METHODS = ["feat", "xgboost", "lightgbm", "catboost", "linear", "knn"]
QUICK_METHODS = ["feat", "xgboost", "lightgbm", "linear", "knn"]
BAR = (2048, 500)
LABEL = {"feat": "FEAT", "xgboost": "XGBoost", "lightgbm": "LightGBM", "catboost": "CatBoost",
         "linear": "linear", "knn": "kNN-15"}


def linear_label(task: str) -> str:
    return "logistic" if task == "classification" else "ridge"


# -- the methods ---------------------------------------------------------------------------------

def _as_strings(X: pd.DataFrame, cats: list) -> pd.DataFrame:
    X = X.copy()
    for c in cats:
        X[c] = X[c].astype(object).where(X[c].notna(), "__nan__").astype(str)
    return X


def _sklearn_pipeline(model, nums: list, cats: list):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    parts = []
    if nums:
        parts.append(("num", make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler()), nums))
    if cats:
        parts.append(("cat", OneHotEncoder(handle_unknown="ignore"), cats))
    return make_pipeline(ColumnTransformer(parts, sparse_threshold=0.3), model)


def fit_predict(method: str, task: str, Xc: pd.DataFrame, yc: np.ndarray, Xq: pd.DataFrame, k: int, args):
    """(M, k) probabilities for classification, (M,) predictions for regression."""
    clf = task == "classification"
    nums, cats = C.column_kinds(Xc)
    th = args.threads
    if method == "feat":
        from feat_engine import FEATClassifier, FEATRegressor

        kw = dict(n_estimators=args.n_estimators, random_state=C.SEED, device=args.device, checkpoint=args.checkpoint,
                  local_context=args.local_context, precision=args.precision, view=args.view, blend=args.blend)
        est = (FEATClassifier(**kw, multiclass=args.multiclass) if clf else FEATRegressor(**kw)).fit(Xc, yc)
        choice = getattr(est, "member_choice_", None)       # the log says how many members each table kept
        print(f"[quality] FEAT members: {choice.describe() if choice else len(est.members_)}", flush=True)
        return full_proba(est.predict_proba(Xq), est.classes_, k) if clf else est.predict(Xq)
    if method == "xgboost":
        import xgboost as xgb

        kw = dict(tree_method="hist", enable_categorical=True, n_jobs=th, random_state=C.SEED)
        if clf:
            # XGBoost wants labels 0..K'-1: relabel the classes present in the context
            present, yl = np.unique(yc, return_inverse=True)
            est = xgb.XGBClassifier(**kw).fit(Xc, yl)
            return full_proba(est.predict_proba(Xq), present, k)
        return xgb.XGBRegressor(**kw).fit(Xc, yc).predict(Xq)
    if method == "lightgbm":
        import lightgbm as lgb

        kw = dict(verbose=-1, n_jobs=th, random_state=C.SEED)
        if clf:
            est = lgb.LGBMClassifier(**kw).fit(Xc, yc)
            return full_proba(est.predict_proba(Xq), est.classes_, k)
        return lgb.LGBMRegressor(**kw).fit(Xc, yc).predict(Xq)
    if method == "catboost":
        import catboost as cb

        kw = dict(verbose=0, thread_count=th, random_seed=C.SEED, allow_writing_files=False, cat_features=cats)
        Xc_s, Xq_s = _as_strings(Xc, cats), _as_strings(Xq, cats)
        if clf:
            est = cb.CatBoostClassifier(**kw).fit(Xc_s, yc)
            return full_proba(est.predict_proba(Xq_s), np.asarray(est.classes_).astype(int), k)
        return cb.CatBoostRegressor(**kw).fit(Xc_s, yc).predict(Xq_s)
    if method in ("linear", "knn"):
        from sklearn.linear_model import LogisticRegression, Ridge
        from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

        if method == "linear":
            model = LogisticRegression(max_iter=1000) if clf else Ridge()
        else:
            model = KNeighborsClassifier(15, n_jobs=th) if clf else KNeighborsRegressor(15, n_jobs=th)
        est = _sklearn_pipeline(model, nums, cats).fit(_as_strings(Xc, cats), yc)
        if clf:
            return full_proba(est.predict_proba(_as_strings(Xq, cats)), est.classes_, k)
        return est.predict(_as_strings(Xq, cats))
    raise ValueError(f"unknown method {method!r}")


def full_proba(p: np.ndarray, classes, k: int) -> np.ndarray:
    """Probabilities over all k classes (a class absent from the context gets 0)."""
    out = np.zeros((len(p), k))
    out[:, np.asarray(classes).astype(int)] = p
    return out


# -- one table -------------------------------------------------------------------------------------

def run_table(name: str, methods: list[str], args) -> dict:
    X, y, task = C.load_table(name)
    if task == "classification":
        yv, labels = C.encode_labels(y)
        k = len(labels)
    else:
        yv, k = y.to_numpy(dtype=float), 0
    ctx, te = C.split(yv, task, args.max_context, args.max_test)
    Xc, Xq, yc, yq = X.iloc[ctx].reset_index(drop=True), X.iloc[te].reset_index(drop=True), yv[ctx], yv[te]
    rec = {"table": name, "task": task, "rows": len(X), "features": X.shape[1], "classes": k,
           "n_context": len(ctx), "n_test": len(te), "methods": {}}
    for m in methods:
        r: dict = {}
        try:
            t0 = time.perf_counter()
            out = fit_predict(m, task, Xc, yc, Xq, k, args)
            r["time_s"] = time.perf_counter() - t0
            r.update(C.classification_metrics(yq, out) if task == "classification" else C.regression_metrics(yq, out, yc))
        except Exception as e:  # a failing method is reported, the run goes on
            r["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        rec["methods"][m] = r
        shown = {kk: round(v, 4) for kk, v in r.items() if isinstance(v, float)}
        print(f"[quality] {name:24s} {m:9s} {shown if 'error' not in r else r['error']}", flush=True)
    return rec


# -- report ----------------------------------------------------------------------------------------

def _val(rec: dict, m: str, key: str) -> float:
    return float(rec["methods"].get(m, {}).get(key, float("nan")))


def _summary(recs: list[dict], methods: list[str], task: str) -> dict:
    """Per method: mean of each metric, mean rank on each metric, total time."""
    keys = ("auc", "acc", "f1") if task == "classification" else ("rmse", "r2")
    out = {m: {} for m in methods}
    for key in keys:
        higher = key != "rmse"
        rank_rows = [C.ranks({m: _val(r, m, key) for m in methods}, higher) for r in recs]
        for m in methods:
            vals = [_val(r, m, key) for r in recs]
            out[m][key] = float(np.mean(vals)) if not np.isnan(vals).any() else float("nan")
            out[m][f"rank_{key}"] = float(np.mean([rr[m] for rr in rank_rows]))
    for m in methods:
        out[m]["time_s"] = float(np.nansum([_val(r, m, "time_s") for r in recs]))
        out[m]["failed"] = [r["table"] for r in recs if "error" in r["methods"].get(m, {})]
    return out


def _table_block(recs: list[dict], methods: list[str], key: str, title: str, digits: int = 3) -> list[str]:
    """One metric per table and method, the best in bold; `title` heads the first column."""
    head = [title, "context", "test"] + [LABEL[m] if m != "linear" else linear_label(recs[0]["task"]) for m in methods]
    higher = key not in ("rmse", "time_s")
    rows = []
    for r in recs:
        vals = {m: _val(r, m, key) for m in methods}
        finite = [v for v in vals.values() if not np.isnan(v)]
        best = (max(finite) if higher else min(finite)) if finite and key != "time_s" else None
        cells = []
        for m in methods:
            s = C.fmt(vals[m], digits) if "error" not in r["methods"].get(m, {}) else "failed"
            cells.append(f"**{s}**" if best is not None and vals[m] == best else s)
        rows.append([r["table"], f"{r['n_context']:,}", f"{r['n_test']:,}", *cells])
    return [*C.markdown_table(head, rows, "lrr" + "r" * len(methods)), ""]


def _settings(args) -> str:
    """FEAT's settings and checkpoint, as the section's first paragraph names them."""
    return (f"FEAT: zero-shot, `n_estimators={args.n_estimators}`, `local_context={args.local_context}`, "
            f"{C.precision_text(args.precision, args.device)}, `view={args.view!r}`"
            f"{'' if args.blend else ', `blend=False`'}, checkpoint {C.checkpoint_line(args.checkpoint)}.")


def report(recs: list[dict], methods: list[str], args, info: dict, command: str, started: str, elapsed: float,
           png_ref: str | None) -> tuple[list[str], dict]:
    """The section: at the issue-3 bar's caps, the bar's verdict and one row of means per method; otherwise a
    table of means and ranks per task and the main metric (ROC-AUC, R²) per table. Accuracy, F1, RMSE and the
    times per table stay in the run's JSON results."""
    bar = (args.max_context, args.max_test) == BAR
    summary = {}
    for task in ("classification", "regression"):
        rs = [r for r in recs if r["task"] == task]
        if rs:
            summary[task] = _summary(rs, methods, task)
    results = C.results_ref(args.section, args.out)
    if bar:
        lines = ["## Zero-shot quality (issue-3 bar settings)", "",
                 f"The quality benchmark at the issue-3 bar's caps (context at most {args.max_context:,} rows, test at "
                 f"most {args.max_test:,}), the split and metrics of \"Zero-shot quality\". {_settings(args)} "
                 f"Baselines at library defaults. Per table: {results}.", "",
                 *_bar_lines(summary, methods, recs)]
        cl, rg = summary.get("classification"), summary.get("regression")
        head = ["method"] + ([f"mean ROC-AUC ({len([r for r in recs if r['task'] == 'classification'])} tables)"]
                             if cl else []) \
            + ([f"mean R² ({len([r for r in recs if r['task'] == 'regression'])} tables)"] if rg else []) \
            + ["time (s, all tables)"]
        rows = []
        for m in methods:
            lab = LABEL[m] if m != "linear" else "logistic / ridge"
            cells = ([C.fmt(cl[m]["auc"], 4)] if cl else []) + ([C.fmt(rg[m]["r2"], 4)] if rg else [])
            t = sum(s[m]["time_s"] for s in summary.values())
            rows.append([lab, *cells, C.fmt(t, 1)])
        lines += [*C.markdown_table(head, rows), ""]
    else:
        lines = ["## Zero-shot quality", "",
                 f"Development tables, fixed 80/20 split (stratified, seed {C.SEED}); context capped at "
                 f"{args.max_context:,} rows and test at {args.max_test:,} rows (stratified subsamples, same seed); every "
                 f"method sees the same rows. {_settings(args)} Baselines at library defaults (see `bench/quality.py` "
                 "for the preprocessing). AUC is macro one-vs-rest for multiclass, F1 is macro; RMSE is on the target "
                 "divided by the context's standard deviation. Best per table in bold; ranks are 1 = best, averaged over "
                 "tables. FEAT tables wider than its pretrained 24 features get at least ceil(D/24) members, each on a "
                 f"feature subset; multiclass tables use `multiclass=\"{args.multiclass}\"` "
                 f"(docs/decisions/0026-one-vs-rest-classes.md). Accuracy, F1, RMSE and times per table: {results}.", ""]
        for task, s in summary.items():
            rs = [r for r in recs if r["task"] == task]
            lab = lambda m: LABEL[m] if m != "linear" else linear_label(task)  # noqa: E731
            if task == "classification":
                head = [f"classification ({len(rs)} tables)", "mean AUC", "mean ACC", "mean F1", "rank AUC", "rank ACC",
                        "rank F1", "time (s, all tables)"]
                rows = [[lab(m), C.fmt(s[m]["auc"]), C.fmt(s[m]["acc"]), C.fmt(s[m]["f1"]), C.fmt(s[m]["rank_auc"], 2),
                         C.fmt(s[m]["rank_acc"], 2), C.fmt(s[m]["rank_f1"], 2), C.fmt(s[m]["time_s"], 1)]
                        for m in methods]
                lines += C.markdown_table(head, rows) + [""] + _table_block(rs, methods, "auc", "ROC-AUC per table")
            else:
                head = [f"regression ({len(rs)} tables)", "mean RMSE (std. target)", "mean R²", "rank RMSE", "rank R²",
                        "time (s, all tables)"]
                rows = [[lab(m), C.fmt(s[m]["rmse"]), C.fmt(s[m]["r2"]), C.fmt(s[m]["rank_rmse"], 2),
                         C.fmt(s[m]["rank_r2"], 2), C.fmt(s[m]["time_s"], 1)] for m in methods]
                lines += C.markdown_table(head, rows) + [""] + _table_block(rs, methods, "r2", "R² per table")
    failed = [f"{LABEL[m]} on {', '.join(v['failed'])}" for s in summary.values() for m, v in s.items() if v["failed"]]
    if failed:
        lines += ["Failed runs (scored as missing, ranked last): " + "; ".join(failed) + ".", ""]
    if png_ref:
        lines += [f"![per-table ROC-AUC and R² of every method]({png_ref})", ""]
    lines += C.provenance(command, started, info, elapsed)
    return lines, summary


def _bar_lines(summary: dict, methods: list[str], recs: list[dict]) -> list[str]:
    """Issue 3's bar, in one line: FEAT beats logistic regression and kNN-15 on mean AUC, ridge on mean R^2."""
    if "feat" not in methods:
        return []
    cl, rg = summary.get("classification"), summary.get("regression")
    checks = []
    if cl:
        against = [f"{'logistic regression' if m == 'linear' else 'kNN-15'} {cl[m]['auc']:.3f}" for m in ("linear", "knn")
                   if m in methods]
        if against:
            checks.append((f"mean AUC {cl['feat']['auc']:.3f} against {' and '.join(against)}",
                           all(cl["feat"]["auc"] > cl[m]["auc"] for m in ("linear", "knn") if m in methods)))
    if rg and "linear" in methods:
        checks.append((f"mean R² {rg['feat']['r2']:.3f} against ridge {rg['linear']['r2']:.3f}",
                       rg["feat"]["r2"] > rg["linear"]["r2"]))
    if not checks:
        return []
    title = "Issue-3 bar" if len(recs) == 13 else "Issue-3 bar comparison (not all 13 tables)"
    return [f"**{title}: {'met' if all(ok for _, ok in checks) else 'not met'}** (FEAT's "
            + "; ".join(t for t, _ in checks) + ").", ""]


def plot(recs: list[dict], methods: list[str], path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [(t, k, lbl) for t, k, lbl in (("classification", "auc", "ROC-AUC"), ("regression", "r2", "R²"))
              if any(r["task"] == t for r in recs)]
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4.5), squeeze=False)
    for ax, (task, key, lbl) in zip(axes[0], groups):
        rs = [r for r in recs if r["task"] == task]
        y = np.arange(len(rs))
        for j, m in enumerate(methods):
            vals = [_val(r, m, key) for r in rs]
            ax.scatter(vals, y + (j - len(methods) / 2) * 0.08, label=LABEL[m] if m != "linear" else linear_label(task),
                       marker="*" if m == "feat" else "o", s=90 if m == "feat" else 25, zorder=3 if m == "feat" else 2)
        ax.set_yticks(y, [r["table"] for r in rs])
        ax.set_xlabel(lbl)
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=7)
        if key == "r2":
            ax.set_xlim(left=max(-1.0, ax.get_xlim()[0]))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="context <= 2,048 and test <= 500 rows, no CatBoost")
    p.add_argument("--max-context", type=int, default=50_000)
    p.add_argument("--max-test", type=int, default=2_000)
    p.add_argument("--n-estimators", type=int, default=None,
                   help="FEAT ensemble members (default: the estimators' own, `members.planned_members`)")
    p.add_argument("--multiclass", choices=["ovr", "head"], default="ovr", help="FEAT's multiclass scheme")
    p.add_argument("--tables", default=None, help="comma-separated table names (default: all 13)")
    p.add_argument("--methods", default=None, help=f"comma-separated subset of {ALL_METHODS}")
    p.add_argument("--device", default="auto", help="FEAT device")
    C.add_local_context_arg(p)
    C.add_precision_arg(p)
    C.add_view_arg(p)
    C.add_common_args(p, section=None)
    args = p.parse_args(argv)
    if args.quick:
        args.max_context, args.max_test = min(args.max_context, BAR[0]), min(args.max_test, BAR[1])
    methods = args.methods.split(",") if args.methods else (QUICK_METHODS if args.quick else ALL_METHODS)
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise SystemExit(f"unknown method(s) {bad}; choose from {ALL_METHODS}")
    section = args.section = args.section or ("quality-bar" if (args.max_context, args.max_test) == BAR else "quality")

    C.quiet_warnings()
    args.threads = C.set_threads(args.threads)
    command, started, t0 = C.command_line("quality.py", argv), C.now(), time.perf_counter()
    info = C.machine()
    recs = [run_table(name, methods, args) for name, _ in C.pick_tables(args.tables)]
    link = None
    if not args.no_write and (args.max_context, args.max_test) != BAR:   # the bar's section has no plot
        png, link = C.plot_path(section, args.out)
        plot(recs, methods, png)
    body, summary = report(recs, methods, args, info, command, started, time.perf_counter() - t0, link)
    C.finish(section, body, args, {"section": section, "command": command, "started": started, "machine": info,
                                   "args": vars(args), "tables": recs, "summary": summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
