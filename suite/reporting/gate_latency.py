"""The gate's latency check (the kept samples judged, suspects timed again, kernels of changed
code among them; two builds' LLVMs apart) and its check of which kernels' code changed."""

from __future__ import annotations

import dataclasses

from suite.core import retimings
from suite.reporting import code_identity
from suite.reporting import results as res
from suite.reporting import rules
from suite.reporting.gate_checks import missing_check
from suite.reporting.gate_result import FIRST_COMMIT, Check, Culprit, Status
from suite.reporting.rules import Slowness, where

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
        missing = missing_check(name, limit, f"{', '.join(lacking)}: not judged", history,
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
