"""Session state and caches shared by the views (the only helper module that imports Streamlit).

* the model: loaded once per process with `st.cache_resource` (`model_info`);
* parsed uploads: `st.cache_data` keyed by the sha256 of the uploaded bytes; tables on the server, by
  path or SQL query, read once per click, with the stamp of the files read (`open_on_server`);
* the current dataset and the user's column types: `st.session_state`;
* results of runs: stored in session state next to the dataset digest and parameters
  they were made with, so a rerun (a widget moved, a download clicked) does not redo them.
"""
from __future__ import annotations

import hashlib
import re
import secrets
import time
from functools import partial
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

from feat_engine.progress import BLEND_OPEN, SO_FAR

from . import downloads, engine
from . import io as aio
from .notes import note_words, shown_notes

DS = "dataset"          # dict: name, df, digest, target, source, notes, detected, origin
TYPES = "types"         # dict column -> numeric | categorical | ignore (the user's choice)
SESSION = "s"           # the query parameter that names a browser session's saved work
KEPT_SESSIONS = 8       # saved sessions the server keeps, the most recently used
RUNS = "runs"           # runs started in this session, whose count says which of two places a run's box takes


@st.cache_resource(show_spinner=False)
def _saved() -> dict[str, dict]:
    """The server's saved sessions: session id -> the table, its column types and the results (newest last)."""
    return {}


def restore_session() -> None:
    """Name this browser session in the page's address (`?s=...`) and, where a reload started a new Streamlit
    session under a known name, bring back its table, column types and results."""
    sid = st.query_params.get(SESSION)
    saved = _saved()
    if sid in saved and DS not in st.session_state:
        st.session_state.update(saved[sid])
    if not sid:
        sid = st.session_state.get(SESSION) or secrets.token_urlsafe(9)
    st.session_state[SESSION] = sid
    st.query_params[SESSION] = sid           # page switches drop it from the address: set it on every run


def save_session() -> None:
    """Keep this session's table, column types and results on the server for a reload (KEPT_SESSIONS at most)."""
    sid = st.session_state.get(SESSION)
    if not sid or DS not in st.session_state:
        return
    saved = _saved()
    saved.pop(sid, None)
    saved[sid] = {k: v for k, v in st.session_state.items() if k in (DS, TYPES) or str(k).startswith("result:")}
    while len(saved) > KEPT_SESSIONS:
        saved.pop(next(iter(saved)))


@st.cache_resource(show_spinner="Loading the FEAT checkpoint ...")
def model_info(name: str = "small") -> dict:
    """A shipped checkpoint ("small" or "fast"), loaded once per server process."""
    return engine.model_info(name)


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@st.cache_data(show_spinner=False, max_entries=8)   # the Data view shows its own spinner
def _parse_cached(digest: str, name: str, delimiter: str, encoding: str, max_mb: float, _data: bytes) -> aio.Loaded:
    # `_data` is not hashed: the key is the digest of the bytes (plus the reading options)
    return aio.read_table_bytes(_data, name, delimiter=delimiter, encoding=encoding, max_mb=max_mb)


def parse_upload(data: bytes, name: str, delimiter: str = "auto", encoding: str = "auto",
                 max_mb: float = aio.MAX_UPLOAD_MB) -> tuple[aio.Loaded, str]:
    digest = digest_of(data)
    return _parse_cached(digest, name, delimiter, encoding, float(max_mb), data), digest


@st.cache_data(show_spinner=False, max_entries=4)
def _sample_cached(key: str) -> tuple[pd.DataFrame, str]:
    return aio.load_sample(key)


def set_dataset(name: str, df: pd.DataFrame, digest: str, source: str, target: str | None = None,
                notes: list[str] | None = None, origin: dict | None = None) -> None:
    """Make `df` the current dataset (resets column types and earlier results if it changed). `origin`: for a
    table read on the server, what was read and when (`open_on_server`)."""
    cur = st.session_state.get(DS)
    if cur is not None and cur["digest"] == digest:
        return
    with st.spinner(f"Detecting the column types of {name} ..."):
        detected = aio.detect_types(df)
    st.session_state[DS] = {"name": name, "df": df, "digest": digest, "source": source, "target": target,
                            "notes": notes or [], "detected": detected, "origin": origin}
    st.session_state[TYPES] = {c: t for c, (t, _) in detected.items()}
    for k in list(st.session_state.keys()):
        if str(k).startswith("result:") or k == FITS:
            del st.session_state[k]
    st.rerun()  # so that the sidebar (drawn before the page) shows the new dataset


