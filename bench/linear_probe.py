"""In-context linear regression: does FEAT learn y = Xw + noise from its context as ridge does?

A diagnostic of in-context learning, not a real-table benchmark. For each feature count d
and context size n, --seeds tables are drawn: X ~ N(0, I_d), w ~ N(0, I_d) scaled to
|w| = 1, y = Xw + 0.3 eps (so the best possible R^2 is 1 / 1.09 = 0.917); 500 test rows.
FEATRegressor (zero-shot, --members members) and ridge regression (sklearn defaults) fit on
the n context rows; the table reports test R^2 averaged over the seeds. A model that learns
in context gets closer to ridge as n grows.

    python bench/linear_probe.py            # d in 1,3,6,10; n in 256,1024; 5 seeds
    python bench/linear_probe.py --quick    # d in 1,6; n 1024; 3 seeds

Writes the "linear-probe" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score

import common as C

N_TEST = 500
NOISE = 0.3


def draw(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One linear table of n context + N_TEST test rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + N_TEST, d))
    w = rng.normal(size=d)
    y = X @ (w / np.linalg.norm(w)) + NOISE * rng.normal(size=n + N_TEST)
    return X, y


def run_cell(d: int, n: int, args) -> dict:
    from feat_engine import FEATRegressor

    feat, ridge = [], []
    for seed in range(args.seeds):
        X, y = draw(d, n, 1000 * d + seed)
        (Xc, yc), (Xt, yt) = (X[:n], y[:n]), (X[n:], y[n:])
        m = FEATRegressor(n_estimators=args.members, checkpoint=args.checkpoint, device=args.device).fit(Xc, yc)
        feat.append(r2_score(yt, m.predict(Xt)))
        ridge.append(r2_score(yt, Ridge().fit(Xc, yc).predict(Xt)))
    print(f"d={d} n={n}: FEAT {np.mean(feat):.3f} ridge {np.mean(ridge):.3f}", flush=True)
    return {"d": d, "n": n, "feat_r2": float(np.mean(feat)), "ridge_r2": float(np.mean(ridge)),
            "feat_r2_per_seed": feat, "ridge_r2_per_seed": ridge}


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float):
    """One row per feature count, the context sizes joined by " / "."""
    ns = sorted({r["n"] for r in recs})
    by = {(r["d"], r["n"]): r for r in recs}
    cell = lambda d, f: " / ".join(C.fmt(f(by[d, n])) if (d, n) in by else "—" for n in ns)  # noqa: E731
    rows = [[d, cell(d, lambda r: r["feat_r2"]), cell(d, lambda r: r["ridge_r2"]),
             cell(d, lambda r: r["feat_r2"] - r["ridge_r2"])] for d in sorted({r["d"] for r in recs})]
    sizes = " / ".join(f"{n:,}" for n in ns)
    body = [
        "## In-context linear regression (diagnostic)",
        "",
        f"`y = Xw + {NOISE} eps` with `|w| = 1`, X standard normal: best possible R² {1 / (1 + NOISE ** 2):.3f}. "
        f"Test R² on {N_TEST} rows, mean over {args.seeds} tables per cell; FEAT zero-shot with {args.members} "
        f"member(s), checkpoint {C.checkpoint_line(args.checkpoint)}; ridge at sklearn defaults.",
        "",
        *C.markdown_table(["features d", f"FEAT R², {sizes} context rows", f"ridge R², {sizes}", "FEAT − ridge"], rows),
        "",
        *C.provenance(command, started, info, seconds),
    ]
    return body, {f"d{r['d']}_n{r['n']}": r["feat_r2"] - r["ridge_r2"] for r in recs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="d in 1,6; n 1024; 3 seeds")
    p.add_argument("--dims", default=None, help="comma-separated feature counts (default 1,3,6,10)")
    p.add_argument("--contexts", default=None, help="comma-separated context sizes (default 256,1024)")
    p.add_argument("--seeds", type=int, default=None, help="tables per cell (default 5; quick 3)")
    p.add_argument("--members", type=int, default=2)
    p.add_argument("--device", default="auto")
    C.add_common_args(p, section="linear-probe")
    args = p.parse_args(argv)
    dims = [int(v) for v in (args.dims or ("1,6" if args.quick else "1,3,6,10")).split(",")]
    ctxs = [int(v) for v in (args.contexts or ("1024" if args.quick else "256,1024")).split(",")]
    args.seeds = args.seeds or (3 if args.quick else 5)
    return C.run_benchmark("linear_probe.py", argv, args, lambda: [run_cell(d, n, args) for d in dims for n in ctxs],
                           lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
