"""Feature-relation matrices over one encoded table: FEAT's (`matrices.py`: attention, dependence on a hidden
column, the edge head's direct links) and the classical references beside them (`correlations.py`: Pearson,
Spearman, mutual information). Every matrix shares one column order: the encoded features (datetime columns
expand into parts), then the target (docs/decisions/0032-relation-matrices.md and
docs/decisions/0033-edge-head.md).
"""
from .correlations import mutual_information_matrix, pearson_matrix, spearman_matrix
from .matrices import dependence_matrix, edge_matrix, relation_matrix

__all__ = ["relation_matrix", "dependence_matrix", "edge_matrix", "mutual_information_matrix", "pearson_matrix",
           "spearman_matrix"]
