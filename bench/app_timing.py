"""The app on large tables, timed in a real browser (issues 19, 20, 56 and 65): a generated 100,000 x 20 CSV from
upload to downloadable predictions with the Predict view's defaults, a 5,000-row one from the click to the
first answer, the Relations view on a 10,000-row one, a CSV of about 100 MB from upload to the schema view, and
(--walk-rows) one table through the whole app: upload, Evaluate, the downloaded predictions, Impute, Relations, and
Evaluate again on the file opened by path and by a SQL query, with the server's peak memory and the time left the
progress told against the truth.

    python bench/app_timing.py                 # the first four; writes the 'app-timing' section of docs/benchmarks.md
    python bench/app_timing.py --upload-mb 0   # the three runs only
    python bench/app_timing.py --rows 0 --first-rows 0 --relations-rows 0   # the upload only
    python bench/app_timing.py --walk-rows 1000000   # and the whole app on a 1M-row table

The app runs as `streamlit run app/main.py` on localhost and Debian's Chromium drives it through Playwright
(tests/app_driver.py, shared with the browser test). Each step is timed from the click (or the file being
handed to the uploader) to the element that shows it is done; the share of samples with a progress bar on
screen while the app was running is reported beside it.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

import common as C
from feat_engine.inference import native_bf16

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from app_driver import (RUN_TIMEOUT, app_server, chromium, hand_file, nav, open_app, pick_target,  # noqa: E402
                        wait_idle, wait_watching_progress, write_wide_csv)

# issue 56: upload to downloadable predictions of 100k x 20 rows, on a CPU that multiplies bf16 natively / not
TARGET_S = {True: 20.0, False: 45.0}
FIRST_S = 5.0        # issue 56: the click to the first answer on a 5,000-row table
RELATIONS_S = 15.0   # issue 56: the Relations view on a 10,000 x 20 table, on a CPU with native bf16


def _predict_large(url: str, browser, folder: Path, rows: int, limit_s: float) -> dict:
    """Upload, pick the target, run Predict at its defaults, until the download button shows (predict_s NaN
    when it has not after `limit_s` seconds)."""
    path = folder / "large.csv"
    size = write_wide_csv(path, rows)
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    t0 = time.perf_counter()
    open_app(page, url)
    t_open = time.perf_counter() - t0
    t0 = time.perf_counter()
    hand_file(page, path, rows, timeout=RUN_TIMEOUT)
    t_upload = time.perf_counter() - t0
    nav(page, "Predict")
    pick_target(page, "y")
    page.get_by_role("button", name="Run prediction").click()
    try:
        t_predict, shown = wait_watching_progress(page, page.get_by_role("button", name="Download predictions (CSV)"),
                                                  limit_s)
    except TimeoutError:
        t_predict, shown = float("nan"), float("nan")
    total = time.perf_counter() - t0
    done = math.isfinite(t_predict)
    page.get_by_text("What FEAT did").first.click()          # the expander that holds the technical sentence
    reading = page.get_by_text("In technical terms:").first.inner_text() if done else ""
    feat_s = page.locator('[data-testid="stMetric"]').filter(has_text="FEAT time").inner_text().split()[-2] if done else "nan"
    page.close()
    return {"rows": rows, "mb": size / 1e6, "upload_s": t_upload, "predict_s": t_predict, "total_s": total,
            "progress_share": shown, "limit_s": limit_s, "reading": reading, "open_s": t_open,
            "feat_s": float(feat_s.replace(",", ""))}


def _table_in_view(url: str, browser, path: Path, rows: int, seed: int, view: str):
    """A new page with a generated `rows`-row table (written to `path`) uploaded and the app's `view` open."""
    write_wide_csv(path, rows, seed=seed)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    open_app(page, url)
    hand_file(page, path, rows, timeout=RUN_TIMEOUT)
    nav(page, view)
    return page


def _first_answer(url: str, browser, folder: Path, rows: int, limit_s: float) -> dict:
    """Upload a `rows`-row table, run Predict at its defaults, and time the click to the first answer and to
    the download button."""
    page = _table_in_view(url, browser, folder / "first.csv", rows, 1, "Predict")
    pick_target(page, "y")
    t0 = time.perf_counter()
    page.get_by_role("button", name="Run prediction").click()
    first = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text=re.compile(r"^First answer in")).first
    first.wait_for(timeout=limit_s * 1000)
    t_first = time.perf_counter() - t0
    said = first.inner_text()
    page.get_by_role("button", name="Download predictions (CSV)").wait_for(timeout=limit_s * 1000)
    t_done = time.perf_counter() - t0
    page.close()
    return {"rows": rows, "first_s": t_first, "done_s": t_done, "said": said}


