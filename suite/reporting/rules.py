"""The rules of the gate and the report: when a commit is marked, why, how a mark or a slowdown is
judged against a baseline, and when a change is the suite's records' rather than TVM's.

Every function here is pure: it reads a verified :class:`suite.reporting.results.History` and the
typed :class:`suite.reporting.thresholds.Thresholds`, and returns typed results. The gate judges
with them, the report shows what the gate judged and draws the history of marks with the same
:func:`find_marks`, so the two cannot disagree.
"""

from __future__ import annotations

import dataclasses
import enum
import fnmatch
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from suite import cache
from suite.core import bounds
from suite.reporting import code_identity
from suite.reporting import results as res
from suite.reporting.thresholds import Acceptance, Thresholds, cannot_fail


def match(value: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


# ----------------------------------------------------------------------------- the records rule


def records_changed(history: res.History, series: res.Series, before: res.Commit,
                    after: res.Commit) -> tuple[str, str] | None:
    """The one rule for the suite's own records: where the ``tuned`` order replayed the tuning
    records of another target at ``after`` than at ``before`` (llvm's, then a target's own, say),
    (records at before, records at after); None otherwise, or where a side did not note them. A
    change of that combination between the two commits is the records', not TVM's: it is reported
    as *records* and fails no check against the baseline."""
    if series.order != "tuned":
        return None
    a, b = (history.kept(c.hash, series.machine).records.get(series.ids) for c in (before, after))
    return (a, b) if a is not None and b is not None and a != b else None


def records_words(changed: tuple[str, str], before: res.Commit, after: res.Commit) -> str:
    return (f"tuned replayed {changed[0]}'s record at {before.label}, {changed[1]}'s at {after.label}: "
            "the suite's records changed, not TVM")


# ----------------------------------------------------------------------------- marks


SHIFT_METRICS = ("error_ratio", "error_ratio_z", "bias_shift", "bias_shift_z")
TWIN_METRICS = tuple(f"twin_{m}" for m in SHIFT_METRICS) + ("twin_prob_bound_fraction",)


class Cause(str, enum.Enum):
    """Why a mark: the IEEE twin (suite.targets.ieee_twin) runs the same program with IEEE rounding."""

    ARITHMETIC = "arithmetic"  #: with IEEE rounding the same schedule is not marked
    SCHEDULE = "schedule"  #: marked with IEEE rounding too
    UNATTRIBUTED = "unattributed"  #: no twin on that target


class MarkStatus(str, enum.Enum):
    NEW = "new"  #: not marked at the baseline
    WORSE = "worse"  #: its value grew by more than [divergence] worse_factor since the baseline
    KNOWN = "known"  #: inherited from the baseline
    FIRST = "first"  #: no baseline (the first commit with results), or one that cannot be compared


@dataclass(frozen=True)
class Mark:
    """One (commit, combination, rule) whose error changed beyond what a reordering of IEEE sums
    does, or beyond what any unbiased rounding explains."""

    commit: res.Commit
    series: res.Series
    metric: str  #: error_ratio, bias_shift or prob_bound_fraction
    rule: str
    value: float
    threshold: float
    z: float | None
    cause: Cause
    twin: dict  #: the IEEE twin's values of the same pair (twin_*)

    @property
    def key(self) -> tuple:
        return self.series, self.metric

    def cause_words(self) -> str:
        return cause_words(self.cause, self.metric, self.series.target, self.twin)

    def as_dict(self) -> dict:
        return {"commit": self.commit.hash, "label": self.commit.label, **self.series.as_dict(),
                "metric": self.metric, "rule": self.rule, "value": self.value, "threshold": self.threshold,
                "z": self.z, "cause": self.cause.value, "cause_words": self.cause_words(), "twin": self.twin}


def shift_rules(values: dict, thresholds: Thresholds, prefix: str = "") -> list[str]:
    """The error-shift rules that ``values`` (error_ratio, error_ratio_z, bias_shift, bias_shift_z,
    each under ``prefix``) cross: "error_ratio" and/or "bias_shift"."""
    div = thresholds.divergence
    ratio, ratio_z, shift, shift_z = (values.get(prefix + m) for m in SHIFT_METRICS)
    crossed = []
    if res.finite(ratio) and res.finite(ratio_z) and ratio > div.max_error_ratio and ratio_z > div.min_z:
        crossed.append("error_ratio")
    if res.finite(shift) and res.finite(shift_z) and abs(shift) > div.max_bias_shift and shift_z > div.min_z:
        crossed.append("bias_shift")
    return crossed


def cause(metric: str, twin: dict, thresholds: Thresholds) -> Cause:
    """Why a mark of ``metric`` is there, from the IEEE twin's values (``twin_*``) of the same pair:
    *arithmetic* when the same schedule with IEEE rounding stays inside the rule (qfloat's rounding
    made the difference), *schedule* when the twin crosses it too (the transformation itself
    changed the numbers beyond what a reordering of IEEE sums does), *unattributed* without a twin."""
    if metric == "prob_bound_fraction":
        fraction = twin.get("twin_prob_bound_fraction")
        if not res.finite(fraction):
            return Cause.UNATTRIBUTED
        return Cause.SCHEDULE if fraction > thresholds.bound.max_fraction else Cause.ARITHMETIC
    if not all(res.finite(twin.get(f"twin_{m}")) for m in SHIFT_METRICS):
        return Cause.UNATTRIBUTED
    return Cause.SCHEDULE if shift_rules(twin, thresholds, "twin_") else Cause.ARITHMETIC


def cause_words(found: Cause, metric: str, target: str, twin: dict) -> str:
    """A cause in words, with the IEEE twin's figures behind it."""
    if found is Cause.UNATTRIBUTED:
        return f"unattributed: {target} has no IEEE twin"
    if metric == "prob_bound_fraction":
        figures = f"IEEE twin's bound fraction {twin['twin_prob_bound_fraction']:.3g}"
    else:
        figures = (f"IEEE twin: error ratio {twin['twin_error_ratio']:.3g} (z {twin['twin_error_ratio_z']:.3g}), "
                   f"bias shift {twin['twin_bias_shift']:+.3g} (|z| {twin['twin_bias_shift_z']:.3g})")
    if found is Cause.ARITHMETIC:
        return f"arithmetic (qfloat): with IEEE rounding the same schedule is not marked; {figures}"
    return f"schedule: marked with IEEE rounding too; {figures}"


def attribute(values: dict, target: str, thresholds: Thresholds) -> dict:
    """The error-shift rules one pair's divergence values (``measure --against``) cross, and the
    cause of the mark they make (None when they cross none)."""
    crossed = shift_rules(values, thresholds)
    if not crossed:
        return {"marked": [], "cause": None}
    twin = {m: values[m] for m in TWIN_METRICS if res.finite(values.get(m))}
    found = cause(crossed[0], twin, thresholds)
    return {"marked": crossed, "cause": found.value, "cause_words": cause_words(found, crossed[0], target, twin)}


def _ruled(series: res.Series, thresholds: Thresholds) -> bool:
    div = thresholds.divergence
    return series.dtype in div.dtypes and match(series.workload, div.workloads)


def _shift_ruled(series: res.Series, thresholds: Thresholds) -> bool:
    div = thresholds.divergence
    return _ruled(series, thresholds) and match(series.target, div.targets) and series.order in div.orders


def marks_at(history: res.History, commit: res.Commit, thresholds: Thresholds) -> list[Mark]:
    """Every combination marked at ``commit``, each with its cause and the twin's values behind it."""
    div, bound = thresholds.divergence, thresholds.bound
    marks = []
    for s in history.series():
        if not _ruled(s, thresholds):
            continue
        values = {m: history.value(m, s, commit.hash) for m in SHIFT_METRICS + TWIN_METRICS}
        twin = {m: values[m] for m in TWIN_METRICS if res.finite(values[m])}
        found = []
        if _shift_ruled(s, thresholds):
            for metric in shift_rules(values, thresholds):
                if metric == "error_ratio":
                    found.append((metric, f"error vs float64 grew ({s.order} vs default)", div.max_error_ratio))
                else:
                    found.append((metric, f"error drifted to one side ({s.order} vs default)", div.max_bias_shift))
        fraction = prob_bound_value(history, s, commit.hash, thresholds)
        if match(s.target, div.bound_targets) and res.finite(fraction) and fraction > bound.max_fraction:
            found.append(("prob_bound_fraction", "beyond what any unbiased rounding explains", bound.max_fraction))
        for metric, rule, threshold in found:
            value = fraction if metric == "prob_bound_fraction" else values[metric]
            z = None if metric == "prob_bound_fraction" else values[f"{metric}_z"]
            marks.append(Mark(commit, s, metric, rule, value, threshold, z, cause(metric, twin, thresholds), twin))
    return marks


def find_marks(history: res.History, thresholds: Thresholds) -> list[Mark]:
    """The marks at every commit, oldest commit first."""
    return [m for commit in history.commits for m in marks_at(history, commit, thresholds)]


#: What the error-shift rules read of a combination: asv keeps error_ratio, the run's side data the rest.
SHIFT_NEEDS = ("error_ratio", "error_ratio_z", "bias_shift", "bias_shift_z")


def divergence_series(history: res.History, thresholds: Thresholds, commit: str) -> list[res.Series]:
    """Combinations the error-shift rules compare with ``default`` at ``commit``: every value the
    rules read is there."""
    return [s for s in history.series()
            if _shift_ruled(s, thresholds) and all(res.finite(history.value(m, s, commit)) for m in SHIFT_NEEDS)]


def divergence_incomplete(history: res.History, thresholds: Thresholds, commit: str) -> list[res.Series]:
    """Combinations measured against ``default`` at ``commit`` (asv has their error_ratio) whose
    other values the rules read are missing (kept beside asv's results only: results without the
    run's side data). They cannot be compared: never counted as compared, never as unmarked."""
    return [s for s in history.series()
            if _shift_ruled(s, thresholds) and res.finite(history.value("error_ratio", s, commit))
            and not all(res.finite(history.value(m, s, commit)) for m in SHIFT_NEEDS)]


def checked_commits(history: res.History, thresholds: Thresholds) -> list[str]:
    """Commits with any value the marking rules look at, and every value they read there: a commit
    whose divergence values are incomplete (no side data) is not checked, so never "good"."""
    return [c.hash for c in history.commits
            if any(_ruled(s, thresholds) and (res.finite(history.value("prob_bound_fraction", s, c.hash))
                                              or res.finite(history.value("error_ratio", s, c.hash)))
                   for s in history.series())
            and not divergence_incomplete(history, thresholds, c.hash)]


# ----------------------------------------------------------------------------- marks against a baseline


@dataclass(frozen=True)
class JudgedMark:
    mark: Mark
    status: MarkStatus
    fails: bool
    baseline_value: float | None = None
    since: res.Commit | None = None  #: known and worse: marked without a break since this commit
    accepted: str | None = None  #: the reason of the acceptance that applies
    #: an acceptance names this mark but does not apply to it (it is new or worse)
    acceptance_not_applied: str | None = None
    records: str | None = None  #: the records changed since the baseline (see records_changed)

    def line(self, multi: bool) -> str:
        """The mark as the gate lists it: status, combination, rule and value, cause."""
        m = self.mark
        status = "first commit" if self.status is MarkStatus.FIRST else self.status.value
        if self.since is not None:
            status += f" since {self.since.label}"
        value = f"{m.metric} {m.value:.4g} vs {m.threshold:g}"
        if self.baseline_value is not None:
            value += f" (baseline {self.baseline_value:.4g})"
        text = f"{status}: {where(m.series, multi)}: {m.rule}: {value}; cause {m.cause_words()}"
        if self.accepted:
            text += f"; accepted: {self.accepted}"
        if self.acceptance_not_applied:
            text += f"; the acceptance in the thresholds file does not apply to a {self.status.value} mark"
        if self.records:
            text += f"; {self.records}"
        return text

    def as_dict(self) -> dict:
        return {**self.mark.as_dict(), "status": self.status.value, "fails": self.fails,
                "baseline_value": self.baseline_value, "since": self.since.as_dict() if self.since else None,
                "accepted": self.accepted, "acceptance_not_applied": self.acceptance_not_applied,
                "records": self.records}


@dataclass(frozen=True)
class MarkJudgement:
    marks: tuple[JudgedMark, ...]
    fixed: tuple[tuple[Mark, float], ...]  #: marks of the baseline gone at the candidate, with the value now
    stale: tuple[Acceptance, ...]  #: acceptances that match no mark at the candidate


def _acceptance(mark: Mark, accepts) -> Acceptance | None:
    return next((a for a in accepts if a.ids == mark.series.ids), None)


def judge_marks(history: res.History, thresholds: Thresholds, candidate: res.Commit,
                baseline: res.Commit | None) -> MarkJudgement:
    """The marks at ``candidate`` judged against ``baseline``.

    New and worse marks fail whatever the thresholds file accepts (the output says the acceptance
    did not apply); known marks, and marks at the first commit, fail when their cause is not the
    arithmetic and no ``[[divergence.accept]]`` names them. Where the tuned order replayed other
    records at the two commits (:func:`records_changed`), a mark is judged as at a first commit:
    by its cause alone. Marks of the baseline gone at the candidate, whose combination the
    candidate measured, are fixed; acceptances matching no mark are stale."""
    div = thresholds.divergence
    now = {m.key: m for m in marks_at(history, candidate, thresholds)}
    before = {m.key: m for m in marks_at(history, baseline, thresholds)} if baseline is not None else {}
    judged = []
    marked_at = functools.cache(lambda commit: {m.key for m in marks_at(history, commit, thresholds)})
    for key, mark in sorted(now.items(), key=lambda item: (item[0][0].ids, item[0][0].machine, item[0][1])):
        accept = _acceptance(mark, div.accept)
        changed = records_changed(history, mark.series, baseline, candidate) if baseline is not None else None
        baseline_value, since = None, None
        if baseline is None or changed:
            status = MarkStatus.FIRST
        elif key not in before:
            status = MarkStatus.NEW
        else:
            baseline_value = before[key].value
            grew = abs(mark.value) > div.worse_factor * abs(baseline_value)
            status = MarkStatus.WORSE if grew else MarkStatus.KNOWN
            _, since = marked_run(history, key, candidate, lambda c, k=key: k in marked_at(c))
        applies = accept is not None and status in (MarkStatus.KNOWN, MarkStatus.FIRST)
        fails = status in (MarkStatus.NEW, MarkStatus.WORSE) or (mark.cause is not Cause.ARITHMETIC and not applies)
        judged.append(JudgedMark(mark, status, fails, baseline_value, since, accept.reason if applies else None,
                                 accept.reason if accept is not None and not applies else None,
                                 records_words(changed, baseline, candidate) if changed else None))
    fixed = []
    for key, mark in sorted(before.items(), key=lambda item: (item[0][0].ids, item[0][0].machine, item[0][1])):
        value_now = history.value(mark.metric, mark.series, candidate.hash)
        if key not in now and res.finite(value_now):
            fixed.append((mark, value_now))
    stale = tuple(a for a in div.accept if not any(a.ids == m.mark.series.ids for m in judged))
    return MarkJudgement(tuple(judged), tuple(fixed), stale)


def marked_run(history: res.History, key: tuple, commit: res.Commit,
               is_marked: Callable[[res.Commit], bool]) -> tuple[res.Commit | None, res.Commit]:
    """The run of marks of ``key`` that ends at ``commit``: (the last commit before it that measured
    the combination and is not marked, None where every commit that measured it is marked; the first
    commit of the run). Commits that did not measure the combination neither break the run nor end
    it. ``is_marked(c)``: whether ``key`` is marked at ``c``."""
    series, metric = key
    since = commit
    for before in reversed(history.commits[:history.index(commit.hash)]):
        if is_marked(before):
            since = before
        elif res.finite(history.value(metric, series, before.hash)):
            return before, since  # measured there and not marked
    return None, since


# ----------------------------------------------------------------------------- latency


class Slowness(str, enum.Enum):
    #: slower, and slower each time both kernels were timed again (``[latency] retimed_times``)
    CONFIRMED = "confirmed"
    NOISY = "noisy"  #: slower in the kept samples, not when timed again
    #: slower in the kept samples, not timed again (or slower when timed again fewer times than
    #: the rule asks)
    SUSPECT = "suspect"
    RECORDS = "records"  #: the tuned order replayed other records at the two commits
    #: the kernel's code is the same at both commits (suite.reporting.code_identity): noise by
    #: construction, never a failure, never timed again
    SAME_CODE = "same code"

    @property
    def fails(self) -> bool:
        return self is Slowness.CONFIRMED


@dataclass(frozen=True)
class Slowdown:
    series: res.Series
    ratio: float  #: candidate median / baseline median
    p: float  #: one-sided Mann-Whitney U p-value of the kept samples
    verdict: Slowness
    #: (ratio, p) of each interleaved re-timing, in order: the median of the paired ratios, and the
    #: one-sided signed-rank p of their logarithms (:func:`remeasured`)
    remeasured: tuple[tuple[float, float], ...] | None = None
    samples: str | None = None  #: digest of the two sides' samples judged (a re-measurement speaks for these)
    runtime: str | None = None  #: where kernels of other TVM builds were re-timed
    why: str | None = None  #: why a suspect was not re-measured; the records that changed
    #: not slower in the kept samples: a suspect only because its kernel's code changed, which
    #: only timing both kernels again, interleaved, can tell from noise (a small step)
    code_changed_only: bool = False
    #: timed again by this evaluation (:func:`remeasured`), not an earlier gate's re-timing read
    #: back: what a gate keeps (``GateResult.retimed``)
    retimed_here: bool = False

    def line(self, multi: bool) -> str:
        again = "; re-measured " + ", again ".join(f"{r:.2f}x, p {p:.2g}" for r, p in self.remeasured) \
            if self.remeasured else ""
        again += f" ({self.runtime})" if self.runtime else ""
        why = f" ({self.why})" if self.why else ""
        return f"{self.verdict.value}: {where(self.series, multi)}: {self.ratio:.2f}x, p {self.p:.2g}{again}{why}"


@dataclass(frozen=True)
class LatencyComparison:
    """Latency at a candidate against a baseline, judged on the kept timing samples only."""

    found: tuple[Slowdown, ...]  #: slower by the latency rule (suspects until timed again)
    compared: int  #: combinations judged on their samples
    #: measured at both commits, without samples on a side (no side data): not judged, never a
    #: ratio of medians
    unsampled: tuple[res.Series, ...] = ()
    #: (combination, why): samples too few for the test ever to reach alpha: not judged
    unreachable: tuple[tuple[res.Series, str], ...] = ()


def mann_whitney(before, after) -> float:
    """One-sided p-value that ``after`` is slower than ``before`` (exact for small samples)."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(after, before, alternative="greater").pvalue)


def slower(thresholds: Thresholds, ratio: float, p: float) -> bool:
    """The latency rule: a ratio of medians above max_ratio with a one-sided U test below alpha."""
    return ratio > thresholds.latency.max_ratio and p < thresholds.latency.alpha


def samples_digest(before, after) -> str:
    """What a re-measurement speaks for: both timings whole (samples, kernel, the TVM that timed them)."""
    return cache.digest([before.to_json(), after.to_json()])


def latency_changes(history: res.History, baseline: res.Commit, candidate: res.Commit,
                    thresholds: Thresholds, code_changed: bool = False, unknown_code: bool = False) -> LatencyComparison:
    """Combinations slower at ``candidate`` than at ``baseline`` by the latency rule, as found in
    the kept samples (suspects, not yet timed again; an earlier gate's re-measurement of the very
    same samples applied: one that confirmed a step counts whatever the kept samples say), how
    many combinations were judged, and those that could not be: without samples on a side (never
    judged on a ratio of medians), or with too few samples for the test ever to reach alpha.
    ``code_changed``: every combination whose kernel's code changed is a suspect too
    (``code_changed_only``), for a caller that times suspects again: a step smaller than the
    noise between two runs shows only there. ``unknown_code``: so is every one whose code is not
    known to be the same (no code identity kept), for a caller whose kept samples pass nothing."""
    kept = {(tuple(e["ids"]), e.get("machine")): e for e in history.remeasured.get((baseline.hash, candidate.hash), [])}
    found, compared, unsampled, unreachable = [], 0, [], []
    for series in history.series():
        now = history.value("latency", series, candidate.hash)
        before = history.value("latency", series, baseline.hash)
        if not (res.finite(now) and res.finite(before)) or before <= 0:
            continue
        a, b = (history.kept(c.hash, series.machine).timings.get(series.ids) for c in (baseline, candidate))
        if a is None or b is None:
            unsampled.append(series)
            continue
        if why := cannot_fail(thresholds.latency.alpha, len(a.samples_s), len(b.samples_s)):
            unreachable.append((series, why))
            continue
        compared += 1
        changed = records_changed(history, series, baseline, candidate)
        ratio = b.median / a.median
        # the U test (milliseconds each) only where it can decide, a ratio above max_ratio, or where
        # the combination is listed below: most of a pair's are neither, and the report judges every pair
        p = mann_whitney(a.samples_s, b.samples_s) if ratio > thresholds.latency.max_ratio else None
        digest = samples_digest(a, b)
        e = kept.get((series.ids, series.machine))
        retimings = tuple(map(tuple, e["remeasured"])) if e is not None and e["samples"] == digest else ()
        # an earlier gate's re-timings, judged by the rule as it is now: where they decide nothing
        # yet (slower fewer times than the rule asks), the kernel is timed again from the start
        kept_verdict = retimed_verdict(retimings, thresholds) if retimings else Slowness.SUSPECT
        e = e if kept_verdict is not Slowness.SUSPECT else None
        slow = p is not None and slower(thresholds, ratio, p)
        code = code_identity.compare(history, series, baseline.hash, candidate.hash)
        if not slow:
            confirmed = kept_verdict is Slowness.CONFIRMED
            retime = code_changed and e is None and not changed and (
                code is code_identity.Code.CHANGED or unknown_code and code is not code_identity.Code.SAME)
            if not (confirmed or retime):
                continue
        if p is None:
            p = mann_whitney(a.samples_s, b.samples_s)
        if changed:
            found.append(Slowdown(series, ratio, p, Slowness.RECORDS, samples=digest,
                                  why=records_words(changed, baseline, candidate)))
        elif code is code_identity.Code.SAME:
            found.append(Slowdown(series, ratio, p, Slowness.SAME_CODE, samples=digest,
                                  why="the kernel's code is the same at both commits: noise, not timed again"))
        elif e is not None:
            found.append(Slowdown(series, ratio, p, kept_verdict, retimings, digest,
                                  e.get("runtime"), code_changed_only=not slow))
        else:
            found.append(Slowdown(series, ratio, p, Slowness.SUSPECT, samples=digest, code_changed_only=not slow))
    return LatencyComparison(tuple(found), compared, tuple(unsampled), tuple(unreachable))


def retimed_verdict(retimings, thresholds: Thresholds) -> Slowness:
    """What re-timings of a suspect, in order, each (median of the paired ratios, signed-rank p),
    say of it: noise once one is not slower; confirmed once ``[latency] retimed_times`` of them
    were, in a row (among the 128 kernels a gate may time again, one re-timing at ``retimed_alpha``
    finds a few slower by chance); a suspect still, to be timed again, before that."""
    latency = thresholds.latency
    if not all(ratio > latency.retimed_max_ratio and p < latency.retimed_alpha for ratio, p in retimings):
        return Slowness.NOISY
    return Slowness.CONFIRMED if len(retimings) >= latency.retimed_times else Slowness.SUSPECT


def remeasured(suspect: Slowdown, again: list[list[float]], thresholds: Thresholds,
               runtime: str | None) -> Slowdown:
    """A suspect judged on one more re-timing of both kernels, interleaved (the i-th sample of
    each side taken one after the other: :func:`suite.core.timing.remeasure`), added to those it
    had (:func:`retimed_verdict`). Each pair shares its moment's load, so the pairs' ratios are
    judged, not the sides apart: slower when the median of the ratios is above ``[latency]
    retimed_max_ratio`` and the one-sided Wilcoxon signed-rank test of their logarithms gives p
    below ``retimed_alpha`` (a burst of load on a few pairs can move the median; it cannot make
    the ratios consistently above 1)."""
    import numpy as np
    from scipy.stats import wilcoxon

    ratios = np.asarray(again[1], dtype=float) / np.asarray(again[0], dtype=float)
    ratio = float(np.median(ratios))
    logs = np.log(ratios)
    p = float(wilcoxon(logs, alternative="greater").pvalue) if np.any(logs) else 1.0  # all equal: no evidence
    retimings = (suspect.remeasured or ()) + ((ratio, p),)
    return dataclasses.replace(suspect, verdict=retimed_verdict(retimings, thresholds), remeasured=retimings,
                               runtime=runtime, retimed_here=True)


# ----------------------------------------------------------------------------- bounds


def prob_bound_value(history: res.History, series: res.Series, commit: str, thresholds: Thresholds) -> float | None:
    """``prob_bound_fraction`` at the thresholds' lambda. asv records it at
    ``bounds.DEFAULT_LAMBDA``; every element of an output shares K, so the fraction scales exactly
    with gamma~_K(default) / gamma~_K(lambda)."""
    value = history.value("prob_bound_fraction", series, commit)
    lam = thresholds.bound.lam
    if not res.finite(value) or lam == bounds.DEFAULT_LAMBDA:
        return value
    k = history.value("accumulation_length", series, commit)
    if not res.finite(k):
        return None
    return value * (bounds.gamma_tilde(int(k), series.dtype, bounds.DEFAULT_LAMBDA)
                    / bounds.gamma_tilde(int(k), series.dtype, lam))


def no_rigorous_bound(history: res.History, series: res.Series, commit: str) -> str | None:
    """Why a measured combination has no rigorous bound fraction: derived from K*u >= 1."""
    k = history.value("accumulation_length", series, commit)
    if not res.finite(k) or res.finite(history.value("bound_fraction", series, commit)):
        return None
    if math.isnan(bounds.gamma(int(k), series.dtype)):
        return f"no rigorous bound for K = {int(k)} in {series.dtype}"
    return None


def where(series: res.Series, multi_machine: bool) -> str:
    """A combination in words (with its machine where a history has several)."""
    text = " ".join(series.ids)
    return f"{text} @{series.machine}" if multi_machine else text

