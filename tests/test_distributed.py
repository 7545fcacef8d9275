"""Scoring on Dask (`feat_engine.dask_scoring`, `feat predict --query 'dir/*.parquet'`): the same
predictions as in-process pandas, whatever the partitions, the estimator shipped once per worker,
and one-line errors."""
import os
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")        # a guard only: CI installs the dask extra (scripts/setup.sh)

import dask.dataframe as dd  # noqa: E402

from feat_engine import FEATClassifier, FEATRegressor  # noqa: E402
from feat_engine import dask_scoring  # noqa: E402
from feat_engine.cli import main  # noqa: E402
from feat_engine.dask_scoring import predict_partitions  # noqa: E402
from feat_engine.sources import parquet_parts  # noqa: E402
from feat_engine.predictions import prediction_frame  # noqa: E402


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    df["kind"] = rng.choice(["up", "down", "flat"], n)
    df["y"] = np.where(df["a"] + (df["kind"] == "up") > 0.3, "yes", "no")
    return df


@pytest.fixture(scope="module")
def fitted():
    """A classifier of y and a regressor of c (one member each) on 300 rows, and 120 query rows."""
    train = _table(300, 0)
    clf = FEATClassifier(n_estimators=1).fit(train.drop(columns=["y"]), train["y"])
    reg = FEATRegressor(n_estimators=1).fit(train.drop(columns=["c"]), train["c"])
    return {"y": clf, "c": reg}, _table(120, 1)