def _relations(url: str, browser, folder: Path, rows: int, limit_s: float) -> dict:
    """Upload a `rows`-row table and time the Relations view at its defaults (target `y`) from the click to its
    dependency graph, all six matrices computed."""
    page = _table_in_view(url, browser, folder / "relations.csv", rows, 2, "Relations")
    page.get_by_role("combobox", name="Target (optional)").click()
    page.get_by_role("option", name="y", exact=True).click()
    wait_idle(page)
    sampled = page.get_by_label("Rows used (max)", exact=True).input_value()
    t0 = time.perf_counter()
    page.get_by_role("button", name="Compute relations").click()
    page.get_by_text("Dependency graph").wait_for(timeout=limit_s * 1000)
    seconds = time.perf_counter() - t0
    page.close()
    return {"rows": rows, "sampled": int(sampled.replace(",", "")), "seconds": seconds}


def _upload_big(url: str, browser, folder: Path, mb: float) -> dict:
    """A CSV of about `mb` megabytes (20 columns) from the file chooser to the preview and row count."""
    path = folder / "big.csv"
    rows = int(mb * 1e6 / 135)                     # about 135 bytes per row of write_wide_csv's table
    size = write_wide_csv(path, rows)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    open_app(page, url)
    t0 = time.perf_counter()
    hand_file(page, path, rows, timeout=RUN_TIMEOUT)
    seconds = time.perf_counter() - t0
    page.close()
    return {"rows": rows, "mb": size / 1e6, "upload_s": seconds}


class PeakRss:
    """The peak resident memory of the app's server (the streamlit process and its children), sampled every
    0.25 s on a thread from `start` until `stop`."""

    def __init__(self):
        self.server = next(p for p in psutil.Process().children(recursive=True)
                           if "streamlit" in " ".join(p.cmdline()))
        self.peak, self._stop = 0, threading.Event()

    def rss(self) -> int:
        procs = [self.server, *self.server.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs if p.is_running())

    def start(self) -> "PeakRss":
        self.peak, self._stop = self.rss(), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            self.peak = max(self.peak, self.rss())

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _seconds(text: str) -> float:
    """The seconds of a `state.seconds_text` duration ("8 s", "2 min 5 s", "1 h 3 min")."""
    units = {"h": 3600, "min": 60, "s": 1}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"(\d+) (h|min|s)\b", text)))


def _evaluate(page, folder: Path, limit_s: float) -> dict:
    """Predict's Evaluate at the view's defaults (target `y`), from the click: the seconds to the first answer, to
    the end of the run (its status box says "Done"), and to the download button, every progress text shown (sampled
    four times a second), and the predictions downloaded."""
    nav(page, "Predict")
    pick_target(page, "y")
    first = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text=re.compile(r"^First answer in")).first
    done = page.get_by_role("button", name="Download predictions (CSV)")
    ended = page.get_by_text(re.compile(r"^Done: FEAT")).first
    t0, t_first, t_run, samples = time.perf_counter(), float("nan"), float("nan"), []
    page.get_by_role("button", name="Run prediction").click()
    page.locator('[data-testid="stProgress"]:visible').first.wait_for(timeout=60_000)   # this run's, not a folded one
    while page.locator('[data-testid="stStatusWidget"]').count() or not done.is_visible():
        t = time.perf_counter() - t0
        if t > limit_s:
            raise TimeoutError(f"Evaluate not done after {limit_s:.0f} s")
        if t_first != t_first and first.is_visible():
            t_first = t
        if t_run != t_run and ended.is_visible():
            t_run = t
        text = page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stProgress\"]')]"
                             ".map(e => e.innerText).join(' | ')")
        if text:
            samples.append((t, text))
        page.wait_for_timeout(250)
    t_done = time.perf_counter() - t0
    with page.expect_download(timeout=120_000) as dl:
        done.click()
    path = folder / f"predictions_{len(list(folder.glob('predictions_*')))}.csv"
    dl.value.save_as(path)
    page.get_by_text("What FEAT did").first.click()
    return {"first_s": t_first, "run_s": t_run if t_run == t_run else t_done, "done_s": t_done, "samples": samples,
            "predictions": str(path),
            "headline": page.get_by_role("heading", name=re.compile("rows predicted from")).first.inner_text(),
            "reading": page.get_by_text("In technical terms:").first.inner_text()}


