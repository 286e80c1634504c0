"""The gate's checks of values at the candidate, and against the baseline: combinations
completed, the accuracy limits (ULP, bounds, non-finite), int8 exactness against its oracle, the
whole models, the [change.<metric>] of the thresholds and the divergence marks; and how a check
says DATA MISSING (the side data a run keeps, missing, :func:`unkept_lines`) or NOT CHECKED."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from suite import tracked
from suite.core.workloads import INTEGER_DTYPES
from suite.reporting import results as res
from suite.reporting import rules
from suite.reporting.gate_result import FIRST_COMMIT, Check, Culprit, Status
from suite.reporting.rules import where

#: How to get what a commit's run keeps beside asv's results, where it is missing.
HOW_TO_KEEP = ("plain `asv run` writes asv's results only, and a results/ copied without its runs/ leaves the side "
               "data behind: measure the commit with `tvm-suite run` (or `history`, `check`), or copy runs/ beside "
               "results/")



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


def missing_check(name: str, limit: str, worst: str, history: res.History, commits, series=(), multi=False,
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


def max_check(history, commit, name, metric, limit, series_filter, multi, value_of, unchecked_of=None,
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
        return missing_check(name, f"<= {limit:g}", f"{len(incomplete)} measured without {incomplete[0][1]}", history,
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
#: A whole int8 model's elements unlike the exact integer pipeline's (bench_model.ModelInteger).
MODEL_DIFFERING = "model_integer_differing"
#: Where no commit measured a float dtype: what the ULP and bound checks say (int8 rows never reach
#: them: int8 is judged by EXACTNESS).
ONLY_INTEGERS = "int8 alone at every commit: no ULP or bound"


def integer(series: res.Series) -> bool:
    """Whether ``series`` is judged exactly against the integer oracle (int8), never by ULP or bound."""
    return series.dtype in INTEGER_DTYPES


def float_never(history: res.History) -> str:
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
    inputs', compared with the wrap), are information. A whole int8 model is judged by the same
    rule, at the candidate alone: any element of its calls' outputs unlike the exact integer
    pipeline's (:data:`MODEL_DIFFERING`) fails, so a baseline measured before that metric existed
    changes nothing; a model measured without it where an earlier commit has it is DATA MISSING.
    int8 is measured only where ``--dtypes`` names it: a commit without it is NOT CHECKED, never
    DATA MISSING."""
    compared = baseline is not None and baseline.hash != candidate.hash
    name = f"{EXACTNESS} vs {baseline.label}" if compared else EXACTNESS
    limit = ("accumulator bit-exact; exact fraction not lower, max step error not higher" if compared
             else "accumulator bit-exact")
    series = [s for s in history.series() if integer(s)]

    def value(metric, s, commit):
        return history.value(metric, s, commit.hash)

    measured = [s for s in series if res.finite(value("accumulator_mismatches", s, candidate))]
    models = [s for s in series if res.finite(value(MODEL_DIFFERING, s, candidate))]
    if models:
        limit += "; a whole model's outputs as the exact integer pipeline's"
    # a model measured at the candidate without the metric an earlier commit has: lost, as in _no_values_check
    earlier = history.commits[:history.index(candidate.hash)]
    model_metrics = [m.name for m in tracked.METRICS if m.module == "bench_model"]
    lost = [s for s in series if s not in models and any(res.finite(value(m, s, candidate)) for m in model_metrics)
            and any(res.finite(value(MODEL_DIFFERING, s, c)) for c in earlier)]
    if lost:
        return missing_check(name, limit, f"{len(lost)} measured without {MODEL_DIFFERING}, "
                                          "which an earlier commit has", history, [candidate], lost, multi)
    if not measured and not models:
        at_all = any(res.finite(value(m, s, c)) for m in ("accumulator_mismatches", MODEL_DIFFERING) for s in series
                     for c in history.commits)
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
        return missing_check(name, limit, f"{len(found)} measured without exact_fraction at {_labels(at)}", history, at,
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
    for s in models:
        differing = value(MODEL_DIFFERING, s, candidate)
        if differing > 0:
            failing.append((f"{where(s, multi)}: model not exact: {differing:.0f} uint8 elements differ from the exact "
                            "integer pipeline", Culprit(s, MODEL_DIFFERING)))
    culprits = dict.fromkeys(c.series for _, c in failing)
    judged = len(measured) + len(models)
    than = f" than at {baseline.label}" if compared else ""
    if failing:
        worst = f"{len(culprits)} of {judged} not bit-exact{' or less exact' + than if compared else ''}"
    else:
        worst = f"{judged} of {judged} bit-exact" + (f", none less exact{than}" if compared else "")
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
            checks.append(missing_check(name, limit, f"no side data at {_labels(unkept)}: {metric} and the records "
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
        return missing_check(name, limit, f"{len(series)} not compared: no {', '.join(rules.SHIFT_NEEDS[1:])} at "
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
