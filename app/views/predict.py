"""Predict: pick a target; Evaluate on a holdout next to a GBDT, or Fill in missing targets."""
from __future__ import annotations

import math
import os
import time
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st
from sklearn.model_selection import train_test_split

from app import baselines, downloads, engine, figures, metrics, notes, numbers, state
from app import io as aio
from feat_engine.estimators import PRECISIONS
from feat_engine.inference import bf16_is_fast

EXPLAIN_ROWS = 200        # predicted rows the column pricing reads at most
CARDS_A_ROW = 4           # score cards a row
READINGS = "FEAT readings (averaged)"      # the box of how many times FEAT reads the table, and its run setting
SCHEDULER_ENV = "FEAT_DASK_SCHEDULER"      # the environment variable that gives the Dask scheduler's default address
MODELS = {"small": "feat-small: the most accurate", "fast": "feat-fast: faster, nearly as accurate"}
MODEL_NAMES = {k: label.split(":")[0] for k, label in MODELS.items()}     # the models' names, as the report gives them
MODEL_HELP = ("feat-fast is a smaller copy of FEAT, taught to give feat-small's answers: it does about half the work "
              "for each example row it reads. On the 13 tables FEAT is checked on, a run took 0.68-0.81 of "
              "feat-small's time, with scores on average at most 0.0014 lower in ROC-AUC and 0.0053 lower in R² "
              "(0.02 in R² on the table it did worst: it lost most on targets with a few very large values, such as "
              "flight delays). Use it to try settings or on large tables; check the scores on held-out rows "
              "(Evaluate) either way.")


def _show_first_answer(first: engine.Outcome, n_train: int, plan, y_true, task: str, index, target: str,
                       formats: dict) -> None:
    """The first answer (`engine.first_answer`), written while FEAT refines it: its score on the holdout
    (Evaluate, `y_true` given), else its first predictions (written by `formats`, `numbers.prediction_formats`)."""
    got = first.value
    head = (f"**First answer** in {state.seconds_text(first.seconds)}, from one reading of {got['rows']:,} of the "
            f"{n_train:,} example rows")
    # past the reading budget the fit's own plan, which the bar below names, may read fewer rows than the one made
    # from the table's columns (coded levels widen the rows: `reading/coded_levels.py`), so the sentence gives none
    reads = (f"all {n_train:,} example rows " + ("once" if plan.members == 1 else f"{plan.members} times")
             if plan.rows >= n_train else f"a share of the {n_train:,} example rows (the bar below says how many)")
    refine = f"FEAT now reads {reads}, with a classical model beside it that learns from all {n_train:,}, to refine it."
    if y_true is not None:
        key, y_true = "ROC-AUC" if task == "classification" else "R²", y_true.iloc[:len(got["pred"])]
        score = (metrics.classification_metrics(y_true, got["pred"], got["proba"], got["classes"])
                 if task == "classification" else metrics.regression_metrics(y_true, got["pred"]))[key]
        rows = f"{len(y_true):,} of the {len(index):,}" if len(y_true) < len(index) else f"the {len(y_true):,}"
        st.markdown(f"{head}: {key} {metrics.card_text(score)} on {rows} held-out rows. {refine}")
        return
    st.markdown(f"{head}; its first predictions are below. {refine}")
    first_rows = downloads.predictions_frame(index[:5], got["pred"][:5], None if got["proba"] is None else
                                             got["proba"][:5], got["classes"], target=target)
    st.dataframe(numbers.style(first_rows, formats), width="stretch", hide_index=True, placeholder="")


def _compared(X_tr: pd.DataFrame, y_tr: pd.Series, X_te: pd.DataFrame, task: str, seed: int,
              bar) -> tuple[dict | None, str | None, float]:
    """The GBDT on the same split (`baselines.fit_predict_gbdt`), its progress on `bar`: (its result, None, seconds),
    or (None, why it failed, seconds); a failure must not hide FEAT's result."""
    name, t0 = baselines.GBDT, time.perf_counter()
    bar.progress(0.0, text=f"{name}: training on the same {len(X_tr):,} rows, for the comparison")
    try:
        gb, error = baselines.fit_predict_gbdt(X_tr, y_tr, X_te, task, seed), None
    except Exception as e:
        gb, error = None, (f"{name} could not be trained on this table ({type(e).__name__}: {str(e)[:200]}), so the "
                           "comparison shows FEAT alone.")
    bar.progress(1.0, text=f"{name} " + ("failed" if error else "done"))
    return gb, error, time.perf_counter() - t0


