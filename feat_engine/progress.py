"""Progress of a call over many engine runs: the `Progress` callback type and the counter that merges
the runs' reports into one stream."""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Callable

Progress = Callable[[int, int, str], None]
"""A progress callback: (done, total, message)."""

SCALE = 1_000_000   # a stream of runs of two kinds reports its share done in millionths
TOLD_SHARE = 0.1    # a run under way is weighed by its own pace once it has told this share of itself

# What a fit's progress says of its classical models' fit (its start and end), and what an app telling the time left
# can read (app/state.py): from the start of a fit that chooses its blend on held-out rows, and after each chunk of
# them it reads (`InContextBase._held_output`), whether the predictions will read the engine as things stand: yes
# (FEAT's reading has so far clearly improved on the classical models'), no (weight 1: it has not), or not known yet
# (BLEND_OPEN: a blend that takes the best weight, whichever side it falls)
CLASSICAL = ("fitting the classical models", "classical models fitted")
BLEND_OPEN = "comparing FEAT with the classical models on example rows held out of its reading"
SO_FAR = ("so far FEAT adds to the classical models", "so far FEAT has not clearly improved on the classical models")


def blend_note(side: bool | None, clear: bool) -> str:
    """What a fit says of its blend: SO_FAR[side] for the side the held rows read so far clearly choose (True: the
    stacked models alone; `blend.clear_side`), BLEND_OPEN for neither; but where the blend keeps them alone unless
    clearly beaten (`clear`: `choose_blend(clear=True)`), neither is SO_FAR[True]."""
    side = True if side is None and clear else side
    return BLEND_OPEN if side is None else SO_FAR[side]


class Pace:
    """Seconds per unit of work (a cell the engine reads, a row a classical model scores) of this process's latest
    runs of one kind on this machine: the runs' seconds over their units, each new run halving the weight of those
    before it, so that the pace follows the machine's load. `seconds(units)` is None until a run is measured. What
    tells the time left reads it (`StepCounter`, the app's Predict view)."""

    def __init__(self):
        self._seconds, self._units, self._lock = 0.0, 0.0, threading.Lock()

    def add(self, seconds: float, units: float) -> None:
        """Measure one run: `units` of work in `seconds`."""
        if units > 0 and seconds > 0:
            with self._lock:
                self._seconds, self._units = self._seconds / 2 + seconds, self._units / 2 + units

    def seconds(self, units: float) -> float | None:
        """The seconds `units` of work take at the pace measured so far; None before any measure."""
        with self._lock:
            return None if self._units == 0 else units * self._seconds / self._units


# the engine's seconds per cell (rows read x the member's features + 1) of its reads (`runner.member_output`), by
# how many runs it reads at once (`inference.runs_at_once`): one run on every thread leaves cores idle that runs side
# by side use. Both are first timed when a checkpoint loads (`inference.warm_up`, on tables of a local part's shape),
# and AT_ONCE, each number's seconds a cell against one run at a time's there (0.68-0.89 on two cores), carries a
# pace measured one way over to the other (docs/decisions/0038-app.md)
ENGINE_PACE: dict[int, Pace] = defaultdict(Pace)
AT_ONCE: dict[int, float] = {1: 1.0}
SCORING_PACE = Pace()    # a stacked model's seconds per row scored: `stacked_model._score`
PREP_PACE = Pace()       # a table's seconds per row prepared (`TablePreprocessor.detail`), timed on the context's rows
                         # at fit (`FEATBase._fit_features`), many at once: the query rows' pace, which a 1,024-row
                         # call's set-up overstates (7 against 1.6 us a row)


def engine_seconds(cells: float, at_once: int) -> float | None:
    """The seconds the engine takes to read `cells` with `at_once` runs at a time: at the pace of its reads made so,
    else of those one at a time, else of any, carried over by AT_ONCE; None before any read."""
    for k in (at_once, 1, *list(ENGINE_PACE)):
        seconds = ENGINE_PACE[k].seconds(cells) if k in ENGINE_PACE else None
        if seconds is not None:
            return seconds * AT_ONCE.get(at_once, 1.0) / AT_ONCE.get(k, 1.0)
    return None


