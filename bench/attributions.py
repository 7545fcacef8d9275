"""Why a prediction: FEAT's masked attributions (`feat_engine.masked_attributions`, each cell priced by hiding it)
against scikit-learn's permutation importance of the same fitted FEAT, on synthetic probes whose relevant features
are known (bench/probes.py): does each ranking put the relevant features first, do the two agree, and what does
each cost.

    python bench/attributions.py            # 3 seeds per probe

Writes the "attributions" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.inspection import permutation_importance

import common as C
from feat_engine import FEATRegressor, masked_attributions
from probes import heavy_tails, long_table, many_levels, skewed_target

N_CONTEXT, N_EXPLAINED = 1000, 300
# probe -> (table maker, its relevant features)
PROBES = {"long table (Friedman #1)": (long_table, [0, 1, 2, 3, 4]),
          "heavy tails": (heavy_tails, ["x0", "x1", "x2", "x3"]),
          "skewed target": (skewed_target, ["x0", "x1", "x2", "x3"]),
          "many-level nominal": (many_levels, ["level", "x1", "x2"])}


def found(scores, relevant: list) -> float:
    """The share of the len(relevant) highest-scored features that are relevant."""
    top = scores.sort_values(ascending=False).index[:len(relevant)]
    return float(np.isin(top, relevant).mean())


def run(name: str, seed: int, args) -> dict:
    make, relevant = PROBES[name]
    X, y, _ = make(N_CONTEXT + N_EXPLAINED, np.random.default_rng(seed))
    Xc, Xq, yc, yq = X.iloc[:N_CONTEXT], X.iloc[N_CONTEXT:], y[:N_CONTEXT], y[N_CONTEXT:]
    reg = FEATRegressor(n_estimators=args.n_estimators, random_state=seed).fit(Xc, yc)
    reg.predict(Xq)                                         # the context states, kept for both methods
    t0 = time.perf_counter()
    masked = masked_attributions(reg, Xq).abs().mean()
    t_masked = time.perf_counter() - t0
    t0 = time.perf_counter()
    perm = permutation_importance(reg, Xq, yq, n_repeats=args.repeats, random_state=seed, scoring="r2")
    t_perm = time.perf_counter() - t0
    perm = pd.Series(perm.importances_mean, index=X.columns)
    rec = {"probe": name, "seed": seed, "masked_found": found(masked, relevant), "perm_found": found(perm, relevant),
           "agreement": float(spearmanr(masked, perm).statistic), "masked_s": t_masked, "perm_s": t_perm}
    print(f"[attributions] {name:26s} seed={seed} {rec}", flush=True)
    return rec


def report(recs: list[dict], args, info: dict, command: str, started: str, seconds: float):
    rows, summary = [], {}
    for name in PROBES:
        rs = [r for r in recs if r["probe"] == name]
        mean = {k: float(np.mean([r[k] for r in rs])) for k in ("masked_found", "perm_found", "agreement",
                                                                "masked_s", "perm_s")}
        summary[name] = mean
        rows.append([name, C.fmt(mean["masked_found"], 2), C.fmt(mean["perm_found"], 2), C.fmt(mean["agreement"], 2),
                     f"{mean['masked_s']:.1f}", f"{mean['perm_s']:.1f}"])
    body = [
        "## Why a prediction: masked attributions against permutation importance",
        "",
        f"Synthetic probes of bench/probes.py whose relevant features are known; {N_CONTEXT:,} context rows, "
        f"{N_EXPLAINED} explained rows, mean over {args.seeds} seed(s). One fitted `FEATRegressor` "
        f"({args.n_estimators} members) is explained two ways: `masked_attributions` (each cell hidden, the mean "
        f"absolute change of the prediction) and scikit-learn's `permutation_importance` ({args.repeats} repeats, "
        "the drop in R² when a column is shuffled, which needs the true targets). *Found*: the share of the k "
        "highest-ranked features that are relevant (k = the number of relevant ones); *agreement*: Spearman's rank "
        "correlation of the two rankings; seconds on the explained rows, the context states already kept.",
        "",
        *C.markdown_table(["probe", "found, masked", "found, permutation", "agreement", "masked (s)",
                           "permutation (s)"], rows),
        "",
        *C.provenance(command, started, info, seconds),
    ]
    return body, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5, help="permutation importance repeats")
    p.add_argument("--n-estimators", type=int, default=4, help="FEAT ensemble members")
    C.add_common_args(p, section="attributions")
    args = p.parse_args(argv)
    return C.run_benchmark("attributions.py", argv, args,
                           lambda: [run(name, s, args) for name in PROBES for s in range(args.seeds)],
                           lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
