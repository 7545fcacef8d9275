"""Masking demo: hide cells of a complete table (cell/stripe/block masks), impute them with
FEAT and with baselines, and score every method against the hidden truth."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import streamlit as st

from app import baselines, downloads, engine, figures, metrics, numbers, state
from app.notes import held_values, worse_than
from app import io as aio
from feat_engine.estimators import COLUMN_MEMBERS
from feat_engine.preprocess.dates import DATE_PARTS, from_days


def in_days(df: pd.DataFrame, dated: list) -> pd.DataFrame:
    """df with its date columns `dated` as days since 1970: the numbers the baselines fill and NRMSE scores."""
    out = df.copy()
    for c in dated:
        out[c] = DATE_PARTS["days"](df[c])
    return out


def as_dates(df: pd.DataFrame, like: pd.DataFrame, dated: list) -> pd.DataFrame:
    """df's columns `dated`, days since 1970 (`in_days`), as dates again, in the time zone of `like`'s."""
    out = df.copy()
    for c in dated:
        days, zone = from_days(df[c].to_numpy(dtype=float), df.index), like[c].dt.tz
        out[c] = days if zone is None else days.dt.tz_localize("UTC").dt.tz_convert(zone)
    return out


def _names(columns: list) -> str:
    return ", ".join(map(str, columns))


ds, table = state.open_page("Masking demo")
complete = table.dropna()
st.caption("How well does FEAT fill in empty cells? This demo empties cells whose true values are known, in "
           "the rows that have none empty: single **cells**, **stripes** (a run of rows in one column) and "
           "**blocks** (a run of rows over several columns). FEAT and the usual methods fill them, and each is "
           "scored against the truth: NRMSE for number columns (the typical miss divided by the column's "
           "spread, lower is better; filling in the average of the cells left visible scores about 1, more where "
           "the hidden cells differ from the visible ones), accuracy for category columns. "
           f"FEAT's method: {engine.IMPUTE_METHOD}.")
if len(complete) < 10:
    state.show_error(aio.TableError(
        f"only {len(complete)} rows of the table have no missing cell; the demo needs at least 10 complete rows.",
        "Set 'use as' to ignore for the columns with the most missing values in Data."))
    st.stop()
if len(complete) < len(table):
    st.caption(f"Using the {len(complete):,} complete rows of {len(table):,}.")

# NRMSE as metrics.imputation_scores computes it: RMSE on the hidden cells over the standard deviation of the
# column's true values in the rows used (hidden and visible)
NRMSE_HELP = ("The typical miss on the hidden number cells (root mean squared error) divided by the standard "
              "deviation of the column's true values in the rows used. 0 is perfect; lower is better. Filling every "
              "hidden cell with the average of the cells left visible scores about 1 where the hidden cells are "
              "like the rest, and above 1 where they differ from the visible ones, as they can where stripes or "
              "blocks hide a run of neighbouring rows.")
# shares of the hidden cells in single cells, stripes and blocks; the names fit a quarter of the form at a 1,280-px
# window (`figures.OPTION_CHARS`), the detail is in the selectbox's help
MIXES = {"mixed": (0.5, 0.3, 0.2), "cells only": (1.0, 0.0, 0.0), "stripes only": (0.0, 1.0, 0.0),
         "blocks only": (0.0, 0.0, 1.0)}
with st.form("mask_form"):
    f1, f2, f3, f4 = st.columns(4)
    rate = f1.slider("Share of cells hidden", 0.05, 0.6, 0.2, 0.05, key="mask_rate")
    seed = f2.number_input("Seed", 0, 2**31 - 1, 0, 1, key="mask_seed")
    mix_name = f3.selectbox("Mask kinds", list(MIXES), key="mask_mix",
                            help="Which cells are hidden: single **cells**, **stripes** (a run of rows in one column) "
                                 "or **blocks** (a run of rows over several columns). **mixed**: half of the hidden "
                                 "cells single, 30% in stripes, 20% in blocks.")
    max_rows = f4.number_input("Rows used (max)", 10, 100_000, min(500, len(complete)), 50, key="mask_rows",
                               help="A random sample of the complete rows, to keep the demo fast.")
    methods = st.multiselect("Baselines", list(baselines.BASELINE_IMPUTERS), default=list(baselines.BASELINE_IMPUTERS),
                             key="mask_methods")
    n_est = st.number_input("FEAT readings per column", 1, 16, COLUMN_MEMBERS, 1, key="mask_nest",
                            help="How many times FEAT reads the table for each column it fills, each time with the "
                                 "rows and columns in another order, and averages the answers: more readings are "
                                 "steadier and slower.")
    go = st.form_submit_button("Hide cells and impute", type="primary", key="mask_run")

run_area, result_area = state.run_and_result_areas(go)
if go:
    try:
        from feat_engine.prior.masks import make_mask
        truth = complete if len(complete) <= max_rows else complete.sample(int(max_rows), random_state=int(seed)).sort_index()
        dated = [c for c in truth.columns if pd.api.types.is_datetime64_any_dtype(truth[c])]   # scored in days
        kinds = {c: ("numeric" if c in dated or (pd.api.types.is_numeric_dtype(truth[c])
                                                 and not pd.api.types.is_bool_dtype(truth[c])) else "categorical")
                 for c in truth.columns}
        mask = make_mask(truth.shape, float(rate), np.random.default_rng(int(seed)), mix=MIXES[mix_name])
        full_rows = mask.all(axis=1)
        if full_rows.any():  # a row with every cell hidden has nothing to condition on; keep one cell
            for i in np.flatnonzero(full_rows):
                mask[i, np.random.default_rng(int(seed) + i).integers(mask.shape[1])] = False
        masked = truth.mask(pd.DataFrame(mask, index=truth.index, columns=truth.columns))
        filled, secs, notes, failed = {}, {}, [], []
        with run_area.status(f"Imputing {int(mask.sum()):,} hidden cells ...", expanded=True) as status:
            state.cancel_button("masking")
            bar = st.progress(0.0, text="FEAT: preparing")
            out = engine.impute(masked, state.run_params(n_estimators=int(n_est), random_state=int(seed)),
                                state.progress_callback(bar))
            filled["FEAT"], secs["FEAT"], notes = out.value["filled"], out.seconds, out.warnings
            for m in methods:
                st.write(f"{m} ...")
                t0 = time.perf_counter()
                try:
                    filled[m] = as_dates(baselines.BASELINE_IMPUTERS[m](in_days(masked, dated), kinds), truth, dated)
                    secs[m] = time.perf_counter() - t0
                except Exception as e:  # a baseline failing must not hide FEAT's result: said beside the scores
                    failed.append(f"{m} failed on this table ({type(e).__name__}: {str(e)[:200]}); it is left out of "
                                  "the comparison.")
            status.update(label=f"Done: FEAT {state.seconds_text(secs['FEAT'])}", state="complete", expanded=False)
    except (aio.TableError, engine.EngineError, ValueError) as e:
        state.show_error(e, run_area)
    else:
        one = [c for c in truth.columns if truth[c].nunique(dropna=False) < 2]        # one value: nothing to score
        unread = [c for c in truth.columns if c not in one and (filled["FEAT"][c].isna() & masked[c].isna()).any()]
        scored = [c for c in truth.columns if c not in one + unread]
        if one:
            notes.append(f"{_names(one)} {'holds' if len(one) == 1 else 'hold'} one value in the rows used, so "
                         f"filling {'it' if len(one) == 1 else 'them'} is trivially right: not scored.")
        if unread:                 # a column the engine leaves out (an id): every method would score nothing there
            notes = [n for n in notes if not n.endswith("and keep their missing cells")]    # said here, once
            notes.append(f"{_names(unread)} {'is' if len(unread) == 1 else 'are'} not scored: FEAT does not read "
                         f"{'it' if len(unread) == 1 else 'them'} and leaves the hidden cells empty.")
        at = [truth.columns.get_loc(c) for c in scored]
        scores = pd.concat([metrics.imputation_scores(in_days(truth, dated)[scored], in_days(f, dated)[scored],
                                                      mask[:, at], kinds).assign(method=m)
                            for m, f in filled.items()], ignore_index=True)
        state.store_result("masking", {"truth": truth, "masked": masked, "mask": mask, "filled": filled,
                                       "seconds": secs, "scores": scores, "warnings": notes, "rate": rate,
                                       "failed": failed,
                                       "mix": mix_name, "settings": [f"seed: {int(seed)}",
                                                                     f"FEAT readings per column: {int(n_est)}",
                                                                     f"rows used: {len(truth):,}"]})

with result_area.container():
    res = state.shown_result("masking")
    scores: pd.DataFrame = res["scores"]
    mask = res["mask"]
    st.subheader(f"{int(mask.sum()):,} of {mask.size:,} cells hidden ({mask.mean():.0%}, {res['mix']})")
    overall = pd.DataFrame({m: metrics.overall_scores(scores[scores["method"] == m]) for m in res["filled"]}).T
    overall["seconds"] = pd.Series(res["seconds"])
    overall.index.name = "method"
    fo = overall.loc["FEAT"]
    c1, c2, c3 = st.columns(3)
    c1.metric("FEAT NRMSE (numeric)", metrics.card_text(fo["NRMSE"]), help=NRMSE_HELP)
    c2.metric("FEAT accuracy (categorical)", metrics.card_text(fo["accuracy"]),
              help=metrics.METRIC_HELP["cell accuracy"])
    c3.metric("FEAT time", metrics.card_text(fo["seconds"], "s"), help=metrics.METRIC_HELP["time"])
    st.markdown("#### Overall (mean over columns)")
    for said in res["failed"]:
        st.warning(said, icon=":material/warning:")
    st.dataframe(numbers.style(overall), width="stretch", placeholder="")
    heading = f"{int(mask.sum()):,} of {mask.size:,} cells hidden ({mask.mean():.0%}, {res['mix']})"
    report = [("The run", [heading, *res.get("settings", []), "methods: " + ", ".join(res["filled"]), *res["failed"]]),
              ("Overall (mean over columns)", overall.reset_index())]
    numeric = scores.loc[scores["metric"] == "NRMSE", "column"].unique() if "mean/mode" in res["filled"] else []
    hidden = {c: mask[:, res["truth"].columns.get_loc(c)] for c in numeric}
    filled_by = res["filled"]
    why = {c: held_values(res["masked"][c], filled_by["FEAT"][c][hidden[c]], filled_by["mean/mode"][c][hidden[c]])
           for c in numeric}
    worse = worse_than(scores, "mean/mode", why=why)
    if worse:          # the simplest fill beats FEAT on these columns: say so, by name
        said = (f"FEAT fills {'one column' if len(worse) == 1 else f'{len(worse)} columns'} worse than **mean/mode** "
                f"(each column's average, or its most frequent category) in this run: {', '.join(worse)}. There the "
                "simplest fill scores better. Scores on a few hidden cells vary from run to run (try another seed): "
                "**Per-column scores** gives how many cells were hidden.")
        st.info(said, icon=":material/info:")
        report.append(("Where FEAT does worse than mean/mode", [said.replace("**", "")]))
    for metric in ("NRMSE", "accuracy"):
        if (scores["metric"] == metric).any():
            bars = figures.imputation_bars(scores, metric)
            st.plotly_chart(bars, width="stretch", key=f"imp_bars_{metric}")
            report.append((metric, bars))
    wide = scores.pivot_table(index=["column", "metric", "hidden"], columns="method", values="value", sort=False)
    report.append(("Per-column scores", wide.reset_index()))
    with st.expander("Per-column scores"):
        st.dataframe(numbers.style(wide), width="stretch", placeholder="")
        state.download_button(st, "Download per-column scores (CSV)", downloads.csv_bytes(scores), "masking_scores.csv",
                              "text/csv", "dl_mask_scores")

    st.markdown("#### Before and after, on a sample of rows")
    truth, masked = res["truth"], res["masked"]
    hidden = pd.DataFrame(mask, index=truth.index, columns=truth.columns)
    sample_idx = hidden.index[hidden.any(axis=1)][:10]
    method = st.selectbox("Show the cells filled by", list(res["filled"]), key="mask_show_method")
    # the three tables write each column alike, as the file writes its values
    before, written = downloads.as_written(ds["df"], truth.loc[sample_idx], hidden & False, numbers.formats_for(truth))
    given = downloads.as_written(ds["df"], masked.loc[sample_idx], hidden, {})[0]
    after = downloads.as_written(ds["df"], res["filled"][method].loc[sample_idx], hidden, {})[0]
    st.caption("Before: the original values, hidden cells highlighted")
    st.dataframe(downloads.highlight(before, hidden.loc[sample_idx], formats=written), width="stretch", placeholder="")
    st.caption("Hidden: what the imputers were given")
    st.dataframe(numbers.style(given, written), width="stretch", placeholder="")
    st.caption(f"After: filled by {method}, filled cells highlighted")
    st.dataframe(downloads.highlight(after, hidden.loc[sample_idx], formats=written), width="stretch", placeholder="")
    mask_matrix = figures.missingness_matrix(masked.isna(), n_rows=200, seed=0)
    st.plotly_chart(mask_matrix.update_layout(title="The mask (dark = hidden)"), width="stretch", key="mask_matrix")
    state.report_button(f"FEAT masking demo on {ds['name']}", report, "masking_report.html", "dl_mask_report")
