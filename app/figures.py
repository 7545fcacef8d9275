"""Plotly figures for the app, built from plain DataFrames (no Streamlit, no model)."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scipy.cluster.hierarchy import leaves_list, linkage
from scipy.spatial.distance import squareform

from app.numbers import column_format, count_text, format_value

PARTS = {"A": "A (as computed)", "AT": "Aᵀ (transpose)", "A-AT": "A − Aᵀ (asymmetric part)"}
FEAT_COLOR, DEPENDENCE_COLOR, EDGES_COLOR, MI_COLOR, PEARSON_COLOR, SPEARMAN_COLOR = (
    "#2a6f97", "#6a4c93", "#1b998b", "#d4a017", "#e76f51", "#8ab17d")
METHOD_COLORS = {"FEAT": FEAT_COLOR, "FEAT attention": FEAT_COLOR, "FEAT dependence": DEPENDENCE_COLOR,
                 "FEAT edges": EDGES_COLOR,
                 "Mutual information": MI_COLOR,
                 "Pearson": PEARSON_COLOR, "Spearman": SPEARMAN_COLOR}


def standalone(fig: go.Figure) -> go.Figure:
    """A copy of fig that lays itself out as on the page, for a page without Streamlit's front end (a report):
    in the app the figures carry Streamlit's template, whose axes leave the room for their labels to the front
    end; here every axis makes room for its tick labels and title (Plotly's `automargin`), so none is cut."""
    return go.Figure(fig).update_xaxes(automargin=True).update_yaxes(automargin=True)


# Characters of one line of text that fit a chart half the page wide at a 1,280-px window (the page beside the
# sidebar is about 820 px there, a half-width chart 402 px), measured in Chromium on Streamlit's theme: a title at
# its 16 px font takes about 7.2 px a character (54 to a line), less room for wide letters; an x-axis title at
# 14 px about 6 px a character, centred under the plot, which labels of bars beside it can narrow to 240 px.
TITLE_CHARS = 46
AXIS_TITLE_CHARS = 36
LINE_PX = 20          # the height one more line of a title takes
CURVE_POINTS = 1_000  # vertices a ROC or precision-recall curve keeps at most: about one per pixel of a chart
SCATTER_POINTS = 5_000   # rows the predicted-vs-actual chart draws at most, a fixed random sample beyond
# ... and of an option in a selectbox a quarter of the page wide (a form of four columns): 151 px of 14 px text,
# about 5.9 px a character (25 to a line), less room for wide letters; a longer option is cut, not wrapped
OPTION_CHARS = 22


def wrap(text: str, width: int = TITLE_CHARS) -> str:
    """`text` in lines of at most `width` characters (Plotly's <br>): broken after the last colon, else comma, else
    before the last parenthesis that leaves a first line short enough, else between words (a word longer than a
    line is cut short, ending in …)."""
    if len(text) <= width:
        return text
    for sep, keep in ((": ", 1), (", ", 1), (" (", 0)):
        at = text.rfind(sep, 0, width + 1)
        if at > 0:
            return text[:at + keep] + "<br>" + wrap(text[at + len(sep) - (1 - keep):], width)
    lines: list[str] = []
    for word in text.split(" "):
        word = word if len(word) <= width else word[:width - 1] + "…"
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def lines_of(text: str) -> int:
    """Lines of a Plotly text (its <br>s plus one)."""
    return text.count("<br>") + 1


HALF_CHART_PX = 402   # a chart half the page wide at a 1,280-px window


def axis_chars(labels) -> int:
    """Characters of an x-axis title line under horizontal bars labelled `labels` in a half-width chart: the title
    is centred under the plot, which the labels narrow (12 px tick labels and the 14 px title, about 6 px a
    character each); AXIS_TITLE_CHARS at most."""
    longest = max((len(str(t)) for t in labels), default=0)
    return int(max(16, min(AXIS_TITLE_CHARS, (HALF_CHART_PX - 30 - 6 * longest) // 6)))


def _cell_text(v, fmt=None) -> str:
    """A cell's value as a bar's label shows it: numbers as their column's kind writes them (`fmt`, a
    `numbers.column_format`; without one, as a number of unknown kind), text to 24 characters."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return "empty"
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return fmt(v) if fmt is not None else format_value(float(v))
    return str(v)[:24]


# --------------------------------------------------------------------------- relations

def cluster_order(m: pd.DataFrame) -> list:
    """Labels of a square matrix in hierarchical-clustering order (average linkage on 1 - the symmetrised |m|
    scaled to [0, 1], leaves in optimal order: neighbours as alike as the tree allows); one order for all heatmaps.
    The strongest pair (`strongest_pair`) merges first, so it always stands side by side; a column strongly related
    to two others can stand next to one of them only."""
    labels = list(m.index)
    if len(labels) <= 2:
        return labels
    a = np.abs(np.nan_to_num(m.to_numpy(dtype=float)))
    s = (a + a.T) / 2
    np.fill_diagonal(s, 0.0)
    top = s.max()
    s = s / top if top > 0 else s
    d = 1.0 - s
    np.fill_diagonal(d, 0.0)
    z = linkage(squareform(d, checks=False), method="average", optimal_ordering=True)
    return [labels[i] for i in leaves_list(z)]


def strongest_pair(m: pd.DataFrame) -> tuple | None:
    """The two labels of a square matrix with the largest symmetrised |m| off the diagonal (None below two)."""
    if len(m) < 2:
        return None
    a = np.abs(np.nan_to_num(m.to_numpy(dtype=float)))
    s = (a + a.T) / 2
    np.fill_diagonal(s, -1.0)
    i, j = np.unravel_index(int(np.argmax(s)), s.shape)
    return m.index[min(i, j)], m.index[max(i, j)]


def asymmetric_part(a: pd.DataFrame, part: str) -> pd.DataFrame:
    """A, its transpose, or A − Aᵀ, with the same labels."""
    if part == "A":
        return a
    if part == "AT":
        return a.T.loc[a.index, a.columns]
    if part == "A-AT":
        return a - a.T.loc[a.index, a.columns]
    raise ValueError(f"unknown part {part!r}; one of {list(PARTS)}")


def heatmap(m: pd.DataFrame, order: list | None = None, title: str = "", diverging: bool = False,
            blank_diagonal: bool = False) -> go.Figure:
    """A square matrix as a heatmap in `order`, tall enough to label every column (`heatmap_height`, `every_label`);
    `blank_diagonal` leaves the diagonal empty (FEAT's is zero by construction and would stretch the colour
    scale)."""
    order = list(m.index) if order is None else [o for o in order if o in m.index]
    m = m.loc[order, order]
    z = m.to_numpy(dtype=float).copy()
    if blank_diagonal:
        np.fill_diagonal(z, np.nan)
    kw = {}
    if diverging:
        lim = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
        kw = dict(colorscale="RdBu", zmid=0.0, zmin=-lim, zmax=lim, reversescale=True)
    else:
        kw = dict(colorscale="Viridis")
    labels = [str(c) for c in order]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, hovertemplate="row %{y}<br>column %{x}<br>%{z:.3f}<extra></extra>", **kw))
    every = every_label(labels)
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=heatmap_height(len(labels)),
                      margin=dict(l=10, r=10, t=50, b=10))
    fig.update_yaxes(autorange="reversed", **every)
    fig.update_xaxes(tickangle=-60, **every)
    return fig


LABEL_CHARS = 18          # characters an axis label shows at most (`every_label`)


def every_label(labels: list[str]) -> dict:
    """Axis settings that label every one of `labels` (Plotly's own ticks skip some past a few dozen), each cut to
    LABEL_CHARS characters, in a smaller font past 20. A label is cut at its end, or in its middle where cutting the
    ends would write two labels alike ("total_amount_2019_q1" and "..._q2" as "total_amount_2019…")."""
    text = [t if len(t) <= LABEL_CHARS else t[:LABEL_CHARS - 1] + "…" for t in labels]
    if len(set(text)) < len(set(labels)):
        head = LABEL_CHARS // 2
        text = [t if len(t) <= LABEL_CHARS else t[:head] + "…" + t[head + 1 - LABEL_CHARS:] for t in labels]
    return dict(tickmode="array", tickvals=labels, ticktext=text, tickfont=dict(size=11 if len(labels) <= 20 else 9),
                type="category")


HALF_WIDTH_LABELS = 20    # columns a chart half the page wide labels at 16 px each; more take the page's width


def charts_per_row(n: int) -> int:
    """Charts with a label per column of n side by side: two, or one where half the page would crowd the x axis'
    labels (RandHIE's 44 columns overlapped at 7 px a label)."""
    return 2 if n <= HALF_WIDTH_LABELS else 1


def heatmap_height(n: int) -> int:
    """Pixels of a heatmap of n columns: at least 16 per label (every label shown), and room for the titles."""
    return max(440, 16 * n + 220)


def graph_edges(a: pd.DataFrame, top_k: int | None = None, threshold: float | None = None) -> list[tuple]:
    """Directed edges (row label, column label, weight) from the off-diagonal of `a`.

    `top_k`: the k heaviest; `threshold` (0..1): weights >= threshold x the largest weight.
    Only positive weights make edges."""
    v = a.to_numpy(dtype=float).copy()
    np.fill_diagonal(v, np.nan)
    r, c = np.where(np.isfinite(v) & (v > 0))
    w = v[r, c]
    order = np.argsort(-w, kind="stable")
    r, c, w = r[order], c[order], w[order]
    if threshold is not None and len(w):
        keep = w >= threshold * w[0]
        r, c, w = r[keep], c[keep], w[keep]
    if top_k is not None:
        r, c, w = r[:top_k], c[:top_k], w[:top_k]
    return [(a.index[i], a.columns[j], float(x)) for i, j, x in zip(r, c, w)]


def target_relation(a: pd.DataFrame, target) -> pd.Series:
    """How strongly each column relates to the target in `a`: mean of both directions of |a|."""
    if target is None or target not in a.index:
        return pd.Series(np.nan, index=a.index)
    s = (a.loc[target].abs() + a[target].abs()) / 2
    return s.drop(target)


# Least distance between two node centres in layout units. The graph's axes span [-GRAPH_RANGE,
# GRAPH_RANGE]; at the default 640 px height the y axis draws about 245 px a unit, so 0.15 is about
# 37 px, more than the star's and a node's radii together (12 + 8 px) and room for a label above each.
NODE_GAP = 0.15
ISOLATED_BAND = 0.3   # height of the square each row of nodes without an edge takes, at its bottom
GRAPH_RANGE = 1.2


def _distances(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise differences (n, n, 2) and distances (n, n, infinite on the diagonal) of n points."""
    diff = p[:, None, :] - p[None, :, :]
    dist = np.linalg.norm(diff, axis=-1)
    np.fill_diagonal(dist, np.inf)
    return diff, dist


def min_distance(pos: dict) -> float:
    """The least distance between two positions of a layout (inf for fewer than two)."""
    p = np.array(list(pos.values()), dtype=float).reshape(-1, 2)
    return float(_distances(p)[1].min()) if len(p) > 1 else float("inf")


def graph_layout(g: nx.Graph, seed: int = 0, gap: float = NODE_GAP, rounds: int = 500) -> dict:
    """Node positions in [-1, 1]²: networkx's spring layout (edge weights pull), rescaled to the square. Where the
    graph falls apart (columns without an edge, or groups linked only among themselves), each group gets a cell of
    its own, laid out and rescaled within it, and the columns without an edge stand in rows along the bottom
    (ISOLATED_BAND): a spring layout of the whole would throw them to the rim and squeeze the groups into the
    middle. Then every two nodes closer than `gap` are pushed apart inside the square until none are. With too many
    nodes for that gap in the square, the gap shrinks to what it holds."""
    nodes = list(g)
    if len(nodes) < 2:
        return {n: np.zeros(2) for n in nodes}
    gap = min(gap, 1.5 / np.sqrt(len(nodes)))
    u = g.to_undirected()
    alone = [n for n in nodes if u.degree(n) == 0]
    groups = sorted((sorted(c, key=nodes.index) for c in nx.connected_components(u.subgraph(
        [n for n in nodes if u.degree(n) > 0]))), key=len, reverse=True)
    if len(groups) + bool(alone) <= 1:
        pos = nx.spring_layout(u, seed=seed, weight="weight")
        p = nx.rescale_layout(np.array([pos[n] for n in nodes], dtype=float))
    else:
        per_row = max(1, int(2.0 / gap) - 1)
        n_rows = -(-len(alone) // per_row)
        band = min(1.0, ISOLATED_BAND * n_rows) if groups else 2.0      # the bottom of the square the rows take
        cols = int(np.ceil(np.sqrt(len(groups))))
        height = (2.0 - band) / max(1, -(-len(groups) // cols))
        at = []
        for i, group in enumerate(groups):               # cell i of a grid over the square above the rows
            pos = nx.spring_layout(u.subgraph(group), seed=seed, weight="weight")
            cell = nx.rescale_layout(np.array([pos[n] for n in group], dtype=float))
            centre = np.array([-1.0 + (i % cols + 0.5) * 2.0 / cols, 1.0 - (i // cols + 0.5) * height])
            at.append(centre + 0.4 * cell * np.array([2.0 / cols, height]))
        rows = [alone[r * per_row:(r + 1) * per_row] for r in range(n_rows)]
        at += [np.array([(x, -1.0 + (r + 0.5) * band / n_rows) for x in np.linspace(-1.0, 1.0, len(row) + 2)[1:-1]])
               for r, row in enumerate(rows)]
        nodes, p = [n for grp in groups for n in grp] + alone, np.vstack(at)
    order = np.arange(len(nodes))
    tie = np.sign(order[:, None] - order[None, :])[..., None] * np.array([1.0, 0.0])  # coincident: apart along x
    for _ in range(rounds):
        diff, dist = _distances(p)
        if dist.min() >= gap:
            break
        unit = np.where(dist[..., None] > 0, diff / np.where(dist > 0, dist, 1.0)[..., None], tie)
        push = np.where(dist < gap, 1.05 * gap - dist, 0.0)  # a little past the gap, so that it settles
        p = np.clip(p + 0.5 * (push[..., None] * unit).sum(axis=1), -1.0, 1.0)
    return dict(zip(nodes, p))


def dependency_graph(a: pd.DataFrame, edges: list[tuple], target=None, seed: int = 0,
                     height: int = 640, direction_note: str = "", directed: bool = True) -> tuple[go.Figure, nx.DiGraph]:
    """All columns laid out by `graph_layout` (no two nodes overlap), edges drawn as Plotly
    arrows (width by weight; plain lines when not `directed`), nodes coloured by their relation to the
    target (the target is a star), each node's label above it on a white ground, drawn over the edges."""
    g = nx.DiGraph()
    g.add_nodes_from(a.index)
    for s, t, w in edges:
        g.add_edge(s, t, weight=w)
    pos = graph_layout(g, seed)
    rel = target_relation(a, target)
    wmax = max([w for _, _, w in edges], default=1.0) or 1.0
    fig = go.Figure()
    # edges: a line trace for hover-less drawing, annotations for the arrowheads
    ex, ey = [], []
    for s, t, w in edges:
        (x0, y0), (x1, y1) = pos[s], pos[t]
        ex += [x0, x1, None]
        ey += [y0, y1, None]
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=2 if directed else 0, arrowsize=1.2, standoff=9,
                           arrowwidth=0.6 + 3.0 * w / wmax, arrowcolor="rgba(80,80,80,0.55)", text="")
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(width=0.5, color="rgba(0,0,0,0)"),
                             hoverinfo="skip", showlegend=False, name="edges"))
    nodes = [n for n in g.nodes if n != target]
    vals = [float(rel.get(n, np.nan)) for n in nodes]
    has_rel = np.isfinite(vals).any() if vals else False
    fig.add_trace(go.Scatter(
        x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers", text=[str(n) for n in nodes],
        marker=dict(size=16, color=vals if has_rel else "#9aa5b1", colorscale="YlOrRd",
                    showscale=bool(has_rel), colorbar=dict(title="to target") if has_rel else None,
                    line=dict(width=1, color="#333")),
        hovertemplate="%{text}<br>relation to target %{marker.color:.3f}<extra></extra>" if has_rel else "%{text}<extra></extra>",
        name="columns", showlegend=False))
    if target is not None and target in g:
        fig.add_trace(go.Scatter(x=[pos[target][0]], y=[pos[target][1]], mode="markers", text=[str(target)],
                                 marker=dict(size=24, symbol="star", color="#1d3557"),
                                 name="target", hovertemplate="target %{text}<extra></extra>", showlegend=False))
    for n in g.nodes:        # labels last, on a white ground above the node: over the edges, never under a node
        fig.add_annotation(x=pos[n][0], y=pos[n][1], text=f"<b>{n}</b>" if n == target else str(n), showarrow=False,
                           yshift=16 if n == target else 13, font=dict(size=10, color="#111"),
                           bgcolor="rgba(255,255,255,0.85)", borderpad=1, name="label")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), plot_bgcolor="white",
                      title=f"{len(edges)} strongest relations" + (f" ({direction_note})" if direction_note else ""))
    fig.update_xaxes(visible=False, range=[-GRAPH_RANGE, GRAPH_RANGE])
    fig.update_yaxes(visible=False, range=[-GRAPH_RANGE, GRAPH_RANGE])
    return fig, g


def target_bars(rel: pd.DataFrame, target: str) -> go.Figure:
    """One panel per method (columns of `rel`), each on its own axis with its own values (correlations keep their
    sign), so that no method is squeezed into another's range; the features in one order, those the methods
    rank highest on average first."""
    from plotly.subplots import make_subplots

    order = list(rel.abs().rank(ascending=False).mean(axis=1).sort_values(kind="stable").index) if len(rel) else []
    methods = list(rel.columns)
    fig = make_subplots(rows=max(1, len(methods)), cols=1, shared_xaxes=True, vertical_spacing=0.35 / max(1, len(methods)),
                        subplot_titles=methods)
    for i, m in enumerate(methods, 1):
        fig.add_trace(go.Bar(x=[str(f) for f in order], y=rel.loc[order, m].astype(float), name=m,
                             marker_color=METHOD_COLORS.get(m),
                             hovertemplate="%{x}<br>" + m + " %{y:.3f}<extra></extra>"), row=i, col=1)
    fig.update_layout(height=150 * max(1, len(methods)) + 160, margin=dict(l=10, r=10, t=70, b=10), showlegend=False,
                      title=f"Relation of each feature to {target!r}: each method on its own scale")
    fig.update_xaxes(tickangle=-60)
    return fig


# --------------------------------------------------------------------------- data view

def missingness_bars(empty: pd.DataFrame) -> go.Figure:
    """The share of empty cells of each column, from a table's empty cells (bool: `app.io.empty_cells`)."""
    share = empty.mean()
    fig = go.Figure(go.Bar(x=[str(c) for c in empty.columns], y=share.to_numpy(), marker_color="#e76f51",
                           customdata=empty.sum().to_numpy(),
                           hovertemplate="%{x}<br>%{y:.1%} empty (%{customdata} cells)<extra></extra>"))
    fig.update_layout(title=wrap("Share of empty cells in each column"), height=320, margin=dict(l=10, r=10, t=40, b=10),
                      yaxis=dict(tickformat=".0%", range=[0, max(0.05, float(share.max()) * 1.1)]))
    fig.update_xaxes(tickangle=-60, **every_label([str(c) for c in empty.columns]))
    return fig


def missingness_matrix(empty: pd.DataFrame, n_rows: int = 200, seed: int = 0) -> go.Figure:
    """Empty cells (dark; `empty` is bool, as `app.io.empty_cells` gives) of every row, or of a random sample of
    `n_rows` rows of a longer table, in table order."""
    sub = empty if len(empty) <= n_rows else empty.sample(n_rows, random_state=seed).sort_index()
    z = sub.to_numpy().astype(int)
    fig = go.Figure(go.Heatmap(z=z, x=[str(c) for c in empty.columns], y=[str(i) for i in sub.index],
                               colorscale=[[0, "#edf2f4"], [1, "#1d3557"]], zmin=0, zmax=1, showscale=False,
                               hovertemplate="row %{y}<br>%{x}<br>empty=%{z}<extra></extra>"))
    what = "every row" if len(sub) == len(empty) else f"a random sample of {len(sub):,} of the {len(empty):,} rows"
    title = wrap(f"Where the empty cells are: {what}")
    fig.update_layout(title=title, height=360 + LINE_PX * (lines_of(title) - 1),
                      margin=dict(l=10, r=10, t=40 + LINE_PX * (lines_of(title) - 1), b=10))
    fig.update_yaxes(autorange="reversed", showticklabels=False, title="rows")
    fig.update_xaxes(tickangle=-60, **every_label([str(c) for c in empty.columns]))
    return fig


# --------------------------------------------------------------------------- predict view

def confusion_figure(cm: pd.DataFrame, title: str = "Confusion matrix") -> go.Figure:
    """Counts of rows by true and predicted class, each cell labelled with its count as a whole number with
    thousands separators ("36,637", never Plotly's "36.637k")."""
    counts = [[count_text(v) for v in row] for row in cm.to_numpy().tolist()]
    fig = go.Figure(go.Heatmap(z=cm.to_numpy(), x=list(cm.columns), y=list(cm.index), colorscale="Blues",
                               text=counts, texttemplate="%{text}", showscale=False,
                               hovertemplate="true %{y}<br>predicted %{x}<br>%{text} rows<extra></extra>"))
    fig.update_layout(title=title, height=360, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="predicted", yaxis_title="true")
    fig.update_xaxes(type="category")                     # class names such as "0" and "1" are not numbers
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def pred_vs_actual(y_true, preds: dict[str, np.ndarray], target: str = "target", actual_format=None,
                   predicted_format=None) -> go.Figure:
    """Each method's predictions against the true values, of at most SCATTER_POINTS rows (a fixed random sample, which
    the title names); a point's hover writes the actual value as the target's values are written and the prediction
    at their precision (`numbers.column_format` and `numbers.prediction_format` of `y_true`, unless given)."""
    from app.numbers import prediction_format

    actual_format = actual_format or column_format(pd.Series(np.asarray(y_true)), target)
    predicted_format = predicted_format or prediction_format(pd.Series(np.asarray(y_true)), target)
    y_true = np.asarray(y_true, dtype=float)
    n = len(y_true)
    rows = np.sort(np.random.default_rng(0).choice(n, SCATTER_POINTS, replace=False)) if n > SCATTER_POINTS else None
    shown = y_true if rows is None else y_true[rows]
    fig = go.Figure()
    for name, p in preds.items():
        p = np.asarray(p, dtype=float)
        p = p if rows is None else p[rows]
        said = np.array([[actual_format(a), predicted_format(b)] for a, b in zip(shown.tolist(), p.tolist())],
                        dtype=object).reshape(-1, 2)
        fig.add_trace(go.Scatter(x=shown, y=p, mode="markers", name=name, opacity=0.7, customdata=said,
                                 hovertemplate=f"{name}<br>actual %{{customdata[0]}}<br>predicted %{{customdata[1]}}"
                                               "<extra></extra>",
                                 marker=dict(size=6, color=method_color(name))))     # the baseline in orange
    lo = float(np.nanmin([y_true.min()] + [np.nanmin(p) for p in preds.values()]))
    hi = float(np.nanmax([y_true.max()] + [np.nanmax(p) for p in preds.values()]))
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x", line=dict(dash="dash", color="#555")))
    title = "Predicted vs actual" + ("" if rows is None else f" ({SCATTER_POINTS:,} of {n:,} rows)")
    fig.update_layout(title=title, height=420, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title=f"actual {target}", yaxis_title=f"predicted {target}")
    return fig


def attribution_ranking(attr: pd.DataFrame, unit: str) -> go.Figure:
    """Each column's mean absolute attribution over the rows, largest on top."""
    mean = attr.abs().mean().sort_values()
    fig = go.Figure(go.Bar(x=mean.to_numpy(), y=[str(c) for c in mean.index], orientation="h", marker_color=FEAT_COLOR,
                           hovertemplate="%{y}<br>mean change %{x:.3g}<extra></extra>"))
    title, axis = wrap(f"Which columns move the predictions most ({len(attr):,} rows)"), \
        wrap(f"mean change when hidden ({unit})", axis_chars(mean.index))
    extra = LINE_PX * (lines_of(title) + lines_of(axis) - 2)
    fig.update_layout(title=title, height=max(320, 22 * len(mean) + 120) + extra, xaxis_title=axis,
                      margin=dict(l=10, r=10, t=50 + LINE_PX * (lines_of(title) - 1), b=10))
    fig.update_yaxes(type="category")
    return fig


def row_attribution(values: pd.Series, cells: pd.Series, title: str, unit: str,
                    formats: dict | None = None) -> go.Figure:
    """One row's attributions as signed bars, largest magnitude on top, each labelled with its cell's value as its
    column writes it (`formats`, `numbers.column_format` by column label: a year 2017, a price 80.07)."""
    order = values.abs().sort_values().index
    v = values[order].to_numpy(dtype=float)
    formats = formats or {}
    labels = [f"{c} = {_cell_text(cells[c], formats.get(c))}" for c in order]
    fig = go.Figure(go.Bar(x=v, y=labels, orientation="h", marker_color=np.where(v >= 0, "#2a9d8f", "#e76f51"),
                           hovertemplate="%{y}<br>%{x:+.3g}<extra></extra>"))
    title, axis = wrap(title), wrap(f"change the cell made ({unit})", axis_chars(labels))
    extra = LINE_PX * (lines_of(title) + lines_of(axis) - 2)
    fig.update_layout(title=title, height=max(320, 22 * len(v) + 120) + extra, xaxis_title=axis,
                      margin=dict(l=10, r=10, t=50 + LINE_PX * (lines_of(title) - 1), b=10))
    fig.update_yaxes(type="category")
    return fig


# --------------------------------------------------------------------------- masking view

def imputation_bars(scores: pd.DataFrame, metric: str) -> go.Figure:
    """`scores`: columns column, method, metric, value (and hidden, the cells scored). One group per column, a bar
    per method; a bar's hover writes its score to three significant digits and the hidden cells as a count."""
    sub = scores[scores["metric"] == metric]
    fig = go.Figure()
    for m, part in sub.groupby("method", sort=False):
        hidden = part["hidden"].tolist() if "hidden" in part else [None] * len(part)
        on = " on %{customdata[1]} hidden cells" if "hidden" in part else ""
        fig.add_trace(go.Bar(x=part["column"].astype(str), y=part["value"], name=str(m),
                             marker_color=METHOD_COLORS.get(str(m)),
                             customdata=[[format_value(v), count_text(n)] for v, n in zip(part["value"].tolist(), hidden)],
                             hovertemplate=f"%{{x}}<br>{m}: {metric} %{{customdata[0]}}{on}<extra></extra>"))
    better = "lower is better" if metric == "NRMSE" else "higher is better"
    fig.update_layout(barmode="group", height=360, title=f"{metric} per column ({better})",
                      margin=dict(l=10, r=10, t=40, b=10))
    fig.update_xaxes(tickangle=-60, **every_label(list(dict.fromkeys(sub["column"].astype(str)))))
    return fig


# --------------------------------------------------------------------------- predict view: a two-class target

BASELINE_COLOR = "#f28e2b"      # the classical baseline beside FEAT (LightGBM): an orange against FEAT's blue


def method_color(name: str) -> str:
    """A method's colour in the Predict view's figures: its own where it has one (FEAT's blue), else the
    baseline's orange, so that FEAT and the baseline never come out in two similar blues."""
    return METHOD_COLORS.get(name, BASELINE_COLOR)


def _cutoff_dot(fig: go.Figure, name: str, x: float, y: float, cutoff: float) -> None:
    fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=f"{name} at the cut-off {cutoff:g}", showlegend=False,
                             marker=dict(size=11, color=method_color(name), line=dict(width=1.5, color="#222")),
                             hovertemplate=f"{name} at the cut-off {cutoff:g}<br>%{{x:.1%}}, %{{y:.1%}}<extra></extra>"))