ds, table = state.open_page("Predict")
all_cols = list(ds["df"].columns)
default_target = ds.get("target") if ds.get("target") in all_cols else all_cols[-1]
c1, c2, c3 = st.columns([2, 1.3, 1.3])
target = c1.selectbox("Target column", all_cols, index=all_cols.index(default_target), key=f"target:{ds['digest']}",
                      help="Any column; if its 'use as' is ignore, it is still used as the target.")
ds["target"] = target  # other views (Relations) start from the same target
# the target as the model reads it (type override applied), else the raw column
y_all = table[target] if target in table.columns else ds["df"][target]
X_all = table.drop(columns=[target], errors="ignore")
detected_task = aio.detect_task(y_all, state.types().get(target))
tasks = ["classification", "regression"]
task = c2.radio("Task", tasks, index=tasks.index(detected_task), key=f"task:{ds['digest']}:{target}",
                help=f"Detected: {detected_task}. Change it if the detection is wrong.")
mode = c3.radio("Mode", ["Evaluate", "Fill in"], key="predict_mode",
                help="Evaluate: hide a holdout of labelled rows and score the predictions. "
                     "Fill in: predict the rows whose target is missing.")
if X_all.shape[1] == 0:
    state.show_error(aio.TableError(f"no feature columns are in use besides the target {target!r}.",
                                    "In Data, set 'use as' of more columns to numeric or categorical."))
    st.stop()

n_missing_y = int(y_all.isna().sum())
st.caption(f"{X_all.shape[1]} features, {len(y_all) - n_missing_y:,} labelled rows, {n_missing_y:,} rows with the target missing.")

n_classes = int(y_all.nunique()) if task == "classification" else 0
# FEAT's default readings are the estimators' for the rows it learns from: in Evaluate, the training part
# (`train_test_split` holds out the ceiling of the holdout's share)
labelled_n = len(y_all) - n_missing_y
learn_n = labelled_n - math.ceil(st.session_state.get("pred_holdout", 0.25) * labelled_n) if mode == "Evaluate" \
    else labelled_n
members = engine.reading_plan(task, state.run_params(), learn_n, X_all.shape[1], n_classes).members
# a new table or plan gets its own default, and so does the box on coming back to this page: Streamlit drops a
# widget's value when a page without it runs, and the box then read its minimum, 1
if st.session_state.get("pred_nest_default") != (ds["digest"], members) or "pred_nest" not in st.session_state:
    st.session_state["pred_nest"], st.session_state["pred_nest_default"] = members, (ds["digest"], members)
