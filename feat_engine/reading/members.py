"""Ensemble members: which context rows each reads in which order, which features in which order (ranked by relevance
on a table wider than a member reads), and its S-DFE seed
(docs/decisions/0018-members.md and docs/decisions/0014-relevance-ranked-features.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import FEATInputError
from .local_parts import LocalContexts

if TYPE_CHECKING:
    from torch import Tensor

    from ..model import FEAT


@dataclass
class Member:
    """One ensemble member: which context rows in which order, which features in which order."""

    seed: int                  # S-DFE draw and any member-level randomness
    rows: np.ndarray           # context row indices, in scan order (a permutation, or a subset)
    features: np.ndarray       # feature indices, in token order (a shuffle, or a subset)
    index: int = 0             # position in the ensemble (the classifier's label rotation)
    local: LocalContexts | None = None   # the member's local contexts (positions in `rows`), if any

    def column_ids(self, model: FEAT, width: int | None = None) -> Tensor:
        """The member's S-DFE column identities for `width` columns (default: its features)."""
        return model.column_ids(1, width or len(self.features), seed=self.seed)


def content_order(X: pd.DataFrame, y: np.ndarray) -> np.ndarray:
    """A permutation of the context rows fixed by their content (each row's values and label, hashed): a table's
    rows are a set, so the members' row orders, parts and folds are drawn from this order rather than the one
    the rows came in, and a shuffled context gives the same fit. Equal rows tie, and their order cannot matter."""
    try:
        key = pd.util.hash_pandas_object(X, index=False).to_numpy()
    except TypeError:                        # values pandas cannot hash as they are (lists, say): their text
        key = pd.util.hash_pandas_object(X.astype(str), index=False).to_numpy()
    label = pd.util.hash_pandas_object(pd.Series(np.asarray(y)), index=False).to_numpy()
    return np.argsort(key ^ (label * np.uint64(0x9E3779B97F4A7C15)), kind="stable")


def positions(order: np.ndarray) -> np.ndarray:
    """Each context row's position in a member's fit `order` (a permutation of the rows): its inverse, in O(N)."""
    at = np.empty(len(order), np.int64)
    at[order] = np.arange(len(order))
    return at


def plan_members(
    n_rows: int, n_features: int, n_estimators: int, max_features: int,
    max_context: int | None, random_state: int | None, relevance: np.ndarray | None = None,
) -> list[Member]:
    """Draw the ensemble. With more features than `max_features` and a `relevance` score per
    feature, every member takes the TOP_SHARE most relevant features and fills its width with
    others drawn with probability proportional to their relevance (`ranked_features`).
    Without scores, members are grouped in rounds of ceil(D / max_features): each round splits
    a fresh feature permutation into parts, and each member takes one part topped up with
    random other features, so there are max(n_estimators, ceil(D / max_features)) members and
    every feature is seen at least once."""
    if n_estimators < 1:
        raise FEATInputError(f"n_estimators must be >= 1, got {n_estimators}")
    if max_context is not None and max_context < 1:
        raise FEATInputError(f"max_context must be >= 1 or None, got {max_context}")
    rng = np.random.default_rng(random_state)
    width = min(n_features, max_features)
    ranked = relevance is not None and n_features > width
    per_round = 1 if ranked else math.ceil(n_features / width)
    n_members = max(n_estimators, per_round)
    n_ctx = n_rows if max_context is None else min(n_rows, max_context)
    members, parts = [], []
    for i in range(n_members):
        if ranked:
            feats = rng.permutation(ranked_features(relevance, width, rng))
        else:
            if not parts:
                parts = list(np.array_split(rng.permutation(n_features), per_round))
            part = parts.pop(0)
            rest = np.setdiff1d(np.arange(n_features), part)
            feats = rng.permutation(np.concatenate([part, rng.choice(rest, width - len(part), replace=False)]))
        rows = rng.permutation(n_rows)[:n_ctx]
        members.append(Member(int(rng.integers(2**31 - 1)), rows, feats, i))
    return members


TOP_SHARE = 0.5     # share of a member's width given to the most relevant features


