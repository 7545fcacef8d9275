"""The reference methods the app shows next to FEAT: a GBDT for prediction and simple
imputers for the masking demo. These are off-the-shelf scikit-learn / LightGBM models,
not FEAT modelling; FEAT itself is only called through feat_engine's public API."""
from __future__ import annotations

import time
import warnings

import lightgbm as lgb
import numpy as np
import pandas as pd


GBDT = "LightGBM"   # the GBDT beside FEAT (a dependency of the engine's own stacked tree model)


def _encode_for_gbdt(X: pd.DataFrame, ref: pd.DataFrame) -> pd.DataFrame:
    """Text, bool and category columns as pandas categories of their values' text, fixed on `ref` (the
    training rows: a level seen only in X is missing to the GBDT); datetimes as days since 1970. Works on a
    copy."""
    out = {}
    for c in X.columns:
        s = X[c]
        if pd.api.types.is_datetime64_any_dtype(s):
            out[c] = (s - pd.Timestamp("1970-01-01", tz=getattr(s.dt, "tz", None))) / pd.Timedelta(days=1)
        elif pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            cats = pd.Categorical(_as_text(ref[c]).dropna()).categories
            text = _as_text(s)
            out[c] = pd.Categorical(text.where(text.isin(cats)), categories=cats)
        else:
            out[c] = pd.to_numeric(s, errors="coerce").astype(float)
    return pd.DataFrame(out, index=X.index)


def _as_text(s: pd.Series) -> pd.Series:
    """Each value's text, missing cells kept missing: a category column of numbers (an integer-coded
    category) is read through its values, so its text never has to fit the numeric categories."""
    return s.astype(object).map(str, na_action="ignore")


def fit_predict_gbdt(X_train: pd.DataFrame, y_train: pd.Series, X_test: pd.DataFrame, task: str,
                     seed: int = 0) -> dict:
    """Train the GBDT on the training rows, predict the test rows. Returns pred, proba,
    classes and seconds (fit + predict)."""
    t0 = time.perf_counter()
    Xtr, Xte = _encode_for_gbdt(X_train, X_train), _encode_for_gbdt(X_test, X_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = dict(n_estimators=200, learning_rate=0.05, num_leaves=31, random_state=seed, verbose=-1,
                      n_jobs=2, min_child_samples=min(20, max(2, len(Xtr) // 10)))
        model = lgb.LGBMClassifier(**params) if task == "classification" else lgb.LGBMRegressor(**params)
        if task == "classification":
            y = pd.Series(y_train).astype(str).to_numpy()
            labels = pd.Series(y_train).drop_duplicates().tolist()
            by_str = {str(v): v for v in labels}
            model.fit(Xtr, y)
            proba = model.predict_proba(Xte)
            classes = [by_str[c] for c in model.classes_]
            pred = np.asarray(classes, dtype=object)[proba.argmax(axis=1)]
            out = {"pred": pred, "proba": proba, "classes": classes}
        else:
            model.fit(Xtr, pd.to_numeric(y_train).astype(float))
            out = {"pred": model.predict(Xte), "proba": None, "classes": None}
    out["seconds"] = time.perf_counter() - t0
    out["name"] = GBDT
    return out


# --------------------------------------------------------------------------- imputers

def _codes(df: pd.DataFrame, kinds: dict[str, str]) -> tuple[np.ndarray, dict]:
    """Numeric matrix for sklearn imputers: categorical columns as category codes (NaN missing)."""
    cols, maps = [], {}
    for c in df.columns:
        if kinds[c] == "numeric":
            cols.append(pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float))
        else:
            cat = pd.Categorical(df[c].astype(object).where(df[c].notna(), None))
            codes = cat.codes.astype(float)
            codes[codes < 0] = np.nan
            maps[c] = cat.categories
            cols.append(codes)
    return np.column_stack(cols), maps


def _back(df: pd.DataFrame, mat: np.ndarray, kinds: dict[str, str], maps: dict) -> pd.DataFrame:
    """Write imputed values into the NaN cells of `df` only (categoricals: nearest code)."""
    out = df.copy()
    for j, c in enumerate(df.columns):
        miss = df[c].isna().to_numpy()
        if not miss.any():
            continue
        v = mat[miss, j]
        if kinds[c] == "numeric":
            col = out[c].astype(float) if not pd.api.types.is_float_dtype(out[c]) else out[c]
            col = col.copy()
            col[miss] = v
            out[c] = col
        else:
            cats = maps[c]
            idx = np.clip(np.rint(np.nan_to_num(v, nan=0)).astype(int), 0, max(len(cats) - 1, 0))
            col = out[c].astype(object)
            col[miss] = [cats[i] for i in idx] if len(cats) else None
            out[c] = col
    return out


def impute_mean_mode(df: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """Each number column's empty cells filled with its mean (as floats: a nullable integer column cannot hold it),
    each other column's with its most frequent value."""
    out = df.copy()
    for c in df.columns:
        if not df[c].isna().any():
            continue
        if kinds[c] == "numeric":
            v = pd.to_numeric(df[c], errors="coerce").astype("float64")
            out[c] = v.fillna(v.mean())
        else:
            mode = df[c].mode(dropna=True)
            col = df[c].astype(object)
            out[c] = col.where(col.notna(), mode.iloc[0] if len(mode) else None)
    return out


def impute_knn(df: pd.DataFrame, kinds: dict[str, str], k: int = 5) -> pd.DataFrame:
    from sklearn.impute import KNNImputer
    mat, maps = _codes(df, kinds)
    mu, sd = np.nanmean(mat, axis=0), np.nanstd(mat, axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    filled = KNNImputer(n_neighbors=k).fit_transform((mat - mu) / sd) * sd + mu
    return _back(df, _restore_width(filled, mat, mu), kinds, maps)


def impute_iterative(df: pd.DataFrame, kinds: dict[str, str], seed: int = 0) -> pd.DataFrame:
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer
    mat, maps = _codes(df, kinds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning
        filled = IterativeImputer(max_iter=10, random_state=seed, sample_posterior=False).fit_transform(mat)
    return _back(df, _restore_width(filled, mat, np.nanmean(mat, axis=0)), kinds, maps)


def _restore_width(filled: np.ndarray, mat: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """sklearn imputers drop all-NaN columns; put them back (filled with the fallback)."""
    if filled.shape[1] == mat.shape[1]:
        return filled
    keep = ~np.all(np.isnan(mat), axis=0)
    out = np.tile(np.nan_to_num(fallback), (mat.shape[0], 1))
    out[:, keep] = filled
    return out


BASELINE_IMPUTERS = {
    "mean/mode": impute_mean_mode,
    "KNN": impute_knn,
    "Iterative": impute_iterative,
}
