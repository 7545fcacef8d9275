"""Predictions of a fixed set, saved and compared bit for bit: the check that a refactor changes no behaviour.

The set: FEAT at its defaults (fp32, seed 0) on the development tables at the `--quick` caps of `quality.py`
(2,048 context rows, 500 test rows), on each synthetic probe of `probes.py` (seed 0, its first size), one
chained imputation and one set of relation matrices (attention, dependence, edges).

    python bench/snapshot.py --save before.npz      # on the commit before the moves
    python bench/snapshot.py --check before.npz     # after them: exit 1 on the first array that differs

This is a tool, not a benchmark: it writes no section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import common as C
from probes import PROBES, N_TEST
from quality import BAR

FP32 = dict(random_state=C.SEED, precision="fp32")


def table_predictions(name: str, task: str) -> np.ndarray:
    """FEAT's probabilities or predictions on one development table at the quick caps."""
    from feat_engine import FEATClassifier, FEATRegressor

    X, y, _ = C.load_table(name)
    yy = C.encode_labels(y)[0] if task == "classification" else y.to_numpy(dtype=float)
    tr, te = C.split(yy, task, *BAR)
    Xc, Xq = X.iloc[tr], X.iloc[te]
    if task == "classification":
        return FEATClassifier(**FP32).fit(Xc, yy[tr]).predict_proba(Xq)
    return FEATRegressor(**FP32).fit(Xc, yy[tr]).predict(Xq)


def probe_predictions(name: str) -> np.ndarray:
    """FEAT's output on one synthetic probe (seed 0, the probe's first context size)."""
    from feat_engine import FEATClassifier, FEATRegressor

    make, sizes = PROBES[name]
    n = sizes[0]
    X, y, task = make(n + N_TEST, np.random.default_rng(0))
    est = FEATClassifier(**FP32) if task == "classification" else FEATRegressor(**FP32)
    est.fit(X.iloc[:n], y[:n])
    return est.predict_proba(X.iloc[n:]) if task == "classification" else est.predict(X.iloc[n:])


def imputation() -> np.ndarray:
    """FEATImputer's filled cells on 600 rows of a mixed development table, 10% of its cells hidden."""
    from feat_engine import FEATImputer

    X, _, _ = C.load_table("adult_income")
    X = X.iloc[:600].copy()
    mask = np.random.default_rng(0).random(X.shape) < 0.1
    for j, c in enumerate(X.columns):
        X.loc[mask[:, j], c] = np.nan
    filled = FEATImputer(**FP32).fit_transform(X)
    return np.array([str(v) for v in filled.to_numpy()[mask]])


def relations() -> dict[str, np.ndarray]:
    """FEAT's relation matrices on 500 rows of a development table (their default precision: fp32 on a CPU
    without native bf16, which is where this check runs)."""
    from feat_engine import dependence_matrix, edge_matrix, relation_matrix

    X, y, _ = C.load_table("concrete_strength")
    X = X.iloc[:500].assign(target=y.iloc[:500].to_numpy())
    return {f"relations/{fn.__name__}": fn(X, target="target", random_state=C.SEED).to_numpy()
            for fn in (relation_matrix, dependence_matrix, edge_matrix)}


def snapshot() -> dict[str, np.ndarray]:
    out = {}
    for name, task in C.all_tables():
        t0 = time.perf_counter()
        out[f"table/{name}"] = table_predictions(name, task)
        print(f"[snapshot] table {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    for name in PROBES:
        out[f"probe/{name}"] = probe_predictions(name)
        print(f"[snapshot] probe {name}", flush=True)
    out["imputation"] = imputation()
    out.update(relations())
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", help="write the snapshot to this .npz")
    g.add_argument("--check", help="compare against this .npz, bit for bit")
    args = p.parse_args(argv)
    C.quiet_warnings()
    now = snapshot()
    if args.save:
        np.savez(args.save, **now)
        print(f"[snapshot] saved {len(now)} arrays to {args.save}")
        return 0
    saved = np.load(args.check)
    differ = [k for k in saved.files if k not in now or not np.array_equal(saved[k], now[k])]
    differ += [k for k in now if k not in saved.files]
    for k in differ:
        print(f"[snapshot] DIFFERS: {k}")
    print(f"[snapshot] {len(saved.files) - len(differ)} of {len(saved.files)} arrays identical to the bit")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
