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

from suite.core import retimings
from suite.reporting import code_identity
from suite.reporting import results as res
from suite.reporting import rules
from suite.reporting.gate_checks import (change_checks, divergence_check, exactness_check, failed_combinations,
                                         failure_reason, float_never, integer, max_check, model_check)
from suite.reporting.gate_latency import code_check, latency_check, latency_not_judged
from suite.reporting.gate_result import Check, Culprit, GateResult, Remeasure, Status
from suite.reporting.rules import where
from suite.reporting.thresholds import Thresholds


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

    never = float_never(history)
    for limit in thresholds.accuracy:
        checks.append(max_check(history, candidate.hash, f"{limit.metric} {limit.dtype}", limit.metric, limit.limit,
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

    checks.append(max_check(
        history, candidate.hash, f"probabilistic bound fraction (lambda {bound.lam:g})", "prob_bound_fraction",
        bound.max_fraction,
        floats, multi, lambda series, at: rules.prob_bound_value(history, series, at, thresholds),
        incomplete_of=without_k, never=never))
    checks.append(max_check(history, candidate.hash, "rigorous bound fraction", "bound_fraction", bound.max_fraction,
                             floats, multi, values_of("bound_fraction"),
                             lambda series, at: rules.no_rigorous_bound(history, series, at), never=never))
    checks.append(max_check(history, candidate.hash, "non-finite outputs", "nonfinite", bound.max_nonfinite,
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