with st.form("predict_form"):
    f1, f2, f3, f4 = st.columns(4)
    holdout = f1.slider("Holdout fraction", 0.1, 0.5, 0.25, 0.05, key="pred_holdout", disabled=mode != "Evaluate")
    seed = f2.number_input("Seed", 0, 2**31 - 1, 0, 1, key="pred_seed")
    n_est = f3.number_input(READINGS, 1, 16, step=1, key="pred_nest",
                            help="How many times FEAT reads the example rows to predict the others, each time with the "
                                 "rows and columns in another order, and averages the answers: more readings are "
                                 "steadier and slower. One reading goes through the example rows once (once per "
                                 "class, where more than two classes are read one against the rest). The default "
                                 f"is FEAT's own ({members} for the {learn_n:,} example rows it learns from): 2 "
                                 "below 4,096 example rows (1 where "
                                 "more than two classes are each read against the rest, which reads the rows once "
                                 "per class); up to 4 on longer tables, where FEAT stops adding readings once one "
                                 "no longer changes its answers on example rows it sets aside; fewer on very large "
                                 "tables, where past one reading each reads a random share of the rows, while the "
                                 "classical model beside it learns from all of them.")
    max_ctx = f4.number_input("Max example rows FEAT reads (0 = as its budget allows)", 0, 10_000_000, 0, 1000,
                              key="pred_maxctx",
                              help="FEAT reads at most this many labelled rows, a random share of them; 0 lets it read "
                                   "as many as fit in a few minutes on two cores. The classical model beside it "
                                   "learns from every labelled row either way.")
    with_gbdt = st.checkbox(f"Compare with {baselines.GBDT} on the same split", value=True,
                            disabled=mode != "Evaluate", key="pred_gbdt")
    model = st.radio("Model", list(MODELS), horizontal=True, key="pred_model", format_func=MODELS.get, help=MODEL_HELP)
    fast = bf16_is_fast()
    precision = st.radio("Arithmetic", PRECISIONS, horizontal=True, key="pred_precision",
                         format_func=lambda p: f"auto ({'bf16' if fast else 'fp32'} on this machine)" if p == "auto" else p,
                         help="auto: bf16 on a GPU or a CPU that multiplies it natively (about twice as fast on the "
                              "development tables, with the same scores), else fp32. fp32 gives the same numbers on "
                              "every CPU; bf16 without native support is emulated and slow.")
    scheduler = st.text_input("Score on a Dask cluster: scheduler address", os.environ.get(SCHEDULER_ENV, ""),
                              key="pred_scheduler", placeholder="empty: score on this machine",
                              help="For many rows to predict: the address of a running Dask scheduler "
                                   "(tcp://host:8786). FEAT still learns from the example rows on this machine; the "
                                   "cluster's workers then predict the other rows, group by group, each row as it "
                                   "would be predicted here. The workers need feat-engine installed, the version "
                                   "this app runs (pip install \"feat-engine[dask]\"). Empty: score on this "
                                   f"machine. The default is the environment variable {SCHEDULER_ENV}.").strip()
    submitted = st.form_submit_button("Run prediction", type="primary", key="pred_run")

