"""The exceptions and warnings FEAT raises, and scikit-learn's and pandas' input errors in FEAT's type."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Hashable, Iterator


class FEATInputError(ValueError):
    """Input FEAT cannot use; the message names the column, file or value at fault."""


class FEATDataWarning(UserWarning):
    """FEAT changed what it feeds the model (dropped a column or rows); the message names them."""


NAMED = 10   # columns a note names before it counts the rest


def named(columns: list, listed: bool = True) -> str:
    """Columns as a note names them: the list (or, not `listed`, the names joined by commas), up to its first NAMED
    and how many more (grants_other's 59 constant columns filled a warning box)."""
    shown = list(columns)[:NAMED]
    more = f" and {len(columns) - NAMED:,} more" if len(columns) > NAMED else ""
    return (str(shown) if listed else ", ".join(map(str, shown))) + more


@contextmanager
def sklearn_words(what: str) -> Iterator[None]:
    """Turn the ValueErrors of scikit-learn's checks into `FEATInputError`, their words kept (tools match
    on them), prefixed with `what` (context, query, target ...)."""
    try:
        yield
    except ValueError as e:
        raise FEATInputError(f"{what}: {e}") from None


@contextmanager
def readable_cells(name: Hashable, what: str) -> Iterator[None]:
    """Turn the TypeError pandas raises on cells it cannot compare or hash (lists, dicts, sets) into a
    `FEATInputError` naming the column."""
    try:
        yield
    except TypeError as e:
        raise FEATInputError(f"{what}: column {name!r} holds cells that are neither numbers, dates nor text ({e}); "
                             "turn them into text or into columns of their own") from None


class TableError(FEATInputError):
    """A table that cannot be used. `problem` says what is wrong (naming the file, column or
    value), `fix` what to do; the message is both."""

    def __init__(self, problem: str, fix: str = ""):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} {fix}".strip())


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file and why."""
