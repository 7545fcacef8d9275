"""The classical references of the relation matrices, on one encoded table: Pearson and Spearman correlation,
k-nearest-neighbour mutual information, and the pair statistics the edge head reads beside FEAT's tokens, in the
column order of the package's docstring.
"""
from __future__ import annotations

from typing import Any, Hashable

import numpy as np
import pandas as pd
from joblib import parallel_config
from scipy.stats import rankdata
from sklearn.feature_selection import mutual_info_regression

from ..errors import FEATInputError
from ..preprocess import NOMINAL_MIN_LEVELS, TablePreprocessor, as_frame, unordered
from ..targets import ClassEncoder, infer_task, target_numbers


def split_target(X: Any, target: Hashable | None) -> tuple[pd.DataFrame, pd.Series | None]:
    """The table's features and its `target` column (None without one), naming a missing target in the error."""
    X = as_frame(X, "X")
    if target is None:
        return X, None
    if target not in X.columns:
        raise FEATInputError(f"target column {target!r} does not exist (columns: {list(X.columns)})")
    y = X[target]
    X = X.drop(columns=[target])
    if X.shape[1] == 0:
        raise FEATInputError(f"no feature columns besides the target {target!r}")
    return X, y


def encoded_table(X: Any, target: Hashable | None = None) -> pd.DataFrame:
    """The numeric table all three matrices describe: encoded features, then the target (codes for classes)."""
    return _encoded(X, target)[0]


def _encoded(X: Any, target: Hashable | None) -> tuple[pd.DataFrame, list[str]]:
    """`encoded_table`, and its columns that are categories without an order of NOMINAL_MIN_LEVELS levels or more (a
    class target too): their codes follow the levels' sorted names, so a correlation with them would too."""
    X, y = split_target(X, target)
    pre = TablePreprocessor().fit(X)
    enc, blank = pre.encode(X), [f for c in pre.plan_ if c.nominal for f in c.features()]
    if y is not None:
        numbers = target_numbers(y)             # read once; the task rule reads them as they are
        regression = infer_task(numbers) == "regression"
        enc[str(target)] = numbers.to_numpy() if regression else _codes(y, target).astype(float)
        if not regression and unordered(y) and y.nunique() >= NOMINAL_MIN_LEVELS:
            blank.append(str(target))
    return enc, blank


def _correlations(X: Any, target: Hashable | None, method: str) -> pd.DataFrame:
    """`method`'s correlations of the encoded table, NaN in the rows and columns of categories without an order."""
    enc, blank = _encoded(X, target)
    out = enc.corr(method=method)
    out.loc[blank, :], out.loc[:, blank] = np.nan, np.nan
    return out


def _codes(y: pd.Series, name: Hashable) -> np.ndarray:
    codes = ClassEncoder().fit(y.dropna(), str(name)).transform(y).astype(float)
    codes[codes < 0] = np.nan
    return codes


def pearson_matrix(X: Any, target: Hashable | None = None) -> pd.DataFrame:
    """Pearson correlation (pairwise complete rows) of the encoded table, in `relation_matrix`'s order.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_rows, n_columns)
        The table; array columns are named 0..n_columns-1. Columns the preprocessor drops (constant ones,
        near-unique text or IDs) are left out, and datetime columns expand into their parts.
        Numbers enter unscaled, categories as their integer codes: an ordered category's in its order, one of
        two levels' with the sign its sorted level names give; a category without an order of three or more
        levels has no correlation (NaN in its row and column).
    target : hashable or None, default None
        Label of a column of X to read as the target: it leaves the features and comes last, as its values
        for a regression target or its class codes for a classification one (a missing target is a missing
        cell; classes named without an order, three or more of them, have no correlation). None: no target row
        or column.

    Returns
    -------
    DataFrame of shape (n_encoded, n_encoded)
        Correlations, indexed and labelled by the encoded feature names, then the target's name; NaN where a
        column is constant, is a category without an order, or a pair has too few complete rows.
    """
    return _correlations(X, target, "pearson")


def spearman_matrix(X: Any, target: Hashable | None = None) -> pd.DataFrame:
    """Spearman rank correlation of the encoded table, in `relation_matrix`'s order: `pearson_matrix` on ranks.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_rows, n_columns)
        The table, read as `pearson_matrix` reads it.
    target : hashable or None, default None
        A column of X to read as the target, as in `pearson_matrix`.

    Returns
    -------
    DataFrame of shape (n_encoded, n_encoded)
        Rank correlations (pairwise complete rows), labelled as `pearson_matrix`'s.
    """
    return _correlations(X, target, "spearman")