run_area, result_area = state.run_and_result_areas(submitted)
if submitted:
    clicked = time.perf_counter()      # FEAT's time runs from the click to its final answer, the first included
    params = state.run_params(model, n_estimators=int(n_est), random_state=int(seed),
                              max_context=int(max_ctx) or None, precision=precision)
    try:
        aio.check_features(X_all, target)
        labelled = y_all.notna()
        aio.check_target(y_all, task, target)
        if mode == "Evaluate":
            idx = np.flatnonzero(labelled.to_numpy())
            if len(idx) < 4:
                raise aio.TableError(f"target {target!r}: only {len(idx)} labelled rows; a holdout needs at least 4.",
                                     "Upload more labelled rows.")
            strat = None
            if task == "classification":
                vc = y_all.iloc[idx].astype(str).value_counts()
                strat = y_all.iloc[idx].astype(str) if vc.min() >= 2 and int(round(holdout * len(idx))) >= len(vc) else None
            tr, te = train_test_split(idx, test_size=float(holdout), random_state=int(seed), stratify=strat)
            aio.check_target(y_all.iloc[tr], task, f"{target} (training part)")
        else:
            te = np.flatnonzero(~labelled.to_numpy())
            tr = np.flatnonzero(labelled.to_numpy())
            if len(te) == 0:
                raise aio.TableError(f"target {target!r}: no value is missing, so there is nothing to fill in.",
                                     "Use Evaluate mode, or upload a table where the rows to predict have an empty target.")
        X_tr, y_tr, X_te = X_all.iloc[tr], y_all.iloc[tr], X_all.iloc[te]
        aio.check_fits_machine(len(X_all), X_all.shape[1], "this table")
        key = state.fit_key(target, task, tr, params, model)
        est = state.kept_fit(key)
        on_dask = f" on the Dask cluster at {scheduler}" if scheduler else ""
        feat_label = (f"FEAT: {'reusing what it learned from' if est else 'learning from'} {len(tr):,} example rows, "
                      f"predicting {len(te):,}{on_dask} ...")
        with run_area.status(feat_label, expanded=True) as status:
            state.cancel_button("predict")
            bar = st.progress(0.0, text=f"learning from {len(tr):,} example rows: preparing")
            fitted, first, refine = None, None, ""
            plan = engine.reading_plan(task, params, len(tr), X_tr.shape[1], n_classes)
            # the time left told while FEAT learns counts the predictions after it
            after = engine.predict_seconds(plan, len(te), engine.runs_per_member(task, params, n_classes))
            if est is None and len(tr) > engine.FIRST_ANSWER_ROWS:    # a kept fit (same data, settings) is reused
                first = engine.first_answer(X_tr, y_tr, X_te, task, params, state.progress_callback(bar))
                _show_first_answer(first, len(tr), plan, y_all.iloc[te] if mode == "Evaluate" else None,
                                   task, table.index[te], str(target),
                                   numbers.prediction_formats(str(target), y_all.dropna(), task))
                refine = "refining the first answer, "
            gb, gb_error, gb_seconds = None, None, 0.0
            if mode == "Evaluate" and with_gbdt:     # before FEAT's full reading, so that the time left is FEAT's
                # a label alone folds the box in Streamlit 1.67 (it clears `expanded`): keep it open on the progress
                status.update(label=f"{baselines.GBDT}: training on the same {len(tr):,} rows ...", expanded=True)
                gb, gb_error, gb_seconds = _compared(X_tr, y_tr, X_te, task, int(seed), bar)
                status.update(label=feat_label, expanded=True)
            if est is None:
                fitted = engine.fit(X_tr, y_tr, task, params, state.progress_callback(bar, refine, after))
                est = fitted.value
                state.keep_fit(key, est)
            out = engine.predict(est, X_te, state.progress_callback(bar, refine), scheduler)
            if fitted is not None:
                out.warnings[:0] = [w for w in fitted.warnings if w not in out.warnings]
            # the first answer, the full reading and the predictions; not the comparison between them
            out.seconds = time.perf_counter() - clicked - gb_seconds
            bar.progress(1.0, text=f"FEAT done in {state.seconds_text(out.seconds)}")
            status.update(label=f"Done: FEAT {state.seconds_text(out.seconds)}"
                          + (f", {gb['name']} {state.seconds_text(gb['seconds'])}" if gb else "")
                          + (f", {baselines.GBDT} failed (see below)" if gb_error else ""),
                          state="complete", expanded=False)
    except (aio.TableError, engine.EngineError) as e:
        state.show_error(e, run_area)
    else:
        state.store_result("predict", {"target": target, "task": task, "mode": mode, "test_index": table.index[te],
                                       "y_true": y_all.iloc[te] if mode == "Evaluate" else None,
                                       "feat": out.value, "feat_seconds": out.seconds, "warnings": out.warnings,
                                       "first_seconds": first.seconds if first is not None else None,
                                       "gbdt": gb, "gbdt_error": gb_error, "n_train": len(tr),
                                       "fit_reused": fitted is None, "fit_key": key, "X_test": X_te,
                                       "model": model, "settings": [f"model: {MODEL_NAMES[model]}",
                                                    f"{READINGS}: {int(n_est)}", f"seed: {int(seed)}",
                                                    f"max example rows FEAT reads: {int(max_ctx) or 'as its budget allows'}",
                                                    f"arithmetic: {precision}"]
                                       + ([f"holdout fraction: {holdout:g}"] if mode == "Evaluate" else [])
                                       + ([f"scored on the Dask cluster at {scheduler}"] if scheduler else [])})

