"""Release readiness: the thresholds file and the verdict of ``tvm-suite gate``.

Exit status: 0 ready, 1 not ready (a check failed), 2 data missing or unreadable (a check had no
data, a benchmark failed at the candidate commit, a file could not be read). Missing data wins
over a failure: the verdict needs complete data, so the gate is never "ready" by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from suite import tracked
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
    details: list[str] = field(default_factory=list)


def _where(series: res.Series, multi_machine: bool) -> str:
    text = f"{series.workload} {series.dtype} {series.target} {series.order}"
    return f"{text} @{series.machine}" if multi_machine else text


def _failed_benchmarks(history: res.History, commit: str) -> list[str]:
    failed = []
    for metric, per_series in history.values.items():
        for series, per_commit in per_series.items():
            if commit in per_commit and per_commit[commit] is None:
                failed.append(f"{tracked.get(metric).method} {_where(series, False)}")
    return sorted(failed)


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


def evaluate(history: res.History, commit_name: str, thresholds: dict, baseline_name: str | None = None):
    """(candidate commit, baseline commit or None, checks) for release readiness."""
    candidate = history.resolve(commit_name)
    commit = candidate.hash
    multi = len(history.machines) > 1
    checks = []

    failed = _failed_benchmarks(history, commit)
    checks.append(Check("benchmarks completed", "no failed (null) results",
                        MISSING if failed else PASS, f"{len(failed)} failed" if failed else "all ran",
                        failed))

    # Latency against the baseline.
    latency = thresholds["latency"]
    baseline_name = baseline_name or latency["baseline"]
    baseline = None
    index = history.index(commit)
    if baseline_name == "previous":
        earlier = [c for c in history.commits[:index]
                   if any(res.finite(v.get(c.hash)) for v in history.values.get("latency", {}).values())]
        baseline = earlier[-1] if earlier else None
        why = f"no commit before {candidate.label} with latency results"
    else:
        baseline = history.resolve(baseline_name)
        why = ""
    limit = f"<= {latency['max_ratio']:g}x baseline"
    if baseline is None:
        checks.append(Check("latency vs baseline", limit, MISSING, why))
    elif baseline.hash == commit:
        checks.append(Check("latency vs baseline", limit, MISSING, "baseline is the candidate itself"))
    else:
        worst, over, seen = None, [], 0
        for series in history.series():
            now = history.value("latency", series, commit)
            before = history.value("latency", series, baseline.hash)
            if not (res.finite(now) and res.finite(before)) or before <= 0:
                continue
            seen += 1
            ratio = now / before
            if worst is None or ratio > worst[0]:
                worst = (ratio, series)
            if ratio > latency["max_ratio"]:
                over.append(f"{_where(series, multi)}: {before * 1e3:.3f} -> {now * 1e3:.3f} ms ({ratio:.2f}x)")
        if not seen:
            checks.append(Check("latency vs baseline", limit, MISSING,
                                f"no combination measured at both {candidate.label} and {baseline.label}"))
        else:
            checks.append(Check(f"latency vs {baseline.label}", limit, FAIL if over else PASS,
                                f"{worst[0]:.2f}x ({_where(worst[1], multi)})", over))

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

    # The report's marks at this commit: error shifts from default, and the probabilistic bound.
    div = thresholds["divergence"]
    marks = [m for m in rules.find_marks(history, thresholds) if m["commit"] == commit]
    compared = rules.divergence_series(history, thresholds, commit)
    name = "divergence marks"
    limit = (f"err ratio <= {div['max_error_ratio']:g}, |bias shift| <= {div['max_bias_shift']:g} "
             f"(z > {div['min_z']:g}); prob. bound <= {bound['max_fraction']:g}")
    details = [f"{m['workload']} {m['dtype']} {m['target']} {m['order']}: {m['rule']}: {m['metric']} "
               f"{m['value']:.4g} vs {m['threshold']:g}" for m in marks]
    if marks:
        checks.append(Check(name, limit, FAIL, f"{len(marks)} marked", details))
    elif not compared:
        status = MISSING if div["required"] else NOT_CHECKED
        checks.append(Check(name, limit, status, f"no {'/'.join(div['targets'])} x {'/'.join(div['orders'])} "
                                                 "results against default"))
    else:
        checks.append(Check(name, limit, PASS, f"{len(compared)} combinations compared"))
    return candidate, baseline, checks


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
    for c in checks:
        if c.status in (FAIL, MISSING) and c.details:
            lines.append("")
            lines.append(f"{c.status.lower()}: {c.name} ({len(c.details)})")
            lines += [f"  {d}" for d in c.details[:max_details]]
            if len(c.details) > max_details:
                lines.append(f"  ... and {len(c.details) - max_details} more")
    status = verdict(checks)
    words = {0: "READY", 1: "NOT READY (a check failed)", 2: "DATA MISSING (no verdict without complete data)"}
    lines += ["", f"verdict: {words[status]} -> exit {status}"]
    return "\n".join(lines)


def run_gate(results_dir, commit_name: str, thresholds_path=None, tvm_repo=None, baseline=None) -> tuple[str, int]:
    thresholds = rules.load_thresholds(thresholds_path)
    history = res.load(results_dir, tvm_repo)
    candidate, _baseline, checks = evaluate(history, commit_name, thresholds, baseline)
    return format_table(candidate, checks, thresholds, history), verdict(checks)
