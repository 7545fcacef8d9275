"""Scoring on Dask: a fitted FEATClassifier or FEATRegressor predicts a Dask DataFrame partition by
partition, for query tables larger than one machine's memory. Needs the optional extra:
pip install "feat-engine[dask]".

    with connect("tcp://host:8786") as client:          # or connect("local"), or any distributed.Client
        result = predict_partitions(clf, dd.read_parquet("query/"), "y")
        result.to_parquet("out/")                         # or write_parquet_parts(result, "out/")

Each partition gets exactly the table `prediction_frame` gives in-process, scored against the estimator's one
shared context, so partition boundaries do not change any result. Paths (query files, output directory) must
be readable and writable by the workers (docs/decisions/0030-dask-scoring.md).
"""
from __future__ import annotations

import copy
import importlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Iterator

from sklearn.utils.validation import check_is_fitted

from .checkpoint import resolve_model
from .io import output_directory, read_table, write_table
from .predictions import Fitted, prediction_frame, prediction_meta
from .progress import Progress
from .sources import parts_schema

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client

CONNECT_TIMEOUT = "10s"      # how long `connect` waits for a scheduler that does not answer


def _require(module: str) -> ModuleType:
    """Import an optional Dask module, or say which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f'scoring on Dask needs dask and distributed ({e}): pip install "feat-engine[dask]"') from None


@contextmanager
def connect(address: str, n_workers: int | None = None) -> Iterator[Client]:
    """A distributed Client for the scheduler at `address` (tcp://host:8786), or for a LocalCluster
    on this machine when `address` is "local": `n_workers` single-threaded worker processes, by default
    one per core. Closed on exit. A scheduler that does not answer within CONNECT_TIMEOUT raises
    ConnectionError naming it."""
    distributed = _require("distributed")
    if address == "local":
        with _worker_environment_taken_back(), \
                distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            yield client
        return
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, ValueError) as e:        # timeouts and refusals; ValueError: a malformed address
        raise ConnectionError(f"Dask scheduler {address}: cannot connect ({e}). Check the address "
                              "(tcp://host:8786) and that the scheduler runs, or use 'local'.") from None
    with client:
        yield client


@contextmanager
def _worker_environment_taken_back() -> Iterator[None]:
    """Put back, on exit, the environment variables that distributed's nannies set in this process for the
    workers they spawn (`distributed.nanny.pre-spawn-environ`: OMP_NUM_THREADS=1, MKL_NUM_THREADS=1,
    OPENBLAS_NUM_THREADS=1, MALLOC_TRIM_THRESHOLD_) and leave set: every process started afterwards would run
    its OpenMP and BLAS loops on one thread."""
    keys = list(_require("dask").config.get("distributed.nanny.pre-spawn-environ", {}))
    saved = {key: os.environ.get(key) for key in keys}
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def read_parquet_parts(files: list[str]) -> dd.DataFrame:
    """A Dask DataFrame with one partition per Parquet file, each read on a worker by `read_table`.
    The columns come from the files' footers: TableError names a file whose columns differ from the
    first file's."""
    dd = _require("dask.dataframe")
    return dd.from_map(read_table, files, meta=parts_schema(files), label="read-query")


def predict_partitions(estimator: Fitted, query: dd.DataFrame, target: str) -> dd.DataFrame:
    """The fitted estimator's `prediction_frame` of every partition of query, lazily. The query's
    columns (bar `target`, which is ignored) are checked against the context's at once, without
    reading any partition.

    The result's columns and dtypes are declared as `meta`, so Dask never runs the model to infer them.
    A query row's prediction never depends on the other query rows, so the partitions are independent.
    The estimator, with its model rather than a checkpoint path, is scattered to every worker of the
    current distributed Client (without one, it enters the graph once as a single task), so each worker
    receives it once, not once per partition."""
    dd = _require("dask.dataframe")
    check_is_fitted(estimator, "members_")
    estimator.preprocessor_.check_names([c for c in query.columns if c != target], "query")
    # the model itself rather than a checkpoint path the workers may lack, on the CPU so that any
    # worker can unpickle it; no progress callback, which would print on the workers
    shipped = copy.copy(estimator)
    shipped.checkpoint = copy.deepcopy(resolve_model(estimator.checkpoint)[0]).cpu()
    shipped.progress = None
    meta = prediction_meta(estimator, target, query._meta.index)
    return dd.map_partitions(_score_partition, _once_per_worker(shipped), query, target, meta=meta)


def _score_partition(estimator: Fitted, part: pd.DataFrame, target: str) -> pd.DataFrame:
    """`prediction_frame` of one partition; on a thread of its own, which ends with it, when Dask runs the
    partition on one of its worker threads. An OpenMP runtime (libgomp) keeps a team of threads for every
    thread that ran a parallel region, for as long as that thread lives, and once it manages more threads than
    there are cores it stops spinning at its barriers: every later OpenMP loop in the process, scikit-learn's
    and torch's, then runs several times slower. Dask's worker threads outlive the computation; this thread does not
    (docs/decisions/0030-dask-scoring.md)."""
    if threading.current_thread() is threading.main_thread():
        return prediction_frame(estimator, part, target)
    with ThreadPoolExecutor(1, thread_name_prefix="feat-partition") as pool:
        return pool.submit(prediction_frame, estimator, part, target).result()


def _once_per_worker(obj: object) -> object:
    """obj as a graph input that each worker unpickles once: scattered to every worker of the current
    distributed Client, as a future. A delayed literal would travel from the worker that ran it to the
    others on demand, and dask may fetch it again into a worker that had it (one worker then unpickles it
    twice). Without a Client (dask's local schedulers), a single delayed task."""
    dask = _require("dask")
    try:
        client = importlib.import_module("distributed").default_client()
    except (ImportError, ValueError):                    # ValueError: no Client in this process
        return dask.delayed(obj, traverse=False)
    return client.scatter(obj, broadcast=True, hash=False)


def write_parquet_parts(result: dd.DataFrame, directory: str | os.PathLike, progress: Progress | None = None) -> int:
    """Write each partition of result to directory/part-00000.parquet, part-00001.parquet, ... with
    `write_table`, on the workers of the current distributed Client; `progress(done, total, message)`
    as partitions finish. The directory is created, and refused if it holds anything. Returns the
    number of partitions."""
    dask = _require("dask")
    distributed = _require("distributed")
    out = output_directory(directory)
    writes = [dask.delayed(write_table)(part, out / f"part-{i:05d}.parquet") for i, part in enumerate(result.to_delayed())]
    futures = distributed.get_client().compute(writes)
    for done, _ in enumerate(distributed.as_completed(futures, with_results=True), 1):   # raises a failed part's error
        if progress is not None:
            progress(done, len(futures), f"{done} of {len(futures)} partitions written")
    return len(futures)
