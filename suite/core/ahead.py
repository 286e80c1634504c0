"""Measuring ahead: while ``tvm-suite run`` times one combination, a helper process measures the
next ones (build, run, reference, accuracy metrics), so the measure phase uses two cores.

Timing itself stays one at a time, in the suite's process. The helper measures the combinations in
the same order the suite times them and fills the shared cache (an entry is published whole, with
one rename: :mod:`suite.core.measurement`); the suite reads each entry once the helper has said it
is there. The helper runs under Linux's SCHED_IDLE policy: beside a thread of ordinary priority it
gets a sliver of a core (its weight is 3 against 1024), so a kernel whose parallel loops take every
core keeps them.
A helper that stops early (a missing tool, a crash) changes nothing but speed: the suite then
measures what is left itself, and reports any error as it always does. So does a helper that is
stopped (SIGSTOP) or makes no progress for :data:`STALL_S` seconds (neither it nor anything it
started used the CPU): it is ended, and the suite says that it took its work back.

One helper for all combinations: TVM is imported once, not once per combination.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from suite import children
from suite.core import measurement
from suite.core.combo import Combo


#: Seconds without any CPU used by the helper and what it started (compilers, the emulator) after
#: which it is taken for wedged: a measurement that works uses a core all along.
STALL_S = 60.0
#: How often the waiting suite looks at the helper.
POLL_S = 1.0


def worth_it(combos: list[Combo]) -> bool:
    """Whether a helper can gain anything: two cores or more, and more than one combination."""
    return len(os.sched_getaffinity(0)) > 1 and len(combos) > 1


class MeasureAhead:
    """The helper, given every combination at its start (the GPU's, which would share the device
    with the timing, excepted); :meth:`wait` returns once it has measured one."""

    def __init__(self, combos: list[Combo]):
        #: The helper's seconds spent measuring (building, running, references).
        self.busy_s = 0.0
        #: Why the suite took the helper's work back (it was stopped, or wedged), or None.
        self.taken_back: str | None = None
        self._process = children.start_python(["-m", "suite.core.ahead"], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = "".join("\t".join(c.ids) + "\n" for c in combos if not c.target.exclusive)
        try:
            self._process.stdin.write(lines)
            self._process.stdin.close()
        except OSError:  # it stopped at once; this process measures everything
            self._stopped()

    def wait(self, combo: Combo) -> None:
        """Return once the helper has measured ``combo``, or has stopped, or never had it; a helper
        that is stopped or wedged is ended, and :attr:`taken_back` says why."""
        # The helper's CPU seconds as last seen to change, and when: read only while it keeps this
        # process waiting (a look through /proc costs milliseconds of the timing process's time;
        # the helper is mostly ahead, and a line it prints is progress enough).
        cpu = since = None
        while self._process.stdout is not None:
            if not select.select([self._process.stdout], [], [], POLL_S)[0]:
                if (used := self._cpu_s()) != cpu:
                    cpu, since = used, time.monotonic()
                if (why := self._stalled(since)) is not None:
                    self.taken_back = why
                    self.close()
                    return
                continue
            line = self._process.stdout.readline()
            if not line:
                self._stopped()
                return
            cpu = since = None
            *ids, seconds = line.rstrip("\n").split("\t")
            self.busy_s += float(seconds)
            if tuple(ids) == combo.ids:
                return

    def _stalled(self, since: float) -> str | None:
        """Why the helper is taken for stopped or wedged, its CPU seconds unchanged since ``since``; None."""
        state = _state(self._process.pid)
        if state in ("T", "t"):
            return f"the helper that measures ahead (pid {self._process.pid}) is stopped"
        if time.monotonic() - since > STALL_S:
            return (f"the helper that measures ahead (pid {self._process.pid}) made no progress for "
                    f"{STALL_S:.0f} s")
        return None

    def _cpu_s(self) -> float:
        """CPU seconds of the helper and every process it started (its session: children.py)."""
        return sum(_cpu(pid) for pid in _session(self._process.pid))

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


def _stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (which may hold spaces); [] when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text[text.rindex(")") + 2:].split()


def _state(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None


def _cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of a process (proc(5): fields 14-17), in seconds."""
    fields = _stat(pid)
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def _session(pid: int) -> list[int]:
    """The processes of the session ``pid`` leads (proc(5): field 6)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if len(fields) > 3 and fields[3] == str(pid):
            found.append(int(entry.name))
    return found


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
