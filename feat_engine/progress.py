"""Progress of a call over many engine runs: the `Progress` callback type and the counter that merges
the runs' reports into one stream."""
from __future__ import annotations

import threading
import time
from typing import Callable

Progress = Callable[[int, int, str], None]
"""A progress callback: (done, total, message)."""

SCALE = 1_000_000   # a stream of runs of two kinds reports its share done in millionths

# What a fit's progress says that an app telling the time left can read (app/state.py): a classical-model fit's start
# and end, whose seconds the predictions do not repeat; and, while the held-out rows are read (`InContextBase.
# _held_output`), after each chunk of them, whether FEAT's reading has so far clearly improved on the classical
# models' (the predictions will read the engine), clearly not (weight 1: they will not), or neither yet (BLEND_OPEN)
CLASSICAL = ("fitting the classical models", "classical models fitted")
BLEND_OPEN = "comparing FEAT with the classical models on example rows held out of its reading"
SO_FAR = ("so far FEAT adds to the classical models", "so far the classical models alone do best")


class StepCounter:
    """Turns the runner's per-run progress into one (done, total, message) stream over all runs. Runs may
    report from worker threads (`inference.map_runs`): their latest report waits for `flush`, which the
    thread that made the counter calls, and the stream never moves back.

    `fits` of the n_runs are fits of the classical models rather than engine runs. Each kind then takes its
    share of the stream from the seconds its runs have taken so far on this machine (a kind not timed yet: the
    other's), re-estimated as runs end, so that the share done is a share of the time and the time left can be
    told from it. A run's seconds are the clock's, shared evenly among the runs under way at each moment
    (`map_runs`' workers run several at once). Runs of one kind count equally:
    (i * total + done, n_runs * total) for run i."""

    def __init__(self, progress: Progress | None, n_runs: int, fits: int = 0):
        self.progress, self.n_runs, self.run = progress, n_runs, 0
        self._planned = {"fit": fits, "run": n_runs - fits}
        self._mixed = 0 < fits < n_runs                       # two kinds to weigh; else every run counts alike
        self._made = {"fit": 0, "run": 0}                     # callbacks made so far, by kind
        self._timed = {"fit": [0.0, 0], "run": [0.0, 0]}      # seconds and runs ended, by kind
        self._clock: dict[int, float] = {}                    # seconds of the clock each run under way has had
        self._last = 0.0                                      # when the clock was last shared out
        self._owner, self._lock, self._shown, self._pending = threading.get_ident(), threading.Lock(), -1.0, None

    def callback(self, label: str, fit: bool = False) -> Progress | None:
        """Progress callback for the next run, a fit of the classical models where `fit` (None when nobody
        listens)."""
        if self.progress is None:
            return None
        kind = "fit" if fit and self._mixed else "run"
        with self._lock:
            i, self.run = self.run, self.run + 1
            before = dict(self._made)                          # runs of each kind ahead of this one
            self._made[kind] += 1
        began = [False]

        def cb(done: int, total: int, msg: str) -> None:
            now = time.monotonic()
            with self._lock:
                self._share_clock(now)
                if not began[0]:
                    began[0] = True
                    self._clock[i] = 0.0
                if total and done >= total and i in self._clock:
                    self._timed[kind][0] += self._clock.pop(i)
                    self._timed[kind][1] += 1
                frac = self._share(i, kind, before, done / total if total else 1.0)
                if frac < self._shown:
                    return
                self._shown = frac
                if self._mixed:
                    report = (round(frac * SCALE), SCALE)
                else:
                    report = (i * total + done, self.n_runs * total)
                self._pending = (*report, f"{label}: {msg}")
            if threading.get_ident() == self._owner:
                self.flush()
        return cb

    def _share_clock(self, now: float) -> None:
        """Share the seconds since the clock was last shared out evenly among the runs under way."""
        if self._clock:
            each = (now - self._last) / len(self._clock)
            for run in self._clock:
                self._clock[run] += each
        self._last = now

    def _share(self, i: int, kind: str, before: dict[str, int], within: float) -> float:
        """The stream's share done when run i (of `kind`, after `before` runs of each kind) is `within` through,
        each run weighted by its kind's seconds."""
        if not self._mixed:
            return (i + within) / max(self.n_runs, 1)
        mean = {k: s / n for k, (s, n) in self._timed.items() if n and s > 0}
        weight = {k: mean.get(k, sum(mean.values()) / len(mean) if mean else 1.0) for k in self._timed}
        total = sum(weight[k] * max(self._planned[k], self._made[k]) for k in weight)
        return min(1.0, (sum(weight[k] * n for k, n in before.items()) + weight[kind] * within) / total)

    def drop(self, runs: int) -> None:
        """Take `runs` planned engine runs out of the stream: runs found not to be needed (a member read for its
        stacked models alone), so that the share done stays a share of the time left."""
        with self._lock:
            self._planned["run"] -= runs
            self.n_runs -= runs

    def note(self, message: str) -> None:
        """Report `message` at the share done so far (on the counter's own thread, between runs)."""
        self.flush()
        if self.progress is not None:
            self.progress(round(max(self._shown, 0.0) * SCALE), SCALE, message)

    def flush(self) -> None:
        """Hand the latest report to `progress`; only on the counter's own thread (elsewhere it does nothing)."""
        if threading.get_ident() != self._owner:
            return
        with self._lock:
            report, self._pending = self._pending, None
        if report is not None and self.progress is not None:
            self.progress(*report)
