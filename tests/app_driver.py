"""Driving the app in a real browser: start `streamlit run app/main.py` on localhost, launch Debian's
Chromium through Playwright, and the few page actions every browser run needs. Shared by
tests/test_browser.py and bench/app_timing.py (which puts this folder on sys.path)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("FEAT_CHROMIUM", "/usr/bin/chromium")
RUN_TIMEOUT = 240_000  # ms for one model run on a busy 2-core machine
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def app_server(log: Path) -> Iterator[str]:
    """The app served on a free localhost port; yields its URL. Its output goes to `log`; on exit the
    server is stopped and a traceback in its output fails the caller."""
    port = _free_port()
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


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium browser (Playwright, Debian's binary)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def wait_idle(page, timeout: int = RUN_TIMEOUT) -> None:
    """Until the script has finished running (no 'Running...' status widget)."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def nav(page, title: str) -> None:
    """Open a view from the sidebar and wait for it."""
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=60_000)
    wait_idle(page)


def set_number(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")


def open_app(page, url: str) -> None:
    """Open the app at its Data view and wait until it has rendered."""
    page.goto(url)
    page.get_by_role("heading", name="Data").first.wait_for(timeout=90_000)
    wait_idle(page, 90_000)


def hand_file(page, path: Path, n_rows: int, timeout: int = 60_000) -> None:
    """Hand the file at `path` to the open Data view's uploader and wait for its preview and row count."""
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    page.get_by_text("Preview", exact=True).wait_for(timeout=timeout)
    wait_idle(page, timeout)
    assert f"{n_rows:,}" in page.locator('[data-testid="stMetric"]').filter(has_text="Rows").inner_text()


def upload(page, url: str, path: Path, n_rows: int, timeout: int = 60_000) -> None:
    """Open the app, upload the file at `path` in the Data view and wait for its preview and row count."""
    open_app(page, url)
    hand_file(page, path, n_rows, timeout)


def pick_target(page, name: str) -> None:
    """Choose the Predict view's target column."""
    page.get_by_role("combobox", name="Target column").click()
    page.get_by_role("option", name=name, exact=True).click()
    page.wait_for_function(f"() => document.querySelector('input[aria-label=\"Target column\"]').value === '{name}'")
    wait_idle(page)


def write_wide_csv(path: Path, rows: int, features: int = 19, seed: int = 0, empty: float = 0.0) -> int:
    """A generated CSV of `rows` rows: `features` columns (numbers, every fifth a 6-level text column) and a
    binary text target `y` that depends on a few of them; a share `empty` of the cells of x3 (numbers) and x4
    (text) left empty. Returns the file size in bytes."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features)).round(4)
    df = pd.DataFrame(x, columns=[f"x{i}" for i in range(features)])
    for i in range(4, features, 5):
        df[f"x{i}"] = np.asarray(["north", "south", "east", "west", "up", "down"])[(x[:, i] * 2 + 3).clip(0, 5).astype(int)]
    y = x[:, 0] + 0.5 * x[:, 1] * x[:, 2] + 0.3 * (df["x4"] == "north") + 0.5 * rng.standard_normal(rows)
    df["y"] = np.where(y > 0, "yes", "no")
    for c in ["x3", "x4"] if empty else []:
        df.loc[rng.random(rows) < empty, c] = np.nan
    df.to_csv(path, index=False)
    return path.stat().st_size


def wait_watching_progress(page, done, timeout_s: float) -> tuple[float, float]:
    """Wait until the locator `done` is visible, sampling every 0.25 s whether the page shows that it is
    working (a visible progress bar, not one in a folded box, or the running status). Returns (seconds waited,
    share of samples with a visible progress bar among those taken while the app was running)."""
    t0, running, shown = time.perf_counter(), 0, 0
    while not done.is_visible():
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"not done after {timeout_s:.0f} s")
        busy = page.evaluate("""() => [!!document.querySelector('[data-testid="stStatusWidget"]'),
                                       [...document.querySelectorAll('[data-testid="stProgress"]')]
                                           .some(e => e.checkVisibility())]""")
        running += busy[0]
        shown += busy[0] and busy[1]
        page.wait_for_timeout(250)
    return time.perf_counter() - t0, (shown / running if running else 1.0)
