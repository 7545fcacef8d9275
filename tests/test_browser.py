"""End to end in a real browser: `streamlit run app/main.py` on localhost, driven by
Playwright with Debian's Chromium (/usr/bin/chromium; `playwright install` cannot
download a browser here). Upload a CSV, pick a target, run Predict and see the metrics,
download the predictions and parse them, impute, run the masking demo, open Relations
and see four heatmaps and the graph. Screenshots of each view go to docs/screenshots/.
Two browser contexts working at once never see each other's data, state or results."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from app_driver import (
    CHROMIUM,
    ROOT,
    RUN_TIMEOUT,
    app_server,
    chromium,
    nav,
    pick_target,
    set_number,
    upload,
    wait_idle,
    wait_watching_progress,
    write_wide_csv,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = ROOT / "docs" / "screenshots"

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) "
                "to run the browser test", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with app_server(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _table(path: Path) -> pd.DataFrame:
    """A real-shaped table: 120 wine rows, 6 numeric features with a few holes, a text region with holes, an
    integer-coded 0/1 flag, dates written as text, and the text target."""
    from sklearn.datasets import load_wine
    b = load_wine(as_frame=True)
    df = b.frame.drop(columns=["target"]).iloc[:, :6].copy()
    df["cultivar"] = np.asarray(b.target_names)[b.target]
    df = df.sample(120, random_state=0).reset_index(drop=True)
    rng = np.random.default_rng(0)
    df.iloc[:, :6] = df.iloc[:, :6].mask(rng.random((120, 6)) < 0.04)
    df.insert(6, "region", pd.Series(rng.choice(["north", "south", "coast"], 120)).mask(rng.random(120) < 0.08))
    df.insert(7, "organic", rng.integers(0, 2, 120))
    df.insert(8, "bottled", pd.date_range("2019-01-01", periods=120, freq="5D").strftime("%Y-%m-%d"))
    df.to_csv(path, index=False)
    return df


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    wait_idle(page)
    # the app scrolls inside its main block, so grow the viewport to the content for a whole-page shot
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), 4000))})
    page.wait_for_timeout(1500)  # let Plotly redraw
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.set_viewport_size(size)


def _number(text: str) -> float:
    """The first number in a metric's text (its label has none)."""
    return float(re.findall(r"[-+]?\d*\.?\d+", text)[0])


def _plot_types(page) -> list[list[str]]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .map(el => (el.data || []).map(t => (t.type || 'scatter') + ':' + (t.name || '')))""")


CUT_LABELS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(plot => {
    const box = plot.querySelector('.main-svg').getBoundingClientRect();
    return Array.from(plot.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text'))
        .filter(t => t.textContent && (r => r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1
                                            || r.bottom > box.bottom + 1)(t.getBoundingClientRect()))
        .map(t => t.textContent); })"""


def _saved(download, folder: Path) -> Path:
    """A download kept under its own name, so that a browser opens it by its suffix (an HTML page)."""
    path = folder / download.suggested_filename
    download.save_as(path)
    return path


# the labels of the score cards that their card cuts short (an ellipsis: the text is wider than its box)
CUT_CARDS = """() => [...document.querySelectorAll('[data-testid="stMetricLabel"]')]
    .filter(e => [e, ...e.querySelectorAll('*')].some(n => n.scrollWidth > n.clientWidth + 1))
    .map(e => e.innerText)"""


