"""Relations: FEAT's attention, dependence and edge matrices next to mutual information, Pearson and
Spearman, a dependency graph and each feature's relation to the target."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import downloads, engine, figures, notes, state
from app import io as aio

ds, table = state.open_page("Relations")
cols = list(table.columns)
st.caption("How strongly the columns of the table relate, six ways, side by side. **FEAT dependence**: how much "
           "worse FEAT predicts column i when column j is hidden from it (0: no loss). **FEAT edges**: how likely "
           "columns i and j are directly linked rather than through other columns. **FEAT attention**: where the "
           "model looks when it reads column i; it shows how FEAT reads the table more than how the columns "
           "relate. **Mutual information**, **Pearson** and **Spearman** are the classical measures, for "
           "comparison. Every heatmap lists the columns in one order, from a clustering of one matrix (FEAT edges "
           "unless you choose another under **Order the columns by**): the pairs it relates most strongly stand next "
           "to each other. On "
           "tables whose true links are known, FEAT edges found them most often, then mutual information.")
FEAT_MATS = {"FEAT attention": "FEAT attention", "FEAT dependence": "FEAT dependence (hiding a column)",
             "FEAT edges": "FEAT edges (chance of a direct link)"}
DIRECTED = ("FEAT attention", "FEAT dependence")        # the edge matrix is symmetric: its graph has no arrowheads
CORRELATIONS = ("Pearson", "Spearman")        # signed: their target column is shown as it is

NONE = "(no target)"
READINGS = "FEAT readings (averaged)"      # the box of how many times FEAT reads the table, and its run setting
options = [NONE] + cols
default = ds.get("target") if ds.get("target") in cols else NONE
with st.form("relations_form"):
    f1, f2, f3, f4 = st.columns([2, 1, 1, 1])
    target = f1.selectbox("Target (optional)", options, index=options.index(default), key="rel_target")
    seed = f2.number_input("Seed", 0, 2**31 - 1, 0, 1, key="rel_seed")
    n_est = f3.number_input(READINGS, 1, 16, 2, 1, key="rel_nest",
                            help="How many times FEAT reads the table for each of its matrices, each time with the "
                                 "rows and columns in another order, and averages what it finds: more readings are "
                                 "steadier and slower.")
    max_rows = f4.number_input("Rows used (max)", 1, 1_000_000, min(engine.RELATION_ROWS, len(table)), 100,
                               key="rel_rows", help=f"A random sample of rows. {engine.RELATION_ROWS:,} is what FEAT's "
                                                    "relation measures read by default, and what their accuracy was "
                                                    "measured with; more rows take longer.")
    if len(cols) > engine.RELATION_COLUMNS:        # a wide table: the analyst picks which columns to relate
        cols = st.multiselect(f"Columns to relate (at most {engine.RELATION_COLUMNS} of the {len(cols):,} in use)",
                              cols, max_selections=engine.RELATION_COLUMNS, key="rel_columns",
                              placeholder=f"Pick up to {engine.RELATION_COLUMNS} columns to relate",
                              help="Every pair of columns is measured, so the time grows with the square of their "
                                   "number, and each heatmap labels every column.")
    go = st.form_submit_button("Compute relations", type="primary", key="rel_run")

run_area, result_area = state.run_and_result_areas(go)
if go:
    tgt = None if target == NONE else target
    try:
        cols = cols + [tgt] if tgt is not None and tgt not in cols else cols
        if len(cols) < 2:
            raise aio.TableError("relations need at least two columns in use.",
                                 "Pick the columns to relate above." if len(table.columns) > engine.RELATION_COLUMNS
                                 else "In Data, stop ignoring some columns.")
        # with a target, the rows whose target is known: FEAT's matrices read no other, and all six read the same rows
        pool = table[cols] if tgt is None else table.loc[table[tgt].notna(), cols]
        sub = pool if len(pool) <= max_rows else pool.sample(int(max_rows), random_state=int(seed))
        with run_area.status(f"FEAT relations over {len(sub):,} rows x {len(cols)} columns ...",
                             expanded=True) as status:
            state.cancel_button("relations")
            bar = st.progress(0.0, text="preparing: FEAT reads the table once per matrix")
            params = state.run_params(n_estimators=int(n_est), random_state=int(seed), max_rows=len(sub),
                                      edge_head=state.model_info()["edge_head"])
            out = engine.relations(sub, tgt, params, state.progress_callback(bar))
            status.update(label=f"Done in {state.seconds_text(out.seconds)}", state="complete", expanded=False)
    except (aio.TableError, engine.EngineError) as e:
        state.show_error(e, run_area)
    else:
        mats = out.value
        state.store_result("relations", {"mats": mats, "target": tgt, "seconds": out.seconds,
                                         "warnings": out.warnings, "n_rows": len(sub), "known": len(pool),
                                         "settings": [f"seed: {int(seed)}", f"{READINGS}: {int(n_est)}"]})

with result_area.container():
    res = state.shown_result("relations")
    mats, tgt = res["mats"], res["target"]
    p1, p2 = st.columns([3, 2])
    part = p1.radio("Part of the FEAT matrices", list(figures.PARTS), format_func=figures.PARTS.get, horizontal=True,
                    key="rel_part", help="A[i, j]: how much column i draws on column j. Aᵀ flips the direction; "
                                         "A − Aᵀ keeps only the asymmetric part (red: i draws on j more than "
                                         "j on i).")
    ORDER_FROM = "FEAT edges"      # the measure that found true links most often (the caption above)
    order_by = p2.selectbox("Order the columns by", list(mats), index=list(mats).index(ORDER_FROM),
                            key="rel_order_by",
                            help="The heatmaps' axes follow a clustering of this matrix (the size of its values, "
                                 "either direction): the columns it relates most strongly stand next to each other.")
    order = figures.cluster_order(mats[order_by])
    pair = figures.strongest_pair(mats[order_by])
    st.caption(f"The axes of every heatmap are in the order of a clustering of **{order_by}**: the columns it relates "
               "most strongly stand next to each other"
               + (f", its strongest pair ({pair[0]} and {pair[1]}) side by side" if pair else "")
               + ". Pairs strong in another matrix can stand apart: order by that matrix to see them together.")
    maps = {"hm_dependence": figures.heatmap(figures.asymmetric_part(mats["FEAT dependence"], part), order,
                                             f"{FEAT_MATS['FEAT dependence']}, {figures.PARTS[part]}",
                                             diverging=part == "A-AT", blank_diagonal=True),
            "hm_edges": figures.heatmap(mats["FEAT edges"], order, FEAT_MATS["FEAT edges"], blank_diagonal=True),
            "hm_feat": figures.heatmap(figures.asymmetric_part(mats["FEAT attention"], part), order,
                                       f"{FEAT_MATS['FEAT attention']}, {figures.PARTS[part]}",
                                       diverging=part == "A-AT", blank_diagonal=True),
            "hm_mi": figures.heatmap(mats["Mutual information"], order, "Mutual information (nats)",
                                     blank_diagonal=True),
            "hm_pearson": figures.heatmap(mats["Pearson"], order, "Pearson correlation r", diverging=True),
            "hm_spearman": figures.heatmap(mats["Spearman"], order, "Spearman rank correlation ρ", diverging=True)}
    per_row = figures.charts_per_row(len(order))
    for col, (key, fig) in zip([c for _ in range(6 // per_row) for c in st.columns(per_row)], maps.items()):
        col.plotly_chart(fig, width="stretch", key=key)
    unordered = [c for c in mats["Pearson"].columns if pd.isna(mats["Pearson"].loc[c, c])]   # no order: no correlation
    blank = (f"Pearson and Spearman leave {notes.columns_text(unordered)} blank: a correlation needs values in an "
             "order, and these are categories without one (any number would follow the alphabetical order of their "
             "names). Mutual information and FEAT's matrices read them.") if unordered else None
    if blank:
        st.caption(blank)
    width = state.model_info()["estimator_args"]["max_features"] or len(order)    # the widest table FEAT learned on
    beside = (f"FEAT dependence predicts each column from the {width} columns most related to it (by mutual "
              f"information), as FEAT reads any table wider than the {width} columns it learned on: the pairs it "
              "did not read show 0.") if len(order) - 1 > width else None
    if beside:
        st.caption(beside)
    known = res.get("known", len(table))             # the rows whose target is known, where one was chosen
    whose = "" if tgt is None or known == len(table) else f" whose {tgt!r} is known"
    rows = f"the {known:,} rows{whose}" if res["n_rows"] >= known else \
        f"a random {res['n_rows']:,} of the {known:,} rows{whose}"
    report = [("The run", [f"{len(order)} columns" + (f", target {tgt!r}" if tgt else "") + f", computed on {rows}",
                           *res.get("settings", []), f"heatmap axes ordered by a clustering of {order_by}",
                           *([blank] if blank else []), *([beside] if beside else []),
                           f"time: {state.seconds_text(res['seconds'])}"])]
    report += [(fig.layout.title.text, fig) for fig in maps.values()]

    st.markdown("#### Dependency graph")
    g1, g2 = st.columns([1, 3])
    source = g1.radio("Graph from", list(FEAT_MATS), index=list(FEAT_MATS).index("FEAT edges"),
                      format_func=FEAT_MATS.get, key="rel_graph_from")
    a = mats[source]
    once = a if source in DIRECTED else a.where(np.triu(np.ones(a.shape, bool), 1), 0.0)   # each undirected pair once
    n_off = len(a) * (len(a) - 1)
    how = g1.radio("Edges", ["top-k", "threshold"], key="rel_edges_how")
    if how == "top-k":
        k = g1.slider("Strongest k relations", 1, max(1, min(n_off, 100)), min(max(1, 2 * len(a)), min(n_off, 100)),
                      key="rel_topk")
        edges = figures.graph_edges(once, top_k=k)
    else:
        thr = g1.slider("Threshold (share of the strongest)", 0.0, 1.0, 0.5, 0.05, key="rel_thr")
        edges = figures.graph_edges(once, threshold=thr)
    g1.caption("Arrow i → j: column i draws on column j (attention: i looks at j; dependence: FEAT predicts i "
               "worse without j). FEAT edges are undirected: a line is a likely direct link, either way. Node colour: "
               "relation to the target; the target is the star.")
    fig, _ = figures.dependency_graph(a, edges, tgt, directed=source in DIRECTED)
    g2.plotly_chart(fig, width="stretch", key="rel_graph")
    report.append((f"Dependency graph from {FEAT_MATS[source]}", fig))

    if tgt is not None:
        st.markdown("#### Each feature's relation to the target")
        rel = pd.DataFrame({m: (mats[m][tgt].drop(tgt) if m in CORRELATIONS else figures.target_relation(mats[m], tgt))
                            for m in mats})
        bars = figures.target_bars(rel, str(tgt))
        st.plotly_chart(bars, width="stretch", key="rel_bars")
        report.append((f"Each feature's relation to {tgt}", bars))

    st.markdown("#### Export")
    st.caption("Each matrix as a CSV table in the heatmaps' column order, or all six in one long table "
               "(row, column, value, method).")
    names = list(mats) + ["all"]
    for start in range(0, len(names), 4):
        for col, name in zip(st.columns(4), names[start:start + 4]):
            if name == "all":
                long = pd.concat([mats[n].loc[order, order].rename_axis(index="row", columns="column").stack()
                                  .rename("value").reset_index().assign(method=n) for n in mats], ignore_index=True)
                state.download_button(col, f"All {len(mats)}, long format (CSV)", downloads.csv_bytes(long),
                                      "relations_all.csv", "text/csv", "dl_rel_all", width="stretch")
                continue
            slug = name.lower().replace(" ", "_")
            state.download_button(col, f"{name} (CSV)", downloads.csv_bytes(mats[name].loc[order, order], index=True),
                                  f"relations_{slug}.csv", "text/csv", f"dl_rel_{slug}", width="stretch")
    st.caption(f"Computed on {rows} in {state.seconds_text(res['seconds'])}.")
    state.report_button(f"FEAT relations in {ds['name']}", report, "relations_report.html", "dl_rel_report")
