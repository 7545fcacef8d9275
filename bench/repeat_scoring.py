"""Scoring a fitted estimator again: what kept context states (`StateCache` in `feat_engine/inference.py`) save.

A fitted `FEATClassifier` (one member by default, as in `scaling.py`'s end-to-end runs) on the first half of
`scaling.py`'s table (D = 10) scores the other half:
  - in one call, then the same call again;
  - in --partitions equal parts one after the other on a pickled copy of the fitted estimator, as a Dask
    worker scores the partitions it is given (it unpickles the estimator once), with states kept and with
    nothing kept (what every partition paid before);
  - one query row at a time, 20 rows: on such a copy (each row's local part most likely not read yet), and on
    the estimator that has scored every row once.

    python bench/repeat_scoring.py                       # 100,000 rows, 4 partitions
    python bench/repeat_scoring.py --rows 20000 --no-write

Writes the "repeat-scoring" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import pickle
import time

import common as C
import numpy as np
from scaling import _table


def _timed(f) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def measure(args) -> list[dict]:
    from feat_engine import FEATClassifier
    from feat_engine.inference import StateCache

    x, y, n_ctx = _table(args.rows, 0)
    est = FEATClassifier(n_estimators=args.n_estimators, random_state=0, checkpoint=args.checkpoint,
                         precision=args.precision)
    fit_s, _ = _timed(lambda: est.fit(x[:n_ctx], y[:n_ctx]))
    q = x[n_ctx:]
    first_s, first = _timed(lambda: est.predict_proba(q))
    again_s, again = _timed(lambda: est.predict_proba(q))
    recs = [{"case": "fit", "time_s": fit_s},
            {"case": "one call", "time_s": first_s},
            {"case": "the same call again", "time_s": again_s, "equal": bool(np.array_equal(first, again))}]
    parts = np.array_split(np.arange(len(q)), args.partitions)
    for kept in (False, True):
        worker = pickle.loads(pickle.dumps(est))          # as a Dask worker receives it: no states
        if not kept:
            worker._states = StateCache(max_bytes=0)      # keeps nothing: each partition encodes every context
        times, outs = zip(*(_timed(lambda p=p: worker.predict_proba(q[p])) for p in parts))
        recs.append({"case": f"{args.partitions} partitions, states {'kept' if kept else 'not kept'}",
                     "time_s": float(sum(times)), "per_partition_s": [round(t, 2) for t in times],
                     "equal": bool(np.array_equal(np.concatenate(outs), first))})
    for case, scorer in (("one row, states not read yet", pickle.loads(pickle.dumps(est))), ("one row, states kept", est)):
        timed = [_timed(lambda i=i: scorer.predict_proba(q[i:i + 1])) for i in range(20)]
        recs.append({"case": f"{case} (median of 20 rows)", "time_s": float(np.median([t for t, _ in timed])),
                     "equal": all(np.array_equal(o[0], first[i]) for i, (_, o) in enumerate(timed))})
    for r in recs:
        print(f"[repeat-scoring] {r['case']}: {r['time_s']:.3f} s", flush=True)
    return recs


def report(recs, args, info, command, started, elapsed) -> tuple[list[str], dict]:
    rows = [[r["case"], f"{r['time_s']:.3f}",
             "" if "equal" not in r else ("yes" if r["equal"] else "**no**"),
             ", ".join(map(str, r.get("per_partition_s", [])))] for r in recs]
    lines = ["## Scoring again: kept context states", "",
             f"`FEATClassifier(n_estimators={args.n_estimators})` fitted on {args.rows // 2:,} rows of `scaling.py`'s "
             f"table (D = 10), scoring the other {args.rows - args.rows // 2:,}; {C.precision_text(args.precision)}; "
             f"checkpoint {C.checkpoint_line(args.checkpoint)}. Partitions are scored one after the other on a pickled "
             "copy of the fitted estimator, as a Dask worker scores its partitions. \"Same numbers\": equal, bit for "
             "bit, to the first one-call prediction.", "",
             *C.markdown_table(["case", "seconds", "same numbers", "per partition (s)"], rows), ""]
    lines += C.provenance(command, started, info, elapsed)
    return lines, {r["case"]: r["time_s"] for r in recs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="table rows, half of them context (default 100,000)")
    p.add_argument("--partitions", type=int, default=4, help="partitions a worker scores in turn (default 4)")
    p.add_argument("--n-estimators", type=int, default=1, help="members (default 1, as scaling.py)")
    C.add_precision_arg(p)
    C.add_common_args(p, section="repeat-scoring")
    args = p.parse_args(argv)
    return C.run_benchmark("repeat_scoring.py", argv, args, lambda: measure(args),
                           lambda recs, *rest: report(recs, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