def open_on_server(source: str, sql: bool = False, delimiter: str = "auto", encoding: str = "auto") -> None:
    """Make the table at the path `source` on this server, or with `sql` the result of the query `source`, the
    dataset, as an upload is (`aio.read_source`); it keeps the stamp of the files read and the time, for
    `server_changes`. TableError when it cannot be read."""
    loaded, stamp = aio.read_source(source, sql, delimiter, encoding)
    digest = digest_of(repr((source, sql, delimiter, encoding, stamp)).encode())
    notes = aio.read_notes(loaded) + ([f"query `{' '.join(source.split())}`"] if sql else [])
    origin = {"source": source, "sql": sql, "stamp": stamp, "read_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    source_words = "SQL query on this server" if sql else f"file on this server, {loaded.fmt}"
    set_dataset(loaded.name, loaded.df, digest, source_words, notes=notes, origin=origin)


def server_changes() -> list[str]:
    """For a dataset read on this server, how the files it read differ now from when it was read
    (`aio.source_changes`); [] for others, and when nothing changed."""
    origin = (dataset() or {}).get("origin")
    return aio.source_changes(origin["source"], origin["sql"], origin["stamp"]) if origin else []


def load_sample(key: str) -> None:
    df, target = _sample_cached(key)
    set_dataset(key, df, f"sample:{key}", "sample (scikit-learn)", target)


def dataset() -> dict | None:
    return st.session_state.get(DS)


def types() -> dict[str, str]:
    return st.session_state.get(TYPES, {})


def model_table() -> tuple[pd.DataFrame, list[str]]:
    """The current dataset as the model sees it (ignored columns dropped, overrides applied)."""
    ds = dataset()
    return _apply_schema_cached(ds["digest"], tuple(sorted(types().items())), ds["df"])


@st.cache_data(show_spinner=False, max_entries=8)
def _apply_schema_cached(digest: str, types_items: tuple, _df: pd.DataFrame):
    return aio.apply_schema(_df, dict(types_items))


def require_dataset() -> dict | None:
    """The dataset, or an info box pointing to the Data view (and None)."""
    ds = dataset()
    if ds is None:
        st.info("No table loaded yet. Open **Data** to upload a file or pick a sample table.")
        st.page_link("views/data.py", label="Go to Data", icon=":material/table:")
    return ds


def open_page(title: str) -> tuple[dict, pd.DataFrame]:
    """The page's title, then the dataset and the table the model reads; without a table, a pointer to the Data
    view and the page stops there."""
    st.title(title)
    ds = require_dataset()
    if ds is None:
        st.stop()
    return ds, model_table()[0]


def run_and_result_areas(clicked: bool) -> tuple[Any, Any]:
    """Two places, in page order, for a view's run (its box, its errors) and its stored result, made before a run
    that `clicked` starts. The run clears the last one off the page as it starts: Streamlit leaves a rerun's old
    elements on the page until the script reaches them again, greyed but live, so the last result's download
    buttons handed out its files and its widgets would stop the new run, and the last run's box showed its first
    answer under the new run's progress. The result's place is an `st.empty`, filled after the run (at once on any
    other rerun, without a flicker); the runs take turns between two such places, so that the one the last run
    used is emptied as the new one starts."""
    turn = st.session_state.get(RUNS, 0) + clicked
    st.session_state[RUNS] = turn
    places = st.empty(), st.empty()
    return places[turn % 2].container(), st.empty()


def shown_result(kind: str) -> dict:
    """The view's stored run on the current table, below a divider with FEAT's warnings on it (in an analyst's
    words, `shown_notes`); without one the page stops here. After a Cancel click, a note that the run stopped comes
    first."""
    said_cancelled(kind)
    res = result(kind)
    if res is None:
        st.stop()
    st.divider()
    for w in shown_notes(res["warnings"]):
        st.warning(f"FEAT: {w}", icon=":material/warning:")
    return res


def result(kind: str) -> dict | None:
    r = st.session_state.get(f"result:{kind}")
    ds = dataset()
    if r is None or ds is None or r.get("digest") != ds["digest"]:
        return None
    return r


FITS = "fits"          # the fitted estimators of this session, newest last
KEPT_FITS = 2          # ... at most this many (each holds its context and encoded states)


def fit_key(target: str, task: str, rows: np.ndarray, params: dict, model: str = "small") -> str:
    """The key of a fit: the table and its column types, the target and task, the example rows, the settings and
    the shipped model (by name: `params` holds it loaded)."""
    ds = dataset()
    settings = sorted((k, repr(v)) for k, v in params.items() if k != "checkpoint") + [("model", model)]
    parts = [ds["digest"] if ds else "", repr(sorted(types().items())), str(target), task,
             hashlib.sha256(np.asarray(rows, np.int64).tobytes()).hexdigest(), repr(settings)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def kept_fit(key: str) -> Any | None:
    """The fitted estimator kept under `key`, or None."""
    return dict(st.session_state.get(FITS, [])).get(key)


def keep_fit(key: str, estimator: Any) -> None:
    """Keep a fitted estimator for the next run on the same data and settings (the KEPT_FITS newest)."""
    fits = [(k, e) for k, e in st.session_state.get(FITS, []) if k != key] + [(key, estimator)]
    st.session_state[FITS] = fits[-KEPT_FITS:]


def store_result(kind: str, value: dict[str, Any]) -> None:
    ds = dataset()
    value["digest"] = ds["digest"] if ds else None
    st.session_state[f"result:{kind}"] = value


# the engine's progress words -> an analyst's (a display choice: the engine's stream stays as the CLI prints it)
_WORDS = [
    (re.compile(r"\ball members\b"), "all passes"),
    (re.compile(r"\bmember (\d+)/(\d+)"), r"pass \1 of \2"),
    (re.compile(r"\bclass (\d+)/(\d+)"), r"class \1 of \2"),
    (re.compile(r"\b(?:part|batch of parts) (\d+)/(\d+)"), r"group of rows \1 of \2"),
    (re.compile(r"context block \d+/\d+ done"), "reading the example rows"),
    (re.compile(r"\b(block|column) (\d+)/(\d+)"), r"\1 \2 of \3"),
    (re.compile(r"encoding (\d+) context rows( of \d+ tables)?"), r"reading \1 example rows"),
    (re.compile(r"\d+ context rows read before"), "example rows already read"),
    (re.compile(r"query rows (\d+)/(\d+)"), r"predicting rows, \1 of \2"),
    (re.compile(r"choosing the reading"), "trying context sizes"),
    (re.compile(r"\b\d{4,}\b"), lambda m: f"{int(m.group()):,}"),
]


def progress_words(message: str) -> str:
    """An engine progress message in an analyst's words ("member 1/4, part 2/6: encoding 1024 context rows" ->
    "pass 1 of 4, group of rows 2 of 6: reading 1,024 example rows")."""
    for pattern, words in _WORDS:
        message = pattern.sub(words, message)
    return message


SHOWN_EVERY = 0.2       # seconds between two moves of a progress bar by reports of one step, at least


def progress_callback(bar, prefix: str = "", after: Callable[[bool], float] | None = None):
    """An estimator progress callback that moves an st.progress bar, in an analyst's words (each message after
    `prefix`), with the time left once it can be told (from the share done so far of the current phase: the text
    before the first colon; the engine's share is one of the time, `StepCounter`), before that the time so far.
    The steps after the phase take `after(engine)` seconds, asked at each report (the paces measured so far: `engine.
    predict_seconds`), with the engine's reading or with the classical models alone (a blend at weight 1). The fit
    says which as things stand (`progress.blend_note`); while it says the blend is open (BLEND_OPEN), the time left
    told is the harmonic mean of the two outcomes (at most twice the shorter; their geometric mean, as far in ratio
    from either, told adult 1.3 times the truth for no gain elsewhere: decision 0038); before it says anything, with
    the engine's reading. Reports of one step (the text before the last colon) move the bar at most every SHOWN_EVERY
    seconds: a short engine run reports ten times in 0.3 s, and each report the browser draws takes the cores that
    run uses; a new step always shows."""
    clock = {"phase": None, "start": time.monotonic(), "blend": None, "shown": 0.0, "step": None}

    def cb(done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        frac = 0.0 if not total else max(0.0, min(1.0, done / total))
        message = prefix + str(message)
        phase = message.split(":", 1)[0]
        if phase != clock["phase"]:
            clock.update(phase=phase, start=now, blend=None)
        if BLEND_OPEN in message:
            clock["blend"] = "open"
        elif SO_FAR[0] in message or SO_FAR[1] in message:
            clock["blend"] = SO_FAR[1] in message        # True: the predictions read no engine
        step = message.rsplit(":", 1)[0]
        if step == clock["step"] and now - clock["shown"] < SHOWN_EVERY and frac < 1:
            return
        clock.update(shown=now, step=step)
        text = progress_words(message)
        elapsed = now - clock["start"]
        if 0.05 <= frac < 1 and elapsed >= 3:
            left = elapsed * (1 - frac) / frac
            if after is not None:
                alone, read = left + after(False), left + after(True)
                left = alone if clock["blend"] is True else 2 * alone * read / (alone + read) \
                    if clock["blend"] == "open" else read
            text += f" (about {seconds_text(left)} left)" if left >= 0.5 else " (almost done)"
        elif frac < 1 and elapsed >= 10:        # too early to tell the time left: how long it has run
            text += f" ({seconds_text(elapsed)} so far)"
        bar.progress(frac, text=text[:200])
    return cb


def seconds_text(s: float) -> str:
    """A duration as an analyst reads it: "under 1 s", "8 s", "2 min 5 s", "1 h 3 min"."""
    s = max(0, int(round(s)))
    if s == 0:                  # a first answer or a kept fit's predictions: "in 0 s" read as nothing at all
        return "under 1 s"
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def cancel_button(where: str) -> None:
    """A Cancel button beside a long run: a click makes Streamlit start the page again, which stops the run at its
    next progress report; the table and the earlier results stay (`said_cancelled` then says so)."""
    st.button("Cancel", key=f"cancel:{where}", icon=":material/cancel:",
              help="Stop this run. The table and the earlier results are kept.")


def said_cancelled(where: str) -> None:
    """On the run a Cancel click started: a note that the run stopped and nothing was lost."""
    if st.session_state.get(f"cancel:{where}"):
        st.info("The run was cancelled. The table and the earlier results are as they were.", icon=":material/cancel:")


def download_button(where: Any, label: str, data: Any, file_name: str, mime: str, key: str, **kwargs: Any) -> None:
    """Every download button of the app, in the container `where` (`st` or a column): `data` bytes, or a function
    Streamlit calls when the button is clicked. A click does not rerun the page (`on_click="ignore"`): a rerun drops
    the file a click asked for, and when it ends before the browser's request arrives, Streamlit answers "not found"
    and nothing downloads (docs/decisions/0038-app.md)."""
    where.download_button(label, data, file_name, mime, key=key, on_click="ignore", **kwargs)


def report_button(title: str, parts: list[tuple[str, object]], filename: str, key: str) -> None:
    """A download button for one run's report (`downloads.report_html`): its settings, scores, figures and table,
    written when the button is clicked (Streamlit calls the function), not on every rerun of the page."""
    download_button(st, "Download a report of this run (HTML)", partial(downloads.report_html, title, list(parts)),
                    filename, "text/html", key, help="One page with the settings, the results, the figures "
                                                     "(interactive) and the table; it opens in any browser, offline.")


def show_error(e: Exception, where: Any = st) -> None:
    """A TableError or EngineError (in an analyst's words, `note_words`) as a red box, in `where` (a run's area,
    `run_and_result_areas`; the page where it is drawn by default); never a traceback."""
    if isinstance(e, aio.TableError):
        where.error(f"**{e.problem}**\n\n{e.fix}" if e.fix else f"**{e.problem}**", icon=":material/error:")
    else:
        where.error(note_words(str(e)), icon=":material/error:")


def run_params(model: str = "small", **kw) -> dict:
    """Estimator arguments: the user's run parameters plus the shipped model `model` ("small" or "fast") cached by
    `model_info` (so every run reuses the one loaded checkpoint)."""
    try:
        base = dict(model_info(model)["estimator_args"])
    except Exception:  # the engine then loads (and reports on) the checkpoint itself
        base = {"checkpoint": model}
    base.update(kw)
    return base
