"""The app's views through streamlit.testing.v1.AppTest, with the real engine and the
shipped checkpoint on small tables (one ensemble member, ~100-180 rows)."""
from __future__ import annotations

import base64
import html
import io
import json
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from app import metrics as app_metrics  # noqa: E402

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
PAGES = ["views/data.py", "views/predict.py", "views/impute.py", "views/masking.py", "views/relations.py"]
WINE = "wine (3 classes, 178 x 14)"
DIABETES = "diabetes (regression, 442 x 11)"


# --------------------------------------------------------------------------- helpers

def new_app() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=300)
    at.run()
    assert not at.exception
    return at


def no_trouble(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def load_sample(at: AppTest, key: str) -> None:
    at.selectbox(key="sample_key").select(key).run()
    at.button(key="use_sample").click().run()
    no_trouble(at)


def upload(at: AppTest, name: str, data: bytes, delimiter: str | None = None) -> None:
    at.switch_page("views/data.py").run()
    if delimiter is not None:
        at.selectbox(key="delimiter").set_value(delimiter)
    at.file_uploader(key="upload").set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, [e.message for e in at.exception]


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def arr(v) -> np.ndarray:
    """A Plotly spec array: a list, or plotly's typed-array {'dtype', 'bdata', 'shape'}."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            a = a.reshape([int(s) for s in str(shape).split(",")] if isinstance(shape, str) else shape)
        return a
    return np.asarray(v)


def metric(at: AppTest, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}; have {[m.label for m in at.metric]}")


def small_table(n: int = 120, missing: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """A small wine table (numeric features, text target), optionally with NaN cells."""
    from sklearn.datasets import load_wine
    b = load_wine(as_frame=True)
    df = b.frame.drop(columns=["target"]).iloc[:, :6].copy()
    df["cultivar"] = np.asarray(b.target_names)[b.target]
    df = df.sample(n, random_state=seed).reset_index(drop=True)
    if missing:
        rng = np.random.default_rng(seed)
        m = rng.random((n, 6)) < missing
        df.iloc[:, :6] = df.iloc[:, :6].mask(m)
    return df


def loans(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """A two-class table with a rare class: 5% of the loans 'bad', told apart by one weak column only, so that FEAT
    gives no held-out row a chance of 'bad' as high as 0.5."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    bad = np.zeros(n, dtype=bool)
    bad[rng.choice(n, n // 20, replace=False)] = True
    X[bad, 0] += 0.8
    df = pd.DataFrame(X, columns=["income", "debt", "age", "tenure"]).round(3)
    df["status"] = np.where(bad, "bad", "good")
    return df


def offered_files(monkeypatch) -> dict[str, bytes]:
    """The bytes of every file the app offers for download from now on, by file name: what a download button holds,
    or what its function writes when it is clicked (called here; large files are written on the click). Every
    button must leave the page as it is when clicked (`on_click="ignore"`): a rerun drops the file written on the
    click, and the browser's request for it can then come too late (Streamlit: "Deferred file ... not found")."""
    from streamlit.elements.widgets.button import ButtonMixin

    files, real = {}, ButtonMixin.download_button

    def keep(self, label, data, file_name=None, *args, **kwargs):
        assert kwargs.get("on_click") == "ignore", f"{label!r} reruns the page when clicked"
        files[file_name] = data() if callable(data) else data
        return real(self, label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(ButtonMixin, "download_button", keep)
    monkeypatch.setattr(st, "download_button", partial(keep, st._main))
    return files


def csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()


def fill_in(at: AppTest, df: pd.DataFrame, max_rows: int = 0) -> None:
    """Upload df and run Predict's Fill in on its target (its last column) with one member, FEAT reading at most
    `max_rows` example rows (0: as its budget allows)."""
    upload(at, "fill.csv", csv(df))
    at.switch_page("views/predict.py").run()
    at.radio(key="predict_mode").set_value("Fill in").run()
    at.number_input(key="pred_nest").set_value(1)
    at.number_input(key="pred_maxctx").set_value(max_rows)
    at.button(key="pred_run").click().run()
    no_trouble(at)


# --------------------------------------------------------------------------- render

def test_every_view_renders_without_a_table():
    at = new_app()
    assert "none loaded" in " ".join(m.value for m in at.sidebar.markdown)
    for p in PAGES[1:]:
        at.switch_page(p).run()
        no_trouble(at)
        assert any("No table loaded" in i.value for i in at.info), p


def test_every_view_renders_with_a_sample_and_the_sidebar_tells_model_and_data():
    at = new_app()
    load_sample(at, "breast cancer (classification, 569 x 31)")
    side = " ".join(m.value for m in at.sidebar.markdown)
    assert "Device:" in side and "CPU" in side
    assert "million parameters" in side and "What it learned from" in side and "Its limits" in side
    assert "569 rows x 31 columns" in side
    assert metric(at, "Rows") == "569" and metric(at, "Columns") == "31"
    assert charts(at) == [] and any("No cell is empty" in c.value for c in at.caption)   # no empty boxes
    for p in PAGES[1:]:
        at.switch_page(p).run()
        no_trouble(at)
    at.switch_page("views/predict.py").run()
    assert at.selectbox(key="target:sample:breast cancer (classification, 569 x 31)").value == "diagnosis"


def test_uploader_is_there_at_once_and_a_sample_picked_after_an_upload_stays():
    at = new_app()
    assert at.file_uploader(key="upload").value is None            # no choice to make before uploading
    upload(at, "t.csv", csv(small_table(60)))
    no_trouble(at)
    assert at.session_state["dataset"]["name"] == "t.csv"
    load_sample(at, WINE)
    at.run()                                                          # the file is still in the uploader
    no_trouble(at)
    assert at.session_state["dataset"]["name"] == WINE and metric(at, "Rows") == "178"
    at.selectbox(key="delimiter").set_value(",").run()               # new reading options: the upload again
    assert at.session_state["dataset"]["name"] == "t.csv" and metric(at, "Rows") == "60"


def test_type_override_and_ignore_reach_the_model_table():
    at = new_app()
    upload(at, "t.csv", csv(small_table(60)))
    no_trouble(at)
    # the distributions' bars stand on zero: a flat histogram (counts of 28 and 29) must not read as gaps and peaks
    assert json.loads(at.get("data_editor")[0].proto.columns)["distribution"]["type_config"]["y_min"] == 0
    types = dict(at.session_state["types"])
    assert types["cultivar"] == "categorical"
    types["alcohol"] = "ignore"
    at.session_state["types"] = types
    at.switch_page("views/relations.py").run()
    no_trouble(at)
    assert "alcohol" not in at.selectbox(key="rel_target").options


# --------------------------------------------------------------------------- bad input

BAD = [
    ("empty.csv", b"", None, "empty"),
    ("binary.csv", b"a,b\n\x00\x01\x02\x03,\xff\n", None, "not text"),
    ("semi.csv", b"a;b;c\n1;2;3\n4;5;6\n", ",", "delimiter looks wrong"),
    ("dup.csv", b"a,b,a\n1,2,3\n4,5,6\n", None, "duplicate column names"),
    ("one.csv", b"x\n1\n2\n3\n", None, "single column"),
    ("table.json", b'{"a": 1}', None, "unsupported file type '.json'"),
    ("old.xls", b"\xd0\xcf\x11\xe0", None, ".xls format is not supported"),
]


@pytest.mark.parametrize("name,data,delim,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_upload_shows_an_error_not_a_traceback(name, data, delim, needle):
    at = new_app()
    upload(at, name, data, delim)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and needle in errors[0], errors
    assert name in errors[0]
    assert at.session_state["dataset"] is None if "dataset" in at.session_state else True


def test_too_large_for_the_machine_loads_with_a_warning_and_predict_refuses(monkeypatch):
    """The table is shown, with a warning naming it; a FEAT run on all of it is refused before it starts."""
    at = new_app()
    monkeypatch.setenv("FEAT_APP_AVAILABLE_BYTES", "1000")  # app.io.available_memory reads it
    upload(at, "t.csv", csv(small_table(60)))
    assert not at.error and len(at.session_state["dataset"]["df"]) == 60
    warnings = [w.value for w in at.warning]
    assert any("t.csv" in w and "GiB" in w and "sample" in w for w in warnings), warnings
    at.switch_page("views/predict.py").run()
    at.button(key="pred_run").click().run()
    assert not at.exception and "result:predict" not in at.session_state
    errors = [e.value for e in at.error]
    assert errors and "GiB" in errors[0] and "sample" in errors[0]


def test_target_with_one_class_is_refused():
    df = small_table(60)
    df["cultivar"] = "class_0"
    at = new_app()
    upload(at, "oneclass.csv", csv(df))
    at.switch_page("views/predict.py").run()
    target = next(s for s in at.selectbox if s.label == "Target column")
    assert at.session_state["types"]["cultivar"] == "ignore"          # constant: not a feature, still a target
    target.set_value("cultivar").run()
    at.radio(key="predict_mode").set_value("Evaluate")
    at.button(key="pred_run").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors and "one class only" in errors[0] and "cultivar" in errors[0]


def test_fill_in_without_missing_targets_is_explained():
    at = new_app()
    upload(at, "t.csv", csv(small_table(60)))
    at.switch_page("views/predict.py").run()
    at.radio(key="predict_mode").set_value("Fill in").run()
    at.button(key="pred_run").click().run()
    errors = [e.value for e in at.error]
    assert errors and "nothing to fill in" in errors[0]


# --------------------------------------------------------------------------- real runs

def test_predict_classification_evaluate_with_gbdt():
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    no_trouble(at)
    at.switch_page("views/predict.py").run()
    assert next(r for r in at.radio if r.label == "Task").value == "classification"
    at.number_input(key="pred_nest").set_value(1)
    at.slider(key="pred_holdout").set_value(0.25)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    for k in ("FEAT ROC-AUC", "FEAT accuracy", "FEAT F1 (macro)"):
        v = float(metric(at, k))
        assert 0.0 <= v <= 1.0
    assert metric(at, "FEAT time").endswith(" s")
    assert all("better" in m.proto.help for m in at.metric if m.label != "FEAT time")   # each score says what it means
    res = at.session_state["result:predict"]
    assert len(res["test_index"]) == 30 and res["feat"]["proba"].shape == (30, 3)
    assert np.allclose(res["feat"]["proba"].sum(1), 1.0, atol=1e-5)
    assert res["gbdt"] is not None and res["gbdt"]["seconds"] > 0
    reading = [c.value for c in at.caption if c.value.startswith("In technical terms")]
    assert reading and "1 member(s)" in reading[0] and "the whole context of 90 rows" in reading[0]
    did = [m.value for m in at.markdown if "FEAT learned from" in m.value]
    assert did and "- FEAT learned from 90 example rows" in did[0] and "It read the table once." in did[0]
    share = res["feat"]["share"]               # the classical model's share: under the scores, not twice
    assert share and share not in did[0] and [c.value for c in at.caption].count(share) == 1
    specs = charts(at)
    assert len(specs) == 2                                             # FEAT and GBDT confusion matrices
    for s in specs:
        z = arr(s["data"][0]["z"])
        assert z.shape == (3, 3) and z.sum() == 30
    table = at.dataframe[0].value
    assert list(table.index) == ["FEAT", res["gbdt"]["name"]] and "seconds" in table.columns
    labels = [d.label for d in at.get("download_button")]
    assert "Download predictions (CSV)" in labels
    assert not res["fit_reused"]
    at.checkbox(key="pred_gbdt").uncheck()
    at.button(key="pred_run").click().run()                  # the same data and settings: the fit is kept
    no_trouble(at)
    again = at.session_state["result:predict"]
    assert again["fit_reused"] and again["gbdt"] is None
    np.testing.assert_array_equal(again["feat"]["proba"], res["feat"]["proba"])
    at.number_input(key="pred_seed").set_value(1)
    at.button(key="pred_run").click().run()                  # another split: fitted afresh
    seed1 = at.session_state["result:predict"]
    assert not seed1["fit_reused"] and "model: feat-small" in seed1["settings"]
    model = at.radio(key="pred_model")
    assert model.value == "small" and "0.68-0.81 of feat-small's time" in model.proto.help
    model.set_value("fast")
    at.button(key="pred_run").click().run()                  # the faster model: fitted afresh, and said
    no_trouble(at)
    fast = at.session_state["result:predict"]
    assert not fast["fit_reused"] and "model: feat-fast" in fast["settings"]
    assert at.subheader[0].value.endswith("by feat-fast")
    assert np.abs(fast["feat"]["proba"] - seed1["feat"]["proba"]).max() > 1e-3


def test_arithmetic_choice_reaches_the_estimator():
    """The Arithmetic choice starts at auto, which names what it means on this CPU; fp32 and bf16 reach the
    estimator: the run's probabilities move by rounding only, and auto gives exactly one of the two."""
    from feat_engine.inference import bf16_is_fast

    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/predict.py").run()
    choice = at.radio(key="pred_precision")
    assert choice.value == "auto"
    assert f"auto ({'bf16' if bf16_is_fast() else 'fp32'} on this machine)" in choice.options
    at.number_input(key="pred_nest").set_value(1)
    at.checkbox(key="pred_gbdt").set_value(False)
    proba = {}
    for p in ("auto", "fp32", "bf16"):
        at.radio(key="pred_precision").set_value(p)
        at.button(key="pred_run").click().run()
        no_trouble(at)
        proba[p] = at.session_state["result:predict"]["feat"]["proba"]
    assert not np.array_equal(proba["bf16"], proba["fp32"]) and np.abs(proba["bf16"] - proba["fp32"]).max() < 0.05
    np.testing.assert_array_equal(proba["auto"], proba["bf16" if bf16_is_fast() else "fp32"])


def test_members_default_to_the_engines_reading_plan(monkeypatch):
    """The Predict view starts each table with the members the engine's reading plan gives it (the estimators'
    `read_plan`, one rule for both): here a budget made small enough that 120 rows of a three-class target, read
    one class against the rest, take one member, and 30 rows of a two-class one the members planned where no rows
    are held out (`members.SHORT_MEMBERS`)."""
    from app import state
    from feat_engine.reading.members import SHORT_MEMBERS

    run_params = state.run_params
    monkeypatch.setattr(state, "run_params", lambda **kw: run_params(**{"read_budget": 3_000, **kw}))
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/predict.py").run()
    assert at.number_input(key="pred_nest").value == 1
    tiny = small_table(30).assign(cultivar=lambda d: np.where(d["cultivar"] == "class_0", "class_0", "other"))
    upload(at, "wine_tiny.csv", csv(tiny))
    at.switch_page("views/predict.py").run()
    assert at.number_input(key="pred_nest").value == SHORT_MEMBERS > 1


def test_the_readings_default_is_the_estimators_for_the_rows_feat_learns_from():
    """Evaluate learns from the training part: 3,375 of 4,500 labelled rows, too few to hold rows out for the member
    rule, so the estimators read SHORT_MEMBERS; Fill in learns from all 4,500, where the rule chooses among
    RULE_MEMBERS. Coming back from another page gives the default again (it read 1, the box's minimum)."""
    from feat_engine.reading.members import RULE_MEMBERS, SHORT_MEMBERS

    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(4500, 3)), columns=["a", "b", "c"])
    df["label"] = np.where(df["a"] + rng.normal(size=4500) > 0, "yes", "no")
    at = new_app()
    upload(at, "long.csv", csv(df))
    at.switch_page("views/predict.py").run()
    assert "4,500 labelled rows" in " ".join(c.value for c in at.caption)          # the target: `label`
    assert at.radio(key="predict_mode").value == "Evaluate" and at.number_input(key="pred_nest").value == SHORT_MEMBERS
    at.switch_page("views/data.py").run()           # away and back: the default again, not the box's minimum
    at.switch_page("views/predict.py").run()
    assert at.number_input(key="pred_nest").value == SHORT_MEMBERS != 1
    at.radio(key="predict_mode").set_value("Fill in").run()
    assert at.number_input(key="pred_nest").value == RULE_MEMBERS != SHORT_MEMBERS


def test_context_cap_defaults_to_the_budget_and_reaches_the_estimator():
    """The Predict view lets FEAT read as many example rows as its budget allows (0) unless the user caps them; the
    cap reaches the estimator, whose reading names the rows it read (here a cap of 60 on 90 training rows)."""
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/predict.py").run()
    assert at.number_input(key="pred_maxctx").value == 0
    at.number_input(key="pred_nest").set_value(1)
    at.checkbox(key="pred_gbdt").set_value(False)
    at.number_input(key="pred_maxctx").set_value(60)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    assert "context of 60 rows" in at.session_state["result:predict"]["feat"]["reading"]
    at.number_input(key="pred_maxctx").set_value(0)
    at.button(key="pred_run").click().run()
    assert "context of 90 rows" in at.session_state["result:predict"]["feat"]["reading"]


def test_a_first_answer_comes_before_the_full_reading(monkeypatch):
    """With more example rows than FIRST_ANSWER_ROWS, Predict first shows FEAT's answer from one reading of that
    many of them (its holdout score in Evaluate, its first predictions in Fill in), then refines it; the kept
    result is the full reading's. The first answer is one member on the capped context, without the classical
    model, a multiclass target read from the head: the same numbers as that estimator fitted directly."""
    import feat_engine as fe
    from app import engine

    monkeypatch.setattr(engine, "FIRST_ANSWER_ROWS", 40)
    df = small_table(120)
    X, y = df.drop(columns="cultivar"), df["cultivar"]
    got = engine.first_answer(X[:70], y[:70], X[70:], "classification", {"random_state": 0})
    direct = fe.FEATClassifier(n_estimators=1, max_context=40, view=None, blend=False, local_context=None,
                               multiclass="head", random_state=0).fit(X[:70], y[:70])
    np.testing.assert_array_equal(got.value["proba"], direct.predict_proba(X[70:110]))     # the first 40 rows
    assert got.value["rows"] == 40

    at = new_app()
    upload(at, "wine_small.csv", csv(df))
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(2)
    at.checkbox(key="pred_gbdt").set_value(False)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    text = " ".join(m.value for m in at.markdown)
    assert "**First answer**" in text and "one reading of 40 of the 90 example rows: ROC-AUC" in text
    assert "on the 30 held-out rows" in text
    assert "reads all 90 example rows 2 times" in text
    assert "2 member(s)" in at.session_state["result:predict"]["feat"]["reading"]
    at.button(key="pred_run").click().run()       # the kept fit: no first answer is needed
    assert "**First answer**" not in " ".join(m.value for m in at.markdown)

    filled = df.copy()
    filled.loc[filled.index[:20], "cultivar"] = np.nan
    fill_in(at, filled, max_rows=60)          # FEAT's rows capped: the sentence leaves their count to the bar
    text = " ".join(m.value for m in at.markdown)
    assert "its first predictions are below" in text
    assert "FEAT now reads a share of the 100 example rows (the bar below says how many)" in text


def test_feat_time_runs_from_the_click_to_the_final_answer(monkeypatch):
    """The FEAT time shown counts everything FEAT did from the click: the first answer as well as the full reading
    and its predictions (it left the first answer out: 154 s shown against about 176 s waited)."""
    from app import engine

    monkeypatch.setattr(engine, "FIRST_ANSWER_ROWS", 40)
    took: dict[str, list[float]] = {}
    for name in ("first_answer", "fit", "predict"):
        def timed(*args, _real=getattr(engine, name), _name=name, **kwargs):
            out = _real(*args, **kwargs)
            took.setdefault(_name, []).append(out.seconds)
            return out
        monkeypatch.setattr(engine, name, timed)
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(1)
    at.checkbox(key="pred_gbdt").set_value(False)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    assert "**First answer**" in " ".join(m.value for m in at.markdown)
    res = at.session_state["result:predict"]
    (first,) = took["first_answer"]                  # its own fit and predictions are in took too, first
    assert res["feat_seconds"] >= first + took["fit"][-1] + took["predict"][-1]
    assert res["first_seconds"] == first
    card = next(m for m in at.metric if m.label == "FEAT time")
    assert card.value == app_metrics.card_text(res["feat_seconds"], "s") and "first answer included" in card.proto.help


def test_a_rare_class_never_predicted_is_named_and_a_cut_off_finds_it(monkeypatch):
    """On a table with 5% 'bad' loans FEAT predicts no held-out loan 'bad' and its accuracy is the share of the
    good ones: a note says so, balanced accuracy stands beside accuracy, and a cut-off on the chance of 'bad'
    moves the confusion matrices, precision and recall (not ROC-AUC, nor FEAT's stored answer); the ROC and
    precision-recall curves of FEAT and the baseline are drawn, and the report holds them."""
    files = offered_files(monkeypatch)
    at = new_app()
    upload(at, "loans.csv", csv(loans()))
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(1)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    res = at.session_state["result:predict"]
    truth, feat, gb = res["y_true"].to_numpy(), res["feat"], res["gbdt"]
    n_bad, pred = int((truth == "bad").sum()), feat["pred"].copy()
    assert n_bad > 0 and "bad" not in set(pred)
    notes = [w.value for w in at.warning if "FEAT predicts no held-out row as 'bad'" in w.value]
    assert len(notes) == 1 and f"{n_bad:,} of the {len(truth):,} held-out rows are 'bad'" in notes[0]
    assert "balanced accuracy" in notes[0] and "lower cut-off" in notes[0]
    assert f"near {max(0.01, round(n_bad / len(truth), 2)):g}, the share of 'bad' rows" in notes[0]
    assert at.slider(key="pred_cutoff").value == 0.5
    assert metric(at, "FEAT recall for 'bad'") == "0" and metric(at, "FEAT precision for 'bad'") == "n/a"
    assert metric(at, "FEAT balanced accuracy") == app_metrics.card_text(0.5)    # every good row, no bad one
    assert "balanced accuracy" in at.dataframe[0].value.columns
    titles = [s["layout"]["title"]["text"] for s in charts(at)]
    assert titles == ["FEAT confusion matrix", f"{gb['name']} confusion matrix", "ROC curve for 'bad'",
                      "Precision and recall for 'bad'"]
    roc, pr = charts(at)[2:]
    for fig in (roc, pr):
        curves = [t["name"] for t in fig["data"] if t["mode"] == "lines"][1:]
        assert [n.split(" (")[0] for n in curves] == ["FEAT", gb["name"]]
    auc = metric(at, "FEAT ROC-AUC")
    assert f"FEAT (area {float(auc):.3f})" in [t["name"] for t in roc["data"]]
    assert arr(charts(at)[0]["data"][0]["z"])[:, 0].sum() == 0          # no row in the predicted 'bad' column

    chance = feat["proba"][:, list(feat["classes"]).index("bad")]
    cut = max(0.01, float(np.floor(np.quantile(chance, 0.75) * 100) / 100))
    at.slider(key="pred_cutoff").set_value(cut).run()
    no_trouble(at)
    flagged = chance >= cut
    hits = int((flagged & (truth == "bad")).sum())
    cm = arr(charts(at)[0]["data"][0]["z"])
    assert cm[:, 0].sum() == flagged.sum() > 0 and cm[0, 0] == hits
    assert metric(at, "FEAT recall for 'bad'") == app_metrics.card_text(hits / n_bad)
    assert metric(at, "FEAT precision for 'bad'") == app_metrics.card_text(hits / flagged.sum())
    assert metric(at, "FEAT ROC-AUC") == auc
    assert not any("FEAT predicts no held-out row as 'bad'" in w.value for w in at.warning)
    np.testing.assert_array_equal(at.session_state["result:predict"]["feat"]["pred"], pred)   # stored: unchanged
    page = files["feat_report_status.html"].decode()
    assert "<h2>ROC curve for" in page and "<h2>Precision and recall for" in page and "cut-off for &#x27;bad&#x27;: " in page


def test_predict_regression_scatter():
    at = new_app()
    load_sample(at, DIABETES)
    at.session_state["types"] = {**dict(at.session_state["types"]), **{c: "ignore" for c in ("s1", "s2", "s3", "s4")}}
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(1)
    at.slider(key="pred_holdout").set_value(0.1)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    assert float(metric(at, "FEAT RMSE")) > 0
    float(metric(at, "FEAT R²"))
    res = at.session_state["result:predict"]
    rmse = app_metrics.regression_metrics(res["y_true"], res["feat"]["pred"])["RMSE"]
    assert metric(at, "FEAT RMSE") == app_metrics.card_text(rmse)     # the cards print through card_text
    (scatter,) = charts(at)
    names = [t["name"] for t in scatter["data"]]
    assert names[0] == "FEAT" and names[-1] == "y = x" and len(names) == 3
    assert len(arr(scatter["data"][0]["x"])) == 45                  # 10% of 442 rows
    at.button(key="pred_explain").click().run()                      # why: each column priced by hiding it
    no_trouble(at)
    attr = at.session_state["result:predict"]["attributions"]
    assert attr.shape == (45, 6) and list(attr.index) == list(res["test_index"])       # 10 features, 4 ignored
    ranking, row = charts(at)[1:]
    assert sorted(arr(ranking["data"][0]["y"]).tolist()) == sorted(attr.columns)
    np.testing.assert_allclose(sorted(arr(ranking["data"][0]["x"]).astype(float)), sorted(attr.abs().mean()))
    assert row["layout"]["title"]["text"].startswith(f"Row {res['test_index'][0]}: predicted ")
    assert len(arr(row["data"][0]["x"])) == 6


def shown_cells(table) -> pd.DataFrame:
    """The cells of an st.dataframe as the page shows them: the display values of its Styler, else its values."""
    from streamlit import dataframe_util

    styled = table.proto.arrow_data.styler.display_values
    return dataframe_util.convert_arrow_bytes_to_pandas_df(styled) if styled else table.value.astype(str)


def bookings(n: int = 80, seed: int = 0) -> pd.DataFrame:
    """Hotel bookings: a year, a price per night at full precision with empty cells, a whole-number lead time in
    the thousands, and a whole-number target (nights) that the others tell."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"arrival_date_year": rng.choice([2015, 2016, 2017], n),
                       "historical_adr": rng.uniform(40, 200, n), "lead_time": rng.integers(0, 2500, n)})
    df["nights"] = (1 + df["lead_time"] // 40 + (df["arrival_date_year"] - 2015)).astype(int)
    df.loc[df.index[::9], "historical_adr"] = np.nan
    return df


def test_years_money_and_a_whole_number_target_are_written_as_their_kinds(monkeypatch):
    """The Data view's preview and summaries write a year without separators, a price to two decimals, a lead time
    with separators and an empty cell empty; Predict writes the predictions of a whole-number target to one decimal
    beside its true values as whole numbers, each row's cells in the attribution chart as their columns write them,
    and the report alike; the downloads keep the raw values. The box of readings says readings, not members."""
    files = offered_files(monkeypatch)
    df = bookings()
    at = new_app()
    upload(at, "bookings.csv", csv(df))
    no_trouble(at)
    preview = shown_cells(at.dataframe[0])
    assert preview["arrival_date_year"].str.fullmatch(r"201[5-7]").all()
    assert preview["historical_adr"].str.fullmatch(r"(\d+\.\d\d)?").all() and (preview["historical_adr"] == "").any()
    assert preview["lead_time"].str.contains(",").any() and not preview.isin(["None", "nan", "NaN"]).any(axis=None)
    schema = [t.value for t in at.dataframe if "summary" in t.value.columns][0].set_index("column")["summary"]
    assert schema["arrival_date_year"] == "min 2015 · median 2016 · max 2017", schema.to_dict()
    assert "2,01" not in " ".join(ui_text(at)) + " ".join(schema)
    at.switch_page("views/predict.py").run()
    [task] = [r for r in at.radio if r.label == "Task"]
    task.set_value("regression").run()
    at.number_input(key="pred_nest").set_value(1)
    at.checkbox(key="pred_gbdt").uncheck()
    at.button(key="pred_run").click().run()
    no_trouble(at)
    assert at.session_state["result:predict"]["task"] == "regression"
    assert at.number_input(key="pred_nest").proto.label == "FEAT readings (averaged)" and lab_words(at) == []
    pred = shown_cells(at.dataframe[-1])
    assert pred["nights"].str.fullmatch(r"-?[\d,]+\.\d").all(), pred["nights"].tolist()
    assert pred["nights (actual)"].str.fullmatch(r"\d+").all() and pred["row"].str.fullmatch(r"\d+").all()
    at.button(key="pred_explain").click().run()
    no_trouble(at)
    row = charts(at)[-1]
    labels = list(row["data"][0]["y"])
    year = [t for t in labels if t.startswith("arrival_date_year = ")]
    assert year and year[0][len("arrival_date_year = "):] in ("2015", "2016", "2017"), labels
    adr = [t for t in labels if t.startswith("historical_adr = ")][0]
    assert adr == "historical_adr = empty" or len(adr.split(".")[-1]) == 2, adr
    assert row["layout"]["title"]["text"].split("predicted ")[1].count(".") == 1
    report = files["feat_report_nights.html"].decode()
    cells = [c for t in report.split("<table")[1:] for c in t.split("</table>")[0].split("<td>")[1:]]
    assert cells and not any(c.split("</td>")[0] in ("None", "nan") or c.startswith("2,01") for c in cells)
    res = at.session_state["result:predict"]                               # the download: the raw values
    back = pd.read_csv(io.BytesIO(files["feat_predictions_nights.csv"]))
    np.testing.assert_array_equal(back["nights"].to_numpy(), np.asarray(res["feat"]["pred"], dtype=float))


def test_predict_fill_in_missing_targets():
    df = small_table(100)
    df.loc[df.index[:7], "cultivar"] = np.nan
    at = new_app()
    fill_in(at, df)
    res = at.session_state["result:predict"]
    assert list(res["test_index"]) == list(range(7)) and res["y_true"] is None
    assert set(res["feat"]["pred"]) <= set(df["cultivar"].dropna())


def test_fill_in_offers_the_whole_table_with_the_filled_rows_marked(monkeypatch):
    """Besides the predicted rows, Fill in offers the whole table as uploaded, the empty targets filled, the known
    ones as they were, and a column that marks the filled rows, as CSV and Parquet. How much of the answer is the
    classical model's is said on the page, as Evaluate says it under its scores, not only in the folded box."""
    files = offered_files(monkeypatch)
    df = small_table(100)
    gaps = [3, 10, 11, 42, 77]
    df.loc[gaps, "cultivar"] = np.nan
    at = new_app()
    fill_in(at, df)
    res = at.session_state["result:predict"]
    assert res["feat"]["share"] and sum(c.value == res["feat"]["share"] for c in at.caption) == 1
    whole = pd.read_csv(io.BytesIO(files["feat_filled_cultivar.csv"]))
    assert len(whole) == len(df) and list(whole.columns) == [*df.columns, "cultivar filled by FEAT"]
    assert whole["cultivar filled by FEAT"].tolist() == df["cultivar"].isna().tolist()
    known = df["cultivar"].notna()
    assert whole.loc[known, "cultivar"].tolist() == df.loc[known, "cultivar"].tolist()    # in the uploaded order
    assert whole.loc[gaps, "cultivar"].tolist() == list(res["feat"]["pred"])
    pd.testing.assert_frame_equal(whole[df.columns[:-1]], df[df.columns[:-1]])
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(files["feat_filled_cultivar.parquet"])), whole)


def test_impute_fills_every_missing_cell_and_highlights(monkeypatch):
    df = small_table(100, missing=0.1)
    n_nan = int(df.isna().sum().sum())
    files = offered_files(monkeypatch)                  # every download button leaves the page as it is
    at = new_app()
    upload(at, "holes.csv", csv(df))
    bars, where = charts(at)                                          # the Data view shows where cells are empty
    assert len(arr(bars["data"][0]["y"])) == 7 and arr(where["data"][0]["z"]).shape == (100, 7)
    assert where["layout"]["title"]["text"] == "Where the empty cells are: every row"
    rows = int(df.isna().any(axis=1).sum())
    assert any(c.value == f"{n_nan} empty cells in {rows} of 100 rows." for c in at.caption)
    at.switch_page("views/impute.py").run()
    no_trouble(at)
    at.number_input(key="imp_nest").set_value(1)
    at.button(key="imp_run").click().run()
    no_trouble(at)
    assert metric(at, "Cells imputed") == f"{n_nan:,}" and metric(at, "Still missing") == "0"
    assert any("Method: chained" in c.value for c in at.caption)          # the view says which method ran
    filled = at.session_state["result:impute"]["filled"]
    obs = df.notna()
    pd.testing.assert_frame_equal(filled.where(obs), df.where(obs), check_dtype=False)   # observed cells unchanged
    assert not filled.isna().any(axis=None)
    labels = [d.label for d in at.get("download_button")]
    assert {"Download filled table (CSV)", "Download filled table (Parquet)",
            "Download a report of this run (HTML)"} <= set(labels)
    assert pd.read_csv(io.BytesIO(files["holes_imputed.csv"])).notna().all(axis=None)
    sure = at.dataframe[1].value                                        # one row per filled cell
    assert len(sure) == n_nan and sure["how sure"].str.startswith("typical error ± ").all()   # numbers: their own
    at.radio(key="imp_draw").set_value(True)
    at.button(key="imp_run").click().run()
    no_trouble(at)
    drawn = at.session_state["result:impute"]
    assert drawn["drawn"] and not drawn["filled"].isna().any(axis=None)
    sure = at.dataframe[1].value
    assert len(sure) == n_nan and sure["how sure"].str.startswith("typical error ± ").all()


def test_masking_demo_scores_feat_and_baselines(monkeypatch):
    files = offered_files(monkeypatch)                  # every download button leaves the page as it is
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/masking.py").run()
    no_trouble(at)
    at.number_input(key="mask_nest").set_value(1)
    at.slider(key="mask_rate").set_value(0.2)
    at.button(key="mask_run").click().run()
    no_trouble(at)
    res = at.session_state["result:masking"]
    assert abs(res["mask"].mean() - 0.2) < 0.05
    assert set(res["filled"]) == {"FEAT", "mean/mode", "KNN", "Iterative"}
    assert float(metric(at, "FEAT NRMSE (numeric)")) > 0
    acc = float(metric(at, "FEAT accuracy (categorical)"))
    assert 0 <= acc <= 1
    sc = res["scores"]
    assert set(sc["method"]) == set(res["filled"]) and (sc.groupby("method").size() == 7).all()
    bars = [s for s in charts(at) if "per column" in s["layout"]["title"]["text"]]
    assert len(bars) == 2 and len(bars[0]["data"]) == 4               # NRMSE and accuracy, a bar per method
    for f in res["filled"].values():
        assert not f.isna().any(axis=None)
    assert "Download a report of this run (HTML)" in [d.label for d in at.get("download_button")]
    assert len(pd.read_csv(io.BytesIO(files["masking_scores.csv"]))) > 0


def test_masking_demo_says_beside_the_scores_which_baseline_failed(monkeypatch):
    """A baseline that fails is left out, and the warning saying so stands with the scores, not inside the run's
    status box, which closes when the run ends (the note was lost there)."""
    from app import baselines

    def broken(frame, kinds):
        raise ValueError("no neighbours")

    monkeypatch.setitem(baselines.BASELINE_IMPUTERS, "KNN", broken)
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/masking.py").run()
    at.number_input(key="mask_nest").set_value(1)
    at.button(key="mask_run").click().run()
    no_trouble(at)
    assert set(at.session_state["result:masking"]["filled"]) == {"FEAT", "mean/mode", "Iterative"}
    said = [w.value for w in at.warning if "KNN failed on this table (ValueError: no neighbours)" in w.value]
    at.run()                                        # a later rerun (any click) still shows it beside the scores
    assert said and any("KNN failed on this table" in w.value for w in at.warning)


def _graph(at: AppTest) -> dict:
    return [s for s in charts(at) if any(t.get("name") == "target" for t in s["data"])][0]


def arrows(graph: dict) -> list[dict]:
    """The graph's edges: its annotations with an arrow (the others are the node labels)."""
    return [n for n in graph["layout"]["annotations"] if n["showarrow"]]


def _graph_colours(graph: dict) -> pd.Series:
    """The graph's node colours (each column's relation to the target) by node label."""
    nodes = [t for t in graph["data"] if t.get("name") == "columns"][0]
    return pd.Series(arr(nodes["marker"]["color"]).astype(float), index=list(arr(nodes["text"])))


def test_relations_on_a_wide_table_relate_the_columns_picked():
    """Past RELATION_COLUMNS columns in use the analyst picks which to relate (every pair is measured: grants_other's
    1,443 would have taken hours, and no heatmap labels them); the target comes along."""
    from app import engine

    df = small_table(120)
    for i in range(engine.RELATION_COLUMNS):
        df[f"extra_{i}"] = np.random.default_rng(i).normal(size=120)
    for i in range(12):
        df[f"note_{i}"] = [f"row {r} note {i}" for r in range(120)]            # free text: ignored
    at = new_app()
    upload(at, "wide.csv", csv(df))
    assert any(c.value.startswith(f"The model sees {df.shape[1] - 12} of {df.shape[1]} columns; ignored: note_0, ")
               and c.value.endswith("note_9 and 2 more.") for c in at.caption)    # ten named, the rest counted
    at.switch_page("views/relations.py").run()
    picker = at.multiselect(key="rel_columns")
    assert picker.value == [] and len(picker.options) == df.shape[1] - 12                    # the columns in use
    assert picker.proto.placeholder == f"Pick up to {engine.RELATION_COLUMNS} columns to relate"   # it says so first
    at.button(key="rel_run").click().run()
    assert any("Pick the columns to relate above" in e.value for e in at.error)
    at.multiselect(key="rel_columns").set_value(["alcohol", "malic_acid", "extra_0"])
    at.selectbox(key="rel_target").set_value("cultivar")
    at.number_input(key="rel_nest").set_value(1)
    at.button(key="rel_run").click().run()
    no_trouble(at)
    mats = at.session_state["result:relations"]["mats"]
    assert sorted(mats["Pearson"].index) == ["alcohol", "cultivar", "extra_0", "malic_acid"]
    assert not any("most related to it" in c.value for c in at.caption)
    at.multiselect(key="rel_columns").set_value([f"extra_{i}" for i in range(25)])    # with the target, 26 columns
    at.button(key="rel_run").click().run()       # wider than the 24 FEAT learned on: dependence reads 24 a column
    no_trouble(at)
    assert any(c.value.startswith("FEAT dependence predicts each column from the 24 columns most related to it")
               for c in at.caption)


def test_relations_heatmaps_graph_and_parts(monkeypatch):
    """The six matrices, the graph and the target's bars; the rows sampled by default are the engine's own default
    sample of its FEAT matrices (what their accuracy was measured with), or the whole of a shorter table."""
    import inspect

    import feat_engine as fe
    from app import engine, figures

    for fn in (fe.relation_matrix, fe.dependence_matrix, fe.edge_matrix):
        assert inspect.signature(fn).parameters["max_rows"].default == engine.RELATION_ROWS
    files = offered_files(monkeypatch)                  # every download button leaves the page as it is
    at = new_app()
    upload(at, "wine_small.csv", csv(small_table(120)))
    at.switch_page("views/relations.py").run()
    assert at.number_input(key="rel_rows").value == min(120, engine.RELATION_ROWS)
    at.selectbox(key="rel_target").set_value("cultivar")
    at.number_input(key="rel_nest").set_value(1)
    at.button(key="rel_run").click().run()
    no_trouble(at)
    specs = charts(at)
    heat = [s for s in specs if s["data"][0]["type"] == "heatmap"]
    titles = [h["layout"]["title"]["text"] for h in heat]
    assert titles == ["FEAT dependence (hiding a column), A (as computed)", "FEAT edges (chance of a direct link)",
                      "FEAT attention, A (as computed)", "Mutual information (nats)", "Pearson correlation r",
                      "Spearman rank correlation ρ"]
    orders = [list(h["data"][0]["x"]) for h in heat]
    assert all(o == orders[0] for o in orders) and len(orders[0]) == 7           # one clustering order, D + 1
    for h in heat:
        assert arr(h["data"][0]["z"]).shape == (7, 7)
        assert list(h["layout"]["xaxis"]["tickvals"]) == orders[0] == list(h["layout"]["yaxis"]["tickvals"])
    mats = at.session_state["result:relations"]["mats"]
    assert list(mats) == ["FEAT attention", "FEAT dependence", "FEAT edges", "Mutual information", "Pearson",
                          "Spearman"]
    a, dep, mi, ed = mats["FEAT attention"], mats["FEAT dependence"], mats["Mutual information"], mats["FEAT edges"]
    assert list(mi.index) == list(mi.columns) == list(a.index)
    assert np.allclose(np.diag(mi), 0.0) and (mi.to_numpy() >= 0).all() and mi.to_numpy().max() > 0
    assert np.allclose(a.sum(axis=1), 1.0) and np.allclose(np.diag(a), 0.0)
    assert list(dep.index) == list(dep.columns) == list(a.index)
    assert np.allclose(np.diag(dep), 0.0) and (dep.to_numpy() >= 0).all() and dep.to_numpy().max() > 0
    assert list(ed.index) == list(ed.columns) == list(a.index) and np.allclose(ed, ed.T)
    assert np.allclose(np.diag(ed), 0.0) and ((ed.to_numpy() >= 0) & (ed.to_numpy() <= 1)).all()
    # the dependency graph is built from the edge matrix by default: each pair once, no arrowheads
    assert at.radio(key="rel_graph_from").value == "FEAT edges"
    k = at.slider(key="rel_topk").value
    graph = _graph(at)
    assert len(arr([t for t in graph["data"] if t.get("name") == "columns"][0]["x"])) == 6
    notes = arrows(graph)
    assert len(notes) == min(k, 21) and all(n["arrowhead"] == 0 for n in notes)          # 7 columns: 21 pairs
    labels = [n["text"] for n in graph["layout"]["annotations"] if not n["showarrow"]]
    assert sorted(labels) == sorted(list(a.index[a.index != "cultivar"]) + ["<b>cultivar</b>"])
    colours = _graph_colours(graph)
    assert np.allclose(colours, figures.target_relation(ed, "cultivar")[colours.index])
    # ... from the dependence matrix or attention on request
    at.radio(key="rel_graph_from").set_value("FEAT dependence").run()
    no_trouble(at)
    graph = _graph(at)
    assert len(arrows(graph)) == len(figures.graph_edges(dep, top_k=k))
    colours = _graph_colours(graph)
    assert np.allclose(colours, figures.target_relation(dep, "cultivar")[colours.index])
    at.radio(key="rel_graph_from").set_value("FEAT attention").run()
    no_trouble(at)
    graph = _graph(at)
    assert len(arrows(graph)) == k                                  # attention is positive off the diagonal
    colours = _graph_colours(graph)
    assert np.allclose(colours, figures.target_relation(a, "cultivar")[colours.index])
    bars = [s for s in charts(at) if s["data"][0]["type"] == "bar"]
    assert len(bars) == 1 and [t["name"] for t in bars[0]["data"]] == list(mats)
    # the target's three classes, named as text, have no order: no correlation, and the page says why
    for m in ("Pearson", "Spearman"):
        assert mats[m]["cultivar"].isna().all() and mats[m].drop(index="cultivar", columns="cultivar").notna().all(None)
    assert sum("leave the column 'cultivar' blank" in c.value for c in at.caption) == 1
    # the asymmetric part of both FEAT matrices: A - A^T is antisymmetric
    at.radio(key="rel_part").set_value("A-AT").run()
    no_trouble(at)
    parts = [h for h in charts(at) if "A − Aᵀ" in h["layout"]["title"]["text"]]
    assert len(parts) == 2
    for h in parts:
        z = np.nan_to_num(arr(h["data"][0]["z"]).astype(float))          # diagonal left blank
        assert np.allclose(z, -z.T, atol=1e-6) and np.abs(z).max() > 0
    at.slider(key="rel_topk").set_value(3).run()
    assert len(arrows(_graph(at))) == 3
    labels = [d.label for d in at.get("download_button")]
    assert labels == ["FEAT attention (CSV)", "FEAT dependence (CSV)", "FEAT edges (CSV)", "Mutual information (CSV)",
                      "Pearson (CSV)", "Spearman (CSV)", "All 6, long format (CSV)",
                      "Download a report of this run (HTML)"]
    assert len(pd.read_csv(io.BytesIO(files["relations_all.csv"]))) > 0


def test_excel_and_parquet_uploads_render():
    df = small_table(40)
    buf = io.BytesIO()
    df.to_excel(buf, index=False)
    at = new_app()
    upload(at, "wine.xlsx", buf.getvalue())
    no_trouble(at)
    assert metric(at, "Rows") == "40" and metric(at, "Columns") == "7"
    upload(at, "wine.parquet", df.to_parquet(index=False))
    no_trouble(at)
    assert at.session_state["dataset"]["name"] == "wine.parquet"


def test_engine_refusal_is_an_error_box():
    df = small_table(120)
    df["group"] = [f"g{i % 12}" for i in range(len(df))]   # 12 classes: more than relation_matrix takes
    at = new_app()
    upload(at, "groups.csv", csv(df))
    at.switch_page("views/relations.py").run()
    at.selectbox(key="rel_target").set_value("group")
    at.number_input(key="rel_nest").set_value(1)
    at.button(key="rel_run").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "group" in errors[0] and "classes" in errors[0], errors


def test_a_reload_brings_back_the_table_its_types_and_the_results():
    """A reload starts a new Streamlit session; the page's address names the old one (`?s=...`), whose table,
    column types and results come back. Another name starts empty."""
    at = new_app()
    load_sample(at, WINE)
    cols = list(at.session_state["types"])
    at.session_state["types"] = {**at.session_state["types"], cols[0]: "ignore"}
    at.session_state["result:relations"] = {"digest": at.session_state["dataset"]["digest"], "marker": 1}
    at.run()
    sid = at.session_state["s"]
    again = AppTest.from_file(MAIN, default_timeout=300)
    again.query_params["s"] = sid
    again.run()
    no_trouble(again)
    assert "178 rows x 14 columns" in " ".join(m.value for m in again.sidebar.markdown)
    assert again.session_state["types"][cols[0]] == "ignore"
    assert again.session_state["result:relations"]["marker"] == 1
    fresh = AppTest.from_file(MAIN, default_timeout=300)
    fresh.query_params["s"] = "someone-else"
    fresh.run()
    assert "none loaded" in " ".join(m.value for m in fresh.sidebar.markdown)


# --------------------------------------------------------------------------- words, and text that fits

OFF_WORDS = ("member", "local parts", "quantile view", "context rows")       # the lab's words, not the analyst's


def ui_text(at: AppTest) -> list[str]:
    """Every text the page shows: markdown, captions, notes, metrics, chart specs, and each widget's label, help,
    placeholder and options (the string fields of each element)."""
    def strings(v) -> list[str]:
        if isinstance(v, str):
            return [v]
        if hasattr(v, "ListFields"):                                   # a message: its fields
            return [t for _, f in v.ListFields() for t in strings(f)]
        if isinstance(v, (list, tuple)) or type(v).__name__.startswith("Repeated"):
            return [t for x in v for t in strings(x)]
        return []

    return [t for root in (at.main, at.sidebar) for node in root for t in strings(getattr(node, "proto", None))]


def lab_words(at: AppTest, allowed: tuple = ()) -> list[str]:
    """The page's texts with one of OFF_WORDS in them, but for the "In technical terms" caption and `allowed`."""
    return [t for t in ui_text(at) if any(w in t.lower() for w in OFF_WORDS)
            and not t.startswith("In technical terms") and t not in allowed]


def test_the_first_page_says_what_feat_does_and_what_to_try_first():
    at = new_app()
    intro = " ".join(m.value for m in at.markdown)
    assert "FEAT predicts a column" in intro and "fills in its empty cells" in intro and "relate" in intro
    assert "pick a sample table" in intro and all(f"**{v}**" in intro for v in ("Predict", "Impute", "Relations"))


def test_masking_demo_words_fit_and_name_where_feat_does_worse(monkeypatch):
    """The mask kinds fit their quarter of the form; the demo's help says when the mean scores above 1; FEAT's
    notes read in the analyst's words; a note names each column where FEAT does worse than mean/mode (here a fake
    FEAT run, right on every column but two); no lab word on the page."""
    from app import engine, figures

    df = small_table(120)
    bad = df.columns[0]

    def fake_impute(masked, params, progress=None):
        filled = masked.fillna(df.loc[masked.index])                 # the truth, but for two columns
        hidden = masked[bad].isna()
        filled.loc[hidden, bad] = df[bad].mean() + 5 * df[bad].std()
        filled.loc[masked["cultivar"].isna(), "cultivar"] = "no such cultivar"
        return engine.Outcome({"filled": filled, "confidence": None}, 0.01,
                              ["query column 'cultivar': 2 rows hold a level the context does not have (e.g. 'x'), "
                               "read as missing"])

    monkeypatch.setattr(engine, "impute", fake_impute)
    at = new_app()
    upload(at, "wine_small.csv", csv(df))
    at.switch_page("views/masking.py").run()
    no_trouble(at)
    kinds = at.selectbox(key="mask_mix")
    assert kinds.options[0] == "mixed" and all(len(o) <= figures.OPTION_CHARS for o in kinds.options)
    assert "30% in stripes" in kinds.proto.help
    assert not any("1 is as good as" in c.value for c in at.caption)
    at.multiselect(key="mask_methods").set_value(["mean/mode"])
    at.button(key="mask_run").click().run()
    no_trouble(at)
    notes = [w.value for w in at.warning]
    assert "FEAT: column 'cultivar': 2 of the rows to predict hold a category that none of the example rows has " \
           "(e.g. 'x'), read as empty" in notes
    assert not any("query" in n or "context" in n for n in notes), notes
    nrmse = [m for m in at.metric if m.label == "FEAT NRMSE (numeric)"][0]
    assert "above 1 where they differ from the visible ones" in nrmse.proto.help
    worse = [i.value for i in at.info if "worse than **mean/mode**" in i.value]
    assert len(worse) == 1 and f"{bad} (NRMSE" in worse[0] and "cultivar (accuracy 0.00 against" in worse[0]
    others = [c for c in df.columns if c not in (bad, "cultivar")]
    assert not any(f"{c} (" in worse[0] for c in others), worse
    assert lab_words(at) == []


def test_masking_demo_scores_dates_in_days_and_leaves_out_what_feat_does_not_read():
    """Dates and times of day the file writes as text are scored by NRMSE in days, not by exact-match accuracy, and
    shown as the file writes them; an id column FEAT does not read is not scored (every method scored 0 there)."""
    df = small_table(120)
    df["day"] = pd.date_range("2024-01-01", periods=120, freq="D").strftime("%Y-%m-%d")
    df["at"] = pd.date_range("2024-01-01 08:00", periods=120, freq="7min").strftime("%H:%M:%S")
    df["ticket"] = [f"T-{min(i, 100) % 100:05d}" for i in range(120)]     # a category of the table, but an id
    df.loc[100:, df.columns[0]] = np.nan                                     # in its complete rows, which the demo uses
    at = new_app()
    upload(at, "tickets.csv", csv(df))
    at.switch_page("views/masking.py").run()
    at.number_input(key="mask_nest").set_value(1)
    at.multiselect(key="mask_methods").set_value(["mean/mode"])
    at.button(key="mask_run").click().run()
    no_trouble(at)
    scores = at.session_state["result:masking"]["scores"]
    metric_of = scores.drop_duplicates("column").set_index("column")["metric"]
    assert metric_of["day"] == metric_of["at"] == "NRMSE" and "ticket" not in metric_of.index
    said = [w.value for w in at.warning]
    assert "FEAT: ticket is not scored: FEAT does not read it and leaves the hidden cells empty." in said
    assert not any("stay empty in the column 'ticket'" in w for w in said)      # not said twice
    shown = [d.value for d in at.dataframe if "day" in d.value.columns]
    assert len(shown) == 3 and all(d["day"].dropna().str.fullmatch(r"\d{4}-\d{2}-\d{2}").all() for d in shown)
    assert all(d["at"].dropna().str.fullmatch(r"\d{2}:\d{2}:\d{2}").all() for d in shown)


def test_impute_and_data_views_speak_without_the_labs_words():
    at = new_app()
    upload(at, "holes.csv", csv(small_table(60, missing=0.1)))
    no_trouble(at)
    assert lab_words(at) == []
    at.switch_page("views/impute.py").run()
    no_trouble(at)
    assert at.number_input(key="imp_nest").proto.label == "FEAT readings per column"
    assert lab_words(at) == []
    one = small_table(60)
    one.iloc[::7, 2] = np.nan
    for name, df in (("full.csv", small_table(60)), ("one.csv", one)):     # no incomplete column, then one
        upload(at, name, csv(df))
        at.switch_page("views/impute.py").run()
        no_trouble(at)
        method = next(c.value for c in at.caption if "Method: chained" in c.value)
        assert ("It reads all 60 rows as examples." in method) == (name == "one.csv"), method
        assert "incomplete columns" not in method and "0 incomplete" not in method, method
        assert any("no missing cell" in i.value for i in at.info) == (name == "full.csv")


def test_missing_cells_title_of_a_long_table_fits_its_chart():
    from app import figures

    at = new_app()
    upload(at, "long.csv", csv(pd.concat([small_table(100, missing=0.05, seed=s) for s in range(40)])))
    no_trouble(at)
    titles = [s["layout"]["title"]["text"] for s in charts(at)]
    assert "Where the empty cells are:<br>a random sample of 200 of the 4,000 rows" in titles, titles
    assert all(len(line) <= figures.TITLE_CHARS for t in titles for line in t.split("<br>")), titles


def test_relations_axes_follow_the_matrix_the_caption_names(monkeypatch):
    """The heatmaps' order comes from the matrix chosen under "Order the columns by" (FEAT edges at first), whose
    strongest pair stands side by side, and the caption names it; ordered by Pearson, Pearson's strongest pair
    (|r| = 0.78, two columns apart in the table) does."""
    from app import engine

    df = small_table(60)
    cols = list(df.columns)
    rng = np.random.default_rng(0)

    def matrix(pair, w):
        m = rng.uniform(0.0, 0.3, (len(cols), len(cols)))
        m = (m + m.T) / 2
        i, j = cols.index(pair[0]), cols.index(pair[1])
        m[i, j] = m[j, i] = w
        np.fill_diagonal(m, 0.0)
        return pd.DataFrame(m, index=cols, columns=cols)

    mats = {"FEAT attention": matrix((cols[0], cols[1]), 0.6), "FEAT dependence": matrix((cols[2], cols[3]), 0.6),
            "FEAT edges": matrix((cols[1], cols[4]), 0.9), "Mutual information": matrix((cols[0], cols[5]), 0.5),
            "Pearson": -matrix((cols[0], cols[3]), 0.78), "Spearman": matrix((cols[0], cols[3]), 0.7)}
    monkeypatch.setattr(engine, "relations", lambda X, target, params=None, progress=None:
                        engine.Outcome({k: v.copy() for k, v in mats.items()}, 0.01, []))
    at = new_app()
    upload(at, "wine_small.csv", csv(df))
    at.switch_page("views/relations.py").run()
    at.button(key="rel_run").click().run()
    no_trouble(at)

    def order() -> list:
        heat = [s for s in charts(at) if s["data"][0]["type"] == "heatmap"]
        orders = [list(h["data"][0]["x"]) for h in heat]
        assert len(heat) == 6 and all(o == orders[0] for o in orders)
        return orders[0]

    def said() -> str:
        return " ".join(c.value for c in at.caption if "The axes of every heatmap" in c.value)

    assert at.selectbox(key="rel_order_by").value == "FEAT edges"
    o = order()
    assert abs(o.index(cols[1]) - o.index(cols[4])) == 1, o
    assert "clustering of **FEAT edges**" in said() and f"({cols[1]} and {cols[4]})" in said()
    at.selectbox(key="rel_order_by").set_value("Pearson").run()
    no_trouble(at)
    o = order()
    assert abs(o.index(cols[0]) - o.index(cols[3])) == 1, o
    assert "clustering of **Pearson**" in said() and f"({cols[0]} and {cols[3]})" in said()
    assert at.number_input(key="rel_nest").proto.label == "FEAT readings (averaged)"
    assert lab_words(at) == []
    # with a target, the rows whose target is known: FEAT's matrices read no other, and the page says how many
    read, files = [], offered_files(monkeypatch)
    monkeypatch.setattr(engine, "relations", lambda X, target, params=None, progress=None:
                        read.append(X) or engine.Outcome({k: v.copy() for k, v in mats.items()}, 0.01, []))
    upload(at, "wine_gaps.csv", csv(df.assign(cultivar=df["cultivar"].mask(df.index % 3 == 0))))
    at.switch_page("views/relations.py").run()
    at.selectbox(key="rel_target").set_value("cultivar")
    at.button(key="rel_run").click().run()
    no_trouble(at)
    assert len(read[0]) == 40 and read[0]["cultivar"].notna().all()
    assert any(c.value.startswith("Computed on the 40 rows whose 'cultivar' is known") for c in at.caption)
    for target, said_rows in (("cultivar", "a random 25 of the 40 rows whose 'cultivar' is known"),
                              ("(no target)", "a random 25 of the 60 rows")):      # a sample says it is one
        at.selectbox(key="rel_target").set_value(target)
        at.number_input(key="rel_rows").set_value(25)
        at.button(key="rel_run").click().run()
        no_trouble(at)
        assert any(c.value.startswith(f"Computed on {said_rows} in") for c in at.caption), \
            [c.value for c in at.caption if c.value.startswith("Computed")]
        assert f"computed on {said_rows}" in html.unescape(files["relations_report.html"].decode())   # the report too


# --------------------------------------------------------------------------- scoring on Dask

def test_a_dask_cluster_that_cannot_score_is_a_red_box_and_the_results_stay(monkeypatch):
    """A scheduler that does not answer, and dask or distributed missing: a red box naming the address and the
    reason, no traceback, and the earlier run's results still shown."""
    import sys

    from feat_engine import dask_scoring
    monkeypatch.setattr(dask_scoring, "CONNECT_TIMEOUT", "1s")
    at = new_app()
    upload(at, "wine.csv", csv(small_table(60)))
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(1)
    at.checkbox(key="pred_gbdt").uncheck()
    at.button(key="pred_run").click().run()
    no_trouble(at)
    earlier = at.session_state["result:predict"]
    address = "tcp://127.0.0.1:9"                               # the discard port: nothing listens there
    for reason, missing in [("cannot connect", False), ('pip install "feat-engine[dask]"', True)]:
        if missing:
            monkeypatch.setitem(sys.modules, "distributed", None)     # as if the dask extra were not installed
        at.text_input(key="pred_scheduler").set_value(address)
        at.button(key="pred_run").click().run()
        assert not at.exception and len(at.error) == 1
        assert address in at.error[0].value and reason in at.error[0].value and "Traceback" not in at.error[0].value
        assert at.session_state["result:predict"] is earlier
        assert any(m.value.startswith("#### Predictions") for m in at.markdown)


@pytest.mark.slow
def test_scoring_on_a_dask_cluster_gives_the_same_predictions(cluster, monkeypatch):
    """With the scheduler address of a two-worker LocalCluster, FEAT learns here and the workers score the rows to
    predict, group by group, the progress counting the groups: Evaluate and Fill in give the predictions, scores and
    downloads they give on this machine. The probabilities agree to float32 rounding (8e-8 here), as the engine's
    own in-process ones do between batch sizes and thread counts (the workers run one thread each)."""
    from app import state
    files, said = offered_files(monkeypatch), []
    words = state.progress_words
    monkeypatch.setattr(state, "progress_words", lambda message: said.append(message) or words(message))
    monkeypatch.setattr(state, "SHOWN_EVERY", 0.0)                   # every report reaches the bar
    df = small_table(60)
    df.loc[df.index[:6], "cultivar"] = np.nan
    at = new_app()
    upload(at, "wine.csv", csv(df))
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(1)
    at.checkbox(key="pred_gbdt").uncheck()
    for mode, n in [("Evaluate", 14), ("Fill in", 6)]:
        at.radio(key="predict_mode").set_value(mode).run()
        runs = []
        for address in ("", cluster.scheduler.address):
            said.clear()
            at.text_input(key="pred_scheduler").set_value(address)
            at.button(key="pred_run").click().run()
            no_trouble(at)
            runs.append((at.session_state["result:predict"], files["feat_predictions_cultivar.csv"],
                         [(m.label, m.value) for m in at.metric if m.label != "FEAT time"]))
        (here, here_csv, here_scores), (there, there_csv, there_scores) = runs
        assert len(there["test_index"]) == n and there["fit_reused"]          # the fit made here, scored there
        np.testing.assert_array_equal(there["feat"]["pred"], here["feat"]["pred"])
        np.testing.assert_allclose(there["feat"]["proba"], here["feat"]["proba"], rtol=0, atol=1e-6)
        assert there_scores == here_scores
        here_csv, there_csv = (pd.read_csv(io.BytesIO(b)) for b in (here_csv, there_csv))
        pd.testing.assert_frame_equal(there_csv, here_csv, check_exact=False, rtol=0, atol=1e-6)
        assert [m.split(": ", 1)[1] for m in said if "groups of rows scored" in m] == \
            [f"{k} of 4 groups of rows scored" for k in range(1, 5)]          # two partitions per worker