def ranked_features(relevance: np.ndarray, width: int, rng: np.random.Generator) -> np.ndarray:
    """`width` feature indices: the round(TOP_SHARE * width) most relevant, then others drawn
    without replacement with probability proportional to relevance (plus a floor of 1% of the
    mean, so that a feature scored 0 can still be drawn)."""
    order = np.argsort(-np.asarray(relevance), kind="stable")
    n_top = int(round(TOP_SHARE * width))
    top, rest = order[:n_top], order[n_top:]
    p = np.maximum(np.asarray(relevance, np.float64)[rest], 0) + 0.01 * max(float(np.mean(relevance)), 1e-12)
    return np.concatenate([top, rng.choice(rest, width - n_top, replace=False, p=p / p.sum())])


MEMBER_TOL = 0.005  # a member that moves the held-out predictions less than this is the last one read
RULE_MEMBERS = 4    # members planned where the member rule chooses among them on held-out context rows
SHORT_MEMBERS = 2   # members read where it cannot (no rows held out): one of each reading of the numbers
SURE_ONES = 2       # members in a row whose held rows chose weight 1 (or one that chose it clearly: `Blend.clear`),
                    # after which no engine reads them


def engine_runs_expected(runs: list[int], read: int, ones: int) -> int:
    """Of the members' engine runs (`runs`, each member's in order), those that will run as things stand once the
    first `read` members are read, the last `ones` of them in a row having chosen weight 1: theirs, and the next
    members' until SURE_ONES in a row have (the rest are read for their stacked models alone); all where the last
    chose a lower weight."""
    return sum(runs[:len(runs) if ones == 0 else read + max(0, SURE_ONES - ones)])


def planned_members(n_estimators: int | None, rule_runs: bool, labellings: int) -> int:
    """The members `fit` plans: `n_estimators` where given. By default RULE_MEMBERS where the member rule will read
    held-out context rows and keep the members up to the first that no longer moves them (`MemberChoice`); where it
    cannot, SHORT_MEMBERS for a context read under one labelling, and one member where K > 2 classes are each read
    against the rest, whose K runs already read the context K times (docs/decisions/0018-members.md)."""
    if n_estimators is not None:
        return n_estimators
    if rule_runs:
        return RULE_MEMBERS
    return SHORT_MEMBERS if labellings == 1 else 1


def prediction_change(before: np.ndarray, after: np.ndarray) -> float:
    """The mean change per row between two predictions of the same rows: half the summed absolute change of the
    class probabilities (k columns; for two classes, that of p(class 1)), or the absolute change of a standardised
    target (one column)."""
    diff = np.abs(np.asarray(after, np.float64) - np.asarray(before, np.float64)).reshape(len(before), -1)
    return float(diff.sum(axis=1).mean() * (0.5 if diff.shape[1] > 1 else 1.0))


@dataclass
class MemberChoice:
    """How many members `fit` kept: it reads held-out context rows member by member and stops when a member
    changes the ensemble's predictions of them by less than MEMBER_TOL (`prediction_change`)."""

    kept: int
    planned: int
    changes: list[float]    # the change each member from the 2nd made, in order
    rows: int               # held-out context rows read
    engine: int | None = None   # members whose engine read the held rows, where fewer than `kept`: their blend
                                # gave its output no weight (`SURE_ONES`), so the later ones read their stacked models

    def describe(self) -> str:
        """One phrase for the estimator's reading sentence."""
        if not self.changes:
            return f"{self.kept} of {self.planned} member(s) read, no second one planned to compare with"
        moves = ", ".join(f"{c:.4f}" for c in self.changes)
        said = (f"{self.kept} of {self.planned} members kept: each member from the 2nd changed the predictions of "
                f"{self.rows:,} held-out context rows by {moves} on average (a member under {MEMBER_TOL:g} is the "
                f"last)")
        if self.engine is not None and self.engine < self.kept:
            said += (f"; the engine read the held rows for the first {self.engine} member(s), which gave its output no "
                     "weight in the blend, so the later ones were read for their classical models alone")
        return said
