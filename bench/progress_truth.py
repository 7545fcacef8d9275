"""The time left that the app would tell, against the truth: one FEATClassifier fit at its defaults on a sample of
adult_income (12,000 rows by default: long enough to hold rows out, so its stream mixes classical-model fits and
engine runs), its progress stream timed, and at a third, a half and two thirds of the fit the app's rule
(elapsed x (1 - share) / share, `app/state.progress_callback`) set against the seconds that were in fact left.

    python bench/progress_truth.py [--rows 12000]

A diagnostic: it prints one JSON line and writes no section of docs/benchmarks.md
(docs/decisions/0038-app.md quotes its figures).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import common as C


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=12_000)
    args = p.parse_args()
    C.set_threads(2)
    C.quiet_warnings()
    from feat_engine import FEATClassifier

    X, y, _ = C.load_table("adult_income")
    yv, _ = C.encode_labels(y)
    rows = np.random.default_rng(C.SEED).permutation(len(X))[:args.rows]
    seen, t0 = [], time.monotonic()
    FEATClassifier(progress=lambda d, t, m: seen.append((time.monotonic() - t0, d / t if t else 0.0))).fit(
        X.iloc[rows].reset_index(drop=True), yv[rows])
    total = time.monotonic() - t0
    at = {}
    for share in (1 / 3, 1 / 2, 2 / 3):
        s, f = next((s, f) for s, f in seen if s >= share * total and f > 0)
        at[f"{share:.2f}"] = dict(elapsed=round(s, 1), share_done=round(f, 3), told=round(s * (1 - f) / f, 1),
                                  truth=round(total - s, 1))
    print(json.dumps(dict(rows=args.rows, seconds=round(total, 1), at=at)))


if __name__ == "__main__":
    main()
