"""Test-session order: the tests that start a Dask cluster run last.

After a `distributed.LocalCluster` has run a computation in the test process, scikit-learn's OpenMP
fits in that process run two to three times slower for the rest of the session (six
`HistGradientBoostingRegressor` fits on 2,400 rows: 1.6 s before, 5.0 s after, with the process's CPU
time per wall second falling from 1.9 to 1.1), which slowed every later test that fits a view.
"""
from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the tests that use the `cluster` fixture to the end, keeping the order within each group."""
    items.sort(key=lambda item: "cluster" in getattr(item, "fixturenames", ()))
