"""Scores shown in the Predict and Masking views, and how metric cards print numbers;
plain numpy/pandas/scikit-learn."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
from sklearn import metrics as skm

from feat_engine.predictions import roc_auc

SELDOM_RECALL = 0.1     # a class the predictions find for fewer of its rows than this is named (`seldom_found`)
SELDOM_ROWS = 10        # ... where it has at least this many rows, so that the share means something

METRIC_HELP = {
    "ROC-AUC": "How well the predicted probabilities rank the rows: 1 puts every row of a class above the rows of "
               "the others, 0.5 is a coin toss. With more than two classes, the mean over each class against the "
               "rest. Higher is better.",
    "accuracy": "The share of held-out rows whose predicted class is their true class. Higher is better.",
    "F1 (macro)": "For each class, the balance between how many of the rows predicted as that class are right and how "
                  "many of its rows are found, averaged over the classes with equal weight, so a rare class counts "
                  "as much as a common one. Higher is better.",
    "RMSE": "Root mean squared error, in the target's units: the typical size of a miss, large misses counting "
            "more. Lower is better.",
    "R²": "The share of the target's variation that the predictions explain: 1 is perfect, 0 is no better than "
          "predicting the average. Higher is better.",
    "MAE": "Mean absolute error, in the target's units: the average size of a miss. Lower is better.",
    "NRMSE": "The typical miss on the filled number cells (root mean squared error) divided by the column's "
             "standard deviation: 1 is about as good as filling in the column's average. Lower is better.",
    "cell accuracy": "The share of filled category cells that got their true value back. Higher is better.",
    "balanced accuracy": "The share of each class's held-out rows that got their class, averaged over the classes "
                         "with equal weight: always answering the most common class scores 1 / (number of classes), "
                         "however rare the others are, where accuracy would score that class's share. Higher is "
                         "better.",
    "precision": "Of the held-out rows predicted as this class, the share that truly are. Higher is better.",
    "recall": "Of the held-out rows that truly are this class, the share predicted as it. Higher is better.",
    "time": "Seconds from the click to the answer: reading the example rows and predicting the others.",
    "FEAT time": "Seconds from the click to FEAT's final answer, its first answer included (on tables long enough "
                 "for one): reading the example rows and predicting the others.",
}
"""What each score means, in an analyst's words: the help of its card."""


def card_text(x: float | None, unit: str = "", digits: int = 3, sign: bool = False) -> str:
    """A number as every card, table and label of the app shows it: whole numbers whole, other numbers to
    `digits` significant digits (never fewer than their integer part has; scientific below 0.001), thousands
    separated, "n/a" when missing or infinite. `unit` follows after a space; `sign` adds + to positive numbers."""
    if x is None or not np.isfinite(x):
        return "n/a"
    plus = "+" if sign else ""
    if isinstance(x, (float, np.floating)) and float(x).is_integer() and abs(x) < 1e15:
        x = int(x)
    if isinstance(x, (int, np.integer)):
        return f"{x:{plus},}" + (f" {unit}" if unit else "")
    rounded = float(f"{x:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(rounded))) if rounded else 0
    if magnitude < -3:
        text = f"{x:{plus}.{digits - 1}e}"
    else:
        text = f"{x:{plus},.{max(0, digits - 1 - magnitude)}f}"
    return f"{text} {unit}" if unit else text


def size_text(n_bytes: float) -> str:
    """A memory size in the unit that reads best: "620 B", "9.9 KB", "12.3 MB", "1.2 GB"."""
    for unit in ("B", "KB", "MB"):
        if n_bytes < 1024:
            return f"{n_bytes:,.0f} {unit}" if unit == "B" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:,.1f} GB"


def label_codes(values, labels: list) -> np.ndarray:
    """Each label's position in `labels`, labels it lacks appended to it as they come: class labels of
    any kind (numbers, text, bools, numpy scalars, pandas categories or nullable integers) become
    integers, so scikit-learn's metrics never meet a mix of kinds (an integer 0/1 target read back as
    objects was "a mix of binary and unknown targets" to them). The distinct values are found first
    (`pd.factorize`, which meets equal labels as a dict does, missing ones as one): a 250,000-row holdout took 0.26 s
    a call one value at a time."""
    index = {_label_key(v): i for i, v in enumerate(labels)}
    found, distinct = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    code = np.empty(len(distinct), dtype=np.int64)
    for j, v in enumerate(distinct):                 # in the order they come
        key = _label_key(v)
        if key not in index:
            index[key] = len(labels)
            labels.append(v)
        code[j] = index[key]
    return code[found]


