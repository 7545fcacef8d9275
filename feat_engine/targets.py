"""Targets: the task a target asks for, the rows that have one, class labels <-> 0..K-1, and
regression targets standardised with the context's statistics."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import column_or_1d

from .errors import FEATDataWarning, FEATInputError, sklearn_words
from .preprocess import CATEGORY_MARKS, column_kind, missing_marks, numbers, numbers_in_text

DOMINANT_SHARE = 0.5     # a regression target's value holding more of the targets' squared deviation is named ...
DOMINANT_MIN_ROWS = 20   # ... among at least this many context targets (`warn_dominant`)


def is_continuous(y: pd.Series) -> bool:
    """Whether the observed values of y are what scikit-learn's `type_of_target` calls continuous:
    numbers, not all of them whole. A classifier refuses such a target; `infer_task` calls it regression.

    Parameters
    ----------
    y : Series
        The target column. Missing and infinite values are ignored; booleans, datetimes, text and
        categories are never continuous.

    Returns
    -------
    bool
        True when y is numeric and its finite values are not all whole; False otherwise, and when it has
        no finite value.
    """
    if column_kind(y) != "numeric":
        return False
    v = numbers(y)
    v = v[np.isfinite(v)]
    return len(v) > 0 and type_of_target(v) == "continuous"


def infer_task(y: pd.Series, max_classes: int = 10) -> str:
    """'regression' for a continuous target or a numeric one of more than `max_classes` values; else
    'classification' (text, booleans, categories, a few whole numbers). The one rule behind the
    CLI's `--task auto` and the app's task detection.

    Parameters
    ----------
    y : Series
        The target column; missing values are not counted.
    max_classes : int, default 10
        Most distinct values a numeric target of whole numbers may have and still be read as classes.

    Returns
    -------
    {"regression", "classification"}
        The task the target asks for.
    """
    y = target_numbers(y)
    many = column_kind(y) == "numeric" and y.nunique() > max_classes
    return "regression" if many or is_continuous(y) else "classification"


def a_class_a_row(y: pd.Series) -> bool:
    """Whether almost every labelled row of a class target is its own class (more classes than half of them, past
    20): nothing to learn from, and a run per class. The CLI refuses such a target, as the app does."""
    nn = y.dropna()
    return len(nn) > 20 and nn.nunique() > 0.5 * len(nn)


def target_numbers(y: pd.Series) -> pd.Series:
    """y, or its numbers where it is text whose values are numbers (`numbers_in_text`: "$1,234.50" too)."""
    parsed = numbers_in_text(y) if column_kind(y) != "numeric" else None
    return y if parsed is None else parsed.rename(y.name)


def numeric_target(y: pd.Series) -> pd.Series:
    """A regression target: y, or its numbers where it is text whose values are numbers, said in a FEATDataWarning
    as for a feature column (`preprocess.plan_column`)."""
    parsed = target_numbers(y)
    if parsed is not y:
        warnings.warn(f"target {target_name(y)!r} holds numbers as text and is read as such", FEATDataWarning,
                      stacklevel=3)
    return parsed


def target_name(y: Any) -> str:
    """What a message calls the target: a Series' own name (a table's column), else 'y'."""
    name = getattr(y, "name", None)
    return "y" if name is None else str(name)


def target_rows(y: Any, n_rows: int, name: str | None = None) -> np.ndarray:
    """Boolean mask of rows with an observed target; warns when some are dropped, raises if none. Messages call it
    `name`, by default `target_name(y)`."""
    name = name or target_name(y)
    y = pd.Series(np.asarray(y, dtype=object) if not isinstance(y, pd.Series) else y)
    if len(y) != n_rows:
        raise FEATInputError(f"target {name!r} has {len(y)} values but the table has {n_rows} rows")
    if pd.api.types.is_complex_dtype(y.dtype):
        raise FEATInputError(f"target {name!r}: Complex data not supported")
    keep = y.notna().to_numpy()
    if pd.api.types.is_numeric_dtype(y.dtype) and not pd.api.types.is_bool_dtype(y.dtype):
        keep = keep & np.isfinite(numbers(y))
    elif column_kind(y) == "categorical":                # "?" names no class (`CATEGORY_MARKS`)
        keep = keep & ~missing_marks(y, CATEGORY_MARKS).to_numpy()
    if not keep.any():
        raise FEATInputError(f"target {name!r} is all missing (NaN)")
    if not keep.all():
        warnings.warn(f"dropped {int((~keep).sum())} context rows whose target {name!r} is missing", FEATDataWarning, stacklevel=3)
    return keep


class ClassEncoder:
    """Class labels of any type <-> 0..K-1 (sorted where the labels sort, in a category's order where y is one); the
    classes are the labels y holds, as scikit-learn's, not a category dtype's unused levels."""

    def fit(self, y: pd.Series, name: str | None = None) -> "ClassEncoder":
        """The classes y holds; a target of one class is refused, named `name` (by default `target_name(y)`)."""
        self.classes_ = pd.Categorical(y).remove_unused_categories().categories.to_numpy()
        name = name or target_name(y)
        if len(self.classes_) < 2:
            only = self.classes_[0].item() if isinstance(self.classes_[0], np.generic) else self.classes_[0]
            raise FEATInputError(f"target {name!r} has a single class ({only!r}); classification needs at least two")
        return self

    def transform(self, y: pd.Series) -> np.ndarray:
        return pd.Index(self.classes_).get_indexer(y).astype(np.int64)

    def inverse_transform(self, codes: np.ndarray) -> np.ndarray:
        return self.classes_[np.asarray(codes)]


class TargetScaler:
    """Regression targets: numeric check, standardisation with context stats, and its inverse."""

    def fit(self, y: pd.Series, name: str | None = None) -> "TargetScaler":
        """The context targets' mean, standard deviation and range (named `name`, by default `target_name(y)`);
        warns where one of them sets that scale alone (`warn_dominant`)."""
        name = name or target_name(y)
        if pd.api.types.is_bool_dtype(y.dtype) or not pd.api.types.is_numeric_dtype(y.dtype):
            raise FEATInputError(f"regression target {name!r} is not numeric (dtype {y.dtype}, e.g. {y.iloc[0]!r})")
        v = numbers(y)
        warn_dominant(v, y.index, name)
        self.mean_, std = float(np.mean(v)), float(np.std(v))
        self.std_ = std if std > 0 else 1.0
        self.range_ = (float(np.min(v)), float(np.max(v)))
        return self

    def transform(self, y: pd.Series) -> np.ndarray:
        return ((numbers(y) - self.mean_) / self.std_).astype(np.float32)

    def inverse_transform(self, z: np.ndarray) -> np.ndarray:
        """z in the target's units, within the context targets' range: for every row whose truth lies in that range,
        the range's end is nearer to it than a prediction beyond it (a budget never below 0, a share never above 1),
        and a constant context target is the prediction for every row, without the noise of a model that has only
        ever read targets that vary (docs/decisions/0012-preprocessing.md)."""
        return np.clip(np.asarray(z, dtype=np.float64) * self.std_ + self.mean_, *self.range_)



def warn_dominant(v: np.ndarray, index: pd.Index, name: str) -> None:
    """Warn, naming the row and its value, where one of at least DOMINANT_MIN_ROWS context targets v holds more than
    DOMINANT_SHARE of their squared deviation from the mean. The engine reads the targets standardised by their mean
    and deviation, so that value alone sets the scale: a typo of 1e9 among values of spread 10 leaves the others a
    spread of 2e-7, and the predictions' correlation with the truth fell from 0.99 to 0.57
    (docs/decisions/0012-preprocessing.md). Scaling by robust statistics instead lost on clean targets."""
    if len(v) < DOMINANT_MIN_ROWS:
        return
    d = (v - v.mean()) ** 2
    i = int(np.argmax(d))
    if not d[i] > DOMINANT_SHARE * d.sum():
        return
    rest, row = np.delete(v, i), index[i]
    row = row.item() if isinstance(row, np.generic) else row
    warnings.warn(f"target {name!r}: the context row {row!r} holds {v[i]:,.6g}, far outside the others "
                  f"({rest.min():,.6g} to {rest.max():,.6g}), and more of the target's spread than all of them "
                  "together: FEAT reads the target on that value's scale and tells the others apart less. If it is a "
                  "typo or a code for unknown (999999), fix it or leave the row out", FEATDataWarning, stacklevel=4)


def as_target(y: Any) -> pd.Series:
    """y as a Series, numbers held as objects made numbers. A Series is taken as it is; anything else
    goes through scikit-learn's `column_or_1d`, which warns (DataConversionWarning) on a column
    vector and refuses other shapes and complex numbers."""
    if not isinstance(y, pd.Series):
        with sklearn_words("target"):
            y = pd.Series(column_or_1d(y, warn=True))
    return y.infer_objects()
