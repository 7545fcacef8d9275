"""FEAT: a zero-shot tabular foundation model whose cost grows linearly with the rows."""
from .config import InferenceConfig, ModelConfig, PriorConfig, TrainConfig
from .model import FEAT

__all__ = ["FEAT", "ModelConfig", "PriorConfig", "TrainConfig", "InferenceConfig"]
