"""Relations: FEAT's relation matrix next to Pearson and Spearman, a dependency graph and
each feature's relation to the target."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import downloads, engine, figures, state
from app import io as aio

st.title("Relations")
ds = state.require_dataset()
if ds is None:
    st.stop()
table, _ = state.model_table()
cols = list(table.columns)
st.caption("FEAT's relation matrix aggregates the model's attention across the columns of each row "
           "(over layers, heads and rows). Pearson and Spearman are shown next to it. All three heatmaps use "
           "one hierarchical-clustering order.")

NONE = "(no target)"
options = [NONE] + cols
default = ds.get("target") if ds.get("target") in cols else NONE
with st.form("relations_form"):
    f1, f2, f3, f4 = st.columns([2, 1, 1, 1])
    target = f1.selectbox("Target (optional)", options, index=options.index(default), key="rel_target")
    seed = f2.number_input("Seed", 0, 2**31 - 1, 0, 1, key="rel_seed")
    n_est = f3.number_input("FEAT ensemble members", 1, 16, 2, 1, key="rel_nest")
    max_rows = f4.number_input("Rows used (max)", 1, 1_000_000, min(2000, len(table)), 100, key="rel_rows",
                               help="A random sample of rows; relations settle with a few thousand rows.")
    go = st.form_submit_button("Compute relations", type="primary", key="rel_run")

if go:
    tgt = None if target == NONE else target
    try:
        if len(cols) < 2:
            raise aio.TableError("relations need at least two columns in use.", "In Data, stop ignoring some columns.")
        sub = table if len(table) <= max_rows else table.sample(int(max_rows), random_state=int(seed))
        with st.status(f"FEAT relations over {len(sub):,} rows x {len(cols)} columns ...", expanded=True) as status:
            bar = st.progress(0.0, text="starting")
            out = engine.relations(sub, tgt, state.run_params(n_estimators=int(n_est), random_state=int(seed),
                                                              max_rows=len(sub)), state.progress_callback(bar))
            status.update(label=f"Done in {out.seconds:.1f} s", state="complete", expanded=False)
    except (aio.TableError, engine.EngineError) as e:
        state.show_error(e)
    else:
        mats = out.value
        order = figures.cluster_order(mats["FEAT"])
        state.store_result("relations", {"mats": mats, "order": order, "target": tgt, "seconds": out.seconds,
                                         "warnings": out.warnings, "n_rows": len(sub)})

res = state.result("relations")
if res is None:
    st.stop()
st.divider()
for w in res["warnings"]:
    st.warning(f"FEAT: {w}", icon=":material/warning:")
mats, order, tgt = res["mats"], res["order"], res["target"]
part = st.radio("FEAT matrix part", list(figures.PARTS), format_func=figures.PARTS.get, horizontal=True,
                key="rel_part", help="A[i, j]: how much column i draws on column j. Aᵀ flips the direction; "
                                     "A − Aᵀ keeps only the asymmetric part (red: i draws on j more than j on i).")
a = mats["FEAT"]
c1, c2, c3 = st.columns(3)
c1.plotly_chart(figures.heatmap(figures.asymmetric_part(a, part), order, f"FEAT: {figures.PARTS[part]}",
                                diverging=part == "A-AT", blank_diagonal=True), width="stretch", key="hm_feat")
c2.plotly_chart(figures.heatmap(mats["Pearson"], order, "Pearson r", diverging=True), width="stretch", key="hm_pearson")
c3.plotly_chart(figures.heatmap(mats["Spearman"], order, "Spearman ρ", diverging=True), width="stretch", key="hm_spearman")

st.markdown("#### Dependency graph")
n_off = len(a) * (len(a) - 1)
g1, g2 = st.columns([1, 3])
how = g1.radio("Edges", ["top-k", "threshold"], key="rel_edges_how")
if how == "top-k":
    k = g1.slider("Strongest k relations", 1, max(1, min(n_off, 100)), min(max(1, 2 * len(a)), min(n_off, 100)),
                  key="rel_topk")
    edges = figures.graph_edges(a, top_k=k)
else:
    thr = g1.slider("Threshold (share of the strongest)", 0.0, 1.0, 0.5, 0.05, key="rel_thr")
    edges = figures.graph_edges(a, threshold=thr)
g1.caption("Arrow i → j: column i draws on column j. Node colour: relation to the target; the target is the star.")
fig, graph = figures.dependency_graph(a, edges, tgt)
g2.plotly_chart(fig, width="stretch", key="rel_graph")

if tgt is not None:
    st.markdown("#### Each feature's relation to the target")
    rel = pd.DataFrame({m: (figures.target_relation(mats[m], tgt) if m == "FEAT" else mats[m][tgt].drop(tgt))
                        for m in ("FEAT", "Pearson", "Spearman")})
    st.plotly_chart(figures.target_bars(rel, str(tgt)), width="stretch", key="rel_bars")

st.markdown("#### Export")
e1, e2, e3, e4 = st.columns(4)
for col, name in zip((e1, e2, e3), ("FEAT", "Pearson", "Spearman")):
    m = mats[name].loc[order, order]
    col.download_button(f"{name} matrix (CSV)", downloads.csv_bytes(m, index=True), f"relations_{name.lower()}.csv",
                        "text/csv", key=f"dl_rel_{name}")
long = pd.concat([mats[n].loc[order, order].rename_axis(index="row", columns="column").stack().rename("value")
                  .reset_index().assign(method=n) for n in ("FEAT", "Pearson", "Spearman")], ignore_index=True)
e4.download_button("All three, long format (CSV)", downloads.csv_bytes(long), "relations_all.csv", "text/csv",
                   key="dl_rel_all")
st.caption(f"Computed on {res['n_rows']:,} rows in {res['seconds']:.1f} s.")
