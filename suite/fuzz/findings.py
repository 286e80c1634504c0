"""A fuzz campaign's finding, reported and reproduced: its dedup key (:func:`dedup_key`), its
reproduce command and what it printed (:class:`Reproduce`, :func:`printed_by`), its trace minimised to
one that command reproduces (:class:`ReproducerCheck`), the worker's log kept (:func:`keep_log`) and
its ``report.md`` (:func:`report`)."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from suite import children, sandbox
from suite.compat import release
from suite.fuzz import blame
from suite.fuzz import pool as pools
from suite.fuzz.directory import write_own
from suite.fuzz.journal import JournalLine
from suite.fuzz.outcome import Outcome
from suite.fuzz.worker import LOG

#: The most seconds the triage of a finding (its report's reproduce command, run once) may take.
TRIAGE_TIMEOUT_S = 900.0

class ReproducerCheck:
    """A finding's trace minimised to one its report's own reproduce command reproduces (issue 63):
    the command run as a user runs it (a ``tvm-suite triage`` process of its own in the finding's
    directory, its programs built and run in triage's sandboxed child) on the trace as
    ``minimised.json`` prints the finding's verdict. The campaign's worker judges each candidate
    (:func:`suite.fuzz.blame.minimise`), and the command is run on the trace kept: once, where the
    two agree. Where they do not (a worker process's earlier state, a trace triage refuses as one
    that "applies nothing"), minimisation starts again from the sampled trace, and each candidate
    the worker keeps is kept only where the command gives the verdict too. Where the command does
    not give it on the sampled trace either (checked once, at the first candidate it refuses), no
    candidate can: minimisation goes on by the worker's judgement alone, and the report quotes
    what the command printed. A crash or a hang (no verdict of triage's) is the worker's alone."""

    def __init__(self, line: JournalLine, argv: list[str], where: Path, stopping):
        self.line, self.argv, self.where, self.stopping = line, argv, where, stopping
        self.printed: dict[str, str] = {}  #: repr(trace) -> the first line the command printed on it
        self.runs = 0  #: the command's runs
        self._sampled_reproduces: bool | None = None

    def minimised(self, worker_fails, tries: int, repaired) -> blame.Minimised:
        trace = self.line.trace
        reduced = blame.minimise(trace, worker_fails, tries, repaired)
        if not self.line.outcome.is_wrong or self._reproduces(reduced.trace):
            return reduced
        if reduced.trace == trace:  # the command does not give the verdict on the sampled trace
            return reduced
        again = blame.minimise(trace, lambda candidate: self._fails(candidate, worker_fails), tries, repaired)
        return dataclasses.replace(again, tries=reduced.tries + again.tries)

    def _fails(self, trace: list, worker_fails) -> bool:
        if not worker_fails(trace):
            return False
        if self._sampled_reproduces is False or self._reproduces(trace):
            return True
        if self._sampled_reproduces is None:
            self._sampled_reproduces = self._reproduces(self.line.trace)
        return not self._sampled_reproduces

    def _reproduces(self, trace: list) -> bool:
        write_own(self.where / "minimised.json", json.dumps(trace))
        self.runs += 1
        said = printed_by(self.argv, self.where, self.stopping)
        if said is None:
            raise pools.Stopping(pools.STOPPING)
        self.printed[repr(trace)] = said
        return said.startswith(f"{self.line.outcome} ")

def dedup_key(outcome: Outcome, name: str, message: str, blamed: blame.Blame | None) -> str:
    """What two findings share when they are one bug: a wrong result's (guilty pass, guilty
    primitive, verdict) (:attr:`suite.fuzz.blame.Blame.key`; the order ``name`` where it has no
    blame); a crash's or a hang's :func:`suite.fuzz.blame.failure_signature` of its ``message``."""
    if outcome in (Outcome.CRASH, Outcome.TIMEOUT):
        return f"{outcome}: {blame.failure_signature(message)}"
    if blamed is None:
        return f"{outcome}: order {name}"
    return blamed.key


@dataclass(frozen=True)
class Reproduce:
    """A finding's reproduce command (``tvm-suite`` and ``argv``, run in the finding's directory)
    and the first line it printed when the campaign ran it (None: not run, a crash or a hang)."""

    argv: list[str]
    printed: str | None

    @property
    def command(self) -> str:
        return shlex.join(["tvm-suite", *self.argv])


def printed_by(argv: list[str], where: Path, stopping) -> str | None:
    """The first line ``tvm-suite ARGV`` prints run in ``where`` (its verdict), or why it printed
    none; None where the campaign is ``stopping()`` meanwhile (the child is ended at once). A
    triage's CHANGED writes its standalone reproducer (``--repro``, by default
    ``triage_repro_<func>.py`` in ``where``: the whole inputs written into it, 41 MB for a
    ResNet-50 matmul); the campaign's runs give it a scratch path, removed after, so that none is
    left in the finding's directory (a user running the command gets one)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-triage-") as scratch:
        extra = ["--repro", str(Path(scratch) / "repro.py")] if argv[:1] == ["triage"] and "--repro" not in argv else []
        process = children.start_python(["-c", "import sys; from suite.cli import main; sys.exit(main())", *argv,
                                         *extra], cwd=where, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + TRIAGE_TIMEOUT_S
        while True:
            try:
                out, err = process.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if stopping() or time.monotonic() > deadline:
                    children.end(process)
                    process.communicate()
                    return None if stopping() else f"(no verdict in {TRIAGE_TIMEOUT_S:g} s: ended)"
    lines = [line for line in out.decode(errors="replace").splitlines() if line.strip()]
    if lines:
        return lines[0]
    said = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
    return f"(exit {process.returncode}: {said[-1] if said else 'nothing printed'})"


def keep_log(request_dir: Path, finding_dir: Path) -> None:
    """The worker's log of a crash or hang, or TVM's internal error with its traceback, that the
    request's directory holds (``worker.log``), kept in the finding's directory."""
    log = request_dir / LOG
    if log.exists() and not log.is_symlink():
        try:
            write_own(finding_dir / LOG, sandbox.read_back(log))
        except OSError:
            pass  # the message in the journal has its last line


def report(combination, line: JournalLine, key: str, reproduce: Reproduce) -> str:
    """A report for TVM's issue tracker: what, the minimal program, how to reproduce, the verdict:
    the campaign's, and what the reproduce command printed when it was run, word for word."""
    what = {Outcome.CHANGED: "computes a different result", Outcome.UNDEFINED: "is undefined",
            Outcome.SHIFTED: "moves the error beyond any reordering (within the rounding bound: suspect)",
            Outcome.CRASH: "crashes TVM", Outcome.TIMEOUT: "hangs"}[line.outcome]
    has_trace = "--trace" in reproduce.argv
    schedule = "a MetaSchedule trace (minimised: minimised.json)" if has_trace else f"the loop order {line.name}"
    after = "after.py" if has_trace or line.outcome.is_wrong else "(none)"
    title = (f"# {combination.workload.id} ({combination.dtype}, {combination.target.name}) scheduled by {schedule} "
             f"{what}")
    found_by = f"TVM {release.installed_version()}. Found by `tvm-suite fuzz` (seed {line.seed}), filed under: {key}."
    programs = (f"The function before scheduling is before.py; after the schedule, {after}. The inputs, the "
                "workload's, are in inputs/.")
    lines = [title, "", found_by, "", programs, "",
             "Reproduce (the suite's triage judges both programs against the exact value):", "", "```sh",
             reproduce.command, "```", ""]
    if line.outcome.is_wrong:
        lines += [f"The campaign's verdict on the schedule it sampled: {line.outcome}: {line.summary or ''}", ""]
        if reproduce.printed is not None:
            differs = "" if reproduce.printed.startswith(f"{line.outcome} ") else (
                f" (not {line.outcome}: the command does not give the campaign's verdict on this program"
                + (", nor on the trace the campaign sampled: it was minimised by the campaign's judgement alone)"
                   if has_trace else ")"))
            lines += [f"What the command above printed, run here when the finding was kept{differs}:", "", "```",
                      reproduce.printed, "```", ""]
    else:
        lines += [f"What happened: {line.message}", "",
                  (f"What the worker wrote (its last words, or TVM's error with its traceback): {LOG}, where it "
                   "left one."), ""]
    return "\n".join(lines)
