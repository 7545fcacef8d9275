"""The time left that the app tells, against the truth: FEAT's fit at its defaults on `--rows` labelled rows of a
development table (or of the generated table of the app's walk, `--table walk`), then its predictions of `--queries`
more, both under the Predict view's own progress callbacks (`app/state.progress_callback`; while FEAT learns, the
time left counts the predictions after it, `app/engine.predict_seconds`), every text shown timed. At a third, a half and
two thirds of the run, and at worst from a third on with 10 s or more left, the time left told over the seconds that
were in fact left (`app_timing.told_truth`). As in the Predict view, a fit of more than FIRST_ANSWER_ROWS rows
comes after the first answer, which is part of the run.

    python bench/progress_truth.py [--table adult_income] [--rows 12000] [--queries 4000] [--samples]

A diagnostic: it prints one JSON line and writes no section of docs/benchmarks.md
(docs/decisions/0038-app.md quotes its figures).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import common as C
from app_timing import told_truth, write_wide_csv

sys.path.insert(0, str(C.ROOT))
import feat_engine as fe  # noqa: E402
from app import engine, state  # noqa: E402


class _Bar:
    """An st.progress stand-in that keeps each text it is shown, with the seconds since `t0`."""

    def __init__(self, seen: list, t0: float):
        self.seen, self.t0 = seen, t0

    def progress(self, frac: float, text: str) -> None:
        self.seen.append((time.monotonic() - self.t0, text))


def _table(name: str, rows: int) -> tuple[pd.DataFrame, pd.Series, str]:
    """A development table, or the app walk's generated one (`tests/app_driver.write_wide_csv`) of `rows` rows."""
    if name != "walk":
        return C.load_table(name)
    with tempfile.TemporaryDirectory() as tmp:
        write_wide_csv(Path(tmp) / "walk.csv", rows, seed=3, empty=0.01)
        df = pd.read_csv(Path(tmp) / "walk.csv")
    return df.drop(columns="y"), df["y"], "classification"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--table", default="adult_income")
    p.add_argument("--rows", type=int, default=12_000)
    p.add_argument("--queries", type=int, default=4_000)
    p.add_argument("--samples", action="store_true", help="print each text shown and when, before the summary")
    args = p.parse_args()
    C.set_threads(2)
    C.quiet_warnings()
    X, y, task = _table(args.table, args.rows + args.queries)
    order = np.random.default_rng(C.SEED).permutation(len(X))
    tr, te = order[:args.rows], order[args.rows:args.rows + args.queries]
    classes = y.iloc[tr].nunique() if task == "classification" else 0
    plan = engine.reading_plan(task, {}, len(tr), X.shape[1], classes)
    after = engine.predict_seconds(plan, len(te), engine.runs_per_member(task, {}, classes))
    fe.load_model()                               # loaded before the run, as the app does when it starts
    seen, t0 = [], time.monotonic()
    if len(tr) > engine.FIRST_ANSWER_ROWS:        # as the Predict view: its first answer, then the full reading
        engine.first_answer(X.iloc[tr], y.iloc[tr], X.iloc[te], task, {}, state.progress_callback(_Bar(seen, t0)))
    fitted = engine.fit(X.iloc[tr], y.iloc[tr], task, {}, state.progress_callback(_Bar(seen, t0), after=after))
    fit_s = time.monotonic() - t0
    engine.predict(fitted.value, X.iloc[te], state.progress_callback(_Bar(seen, t0)))
    total = time.monotonic() - t0
    if args.samples:
        print("\n".join(f"{t:7.2f} {text}" for t, text in seen))
    at, worst = told_truth(seen, total)
    print(json.dumps(dict(table=args.table, rows=args.rows, queries=args.queries, seconds=round(total, 1),
                          fit_s=round(fit_s, 1), weight=getattr(fitted.value.blend_, "weight", None),
                          at={f"{s:.2f}": round(x, 2) for s, x in zip((1 / 3, 1 / 2, 2 / 3), at)},
                          worst=round(worst, 2))))


if __name__ == "__main__":
    main()
