"""Fixtures shared by more than one test file."""
import pytest


@pytest.fixture(scope="module")
def cluster():
    """A Client of a Dask LocalCluster of two single-threaded worker processes on this machine, for the module's
    tests (`dask_scoring.connect("local")`); a test that asks for it is skipped where distributed is not installed."""
    pytest.importorskip("distributed")
    from feat_engine import dask_scoring
    with dask_scoring.connect("local", n_workers=2) as client:
        yield client
