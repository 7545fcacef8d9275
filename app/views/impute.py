"""Impute: fill every missing cell of the table with FEAT; highlight and download."""
from __future__ import annotations

from functools import partial

import streamlit as st

from app import downloads, engine, metrics, numbers, state
from app import io as aio
from feat_engine.estimators import COLUMN_MEMBERS

ds, table = state.open_page("Impute")
miss = table.isna()
n_miss = int(miss.to_numpy().sum())
n_incomplete = int(miss.any().sum())
read = engine.impute_rows_read(state.run_params(), len(table), table.shape[1], n_incomplete)
each = "the incomplete column" if n_incomplete == 1 else f"each of the {n_incomplete} incomplete columns"
reads = ("" if n_incomplete == 0 else f" It reads all {len(table):,} rows as examples." if read >= len(table) else
         f" On a table this long it reads {read:,} of the {len(table):,} rows as examples for {each} (a random "
         f"share: its reading budget{'' if n_incomplete == 1 else ', shared by those columns'}); the classical "
         f"model beside it learns from every row.")
st.caption(f"FEAT fills every missing cell of the {table.shape[1]} columns in use and returns observed cells "
           f"unchanged.{reads} Method: {engine.IMPUTE_METHOD}.")
if n_miss == 0:
    st.info("This table has no missing cell in the columns in use. Try the **Masking demo**, which hides cells "
            "on purpose and scores FEAT against the truth.")
    st.page_link("views/masking.py", label="Open the Masking demo", icon=":material/grid_off:")
    st.stop()
st.markdown(f"**{n_miss:,}** missing cells in **{int(miss.any(axis=1).sum()):,}** rows.")

with st.form("impute_form"):
    f1, f2, f3 = st.columns(3)
    seed = f1.number_input("Seed", 0, 2**31 - 1, 0, 1, key="imp_seed")
    n_est = f2.number_input("FEAT readings per column", 1, 16, COLUMN_MEMBERS, 1, key="imp_nest",
                            help="Each incomplete column is predicted from the others by FEAT reading the table, "
                                 "each time with the rows and columns in another order; more readings average more "
                                 "answers per column (steadier, slower).")
    max_ctx = f3.number_input("Max example rows FEAT reads (0 = all)", 0, 10_000_000, 0, 1000, key="imp_maxctx",
                              help="FEAT reads at most this many rows, a random share of them, as the examples it "
                                   "fills each column from; 0 lets it read every row.")
    draw = st.radio("Fill each cell with", [False, True], horizontal=True, key="imp_draw",
                    format_func=lambda d: ("a draw from what FEAT predicts (each column keeps its spread)" if d
                                           else "the most likely value"),
                    help="The most likely value is the best single guess for each cell, but a column filled that "
                         "way loses its spread: a rare category is never chosen, numbers bunch up at the middle. "
                         "Draws keep each column's distribution, as multiple imputation does; another seed gives "
                         "another draw.")
    go = st.form_submit_button("Impute missing cells", type="primary", key="imp_run")

run_area, result_area = state.run_and_result_areas(go)
if go:
    params = state.run_params(n_estimators=int(n_est), random_state=int(seed), max_context=int(max_ctx) or None,
                              sample_posterior=bool(draw))
    try:
        aio.check_features(table)
        aio.check_fits_machine(*table.shape, "this table")
        with run_area.status(f"FEAT imputing {n_miss:,} cells ...", expanded=True) as status:
            state.cancel_button("impute")
            bar = st.progress(0.0, text="preparing: each incomplete column is predicted from the others")
            out = engine.impute(table, params, state.progress_callback(bar))
            status.update(label=f"Done in {state.seconds_text(out.seconds)}", state="complete", expanded=False)
    except (aio.TableError, engine.EngineError) as e:
        state.show_error(e, run_area)
    else:
        state.store_result("impute", {"filled": out.value["filled"], "confidence": out.value["confidence"],
                                      "drawn": bool(draw), "seconds": out.seconds, "warnings": out.warnings,
                                      "mask": miss, "types": dict(state.types()),
                                      "settings": [f"FEAT readings per column: {int(n_est)}", f"seed: {int(seed)}",
                                                   f"max example rows FEAT reads: {int(max_ctx) or 'all'}",
                                                   "filled with " + ("draws from what FEAT predicts" if draw
                                                                     else "the most likely values")]})

with result_area.container():
    res = state.shown_result("impute")
    filled, mask = res["filled"], res["mask"]
    left = int(filled.isna().to_numpy().sum())
    c1, c2, c3 = st.columns(3)
    c1.metric("Cells imputed", metrics.card_text(int(mask.to_numpy().sum()) - left))
    c2.metric("Still missing", metrics.card_text(left))
    c3.metric("Time", metrics.card_text(res["seconds"], "s"))
    if left:
        st.warning(f"{left} cells are still missing (columns FEAT dropped, such as constant or ID columns).")

    st.markdown("#### Imputed cells (highlighted), rows that had a missing value")
    rows = mask.any(axis=1)
    # each column written as its known cells
    known = table if list(table.columns) == list(filled.columns) else filled
    shown, formats = downloads.as_written(ds["df"], filled.loc[rows].head(200), mask, numbers.formats_for(known))
    st.dataframe(downloads.highlight(shown, mask.loc[shown.index], formats=formats), width="stretch", height=320,
                 placeholder="")

    st.markdown("#### How sure FEAT is of each filled cell")
    sure = engine.confidence_table(filled, mask, res["confidence"], res["types"],
                                   downloads.value_writers(ds["df"], filled))
    st.caption("A category cell: how likely FEAT thinks the value filled in is. A number cell: the typical error FEAT "
               "made on known cells of that column that it set aside to check itself, in the column's units: about two "
               "in three of its errors there were smaller.")
    st.dataframe(sure.head(1000), width="stretch", height=280, hide_index=True, placeholder="")

    full = downloads.merge_columns(ds["df"], filled, mask)
    st.caption("The download holds every column of the uploaded table; ignored columns are returned untouched.")
    d1, d2 = st.columns(2)
    stem = str(ds["name"]).rsplit(".", 1)[0].split(" (")[0].replace(" ", "_")
    # the CSVs are written when their button is clicked, not on every rerun of the page
    state.download_button(d1, "Download filled table (CSV)", partial(downloads.csv_bytes, full), f"{stem}_imputed.csv",
                          "text/csv", "dl_imp_csv")
    state.download_button(d1, "Download the filled cells with how sure FEAT is (CSV)",
                          partial(downloads.csv_bytes, sure), f"{stem}_imputed_cells.csv", "text/csv", "dl_imp_sure")
    try:
        state.download_button(d2, "Download filled table (Parquet)", downloads.parquet_bytes(full),
                              f"{stem}_imputed.parquet", "application/octet-stream", "dl_imp_parquet")
    except aio.TableError as e:
        d2.caption(str(e))
    state.report_button(f"FEAT imputation of {ds['name']}",
                        [("The run", [f"{int(mask.to_numpy().sum()) - left:,} empty cells filled, {left:,} still "
                                      f"empty, in {len(filled):,} rows x {filled.shape[1]} columns",
                                      *res.get("settings", []), f"time: {state.seconds_text(res['seconds'])}"]),
                         ("How sure FEAT is of each filled cell", sure), ("The filled table", full)],
                        f"{stem}_imputation_report.html", "dl_imp_report")