def time_left_truth(samples: list[tuple[float, str]], end: float) -> list[dict]:
    """For each progress text that tells a time left, told against the truth: the seconds until the run ended
    and until its phase (the text before the first colon) was last shown."""
    last = {}
    for t, text in samples:
        last[text.split(":", 1)[0]] = t
    out = []
    for t, text in samples:
        m = re.search(r"\(about (.+?) left\)", text)
        if m:
            phase = text.split(":", 1)[0]
            out.append({"t": t, "told": _seconds(m.group(1)), "run_left": end - t,
                        "phase_left": last[phase] + 1.0 - t, "phase": phase})
    return out


def _walk(url: str, browser, folder: Path, rows: int, limit_s: float) -> dict:
    """The whole app on one `rows` x 20 table with a few empty cells (issue 65): upload, Evaluate and the
    downloaded predictions, under the server's peak memory; then Impute, Relations, and Evaluate again on the
    same file opened by path and by a SQL query, whose predictions must equal the upload's."""
    import pandas as pd
    path = folder / "walk.csv"
    size = write_wide_csv(path, rows, seed=3, empty=0.01)
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    open_app(page, url)
    rss = PeakRss().start()
    t0 = time.perf_counter()
    hand_file(page, path, rows, timeout=RUN_TIMEOUT)
    out = {"rows": rows, "mb": size / 1e6, "upload_s": time.perf_counter() - t0}
    print(f"[app-walk] upload {out['upload_s']:.1f} s", flush=True)
    out["evaluate"] = _evaluate(page, folder, limit_s)
    out["evaluate_peak"] = rss.stop()
    print(f"[app-walk] evaluate {out['evaluate']['done_s']:.1f} s, first {out['evaluate']['first_s']:.1f} s, "
          f"peak {out['evaluate_peak'] / 2**30:.2f} GiB", flush=True)
    rss.start()
    nav(page, "Impute")
    t0 = time.perf_counter()
    page.get_by_role("button", name="Impute missing cells").click()
    page.get_by_role("button", name="Download filled table (CSV)").wait_for(timeout=limit_s * 1000)
    out["impute_s"], out["impute_peak"] = time.perf_counter() - t0, rss.stop()
    print(f"[app-walk] impute {out['impute_s']:.1f} s", flush=True)
    rss.start()
    nav(page, "Relations")
    t0 = time.perf_counter()
    page.get_by_role("button", name="Compute relations").click()
    page.get_by_text("Dependency graph").wait_for(timeout=limit_s * 1000)
    out["relations_s"], out["relations_peak"] = time.perf_counter() - t0, rss.stop()
    out["relations_said"] = page.get_by_text(re.compile(r"^Computed on [\d,]+ rows")).first.inner_text()
    print(f"[app-walk] relations {out['relations_s']:.1f} s: {out['relations_said']}", flush=True)
    for how, box, button, source in [("path", "Path of a CSV or Parquet file, or of a folder of Parquet files",
                                      "open_path", str(path)),
                                     ("sql", "Or a SQL query over such files (DuckDB)", "run_sql",
                                      f"SELECT * FROM '{path}'")]:
        nav(page, "Data")
        page.get_by_label(box).fill(source)
        page.get_by_label(box).press("Tab")
        wait_idle(page)
        page.locator(f".st-key-{button} button:visible").click()  # the Data view's button of that key
        page.get_by_text("Preview", exact=True).wait_for(timeout=RUN_TIMEOUT)
        wait_idle(page)
        rss.start()
        run = _evaluate(page, folder, limit_s)
        out[how] = {"done_s": run["done_s"], "peak": rss.stop(),
                    "same": pd.read_csv(run["predictions"]).equals(pd.read_csv(out["evaluate"]["predictions"]))}
        print(f"[app-walk] {how}: {out[how]}", flush=True)
    page.close()
    return out


def told_at(truth: list[dict], end: float, share: float) -> float:
    """Time left told / the run's true time left, at the first telling from `share` of the run on (NaN: none)."""
    later = [r for r in truth if r["t"] >= share * end]
    return later[0]["told"] / later[0]["run_left"] if later else float("nan")