@pytest.mark.slow
def test_a_local_cluster_leaves_the_environment_as_it_found_it(monkeypatch):
    """distributed's nannies set OMP_NUM_THREADS=1 and more in this process for their workers, and leave them
    set: every process started afterwards would run its OpenMP and BLAS loops on one thread. `connect("local")`
    puts them back on exit; the workers still get them, and a value the user had set stays."""
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    with dask_scoring.connect("local", n_workers=1) as client:
        assert set(client.run(lambda: os.environ.get("OMP_NUM_THREADS")).values()) == {"1"}
        assert os.environ.get("OMP_NUM_THREADS") == "1"               # what distributed does meanwhile
    assert not {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_"} & set(os.environ)
    assert os.environ["MKL_NUM_THREADS"] == "3"


@pytest.mark.slow
@pytest.mark.parametrize("target", ["y", "c"], ids=["classifier", "regressor"])
def test_dask_result_equals_pandas(cluster, fitted, target):
    """Three partitions on two worker processes: the declared columns and dtypes, the index, the
    labels (exactly) and the probabilities or values (within 1e-5) of the in-process predictions."""
    estimators, query = fitted                            # the query holds the target column: ignored
    est = estimators[target]
    expected = prediction_frame(est, query, target)
    result = predict_partitions(est, dd.from_pandas(query, npartitions=3), target)
    assert result.npartitions == 3
    assert result.dtypes.to_dict() == expected.dtypes.to_dict()      # the meta, with no model run
    got = result.compute()
    assert list(got.columns) == list(expected.columns) and got.dtypes.to_dict() == expected.dtypes.to_dict()
    pd.testing.assert_index_equal(got.index, expected.index)
    assert target == "c" or (got[target] == expected[target]).all()
    pd.testing.assert_frame_equal(got, expected, check_exact=False, atol=1e-5, rtol=0)


def test_without_a_client_the_threaded_scheduler_gives_the_same(fitted, monkeypatch):
    """No distributed Client (dask's local schedulers): the estimator enters the graph as one delayed
    task instead of being scattered, and the result equals the in-process one."""
    import distributed
    estimators, query = fitted

    def no_client():
        raise ValueError("No clients found")
    monkeypatch.setattr(distributed, "default_client", no_client)
    result = predict_partitions(estimators["y"], dd.from_pandas(query, npartitions=3), "y")
    literals = [getattr(node, "value", None) for node in result.__dask_graph__().values()]
    assert sum(isinstance(v, FEATClassifier) for v in literals) == 1       # one task, not one per partition
    pd.testing.assert_frame_equal(result.compute(scheduler="threads"), prediction_frame(estimators["y"], query, "y"),
                                  check_exact=False, atol=1e-5, rtol=0)


def _os_threads_beyond_python() -> int:
    """Threads of this process that Python did not start: OpenMP's teams among them."""
    return len(os.listdir("/proc/self/task")) - threading.active_count()


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_threaded_scheduler_leaves_no_openmp_threads_behind(fitted, monkeypatch):
    """Dask's threaded scheduler keeps its worker threads alive after a computation. OpenMP teams started on them
    would live as long, and once libgomp manages more threads than there are cores every later OpenMP loop in
    the process runs up to 3x slower; the partitions run on threads of their own that end with them."""
    import distributed
    estimators, query = fitted

    def no_client():
        raise ValueError("No clients found")
    monkeypatch.setattr(distributed, "default_client", no_client)
    result = predict_partitions(estimators["y"], dd.from_pandas(query, npartitions=3), "y")
    before = _os_threads_beyond_python()
    result.compute(scheduler="threads", num_workers=2)
    deadline = time.monotonic() + 5                   # an ended thread's OpenMP threads leave a moment later
    while _os_threads_beyond_python() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _os_threads_beyond_python() <= before


@pytest.mark.slow
def test_partition_boundaries_do_not_change_results(cluster, fitted):
    """One partition or four, the classifier gives every row the same prediction."""
    estimators, query = fitted
    one, four = (predict_partitions(estimators["y"], dd.from_pandas(query, npartitions=k), "y").compute()
                 for k in (1, 4))
    pd.testing.assert_frame_equal(one, four, check_exact=False, atol=1e-5, rtol=0)
    assert (one["y"] == four["y"]).all()


class _CountedClassifier(FEATClassifier):
    """A classifier that notes each unpickling of itself, with the process id, in the file named by
    its `log_path_` attribute (an instance attribute, so that it travels with the pickle)."""

    def __setstate__(self, state):
        super().__setstate__(state)
        with open(self.log_path_, "a") as f:
            f.write(f"{os.getpid()}\n")


@pytest.mark.slow
def test_estimator_is_shipped_once_per_worker_not_per_partition(cluster, fitted, tmp_path):
    _, query = fitted
    train = _table(300, 0)
    clf = _CountedClassifier(n_estimators=1).fit(train.drop(columns=["y"]), train["y"])
    clf.log_path_ = str(tmp_path / "unpickled.txt")
    predict_partitions(clf, dd.from_pandas(query, npartitions=6), "y").compute()
    pids = [p for p in open(clf.log_path_).read().split() if p != str(os.getpid())]   # workers only
    workers = {w["id"] for w in cluster.scheduler_info()["workers"].values()}
    assert 1 <= len(pids) <= len(workers) == 2 and len(set(pids)) == len(pids)


@pytest.mark.slow
def test_cli_scores_parquet_parts_like_one_file(cluster, tmp_path, capsys):
    """`feat predict --query 'parts/*.parquet' -o out/ --scheduler ADDRESS` writes one Parquet file per
    input file (natural order: part.2 before part.10) that together equal the single-file output."""
    train, query = _table(300, 0), _table(90, 1).drop(columns=["y"])
    train.to_csv(tmp_path / "train.csv", index=False)
    query.to_parquet(tmp_path / "query.parquet", index=False)
    (tmp_path / "parts").mkdir()
    for name, rows in zip(["part.1", "part.2", "part.10"], np.array_split(np.arange(len(query)), 3)):
        query.iloc[rows].to_parquet(tmp_path / "parts" / f"{name}.parquet", index=False)
    args = ["predict", "--context", str(tmp_path / "train.csv"), "--target", "y", "--n-estimators", "1"]
    assert main([*args, "--query", str(tmp_path / "query.parquet"), "-o", str(tmp_path / "one.parquet")]) == 0
    capsys.readouterr()
    assert main([*args, "--query", str(tmp_path / "parts" / "*.parquet"), "-o", str(tmp_path / "out"),
                 "--scheduler", cluster.scheduler.address]) == 0
    err = capsys.readouterr().err
    assert "scoring 3 partition(s)" in err and "[100%] 3 of 3 partitions written" in err and "wrote " in err
    files = sorted(os.listdir(tmp_path / "out"))
    assert files == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    got = pd.concat([pd.read_parquet(tmp_path / "out" / f) for f in files], ignore_index=True)
    expected = pd.read_parquet(tmp_path / "one.parquet")
    assert list(got.columns) == ["y", "p(no)", "p(yes)"] and (got["y"] == expected["y"]).all()
    pd.testing.assert_frame_equal(got, expected, check_exact=False, atol=1e-5, rtol=0)


def test_parquet_parts_of_a_directory_or_glob(tmp_path):
    """A directory's files but hidden and _-prefixed ones (Spark's _SUCCESS), or a glob's, in natural order."""
    for name in ["part.10.parquet", "part.2.parquet", "part.1.pq", "_SUCCESS", ".part.1.crc"]:
        (tmp_path / name).write_bytes(b"")
    expected = [str(tmp_path / n) for n in ["part.1.pq", "part.2.parquet", "part.10.parquet"]]
    assert parquet_parts(str(tmp_path)) == expected
    assert parquet_parts(str(tmp_path / "part.*")) == expected


@pytest.fixture
def parts(tmp_path):
    """A context CSV, a directory of two query parts, and a one-file query."""
    train, query = _table(60, 0), _table(20, 1).drop(columns=["y"])
    train.to_csv(tmp_path / "train.csv", index=False)
    (tmp_path / "q").mkdir()
    query.iloc[:10].to_parquet(tmp_path / "q" / "a.parquet", index=False)
    query.iloc[10:].to_parquet(tmp_path / "q" / "b.parquet", index=False)
    return tmp_path


@pytest.mark.parametrize("query, extra, message", [
    ("{d}/nothing/*.parquet", [], "{d}/nothing/*.parquet: no files match."),
    ("{d}/q", [], "{d}/q/notes.txt: not a Parquet file"),
    ("{d}/q", [], "{d}/q/b.parquet: columns differ from those of {d}/q/a.parquet: missing ['kind'], unexpected ['z']"),
    ("{d}/wide/*.parquet", [], "query columns differ from the context's: missing [], unexpected ['z']"),
    ("{d}/q", ["-o", "{d}/full"], "{d}/full: the output directory is not empty."),
    ("{d}/q/a.parquet", ["--scheduler", "local"], "--scheduler local: Dask scores a directory or glob"),
    ("{d}/q", ["--scheduler", "tcp://127.0.0.1:9"], "Dask scheduler tcp://127.0.0.1:9: cannot connect"),
], ids=["no-match", "not-parquet", "files-differ", "context-differs", "output-not-empty", "scheduler-one-file",
        "unreachable-scheduler"])
def test_part_errors_exit_2_with_one_line(parts, capsys, monkeypatch, query, extra, message):
    d = parts
    monkeypatch.setattr(dask_scoring, "CONNECT_TIMEOUT", "1s")
    if "notes.txt" in message:
        (d / "q" / "notes.txt").write_text("x")
    if "columns differ from those" in message:
        pd.read_parquet(d / "q" / "b.parquet").rename(columns={"kind": "z"}).to_parquet(d / "q" / "b.parquet")
    if "/wide/" in query:
        (d / "wide").mkdir()
        pd.read_parquet(d / "q" / "a.parquet").assign(z=1.0).to_parquet(d / "wide" / "a.parquet")
    (d / "full").mkdir()
    (d / "full" / "old.parquet").write_bytes(b"")
    args = ["predict", "--context", f"{d}/train.csv", "--target", "y", "--query", query, "-o", f"{d}/out",
            "--n-estimators", "1", *extra]
    assert main([a.format(d=d) for a in args]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("feat: error: ")]
    assert len(lines) == 1 and message.format(d=d) in lines[0] and "Traceback" not in err


def test_missing_dask_names_the_extra(parts, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)           # as if the extra were not installed
    d = parts
    assert main(["predict", "--context", f"{d}/train.csv", "--target", "y", "--query", f"{d}/q", "-o", f"{d}/out"]) == 2
    assert 'pip install "feat-engine[dask]"' in capsys.readouterr().err
