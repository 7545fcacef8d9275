"""What the three estimators share: their common parameters, scikit-learn's input checks, the preprocessed
context, and the model and settings every engine run takes."""
from __future__ import annotations

import inspect
import os
import textwrap
import time
from typing import Any, Callable

import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from ..checkpoint import resolve_model, trained_max_features
from ..errors import sklearn_words
from ..inference import check_precision, precision_config
from ..model import FEAT
from ..preprocess import UnclippedRows, TablePreprocessor, as_frame
from ..progress import PREP_PACE, Progress
from .runner import EngineSettings


# (type, meaning) of the parameters the estimators share, for their numpydoc Parameters sections (`documented`)
PARAMETERS = {
    "random_state": ("int or None, default 0", "Seed of every draw; None draws afresh at each call."),
    "device": ('{"auto", "cpu", "cuda"}, default "auto"', 'Where the engine runs: "auto" takes a CUDA GPU when '
               "PyTorch sees one."),
    "max_context": ("int or None, default None", "Context rows per member, a random subset of them; None reads them all "
                    "(within `read_budget`). The classical models beside the engine read every row."),
    "max_features": ("int or None, default None", "Features per engine run; None is the width the checkpoint was "
                     "pretrained on. Wider tables give each member the most relevant features first."),
    "local_context": ('int, "auto" or None, default 1024', "Rows per local part: a member whose context holds at least "
                      "twice as many splits it into parts of this size, and each query reads the part nearest to it. "
                      'None reads the whole context; "auto" chooses among parts of 512, parts of 1,024 and the whole '
                      "context on held-out context rows."),
    "checkpoint": ('path, {"small", "fast"}, FEAT or None, default None', "The pretrained model: a checkpoint file, "
                   'a loaded model, or a shipped one: "small" (None) or "fast", its student, at about half the cost '
                   "per row read: 0.68-0.81 of the time on the development tables, scoring within 0.003 mean "
                   "ROC-AUC and 0.01 mean R² of it there (docs/decisions/0043-student.md)."),
    "progress": ("callable or None, default None", "Called as progress(done, total, message) over all engine runs of "
                 "a call."),
    "precision": ('{"auto", "fp32", "bf16"}, default "auto"', 'Arithmetic of the engine\'s matrix products: "auto" '
                  "takes bf16 where it is fast (a GPU, or a CPU that multiplies bf16 natively) and fp32 elsewhere; "
                  '"fp32" gives the same numbers on every CPU.'),
    "view": ('{"auto", "additive", "trees"} or None, default "auto"', "A cross-fitted classical model whose prediction "
             "the engine reads as one more feature: an additive model over splines, boosted trees, whichever "
             'predicts the context\'s labels better out of fold ("auto"; on a short context whose features leave a '
             "slot free, the other kind's too, as the last feature), or None for none."),
    "blend": ("bool, default True", "Blend the engine's output with the classical model's own prediction: on a "
              "context split into local parts, at the weight that predicts held-out context rows best; where none are "
              "held out (under 4,096 rows, or a context read whole), at 0.25 (docs/decisions/0024-blend.md)."),
    "read_budget": ("int or None, default 8,000,000", "Context cells (rows x (features + 1), per labelling, twice over "
                    "in overlapping local parts) the engine reads at most over all members: about eight minutes "
                    "of engine on two AVX2 cores in fp32, about half that with native bf16 "
                    "(docs/decisions/0029-reading-budget.md). "
                    "Past it `fit` reads fewer members (down to one), then fewer rows (a random subset, `read_plan_`); "
                    "the target statistics and the stacked model are still fitted on every row. None reads every row "
                    "with every member."),
}


