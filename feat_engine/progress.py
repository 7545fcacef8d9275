"""Progress of a call over many engine runs: the `Progress` callback type and the counter that merges
the runs' reports into one stream."""
from __future__ import annotations

import threading
from typing import Callable

Progress = Callable[[int, int, str], None]
"""A progress callback: (done, total, message)."""


class StepCounter:
    """Turns the runner's per-run progress into one (done, total, message) stream over all runs. Runs may
    report from worker threads (`inference.map_runs`): their latest report waits for `flush`, which the
    thread that made the counter calls, and the stream never moves back."""

    def __init__(self, progress: Progress | None, n_runs: int):
        self.progress, self.n_runs, self.run = progress, n_runs, 0
        self._owner, self._lock, self._shown, self._pending = threading.get_ident(), threading.Lock(), -1, None

    def callback(self, label: str) -> Progress | None:
        """Progress callback for the next run (None when nobody listens)."""
        if self.progress is None:
            return None
        with self._lock:
            i, self.run = self.run, self.run + 1

        def cb(done: int, total: int, msg: str) -> None:
            with self._lock:
                if i * total + done < self._shown:
                    return
                self._shown = i * total + done
                self._pending = (self._shown, self.n_runs * total, f"{label}: {msg}")
            if threading.get_ident() == self._owner:
                self.flush()
        return cb

    def flush(self) -> None:
        """Hand the latest report to `progress`; only on the counter's own thread (elsewhere it does nothing)."""
        if threading.get_ident() != self._owner:
            return
        with self._lock:
            report, self._pending = self._pending, None
        if report is not None and self.progress is not None:
            self.progress(*report)
