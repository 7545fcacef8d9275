"""Predict over the kinds of table an analyst uploads: every target kind, in Evaluate with the GBDT comparison
on and in Fill in, on one table that holds every feature kind the Data view assigns (an integer 0/1 flag, an
integer-coded category, text with levels that only the predicted rows hold, booleans, dates, numbers, money written
as text, a Parquet list column).
Through AppTest with the real engine (one member, 160 rows)."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from test_app import metric, new_app, no_trouble, upload

N = 160
TARGETS = {   # target column -> the kind of column an analyst's file gives
    "t_int01": "integer 0/1",
    "t_bool": "bool",
    "t_Int64": "nullable Int64",
    "t_text": "strings",
    "t_category": "category",
    "t_float_classes": "float classes",
    "t_many_int": "many-level integer",
    "t_float": "continuous float",
}


def kinds_table(with_missing_targets: bool, seed: int = 0) -> pd.DataFrame:
    """Features of every kind and one target column of each kind in TARGETS. With missing targets, the first
    12 rows lack every target, in the dtype pandas then gives (0/1 integers become floats, booleans objects)."""
    rng = np.random.default_rng(seed)
    x, z = rng.normal(size=N), rng.normal(size=N)
    score = x + 0.7 * z
    region = rng.choice(["north", "south", "east", "west"], N).astype(object)
    region[rng.choice(N, 12, replace=False)] = [f"island {k}" for k in range(12)]   # one row each
    df = pd.DataFrame({
        "amount": x,
        "flag": (z > 0).astype(np.int64),                                         # 0/1 integers
        "rating": pd.Categorical(rng.integers(0, 11, N)),                        # an integer-coded category
        "region": region,
        "member": rng.random(N) > 0.5,
        "joined": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, N), unit="D"),
        "fee": [f"${v:,.2f}" for v in 1000 * np.exp(0.5 * z)],                  # money as a spreadsheet writes it
        "tags": [["new", "web"][: 1 + k % 2] for k in range(N)],                 # a Parquet list column
        "t_int01": (score > 0).astype(np.int64),
        "t_bool": score > 0.3,
        "t_Int64": pd.array(np.digitize(score, [-0.6, 0.6]), dtype="Int64"),
        "t_text": np.where(score > 0, "yes", "no"),
        "t_category": pd.Categorical(np.asarray(["low", "mid", "high"])[np.digitize(score, [-0.6, 0.6])]),
        "t_float_classes": np.digitize(score, [-0.6, 0.6]) + 1.0,
        "t_many_int": np.clip(np.rint(3 * score) + 8, 0, 16).astype(np.int64),
        "t_float": 2.0 * score + 0.3 * rng.normal(size=N),
    })
    if with_missing_targets:
        for c in TARGETS:
            df[c] = df[c].astype(object) if df[c].dtype == bool else df[c]
            df.loc[:11, c] = None
    return df


def parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def run_predict(target: str, mode: str, df: pd.DataFrame):
    at = new_app()
    upload(at, f"kinds_{mode}.parquet", parquet(df))
    no_trouble(at)
    at.switch_page("views/predict.py").run()
    at.selectbox(key="target:" + at.session_state["dataset"]["digest"]).select(target).run()
    at.radio(key="predict_mode").set_value(mode).run()
    at.number_input(key="pred_nest").set_value(1)
    assert at.checkbox(key="pred_gbdt").value                           # the comparison is on by default
    at.button(key="pred_run").click().run()
    no_trouble(at)
    assert not [w.value for w in at.warning if "could not be trained" in w.value]
    return at, at.session_state["result:predict"]


@pytest.mark.slow
@pytest.mark.parametrize("target", list(TARGETS), ids=list(TARGETS.values()))
def test_evaluate_with_the_gbdt_comparison_on_every_target_kind(target):
    df = kinds_table(with_missing_targets=False)
    at, res = run_predict(target, "Evaluate", df)
    assert at.session_state["types"]["fee"] == "numeric" and at.session_state["types"]["tags"] == "categorical"
    assert "'tags' holds lists or records, read as their text" in " ".join(at.session_state["dataset"]["notes"])
    assert res["gbdt"] is not None and res["gbdt_error"] is None
    train_levels = set(df["region"].drop(res["test_index"]))
    assert set(df.loc[res["test_index"], "region"]) - train_levels     # levels only the holdout holds
    if res["task"] == "classification":
        for k in ("FEAT ROC-AUC", "FEAT accuracy", "FEAT F1 (macro)"):
            assert 0.0 <= float(metric(at, k)) <= 1.0, k
        assert float(metric(at, "FEAT accuracy")) > 0.5
    else:
        assert float(metric(at, "FEAT R²")) > 0.5
    assert len(at.dataframe[0].value) == 2                              # FEAT and the GBDT, side by side


@pytest.mark.slow
@pytest.mark.parametrize("target", list(TARGETS), ids=list(TARGETS.values()))
def test_fill_in_every_target_kind(target):
    df = kinds_table(with_missing_targets=True)
    _, res = run_predict(target, "Fill in", df)
    assert list(res["test_index"]) == list(range(12))
    pred = res["feat"]["pred"]
    if res["task"] == "classification":
        observed = {v.item() if isinstance(v, np.generic) else v for v in df[target].dropna()}
        assert {v.item() if isinstance(v, np.generic) else v for v in pred} <= observed
    else:
        assert np.isfinite(np.asarray(pred, dtype=float)).all()


def test_a_failed_comparison_is_a_warning_beside_the_results_that_stays(monkeypatch):
    """A GBDT that fails shows as a warning next to FEAT's results, not inside the collapsed run box, and the
    warning is still there when the page runs again (a download click reruns it)."""
    from app import baselines

    def fails(*args, **kwargs):
        raise TypeError("Cannot setitem on a Categorical with a new category")

    monkeypatch.setattr(baselines, "fit_predict_gbdt", fails)
    at = new_app()
    upload(at, "kinds.parquet", parquet(kinds_table(with_missing_targets=False)))
    at.switch_page("views/predict.py").run()
    at.number_input(key="pred_nest").set_value(1)
    at.button(key="pred_run").click().run()
    no_trouble(at)
    for _ in range(2):
        said = [w.value for w in at.main.warning if "could not be trained" in w.value]
        assert len(said) == 1 and "Cannot setitem" in said[0] and "FEAT alone" in said[0]
        assert at.session_state["result:predict"]["gbdt"] is None
        at.run()
