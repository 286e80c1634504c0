"""The gate's verdict as a value: each check (:class:`Check`, its status and the combinations it
names), the :class:`GateResult` of :func:`suite.reporting.gate.evaluate` and the verdict it gives
(:class:`Verdict`, with its exit status), the :data:`Remeasure` function a gate may be given, and
the verdict as text (:func:`format_table`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from suite.errors import ExitCode
from suite.reporting import results as res
from suite.reporting import rules
from suite.reporting.rules import Slowness
from suite.reporting.thresholds import Thresholds

FIRST_COMMIT = "first commit with results: nothing to compare"


class Status(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    MISSING = "MISSING"  #: nothing to judge where something was expected
    NOT_CHECKED = "NOT CHECKED"  #: nothing to judge, by the nature of the data (a first commit, no native target)
    UNDECIDED = "UNDECIDED"  #: latency suspects not timed again


class Verdict(enum.Enum):
    READY = (ExitCode.OK, "READY")
    NOT_READY = (ExitCode.NOT_READY, "NOT READY (a check failed)")
    DATA_MISSING = (ExitCode.NO_VERDICT, "DATA MISSING (no verdict without complete data)")
    UNDECIDED = (ExitCode.NO_VERDICT, "NO VERDICT (latency suspects not timed again: `tvm-suite gate` does it)")

    @property
    def exit_code(self) -> ExitCode:
        return self.value[0]

    @property
    def words(self) -> str:
        return self.value[1]


@dataclass(frozen=True)
class Culprit:
    """What one failing (or undecided) line of a check is about: its combination and the metric
    that failed, so that whoever renders the verdict (the report) names the very combinations the
    gate names, in its order."""

    series: res.Series
    metric: str | None  #: None: the combination failed to build or run
    #: a latency suspect not timed again: the verdict waits on it (UNDECIDED), it fails nothing yet
    undecided: bool = False

    def as_dict(self) -> dict:
        return {**self.series.as_dict(), "metric": self.metric, "undecided": self.undecided}


@dataclass(frozen=True)
class Check:
    name: str
    limit: str
    status: Status
    worst: str = ""
    details: tuple[str, ...] = ()  #: what failed (or why not checked)
    notes: tuple[str, ...] = ()  #: information shown whatever the status
    #: how many of ``details``, first, fail (or leave the verdict undecided): the text never cuts them
    failing: int = 0
    #: what this check did not judge, which a READY verdict must say beside it (its line): latency
    #: not judged, or judged on the kept samples only
    caveat: str = ""
    #: the combination and metric of each of the first ``failing`` details, in the same order
    culprits: tuple[Culprit, ...] = ()

    def as_dict(self) -> dict:
        return {"name": self.name, "limit": self.limit, "status": self.status.value, "worst": self.worst,
                "details": list(self.details), "notes": list(self.notes),
                "culprits": [c.as_dict() for c in self.culprits]}


@dataclass(frozen=True)
class GateResult:
    candidate: res.Commit
    baseline: res.Commit | None
    checks: tuple[Check, ...]
    marks: rules.MarkJudgement
    slowdowns: tuple[rules.Slowdown, ...]
    thresholds: Thresholds
    notes: tuple[str, ...] = ()  #: about the comparison as a whole (a baseline newer than the candidate)

    @property
    def verdict(self) -> Verdict:
        statuses = {c.status for c in self.checks}
        if Status.MISSING in statuses:
            return Verdict.DATA_MISSING
        if Status.FAIL in statuses:
            return Verdict.NOT_READY
        if Status.UNDECIDED in statuses:
            return Verdict.UNDECIDED
        return Verdict.READY

    @property
    def first_commit(self) -> bool:
        return self.baseline is None

    @property
    def caveats(self) -> tuple[str, ...]:
        """What the checks did not judge, which the verdict line says beside READY."""
        return tuple(c.caveat for c in self.checks if c.caveat)

    def retimed(self) -> tuple[rules.Slowdown, ...]:
        """The suspects this evaluation timed again (as often as the rule asks): not those an
        earlier gate's re-timing, read back, decided."""
        return tuple(s for s in self.slowdowns if s.retimed_here and s.remeasured is not None
                     and s.verdict is not Slowness.SUSPECT)

    def newly_remeasured(self) -> list[dict]:
        """The suspects this evaluation timed again, as a gate keeps them (retimings.keep_remeasured
        merges them into what earlier gates kept)."""
        return [{"ids": list(s.series.ids), "machine": s.series.machine, "verdict": s.verdict.value,
                 "remeasured": [list(r) for r in s.remeasured], "samples": s.samples, "runtime": s.runtime}
                for s in self.retimed()]

    def as_dict(self) -> dict:
        """The verdict and its checks, for scripts (``--json``) and report.json."""
        verdict = self.verdict
        return {"verdict": verdict.name, "exit_status": int(verdict.exit_code), "words": verdict.words,
                "line": self.line(), "candidate": self.candidate.as_dict(),
                "baseline": self.baseline.as_dict() if self.baseline else None, "first_commit": self.first_commit,
                "notes": list(self.notes), "caveats": list(self.caveats),
                "checks": [c.as_dict() for c in self.checks], "thresholds": self.thresholds.source}

    def line(self) -> str:
        """The verdict in one line, as every command that gives it ends; READY with what was not
        judged beside it (its caveats: latency not judged, or judged on kept samples only)."""
        against = f" against {self.baseline.label}" if self.baseline else " (first commit with results)"
        words = self.verdict.words
        if self.verdict is Verdict.READY and self.caveats:
            words += f" ({'; '.join(self.caveats)})"
        return f"verdict: {words} for {self.candidate.label}{against} -> exit {int(self.verdict.exit_code)}"


