"""Peak memory of the app's Evaluate run, measured: the numbers behind the app's memory check (`app/io.py`).

For each table size (rows x columns), a fresh Python process builds the table as the Data view holds it (numbers,
every fifth column a 6-level text column, a yes/no target: `tests/app_driver.write_wide_csv`'s generator), notes
its resident memory, then runs what Predict's Evaluate runs through `app/engine.py` at the view's defaults (the
first answer, then fit and predict on a 75/25 split) and reports the peak resident memory above that note
(`resource.getrusage`). The least-squares fit of bytes = a + b x table cells + c x the context cells the engine
reads (the reading plan's, `app/io.py` `read_cells`) through the points is the memory model; `app/io.py`
`RUN_BYTES` holds its coefficients, with the margin said there.

    python bench/memory.py                                  # 10k, 100k and 1M rows x 20 columns; 100k x 10 and 50
    python bench/memory.py --sizes 10000x20,100000x20

Writes the "memory" section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from app import io as aio  # noqa: E402

SIZES = "10000x20,100000x20,1000000x20,100000x10,100000x50"
CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import numpy as np, pandas as pd, psutil
from sklearn.model_selection import train_test_split
from app import engine
from app import io as aio
n, d = {n}, {d}
rng = np.random.default_rng(0)
x = rng.standard_normal((n, d - 1)).round(4)
df = pd.DataFrame(x, columns=[f"x{{i}}" for i in range(d - 1)])
for i in range(4, d - 1, 5):
    df[f"x{{i}}"] = np.asarray(["north", "south", "east", "west", "up", "down"])[(x[:, i] * 2 + 3).clip(0, 5).astype(int)]
df["y"] = np.where(x[:, 0] + 0.5 * x[:, 1] * x[:, 2] + 0.5 * rng.standard_normal(n) > 0, "yes", "no")
table, _ = aio.apply_schema(df, {{c: t for c, (t, _) in aio.detect_types(df).items()}})
base = psutil.Process().memory_info().rss
t0 = time.perf_counter()
X, y = table.drop(columns=["y"]), table["y"]
tr, te = train_test_split(np.arange(n), test_size=0.25, random_state=0, stratify=y)
plan = engine.reading_plan("classification", {{}}, len(tr), X.shape[1], 2)
params = {{"n_estimators": plan.members, "random_state": 0}}
engine.first_answer(X.iloc[tr], y.iloc[tr], X.iloc[te], "classification", params)
fitted = engine.fit(X.iloc[tr], y.iloc[tr], "classification", params)
engine.predict(fitted.value, X.iloc[te])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"rows": n, "cols": d, "cells": n * d, "base": base, "peak": peak, "extra": peak - base,
                  "seconds": time.perf_counter() - t0, "members": plan.members, "rows_read": plan.rows}}))
"""


def estimated(rec: dict) -> int:
    """What the app's memory check (`app/io.py` `estimated_bytes`, with its margin) says the run needs."""
    return aio.estimated_bytes(rec["rows"], rec["cols"] - 1)


def measure(args) -> list[dict]:
    recs = []
    for size in args.sizes.split(","):
        n, d = (int(v) for v in size.split("x"))
        code = CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"), n=n, d=d)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        recs.append(rec)
        print(f"[memory] {n:,} x {d}: {rec['extra'] / 2**30:.2f} GiB above the table, {rec['seconds']:.0f} s",
              flush=True)
    return recs


def terms(rec: dict) -> list[float]:
    """The memory model's terms for a measured table: 1, its feature cells, the context cells the engine reads."""
    n, features = rec["rows"], rec["cols"] - 1
    return [1.0, float(n * features), float(aio.read_cells(n, features))]


def fit_model(recs: list[dict]) -> tuple[float, float, float]:
    """(a, b, c) of extra bytes = a + b x table cells + c x cells read, least squares."""
    coef, *_ = np.linalg.lstsq(np.array([terms(r) for r in recs]), np.array([r["extra"] for r in recs], float),
                               rcond=None)
    return tuple(float(v) for v in coef)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=SIZES, help="rows x columns, comma-separated")
    p.add_argument("--replot", default=None, help="a results JSON of an earlier run: fit and write it again")
    C.add_common_args(p, section="memory")
    args = p.parse_args(argv)
    command, started, t0 = C.command_line("memory.py", argv), C.now(), time.perf_counter()
    info = C.machine()
    if args.replot:             # the earlier run's measurements and provenance, fitted again
        old = json.loads(Path(args.replot).read_text())
        recs, command, started, info = old["runs"], old["command"], old["started"], old["machine"]
        t0 -= sum(r["seconds"] for r in recs)
    else:
        recs = measure(args)
    coef = fit_model(recs)
    rows = [[f"{r['rows']:,} × {r['cols']}", f"{terms(r)[2]:,.0f}", f"{r['extra'] / 2**30:.2f}",
             f"{np.dot(coef, terms(r)) / 2**30:.2f}", f"{estimated(r) / 2**30:.2f}", f"{r['seconds']:,.0f}"]
            for r in recs]
    body = ["## The app's memory model", "",
            *C.wrap("Peak resident memory of Predict's Evaluate run (first answer, fit, predict) above the loaded "
                    "table, at the view's defaults. The model, the least-squares fit, is extra bytes = "
                    f"{coef[0]:,.0f} + {coef[1]:,.1f} × feature cells + {coef[2]:,.1f} × the context cells the engine "
                    "reads; the app's check adds its margin (`app/io.py`)."), "",
            *C.markdown_table(["table", "cells read", "measured GiB", "model GiB", "app's check GiB", "s"], rows), "",
            *C.provenance(command, started, info, time.perf_counter() - t0)]
    C.finish("memory", body, args, {"command": command, "started": started, "machine": info, "runs": recs,
                                    "model": dict(zip(("fixed", "per_cell", "per_read"), coef))})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
