"""Release readiness: the one verdict on a candidate commit, which `gate`, `run` and the report give.

:func:`evaluate` is a pure function of a verified history (:mod:`suite.reporting.results`), the
candidate and baseline commits and the typed thresholds; it reads and writes no file. Its only
outside help is ``remeasure``, a function that times two kernels again (`gate` and `run` pass
:func:`suite.core.timing.remeasure`); without it a latency suspect that no earlier gate timed
again stays a suspect and the verdict is NO VERDICT, never a guess either way, and a kernel whose
code changed passes on its kept samples only, which the verdict line says beside READY
(:attr:`GateResult.caveats`), as it says latency not judged at all.

Exit status (:class:`suite.errors.ExitCode`): 0 READY; 1 NOT READY: a check failed, a
combination failed to build or run at the candidate, or a slowdown reproduced; 2 DATA MISSING
(no values to judge; missing data wins over a failure, so the gate is never "ready" by default)
or NO VERDICT (latency suspects not timed again). Skipped combinations stay out of every check.

A check never judges on less than it needs: where a commit has asv's results without the side
data its run keeps (timing samples, the values asv does not keep, records, the build note), the
checks that read it are DATA MISSING, naming what is missing and how to get it; a latency whose
samples are too few for the test ever to reach alpha is DATA MISSING too, saying the check could
not fail there. Never a ratio of medians, never "compared" on values that are not there.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from suite import tracked
from suite.errors import ExitCode
from suite.core import retimings
from suite.core.workloads import INTEGER_DTYPES
from suite.reporting import code_identity
from suite.reporting import results as res
from suite.reporting import rules
from suite.reporting.rules import Slowness, where
from suite.reporting.thresholds import Thresholds

FIRST_COMMIT = "first commit with results: nothing to compare"
#: How to get what a commit's run keeps beside asv's results, where it is missing.
HOW_TO_KEEP = ("plain `asv run` writes asv's results only, and a results/ copied without its runs/ leaves the side "
               "data behind: measure the commit with `tvm-suite run` (or `history`, `check`), or copy runs/ beside "
               "results/")


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


# ----------------------------------------------------------------------------- the checks


def failed_combinations(history: res.History, commit: str) -> dict[res.Series, list[str]]:
    """Combinations with failed (null) results at ``commit``: their failed benchmarks."""
    failed: dict[res.Series, list[str]] = {}
    for metric, per_series in history.values.items():
        for series, per_commit in per_series.items():
            if commit in per_commit and per_commit[commit] is None:
                failed.setdefault(series, []).append(tracked.get(metric).method)
    return {s: sorted(methods) for s, methods in sorted(failed.items(), key=lambda i: (i[0].ids, i[0].machine))}


def unkept_lines(history: res.History, commits) -> tuple[str, ...]:
    """Where the side data of ``commits`` (None: no commit) is missing, one line per commit and
    machine, then how to get it; () where every one has it."""
    lines = [f"no side data of {commit.label}{f' ({commit.short})' if commit.label != commit.short else ''} on "
             f"{kept.where.parent.name}: {kept.where} is missing (timing samples, the values asv does not keep, "
             "records, build note)"
             for commit in dict.fromkeys(c for c in commits if c is not None) for kept in history.unkept(commit.hash)]
    return (*lines, HOW_TO_KEEP) if lines else ()


def _missing(name: str, limit: str, worst: str, history: res.History, commits, series=(), multi=False,
             notes=()) -> Check:
    """A check that cannot judge what it needs: DATA MISSING, naming the side data that is missing
    (else the combinations that lack what the check reads) and how to get it."""
    details = unkept_lines(history, commits) or tuple(f"missing: {where(s, multi)}" for s in series)
    return Check(name, limit, Status.MISSING, worst, details, tuple(notes))


def _labels(commits) -> str:
    return " and ".join(dict.fromkeys(c.label for c in commits if c is not None))


def measured(history: res.History, metric: str, commit: str) -> bool:
    """Whether ``commit`` measured the benchmark class of ``metric``: a finite value of it, or of an
    asv benchmark of the same class (its other values are in the run's side data)."""
    of = tracked.get(metric)
    names = [metric] + [m.name for m in tracked.of_class(of.module, of.cls) if m.in_asv]
    return any(res.finite(per_commit.get(commit)) for name in names
               for per_commit in history.values.get(name, {}).values())


def failure_reason(history: res.History, commit: str, series: res.Series) -> str:
    return history.kept(commit, series.machine).failures.get(series.ids) or "reason in the asv log"


def _max_check(history, commit, name, metric, limit, series_filter, multi, value_of, unchecked_of=None,
               incomplete_of=None, never: str = "no values at any commit") -> Check:
    """The largest ``value_of(series)`` at ``commit`` against ``limit``. Combinations whose value
    cannot exist (``unchecked_of`` says why) are listed as not checked, never counted as passed;
    those measured without what the value is computed from (``incomplete_of`` says what) make the
    check DATA MISSING. ``never``: what NOT CHECKED says where no commit has a value."""
    worst, over, seen, unchecked, incomplete = None, [], 0, [], []
    for series in history.series():
        if not series_filter(series):
            continue
        value = value_of(series, commit)
        if not res.finite(value):
            why = unchecked_of(series, commit) if unchecked_of else None
            if why:
                unchecked.append(f"not checked: {where(series, multi)}: {why}")
            if incomplete_of and (lacking := incomplete_of(series, commit)):
                incomplete.append((series, lacking))
            continue
        seen += 1
        if worst is None or value > worst[0]:
            worst = (value, series)
        if value > limit:
            over.append((f"{where(series, multi)}: {value:.4g}", Culprit(series, metric)))
    note = f"; {len(unchecked)} not checked" if unchecked else ""
    if incomplete:
        at = next(c for c in history.commits if c.hash == commit)
        return _missing(name, f"<= {limit:g}", f"{len(incomplete)} measured without {incomplete[0][1]}", history,
                        [at], [s for s, _ in incomplete], multi)
    if not seen:
        if unchecked:
            return Check(name, f"<= {limit:g}", Status.NOT_CHECKED, f"none checkable{note}", tuple(unchecked))
        checked = [s for s in history.series() if series_filter(s)]  # "at any commit": e.g. a dtype never run
        return _no_values_check(history, commit, name, f"<= {limit:g}", never,
                                lambda c: any(res.finite(value_of(s, c)) for s in checked))
    return Check(name, f"<= {limit:g}", Status.FAIL if over else Status.PASS,
                 f"{worst[0]:.4g} ({where(worst[1], multi)}){note}", tuple(line for line, _ in over) + tuple(unchecked),
                 failing=len(over), culprits=tuple(culprit for _, culprit in over))


def model_check(history: res.History, commit: str, limit, multi: bool) -> Check:
    """``[model.<dtype>]``: a whole model's metric per setting at ``commit`` against its limit (a
    ceiling, or a floor for agreement). A setting of the model benchmarks not measured there
    (skipped, failed) is listed as not measured with its reason, never counted as passed."""
    metric, floor = limit.metric, limit.at_least
    name = f"model {metric.removeprefix('model_')} {limit.dtype}"
    bound = f">= {limit.limit:g}" if floor else f"<= {limit.limit:g}"
    # the settings of the model benchmarks at this commit: any model metric recorded (a number, NaN or null)
    settings = {s for m in tracked.METRICS if m.module == "bench_model" for s, per_commit
                in history.values.get(m.name, {}).items() if commit in per_commit and s.dtype == limit.dtype}
    if metric == "model_tuned_rmse_ratio":
        settings = {s for s in settings if s.order == "tuned"}
    worst, over, unmeasured, seen = None, [], [], 0
    for series in sorted(settings, key=lambda s: (s.ids, s.machine)):
        value = history.value(metric, series, commit)
        if not res.finite(value):
            unmeasured.append(f"not measured: {where(series, multi)}: {failure_reason(history, commit, series)}")
            continue
        seen += 1
        if worst is None or (value < worst[0] if floor else value > worst[0]):
            worst = (value, series)
        if (value < limit.limit) if floor else (value > limit.limit):
            over.append((f"{where(series, multi)}: {value:.4g}", Culprit(series, metric)))
    note = f"; {len(unmeasured)} not measured" if unmeasured else ""
    if not seen:
        if unmeasured:
            return Check(name, bound, Status.NOT_CHECKED, f"none measured{note}", tuple(unmeasured))
        per_series = [per_commit for s, per_commit in history.values.get(metric, {}).items() if s.dtype == limit.dtype]
        return _no_values_check(history, commit, name, bound, "no whole-model results in this dtype at any commit",
                                lambda c: any(res.finite(per_commit.get(c)) for per_commit in per_series))
    return Check(name, bound, Status.FAIL if over else Status.PASS, f"{worst[0]:.4g} ({where(worst[1], multi)}){note}",
                 tuple(line for line, _ in over) + tuple(unmeasured), failing=len(over),
                 culprits=tuple(culprit for _, culprit in over))


#: The check of int8 against its exact integer oracle (suite.core.quantized; docs/int8.md).
EXACTNESS = "int8 exactness"
#: Where no commit measured a float dtype: what the ULP and bound checks say (int8 rows never reach
#: them: int8 is judged by EXACTNESS).
ONLY_INTEGERS = "int8 alone at every commit: no ULP or bound"


def integer(series: res.Series) -> bool:
    """Whether ``series`` is judged exactly against the integer oracle (int8), never by ULP or bound."""
    return series.dtype in INTEGER_DTYPES


def _float_never(history: res.History) -> str:
    """What a check of float values says where none exists at any commit: that the history holds
    int8 alone, where it does (its NOT CHECKED is then no gap of the data)."""
    series = history.series()
    return ONLY_INTEGERS if series and all(integer(s) for s in series) else "no values at any commit"


def exactness_check(history: res.History, candidate: res.Commit, baseline: res.Commit | None, multi: bool) -> Check:
    """int8 against its exact oracle: deterministic, so no threshold and no noise. At ``candidate``,
    an int32 accumulator that differs from the exact sum in any element fails (a first commit's
    too); against ``baseline``, an exact fraction lower or a max step error higher than there fails,
    whichever records the tuned order replayed (an exact kernel is exact in every schedule). An
    output not exact at a first commit, and accumulators whose exact value leaves int32 (the
    inputs', compared with the wrap), are information. int8 is measured only where ``--dtypes``
    names it: a commit without it is NOT CHECKED, never DATA MISSING."""
    compared = baseline is not None and baseline.hash != candidate.hash
    name = f"{EXACTNESS} vs {baseline.label}" if compared else EXACTNESS
    limit = ("accumulator bit-exact; exact fraction not lower, max step error not higher" if compared
             else "accumulator bit-exact")
    series = [s for s in history.series() if integer(s)]

    def value(metric, s, commit):
        return history.value(metric, s, commit.hash)

    measured = [s for s in series if res.finite(value("accumulator_mismatches", s, candidate))]
    if not measured:
        at_all = any(res.finite(value("accumulator_mismatches", s, c)) for s in series for c in history.commits)
        return Check(name, limit, Status.NOT_CHECKED,
                     "no int8 combination measured at this commit (int8 runs where --dtypes names it)" if at_all
                     else "no int8 combination at any commit")
    # exact_fraction is kept beside asv's results only: a side measured without it is never compared
    lacking = {c: [s for s in measured if res.finite(value("accumulator_mismatches", s, c))
                   and not all(res.finite(value(m, s, c)) for m in ("exact_fraction", "max_step_error"))]
               for c in ((candidate, baseline) if compared else (candidate,))}
    if any(lacking.values()):
        found = list(dict.fromkeys(s for missing in lacking.values() for s in missing))
        at = [c for c, missing in lacking.items() if missing]
        return _missing(name, limit, f"{len(found)} measured without exact_fraction at {_labels(at)}", history, at,
                        found, multi)
    failing, notes = [], []
    for s in measured:
        mismatches = value("accumulator_mismatches", s, candidate)
        fraction, steps = value("exact_fraction", s, candidate), value("max_step_error", s, candidate)
        if mismatches > 0:
            failing.append((f"{where(s, multi)}: accumulator not bit-exact: {mismatches:.0f} int32 elements differ "
                            "from the exact sum", Culprit(s, "accumulator_mismatches")))
        before = (value("exact_fraction", s, baseline), value("max_step_error", s, baseline)) if compared else None
        if before is not None and res.finite(before[0]) and fraction < before[0]:
            failing.append((f"{where(s, multi)}: exact fraction {before[0]:.6g} -> {fraction:.6g}",
                            Culprit(s, "exact_fraction")))
        if before is not None and res.finite(before[1]) and steps > before[1]:
            failing.append((f"{where(s, multi)}: max step error {before[1]:.0f} -> {steps:.0f} output steps",
                            Culprit(s, "max_step_error")))
        if fraction < 1 and not any(c.series == s for _, c in failing):
            notes.append(f"output not exact: {where(s, multi)}: exact fraction {fraction:.6g}, max {steps:.0f} steps "
                         + ("(as at the baseline)" if before is not None and res.finite(before[0])
                            else "(nothing to compare it with)"))
        wrapped = value("accumulator_wrapped", s, candidate)
        if res.finite(wrapped) and wrapped > 0:
            notes.append(f"wrapped: {where(s, multi)}: the exact value of {wrapped:.0f} accumulator elements leaves "
                         "int32 (the inputs'): compared with its wrap")
    culprits = dict.fromkeys(c.series for _, c in failing)
    than = f" than at {baseline.label}" if compared else ""
    if failing:
        worst = f"{len(culprits)} of {len(measured)} not bit-exact{' or less exact' + than if compared else ''}"
    else:
        worst = f"{len(measured)} of {len(measured)} bit-exact" + (f", none less exact{than}" if compared else "")
    return Check(name, limit, Status.FAIL if failing else Status.PASS, worst, tuple(line for line, _ in failing),
                 tuple(notes), failing=len(failing), culprits=tuple(c for _, c in failing))


#: A metric first measured after this commit: the suite that measured it predates the metric
#: (a kept history outlives suite versions). Values at an earlier commit and none here is MISSING.
NOT_YET_MEASURED = "no values at this commit or any before it: first measured at a later commit"


def _no_values_check(history: res.History, commit: str, name: str, limit: str, never: str,
                     measured_at: Callable[[str], bool]) -> Check:
    """A check with no value at ``commit``: NOT CHECKED where no commit up to it measured the metric
    (``never`` where none at all did), DATA MISSING where an earlier one did."""
    first = next((i for i, c in enumerate(history.commits) if measured_at(c.hash)), None)
    if first is None:
        return Check(name, limit, Status.NOT_CHECKED, never)
    if first > history.index(commit):
        return Check(name, limit, Status.NOT_CHECKED, NOT_YET_MEASURED)
    return Check(name, limit, Status.MISSING, "no values at this commit")


def baseline_of(history: res.History, candidate: res.Commit, name: str) -> tuple[res.Commit | None, str]:
    """The baseline commit: ``previous`` (the last earlier commit with any result) or a named one,
    and a note (why there is none; a baseline newer than the candidate)."""
    if name != "previous":
        baseline = history.resolve(name)
        if history.index(baseline.hash) > history.index(candidate.hash):
            return baseline, f"the baseline {baseline.label} comes after the candidate {candidate.label} in TVM's history"
        return baseline, ""
    index = history.index(candidate.hash)
    earlier = [c for c in history.commits[:index] if _has_results(history, c)]
    with_data = [c for c in earlier if has_data(history, c)]
    if not with_data:
        return None, f"no commit before {candidate.label} with results"
    baseline = with_data[-1]
    gap = [c.label for c in earlier[earlier.index(baseline) + 1:]]
    if not gap:
        return baseline, ""
    return baseline, (f"compared with {baseline.label}, the last earlier commit with data: {', '.join(gap)} "
                      f"{'has' if len(gap) == 1 else 'have'} none (every combination failed: a build that failed?)")


def _has_results(history: res.History, commit: res.Commit) -> bool:
    return any(commit.hash in per_commit for per_series in history.values.values() for per_commit in per_series.values())


def has_data(history: res.History, commit: res.Commit) -> bool:
    """Whether any value at ``commit`` is a number: a commit whose TVM did not build or install
    has asv's null for every benchmark, and is no baseline."""
    return any(res.finite(per_commit.get(commit.hash)) for per_series in history.values.values()
               for per_commit in per_series.values())


def other_llvm(history: res.History, candidate: res.Commit, baseline: res.Commit | None) -> str | None:
    """The two LLVMs candidate's and baseline's TVMs were built with, where they differ (a wheel
    links its own LLVM statically, which is not Debian's), or None. Where a side did not note its
    build, nothing is said."""
    if baseline is None:
        return None
    for machine in history.machines:  # per machine: a merged history may hold builds of several
        now, before = (history.kept(c.hash, machine).build for c in (candidate, baseline))
        if now and before and now.get("llvm") != before.get("llvm"):
            break
    else:
        return None

    def llvm(build):
        facts = build["llvm"]
        origin = facts.get("installed_from", "wheel or source")
        return f"LLVM {facts.get('version')} ({origin}, USE_LLVM {facts.get('use_llvm')})"

    return (f"TVM at {candidate.label} was built with {llvm(now)}, at {baseline.label} with {llvm(before)}: a "
            "change of a kernel whose code changed may be the compiler's, not TVM's; its latency is judged only "
            "timed again beside the other in one runtime")


def _judge_suspects(history, baseline, candidate, thresholds, remeasure, comparison: rules.LatencyComparison,
                    two_builds: bool = False) -> tuple[list[rules.Slowdown], dict[str, int], list[rules.Slowdown]]:
    """Each suspect timed again where it can be, again and again while each re-timing finds it
    slower and the rule asks for more (``[latency] retimed_times``). One that is a suspect only
    because its code changed (its kept samples not slower) stays one only if timing it again
    finds it slower; where it is not timed again (as often: no ``remeasure``, or it cannot be
    here), its kept samples passed it, and it is returned third, with why: the check and the
    verdict say that its latency was judged on its kept samples only. ``two_builds``: the kept
    samples come from two TVM builds (two LLVMs, two runtimes), so they pass nothing: every suspect
    stays one until timed again, and one that cannot be timed here is left out, counted by why
    (the second of the three returned)."""
    judged, apart, unretimed = [], {}, []
    for s in comparison.found:
        if s.verdict is Slowness.SUSPECT and remeasure is not None:
            kept = [history.kept(c.hash, s.series.machine) for c in (baseline, candidate)]
            timings = [dataclasses.replace(k.timings[s.series.ids], code=k.code.get(s.series.ids)) for k in kept]
            notes = []  # what each re-timing said of its kernels (rebuilt: said by the first alone)
            while s.verdict is Slowness.SUSPECT:
                again = remeasure(s.series, timings)
                if isinstance(again, str):  # KeptSamples is a str too
                    break
                if again[1] and again[1] not in notes:
                    notes.append(again[1])
                s = rules.remeasured(s, again[0], thresholds, "; ".join(notes) or None)
            if s.verdict is Slowness.SUSPECT:  # not timed again (as often as the rule asks)
                if two_builds:
                    apart[str(again)] = apart.get(str(again), 0) + 1
                    continue
                if s.code_changed_only:
                    unretimed.append(dataclasses.replace(s, why=f"not timed again: {again}"))
                    continue
                if isinstance(again, retimings.KeptSamples):  # slower by the rule on them; not kept
                    s = rules.Slowdown(s.series, s.ratio, s.p, Slowness.CONFIRMED, samples=s.samples,
                                       why=f"judged on the kept samples: {again}")
                else:
                    s = dataclasses.replace(s, why=f"cannot be timed again here: {again}")
        elif s.verdict is Slowness.SUSPECT:
            if s.code_changed_only and not two_builds:
                unretimed.append(dataclasses.replace(s, why="not timed again"))
                continue
            s = rules.Slowdown(s.series, s.ratio, s.p, s.verdict, samples=s.samples, why="not timed again")
        judged.append(s)
    return judged, apart, unretimed


def _latency_row(baseline, thresholds) -> tuple[str, str]:
    """The latency check's name and limit."""
    latency = thresholds.latency
    return (f"latency vs {baseline.label}" if baseline is not None else "latency vs baseline",
            f"<= {latency.max_ratio:g}x, or U-test p >= {latency.alpha:g}; timed again: paired ratios' median "
            f"<= {latency.retimed_max_ratio:g}x")


#: Beside READY, where the two builds' LLVMs differ and a kernel of changed code could not be timed again.
TWO_LLVMS = "the two builds' LLVMs differ"


def latency_not_judged(baseline, thresholds, why: str) -> Check:
    """The latency check where the samples of two machines would meet: never compared (and the
    verdict line says so)."""
    return Check(*_latency_row(baseline, thresholds), Status.NOT_CHECKED, "not judged", (why,),
                 caveat="latency not judged: the baseline was measured on another machine")


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def latency_check(history, candidate, baseline, why, thresholds, multi, remeasure,
                  two_builds: bool = False) -> tuple[Check, list]:
    """The latency check: the kept samples judged, suspects timed again (``remeasure``), every
    kernel whose code changed among them; one of those not timed again passes on its kept samples,
    listed and said (its caveat). Between two builds of TVM (``two_builds``: two LLVMs) every kernel
    whose code changed is timed again beside the other in one runtime, and only that decides; one
    that cannot be is not compared, and the caveat says latency was not judged. Its details: what
    failed, then suspects, then what passed (``failing``: how many are never cut)."""
    name, limit = _latency_row(baseline, thresholds)
    if not any(res.finite(v) for per_commit in history.values.get("latency", {}).values() for v in per_commit.values()):
        return Check(name, limit, Status.NOT_CHECKED, "no native target in these results: no latency at any commit"), []
    if baseline is None:
        return Check(name, limit, Status.NOT_CHECKED, FIRST_COMMIT, (why,) if why else ()), []
    if baseline.hash == candidate.hash:
        return Check(name, limit, Status.MISSING, "baseline is the candidate itself"), []
    # every kernel whose code changed is a suspect, timed again or not: one not timed again passes
    # on its kept samples, and the check and the verdict line say so (never silently)
    comparison = rules.latency_changes(history, baseline, candidate, thresholds, code_changed=True,
                                       unknown_code=two_builds)
    if comparison.unsampled or comparison.unreachable:  # judged on nothing less than the samples
        lacking = []
        if comparison.unsampled:
            lacking.append(f"{len(comparison.unsampled)} without timing samples")
        if comparison.unreachable:
            lacking.append(f"{len(comparison.unreachable)} with too few samples: the check cannot fail")
        missing = _missing(name, limit, f"{', '.join(lacking)}: not judged", history,
                           (baseline, candidate) if comparison.unsampled else (), comparison.unsampled, multi)
        cannot = tuple(f"cannot fail: {where(s, multi)}: {why}" for s, why in comparison.unreachable)
        return Check(name, limit, Status.MISSING, missing.worst, missing.details + cannot), list(comparison.found)
    compared = comparison.compared
    judged, apart, unretimed = _judge_suspects(history, baseline, candidate, thresholds, remeasure, comparison,
                                               two_builds)
    if not compared:
        return Check(name, limit, Status.MISSING,
                     f"no combination measured at both {candidate.label} and {baseline.label}"), []
    left_out = sum(apart.values())
    left = tuple(f"not compared: {n} of changed code, built with another LLVM, cannot be timed again here: {why}"
                 for why, n in apart.items())
    if left_out == compared:
        return Check(name, limit, Status.NOT_CHECKED, "built with another LLVM: cannot be timed again here",
                     left, caveat=f"latency not judged: {TWO_LLVMS}"), []
    # a kernel of changed code timed again and not slower never looked slower: not listed (its
    # re-measurement is still returned, to be kept)
    found = [s for s in judged if not (s.code_changed_only and not s.verdict.fails)]
    failing = [s for s in found if s.verdict.fails]
    undecided = [s for s in found if s.verdict is Slowness.SUSPECT]
    # what decides the verdict first, never cut from the text: failures, then suspects, then what passed
    ordered = sorted(found, key=lambda s: (0 if s.verdict.fails else 1 if s.verdict is Slowness.SUSPECT else 2,
                                           -s.ratio))
    details = tuple(s.line(multi) for s in ordered)
    passed = len(found) - len(failing) - len(undecided)
    worst = (f"{len(failing)} slower" if failing else "none slower")
    worst += f", {len(undecided)} suspect" if undecided else ""
    worst += f", {passed} noisy or records" if passed else ""
    retimed = sum(s.code_changed_only for s in judged)
    worst += f" of {compared - left_out}" + (f" ({retimed} of changed code timed again)" if retimed else "")
    worst += f"; {left_out} of changed code cannot be timed again here" if left_out else ""
    caveats = [f"latency of {left_out} of {compared} {_plural(compared, 'kernel', 'kernels')} not judged: {TWO_LLVMS}"
               ] if left_out else []
    notes = left
    if unretimed:  # passed on kept samples that cannot tell a small step from noise: said, never silent
        its = _plural(len(unretimed), "its", "their")
        worst += f"; {len(unretimed)} of changed code judged on kept samples only"
        caveats.append(f"latency of {len(unretimed)} {_plural(len(unretimed), 'kernel', 'kernels')} of changed code "
                       f"judged on {its} kept samples only: not timed again")
        notes += tuple(f"kept samples only: {where(s.series, multi)}: {s.ratio:.2f}x, p {s.p:.2g} ({s.why})"
                       for s in sorted(unretimed, key=lambda s: -s.ratio))
    status = Status.FAIL if failing else Status.UNDECIDED if undecided else Status.PASS
    return Check(name, limit, status, worst, details, notes, failing=len(failing) + len(undecided),
                 caveat="; ".join(caveats),
                 culprits=tuple(Culprit(s.series, "latency", s.verdict is Slowness.SUSPECT)
                                for s in ordered[:len(failing) + len(undecided)])), judged


def code_check(history, candidate, baseline, multi) -> Check:
    """Which kernels' code changed since the baseline (information: a change is no failure, but
    it is what a latency step of the same code is not)."""
    name = f"kernel code vs {baseline.label}" if baseline is not None else "kernel code vs baseline"
    limit = "same or changed (information)"
    if baseline is None:
        return Check(name, limit, Status.NOT_CHECKED, FIRST_COMMIT)
    found = code_identity.changes(history, baseline, candidate)
    # identities of two schemes are neither same nor changed: judged as kernels without identities, and said
    apart = (f"code of {found.not_comparable} {_plural(found.not_comparable, 'kernel', 'kernels')} not compared: "
             "identities of two schemes") if found.not_comparable else ""
    if not found.compared:
        return Check(name, limit, Status.NOT_CHECKED, found.words() if apart else "no code identities kept at both "
                     "commits (results of an older suite, or failed builds)", caveat=apart)
    return Check(name, limit, Status.PASS, found.words(),
                 notes=tuple(f"changed: {where(s, multi)}" for s in found.changed), caveat=apart)


def _change_ratio(change, before: float, now: float) -> float | None:
    """How much worse ``now`` is than ``before`` in the metric's worse direction (>1: worse); from
    0 to any worse value, infinitely worse (an exact kernel's ULP mean that leaves 0)."""
    worse, base = (before, now) if change.worse == tracked.LOWER else (now, before)
    if base > 0:
        return worse / base
    return math.inf if worse > 0 else None


def change_checks(history, candidate, baseline, thresholds, multi) -> list[Check]:
    """[change.<metric>] of the thresholds: each metric against the baseline commit, in its worse
    direction (suite.tracked); where the records changed (rules.records_changed) not compared.
    Between two builds of TVM with two LLVMs as between any two commits: these values are
    deterministic, so a change is no noise, whichever compiler made it."""
    checks = []
    for change in thresholds.change:
        metric = change.metric
        name = f"{metric} vs {baseline.label}" if baseline is not None else f"{metric} vs baseline"
        direction = " (lower is worse: baseline / candidate)" if change.worse == tracked.LOWER else ""
        parts = ([f"<= {change.max_ratio:g}x{direction}"] if change.max_ratio else []) + (
            ["not to 0"] if change.keep_nonzero else [])
        limit = ", ".join(parts)
        if baseline is None or baseline.hash == candidate.hash:
            checks.append(Check(name, limit, Status.NOT_CHECKED, FIRST_COMMIT if baseline is None else "no baseline"))
            continue
        unkept = [c for c in (baseline, candidate) if history.unkept(c.hash)]
        if unkept and all(measured(history, metric, c.hash) for c in (baseline, candidate)):
            # the values asv does not keep, whose tuning records replayed, the LLVM of each build
            checks.append(_missing(name, limit, f"no side data at {_labels(unkept)}: {metric} and the records "
                                                "and builds behind it not known", history, unkept))
            continue
        over, notes, seen = [], [], 0
        for series in history.series():
            now = history.value(metric, series, candidate.hash)
            before = history.value(metric, series, baseline.hash)
            if not (res.finite(now) and res.finite(before)):
                continue
            seen += 1
            problem = None
            if change.keep_nonzero and before > 0 and now == 0:
                problem = f"{where(series, multi)}: {before:.4g} -> 0"
            elif change.max_ratio and (ratio := _change_ratio(change, before, now)) and ratio > change.max_ratio:
                problem = f"{where(series, multi)}: {before:.4g} -> {now:.4g} ({f'{now / before:.2f}x' if before else 'from 0'})"
            if problem and (changed := rules.records_changed(history, series, baseline, candidate)):
                notes.append(f"records: {problem}: {rules.records_words(changed, baseline, candidate)}")
            elif problem:
                over.append((problem, Culprit(series, metric)))
        if not seen:
            checks.append(Check(name, limit, Status.NOT_CHECKED, f"no {metric} at both commits", (), tuple(notes)))
        else:
            checks.append(Check(name, limit, Status.FAIL if over else Status.PASS, f"{len(over)} of {seen}",
                                tuple(line for line, _ in over), tuple(notes), failing=len(over),
                                culprits=tuple(culprit for _, culprit in over)))
    return checks


def divergence_check(history, thresholds, candidate, judged: rules.MarkJudgement, baseline, multi) -> Check:
    """The marks at the candidate (error shifts from default, the probabilistic bound), judged
    against the baseline (:func:`suite.reporting.rules.judge_marks`)."""
    div = thresholds.divergence
    name = f"divergence marks vs {baseline.label}" if baseline is not None else "divergence marks"
    limit = f"no new or {div.worse_factor:g}x worse mark; known: arithmetic or accepted"
    marks = judged.marks
    notes = [m.line(multi) for m in marks if not m.fails]
    notes += [f"fixed: {where(m.series, multi)}: {m.metric} {m.value:.4g} at {m.commit.label}, {now:.4g} now"
              for m, now in judged.fixed]
    notes += [f"stale acceptance in {Path(thresholds.source).name}: {' '.join(a.ids)} is not marked here: remove it"
              for a in judged.stale]
    failing = tuple(m.line(multi) for m in marks if m.fails)
    culprits = tuple(Culprit(m.mark.series, m.mark.metric) for m in marks if m.fails)
    lacking = {c: rules.divergence_incomplete(history, thresholds, c.hash) for c in (baseline, candidate)
               if c is not None}
    if any(lacking.values()):  # the rules read values asv does not keep: never "compared" without them
        at = [c for c, series in lacking.items() if series]
        series = list(dict.fromkeys(s for found in lacking.values() for s in found))
        return _missing(name, limit, f"{len(series)} not compared: no {', '.join(rules.SHIFT_NEEDS[1:])} at "
                                     f"{_labels(at)}", history, at, series, multi, notes)
    counts = {words: sum(m.status is status for m in marks)
              for status, words in ((rules.MarkStatus.NEW, "new"), (rules.MarkStatus.WORSE, "worse"),
                                    (rules.MarkStatus.KNOWN, "known"), (rules.MarkStatus.FIRST, "first"))}
    summary = ", ".join(f"{n} {words}" for words, n in counts.items() if n)
    summary += f"{', ' if summary else ''}{len(judged.fixed)} fixed" if judged.fixed else ""
    summary += f"; {len(judged.stale)} stale acceptance(s)" if judged.stale else ""
    if marks or judged.fixed:
        return Check(name, limit, Status.FAIL if failing else Status.PASS,
                     f"{len(failing)} failing: {summary}" if failing else summary, failing, tuple(notes),
                     failing=len(failing), culprits=culprits)
    compared = rules.divergence_series(history, thresholds, candidate.hash)
    if not compared:
        status = Status.MISSING if div.required else Status.NOT_CHECKED
        return Check(name, limit, status, f"no {'/'.join(div.targets)} x {'/'.join(div.orders)} results against "
                                          "default", (), tuple(notes))
    return Check(name, limit, Status.PASS, f"no marks; {len(compared)} combinations compared", (), tuple(notes))


# ----------------------------------------------------------------------------- the verdict


def evaluate(history: res.History, candidate: res.Commit, baseline: res.Commit | None, thresholds: Thresholds,
             remeasure: Remeasure | None = None, baseline_note: str = "", latency_apart: str = "") -> GateResult:
    """Release readiness of ``candidate`` against ``baseline`` (None: the first commit with
    results), every check of ``thresholds`` on the verified ``history``. Pure: no file is read
    or written; ``remeasure`` (see :data:`Remeasure`) is the only way out. ``latency_apart``: why
    the two commits' latencies are not compared (measured on two machines: `check
    --baseline-from`), said in the latency check and the notes; nothing is timed again."""
    multi = len(history.machines) > 1
    if baseline is not None and baseline.hash != candidate.hash:
        code_identity.check_determinism(history, baseline, candidate)  # the suite's own bug: no verdict
    checks = []
    failed = failed_combinations(history, candidate.hash)
    checks.append(Check("combinations completed", "no failed build or run", Status.FAIL if failed else Status.PASS,
                        f"{len(failed)} failed" if failed else "none failed",
                        tuple(f"{where(s, multi)}: {failure_reason(history, candidate.hash, s)}" for s in failed),
                        failing=len(failed), culprits=tuple(Culprit(s, None) for s in failed)))
    two_llvms = other_llvm(history, candidate, baseline)
    if latency_apart:
        latency, slowdowns = latency_not_judged(baseline, thresholds, latency_apart), []
    else:
        latency, slowdowns = latency_check(history, candidate, baseline, baseline_note, thresholds, multi,
                                           remeasure, two_builds=two_llvms is not None)
    compared = [latency, *change_checks(history, candidate, baseline, thresholds, multi)]
    checks += compared
    checks.append(code_check(history, candidate, baseline, multi))

    def values_of(metric):
        return lambda series, at: history.value(metric, series, at)

    never = _float_never(history)
    for limit in thresholds.accuracy:
        checks.append(_max_check(history, candidate.hash, f"{limit.metric} {limit.dtype}", limit.metric, limit.limit,
                                 lambda s, d=limit.dtype: s.dtype == d, multi, values_of(limit.metric), never=never))
    checks.append(exactness_check(history, candidate, baseline, multi))
    for limit in thresholds.model:
        checks.append(model_check(history, candidate.hash, limit, multi))
    bound = thresholds.bound

    def floats(series):  # int8 has no ULP, bound or non-finite value: its exactness is judged above
        return not integer(series)

    def without_k(series, at):  # the fraction at another lambda is rescaled by K, which asv does not keep
        return ("accumulation_length (K), to rescale it to this lambda"
                if res.finite(history.value("prob_bound_fraction", series, at)) else None)

    checks.append(_max_check(
        history, candidate.hash, f"probabilistic bound fraction (lambda {bound.lam:g})", "prob_bound_fraction",
        bound.max_fraction,
        floats, multi, lambda series, at: rules.prob_bound_value(history, series, at, thresholds),
        incomplete_of=without_k, never=never))
    checks.append(_max_check(history, candidate.hash, "rigorous bound fraction", "bound_fraction", bound.max_fraction,
                             floats, multi, values_of("bound_fraction"),
                             lambda series, at: rules.no_rigorous_bound(history, series, at), never=never))
    checks.append(_max_check(history, candidate.hash, "non-finite outputs", "nonfinite", bound.max_nonfinite,
                             floats, multi, values_of("nonfinite"), never=never))
    judged = rules.judge_marks(history, thresholds, candidate, baseline)
    checks.append(divergence_check(history, thresholds, candidate, judged, baseline, multi))
    # a baseline newer than the candidate is allowed (a revert), and said
    notes = (baseline_note,) if baseline is not None and baseline_note else ()
    notes += (f"latency not judged: {latency_apart}",) if latency_apart else ()
    notes += (two_llvms,) if two_llvms else ()
    return GateResult(candidate, baseline, tuple(checks), judged, tuple(slowdowns), thresholds, notes)


def with_remeasured(history: res.History, result: GateResult) -> res.History:
    """``history`` with what ``result`` found by timing suspects again: a report rendered from it
    shows the very samples the verdict was given on (its regressions agree with the gate: noisy,
    confirmed), whether or not the re-measurement could be kept on disk."""
    found = result.newly_remeasured()
    if not found or result.baseline is None:
        return history
    pair = (result.baseline.hash, result.candidate.hash)  # merged as they are kept: retimings.keep_remeasured
    merged = retimings.merge_remeasured(history.remeasured.get(pair, []), found)
    return dataclasses.replace(history, remeasured={**history.remeasured, pair: merged})


def evaluate_named(history: res.History, commit_name: str, thresholds: Thresholds, baseline_name: str | None = None,
                   remeasure: Remeasure | None = None) -> GateResult:
    """:func:`evaluate` of the commits named as a user names them (hash prefix or tag; the baseline
    by default as the thresholds say)."""
    candidate = history.resolve(commit_name)
    baseline, note = baseline_of(history, candidate, thresholds.latency.baseline if baseline_name is None
                                 else baseline_name)
    return evaluate(history, candidate, baseline, thresholds, remeasure, note)


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
