"""Data: upload a table, open one on the server (by path or SQL query) or pick a sample; preview, per-column
summaries with type overrides, empty cells."""
from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from app import figures, metrics, numbers, state
from app import io as aio
from feat_engine.errors import named

st.title("Data")
st.markdown("FEAT predicts a column of your table, fills in its empty cells and shows how its columns relate, "
            "without training on your data.  \n**To start**, pick a sample table below (or upload your own), then "
            "open **Predict**, **Impute** or **Relations** in the sidebar.")

left, right = st.columns(2, gap="large")
with left:
    st.markdown("##### Sample table")
    key = st.selectbox("Sample table (ships with scikit-learn, no download)", list(aio.SAMPLES), key="sample_key")
    if st.button("Use this sample", type="primary", key="use_sample"):
        state.load_sample(key)
with right:
    st.markdown("##### Your file")
    limit_mb = aio.MAX_UPLOAD_MB
    up = st.file_uploader("Upload a table", key="upload")
    # a file over the limit reaches the app (up to SENT_MB), which refuses it in a red box; past SENT_MB the browser
    # refuses it itself ("File must be ... or smaller") and sends nothing
    st.caption(f"CSV, TSV, Parquet or Excel (.xlsx), up to **{limit_mb:,} MB**. "
               "**Larger files: open them by path below.** The encoding (UTF-8, UTF-16, Windows-1252) and the "
               "delimiter are detected; override them here if needed.")
    c1, c2 = st.columns(2)
    delim_names = {"auto": "auto", ",": "comma ,", ";": "semicolon ;", "\t": "tab", "|": "pipe |"}
    delimiter = c1.selectbox("Delimiter (text files)", list(delim_names), format_func=delim_names.get, key="delimiter")
    encoding = c2.selectbox("Encoding (text files)", ["auto", *aio.ENCODINGS], key="encoding")

    st.markdown("##### Open a file on this server")
    path = st.text_input("Path of a CSV or Parquet file, or of a folder of Parquet files", key="server_path",
                         placeholder="data/train.parquet")
    open_clicked = st.button("Open", key="open_path", help="Read the file or folder (any size that fits in memory)")
    query = st.text_area("Or a SQL query over such files (DuckDB)", key="server_sql", height=90,
                         placeholder="SELECT a, b, y FROM 'data/*.parquet' WHERE c > 3")
    query_clicked = st.button("Run query", key="run_sql", help="Only the columns and rows the query selects are read")
    st.caption(f"Read on the server that runs this app, not on your computer; a relative path starts from "
               f"`{os.getcwd()}`. Name files in the query in single quotes.")


def open_on_server(source: str, sql: bool) -> None:
    """Read a path or a query on the server and make the table the dataset; a problem shows as a red box."""
    try:
        with st.spinner("Running the query ..." if sql else f"Reading {source} ..."):
            state.open_on_server(source, sql, delimiter, encoding)
    except Exception as e:  # a TableError, or anything a reader did not foresee: still no traceback
        state.show_error(e if isinstance(e, aio.TableError) else aio.TableError(
            f"{'SQL query' if sql else source}: could not be read ({type(e).__name__}: {str(e)[:200]}).",
            "Check the files, or export the table to Parquet and open that."))
        if state.dataset() is not None:
            st.caption(f"Still showing the previous table, {state.dataset()['name']}.")


if open_clicked:
    open_on_server(path, sql=False)
if query_clicked:
    open_on_server(query, sql=True)

# an upload becomes the dataset once per file and reading options, so a sample picked later stays
attempt = None if up is None else (up.file_id, delimiter, encoding)
if attempt is not None and st.session_state.get("upload_applied") != attempt:
    loaded = None
    try:
        aio.check_upload_size(up.name, up.size, limit_mb)      # before its bytes are read and hashed
        with st.spinner(f"Reading {up.name} ({up.size / 2**20:,.1f} MB) ..."):
            loaded, digest = state.parse_upload(up.getvalue(), up.name, delimiter, encoding, limit_mb)
    except aio.TableError as e:
        state.show_error(e)
    except Exception as e:  # anything a reader did not foresee: still no traceback
        state.show_error(aio.TableError(f"{up.name}: could not be read ({type(e).__name__}: {str(e)[:200]}).",
                                        "Export the table to CSV in UTF-8 and upload that."))
    if loaded is None and state.dataset() is not None:
        st.caption(f"Still showing the previous table, {state.dataset()['name']}.")
    if loaded is not None:
        st.session_state["upload_applied"] = attempt
        state.set_dataset(up.name, loaded.df, f"{digest}:{delimiter}:{encoding}", f"upload, {loaded.fmt}",
                          notes=aio.read_notes(loaded))

