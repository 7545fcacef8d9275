"""scikit-learn estimators over the pretrained FEAT model: `fit` stores the context, no gradient steps.

    FEATClassifier().fit(X, y).predict_proba(X_test)
    FEATRegressor().fit(X, y).predict(X_test)
    FEATImputer().fit_transform(X)          # same shape, dtypes and categories; only NaN cells change
    masked_attributions(fitted, X_test)     # each cell priced by hiding it: why each prediction

`base.py` holds what all three share, `in_context.py` the classifier's and regressor's `fit` (the stages of
`feat_engine.reading`, in order), `runner.py` the one call into the engine. Query rows never see each other,
so a row's prediction does not depend on the other query rows. Bad input raises `FEATInputError` (a
ValueError) in scikit-learn's words where its checks apply (docs/decisions/0036-scikit-learn-contract.md).
"""
from ..inference import PRECISIONS
from .attributions import masked_attributions
from .classifier import FEATClassifier
from .imputer import COLUMN_MEMBERS, FEATImputer
from .in_context import LOCAL_CONTEXT
from .regressor import FEATRegressor

__all__ = ["FEATClassifier", "FEATRegressor", "FEATImputer", "masked_attributions", "LOCAL_CONTEXT", "COLUMN_MEMBERS",
           "PRECISIONS"]