with result_area.container():
    res = state.shown_result("predict")
    tgt, task_r, feat = res["target"], res["task"], res["feat"]
    # the predictions at the precision of the target's known values, the true values as the column writes them
    observed = table[tgt] if tgt in table.columns else ds["df"][tgt] if tgt in ds["df"].columns else res["y_true"]
    pred_formats = numbers.prediction_formats(str(tgt), pd.Series(observed).dropna(), task_r)
    report = [("The run", [f"{res['mode']}: target {tgt!r} ({task_r}), {len(res['test_index']):,} rows predicted from "
                           f"{res['n_train']:,} example rows of {ds['name']}", *res.get("settings", []),
                           f"FEAT time: {state.seconds_text(res['feat_seconds'])}"]),
              ("What FEAT did", feat.get("what_feat_did", []))]
    read = feat.get("read_rows", res["n_train"])
    st.subheader(f"{res['mode']}: {tgt!r} ({task_r}), {len(res['test_index']):,} rows predicted from "
                 f"{res['n_train']:,} example rows"
                 + (f" (FEAT read {read:,} of them; the classical model beside it all)"
                    if read < res["n_train"] else "")
                 + (f", by {MODEL_NAMES['fast']}" if res.get("model") == "fast" else ""))
    did = feat.get("what_feat_did", [])
    if feat.get("share") in did[1:]:    # said on the page (under the scores, in Fill in under this box): not twice
        did = [line for line in did if line != feat["share"]]
    with st.expander("What FEAT did"):
        st.markdown("\n".join(f"- {line}" for line in did))
        st.caption(f"In technical terms: {feat['reading']}")
    if res["mode"] == "Fill in" and feat.get("share"):     # how much of the answer is the classical model's, in sight
        st.caption(feat["share"])
    if res.get("gbdt_error"):
        st.warning(res["gbdt_error"], icon=":material/warning:")

    if res["mode"] == "Evaluate":
        y_true, gb = res["y_true"], res["gbdt"]
        runs = {"FEAT": feat, **({gb["name"]: gb} if gb else {})}
        answers = {name: run["pred"] for name, run in runs.items()}     # each method's answer for each held-out row
        two = task_r == "classification" and len(feat["classes"]) == 2
        if two:     # a decision cut-off on the probability of the rarer class: the stored probabilities, read again
            positive = metrics.minority_class(y_true, feat["classes"])
            if st.session_state.get("pred_cutoff_for") != res["fit_key"] or "pred_cutoff" not in st.session_state:
                st.session_state["pred_cutoff"], st.session_state["pred_cutoff_for"] = 0.5, res["fit_key"]
            t1, t2, t3 = st.columns([2, 1, 1])
            cutoff = t1.slider(f"Cut-off for '{positive}'", 0.01, 0.99, step=0.01, key="pred_cutoff",
                               help=f"A held-out row is predicted '{positive}' when its probability of "
                                    f"'{positive}' is at least this. At 0.5 it is the more likely class, as FEAT "
                                    f"answers; lower finds more of the '{positive}' rows at the price of more false "
                                    "alarms. The confusion matrices, accuracy, balanced accuracy and F1 follow it, for "
                                    "every method; ROC-AUC does not (it reads the probabilities alone), and the "
                                    "predictions below keep FEAT's own answer.")
            for name, run in runs.items():
                at_cut = metrics.at_cutoff(run["proba"], run["classes"], positive, cutoff)
                answers[name] = answers[name] if at_cut is None else at_cut
            prec, rec = metrics.precision_recall(y_true, answers["FEAT"], positive)
            t2.metric(f"FEAT precision for '{positive}'", metrics.card_text(prec),
                      help=metrics.METRIC_HELP["precision"])
            t3.metric(f"FEAT recall for '{positive}'", metrics.card_text(rec), help=metrics.METRIC_HELP["recall"])
            if gb:
                gp, gr = metrics.precision_recall(y_true, answers[gb["name"]], positive)
                t1.caption(f"{gb['name']} at this cut-off: precision {metrics.card_text(gp)}, "
                           f"recall {metrics.card_text(gr)}.")
            report[0][1].append(f"cut-off for '{positive}': {cutoff:g}")
        scores, secs = {}, {"FEAT": res["feat_seconds"]}
        for name, run in runs.items():
            scores[name] = (metrics.classification_metrics(y_true, answers[name], run["proba"], run["classes"])
                            if task_r == "classification" else metrics.regression_metrics(y_true, run["pred"]))
        if gb:
            secs[gb["name"]] = gb["seconds"]
        # a class (nearly) never predicted: its rows all wrong, whatever accuracy says
        if task_r == "classification":
            for name, run in runs.items():
                said = notes.seldom_note(name, metrics.seldom_found(y_true, answers[name], run["classes"]), y_true,
                                         scores[name], (positive, cutoff) if two else None)
                if said:
                    st.warning(said, icon=":material/warning:")
        table_scores = metrics.compare_table(scores, secs)
        main_keys = (["ROC-AUC", "accuracy", "balanced accuracy", "F1 (macro)"] if task_r == "classification"
                     else ["RMSE", "R²", "MAE"])
        # five cards in a row cut "FEAT balanced accuracy" at a 1,280-px window
        mc = [col for _ in range(0, len(main_keys) + 1, CARDS_A_ROW) for col in st.columns(CARDS_A_ROW)]
        for col, k in zip(mc, main_keys):
            v = scores["FEAT"][k]
            delta, tie = None, False
            if gb and np.isfinite(v) and np.isfinite(scores[gb["name"]][k]):
                diff = numbers.delta_text(v - scores[gb["name"]][k])
                tie = diff == "0"              # a tie reads "same as", grey and without an arrow
                delta = f"same as {gb['name']}" if tie else f"{diff} vs {gb['name']}"
            col.metric(f"FEAT {k}", metrics.card_text(v), delta=delta, help=metrics.METRIC_HELP[k],
                       delta_color="off" if tie else "inverse" if k in ("RMSE", "MAE") else "normal",
                       delta_arrow="off" if tie else "auto")
        first_s = res.get("first_seconds")
        mc[len(main_keys)].metric("FEAT time", metrics.card_text(res["feat_seconds"], "s"),
                      help=metrics.METRIC_HELP["FEAT time"]
                      + (f" Here the first answer came after {state.seconds_text(first_s)}." if first_s else "")
                      + (" This run reused what FEAT learned from the same example rows with the same settings, so it "
                         "paid for the predictions alone." if res.get("fit_reused") else ""))
        if feat.get("share"):
            st.caption(feat["share"])
        # the table's scores written as the cards write them (0.599, not 0.60)
        st.dataframe(numbers.style(table_scores, dict.fromkeys(table_scores.columns, metrics.card_text)),
                     width="stretch", placeholder="")
        report.append(("Scores", table_scores))
        if task_r == "classification" and not np.isfinite(scores["FEAT"]["ROC-AUC"]):
            st.caption("ROC-AUC is n/a: the holdout holds a single class.")
        if task_r == "classification":
            labels = metrics.natural_order(feat["classes"])     # "2-10" before "11-100"
            c1, c2 = st.columns(2)
            figs = [figures.confusion_figure(metrics.confusion(y_true, answers[name], labels),
                                             f"{name} confusion matrix") for name in runs]
            for col, fig, key in zip((c1, c2), figs, ("cm_feat", "cm_gbdt")):
                col.plotly_chart(fig, width="stretch", key=key)
                report.append((fig.layout.title.text, fig))
            is_positive = metrics.label_codes(y_true, [positive]) == 0 if two else None
            if two and is_positive.any() and not is_positive.all():      # both classes held out: the curves
                chances = {}
                for name, run in runs.items():
                    at = metrics.label_codes([positive], list(run["classes"]))[0]
                    if run["proba"] is not None and at < len(run["classes"]):
                        chances[name] = np.asarray(run["proba"], dtype=float)[:, at]
                c3, c4 = st.columns(2)
                for col, fig, key in zip((c3, c4), (figures.roc_figure(is_positive, chances, str(positive), cutoff),
                                                    figures.precision_recall_figure(is_positive, chances, str(positive),
                                                                                    cutoff)), ("roc", "pr")):
                    col.plotly_chart(fig, width="stretch", key=key)
                    report.append((fig.layout.title.text, fig))
        else:
            fig = figures.pred_vs_actual(y_true, answers, str(tgt), pred_formats[f"{tgt} (actual)"],
                                         pred_formats[str(tgt)])
            st.plotly_chart(fig, width="stretch", key="pva")
            report.append(("Predicted against actual", fig))

    st.markdown("#### Why these predictions")
    st.caption("FEAT prices each column by hiding it and reading the row again: the change in the prediction is what "
               "that cell contributed to it. The ranking averages the size of the changes over the rows; one row's "
               "chart shows the direction too. " + (f"It reads {EXPLAIN_ROWS} of the predicted rows at most."
                                                     if len(res["test_index"]) > EXPLAIN_ROWS else ""))
    unit = "probability of the predicted class" if task_r == "classification" else str(tgt)
    priced = st.button("Price each column", key="pred_explain")
    price_area, attr_area = state.run_and_result_areas(priced)      # the last pricing leaves as a new one starts
    if priced:
        est = state.kept_fit(res["fit_key"])
        if est is None:
            price_area.info("Run the prediction again first: FEAT keeps only the two latest fits.")
        else:
            X_ex = res["X_test"].head(EXPLAIN_ROWS)
            with price_area.status(f"FEAT: hiding each column in {len(X_ex):,} rows ...", expanded=True) as status:
                bar = st.progress(0.0, text="preparing")
                try:
                    got = engine.attributions(est, X_ex, state.progress_callback(bar))
                except engine.EngineError as e:
                    state.show_error(e)
                else:
                    res["attributions"] = got.value
                    status.update(label=f"Done in {state.seconds_text(got.seconds)}", state="complete", expanded=False)
    attr = res.get("attributions")
    if attr is not None:
        with attr_area.container():
            e1, e2 = st.columns(2)
            ranking = figures.attribution_ranking(attr, unit)
            e1.plotly_chart(ranking, width="stretch", key="attr_rank")
            report.append(("Why these predictions", ranking))
            row = e2.selectbox("Row", list(attr.index), key="attr_row",
                               help="A predicted row, by its row number in the table")
            at = list(res["test_index"]).index(row)
            x_cols = list(res["X_test"].columns)
            cell_formats = numbers.formats_for(table[x_cols] if set(x_cols) <= set(table.columns) else res["X_test"])
            e2.plotly_chart(figures.row_attribution(attr.loc[row], res["X_test"].loc[row],
                                                    f"Row {row}: predicted {pred_formats[str(tgt)](feat['pred'][at])}",
                                                    unit, cell_formats), width="stretch", key="attr_row_chart")

    pred_df = downloads.predictions_frame(res["test_index"], feat["pred"], feat["proba"], feat["classes"],
                                          y_true=res["y_true"], target=str(tgt))
    st.markdown("#### Predictions")
    st.dataframe(numbers.style(pred_df.head(200), pred_formats), width="stretch", height=240, hide_index=True,
                 placeholder="")
    d1, d2 = st.columns(2)
    # the CSV is written when the button is clicked (Streamlit calls the function), not on every rerun of the page
    state.download_button(d1, "Download predictions (CSV)", partial(downloads.csv_bytes, pred_df),
                          f"feat_predictions_{tgt}.csv", "text/csv", "dl_pred_csv")
    report.append(("Predictions", pred_df, pred_formats))
    state.report_button(f"FEAT on {ds['name']}: {res['mode']} {tgt}", report, f"feat_report_{tgt}.html",
                        "dl_pred_report")
    try:
        state.download_button(d2, "Download predictions (Parquet)", downloads.parquet_bytes(pred_df),
                              f"feat_predictions_{tgt}.parquet", "application/octet-stream", "dl_pred_parquet")
    except aio.TableError as e:
        d2.caption(str(e))

    if res["mode"] == "Fill in":     # the whole table as uploaded, the empty targets filled and marked
        whole = downloads.filled_target_table(ds["df"], res["test_index"], feat["pred"], tgt)
        flag = whole.columns[whole.columns.get_loc(tgt) + 1]
        st.markdown("#### The whole table, filled in")
        st.caption(f"All {len(whole):,} rows in their uploaded order, with FEAT's prediction in each of the "
                   f"{int(whole[flag].sum()):,} empty '{tgt}' cells and the known values as they were; the column "
                   f"'{flag}' says which rows FEAT filled (True) and which were known (False).")
        w1, w2 = st.columns(2)
        state.download_button(w1, "Download the whole table, filled in (CSV)", partial(downloads.csv_bytes, whole),
                              f"feat_filled_{tgt}.csv", "text/csv", "dl_whole_csv")
        try:
            state.download_button(w2, "Download the whole table, filled in (Parquet)", downloads.parquet_bytes(whole),
                                  f"feat_filled_{tgt}.parquet", "application/octet-stream", "dl_whole_parquet")
        except aio.TableError as e:
            w2.caption(str(e))
