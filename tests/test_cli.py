"""The `feat` CLI: the three commands over CSV/TSV/Parquet/Excel, and clean errors (exit 2)."""
import argparse
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from app import io as aio
from feat_engine import cli
from feat_engine.cli import local_context_arg, main
from feat_engine.io import read_table


@pytest.fixture
def tables(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    df["kind"] = np.where(df["a"] > 0, "up", "down")
    df["y"] = np.where(df["b"] > 0, "yes", "no")
    df.iloc[:40].to_csv(tmp_path / "train.csv", index=False)
    df.iloc[40:].to_csv(tmp_path / "test.tsv", sep="\t", index=False)
    holes = df.drop(columns=["y"]).copy()
    holes.loc[[1, 5, 9], "a"] = np.nan
    holes.loc[[2, 3], "kind"] = np.nan
    holes.to_parquet(tmp_path / "holes.parquet", index=False)
    df.to_excel(tmp_path / "table.xlsx", index=False)
    return tmp_path, holes


def test_predict_classification(tables, capsys):
    """Predictions for every query row; a last row of totals in the query file is left out, and stderr says so."""
    d, _ = tables
    query = pd.read_csv(d / "test.tsv", sep="\t")
    pd.concat([query, pd.DataFrame([{"a": query["a"].sum(), "kind": "Total"}])]).to_csv(d / "test.tsv", sep="\t",
                                                                                      index=False)
    rc = main(["predict", "--context", str(d / "train.csv"), "--target", "y", "--query", str(d / "test.tsv"),
               "-o", str(d / "pred.csv"), "--n-estimators", "1"])
    assert rc == 0
    out = pd.read_csv(d / "pred.csv")
    assert list(out.columns) == ["y", "p(no)", "p(yes)"] and len(out) == 20
    assert set(out["y"]) <= {"yes", "no"} and np.allclose(out[["p(no)", "p(yes)"]].sum(axis=1), 1)
    err = capsys.readouterr().err
    assert "[" in err                                                   # progress on stderr
    assert f"feat: {d / 'test.tsv'}: left out the last row ('Total'): it totals the rows above" in err


def test_predict_regression(tables):
    d, _ = tables
    rc = main(["predict", "--context", str(d / "train.csv"), "--target", "a", "--query", str(d / "test.tsv"),
               "-o", str(d / "pred.parquet"), "--n-estimators", "1", "--precision", "fp32"])
    assert rc == 0
    out = pd.read_parquet(d / "pred.parquet")
    assert list(out.columns) == ["a"] and out["a"].dtype == float and len(out) == 20
    rc = main(["predict", "--context", str(d / "train.csv"), "--target", "a", "--query", str(d / "test.tsv"),
               "-o", str(d / "half.parquet"), "--n-estimators", "1", "--precision", "bf16"])
    half = pd.read_parquet(d / "half.parquet")["a"]
    assert rc == 0 and not np.array_equal(half, out["a"])
    np.testing.assert_allclose(half, out["a"], atol=0.05 * out["a"].std())


def test_predict_says_how_it_read_the_table_and_takes_local_contexts(tmp_path, capsys):
    """The reading_ sentence goes to stderr; --local-context 0 reads the whole context, a small
    --local-context splits it into parts, and both give probabilities for every query row."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "b"])
    df["y"] = np.where(df["a"] + df["b"] > 0, "yes", "no")
    df.to_csv(tmp_path / "t.csv", index=False)
    args = ["predict", "--context", str(tmp_path / "t.csv"), "--target", "y", "--query", str(tmp_path / "t.csv"),
            "-o", str(tmp_path / "p.csv"), "--n-estimators", "1"]
    assert main([*args, "--local-context", "0"]) == 0
    assert "the whole context of 300 rows" in capsys.readouterr().err
    assert main([*args, "--local-context", "64"]) == 0
    assert "local parts of" in capsys.readouterr().err
    assert len(pd.read_csv(tmp_path / "p.csv")) == 300


def test_row_ids_are_left_out_as_the_app_leaves_them_out(tmp_path, capsys):
    """A column that numbers the rows (R's rownames) is not read, as in the app, and stderr says so: predict leaves it
    out of the query rows too, impute writes it back as it was; --keep-ids reads it."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"rownames": np.arange(1, 81), "a": rng.normal(size=80), "b": rng.normal(size=80)})
    df["y"] = np.where(df["a"] > 0, "yes", "no")
    df.iloc[:60].to_csv(tmp_path / "train.csv", index=False)
    df.iloc[60:].to_csv(tmp_path / "test.csv", index=False)
    run = ["predict", "--context", str(tmp_path / "train.csv"), "--target", "y", "--query", str(tmp_path / "test.csv"),
           "-o", str(tmp_path / "pred.csv"), "--n-estimators", "1"]
    assert main(run) == 0
    err = capsys.readouterr().err
    assert "left out column 'rownames', a row id (1, 2, 3, ...); --keep-ids reads it" in err
    assert "all 2 features" in err and len(pd.read_csv(tmp_path / "pred.csv")) == 20
    assert main([*run, "--keep-ids"]) == 0
    err = capsys.readouterr().err
    assert "left out" not in err and "all 3 features" in err
    holes = df.drop(columns="y")
    holes.loc[[3, 7], "a"] = np.nan
    holes.to_csv(tmp_path / "holes.csv", index=False)
    assert main(["impute", str(tmp_path / "holes.csv"), "-o", str(tmp_path / "filled.csv"), "--n-estimators", "1"]) == 0
    filled = pd.read_csv(tmp_path / "filled.csv")
    assert list(filled.columns) == ["rownames", "a", "b"] and filled["a"].notna().all()
    assert filled["rownames"].tolist() == list(range(1, 81)) and "left out column 'rownames'" in capsys.readouterr().err


def test_impute_parquet(tables, capsys, monkeypatch):
    d, holes = tables
    assert main(["impute", str(d / "holes.parquet"), "-o", str(d / "filled.parquet"), "--n-estimators", "1"]) == 0
    # progress as the share done, which never moves back; its two columns' runs once read [1/3], [10/15], [3/3];
    # into a log (stderr is no terminal here) a line a tenth, without carriage returns or escape codes
    err = capsys.readouterr().err
    shares = [int(v) for v in re.findall(r"^\[ *(\d+)%\] column", err, re.M)]
    assert shares and shares == sorted(shares) and shares[-1] == 100 and not re.search(r"\[\d+/\d+\]", err), err
    # a tenth told once, but for a stream's end (at 100%), always told: which reports reach the log before the next
    # one replaces them depends on the worker threads' timing (docs/decisions/0037-file-reading-and-cli.md)
    assert all(a // 10 != b // 10 or b == 100 for a, b in zip(shares, shares[1:]))
    assert "\r" not in err and "\033" not in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)         # on a terminal: one line, rewritten in place
    cli._progress(1, 4, "column 'a'")
    cli._progress(2, 4, "column 'a'")
    assert capsys.readouterr().err == "\r[ 25%] column 'a'\033[K\r[ 50%] column 'a'\033[K"
    out = pd.read_parquet(d / "filled.parquet")
    assert not out.isna().any().any()
    obs = holes["a"].notna()
    np.testing.assert_array_equal(out.loc[obs, "a"], holes.loc[obs, "a"])
    assert set(out["kind"]) <= {"up", "down"}


@pytest.mark.parametrize("method", ["attention", "dependence", "edges", "mi", "spearman"])
def test_relations_excel(tables, method):
    d, _ = tables
    def matrix(precision: str) -> pd.DataFrame:
        assert main(["relations", str(d / "table.xlsx"), "-o", str(d / "rel.csv"), "--target", "y",
                     "--method", method, "--n-estimators", "1", "--precision", precision]) == 0
        return read_table(d / "rel.csv").set_index("Unnamed: 0")

    m = matrix("fp32")
    assert list(m.columns) == ["a", "b", "c", "kind", "y"] and list(m.index) == list(m.columns)
    if method in ("dependence", "edges", "mi"):   # kind = [a > 0]: FEAT predicts kind worse without a; MI sees it
        assert np.allclose(np.diag(m), 0) and (m.to_numpy() >= 0).all()
        assert m.loc["kind", "a"] > max(m.loc["kind", ["b", "c"]].max(), 0.1 if method != "edges" else 0)
    if method == "dependence":                    # --precision reaches the engine: bf16 moves the numbers a little
        b = matrix("bf16").to_numpy()
        assert not np.array_equal(b, m.to_numpy()) and np.abs(b - m.to_numpy()).max() <= 0.01 * np.abs(m.to_numpy()).max()


@pytest.mark.parametrize("args, message", [
    (["predict", "--context", "{d}/train.csv", "--target", "nope", "--query", "{d}/test.tsv", "-o", "{d}/p.csv"],
     "target column 'nope' does not exist"),
    (["predict", "--context", "{d}/train.csv", "--target", "a", "--task", "classification", "--query", "{d}/test.tsv",
      "-o", "{d}/p.csv"], "target 'a' holds 40 classes in 40 labelled rows: almost every row is its own class"),
    (["impute", "{d}/missing.csv", "-o", "{d}/f.csv"], "missing.csv: file not found"),
    (["impute", "{d}/train.csv", "-o", "{d}/f.json"], "unsupported file type '.json'"),
    (["relations", "{d}/bad.csv", "-o", "{d}/r.csv"], "bad.csv: the table is empty"),
    (["impute", "{d}/train.csv", "-o", "{d}/f.csv", "--checkpoint", "{d}/train.csv"], "not a FEAT checkpoint"),
])
def test_errors_exit_2_with_a_message(tables, capsys, args, message):
    d, _ = tables
    (d / "bad.csv").write_text("a,b\n")
    assert main([a.format(d=d) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("suffix, sep, encoding, bom", [
    ("csv", ";", "latin-1", b""), ("tsv", "\t", "utf-8", b""), ("csv", ",", "utf-8", b"\xef\xbb\xbf")],
    ids=["latin1-semicolon-csv", "tsv", "utf8-bom-csv"])
def test_predict_reads_the_files_the_app_loads(tmp_path, capsys, suffix, sep, encoding, bom):
    """The app and `feat predict` share one reader: a Latin-1 semicolon CSV, a TSV and a UTF-8-BOM
    CSV (accented column names and labels) load in the app and are predicted from by the CLI."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(50, 2)), columns=["température", "b"])
    df["catégorie"] = np.where(df["température"] > 0, "élevé", "bas")
    data = bom + df.to_csv(index=False, sep=sep).encode(encoding)
    path = tmp_path / f"table.{suffix}"
    path.write_bytes(data)
    pd.testing.assert_frame_equal(aio.read_table_bytes(data, path.name).df, df)
    rc = main(["predict", "--context", str(path), "--target", "catégorie", "--query", str(path),
               "-o", str(tmp_path / "p.csv"), "--n-estimators", "1"])
    assert rc == 0
    assert capsys.readouterr().err.endswith(f"wrote {tmp_path / 'p.csv'} (UTF-8, comma-separated)\n")   # not the input's
    out = pd.read_csv(tmp_path / "p.csv")
    assert list(out.columns) == ["catégorie", "p(bas)", "p(élevé)"] and len(out) == 50
    assert (out["catégorie"] == df["catégorie"]).mean() > 0.8


UNREADABLE = [("binary.csv", b"a,b\n\x00\x01\x02\x03,\xff\n"), ("ragged.csv", b"a,b\n1,2\n3,4,5,6\n"),
              ("empty.csv", b""), ("broken.parquet", b"not parquet"), ("old.xls", b"\xd0\xcf\x11\xe0"),
              ("table.json", b"{}")]


@pytest.mark.parametrize("name, data", UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_unreadable_file_gets_the_apps_message(tmp_path, monkeypatch, capsys, name, data):
    """One line naming the file, the problem and the fix: the very words the app shows."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(data)
    with pytest.raises(aio.TableError) as ei:
        aio.read_table_bytes(data, name)
    assert main(["impute", name, "-o", "filled.csv"]) == 2
    assert capsys.readouterr().err == f"feat: error: {ei.value.problem} {ei.value.fix}\n"
    assert ei.value.problem.startswith(f"{name}: ") and ei.value.fix


def test_delimiter_and_encoding_options(tmp_path, capsys):
    """--encoding and --delimiter override detection; a wrong one is an error that says so."""
    df = pd.DataFrame({"a": [1.5, 2.5, 3.5], "é": ["x", "y", "x"]})
    path = tmp_path / "t.csv"
    path.write_bytes(df.to_csv(index=False, sep=";").encode("latin-1"))
    args = ["relations", str(path), "-o", str(tmp_path / "r.csv"), "--method", "pearson"]
    assert main([*args, "--delimiter", "semicolon", "--encoding", "latin-1"]) == 0
    assert list(pd.read_csv(tmp_path / "r.csv", index_col=0).columns) == ["a", "é"]
    assert main([*args, "--encoding", "utf-8"]) == 2
    assert "cannot decode the bytes as utf-8" in capsys.readouterr().err
    assert main([*args, "--delimiter", "comma"]) == 2
    assert "Set the delimiter to semicolon." in capsys.readouterr().err


def test_entry_point_module_runs():
    out = subprocess.run([sys.executable, "-m", "feat_engine.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "relations" in out.stdout


def test_local_context_values():
    assert [local_context_arg(v) for v in ("auto", "None", "0", "512")] == ["auto", None, None, 512]
    with pytest.raises(argparse.ArgumentTypeError, match="'none' or 'auto', got 'big'"):
        local_context_arg("big")