class StepCounter:
    """Turns the runner's per-run progress into one (done, total, message) stream over all runs. Runs may
    report from worker threads (`inference.map_runs`): their latest report waits for `flush`, which the
    thread that made the counter calls, and the stream never moves back.

    `fits` of the n_runs are fits of the classical models rather than engine runs. Each kind then takes its
    share of the stream from the seconds its runs take on this machine, re-estimated as runs go, so that the share
    done is a share of the time and the time left can be told from it: the mean of its runs ended; before one has,
    for the engine runs the `engine_s` seconds expected of them all (`engine_seconds`), for a fit under way its length
    at the pace it goes (`_length`); else what the other kind's runs take. A run's seconds are the clock's, shared
    evenly among the runs under way at each moment (`map_runs`' workers run several at once). Runs of one kind
    count equally: (i * total + done, n_runs * total) for run i."""

    def __init__(self, progress: Progress | None, n_runs: int, fits: int = 0, engine_s: float | None = None):
        self.progress, self.n_runs, self.run = progress, n_runs, 0
        self._planned = {"fit": fits, "run": n_runs - fits}
        self._mixed = 0 < fits < n_runs                       # two kinds to weigh; else every run counts alike
        self._made = {"fit": 0, "run": 0}                     # callbacks made so far, by kind
        self._timed = {"fit": [0.0, 0], "run": [0.0, 0]}      # seconds and runs ended, by kind
        self._expected = None if not engine_s else engine_s / max(n_runs - fits, 1)     # an engine run's seconds
        self._clock: dict[int, float] = {}                    # seconds of the clock each run under way has had
        self._within: dict[int, tuple[str, float, float, float]] = {}   # each run under way's kind, share done, and
                                                              # clock and share at its first report of a share
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
                within = done / total if total else 1.0
                if i in self._clock:
                    if within > 0:
                        first = self._within.get(i, (kind, within, self._clock[i], within))[2:]
                        self._within[i] = (kind, within, *first)
                    if total and done >= total:
                        self._timed[kind][0] += self._clock.pop(i)
                        self._timed[kind][1] += 1
                        self._within.pop(i, None)
                frac = self._share(i, kind, before, within)
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
        if "run" not in mean and self._expected:
            mean["run"] = self._expected
        for k in set(self._timed) - set(mean):
            under = [t for t in (self._length(j) for j, told in self._within.items() if told[0] == k) if t]
            if under:
                mean[k] = max(under)
                if kind == k and i in self._within:      # its share done: of that length, the clock's
                    within = min(1.0, self._clock[i] / mean[k])
        weight = {k: mean.get(k, sum(mean.values()) / len(mean) if mean else 1.0) for k in self._timed}
        total = sum(weight[k] * max(self._planned[k], self._made[k]) for k in weight)
        return min(1.0, (sum(weight[k] * n for k, n in before.items()) + weight[kind] * within) / total)

    def _length(self, i: int) -> float | None:
        """The seconds run i under way will take in all, once it has told TOLD_SHARE of itself: its clock so far, and
        the share still to do at the pace of the share told since its first report of one (what came before, set-up,
        is not told in shares); where that first report told TOLD_SHARE at once, its clock over its share. None
        before: a tree model's first rounds go slower than its later ones (1.7 times on the 1M walk's table), and a
        fit's length told from them read 1.5 times the truth."""
        _, within, clock0, within0 = self._within[i]
        clock = self._clock[i]
        if within - within0 >= TOLD_SHARE:
            return clock + (1 - within) * (clock - clock0) / (within - within0)
        return clock / within if within0 >= TOLD_SHARE else None

    def expect(self, runs: int) -> None:
        """Plan `runs` engine runs in all (never fewer than made): as things stand, members to be read for their
        stacked models alone do not run theirs, so that the share done stays a share of the time left."""
        with self._lock:
            runs = max(runs, self._made["run"])
            self.n_runs += runs - self._planned["run"]
            self._planned["run"] = runs

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
