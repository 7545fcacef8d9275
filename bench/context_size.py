"""Does FEAT use a longer context? Test quality against the number of context rows.

Linear cost in rows is only worth having if more rows help. On the development tables with at
least 20,000 rows, the quality benchmark's fixed split is used with the context capped at each
of --contexts rows (a stratified subsample, seed 0) and the same 2,000 test rows throughout.
FEAT (zero-shot, --n-estimators members) and LightGBM (library defaults) fit each context; the
table reports ROC-AUC (classification) or R² (regression) per table and context size, and the
gain from the smallest to the largest context.

    python bench/context_size.py            # contexts 1,024 / 4,096 / 16,384 / 50,000
    python bench/context_size.py --quick    # contexts 1,024 / 4,096

Writes the "context-size" section of docs/benchmarks.md and a plot docs/context-size.png.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import common as C
import quality as Q

TABLES = ["adult_income", "census_kdd_income", "cps1988_wage", "diamonds_price", "nyc_flights_arr_delay"]
METHODS = ["feat", "lightgbm"]
MAX_TEST = 2_000


def metric(task: str) -> tuple[str, str]:
    """(result key, label) of the metric reported for a task."""
    return ("auc", "ROC-AUC") if task == "classification" else ("r2", "R²")


def run_table(name: str, contexts: list[int], args) -> dict:
    """One table at every context size: {"table", "task", "points": [{n_context, feat, lightgbm}]}."""
    qargs = SimpleNamespace(n_estimators=args.n_estimators, multiclass="ovr", device=args.device,
                            local_context=args.local_context, precision=args.precision,
                            view=args.view, blend=args.blend, checkpoint=args.checkpoint, threads=args.threads, max_test=MAX_TEST)
    points, task = [], None
    for cap in contexts:
        qargs.max_context = cap
        rec = Q.run_table(name, METHODS, qargs)
        task = rec["task"]
        key, _ = metric(task)
        points.append({"n_context": rec["n_context"], "n_test": rec["n_test"],
                       **{m: rec["methods"][m].get(key, float("nan")) for m in METHODS},
                       **{f"{m}_time_s": rec["methods"][m].get("time_s", float("nan")) for m in METHODS}})
        if rec["n_context"] < cap:          # the table has no more rows: larger caps repeat this point
            break
    return {"table": name, "task": task, "points": points}


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float, png: str | None):
    """One row per table, its context sizes and scores joined by " / ", then the mean gain and the provenance."""
    rows, gains = [], {}
    for r in recs:
        _, lbl = metric(r["task"])
        pts = r["points"]
        first, last = pts[0], pts[-1]
        gains[r["table"]] = {m: last[m] - first[m] for m in METHODS}
        rows.append([f"{r['table']} ({lbl})", " / ".join(f"{p['n_context']:,}" for p in pts),
                     " / ".join(C.fmt(p["feat"]) for p in pts), " / ".join(C.fmt(p["lightgbm"]) for p in pts),
                     " / ".join(f"{p['feat_time_s']:.1f}" for p in pts),
                     f"{_signed(gains[r['table']]['feat'])} / {_signed(gains[r['table']]['lightgbm'])}"])
    mean = {m: float(np.mean([g[m] for g in gains.values()])) for m in METHODS}
    verdict = (f"- Mean over the {len(recs)} tables: FEAT {_signed(mean['feat'])}, LightGBM {_signed(mean['lightgbm'])}."
               + (" FEAT gains less than half of what LightGBM gains from the extra rows."
                  if mean["feat"] < mean["lightgbm"] / 2 else " FEAT gains at least half of what LightGBM gains.")
               + (f" ![FEAT and LightGBM quality against context rows]({png})" if png else ""))
    body = [
        "## Quality against context size",
        "",
        (f"Does FEAT use a longer context? The quality benchmark's fixed 80/20 split of each development table "
        f"with at least 20,000 rows; the context is capped at each size (stratified subsample, seed 0) and the "
        f"same {MAX_TEST:,} test rows are predicted every time. FEAT zero-shot with `n_estimators={args.n_estimators}`, "
        f"`local_context={args.local_context}`, {C.precision_text(args.precision, args.device)}"
        f"{'' if args.view == 'auto' else f', `view={args.view!r}`'}{'' if args.blend else ', `blend=False`'}, "
        f"checkpoint {C.checkpoint_line(args.checkpoint)}; LightGBM at its defaults.{_pretrained_rows(args.checkpoint)}"),
        "",
        *C.markdown_table(["table (score)", "context rows", "FEAT", "LightGBM", "FEAT s", "gain: FEAT / LightGBM"],
                          rows, "l" * 6),
        "",
        *C.wrap(verdict),
        "",
        *C.provenance(command, started, info, seconds),
    ]
    return body, gains


def _pretrained_rows(checkpoint: str | None) -> str:
    """A sentence on the largest pretraining table, from the checkpoint's prior settings."""
    from feat_engine.checkpoint import load_checkpoint

    _, meta = load_checkpoint(Path(checkpoint) if checkpoint else C.ROOT / "assets" / "feat-small.pt")
    prior = (meta or {}).get("prior", {})
    if "max_rows" not in prior:
        return ""
    return (f" Its pretraining tables had at most {prior['max_rows']:,} rows, of which at most "
            f"{prior.get('max_ctx_frac', 1.0):.0%} were context.")


def _signed(v: float) -> str:
    return f"{'+' if v >= 0 else '−'}{abs(v):.3f}"


def plot(recs: list[dict], path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(recs), figsize=(3.2 * len(recs), 3.4), squeeze=False)
    for ax, r in zip(axes[0], recs):
        n = [p["n_context"] for p in r["points"]]
        for m, style in (("feat", "-o"), ("lightgbm", "--s")):
            ax.plot(n, [p[m] for p in r["points"]], style, label=Q.LABEL[m])
        ax.set_xscale("log")
        ax.set_title(r["table"], fontsize=9)
        ax.set_xlabel("context rows")
        ax.set_ylabel(metric(r["task"])[1])
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="contexts 1,024 and 4,096")
    p.add_argument("--contexts", default=None, help="comma-separated context caps (default 1024,4096,16384,50000)")
    p.add_argument("--tables", default=None, help=f"comma-separated table names (default {','.join(TABLES)})")
    p.add_argument("--n-estimators", type=int, default=1, help="FEAT ensemble members")
    p.add_argument("--device", default="auto", help="FEAT device")
    C.add_local_context_arg(p)
    C.add_precision_arg(p)
    C.add_view_arg(p)
    C.add_common_args(p, section=None)
    args = p.parse_args(argv)
    args.section = args.section or ("context-size" if args.local_context else "context-size-global")
    contexts = sorted(int(v) for v in (args.contexts or ("1024,4096" if args.quick else "1024,4096,16384,50000"))
                      .split(","))
    tables = [n for n, _ in C.pick_tables(args.tables, TABLES)]
    png, link = (None, None) if args.no_write else C.plot_path(args.section, args.out)

    def measure() -> list[dict]:
        recs = [run_table(name, contexts, args) for name in tables]
        if png is not None:
            plot(recs, png)
        return recs

    return C.run_benchmark("context_size.py", argv, args, measure,
                           lambda recs, *rest: report(recs, args, *rest, link))


if __name__ == "__main__":
    raise SystemExit(main())