def documented(summary: str, own: dict[str, tuple[str, str]], attributes: dict[str, tuple[str, str]] | None = None,
               ) -> Callable[[type], type]:
    """A class decorator that writes the class's numpydoc docstring: `summary`, then a Parameters section with
    every parameter of its `__init__` in order (its `own` (type, meaning), else the shared one in PARAMETERS),
    then `attributes`."""
    def section(title: str, entries: list[tuple[str, tuple[str, str]]]) -> str:
        lines = [title, "-" * len(title)]
        for name, (kind, meaning) in entries:
            lines += [f"{name} : {kind}", textwrap.indent(textwrap.fill(meaning, 112), "    ")]
        return "\n".join(lines)

    def decorate(cls: type) -> type:
        names = list(inspect.signature(cls.__init__).parameters)[1:]
        parts = [inspect.cleandoc(summary), section("Parameters", [(n, own.get(n) or PARAMETERS[n]) for n in names])]
        if attributes:
            parts.append(section("Attributes", list(attributes.items())))
        cls.__doc__ = "\n\n".join(parts)
        return cls
    return decorate


class FEATBase(BaseEstimator):
    """Parameters and context handling shared by the three estimators (their docstrings list the parameters)."""

    def __init__(
        self, n_estimators: int | None = None, random_state: int | None = 0, device: str = "auto",
        max_context: int | None = None, max_features: int | None = None,
        checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
        precision: str = "auto",
    ):
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.device = device
        self.max_context = max_context
        self.max_features = max_features
        self.checkpoint = checkpoint
        self.progress = progress
        self.precision = precision

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.sparse = False       # refused with a message: see `as_frame`
        return tags

    def _context_frame(self, X: Any, y: Any = "no_validation", what: str = "context") -> pd.DataFrame:
        """The context X as a DataFrame after scikit-learn's checks: `as_frame` with at least two rows,
        and y not None where the estimator needs a target. Records `n_features_in_` and, for string
        column names, `feature_names_in_`."""
        check_precision(self.precision)
        frame = as_frame(X, what, min_rows=2)
        with sklearn_words("target"):
            validate_data(self, _names_sklearn_takes(frame), y, skip_check_array=True)
        return frame

    def _query_frame(self, X: Any, what: str) -> pd.DataFrame:
        """Rows to predict or impute as a DataFrame: a DataFrame's columns are matched to the context's
        by name, in any order (the message names those at fault), an array's by position; then scikit-learn
        checks the number of features ("X has 1 features, but ... is expecting 4 features as input")."""
        frame = as_frame(X, what)
        if isinstance(X, pd.DataFrame):
            frame = self.preprocessor_.check_columns(frame, what)
        with sklearn_words(what):
            validate_data(self, _names_sklearn_takes(frame), reset=False, skip_check_array=True)
        # an array for a context given as a DataFrame: its columns in the context's order, as scikit-learn reads
        # it (it warns that X has no feature names)
        return frame if isinstance(X, pd.DataFrame) else frame.set_axis(self.preprocessor_.columns_, axis=1)

    def _fit_features(self, X: pd.DataFrame) -> UnclippedRows:
        """Fit the preprocessor on the context X and keep its matrix; returns the rows' detail beside it. The seconds
        a row took go to `progress.PREP_PACE`."""
        self.preprocessor_ = TablePreprocessor().fit(X)
        began = time.monotonic()
        detail = self.preprocessor_.detail(X, "context")
        PREP_PACE.add(time.monotonic() - began, len(X))
        self.context_ = detail.clipped()
        return detail

    def _loaded_model(self) -> FEAT:
        """The pretrained model the `checkpoint` parameter names (loaded once per process)."""
        return resolve_model(self.checkpoint)[0]

    def _model_width(self) -> int:
        """Features one engine run reads: `max_features`, else the widest table the checkpoint was pretrained on."""
        return self.max_features or trained_max_features(resolve_model(self.checkpoint)[1])

    def _engine_settings(self) -> EngineSettings:
        """The device and precision every engine run of this estimator takes (no kept context states)."""
        return EngineSettings(self.device, precision_config(self.precision, self.device))


def _names_sklearn_takes(frame: pd.DataFrame) -> pd.DataFrame:
    """frame for scikit-learn's feature-name checks: column names that mix strings with other types
    (an Excel header with years, say), which scikit-learn refuses, become positions, which it does
    not record; FEAT itself matches columns by name."""
    mixed = len({isinstance(c, str) for c in frame.columns}) > 1
    return frame.set_axis(range(frame.shape[1]), axis=1) if mixed else frame
