"""Tables on the server (feat_engine.sources): by path (CSV, Parquet, a folder of Parquet parts) and by SQL
through DuckDB, their errors, the stamp that tells a changed file, and the Data view's "Open a file on this
server" part through AppTest."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app import io as aio
from feat_engine.errors import TableError
from feat_engine.io import read_table
from feat_engine.sources import open_path, run_sql, source_stamp
from test_app import new_app, no_trouble


def table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n).round(3), "b": rng.integers(0, 6, n),
                         "c": rng.choice(["red", "green", "blue"], n), "y": rng.normal(size=n).round(3)})


@pytest.fixture
def parts(tmp_path) -> tuple[str, pd.DataFrame]:
    """A folder of three Parquet parts of `table()`, 100 rows each, and the whole table."""
    df, folder = table(), tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        df.iloc[100 * i:100 * (i + 1)].to_parquet(folder / f"part.{i}.parquet", index=False)
    (folder / "_SUCCESS").write_text("")
    return str(folder), df


def test_open_path_reads_csv_parquet_and_a_folder_of_parts(tmp_path, parts):
    df = table()
    df.to_csv(tmp_path / "t.csv", sep=";", index=False)
    got = open_path(tmp_path / "t.csv")
    pd.testing.assert_frame_equal(got.df, read_table(tmp_path / "t.csv"))      # the upload's reader, its notes
    assert (got.fmt, got.delimiter, got.name) == ("csv", ";", str(tmp_path / "t.csv"))

    df.sample(frac=1, random_state=0).to_parquet(tmp_path / "t.parquet")     # a stored index is left out
    got = open_path(tmp_path / "t.parquet")
    assert list(got.df.columns) == list(df.columns) and len(got.df) == len(df)
    assert got.df["a"].dtype == float and got.df["b"].dtype == np.int64
    assert pd.api.types.is_string_dtype(got.df["c"])

    folder, df = parts
    for where in (folder, folder + "/*.parquet"):
        got = open_path(where)
        pd.testing.assert_frame_equal(got.df, df, check_dtype=False)          # every part, in order
        assert got.notes == ["3 Parquet files, in order: part.0.parquet to part.2.parquet"]


def test_sql_over_a_folder_selects_columns_and_filters_rows(parts):
    folder, df = parts
    got = run_sql(f"SELECT a, c, y FROM '{folder}/*.parquet' WHERE b > 2")
    want = df.loc[df["b"] > 2, ["a", "c", "y"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.df, want, check_dtype=False)
    assert got.name == "SQL query"


def test_the_same_table_by_path_and_by_select_star_is_equal(parts):
    folder, _ = parts
    pd.testing.assert_frame_equal(open_path(folder).df, run_sql(f"SELECT * FROM '{folder}/*.parquet'").df)


def test_lists_and_records_are_read_as_text_with_a_note_by_every_reader(tmp_path):
    df = pd.DataFrame({"a": [1.5, 2.5, 3.5, 4.5], "tags": [["x", "y"], None, ["x"], ["x", "y"]],
                       "rec": [{"k": i, "v": "z"} for i in range(4)], "y": [0, 1, 0, 1]})
    path = tmp_path / "t.parquet"
    df.to_parquet(path, index=False)
    readers = {"upload": lambda: aio.read_table_bytes(path.read_bytes(), "t.parquet"), "path": lambda: open_path(path),
               "SQL": lambda: run_sql(f"SELECT * FROM '{path}'")}
    for how, read in readers.items():
        loaded = read()
        assert loaded.notes[-1] == "columns 'tags', 'rec' hold lists or records, read as their text", how
        assert loaded.df["tags"].iloc[0] == "['x', 'y']" and pd.isna(loaded.df["tags"].iloc[1]), how
        assert loaded.df["rec"].map(type).eq(str).all(), how
        assert loaded.df["a"].tolist() == df["a"].tolist(), how
        assert set(aio.detect_types(loaded.df)) == set(df.columns), how


def test_a_query_over_a_csv_reads_its_values_as_opening_it_does(tmp_path):
    """DuckDB's own sniffer reads a column of yes and no as booleans; a query reads the file as an upload is read."""
    path = tmp_path / "loans.csv"
    pd.DataFrame({"amount": [1.25, 2.5, None, 4.0], "grade": ["a", "b", "a", None],
                  "bad": ["yes", "no", "no", "yes"]}).to_csv(path, index=False)
    pd.testing.assert_frame_equal(run_sql(f"SELECT * FROM '{path}'").df, open_path(path).df)
    got = run_sql(f"SELECT l.bad, o.grade FROM '{path}' AS l JOIN '{path}' AS o USING (amount) WHERE l.amount > 2").df
    assert got["bad"].tolist() == ["no", "yes"] and got["grade"].iloc[0] == "b" and got["grade"].isna().iloc[1]


def _files(tmp_path) -> None:
    table(20).to_csv(tmp_path / "only.csv", index=False)
    (tmp_path / "empty").mkdir()
    (tmp_path / "texts").mkdir()
    table(20).to_csv(tmp_path / "texts" / "a.csv", index=False)
    (tmp_path / "t.json").write_text("{}")
    table(20).to_parquet(tmp_path / "t.parquet", index=False)
    (tmp_path / "mixed").mkdir()
    table(20).to_parquet(tmp_path / "mixed" / "a.parquet", index=False)
    table(20).rename(columns={"c": "colour"}).to_parquet(tmp_path / "mixed" / "b.parquet", index=False)


