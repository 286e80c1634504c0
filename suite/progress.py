"""Progress of a long phase on the terminal: done/total, elapsed and an estimate of what is left.

On a terminal one line is rewritten in place; into a file or a pipe a line is printed at most every
``every_s`` seconds (and at the end), so that logs stay short.
"""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds // 60 % 60:02d}"


def announce(phase: str, stream=None) -> None:
    """Say that a phase begins (a line, so that logs and whoever watches the run see where it is)."""
    stream = stream or sys.stderr
    stream.write(f"{phase}: started\n")
    stream.flush()


class Progress:
    def __init__(self, phase: str, total: float, stream=None, every_s: float = 10.0, counted: bool = True):
        """``total`` steps of a phase; ``counted=False`` shows a percentage only (total = 100)."""
        self.phase, self.total, self.counted = phase, max(total, 1), counted
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = self.last = time.monotonic()
        self.every_s = every_s
        self.done = 0.0

    def update(self, done: float, label: str = "") -> None:
        self.done = done
        now = time.monotonic()
        if not self.tty and now - self.last < self.every_s and done < self.total:
            return
        self.last = now
        elapsed = now - self.started
        left = elapsed / done * (self.total - done) if done else 0.0
        count = f"{done:.0f}/{self.total:.0f} " if self.counted else ""
        text = (f"{self.phase}: {count}({100 * done / self.total:.0f}%), {_clock(elapsed)} elapsed, "
                f"about {_clock(left)} left{'  ' + label[:60] if label else ''}")
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def step(self, label: str = "") -> None:
        self.update(self.done + 1, label)

    def finish(self) -> None:
        elapsed = time.monotonic() - self.started
        end = f"{self.phase}: done in {_clock(elapsed)}"
        self.stream.write(("\r\033[K" + end + "\n") if self.tty else end + "\n")
        self.stream.flush()
