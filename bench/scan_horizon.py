"""How far back does each AFBM layer remember? The scan's effective horizon on real tables.

A diagnostic for the context-size result, not a comparison. An AFBM state decays by
a = exp(dt |A|) per row, with dt computed from each row. Over a run of rows the state shrinks
by e after about 1 / mean(dt |A|) rows: that is the layer's horizon. A query row reads the
final forward and backward states only, so through AFBM it sees roughly the last and first
horizon-many context rows; rows beyond that reach it only through Conv-GLA's global memory.

For each table the quality benchmark's split, context capped at --context rows, one member:
the context pass is run once and dt |A| is recorded per row, column and head. Reported per
AFBM layer: the heads' horizons (min / median / max) and the share of rows that keep more than
99.9% of the state (a > 0.999, the rows the selective scan skips).

    python bench/scan_horizon.py            # adult_income, diamonds_price; 4,096 context rows
    python bench/scan_horizon.py --quick    # adult_income; 1,024 context rows

Writes the "scan-horizon" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import common as C

TABLES = ["adult_income", "diamonds_price"]


def horizons(name: str, context: int, args) -> dict:
    """Per AFBM layer: the heads' horizons (rows) and the share of rows with a > 0.999."""
    from feat_engine import FEATClassifier, FEATRegressor
    from feat_engine.model import afbm

    X, y, task = C.load_table(name)
    yv = C.encode_labels(y)[0] if task == "classification" else y.to_numpy(dtype=float)
    ctx, _ = C.split(yv, task, context, None)
    seen: dict[int, torch.Tensor] = {}
    project = afbm.AFBM._project

    def spy(self, u):
        out = project(self, u)
        if id(self) not in seen:                     # the first call is the context pass
            seen[id(self)] = (out[-1] * torch.exp(self.A_log.float())).detach().reshape(-1, self.heads)
        return out

    est = (FEATClassifier if task == "classification" else FEATRegressor)(
        n_estimators=1, random_state=C.SEED, device=args.device, checkpoint=args.checkpoint)
    afbm.AFBM._project = spy
    try:
        est.fit(X.iloc[ctx], yv[ctx]).predict(X.iloc[ctx[:4]])
    finally:
        afbm.AFBM._project = project
    layers = []
    for log_a in seen.values():                      # (rows x columns, heads): -log a per row
        h = (1.0 / log_a.mean(0)).numpy()
        layers.append({"min": float(h.min()), "median": float(np.median(h)), "max": float(h.max()),
                       "skip_share": float((log_a < 1e-3).float().mean())})
    print(f"[scan-horizon] {name}: {[round(la['median'], 1) for la in layers]}", flush=True)
    return {"table": name, "task": task, "n_context": len(ctx), "layers": layers}


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float):
    """One row per table, its AFBM layers joined by " / "."""
    join = lambda r, f: " / ".join(f(la) for la in r["layers"])  # noqa: E731
    sizes = sorted({r["n_context"] for r in recs})
    first = f"table ({sizes[0]:,} context rows)" if len(sizes) == 1 else "table (context rows)"
    rows = [[r["table"] if len(sizes) == 1 else f"{r['table']} ({r['n_context']:,})",
             join(r, lambda la: f"{la['min']:.0f}"), join(r, lambda la: f"{la['median']:.0f}"),
             join(r, lambda la: f"{la['max']:.0f}"), join(r, lambda la: f"{la['skip_share']:.0%}")] for r in recs]
    layers = " / ".join(str(i) for i in range(max(len(r["layers"]) for r in recs)))
    longest = max(la["max"] for r in recs for la in r["layers"])
    body = [
        "## AFBM scan horizon (diagnostic)",
        "",
        (f"Rows over which each AFBM layer's state decays by e (1 / mean(dt |A|) per head over the context rows), "
         f"on the quality benchmark's split; FEAT with one member, checkpoint {C.checkpoint_line(args.checkpoint)}. "
         "'skipped' is the share of rows with decay a > 0.999."),
        "",
        *C.markdown_table([first, f"AFBM layer {layers}: horizon min", "median", "max", "skipped"], rows),
        "",
        *C.wrap(f"The longest horizon of any head is {longest:.0f} rows"
                + (", far shorter than the contexts: through AFBM a query reads a summary of about that many rows at "
                   "each end of the context, and the rest only through Conv-GLA's global memory (one block in four)."
                   if longest < min(r["n_context"] for r in recs) / 4 else ".")),
        "",
        *C.provenance(command, started, info, seconds),
    ]
    return body, {r["table"]: [la["median"] for la in r["layers"]] for r in recs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="adult_income, 1,024 context rows")
    p.add_argument("--tables", default=None, help=f"comma-separated table names (default {','.join(TABLES)})")
    p.add_argument("--context", type=int, default=None, help="context rows (default 4,096; quick 1,024)")
    p.add_argument("--device", default="auto")
    C.add_common_args(p, section="scan-horizon")
    args = p.parse_args(argv)
    context = args.context or (1024 if args.quick else 4096)
    tables = [n for n, _ in C.pick_tables(args.tables or ("adult_income" if args.quick else None), TABLES)]
    return C.run_benchmark("scan_horizon.py", argv, args, lambda: [horizons(n, context, args) for n in tables],
                           lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