@pytest.mark.parametrize("path, says", [
    ("nowhere/t.parquet", "nowhere/t.parquet: file not found"),
    ("empty", "empty: the directory holds no files"),
    ("texts", "texts/a.csv: not a Parquet file"),
    ("t.json", "t.json: unsupported file type '.json'"),
    ("mixed", "mixed/b.parquet: columns differ from those of mixed/a.parquet: missing ['c'], unexpected ['colour']"),
], ids=["missing", "empty-folder", "folder-of-csv", "suffix", "parts-differ"])
def test_a_bad_path_says_which_and_why(tmp_path, monkeypatch, path, says):
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TableError) as e:
        open_path(path)
    assert e.value.problem.startswith(says) and e.value.fix, e.value


@pytest.mark.parametrize("query, says", [
    ("SELEC a FROM 't.parquet'", 'Parser Error: syntax error at or near "SELEC"'),
    ("SELECT zz FROM 't.parquet'", 'Binder Error: Referenced column "zz" not found'),
    ("SELECT * FROM 'nowhere/*.parquet'", 'IO Error: No files found that match the pattern "nowhere/*.parquet"'),
    ("COPY (SELECT * FROM 't.parquet') TO 'out.csv'", "COPY statements are not run here"),
    ("ATTACH 'other.db'", "ATTACH statements are not run here"),
    ("INSTALL httpfs", "INSTALL statements are not run here"),
    ("SELECT 1 AS a, 2 AS b; DROP TABLE x", "holds 2 statements"),
    ("SELECT * FROM 't.parquet' WHERE b > 100", "returns no rows"),
], ids=["parser", "binder", "no-files", "copy", "attach", "install", "two-statements", "no-rows"])
def test_a_bad_query_says_which_and_why(tmp_path, monkeypatch, query, says):
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TableError) as e:
        run_sql(query)
    assert e.value.problem.startswith(f"SQL query {query!r}: {says}") and e.value.fix, e.value
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "other.db").exists()


def test_a_query_of_one_column_is_refused_by_the_app(tmp_path, monkeypatch):
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TableError, match=r"SQL query: the table has a single column \('a'\).*Select two columns"):
        aio.read_source("SELECT a FROM 't.parquet'", sql=True)


def test_the_stamp_tells_a_file_that_changed_came_or_went(parts):
    folder, df = parts
    query = f"SELECT a, b FROM read_parquet(['{folder}/part.0.parquet', '{folder}/part.1.parquet'])"
    by_path, by_query = source_stamp(folder), source_stamp(query, sql=True)
    assert [f for f, _, _ in by_path] == [f"{folder}/part.{i}.parquet" for i in range(3)]
    assert [f for f, _, _ in by_query] == [f"{folder}/part.{i}.parquet" for i in range(2)]
    assert aio.source_changes(folder, False, by_path) == []

    df.iloc[:150].to_parquet(f"{folder}/part.1.parquet", index=False)         # rewritten between two reads
    os.remove(f"{folder}/part.2.parquet")
    df.iloc[:10].to_parquet(f"{folder}/part.3.parquet", index=False)
    assert source_stamp(folder) != by_path and source_stamp(query, sql=True) != by_query
    assert aio.source_changes(folder, False, by_path) == [f"{folder}/part.1.parquet changed",
                                                          f"{folder}/part.3.parquet is new",
                                                          f"{folder}/part.2.parquet is gone"]


def test_the_upload_limit_is_one_number():
    config = (Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text()
    assert re.findall(r"^maxUploadSize\s*=\s*(\d+)", config, re.M) == [str(aio.SENT_MB)]


def test_data_view_opens_a_folder_by_path_and_by_sql_and_says_what_went_wrong(parts):
    folder, df = parts
    at = new_app()
    caption = " ".join(c.value for c in at.caption)
    assert f"up to **{aio.MAX_UPLOAD_MB:,} MB**" in caption and "Larger files: open them by path below" in caption

    at.text_input(key="server_path").input(folder)
    at.button(key="open_path").click().run()
    no_trouble(at)
    ds = at.session_state["dataset"]
    assert ds["name"] == folder and ds["source"] == "file on this server, parquet" and len(ds["df"]) == 300
    assert any("3 Parquet files" in c.value for c in at.caption) and not at.warning

    at.text_area(key="server_sql").input(f"SELECT a, c, y FROM '{folder}/*.parquet' WHERE b > 2")
    at.button(key="run_sql").click().run()
    no_trouble(at)
    ds = at.session_state["dataset"]
    assert ds["name"] == "SQL query" and len(ds["df"]) == int((df["b"] > 2).sum())
    assert list(ds["df"].columns) == ["a", "c", "y"]

    df.iloc[:50].to_parquet(f"{folder}/part.1.parquet", index=False)          # a file changes: a warning, no re-read
    at.run()
    no_trouble(at)
    assert len(at.session_state["dataset"]["df"]) == int((df["b"] > 2).sum())
    warned = " ".join(w.value for w in at.warning)
    assert "part.1.parquet changed" in warned and f"read at {ds['origin']['read_at']}" in warned

    at.text_input(key="server_path").input(folder + "/nowhere.parquet")
    at.button(key="open_path").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and f"{folder}/nowhere.parquet: file not found" in errors[0], errors
    assert at.session_state["dataset"]["name"] == "SQL query"                 # the table in use stays
