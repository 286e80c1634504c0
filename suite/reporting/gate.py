"""Release readiness: the verdict of ``tvm-suite gate`` on a candidate commit.

Exit status: 0 ready; 1 not ready: a check failed, a combination failed to build or run at the
candidate (a failed build is a finding about the candidate), or a slowdown reproduced; 2 data
missing or unreadable (no baseline, no values at the candidate, a file that cannot be read).
Missing data wins over a failure: the verdict needs complete data, so the gate is never "ready"
by default. Skipped combinations (not applicable, a tool or GPU missing) stay out of every check.

Latency is judged on the timing samples of both commits (``suite.core.timing``): a suspect is
a ratio of medians above ``max_ratio`` with a one-sided Mann-Whitney U test below ``alpha``; before
NOT READY every suspect whose two kernels can still run here is timed again, interleaved, and
reported as "noisy" when the slowdown does not reproduce. Kernels of other TVM builds (a release
history) are re-timed in the installed TVM's runtime, and the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from suite import cache, tracked
from suite.core import runstore, timing
from suite.reporting import results as res
from suite.reporting import rules

PASS, FAIL, MISSING, NOT_CHECKED = "PASS", "FAIL", "MISSING", "NOT CHECKED"


# ----------------------------------------------------------------------------- checks


@dataclass
class Check:
    name: str
    limit: str
    status: str
    worst: str = ""
    details: list[str] = field(default_factory=list)  #: what failed (or why not checked)
    notes: list[str] = field(default_factory=list)  #: information shown whatever the status

FIRST_COMMIT = "first commit with results: nothing to compare"


def _where(series: res.Series, multi_machine: bool) -> str:
    text = f"{series.workload} {series.dtype} {series.target} {series.order}"
    return f"{text} @{series.machine}" if multi_machine else text


def failed_combinations(history: res.History, commit: str) -> dict[res.Series, list[str]]:
    """Combinations with failed (null) results at ``commit``: their failed benchmarks."""
    failed: dict[res.Series, list[str]] = {}
    for metric, per_series in history.values.items():
        for series, per_commit in per_series.items():
            if commit in per_commit and per_commit[commit] is None:
                failed.setdefault(series, []).append(tracked.get(metric).method)
    return {s: sorted(methods) for s, methods in sorted(failed.items(), key=lambda i: i[0].ids)}


def failure_reason(history: res.History, commit: str, series: res.Series) -> str:
    reason = runstore.failure(runstore.of_results(history.results_dir), commit, series.ids)
    return reason or "reason in the asv log"


def _max_check(history, commit, name, limit, series_filter, multi, value_of, unchecked_of=None) -> Check:
    """The largest ``value_of(series)`` at ``commit`` against ``limit``. Combinations whose value
    cannot exist (``unchecked_of`` says why) are listed as not checked, never counted as passed."""
    worst, over, seen, unchecked = None, [], 0, []
    for series in history.series():
        if not series_filter(series):
            continue
        value = value_of(series, commit)
        if not res.finite(value):
            why = unchecked_of(series, commit) if unchecked_of else None
            if why:
                unchecked.append(f"not checked: {_where(series, multi)}: {why}")
            continue
        seen += 1
        if worst is None or value > worst[0]:
            worst = (value, series)
        if value > limit:
            over.append(f"{_where(series, multi)}: {value:.4g}")
    note = f"; {len(unchecked)} not checked" if unchecked else ""
    if not seen:
        if unchecked:
            return Check(name, f"<= {limit:g}", NOT_CHECKED, f"none checkable{note}", unchecked)
        anywhere = any(res.finite(value_of(s, c.hash)) for s in history.series() if series_filter(s)
                       for c in history.commits)
        if not anywhere:  # e.g. a dtype these results never ran
            return Check(name, f"<= {limit:g}", NOT_CHECKED, "no values at any commit")
        return Check(name, f"<= {limit:g}", MISSING, "no values at this commit")
    return Check(name, f"<= {limit:g}", FAIL if over else PASS,
                 f"{worst[0]:.4g} ({_where(worst[1], multi)}){note}", over + unchecked)


def _baseline(history: res.History, candidate: res.Commit, name: str) -> tuple[res.Commit | None, str]:
    """The baseline commit: ``previous`` (the last earlier commit with any result) or a named one."""
    if name != "previous":
        return history.resolve(name), ""
    index = history.index(candidate.hash)
    earlier = [c for c in history.commits[:index]
               if any(c.hash in per_commit for per_series in history.values.values()
                      for per_commit in per_series.values())]
    return (earlier[-1] if earlier else None), f"no commit before {candidate.label} with results"


@dataclass
class Slowdown:
    series: res.Series
    ratio: float  #: candidate median / baseline median
    p: float | None  #: one-sided Mann-Whitney U p-value; None without samples
    verdict: str  #: "confirmed", "noisy", "suspect" (not re-measured), "slower" (no samples)
    remeasured: tuple[float, float] | None = None  #: (ratio, p) of the interleaved re-measurement
    samples: str | None = None  #: digest of the two sides' samples judged (a re-measurement speaks for these)
    runtime: str | None = None  #: where kernels of other TVM builds were re-timed (timing.other_runtime)


def slowdowns(history: res.History, candidate: res.Commit, baseline: res.Commit, thresholds: dict,
              remeasure: bool) -> tuple[list[Slowdown], int]:
    """Latency slowdowns from ``baseline`` to ``candidate`` (and how many series were compared)."""
    latency = thresholds["latency"]
    run_dir = runstore.of_results(history.results_dir)
    found, compared = [], 0
    for series in history.series():
        now = history.value("latency", series, candidate.hash)
        before = history.value("latency", series, baseline.hash)
        if not (res.finite(now) and res.finite(before)) or before <= 0:
            continue
        compared += 1
        a, b = timing.load(run_dir, baseline.hash, series.ids), timing.load(run_dir, candidate.hash, series.ids)
        if a is None or b is None:  # results without samples: the ratio of medians is all there is
            if now / before > latency["max_ratio"]:
                found.append(Slowdown(series, now / before, None, "slower"))
            continue
        ratio, p = b.median / a.median, timing.mann_whitney(a.samples_s, b.samples_s)
        if ratio <= latency["max_ratio"] or p >= latency["alpha"]:
            continue
        judged = cache.digest([a.samples_s, b.samples_s])
        again = timing.remeasure(series.ids, [a, b]) if remeasure else None
        if again is None:
            found.append(Slowdown(series, ratio, p, "suspect", samples=judged))
            continue
        ratio2 = float(np.median(again[1]) / np.median(again[0]))
        p2 = timing.mann_whitney(again[0], again[1])
        confirmed = ratio2 > latency["max_ratio"] and p2 < latency["alpha"]
        found.append(Slowdown(series, ratio, p, "confirmed" if confirmed else "noisy", (ratio2, p2), judged,
                              timing.other_runtime([a, b])))
    kept = _remeasured_path(history, baseline, candidate)
    if remeasure:  # the report shows these verdicts
        cache.write_json(kept, [{"ids": list(s.series.ids), "machine": s.series.machine, "verdict": s.verdict,
                                 "remeasured": s.remeasured, "samples": s.samples, "runtime": s.runtime}
                                for s in found if s.remeasured])
    else:  # what an earlier gate run found by timing them again, for the very samples it judged
        earlier = {(tuple(e["ids"]), e["machine"]): e for e in cache.read_json(kept) or [] if isinstance(e, dict)}
        for s in found:
            if (e := earlier.get((s.series.ids, s.series.machine))) is not None and e.get("samples") == s.samples:
                s.verdict, s.remeasured, s.runtime = e["verdict"], tuple(e["remeasured"]), e.get("runtime")
    return found, compared


def _remeasured_path(history: res.History, baseline: res.Commit, candidate: res.Commit):
    return runstore.of_results(history.results_dir) / "gate" / f"{baseline.hash[:12]}-{candidate.hash[:12]}.json"


def other_llvm(history: res.History, candidate: res.Commit, baseline: res.Commit | None) -> str | None:
    """Why candidate and baseline are not compared (their TVMs were built with different LLVMs:
    a wheel's statically linked LLVM is not Debian's), or None. Where a side did not note its
    build (results of suites before the build was noted), nothing is said."""
    if baseline is None:
        return None
    run_dir = runstore.of_results(history.results_dir)
    now, before = (runstore.build(run_dir, c.hash) for c in (candidate, baseline))
    if not (now and before) or now.get("llvm") == before.get("llvm"):
        return None

    def llvm(build):
        facts = build["llvm"]
        origin = facts.get("installed_from", "wheel or source")
        return f"LLVM {facts.get('version')} ({origin}, USE_LLVM {facts.get('use_llvm')})"

    return (f"TVM at {candidate.label} was built with {llvm(now)}, at {baseline.label} with {llvm(before)}: "
            "kernels of two compilers are not compared")


def latency_check(history, candidate, baseline, why, thresholds, multi, remeasure) -> Check:
    latency = thresholds["latency"]
    name = f"latency vs {baseline.label}" if baseline is not None else "latency vs baseline"
    limit = f"<= {latency['max_ratio']:g}x, or U-test p >= {latency['alpha']:g}"
    if not any(res.finite(v) for per_commit in history.values.get("latency", {}).values() for v in per_commit.values()):
        return Check(name, limit, NOT_CHECKED, "no native target in these results: no latency at any commit")
    if baseline is None:
        return Check(name, limit, NOT_CHECKED, FIRST_COMMIT, [why] if why else [])
    if baseline.hash == candidate.hash:
        return Check(name, limit, MISSING, "baseline is the candidate itself")
    found, compared = slowdowns(history, candidate, baseline, thresholds, remeasure)
    if not compared:
        return Check(name, limit, MISSING, f"no combination measured at both {candidate.label} and {baseline.label}")
    details = []
    for s in sorted(found, key=lambda s: -s.ratio):
        again = (f"; re-measured {s.remeasured[0]:.2f}x, p {s.remeasured[1]:.2g}" if s.remeasured else "")
        again += f" ({s.runtime})" if s.runtime else ""
        p = f", p {s.p:.2g}" if s.p is not None else " (no samples: ratio of medians only)"
        details.append(f"{s.verdict}: {_where(s.series, multi)}: {s.ratio:.2f}x{p}{again}")
    failing = [s for s in found if s.verdict in ("confirmed", "suspect", "slower")]
    noisy = len(found) - len(failing)
    worst = (f"{len(failing)} slower" if failing else "none slower") + (f", {noisy} noisy" if noisy else "")
    return Check(name, limit, FAIL if failing else PASS, f"{worst} of {compared}", details)


def change_checks(history, candidate, baseline, thresholds, multi) -> list[Check]:
    """[change.<metric>] of thresholds.toml: each metric against the baseline commit."""
    checks = []
    for metric, rule in sorted(thresholds.get("change", {}).items()):
        name = f"{metric} vs {baseline.label}" if baseline is not None else f"{metric} vs baseline"
        parts = ([f"<= {rule['max_ratio']:g}x"] if "max_ratio" in rule else []) + (
            ["not to 0"] if rule.get("keep_nonzero") else [])
        limit = ", ".join(parts)
        if baseline is None or baseline.hash == candidate.hash:
            checks.append(Check(name, limit, NOT_CHECKED, FIRST_COMMIT if baseline is None else "no baseline"))
            continue
        over, seen = [], 0
        for series in history.series():
            now = history.value(metric, series, candidate.hash)
            before = history.value(metric, series, baseline.hash)
            if not (res.finite(now) and res.finite(before)):
                continue
            seen += 1
            if rule.get("keep_nonzero") and before > 0 and now == 0:
                over.append(f"{_where(series, multi)}: {before:.4g} -> 0")
            elif "max_ratio" in rule and before > 0 and now / before > rule["max_ratio"]:
                over.append(f"{_where(series, multi)}: {before:.4g} -> {now:.4g} ({now / before:.2f}x)")
        if not seen:
            checks.append(Check(name, limit, NOT_CHECKED, f"no {metric} at both commits"))
        else:
            checks.append(Check(name, limit, FAIL if over else PASS, f"{len(over)} of {seen}", over))
    return checks


def evaluate(history: res.History, commit_name: str, thresholds: dict, baseline_name: str | None = None,
             remeasure: bool = True):
    """(candidate commit, baseline commit or None, checks) for release readiness."""
    candidate = history.resolve(commit_name)
    commit = candidate.hash
    multi = len(history.machines) > 1
    checks = []
    failed = failed_combinations(history, commit)
    checks.append(Check("combinations completed", "no failed build or run", FAIL if failed else PASS,
                        f"{len(failed)} failed" if failed else "none failed",
                        [f"{_where(s, multi)}: {failure_reason(history, commit, s)}" for s in failed]))

    baseline, why = _baseline(history, candidate, thresholds["latency"]["baseline"] if baseline_name is None
                              else baseline_name)
    not_comparable = other_llvm(history, candidate, baseline)
    compared = [latency_check(history, candidate, baseline, why, thresholds, multi,
                              remeasure and not not_comparable)]
    compared += change_checks(history, candidate, baseline, thresholds, multi)
    if not_comparable:
        compared = [Check(c.name, c.limit, NOT_CHECKED, "built with another LLVM", [not_comparable])
                    for c in compared]
    checks += compared

    def values_of(metric):
        return lambda series, at: history.value(metric, series, at)

    for dtype, limits in sorted(thresholds.get("accuracy", {}).items()):
        for metric, value in sorted(limits.items()):
            checks.append(_max_check(history, commit, f"{metric} {dtype}", value,
                                     lambda s, d=dtype: s.dtype == d, multi, values_of(metric)))
    bound = thresholds["bound"]
    checks.append(_max_check(
        history, commit, f"probabilistic bound fraction (lambda {bound['lambda']:g})", bound["max_fraction"],
        lambda s: True, multi, lambda series, at: rules.prob_bound_value(history, series, at, thresholds)))
    checks.append(_max_check(history, commit, "rigorous bound fraction", bound["max_fraction"], lambda s: True,
                             multi, values_of("bound_fraction"),
                             lambda series, at: rules.no_rigorous_bound(history, series, at)))
    checks.append(_max_check(history, commit, "non-finite outputs", bound["max_nonfinite"], lambda s: True,
                             multi, values_of("nonfinite")))

    checks.append(divergence_check(history, thresholds, candidate, baseline, multi))
    return candidate, baseline, checks


def divergence_check(history, thresholds, candidate, baseline, multi) -> Check:
    """The report's marks at the candidate (error shifts from default, the probabilistic bound),
    judged against the baseline (:func:`suite.reporting.rules.judge_marks`)."""
    div = thresholds["divergence"]
    name = f"divergence marks vs {baseline.label}" if baseline is not None else "divergence marks"
    limit = f"no new or {div['worse_factor']:g}x worse mark; known: arithmetic or accepted"
    judged = rules.judge_marks(history, thresholds, candidate, baseline)
    marks = judged["marks"]
    notes = [mark_line(m, multi) for m in marks if not m["fails"]]
    notes += [f"fixed: {_where(res.Series(*rules.mark_key(m)[:5]), multi)}: {m['metric']} {m['value']:.4g} at "
              f"{m['label']}, {m['value_now']:.4g} now" for m in judged["fixed"]]
    notes += [f"stale acceptance in {thresholds['source']}: {a['workload']} {a['dtype']} {a['target']} {a['order']} "
              "is not marked here: remove it" for a in judged["stale"]]
    failing = [mark_line(m, multi) for m in marks if m["fails"]]
    counts = {words: sum(m["status"] == status for m in marks)
              for status, words in ((rules.NEW, "new"), (rules.WORSE, "worse"), (rules.KNOWN, "known"),
                                    (rules.FIRST, "at the first commit"))}
    summary = ", ".join(f"{n} {words}" for words, n in counts.items() if n)
    summary += f"{', ' if summary else ''}{len(judged['fixed'])} fixed" if judged["fixed"] else ""
    summary += f"; {len(judged['stale'])} stale acceptance(s)" if judged["stale"] else ""
    if marks or judged["fixed"]:
        status = FAIL if failing else PASS
        return Check(name, limit, status, f"{len(failing)} failing: {summary}" if failing else summary,
                     failing, notes)
    compared = rules.divergence_series(history, thresholds, candidate.hash)
    if not compared:
        status = MISSING if div["required"] else NOT_CHECKED
        return Check(name, limit, status, f"no {'/'.join(div['targets'])} x {'/'.join(div['orders'])} "
                                          "results against default", [], notes)
    return Check(name, limit, PASS, f"no marks; {len(compared)} combinations compared", [], notes)


def mark_line(mark: dict, multi: bool) -> str:
    """One mark as the gate lists it: status, combination, rule and value, cause."""
    where = _where(res.Series(*rules.mark_key(mark)[:5]), multi)
    status = "first commit" if mark["status"] == rules.FIRST else mark["status"]
    if mark["status"] in (rules.KNOWN, rules.WORSE):
        status += f" since {mark['since']['label']}"
    value = f"{mark['metric']} {mark['value']:.4g} vs {mark['threshold']:g}"
    if "baseline_value" in mark:
        value += f" (baseline {mark['baseline_value']:.4g})"
    accepted = f"; accepted: {mark['accepted']}" if mark.get("accepted") else ""
    return f"{status}: {where}: {mark['rule']}: {value}; cause {rules.cause_words(mark)}{accepted}"


WORDS = {0: "READY", 1: "NOT READY (a check failed)", 2: "DATA MISSING (no verdict without complete data)"}


def verdict(checks) -> int:
    statuses = {c.status for c in checks}
    if MISSING in statuses:
        return 2
    if FAIL in statuses:
        return 1
    return 0


def format_table(candidate, checks, thresholds, history, max_details: int = 8) -> str:
    header = ["check", "threshold", "worst at candidate", "result"]
    rows = [[c.name, c.limit, c.worst, c.status] for c in checks]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    widths[2] = min(widths[2], 90)
    lines = [f"release gate for {candidate.label} ({candidate.hash}) from {history.results_dir}",
             f"thresholds: {thresholds['source']}", ""]
    for row in [header] + rows:
        cells = [cell if len(cell) <= w else cell[: w - 3] + "..." for cell, w in zip(row, widths)]
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(cells, widths)).rstrip())
    shown = {}  # details shared by several checks (e.g. another LLVM) are printed once
    for c in checks:
        if c.notes:
            lines += ["", f"info: {c.name} ({len(c.notes)})"] + [f"  {n}" for n in c.notes[:max_details * 4]]
            if len(c.notes) > max_details * 4:
                lines.append(f"  ... and {len(c.notes) - max_details * 4} more")
        if c.details and (c.status in (FAIL, MISSING, NOT_CHECKED) or any(d.startswith("noisy") for d in c.details)):
            if tuple(c.details) in shown:
                lines[shown[tuple(c.details)]] += f", {c.name}"
                continue
            lines.append("")
            shown[tuple(c.details)] = len(lines)
            lines.append(f"{c.status.lower()}: {c.name}")
            lines[-1] += f" ({len(c.details)})" if len(c.details) > 1 else ""
            lines += [f"  {d}" for d in c.details[:max_details]]
            if len(c.details) > max_details:
                lines.append(f"  ... and {len(c.details) - max_details} more")
    status = verdict(checks)
    if any(c.worst == FIRST_COMMIT for c in checks):
        lines += ["", f"{FIRST_COMMIT}: the checks against a baseline are not checked; the absolute checks decide"]
    lines += ["", f"verdict: {WORDS[status]} -> exit {status}"]
    return "\n".join(lines)


def run_gate(results_dir, commit_name: str, thresholds_path=None, tvm_repo=None, baseline=None,
             remeasure: bool = True) -> tuple[str, int]:
    thresholds = rules.load_thresholds(thresholds_path)
    history = res.load(results_dir, tvm_repo)
    candidate, _baseline, checks = evaluate(history, commit_name, thresholds, baseline, remeasure)
    return format_table(candidate, checks, thresholds, history), verdict(checks)