def thinned(x: np.ndarray, y: np.ndarray, points: int = CURVE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of the curve through (x, y), in order, first at or past each of `points` equal steps along its
    length (the first and last kept): at most points + 1 of them, each step 1/points of the curve's length, so a chart
    draws the same curve while a page or report of a large holdout stays light."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) <= points + 1:
        return x, y
    along = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
    keep = np.unique(np.append(np.searchsorted(along, np.linspace(0.0, along[-1], points + 1)), len(x) - 1))
    return x[keep], y[keep]


def _rates_layout(fig: go.Figure, title: str, x_title: str, y_title: str, legend_at: str) -> None:
    """The layout of a chart of two shares (ROC, precision-recall) half the page wide: the titles wrapped to fit
    (`wrap`), the figure taller for each more line, both axes 0 to 100%, the legend inside the plot in the corner
    `legend_at` ("bottom" right or "top" right) where the curves seldom run."""
    title, x_title, y_title = wrap(title), wrap(x_title, AXIS_TITLE_CHARS), wrap(y_title, AXIS_TITLE_CHARS)
    more = LINE_PX * (lines_of(title) + lines_of(x_title) - 2)
    # the x axis ends past 100% and the right margin holds the rest of that tick's label, which is centred on it
    fig.update_layout(title=title, height=420 + more, margin=dict(l=10, r=24, t=40 + LINE_PX * (lines_of(title) - 1),
                                                                  b=10),
                      legend=dict(x=0.98, xanchor="right", y=0.02 if legend_at == "bottom" else 0.98,
                                  yanchor=legend_at, bgcolor="rgba(255,255,255,0.8)"),
                      xaxis=dict(title=x_title, tickformat=".0%", range=[0, 1.02]),
                      yaxis=dict(title=y_title, tickformat=".0%", range=[0, 1.02]))


def roc_figure(is_positive, scores: dict[str, np.ndarray], positive: str, cutoff: float | None = None) -> go.Figure:
    """The ROC curve of each method (`sklearn.metrics.roc_curve`) from plain arrays: `is_positive`, whether each
    held-out row truly is the class `positive`; `scores`, each method's probability of it for the same rows (the
    holdout must hold both kinds of row). Each legend names the area under its curve (ROC-AUC); a dot marks where
    the decision `cutoff` puts each method."""
    from sklearn.metrics import roc_auc_score, roc_curve

    t = np.asarray(is_positive, dtype=bool)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="coin toss", hoverinfo="skip",
                               line=dict(dash="dash", color="#999")))
    for name, s in scores.items():
        s = np.asarray(s, dtype=float)
        fpr, tpr = thinned(*roc_curve(t, s)[:2])
        fig.add_trace(go.Scatter(x=fpr, y=tpr, mode="lines", name=f"{name} (area {roc_auc_score(t, s):.3f})",
                                 line=dict(color=method_color(name), width=2),
                                 hovertemplate=f"{name}<br>false alarms %{{x:.1%}}<br>found %{{y:.1%}}<extra></extra>"))
        if cutoff is not None:
            chosen = s >= cutoff
            _cutoff_dot(fig, name, float(chosen[~t].mean()), float(chosen[t].mean()), cutoff)
    _rates_layout(fig, f"ROC curve for {positive!r}", f"false alarms: others predicted {positive!r}",
                  f"{positive!r} rows found (recall)", "bottom")
    return fig