def _label_key(v):
    """A hashable key under which equal labels meet: numpy scalars as Python ones, missing as None."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def classification_metrics(y_true, y_pred, proba: np.ndarray | None = None, classes=None) -> dict[str, float]:
    """accuracy, balanced accuracy (the mean recall over the holdout's classes), macro F1 and ROC-AUC (binary:
    positive = classes[1]; multiclass: one-vs-rest macro). ROC-AUC is NaN when the holdout has a single class or no
    probabilities are given. The labels may be of any kind (`label_codes`); `proba`'s columns follow `classes`."""
    labels = list(classes) if classes is not None else []
    t, p = label_codes(y_true, labels), label_codes(y_pred, labels)
    with warnings.catch_warnings():      # a predicted class the holdout lacks: scikit-learn warns, the score stands
        warnings.simplefilter("ignore", UserWarning)
        balanced = float(skm.balanced_accuracy_score(t, p)) if len(t) else float("nan")
    out = {
        "accuracy": float(skm.accuracy_score(t, p)),
        "balanced accuracy": balanced,
        "F1 (macro)": float(skm.f1_score(t, p, average="macro", zero_division=0)),
        "ROC-AUC": float("nan"),
    }
    if proba is not None and classes is not None:
        out["ROC-AUC"] = roc_auc(t, np.asarray(proba, dtype=float))     # classes the model lacks: NaN
    return out


def regression_metrics(y_true, y_pred) -> dict[str, float]:
    y_true = np.asarray(y_true, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)
    return {
        "RMSE": float(math.sqrt(skm.mean_squared_error(y_true, y_pred))),
        "R²": float(skm.r2_score(y_true, y_pred)) if len(y_true) > 1 else float("nan"),
        "MAE": float(skm.mean_absolute_error(y_true, y_pred)),
    }


def natural_order(labels) -> list:
    """Labels in the order a reader expects: text labels by their words and the numbers in them as numbers ('0',
    '1', '2-10', '11-100', 'Over 100'; not '11-100' before '2-10' as text sorts), other labels as given."""
    labels = list(labels)
    if not all(isinstance(c, str) for c in labels):
        return labels
    return sorted(labels, key=lambda c: [(0, int(part), "") if part.isdigit() else (1, 0, part.casefold())
                                         for part in re.split(r"(\d+)", c) if part])


def confusion(y_true, y_pred, labels) -> pd.DataFrame:
    """Rows: true class, columns: predicted class, in the order of `labels` (labels of any kind,
    `label_codes`)."""
    labels = list(labels)
    k = len(labels)
    t, p = label_codes(y_true, labels), label_codes(y_pred, labels)
    cm = skm.confusion_matrix(t, p, labels=np.arange(k))
    names = [str(c) for c in labels[:k]]
    return pd.DataFrame(cm, index=pd.Index(names, name="true"), columns=pd.Index(names, name="predicted"))


def minority_class(y_true, classes):
    """The class of `classes` (two of them) with the fewer rows in `y_true`, the positive class of a decision
    cut-off and of the ROC and precision-recall curves; on a tie, classes[1]."""
    labels = list(classes)
    counts = np.bincount(label_codes(y_true, labels), minlength=len(labels))[:2]
    return labels[0] if counts[0] < counts[1] else labels[1]


def at_cutoff(proba: np.ndarray, classes, positive, cutoff: float) -> np.ndarray | None:
    """The class of each row under a decision cut-off on a two-class model's probabilities: `positive` where its
    probability is at least `cutoff`, the other class elsewhere (at 0.5, the more likely class, as the model
    answers). None where `classes` are not two or lack `positive`."""
    labels = list(classes)
    at = label_codes([positive], labels)[0]
    if len(classes) != 2 or at >= 2:
        return None
    chosen = np.asarray(proba, dtype=float)[:, at] >= cutoff
    return np.where(chosen, np.asarray([labels[at]], dtype=object), np.asarray([labels[1 - at]], dtype=object))