def cut_labels(browser, report: Path) -> list[str]:
    """The axis labels and titles that a downloaded report draws past its figures' edges, opened offline in a
    1,280-px window."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0", timeout=60_000)
    page.wait_for_timeout(500)
    cut = page.evaluate(CUT_LABELS)
    page.close()
    return cut


def test_whole_path_in_chromium(server, browser, tmp_path):
    csv_path = tmp_path / "wine_small.csv"
    df = _table(csv_path)
    page = browser.new_page(viewport={"width": 1500, "height": 1100}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # --- Data: upload a CSV (the uploader is there at once, beside the sample tables)
    upload(page, server, csv_path, 120)
    assert "FEAT" in page.locator('[data-testid="stSidebar"]').inner_text()
    assert "wine_small.csv" in page.locator('[data-testid="stSidebar"]').inner_text()
    page.get_by_text(re.compile(r"empty cells in \d+ of 120 rows")).wait_for(timeout=60_000)   # the view's last part
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Columns" in main and "empty cells in" in main
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=60_000)
    _shot(page, "data")

    # --- Predict: pick the target, run, see the metrics
    nav(page, "Predict")
    pick_target(page, "cultivar")
    set_number(page, "FEAT readings (averaged)", 1)
    page.get_by_role("button", name="Run prediction").click()
    page.get_by_text("FEAT ROC-AUC").wait_for(timeout=RUN_TIMEOUT)
    wait_idle(page)
    metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
    acc = [m for m in metrics if m.startswith("FEAT accuracy")]
    assert acc and 0.0 <= _number(acc[0]) <= 1.0, metrics
    page.set_viewport_size({"width": 1280, "height": 1100})                 # the score cards' labels are whole
    page.wait_for_timeout(1000)
    assert page.evaluate(CUT_CARDS) == []
    page.set_viewport_size({"width": 1500, "height": 1100})
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=60_000)
    assert sum(t[0].startswith("heatmap") for t in _plot_types(page)) == 2       # two confusion matrices
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download predictions (CSV)").click()
    pred = pd.read_csv(dl.value.path())
    assert len(pred) == 30 and {"row", "cultivar", "cultivar (actual)"} <= set(pred.columns)
    probs = pred[[c for c in pred.columns if c.startswith("p(")]]
    assert probs.shape[1] == 3 and np.allclose(probs.sum(axis=1), 1.0, atol=1e-4)
    assert set(pred["cultivar"]) <= set(df["cultivar"])
    assert (pred["cultivar (actual)"].to_numpy() == df.loc[pred["row"], "cultivar"].to_numpy()).all()
    page.get_by_role("button", name="Price each column").click()             # why these predictions
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(el => ((el.data || [{}])[0] || {}).type === 'bar').length >= 2""", timeout=RUN_TIMEOUT)   # not a count
    wait_idle(page)                                    # of plots, which a rerun's stale copies can reach for a moment
    bars = [t for t in _plot_types(page) if t and t[0].startswith("bar")]
    assert len(bars) == 2, _plot_types(page)                                   # the ranking and one row's chart
    page.get_by_text("What FEAT did").click()
    page.get_by_text("FEAT learned from 90 example rows").first.wait_for(timeout=RUN_TIMEOUT)
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download a report of this run (HTML)").click()
    assert cut_labels(browser, _saved(dl.value, tmp_path)) == []               # the report's labels are whole
    _shot(page, "predict")
    page.get_by_text("feat-fast: faster, nearly as accurate").click()      # the faster model, said in the heading
    page.get_by_role("button", name="Run prediction").click()
    # the last run's box and results leave the page as the new run starts: no live download of the last predictions
    page.wait_for_function("""() => !document.querySelector('[data-testid="stMain"]').innerText.includes('Done: FEAT')
        && !Array.from(document.querySelectorAll('button'))
            .some(b => b.innerText.includes('Download predictions (CSV)'))""", timeout=60_000)
    page.get_by_text(re.compile(r"example rows, by feat-fast$")).wait_for(timeout=RUN_TIMEOUT)
    wait_idle(page)

    # --- a reload keeps the table and the run
    page.reload()
    page.get_by_text("FEAT ROC-AUC").wait_for(timeout=90_000)
    wait_idle(page)
    assert "wine_small.csv" in page.locator('[data-testid="stSidebar"]').inner_text()

    # --- Impute
    nav(page, "Impute")                                  # the defaults: one reading per column, draws
    page.get_by_text("a draw from what FEAT predicts (each column keeps its spread)").click()
    page.get_by_role("button", name="Impute missing cells").click()
    page.get_by_text("Cells imputed").wait_for(timeout=RUN_TIMEOUT)
    still = page.locator('[data-testid="stMetric"]').filter(has_text="Still missing").inner_text()
    assert _number(still) == 0, still
    page.get_by_text("How sure FEAT is of each filled cell").wait_for(timeout=RUN_TIMEOUT)   # drawn after the metrics
    _shot(page, "impute")

    # --- Masking demo
    nav(page, "Masking demo")
    page.get_by_role("button", name="Hide cells and impute").click()
    page.get_by_text("FEAT NRMSE (numeric)").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "masking")

    # --- Relations: six heatmaps (FEAT attention, dependence and edges, mutual information, Pearson, Spearman), the graph
    nav(page, "Relations")
    target = page.get_by_role("combobox", name="Target (optional)")
    assert target.input_value() == "cultivar"          # remembered from Predict
    set_number(page, "FEAT readings (averaged)", 1)
    page.get_by_role("button", name="Compute relations").click()
    page.get_by_text("Dependency graph").wait_for(timeout=RUN_TIMEOUT)
    wait_idle(page)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 8", timeout=60_000)
    types = _plot_types(page)
    assert sum(t[0].startswith("heatmap") for t in types) == 6, types
    titles = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
        const t = (el.layout || {}).title; return typeof t === 'string' ? t : ((t && t.text) || ''); })""")
    assert sum("FEAT dependence" in t for t in titles) == 1, titles
    assert sum("FEAT edges" in t for t in titles) == 1, titles
    assert sum("Mutual information" in t for t in titles) == 1, titles
    assert sum(any(x == "scatter:target" for x in t) for t in types) == 1, types   # the graph
    assert sum(t[0].startswith("bar") for t in types) == 1, types                  # relation to the target
    ticks = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(el => (el.data || [{}])[0].type === 'heatmap').map(el => [el.layout.xaxis.tickvals.length, el.data[0].x.length])""")
    assert len(ticks) == 6 and all(t == x >= len(df.columns) for t, x in ticks), ticks   # every column labelled
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download a report of this run (HTML)").click()
    assert cut_labels(browser, _saved(dl.value, tmp_path)) == []
    _shot(page, "relations")

    # --- a long run can be cancelled: the earlier results stay
    set_number(page, "FEAT readings (averaged)", 16)
    page.get_by_role("button", name="Compute relations").click()
    page.get_by_role("button", name="Cancel").click(timeout=60_000)
    page.get_by_text("The run was cancelled").wait_for(timeout=120_000)
    wait_idle(page)
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(el => ((el.data || [{}])[0] || {}).type === 'heatmap').length === 6""", timeout=60_000)
    assert sum(t[0].startswith("heatmap") for t in _plot_types(page)) == 6          # the earlier results stay
    assert not errors, errors


def test_two_sessions_never_see_each_other(server, browser, tmp_path):
    """Two browser contexts (two users) upload different tables; while one runs a prediction the
    other uploads and works. Neither sees the other's file, columns, state or results."""
    alpha, beta = tmp_path / "alpha.csv", tmp_path / "beta.csv"
    _table(alpha)                                                         # 120 rows, target 'cultivar'
    rng = np.random.default_rng(1)
    pd.DataFrame({"speed": rng.normal(size=80), "load": rng.normal(size=80),
                  "grade": rng.choice(["low", "high"], size=80)}).to_csv(beta, index=False)
    ctx_a, ctx_b = (browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2))
    pa, pb = ctx_a.new_page(), ctx_b.new_page()
    errors: list[str] = []
    for p in (pa, pb):
        p.on("pageerror", lambda e: errors.append(str(e)))
    try:
        upload(pa, server, alpha, 120)
        nav(pa, "Predict")
        pick_target(pa, "cultivar")
        set_number(pa, "FEAT readings (averaged)", 1)
        pa.get_by_role("button", name="Run prediction").click()          # runs on the server ...
        upload(pb, server, beta, 80)                                     # ... while the other user uploads
        pa.get_by_text("FEAT ROC-AUC").wait_for(timeout=RUN_TIMEOUT)
        wait_idle(pa)

        side_a = pa.locator('[data-testid="stSidebar"]').inner_text()
        side_b = pb.locator('[data-testid="stSidebar"]').inner_text()
        assert "alpha.csv" in side_a and "beta.csv" not in side_a
        assert "beta.csv" in side_b and "alpha.csv" not in side_b
        nav(pb, "Predict")
        body_b = pb.locator('[data-testid="stMain"]').inner_text()
        assert "FEAT ROC-AUC" not in body_b and "cultivar" not in body_b, body_b[:2000]
        pb.get_by_role("combobox", name="Target column").click()
        options = pb.get_by_role("option").all_inner_texts()
        assert "grade" in options and "cultivar" not in options, options
        pb.keyboard.press("Escape")
        nav(pa, "Data")                                                  # A's table is still A's
        assert "120" in pa.locator('[data-testid="stMetric"]').filter(has_text="Rows").inner_text()
        assert not errors, errors
    finally:
        ctx_a.close()
        ctx_b.close()