ds = state.dataset()
if ds is None:
    st.info("Pick a sample table and press **Use this sample**, upload a file, or open one on this server.")
    st.stop()

changes = state.server_changes()
if changes:      # nothing is read again on its own: the table, its types and results stay as they are
    origin = ds["origin"]
    again = ("run the query (below, under Read) again with **Run query**" if origin["sql"]
             else f"press **Open** again with the path `{origin['source']}`")
    st.warning(f"The files of this table have changed since it was read: {', '.join(changes[:3])}"
               f"{f' and {len(changes) - 3} more' if len(changes) > 3 else ''}. The table in use is the one read "
               f"at {origin['read_at']}. To read the files as they are now, {again}.", icon=":material/update:")

df: pd.DataFrame = ds["df"]
st.subheader(ds["name"])
m1, m2, m3, m4 = st.columns(4)
m1.metric("Rows", metrics.card_text(df.shape[0]))
m2.metric("Columns", metrics.card_text(df.shape[1]))
m4.metric("Memory", metrics.size_text(df.memory_usage(deep=True).sum()))
for n in ds["notes"]:
    st.caption(f"Read: {n}")
too_big = aio.memory_problem(*df.shape, ds["name"])
if too_big is not None:   # the table loads; Predict and Impute refuse to run on all of it
    st.warning(f"{too_big.problem} {too_big.fix}", icon=":material/memory:")

st.markdown("#### Preview")
st.dataframe(numbers.style(df.head(100), numbers.formats_for(df)), width="stretch", height=260, placeholder="")

st.markdown("#### Columns")
st.caption("One row per column: how FEAT reads it, its share of empty cells, how many different values it holds, "
           "and its distribution (a histogram of numbers and dates, the most frequent values of the rest). Change "
           "**use as** to read a column differently, or to leave it out (ignore). Your values are never changed.")
empty = aio.empty_cells(df, state.model_table()[0])     # as FEAT reads the table: "?" in categories is empty too
schema = aio.schema_frame(df, ds["detected"], state.types(), empty)
edited = st.data_editor(
    schema, key=f"schema:{ds['digest']}", hide_index=True, width="stretch",
    disabled=[c for c in schema.columns if c != "use as"],
    column_config={
        "use as": st.column_config.SelectboxColumn("use as", options=list(aio.TYPES), required=True,
                                                   help="How FEAT reads the column"),
        "detected": st.column_config.TextColumn("detected", help="The type FEAT chose from the values"),
        "why": st.column_config.TextColumn("why", help="What in the values decided the detected type"),
        "missing": st.column_config.ProgressColumn("empty cells", format="percent", min_value=0.0, max_value=1.0,
                                                   help="Share of the column's cells that are empty"),
        "distinct": st.column_config.NumberColumn("distinct values", format="localized"),
        "distribution": st.column_config.BarChartColumn(
            "distribution", help="Numbers and dates: a histogram of 20 bars from the smallest value to the largest. "
                                 "Other columns: the 10 most frequent values, most frequent first.",
            y_min=0),     # bars from zero: a flat histogram's 28s and 29s must not read as gaps and peaks
        "summary": st.column_config.TextColumn("summary", width="large"),
    },
)
new_types = dict(zip(edited["column"], edited["use as"]))
retyped = new_types != state.types()
if retyped:
    st.session_state[state.TYPES] = new_types
table, notes = state.model_table()
for n in notes:
    st.warning(n, icon=":material/warning:")
ignored = [c for c, t in new_types.items() if t == "ignore"]
st.caption(f"The model sees {table.shape[1]:,} of {df.shape[1]:,} columns"
           + (f"; ignored: {named(ignored, listed=False)}" if ignored else "") + ".")

if retyped:                                 # the table now read under the new types
    empty = aio.empty_cells(df, table)
m3.metric("Empty cells", metrics.card_text(int(empty.to_numpy().sum())))
st.markdown("#### Empty cells")
if not empty.to_numpy().any():
    st.caption("No cell is empty, so there is nothing to fill in. The **Masking demo** empties cells on purpose "
               "to show how well they are filled.")
else:
    st.caption(f"{metrics.card_text(int(empty.to_numpy().sum()))} empty cells in "
               f"{metrics.card_text(int(empty.any(axis=1).sum()))} of {metrics.card_text(len(df))} rows.")
    c1, c2 = st.columns(2) if figures.charts_per_row(empty.shape[1]) == 2 else (st.container(), st.container())
    c1.plotly_chart(figures.missingness_bars(empty), width="stretch", key="miss_bars")
    c2.plotly_chart(figures.missingness_matrix(empty), width="stretch", key="miss_matrix")