def precision_recall(y_true, y_pred, positive) -> tuple[float, float]:
    """Precision and recall of the class `positive`: of the rows predicted as it, the share that are; of the rows
    that are, the share predicted as it. NaN where no row is predicted as it (precision) or none is it (recall)."""
    labels = [positive]
    t, p = label_codes(y_true, labels) == 0, label_codes(y_pred, labels) == 0
    hits = float(np.sum(t & p))
    return (hits / p.sum() if p.any() else float("nan"), hits / t.sum() if t.any() else float("nan"))


def seldom_found(y_true, y_pred, classes) -> list[tuple[object, int, int, int]]:
    """The classes that rows of `y_true` have but the predictions find seldom, each with how many rows of `y_true`
    have it, how many of those the predictions find and how many rows they name it, most rows first: a class no
    prediction names, or one of at least SELDOM_ROWS rows of which the predictions find under SELDOM_RECALL. A model
    that (nearly) never answers a class scores that class's rows (nearly) all wrong, whatever its accuracy says."""
    labels = list(classes)
    t, p = label_codes(y_true, labels), label_codes(y_pred, labels)
    counts = np.bincount(t, minlength=len(labels))
    found = np.bincount(t[t == p], minlength=len(labels))
    named = np.bincount(p, minlength=len(labels))
    seldom = [(labels[c], int(counts[c]), int(found[c]), int(named[c])) for c in np.flatnonzero(counts)
              if named[c] == 0 or (counts[c] >= SELDOM_ROWS and found[c] < SELDOM_RECALL * counts[c])]
    return sorted(seldom, key=lambda m: -m[1])


def compare_table(scores: dict[str, dict[str, float]], seconds: dict[str, float]) -> pd.DataFrame:
    """Methods as rows, metrics plus fit+predict seconds as columns."""
    df = pd.DataFrame(scores).T
    df["seconds"] = pd.Series(seconds)
    df.index.name = "method"
    return df


# --------------------------------------------------------------------------- imputation

def imputation_scores(truth: pd.DataFrame, filled: pd.DataFrame, mask: np.ndarray,
                      kinds: dict[str, str]) -> pd.DataFrame:
    """Per-column score on the hidden cells.

    numeric columns: NRMSE = RMSE over hidden cells / std of the column's true values
    (all rows), so 1.0 is about as good as guessing the mean; categorical columns:
    accuracy over hidden cells. Columns with no hidden cell are left out.
    """
    rows = []
    for j, c in enumerate(truth.columns):
        m = np.asarray(mask[:, j], dtype=bool)
        if not m.any():
            continue
        t, f = truth[c].to_numpy()[m], filled[c].to_numpy()[m]
        if kinds.get(c) == "numeric":
            t = np.asarray(t, dtype=float)
            f = np.asarray(f, dtype=float)
            sd = float(np.nanstd(truth[c].to_numpy(dtype=float)))
            ok = ~np.isnan(t)
            rmse = float(np.sqrt(np.nanmean((t[ok] - f[ok]) ** 2))) if ok.any() else float("nan")
            rows.append({"column": c, "kind": "numeric", "metric": "NRMSE", "value": rmse / sd if sd > 0 else float("nan"),
                         "hidden": int(m.sum())})
        else:
            acc = float(np.mean([_same(a, b) for a, b in zip(t, f)]))
            rows.append({"column": c, "kind": "categorical", "metric": "accuracy", "value": acc, "hidden": int(m.sum())})
    return pd.DataFrame(rows, columns=["column", "kind", "metric", "value", "hidden"])


def _same(a, b) -> bool:
    if pd.isna(a) and pd.isna(b):
        return True
    return str(a) == str(b)


def overall_scores(per_column: pd.DataFrame) -> dict[str, float]:
    """Mean NRMSE over numeric columns and mean accuracy over categorical ones (NaN if none)."""
    out = {}
    for metric in ("NRMSE", "accuracy"):
        v = per_column.loc[per_column["metric"] == metric, "value"]
        out[metric] = float(v.mean()) if len(v) else float("nan")
    return out
