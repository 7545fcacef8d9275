"""How much of a long context the engine reads: the one rule, from a budget of context cells, that sets how many
members read and how many context rows each (the estimators' `read_budget`; the app shows it). The engine's time
grows with the cells it reads, rows x (features read + 1) for each labelling of a member's rows (once per class
where one class is read against the rest), twice over where local parts overlap. Within the budget every member
reads every row; past it the members go first, down to one, and then that one reads a random share of the rows.
The classical models beside the engine are fitted on every labelled row whatever the engine reads
(docs/decisions/0029-reading-budget.md)."""
from __future__ import annotations

from dataclasses import dataclass

from .local_parts import OVERLAP, rows_per_run

READ_CELLS = 8_000_000   # context cells the estimators' engine runs read at most by default
                         # (docs/decisions/0029-reading-budget.md: about 8 minutes of engine on two AVX2 cores in fp32)


@dataclass(frozen=True)
class ReadPlan:
    """What the engine reads of a context: `members` members of `rows` context rows each, `width` features each."""

    members: int
    rows: int
    cells: int              # context cells those runs read, by `context_cells`
    capped: bool            # the budget lowered the members or the rows
    width: int              # features each run reads

    def describe(self, n_rows: int) -> str:
        """One phrase for the estimator's reading sentence."""
        if not self.capped:
            return f"within the reading budget ({self.cells:,} context cells)"
        share = f"{self.rows:,} of the {n_rows:,} context rows" if self.rows < n_rows else f"all {n_rows:,} rows"
        return f"the reading budget read {self.members} member(s) of {share} ({self.cells:,} context cells)"


def context_cells(rows: int, width: int, runs: int, part_rows: int | None) -> int:
    """Context cells one member's engine runs read: `rows` context rows of `width` features and the label,
    `runs` labellings, and OVERLAP times over where the rows are split into local parts of `part_rows`."""
    overlap = OVERLAP if rows_per_run(rows, part_rows) < rows else 1.0
    return int(rows * (width + 1) * runs * overlap)


def plan_reading(n_rows: int, width: int, runs: int, n_estimators: int, max_context: int | None,
                 part_rows: int | None, budget: int | None) -> ReadPlan:
    """The members and rows per member for a context of n_rows (capped at `max_context`), members reading `width`
    features under `runs` labellings, in local parts of `part_rows` (None: whole): n_estimators members of every
    row while they fit in `budget` cells, else fewer members, else one member of as many rows as fit (at least
    twice a part, so that it still reads local parts). None: no budget."""
    rows = n_rows if max_context is None else min(n_rows, max_context)
    one = context_cells(rows, width, runs, part_rows)
    if budget is None or n_estimators * one <= budget:
        return ReadPlan(n_estimators, rows, n_estimators * one, False, width)
    if one <= budget:
        members = max(1, budget // one)
        return ReadPlan(members, rows, members * one, True, width)
    per_row = one / rows
    fit = max(int(budget / per_row), 2 * (part_rows or 0), 1)
    fit = min(fit, rows)
    return ReadPlan(1, fit, context_cells(fit, width, runs, part_rows), True, width)