def test_large_table_to_downloadable_predictions(server, browser, tmp_path):
    """A generated 20,000 x 20 CSV goes from upload to downloaded predictions (one reading), with a progress bar on
    screen while FEAT runs: behaviour only, at a size that passes with margin on a loaded 2-core AVX2 CPU; the
    100,000-row path's time is bench/app_timing.py's."""
    path = tmp_path / "large.csv"
    write_wide_csv(path, 20_000)
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    upload(page, server, path, 20_000, timeout=RUN_TIMEOUT)
    nav(page, "Predict")
    pick_target(page, "y")
    set_number(page, "FEAT readings (averaged)", 1)
    page.get_by_role("button", name="Run prediction").click()
    _, shown = wait_watching_progress(page, page.get_by_role("button", name="Download predictions (CSV)"),
                                      RUN_TIMEOUT / 1000)
    assert shown > 0.5, f"a progress bar was on screen in only {shown:.0%} of the samples while the app ran"
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_role("button", name="Download predictions (CSV)").click()
    pred = pd.read_csv(dl.value.path())
    assert len(pred) == 5_000 and set(pred["y"]) <= {"yes", "no"}
    assert (pred["y"] == pred["y (actual)"]).mean() > 0.7
    with page.expect_download(timeout=120_000) as dl:                        # a binary run's ROC and PR curves
        page.get_by_role("button", name="Download a report of this run (HTML)").click()
    assert cut_labels(browser, _saved(dl.value, tmp_path)) == []