def mutual_information_matrix(X: Any, target: Hashable | None = None, max_rows: int | None = 4096,
                              random_state: int | None = 0) -> pd.DataFrame:
    """k-nearest-neighbour mutual information (scikit-learn's `mutual_info_regression`, 3 neighbours) between
    the columns of the encoded table, in nats, in `relation_matrix`'s order: [i, j] estimates I(column i;
    column j) with column j as the predicted one, so the two estimates of a pair differ by the estimator's
    noise. Columns are standardised with missing cells at the column mean (class codes and level codes read
    as numbers); a constant column scores 0; the diagonal is 0.

    The classical reference: of the statistics computed on the table alone it recovers the edges of held-out
    causal graphs best, and the edge head, which reads it, better still (docs/benchmarks.md, "Relation
    discovery").

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_rows, n_columns)
        The table, its columns read as `pearson_matrix` reads them.
    target : hashable or None, default None
        Label of a column of X to read as the target: it leaves the features and comes last, as its values
        for a regression target or its class codes for a classification one. None: no target row or column.
    max_rows : int or None, default 4096
        Most rows read: past it a random subset of this many is read (the estimate settles long before, and
        each column costs O(rows log rows) per other column). None reads every row.
    random_state : int or None, default 0
        Seed of the row subset and of the noise scikit-learn's estimator adds; None draws afresh at each call.

    Returns
    -------
    DataFrame of shape (n_encoded, n_encoded)
        Mutual information in nats, [i, j] with column j predicted, indexed and labelled by the encoded
        feature names, then the target's name.
    """
    enc = encoded_table(X, target)
    if max_rows is not None and len(enc) > max_rows:
        enc = enc.iloc[np.sort(np.random.default_rng(random_state).permutation(len(enc))[:max_rows])]
    out = mutual_information_among(enc.to_numpy(dtype=float), random_state)
    return pd.DataFrame(out, index=enc.columns, columns=enc.columns)


def _filled_standardised(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Columns with missing cells at their mean, standardised (a constant column stays 0), and which vary."""
    z = np.where(np.isnan(z), np.nanmean(np.where(np.isnan(z).all(0), 0.0, z), axis=0), z)
    sd = z.std(0)
    return (z - z.mean(0)) / np.where(sd > 0, sd, 1.0), sd > 0


def mutual_information_among(z: np.ndarray, random_state: int | None = 0, once: bool = False) -> np.ndarray:
    """(D, D) k-nearest-neighbour mutual information of the columns of z (NaN allowed): [i, j] with column j
    predicted, or with `once` one estimate a pair, the matrix symmetric (Kraskov's estimator reads a pair's two columns
    alike but for the noise scikit-learn adds to break ties: half the estimates, for the pair statistics and a wide
    table's columns read beside, where the two were averaged or summed); zero diagonal and zero for constant columns."""
    z, varies = _filled_standardised(z)
    out = np.zeros((z.shape[1], z.shape[1]))
    cols = np.flatnonzero(varies)
    with parallel_config(backend="threading", n_jobs=-1):  # all cores, in threads: the same numbers, 1.7x faster
        for a, j in enumerate(cols[:-1] if once else cols):
            others = cols[a + 1:] if once else np.delete(np.arange(z.shape[1]), j)
            out[others, j] = mutual_info_regression(z[:, others], z[:, j], n_neighbors=3, random_state=random_state)
    out[~varies, :] = 0.0
    return out + out.T if once else out


def _partial(c: np.ndarray, ridge: float = 1e-2) -> np.ndarray:
    """Partial correlations of each pair given all other columns, from a correlation matrix (ridged inverse)."""
    p = np.linalg.inv(c + ridge * np.eye(len(c)))
    s = np.sqrt(np.diag(p))
    return -p / np.outer(s, s)


def pair_statistics(z: np.ndarray, random_state: int | None = 0) -> np.ndarray:
    """(D, D, N_STATS) classical evidence on each pair of columns of z (rows x columns, NaN allowed), which
    the edge head reads beside FEAT's tokens: mutual information (`mutual_information_among`, once), abs(Pearson),
    abs(Spearman), and the abs partial Pearson and Spearman correlations given all other columns (the classical test
    of a direct link). Missing cells sit at the column mean; zero diagonal."""
    z, _ = _filled_standardised(np.asarray(z, dtype=float))
    mi = mutual_information_among(z, random_state, once=True)
    with np.errstate(invalid="ignore", divide="ignore"):          # a constant column correlates 0
        r, rho = (np.nan_to_num(np.atleast_2d(np.corrcoef(v, rowvar=False))) for v in (z, rankdata(z, axis=0)))
    out = np.abs(np.stack([mi, r, rho, _partial(r), _partial(rho)], -1))
    out[np.arange(len(out)), np.arange(len(out))] = 0.0
    return out.astype(np.float32)
