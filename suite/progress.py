"""Progress of a long phase on the terminal: done/total, elapsed and an estimate of what is left.

On a terminal, a `rich` progress bar, as wide as the terminal, redrawn in place (what is printed
to stderr meanwhile goes above it); into a file or a pipe a line is printed at most every
``every_s`` seconds (and at the end), so that logs stay short.

The time left is estimated by cost, not by count: each step may have a kind and a weight
(``costs``: a run's combinations are of a target and dtype, weighed by FLOPs), and what is left is
the weight left of each kind at the seconds per weight measured so far for that kind (for a kind
not seen yet, at the rate of all). Without ``costs`` every step weighs the same.
"""

from __future__ import annotations

import atexit
import sys
import time
from collections import defaultdict
from collections.abc import Hashable, Sequence


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds // 60 % 60:02d}"


def announce(phase: str, stream=None) -> None:
    """Say that a phase begins (a line, so that logs and whoever watches the run see where it is)."""
    stream = stream or sys.stderr
    stream.write(f"{phase}: started\n")
    stream.flush()


def _bar(stream, counted: bool, redirect_stdout: bool):
    """rich's progress bar on the terminal ``stream``: as wide as the terminal, the label last (cut
    to what fits), the time left the task's field ``left`` (a function; rich, imported only for a terminal).
    What this process prints to stderr (and to stdout, where ``redirect_stdout``) while it is shown
    goes above it."""
    from rich.console import Console
    from rich.progress import BarColumn, ProgressColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar
    from rich.table import Column
    from rich.text import Text

    class Left(ProgressColumn):
        def render(self, task) -> Text:  # at each redraw: the step under way counts down
            left = task.fields["left"]()
            return Text("" if left is None else f"about {_clock(left)} left", style="progress.remaining")

    return Bar(TextColumn("{task.description}:", markup=False), BarColumn(bar_width=30),
               *([TextColumn("{task.completed:.0f}/{task.total:.0f}")] if counted else []),
               TaskProgressColumn(), TimeElapsedColumn(), Left(),
               TextColumn("{task.fields[label]}", style="dim", markup=False,
                          table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
               console=Console(file=stream, force_terminal=True), transient=True, refresh_per_second=2,
               redirect_stdout=redirect_stdout, redirect_stderr=stream is sys.stderr, expand=True)


class Progress:
    def __init__(self, phase: str, total: float, stream=None, every_s: float = 10.0, counted: bool = True,
                 costs: Sequence[tuple[Hashable, float]] | None = None):
        """``total`` steps of a phase; ``counted=False`` shows a percentage only (total = 100);
        ``costs``: a (kind, weight) per step, in the order of the steps, for the time left."""
        self.phase, self.total, self.counted = phase, max(total, 1), counted
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = self.last = self._stepped = time.monotonic()
        self.every_s = every_s
        self.done = 0.0
        self.costs = list(costs) if costs is not None else None
        self._spent: dict = defaultdict(float)  # kind -> seconds its finished steps took
        self._weighed: dict = defaultdict(float)  # kind -> their weight
        self._bar = self._task = None
        if self.tty:
            # stdout is routed above the bar only where it is this terminal too, never out of a file.
            self._bar = _bar(self.stream, counted, hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
            self._task = self._bar.add_task(phase, total=self.total, label="", left=self.left)
            self._bar.start()
            atexit.register(self.close)  # a phase left by an exception still gives the terminal back

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind, *exc) -> None:
        if kind is None:
            self.finish()
        else:  # the phase did not end: the bar goes, nothing is said
            self.close()

    def left(self, now: float | None = None) -> float | None:
        """Seconds the rest of the phase should take, by cost; None before the first step."""
        now = time.monotonic() if now is None else now
        if not self.done:
            return None
        if self.costs is None:
            return (now - self.started) / self.done * (self.total - self.done)
        spent, weighed = dict(self._spent), dict(self._weighed)  # copies: the bar's thread asks too
        overall = sum(spent.values()) / max(sum(weighed.values()), 1e-12)
        left = 0.0
        for kind, weight in self.costs[int(self.done):]:
            left += (spent[kind] / weighed[kind] if weighed.get(kind) else overall) * weight
        return max(left - (now - self._stepped), 0.0)  # the step under way has begun

    def update(self, done: float, label: str = "") -> None:
        self.done = done
        now = time.monotonic()
        if self._bar is not None:
            self._bar.update(self._task, completed=done, label=label)
            return
        if now - self.last < self.every_s and done < self.total:
            return
        self.last = now
        left = self.left(now)
        count = f"{done:.0f}/{self.total:.0f} " if self.counted else ""
        self.stream.write(f"{self.phase}: {count}({100 * done / self.total:.0f}%), {_clock(now - self.started)} "
                          f"elapsed, about {_clock(left or 0.0)} left{'  ' + label[:60] if label else ''}\n")
        self.stream.flush()

    def step(self, label: str = "") -> None:
        now = time.monotonic()
        if self.costs is not None and int(self.done) < len(self.costs):
            kind, weight = self.costs[int(self.done)]
            self._spent[kind] += now - self._stepped
            self._weighed[kind] += weight
        self._stepped = now
        self.update(self.done + 1, label)

    def close(self) -> None:
        """Take the bar off the terminal (nothing said); again: nothing."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            atexit.unregister(self.close)

    def finish(self) -> None:
        self.close()
        self.stream.write(f"{self.phase}: done in {_clock(time.monotonic() - self.started)}\n")
        self.stream.flush()