def walk_lines(w: dict, bf16: bool) -> tuple[list[str], list[str]]:
    """The walk's table and its targets (issue 65): peak memory, minutes, the first answer, the time left."""
    ev, gib = w["evaluate"], lambda b: f"{b / 2**30:.2f}"
    told = {end: told_truth(ev["samples"], ev[end]) for end in ("run_s", "done_s")}
    total = w["upload_s"] + ev["done_s"]
    rows = [["upload; Evaluate: click to the first answer, to the download (FEAT + LightGBM)",
             f"{w['upload_s']:.1f}; {ev['first_s']:.1f}, {ev['done_s']:.1f}", gib(w["evaluate_peak"])],
            ["Impute missing cells", f"{w['impute_s']:.1f}", gib(w["impute_peak"])],
            [f"Relations ({w['relations_said'].split(' in ')[0].lower()})", f"{w['relations_s']:.1f}",
             gib(w["relations_peak"])],
            *[[f"Evaluate on the file opened {'by path' if how == 'path' else 'by a SQL query'}: predictions "
               f"{'equal' if w[how]['same'] else '**not equal**'} to the upload's", f"{w[how]['done_s']:.1f}",
               gib(w[how]["peak"])] for how in ("path", "sql")]]
    minutes = 5.0 if bf16 else 10.0
    (at, worst), (page_at, page_worst) = [(", ".join(f"{x:.2f}" for x in told[end][0]), told[end][1])
                                          for end in ("run_s", "done_s")]
    met = lambda ok: "**met**" if ok else "**not met**"  # noqa: E731
    peak = max(w["evaluate_peak"], w["impute_peak"], w["relations_peak"])
    lines = [*C.wrap(f"**The whole app on {w['rows']:,} rows x 20 columns** ({w['mb']:.0f} MB CSV, 1% of two "
                     f"columns' cells empty; target `y`); GiB: the server's peak resident memory in the step:"), "",
             *C.markdown_table(["step", "seconds", "GiB"], rows), ""]
    return lines, [f"the walk: {met(peak <= 6 * 2**30)} within 6 GiB, {met(total <= 60 * minutes)} within "
                   f"{minutes:.0f} min ({total / 60:.1f}), {met(ev['first_s'] <= 30)} the first answer within 30 s, "
                   f"{met(worst <= 0.3)} the time left within 30% after a third ({at} times the truth at 1/3, 1/2, "
                   f"2/3 of Evaluate's run to its status box's Done, {ev['run_s']:.1f} s; at worst {worst:.0%} off "
                   f"with 10 s or more left; to the results on the page, {ev['done_s'] - ev['run_s']:.1f} s later: "
                   f"{page_at}, {page_worst:.0%})"]


def told_truth(samples: list[tuple[float, str]], end: float) -> tuple[list[float], float]:
    """The time left told over the truth when a run ends at `end`: at the first telling from 1/3, 1/2 and 2/3 of it,
    and at worst from a third on with 10 s or more left (`bench/progress_truth.py` reads it too)."""
    truth = time_left_truth(samples, end)
    late = [r["told"] / r["run_left"] for r in truth if r["t"] >= end / 3 and r["run_left"] >= 10]
    worst = max((abs(x - 1) for x in late), default=float("nan"))
    return [told_at(truth, end, s) for s in (1 / 3, 1 / 2, 2 / 3)], worst


