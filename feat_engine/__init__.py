"""FEAT: a zero-shot tabular foundation model whose cost grows linearly with the rows."""
from .checkpoint import load_model
from .config import InferenceConfig, ModelConfig, PriorConfig, TrainConfig
from .errors import FEATDataWarning, FEATInputError
from .estimators import FEATClassifier, FEATImputer, FEATRegressor, masked_attributions
from .model import FEAT
from .relations import (
    dependence_matrix, edge_matrix, mutual_information_matrix, pearson_matrix, relation_matrix, spearman_matrix,
)
from .targets import infer_task, is_continuous

__all__ = [
    "FEAT", "ModelConfig", "PriorConfig", "TrainConfig", "InferenceConfig",
    "FEATClassifier", "FEATRegressor", "FEATImputer", "masked_attributions", "relation_matrix", "dependence_matrix", "edge_matrix", "mutual_information_matrix",
    "pearson_matrix", "spearman_matrix",
    "load_model", "FEATInputError", "FEATDataWarning", "infer_task", "is_continuous",
]
