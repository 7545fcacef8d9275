"""The FEAT network, one module per part of the paper."""
from .feat import FEAT, FEATOutput

__all__ = ["FEAT", "FEATOutput"]