def report(recs: dict, info: dict, command: str, started: str, elapsed: float) -> tuple[list[str], dict]:
    """One table of the steps timed, the targets met or not in one line; the engine's reading and the page's
    words stay in the JSON results."""
    bf16 = native_bf16()
    lines = ["## The app on large tables", "",
             "Streamlit on localhost driven by headless Chromium (`tests/app_driver.py`); the app and the browser "
             "share the machine's cores. Times run from handing the file to the uploader, or from the click, to "
             "the element that shows the step is done.", ""]
    rows, targets = [], []
    p, target = recs.get("predict"), TARGET_S[bf16]
    if p:
        lines += C.wrap(f"**Predict, {p['rows']:,} rows x 20 columns** ({p['mb']:.1f} MB CSV; target `y`, two classes; "
                        f"Predict view defaults, LightGBM compared on the same split), {C.precision_text('auto')}:") + [""]
        rows.append(["upload to schema view", f"{p['upload_s']:.1f}"])
        if p["predict_s"] != p["predict_s"]:          # NaN: stopped at the limit
            rows.append(["Run prediction to the download button (FEAT + LightGBM)",
                         f"not finished after {p['limit_s']:.0f}"])
            targets.append(f"the {p['rows'] // 1000}k-row Predict under {target:.0f} s, **not met**")
        else:
            rows += [["Run prediction to the download button (FEAT + LightGBM)", f"{p['predict_s']:.1f}"],
                     ["of which FEAT (the app's own clock)", f"{p['feat_s']:.1f}"],
                     ["upload to downloadable predictions", f"**{p['total_s']:.1f}**"]]
            targets.append(f"the {p['rows'] // 1000}k-row Predict under {target:.0f} s, "
                           f"**{'met' if p['total_s'] <= target else 'not met'}**")
    f = recs.get("first")
    if f:
        rows.append([f"first answer, {f['rows']:,} rows: click to the first answer", f"{f['first_s']:.1f}"])
        targets.append(f"the first answer within {FIRST_S:.0f} s, **{'met' if f['first_s'] <= FIRST_S else 'not met'}**")
    r = recs.get("relations")
    if r:
        rows.append([f"Relations, {r['rows']:,} rows: click to the dependency graph", f"{r['seconds']:.1f}"])
        targets.append(f"Relations in {RELATIONS_S:.0f} s on a CPU that multiplies bf16, "
                       + (f"**{'met' if r['seconds'] <= RELATIONS_S else 'not met'}**" if bf16 else "not measured here"))
    u = recs.get("upload")
    if u:
        rows.append([f"upload of a {u['mb']:.0f} MB CSV ({u['rows']:,} rows) to the preview", f"{u['upload_s']:.1f}"])
    if rows:
        lines += [*C.markdown_table(["step", "seconds"], rows), ""]
    if recs.get("walk"):
        walk, said = walk_lines(recs["walk"], bf16)
        lines, targets = lines + walk, targets + said
    if targets:
        progress = (f" A progress bar was on screen in {p['progress_share']:.0%} of the samples."
                    if p and "progress_share" in p else "")
        lines += [*C.wrap("Targets: " + "; ".join(targets) + "." + progress), ""]
    lines += C.provenance(command, started, info, elapsed)
    return lines, recs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows of the prediction table (default 100,000; 0: skip)")
    p.add_argument("--first-rows", type=int, default=5_000,
                   help="rows of the table timed to the first answer (default 5,000; 0: skip)")
    p.add_argument("--relations-rows", type=int, default=10_000,
                   help="rows of the table the Relations view is timed on (default 10,000; 0: skip)")
    p.add_argument("--upload-mb", type=float, default=100.0, help="size of the upload-only CSV in MB (0: skip)")
    p.add_argument("--walk-rows", type=int, default=0,
                   help="rows of the table walked through the whole app (issue 65: 1,000,000; default 0: skip)")
    p.add_argument("--limit", type=float, default=600.0, help="seconds before the prediction is reported unfinished")
    C.add_common_args(p, section="app-timing")
    args = p.parse_args(argv)

    def measure() -> dict:
        out = {}
        with tempfile.TemporaryDirectory() as tmp, app_server(Path(tmp) / "server.log") as url, chromium() as browser:
            if args.rows:
                out["predict"] = _predict_large(url, browser, Path(tmp), args.rows, args.limit)
                print(f"[app-timing] predict: {out['predict']}", flush=True)
            if args.first_rows:
                out["first"] = _first_answer(url, browser, Path(tmp), args.first_rows, args.limit)
                print(f"[app-timing] first answer: {out['first']}", flush=True)
            if args.relations_rows:
                out["relations"] = _relations(url, browser, Path(tmp), args.relations_rows, args.limit)
                print(f"[app-timing] relations: {out['relations']}", flush=True)
            if args.walk_rows:
                out["walk"] = _walk(url, browser, Path(tmp), args.walk_rows, 2 * args.limit)
            if args.upload_mb:
                out["upload"] = _upload_big(url, browser, Path(tmp), args.upload_mb)
                print(f"[app-timing] upload: {out['upload']}", flush=True)
        return out

    return C.run_benchmark("app_timing.py", argv, args, measure, report)


if __name__ == "__main__":
    raise SystemExit(main())
