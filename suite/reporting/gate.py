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


def _max_check(history, commit, metric, limit, name, series_filter, multi) -> Check:
    worst, over, seen = None, [], 0
    for series in history.series():
        if not series_filter(series):
            continue
        value = history.value(metric, series, commit)
        if not res.finite(value):
            continue
        seen += 1
        if worst is None or value > worst[0]:
            worst = (value, series)
        if value > limit:
            over.append(f"{_where(series, multi)}: {value:.4g}")
    if not seen:
        anywhere = any(res.finite(v) for s, per_commit in history.values.get(metric, {}).items()
                       if series_filter(s) for v in per_commit.values())
        if not anywhere:  # e.g. a dtype these results never ran
            return Check(name, f"<= {limit:g}", NOT_CHECKED, "no values at any commit")
        return Check(name, f"<= {limit:g}", MISSING, "no values at this commit")
    return Check(name, f"<= {limit:g}", FAIL if over else PASS,
                 f"{worst[0]:.4g} ({_where(worst[1], multi)})", over)


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

    for dtype, limits in sorted(thresholds.get("accuracy", {}).items()):
        for metric, value in sorted(limits.items()):
            checks.append(_max_check(history, commit, metric, value, f"{metric} {dtype}",
                                     lambda s, d=dtype: s.dtype == d, multi))
    bound = thresholds["bound"]
    checks.append(_max_check(history, commit, "bound_fraction", bound["max_fraction"], "bound fraction",
                             lambda s: True, multi))
    checks.append(_max_check(history, commit, "nonfinite", bound["max_nonfinite"], "non-finite outputs",
                             lambda s: True, multi))

    # Divergence of the tuned fp16 conv2d on Hexagon (the report's marks, at this commit).
    div = thresholds["divergence"]
    marks = [m for m in rules.find_marks(history, thresholds) if m["commit"] == commit]
    compared = rules.divergence_series(history, thresholds, commit)
    limit = f"<= {div['max_ulp_distance']:g} ULP from default; bound <= {bound['max_fraction']:g}"
    details = [f"{m['workload']} {m['dtype']} {m['target']} {m['order']}: {m['metric']} {m['value']:.4g} "
               f"> {m['threshold']:g}" for m in marks]
    if marks:
        checks.append(Check("tuned fp16 conv2d divergence", limit, FAIL, f"{len(marks)} marked", details))
    elif not compared:
        status = MISSING if div["required"] else NOT_CHECKED
        checks.append(Check("tuned fp16 conv2d divergence", limit, status,
                            f"no {'/'.join(div['targets'])} x {'/'.join(div['orders'])} results"))
    else:
        checks.append(Check("tuned fp16 conv2d divergence", limit, PASS, f"{len(compared)} combinations compared"))
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
