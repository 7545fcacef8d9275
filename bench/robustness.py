"""Row-order robustness: how much FEAT's predictions move when the context rows are shuffled.

FEAT's sample axis is a scan, so it has an order; the rows of a table do not. On each
classification development table (the quality benchmark's fixed split, context capped at
--max-context and test at --max-test rows) FEAT predicts the test rows from the context as
given, then from --shuffles random permutations of the same context rows (seeds 1..S), with
the same random_state, so the members' feature shuffles and S-DFE draws stay fixed and only
the row order changes. Reported, for 1 member and for the default ensemble:

  mean |dp|   mean absolute change in predicted probability over test rows and classes
              (for two classes: the mean |change| of p(class 1)), averaged over the shuffles
  max |dp|    the largest change of any probability
  |dAUC|      mean absolute change in ROC-AUC; and the AUC's standard deviation over the orders
  flips       share of test rows whose predicted class changes

    python bench/robustness.py            # all 8 classification tables, 2,048 context, 500 test, 3 shuffles
    python bench/robustness.py --quick    # 3 tables, 2 shuffles

Writes the "robustness" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import time
import traceback

import common as C
import numpy as np

from feat_engine.predictions import roc_auc

QUICK_TABLES = ["phoneme", "compas_two_year_recid", "pendigits"]


def run_table(name: str, members: list[int | str], args) -> dict:
    from feat_engine import FEATClassifier

    X, y, task = C.load_table(name)
    yv, labels = C.encode_labels(y)
    k = len(labels)
    ctx, te = C.split(yv, task, args.max_context, args.max_test)
    Xq, yq = X.iloc[te].reset_index(drop=True), yv[te]
    rec = {"table": name, "classes": k, "n_context": len(ctx), "n_test": len(te), "by_members": {}}
    for n in members:
        def predict(rows):
            est = FEATClassifier(n_estimators=None if n == "default" else n, random_state=C.SEED, device=args.device,
                                 checkpoint=args.checkpoint)
            est.fit(X.iloc[rows].reset_index(drop=True), yv[rows])
            p = np.zeros((len(Xq), k))
            p[:, est.classes_.astype(int)] = est.predict_proba(Xq)
            return p

        r: dict = {}
        try:
            t0 = time.perf_counter()
            base = predict(ctx)
            auc0 = roc_auc(yq, base)
            dp, mx, dauc, aucs, flips = [], [], [], [auc0], []
            for s in range(1, args.shuffles + 1):
                p = predict(np.random.default_rng(s).permutation(ctx))
                d = np.abs(p - base)
                dp.append(float(d.mean()))   # two classes: equals the mean |change of p(class 1)|
                mx.append(float(d.max()))
                auc = roc_auc(yq, p)
                aucs.append(auc)
                dauc.append(abs(auc - auc0))
                flips.append(float((p.argmax(1) != base.argmax(1)).mean()))
            r = {"auc": auc0, "mean_abs_dp": float(np.mean(dp)), "max_abs_dp": float(np.max(mx)),
                 "mean_abs_dauc": float(np.mean(dauc)), "max_abs_dauc": float(np.max(dauc)),
                 "auc_sd": float(np.std(aucs)), "flip_rate": float(np.mean(flips)),
                 "time_s": time.perf_counter() - t0}
        except Exception as e:
            r["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        rec["by_members"][n] = r
        print(f"[robustness] {name:24s} members={n} "
              f"{ {kk: round(v, 4) for kk, v in r.items() if isinstance(v, float)} if 'error' not in r else r['error']}",
              flush=True)
    return rec


def report(recs, members, args, info, command, started, elapsed) -> tuple[list[str], dict]:
    """Means over the binary tables, the multiclass ones and all of them, per member count; per table (and the
    max |dp|, max |dAUC| and AUC sd) in the JSON results."""
    lines = ["## Row-order robustness", "",
             f"The quality benchmark's split of the {len(recs)} classification table(s) (context at most "
             f"{args.max_context:,} rows, test {args.max_test:,}). FEAT (checkpoint {C.checkpoint_line(args.checkpoint)}) "
             f"predicts the test rows from the context in its given order and from {args.shuffles} random permutations "
             "of it, with the same `random_state`. Flips: test rows whose predicted class changes; |Δp| and |ΔAUC|: mean "
             "absolute changes against the given order. 'members' is `n_estimators` (a table wider than 24 features "
             "gets at least ceil(D/24); 'default': the estimator's own plan). "
             f"Per table: {C.results_ref(args.section, args.out)}.", ""]
    groups = [("binary", lambda r: r["classes"] == 2), ("multiclass", lambda r: r["classes"] > 2)]
    groups = [(f"the {sum(map(keep, recs))} {lab} ones", keep) for lab, keep in groups
              if 0 < sum(map(keep, recs)) < len(recs)]
    groups.append((f"**all {len(recs)}**", lambda r: True))
    keys = ("auc", "mean_abs_dp", "max_abs_dp", "mean_abs_dauc", "max_abs_dauc", "auc_sd", "flip_rate", "time_s")
    rows, summary = [], {}
    for label, keep in groups:
        for n in members:
            ok = [r["by_members"][n] for r in recs if keep(r) and "error" not in r["by_members"].get(n, {"error": 1})]
            if not ok:
                rows.append([label, n, "failed", "", ""])
                continue
            s = {k: float(np.mean([v[k] for v in ok])) for k in keys}
            if label.startswith("**all"):
                summary[n] = s
            flips = f"{s['flip_rate']:.1%}"
            rows.append([label, n, f"**{flips}**" if label.startswith("**all") else flips, C.fmt(s["mean_abs_dp"], 4),
                         C.fmt(s["mean_abs_dauc"], 4)])
    lines += C.markdown_table(["tables", "members", "flips", "mean |Δp|", "mean |ΔAUC|"], rows) + [""]
    failed = [f"{r['table']} ({n} members)" for r in recs for n in members if "error" in r["by_members"].get(n, {})]
    if failed:
        lines += ["Failed: " + ", ".join(failed) + ".", ""]
    lines += C.provenance(command, started, info, elapsed)
    return lines, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"tables {QUICK_TABLES}, 2 shuffles")
    p.add_argument("--tables", default=None, help="comma-separated classification tables (default: all 8)")
    p.add_argument("--max-context", type=int, default=2048)
    p.add_argument("--max-test", type=int, default=500)
    p.add_argument("--shuffles", type=int, default=None, help="context permutations (default 3; quick 2)")
    p.add_argument("--members", default="1,default",
                   help="ensemble sizes to compare; 'default' is the estimator's own plan (default: 1,default)")
    p.add_argument("--device", default="auto")
    C.add_common_args(p, section="robustness")
    args = p.parse_args(argv)
    args.shuffles = args.shuffles or (2 if args.quick else 3)
    members = [v if v == "default" else int(v) for v in args.members.split(",")]
    tables = [n for n, t in C.pick_tables(args.tables, QUICK_TABLES if args.quick else None) if t == "classification"]
    return C.run_benchmark('robustness.py', argv, args, lambda: [run_table(n, members, args) for n in tables],
                           lambda recs, *rest: report(recs, members, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
