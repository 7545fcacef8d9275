"""End to end in a real browser: `streamlit run app/main.py` on localhost, driven by
Playwright with Debian's Chromium (/usr/bin/chromium; `playwright install` cannot
download a browser here). Upload a CSV, pick a target, run Predict and see the metrics,
download the predictions and parse them, impute, run the masking demo, open Relations
and see four heatmaps and the graph. Screenshots of each view go to docs/screenshots/.
Two browser contexts working at once never see each other's data, state or results."""
from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("FEAT_CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "docs" / "screenshots"
RUN_TIMEOUT = 240_000  # ms for one model run on a busy 2-core machine

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) "
                "to run the browser test", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read().strip() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        yield b
        b.close()


def _table(path: Path) -> pd.DataFrame:
    """120 wine rows, 6 features and the text target, with a few holes in the features."""
    from sklearn.datasets import load_wine
    b = load_wine(as_frame=True)
    df = b.frame.drop(columns=["target"]).iloc[:, :6].copy()
    df["cultivar"] = np.asarray(b.target_names)[b.target]
    df = df.sample(120, random_state=0).reset_index(drop=True)
    rng = np.random.default_rng(0)
    df.iloc[:, :6] = df.iloc[:, :6].mask(rng.random((120, 6)) < 0.04)
    df.to_csv(path, index=False)
    return df


def _wait_idle(page) -> None:
    """Until the script has finished running (no 'Running...' status widget)."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=RUN_TIMEOUT)


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=60_000)
    _wait_idle(page)


def _set_number(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    _wait_idle(page)
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


def _upload(page, url: str, path: Path, n_rows: int) -> None:
    page.goto(url)
    page.get_by_role("heading", name="Data").first.wait_for(timeout=90_000)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    page.get_by_text("Preview", exact=True).wait_for(timeout=60_000)
    _wait_idle(page)
    assert f"{n_rows}" in page.locator('[data-testid="stMetric"]').filter(has_text="Rows").inner_text()


def test_whole_path_in_chromium(server, browser, tmp_path):
    csv_path = tmp_path / "wine_small.csv"
    df = _table(csv_path)
    page = browser.new_page(viewport={"width": 1500, "height": 1100}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # --- Data: upload a CSV (the uploader is there at once, beside the sample tables)
    _upload(page, server, csv_path, 120)
    assert "FEAT" in page.locator('[data-testid="stSidebar"]').inner_text()
    assert "wine_small.csv" in page.locator('[data-testid="stSidebar"]').inner_text()
    _shot(page, "data")

    # --- Predict: pick the target, run, see the metrics
    _nav(page, "Predict")
    page.get_by_role("combobox", name="Target column").click()
    page.get_by_role("option", name="cultivar", exact=True).click()
    page.wait_for_function("() => document.querySelector('input[aria-label=\"Target column\"]').value === 'cultivar'")
    _wait_idle(page)
    _set_number(page, "FEAT ensemble members", 1)
    page.get_by_role("button", name="Run prediction").click()
    page.get_by_text("FEAT ROC-AUC").wait_for(timeout=RUN_TIMEOUT)
    _wait_idle(page)
    metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
    acc = [m for m in metrics if m.startswith("FEAT accuracy")]
    assert acc and 0.0 <= _number(acc[0]) <= 1.0, metrics
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=60_000)
    assert sum(t[0].startswith("heatmap") for t in _plot_types(page)) == 2       # two confusion matrices
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download predictions (CSV)").click()
    pred = pd.read_csv(dl.value.path())
    assert len(pred) == 30 and {"row", "cultivar", "predicted_cultivar"} <= set(pred.columns)
    probs = pred[[c for c in pred.columns if c.startswith("p(")]]
    assert probs.shape[1] == 3 and np.allclose(probs.sum(axis=1), 1.0, atol=1e-4)
    assert set(pred["predicted_cultivar"]) <= set(df["cultivar"])
    assert (pred["cultivar"].to_numpy() == df.loc[pred["row"], "cultivar"].to_numpy()).all()
    _shot(page, "predict")

    # --- Impute
    _nav(page, "Impute")                                  # the defaults: one member per column
    page.get_by_role("button", name="Impute missing cells").click()
    page.get_by_text("Cells imputed").wait_for(timeout=RUN_TIMEOUT)
    still = page.locator('[data-testid="stMetric"]').filter(has_text="Still missing").inner_text()
    assert _number(still) == 0, still
    _shot(page, "impute")

    # --- Masking demo
    _nav(page, "Masking demo")
    page.get_by_role("button", name="Hide cells and impute").click()
    page.get_by_text("FEAT NRMSE (numeric)").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "masking")

    # --- Relations: four heatmaps (FEAT attention and dependence, Pearson, Spearman) and the graph
    _nav(page, "Relations")
    target = page.get_by_role("combobox", name="Target (optional)")
    assert target.input_value() == "cultivar"          # remembered from Predict
    _set_number(page, "FEAT ensemble members", 1)
    page.get_by_role("button", name="Compute relations").click()
    page.get_by_text("Dependency graph").wait_for(timeout=RUN_TIMEOUT)
    _wait_idle(page)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 6", timeout=60_000)
    types = _plot_types(page)
    assert sum(t[0].startswith("heatmap") for t in types) == 4, types
    titles = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
        const t = (el.layout || {}).title; return typeof t === 'string' ? t : ((t && t.text) || ''); })""")
    assert sum("FEAT dependence" in t for t in titles) == 1, titles
    assert sum(any(x == "scatter:target" for x in t) for t in types) == 1, types   # the graph
    assert sum(t[0].startswith("bar") for t in types) == 1, types                  # relation to the target
    _shot(page, "relations")
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
        _upload(pa, server, alpha, 120)
        _nav(pa, "Predict")
        pa.get_by_role("combobox", name="Target column").click()
        pa.get_by_role("option", name="cultivar", exact=True).click()
        _wait_idle(pa)
        _set_number(pa, "FEAT ensemble members", 1)
        pa.get_by_role("button", name="Run prediction").click()          # runs on the server ...
        _upload(pb, server, beta, 80)                                     # ... while the other user uploads
        pa.get_by_text("FEAT ROC-AUC").wait_for(timeout=RUN_TIMEOUT)
        _wait_idle(pa)

        side_a = pa.locator('[data-testid="stSidebar"]').inner_text()
        side_b = pb.locator('[data-testid="stSidebar"]').inner_text()
        assert "alpha.csv" in side_a and "beta.csv" not in side_a
        assert "beta.csv" in side_b and "alpha.csv" not in side_b
        _nav(pb, "Predict")
        body_b = pb.locator('[data-testid="stMain"]').inner_text()
        assert "FEAT ROC-AUC" not in body_b and "cultivar" not in body_b, body_b[:2000]
        pb.get_by_role("combobox", name="Target column").click()
        options = pb.get_by_role("option").all_inner_texts()
        assert "grade" in options and "cultivar" not in options, options
        pb.keyboard.press("Escape")
        _nav(pa, "Data")                                                  # A's table is still A's
        assert "120" in pa.locator('[data-testid="stMetric"]').filter(has_text="Rows").inner_text()
        assert not errors, errors
    finally:
        ctx_a.close()
        ctx_b.close()
