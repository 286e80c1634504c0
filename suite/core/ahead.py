"""Measuring ahead: while ``tvm-suite run`` times one combination, a helper process measures the
next ones (build, run, reference, accuracy metrics), so the measure phase uses two cores.

Timing itself stays one at a time, in the suite's process. The helper measures the combinations in
the same order the suite times them and fills the shared cache (an entry is published whole, with
one rename: :mod:`suite.core.measurement`); the suite reads each entry once the helper has said it
is there. The helper runs under Linux's SCHED_IDLE policy: beside a thread of ordinary priority it
gets a sliver of a core (its weight is 3 against 1024), so a kernel whose parallel loops take every
core keeps them.
A helper that stops early (a missing tool, a crash) changes nothing but speed: the suite then
measures what is left itself, and reports any error as it always does.

One helper for all combinations: TVM is imported once, not once per combination.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from suite import children
from suite.core import measurement
from suite.core.combo import Combo


def worth_it(combos: list[Combo]) -> bool:
    """Whether a helper can gain anything: two cores or more, and more than one combination."""
    return len(os.sched_getaffinity(0)) > 1 and len(combos) > 1


class MeasureAhead:
    """The helper, given every combination at its start (the GPU's, which would share the device
    with the timing, excepted); :meth:`wait` returns once it has measured one."""

    def __init__(self, combos: list[Combo]):
        #: The helper's seconds spent measuring (building, running, references).
        self.busy_s = 0.0
        self._process = children.start_python(["-m", "suite.core.ahead"], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = "".join("\t".join(c.ids) + "\n" for c in combos if not c.target.exclusive)
        try:
            self._process.stdin.write(lines)
            self._process.stdin.close()
        except OSError:  # it stopped at once; this process measures everything
            self._stopped()

    def wait(self, combo: Combo) -> None:
        """Return once the helper has measured ``combo``, or has stopped, or never had it."""
        while self._process.stdout is not None:
            line = self._process.stdout.readline()
            if not line:
                self._stopped()
                return
            *ids, seconds = line.rstrip("\n").split("\t")
            self.busy_s += float(seconds)
            if tuple(ids) == combo.ids:
                return

    def _stopped(self) -> None:
        if self._process.stdout is not None:
            self._process.stdout.close()
            self._process.stdout = None

    def close(self) -> None:
        """End the helper (a measurement it had under way is dropped: entries publish whole)."""
        children.end(self._process)
        self._stopped()

    def __enter__(self) -> MeasureAhead:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve() -> None:
    """The helper: measure each combination read from stdin (one per line, its ids tab-separated),
    in order, and print each line back with the seconds it took once its cache entry is there."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    for line in sys.stdin.read().splitlines():
        combo = Combo.resolve(*line.split("\t"))
        started = time.perf_counter()
        measurement.measure(combo)
        print(f"{line}\t{time.perf_counter() - started:.3f}", flush=True)


if __name__ == "__main__":
    serve()