def precision_recall_figure(is_positive, scores: dict[str, np.ndarray], positive: str,
                            cutoff: float | None = None) -> go.Figure:
    """The precision-recall curve of each method (`sklearn.metrics.precision_recall_curve`) from plain arrays, as
    `roc_figure` takes them; each legend names its average precision, the dashed line is what predicting every
    row `positive` at random gets (its share of the rows), and a dot marks where the decision `cutoff` puts each method
    (none where it predicts no row `positive`)."""
    from sklearn.metrics import average_precision_score, precision_recall_curve

    t = np.asarray(is_positive, dtype=bool)
    share = float(t.mean())
    fig = go.Figure(go.Scatter(x=[0, 1], y=[share, share], mode="lines", hoverinfo="skip",
                               name=f"guessing ({share:.1%} of the rows are {positive!r})", line=dict(dash="dash", color="#999")))
    for name, s in scores.items():
        s = np.asarray(s, dtype=float)
        precision, recall, _ = precision_recall_curve(t, s)
        recall, precision = thinned(recall, precision)
        fig.add_trace(go.Scatter(x=recall, y=precision, mode="lines",
                                 name=f"{name} (average precision {average_precision_score(t, s):.3f})",
                                 line=dict(color=method_color(name), width=2),
                                 hovertemplate=f"{name}<br>found %{{x:.1%}}<br>right %{{y:.1%}}<extra></extra>"))
        chosen = s >= cutoff if cutoff is not None else np.zeros(len(s), dtype=bool)
        if chosen.any():
            _cutoff_dot(fig, name, float(chosen[t].mean()), float(t[chosen].mean()), cutoff)
    _rates_layout(fig, f"Precision and recall for {positive!r}", f"{positive!r} rows found (recall)",
                  f"{positive!r} predictions right (precision)", "top")
    return fig