#: Times both kernels of a suspect again: (series, [baseline's, candidate's kept timing]) ->
#: (the new samples of each, how they were timed when not simply by their own TVM build: kernels
#: rebuilt, re-timed in another runtime; or None), or a reason (text) why they cannot be timed here:
#: a :class:`suite.core.retimings.KeptSamples` where a kernel is gone and cannot be rebuilt (the suspect is then judged on
#: its kept samples), any other text leaves it a suspect.
Remeasure = Callable[[res.Series, list], "tuple[list[list[float]], str | None] | str"]


def format_table(result: GateResult, history: res.History, max_details: int = 8) -> str:
    """The gate's verdict as text: one row per check, then what failed, then the verdict line."""
    header = ["check", "threshold", "worst at candidate", "result"]
    rows = [[c.name, c.limit, c.worst, c.status.value] for c in result.checks]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    widths[2] = min(widths[2], 90)
    candidate = result.candidate
    lines = [f"release gate for {candidate.label} ({candidate.hash}) from {history.results_dir}",
             f"thresholds: {result.thresholds.source}", ""]
    for row in [header] + rows:
        cells = [cell if len(cell) <= w else cell[: w - 3] + "..." for cell, w in zip(row, widths)]
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(cells, widths)).rstrip())
    shown = {}  # details shared by several checks (e.g. another LLVM) are printed once
    for c in result.checks:  # what a check found first (failures first, never cut), then its information
        listed = c.status in (Status.FAIL, Status.MISSING, Status.NOT_CHECKED, Status.UNDECIDED) or any(
            d.startswith(("noisy", "records", "same code")) for d in c.details)
        if c.details and listed and c.details in shown:
            lines[shown[c.details]] += f", {c.name}"
        elif c.details and listed:
            lines.append("")
            shown[c.details] = len(lines)
            lines.append(f"{c.status.value.lower()}: {c.name}")
            lines[-1] += f" ({len(c.details)})" if len(c.details) > 1 else ""
            shown_here = max(max_details, c.failing)  # a failing line is never cut
            lines += [f"  {d}" for d in c.details[:shown_here]]
            if len(c.details) > shown_here:
                rest = ", none failing" if c.failing else ""
                lines.append(f"  ... and {len(c.details) - shown_here} more{rest}")
        if c.notes:
            lines += ["", f"info: {c.name} ({len(c.notes)})"] + [f"  {n}" for n in c.notes[:max_details * 4]]
            if len(c.notes) > max_details * 4:
                lines.append(f"  ... and {len(c.notes) - max_details * 4} more")
    if result.first_commit:
        lines += ["", f"{FIRST_COMMIT}: the checks against a baseline are not checked; the absolute checks decide"]
    lines += [f"note: {note}" for note in result.notes]
    lines += ["", result.line()]
    return "\n".join(lines)
