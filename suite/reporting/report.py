"""``tvm-suite report``: a static HTML report (Jinja2, inline SVG, no network) and report.json.

It renders a :class:`suite.reporting.gate_result.GateResult`, the verdict of the newest commit as the gate
gives it, first; it computes no check and no mark of its own. Then, from the verified history
(:mod:`suite.reporting.results`):

- the newest commit: every workload x dtype x target x order with its latency, GFLOP/s, ULP
  metrics (int8: its exactness against the integer oracle, a kernel not exact marked; a tuned one,
  whether it used the dot-product intrinsic offered, one that did not named), bound
  fraction, divergence from ``default`` and the change from the previous commit;
- history charts over the commits (latency and accuracy), one line per order x target;
- *marks* at every commit (:func:`suite.reporting.rules.find_marks`, the gate's rule), with the
  first divergent commit and the last good one named at the top, beside what the gate's check of
  marks says of those at the candidate (new, worse, known);
- the gate's verdict on each commit against the one before it (:func:`series_verdicts`,
  :func:`pair_verdict`): the regressions of the history are the lines that fail the gate on a
  pair, in the gate's words and with its culprits, by its thresholds; nothing is timed: a suspect no
  gate timed again is said as the gate says it (NO VERDICT), with the gate that decides it;
- the heat map of the gate's pair, coloured by what the gate says of each cell (same-code latency
  noise is grey, never red or green).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from suite import cache, outputs, tracked
from suite.asv_plumbing.config import REPORTS
from suite.errors import ExitCode, UserError
from suite.reporting import results as res
from suite.reporting import code_identity, gate, gate_checks, maps, rules
from suite.reporting.gate_result import Culprit, GateResult, Status, Verdict
from suite.reporting.rules import match
from suite.reporting.thresholds import Thresholds

TEMPLATES = REPORTS / "templates"
#: int8's metrics against its exact integer oracle, shown where a float row shows its ULP (docs/int8.md)
EXACTNESS_METRICS = ("exact_fraction", "max_step_error", "accumulator_mismatches", "accumulator_wrapped")
SUMMARY_METRICS = ("latency", "gflops", "packets", "hvx_efficiency", *EXACTNESS_METRICS, "ulp_mean", "ulp_p99",
                   "ulp_max", "scaled_error", "bound_fraction",
                   "prob_bound_fraction", "accumulation_length", "nonfinite", "differ_fraction",
                   "max_ulp_distance", "error_ratio", "bias_shift", "exceeds_bound", "twin_error_ratio")
CHART_METRICS = (
    ("latency", "latency (ms, log scale)", 1e3),
    ("packets", "packets executed (millions, log scale; Hexagon)", 1e-6),
    ("ulp_mean", "ULP mean", 1.0),
    ("scaled_error", "scaled error (ULP of max|ref|)", 1.0),
    ("prob_bound_fraction", "probabilistic bound fraction", 1.0),
    ("error_ratio", "mean |err| over default's", 1.0),
    ("twin_error_ratio", "IEEE twin: mean |err| over default's", 1.0),
    ("exact_fraction", "int8: exact fraction of the output", 1.0),
    ("accumulator_mismatches", "int8: accumulator elements not bit-exact", 1.0),
)
#: Charts drawn on a log scale: the orders of one workload differ by orders of magnitude (tuned kernels
#: of 8-85 ms beside default ones of 200-900 ms would lie flat on a linear axis).
LOG_SCALE = ("latency", "packets")
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")


class ReportError(UserError):
    pass


# ----------------------------------------------------------------------------- the gate on each pair


@dataclass(frozen=True)
class Blamed:
    """One line the gate gives against a pair of commits that fails it, or that its verdict waits
    on, word for word, with the combination and metric the line is about."""

    check: str  #: the gate's check, by its name
    status: Status  #: FAIL, or UNDECIDED: a latency suspect the gate would time again
    words: str  #: the gate's line
    culprit: Culprit

    def as_dict(self) -> dict:
        return {"check": self.check, "status": self.status.value, "words": self.words, **self.culprit.as_dict()}


@dataclass(frozen=True)
class PairVerdict:
    """What the report says of ``candidate`` against ``baseline``: the gate's own verdict on the
    pair (:func:`suite.reporting.gate.evaluate`), in the gate's words: its verdict, the lines that
    fail it or leave it undecided with their combinations (in the gate's order), the checks that
    miss data and those that had nothing to check."""

    baseline: res.Commit
    candidate: res.Commit
    #: None where the gate gives no verdict at all (a deterministic metric that moved under the
    #: same code: the suite's own bug, which ``line`` says)
    verdict: Verdict | None
    line: str  #: the gate's verdict line (:meth:`GateResult.line`), or its one-line error
    blamed: tuple[Blamed, ...]
    missing: tuple[str, ...] = ()  #: "check: what is missing", of each DATA MISSING check
    not_checked: tuple[str, ...] = ()  #: "check: why", of each NOT CHECKED check

    @property
    def words(self) -> str:
        return self.verdict.words if self.verdict is not None else self.line

    def as_dict(self) -> dict:
        return {"baseline": self.baseline.as_dict(), "candidate": self.candidate.as_dict(),
                "verdict": self.verdict.name if self.verdict is not None else None,
                "exit_status": int(self.verdict.exit_code if self.verdict is not None else ExitCode.NO_VERDICT),
                "words": self.words, "line": self.line, "blamed": [b.as_dict() for b in self.blamed],
                "missing": list(self.missing), "not_checked": list(self.not_checked)}


def said_of(result: GateResult) -> PairVerdict:
    """The report's words of a gate result: the gate's verdict, line and failing or undecided lines
    (each check's first ``failing`` details, with its culprits), nothing of its own."""
    blamed = tuple(Blamed(c.name, Status.UNDECIDED if culprit.undecided else Status.FAIL, words, culprit)
                   for c in result.checks if c.status in (Status.FAIL, Status.UNDECIDED)
                   for words, culprit in zip(c.details[:c.failing], c.culprits))
    return PairVerdict(result.baseline, result.candidate, result.verdict, result.line(), blamed,
                       tuple(f"{c.name}: {c.worst}" for c in result.checks if c.status is Status.MISSING),
                       tuple(f"{c.name}: {c.worst}" for c in result.checks if c.status is Status.NOT_CHECKED))


def pair_verdict(history: res.History, baseline: res.Commit, candidate: res.Commit,
                 thresholds: Thresholds) -> PairVerdict:
    """What the report says of ``candidate`` against ``baseline``: :func:`said_of` the gate's
    :func:`~suite.reporting.gate.evaluate` of the pair, as ``tvm-suite gate --commit CANDIDATE
    --baseline BASELINE --no-remeasure`` gives it. Nothing is timed: a suspect an earlier gate timed
    again and kept (``runs/.gate/``, :func:`suite.reporting.gate.with_remeasured`) is judged as that
    gate judged it; one no gate timed again is said as the gate says it, UNDECIDED (NO VERDICT), and
    ``tvm-suite gate`` decides it. Where the gate gives no verdict (a deterministic metric that moved
    under the same code) the line is its error."""
    return _pair(history, baseline, candidate, thresholds, gate.baseline_of(history, candidate, baseline.hash)[1])


def _pair(history, baseline, candidate, thresholds, note: str) -> PairVerdict:
    try:
        return said_of(gate.evaluate(history, candidate, baseline, thresholds, None, note))
    except code_identity.NotDeterministic as err:
        return PairVerdict(baseline, candidate, None, f"no verdict: {err}", ())


def series_verdicts(history: res.History, thresholds: Thresholds, result: GateResult | None = None
                    ) -> list[PairVerdict]:
    """The gate's verdict on each commit against the one before it with data (``[latency] baseline
    = "previous"``: a commit whose build failed is passed over, as the gate passes it over), oldest
    first. ``result``: a verdict the gate gave on one of these pairs, re-timings included (`run`,
    `check`): that pair is said as it was given, never judged again."""
    pairs = []
    for candidate in history.commits:
        baseline, note = gate.baseline_of(history, candidate, "previous")
        if baseline is None:
            continue
        if result is not None and result.baseline is not None and (result.baseline.hash, result.candidate.hash) == (
                baseline.hash, candidate.hash):
            pairs.append(said_of(result))
        else:
            pairs.append(_pair(history, baseline, candidate, thresholds, note))
    return pairs


def bisect_command(tvm_repo, last_good: str, first_bad: str, series: res.Series, metric: str) -> str:
    """The command that finds the commit between two commits where ``metric`` of ``series`` worsened."""
    workload, dtype, target, order = series.ids
    return (f"tvm-suite bisect --tvm-repo {tvm_repo or 'CLONE'} --range {last_good[:12]}..{first_bad[:12]} "
            f"--workload {workload} --dtype {dtype} --target {target} --order {order} --metric {metric}")


def bisectable(metric: str | None) -> bool:
    """Whether `tvm-suite bisect` searches ``metric``: asv's lower-is-better benchmarks only."""
    if metric is None:
        return False
    found = tracked.get(metric)
    return found.worse is not None and found.in_asv


def pair_facts(history: res.History, pair: PairVerdict) -> dict:
    """A pair as report.json keeps it and the page shows it: :meth:`PairVerdict.as_dict`, each
    failing line with the command that finds its commit (``bisect``), each undecided one with the
    gate that decides it (``decide``), and whose tuning records the tuned order replayed."""
    facts = pair.as_dict()
    base, now = pair.baseline, pair.candidate
    for entry, b in zip(facts["blamed"], pair.blamed):
        s = b.culprit.series
        entry["bisect"] = (bisect_command(history.repo, base.hash, now.hash, s, b.culprit.metric)
                           if b.status is Status.FAIL and bisectable(b.culprit.metric) else None)
        entry["decide"] = (f"tvm-suite gate --results {history.results_dir} --commit {now.short} "
                           f"--baseline {base.short}" if b.status is Status.UNDECIDED else None)
        records = [history.kept(c.hash, s.machine).records.get(s.ids) for c in (base, now)]
        entry["records"] = records if s.order == "tuned" and any(records) else None
    return facts


# ----------------------------------------------------------------------------- summary


def _previous_with_value(history, metric, s, index):
    for commit in reversed(history.commits[:index]):
        value = history.value(metric, s, commit.hash)
        if res.finite(value):
            return commit, value
    return None, None


#: The whole-model metrics (bench_model), in the model table's order.
MODEL_METRICS = tuple(m.name for m in tracked.METRICS if m.module == "bench_model")


def model_series(history: res.History) -> set:
    """The series of the whole-model benchmarks (model x dtype x target x order)."""
    return {s for name in MODEL_METRICS for s in history.values.get(name, {})}


def model_rows(history: res.History) -> list[dict]:
    """The whole-model settings at the newest commit: their metrics, or "not measured" with the
    reason kept (a skip: over the emulation budget, a target not here; a failure)."""
    newest = history.commits[-1].hash
    rows = []
    for s in sorted(model_series(history), key=lambda s: (s.ids, s.machine)):
        values = {m: history.value(m, s, newest) for m in MODEL_METRICS}
        if all(newest not in history.values.get(m, {}).get(s, {}) for m in MODEL_METRICS):
            continue  # not in this commit's grid
        measured = any(res.finite(v) for v in values.values())
        rows.append({**s.as_dict(), "model": s.workload, "values": values, "measured": measured,
                     "reason": None if measured else gate_checks.failure_reason(history, newest, s)})
    return rows


def not_exact(values: dict) -> str | None:
    """What is not exact of an int8 row (``values`` of :data:`EXACTNESS_METRICS`), in words; None
    where it is exact, or no int8 row."""
    mismatches, fraction, steps = (values.get(m) for m in ("accumulator_mismatches", "exact_fraction",
                                                           "max_step_error"))
    found = []
    if res.finite(mismatches) and mismatches > 0:
        found.append(f"accumulator not bit-exact in {mismatches:.0f} elements")
    if res.finite(fraction) and fraction < 1:
        found.append(f"output {fraction:.4%} exact" + (f", up to {steps:.0f} steps off" if res.finite(steps) else ""))
    return "; ".join(found) or None


@dataclass(frozen=True)
class IntrinsicUse:
    """Whether a tuned int8 kernel with a dot product (a conv2d or matmul) used the dot-product
    intrinsic its record's search offered, as the replayed record says (its ``dot_product`` and
    ``tensorized``, :class:`suite.core.dot_product.Tensorized`: the kernel's disassembly, and on Hexagon
    the instructions the emulator executed, when it was tuned). One that did not is a finding the
    report shows (issue 61)."""

    offered: str | None  #: the intrinsic offered (None: none, for ``reason``)
    instruction: str | None  #: its instruction (vpdpbusd, vrmpy)
    count: int | None  #: how many the kernel's disassembly holds
    executed: int | None  #: Hexagon: how many the emulator executed in one call
    used: bool | None  #: None: unknown, the record is not here (removed since the run, or another machine's)
    reason: str  #: why that intrinsic (or none) was offered; where ``used`` is None, why unknown

    def words(self) -> str:
        if self.used is None:
            return f"unknown: {self.reason}"
        if self.used:
            return f"{self.instruction} x{self.count:,}" + (f", {self.executed:,} run" if self.executed else "")
        if self.offered is None:
            return f"none offered ({self.reason})"
        return f"not used: {self.offered} offered, {self.count or 0} {self.instruction} in the kernel"

    def to_json(self) -> dict:
        return {"offered": self.offered, "instruction": self.instruction, "count": self.count,
                "executed": self.executed, "used": self.used, "reason": self.reason, "words": self.words(),
                "finding": self.used is False}


def intrinsic_use(workload_id: str, dtype: str, records_target: str | None) -> IntrinsicUse | None:
    """What the int8 record ``records_target`` replayed for ``workload_id`` says of its dot-product
    intrinsic; None where the row is no tuned int8 kernel with a dot product (a max pool or a mean
    has none to tensorize: its id names no conv2d or matmul)."""
    from suite.core import tuning_records, workloads

    ops = workload_id.split(".")[1] if workload_id.count(".") >= 2 else ""
    if dtype not in workloads.INTEGER_DTYPES or not records_target or not ("conv2d" in ops or "matmul" in ops):
        return None
    path = tuning_records.trace_path(records_target, dtype, workload_id)
    if not path.exists():
        return IntrinsicUse(None, None, None, None, None, f"its record is not here ({path})")
    _, record = tuning_records.read_record(path)
    offered, found = record.get("dot_product") or {}, record.get("tensorized") or {}
    return IntrinsicUse(offered.get("intrinsic"), found.get("instruction") or offered.get("instruction"),
                        found.get("instruction_count"), found.get("executed_count"), bool(found.get("used")),
                        offered.get("reason") or "the record names no dot product")


def summary_rows(history: res.History) -> tuple[list[dict], int]:
    newest = history.commits[-1]
    index = len(history.commits) - 1
    rows, skipped = [], 0
    models = model_series(history)  # in the model table
    for s in history.series():
        if s in models:
            continue
        values = {m: history.value(m, s, newest.hash) for m in SUMMARY_METRICS}
        failed = sorted(tracked.get(m).method for m, per_series in history.values.items()
                        if newest.hash in per_series.get(s, {}) and per_series[s][newest.hash] is None)
        if not failed and not any(res.finite(v) for v in values.values()):
            skipped += 1
            continue
        previous = {}
        for m in SUMMARY_METRICS:
            commit, value = _previous_with_value(history, m, s, index)
            if commit is not None:
                previous[m] = {"commit": commit.hash, "label": commit.label, "value": value}
        change = {}
        for m in ("latency", "packets"):
            if res.finite(values[m]) and m in previous and previous[m]["value"] > 0:
                change[f"{m}_pct"] = 100.0 * (values[m] / previous[m]["value"] - 1)
        for m in ("ulp_mean", "scaled_error", "prob_bound_fraction", "error_ratio"):
            if res.finite(values[m]) and m in previous:
                change[m] = values[m] - previous[m]["value"]
        records = history.kept(newest.hash, s.machine).records.get(s.ids) if s.order == "tuned" else None
        intrinsic = intrinsic_use(s.workload, s.dtype, records)
        rows.append({**s.as_dict(), "values": values, "failed": failed, "previous": previous, "change": change,
                     "no_rigorous_bound": rules.no_rigorous_bound(history, s, newest.hash),
                     "records": records, "not_exact": not_exact(values),
                     "intrinsic": intrinsic.to_json() if intrinsic else None})
    return rows, skipped


# ----------------------------------------------------------------------------- charts


def _nice(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:.3g}"


def _chart(history, metric, title, scale, lines, marked_commits, width=330, height=170):
    """Geometry of one inline SVG line chart: paths, points, axes (all in pixels); a log scale for
    the metrics of LOG_SCALE (positive values only)."""
    left, right, top, bottom = 60, 10, 22, 34
    n = len(history.commits)
    log = metric in LOG_SCALE
    pts = [[(i, v * scale) for i, v in enumerate(values) if res.finite(v) and (v > 0 or not log)]
           for _label, _color, values in lines]
    all_y = [y for series in pts for _i, y in series]
    if not all_y:
        return None
    axis = math.log10 if log else (lambda v: v)
    lo, hi = axis(min(all_y)), axis(max(all_y))
    if hi == lo:
        pad = (abs(hi) * 0.1 or 1.0) if not log else 0.1
        lo, hi = lo - pad, hi + pad
    else:
        pad = (hi - lo) * 0.08
        lo, hi = lo - pad, hi + pad
    if not log and min(all_y) >= 0 and lo < 0:
        lo = 0.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i):
        return left + (plot_w / 2 if n == 1 else plot_w * i / (n - 1))

    def y(v):
        return top + plot_h * (1 - (axis(v) - lo) / (hi - lo))

    drawn = []
    for (label, color, values), series in zip(lines, pts):
        d, previous = [], None
        for i, v in series:
            d.append(f"{'L' if previous == i - 1 else 'M'}{x(i):.1f},{y(v):.1f}")
            previous = i
        if len(series) == 1 or all(c.startswith("M") for c in d):
            # isolated points: a short tick so the path has length
            d = [f"M{x(i) - 3:.1f},{y(v):.1f}L{x(i) + 3:.1f},{y(v):.1f}" for i, v in series]
        drawn.append({
            "label": label, "color": color, "d": "".join(d),
            "points": [{"x": round(x(i), 1), "y": round(y(v), 1),
                        "title": f"{label} @ {history.commits[i].label}: {_nice(v)}"} for i, v in series],
        })
    # Labels whole (a tag such as v0.27.0.post1): as many as fit without overlapping, the last always.
    widest = max(len(c.label) for c in history.commits) * 6 + 8
    step = max(1, math.ceil(n / max(1, plot_w // widest + 1)))
    xticks = [{"x": round(x(i), 1), "label": history.commits[i].label}
              for i in range(n) if i % step == 0 or i == n - 1]
    if len(xticks) >= 2 and xticks[-1]["x"] - xticks[-2]["x"] < widest and n - 1 != 0:
        xticks.pop(-2)
    for k, tick in enumerate(xticks):
        tick["anchor"] = "middle" if n == 1 else ("start" if k == 0 else ("end" if k == len(xticks) - 1 else "middle"))
    ticks = [lo, (lo + hi) / 2, hi]
    yticks = [{"y": round(y(10 ** t if log else t), 1), "label": _nice(10 ** t if log else t)} for t in ticks]
    marks = [{"x": round(x(history.index(h)), 1), "label": history.commits[history.index(h)].label}
             for h in marked_commits]
    return {"title": title, "metric": metric, "width": width, "height": height, "left": left,
            "right": width - right, "top": top, "bottom": height - bottom, "lines": drawn,
            "xticks": xticks, "yticks": yticks, "marks": marks}


def charts(history: res.History, marks: list[dict]) -> list[dict]:
    """One group per workload x dtype, one chart per metric, one line per order x target."""
    groups = {}
    for s in history.series():
        groups.setdefault((s.workload, s.dtype), []).append(s)
    multi = len(history.machines) > 1
    out = []
    for (workload, dtype), members in sorted(groups.items(), key=lambda g: (not g[0][0].startswith("seed"), g[0])):
        marked = sorted({m["commit"] for m in marks if m["workload"] == workload and m["dtype"] == dtype},
                        key=history.index)
        group_charts = []
        for metric, title, scale in CHART_METRICS:
            lines = []
            for k, s in enumerate(members):
                label = f"{s.order} / {s.target}" + (f" @{s.machine}" if multi else "")
                values = [history.value(metric, s, c.hash) for c in history.commits]
                if any(res.finite(v) for v in values):
                    lines.append((label, PALETTE[k % len(PALETTE)], values))
            chart = _chart(history, metric, title, scale, lines, marked) if lines else None
            if chart:
                group_charts.append(chart)
        if group_charts:
            out.append({"workload": workload, "dtype": dtype, "marked": bool(marked), "charts": group_charts,
                        "open": bool(marked) or workload.startswith("seed")})
    return out


# ----------------------------------------------------------------------------- facts


def compute(history: res.History, result: GateResult) -> dict:
    """What the report shows (and report.json keeps): the gate's ``result`` on the newest commit,
    then the history, its pairs each as the gate judges it (:func:`series_verdicts`)."""
    thresholds = result.thresholds
    rows, skipped = summary_rows(history)
    newest = history.commits[-1]
    previous = history.commits[-2] if len(history.commits) > 1 else None
    marks = rules.find_marks(history, thresholds)
    pairs = [pair_facts(history, p) for p in series_verdicts(history, thresholds, result)]
    cells = judged_cells(history, result)
    return {
        "gate": _gate_section(result),
        "failures": _failures(history),
        "heatmap": heatmap(history, result, cells),
        "results_dir": history.results_dir.name,
        "ordering": history.ordering,
        "machines": list(history.machines),
        "targets": sorted({s.target for s in history.series()}),
        "commits": [c.as_dict() for c in history.commits],
        "newest": newest.as_dict(),
        "previous": previous.as_dict() if previous else None,
        "summary": _summary_classes(rows, cells),
        "summary_columns": [m for m in SUMMARY_METRICS if any(res.finite(r["values"].get(m)) for r in rows)]
                           + (["intrinsic"] if any(r["intrinsic"] for r in rows) else []),
        "summary_skipped": skipped,
        "models": model_rows(history),
        "divergence": _divergence_section(history, thresholds, result, marks),
        "pairs": pairs,
        #: how many pairs of each verdict, by its name as the gate says it (READY, NOT READY, NO VERDICT ...)
        "pair_counts": {v.words.split(" (")[0]: sum(p["verdict"] == v.name for p in pairs) for v in Verdict},
        #: every line that fails the gate on a pair of the series, with its pair
        "regressions": [{**b, "baseline": p["baseline"], "candidate": p["candidate"]} for p in pairs
                        for b in p["blamed"] if b["status"] == Status.FAIL.value],
        "code_changes": code_changes(history),
        # A published page names no path of this machine: the thresholds by their file's name.
        "thresholds": {**thresholds.as_dict(), "source": Path(thresholds.source).name},
    }


def code_changes(history: res.History) -> list[dict]:
    """Per commit, the kernels whose code changed since the previous commit with code identities
    (suite.reporting.code_identity): where a latency step can be news at all."""
    multi = len(history.machines) > 1
    return [{"commit": c.commit.as_dict(), "baseline": c.baseline.as_dict() if c.baseline else None,
             "changed": [rules.where(s, multi) for s in c.changed], "same": c.same, "unknown": c.unknown,
             "not_comparable": c.not_comparable}
            for c in code_identity.per_commit(history)]


def _gate_section(result: GateResult) -> dict:
    """The release gate's verdict, as `tvm-suite gate` gives it (the re-measurements a gate or run
    made included)."""
    verdict = result.verdict
    return {
        "verdict": int(verdict.exit_code), "words": verdict.words, "name": verdict.name,
        "line": result.line(), "candidate": result.candidate.as_dict(),
        "baseline": result.baseline.as_dict() if result.baseline else None,
        "first_commit": result.first_commit,
        "notes": list(result.notes),
        #: how many checks of each status, in the gate's order of statuses: none hidden behind "passed"
        "counts": {status.value: n for status in Status
                   if (n := sum(c.status is status for c in result.checks))},
        "checks": [{**c.as_dict(), "failing": c.failing,
                    "noisy": any(d.startswith(("noisy", "records", "same code")) for d in c.details)}
                   for c in result.checks],
    }


def _failures(history: res.History) -> list[dict]:
    """Per commit, newest first, the combinations whose build or run failed, with the reason kept."""
    found = []
    for c in reversed(history.commits):
        failed = gate_checks.failed_combinations(history, c.hash)
        if failed:
            found.append({"commit": c.as_dict(), "combinations": [
                {**series.as_dict(), "benchmarks": methods,
                 "reason": gate_checks.failure_reason(history, c.hash, series)}
                for series, methods in failed.items()]})
    return found


def _divergence_section(history: res.History, thresholds: Thresholds, result: GateResult,
                        marks: list[rules.Mark]) -> dict:
    """The divergence marks of every commit, the first divergent and last good commit, and the
    marks at the newest commit as the gate judged them."""
    marked = [c.hash for c in history.commits if any(m.commit.hash == c.hash for m in marks)]
    checked = rules.checked_commits(history, thresholds)

    marked_at = {(m.commit.hash, m.key) for m in marks}

    def shown(m: rules.Mark, entry: dict, first_only: bool) -> dict:
        """A mark as the report shows it, with how to find the commit that brought it: between the
        last commit that measured its combination unmarked and the first of its run of marks. None
        where it has been marked since the combination was first measured (nothing to bisect), and,
        with ``first_only``, at every mark of a run but its first (the same range again)."""
        last_good, since = rules.marked_run(history, m.key, m.commit, lambda c: (c.hash, m.key) in marked_at)
        if last_good is not None and (since.hash == m.commit.hash or not first_only):
            entry["bisect"] = bisect_command(history.repo, last_good.hash, since.hash, m.series, m.metric)
        return entry
    first_divergent = history.commits[history.index(marked[0])] if marked else None
    good = [h for h in checked if not marked or history.index(h) < history.index(marked[0])]
    last_good = history.commits[history.index(good[-1])] if good else None
    targets = sorted({s.target for s in history.series()})
    judged = result.marks
    check = next(c for c in result.checks if c.name.startswith("divergence marks"))
    return {
        #: the gate's divergence check at its candidate: what the banner of marks says beside it
        "check": {"name": check.name, "limit": check.limit, "status": check.status.value, "worst": check.worst},
        "first_divergent": first_divergent.as_dict() if first_divergent else None,
        "last_good": last_good.as_dict() if last_good else None,
        "marked_commits": [history.commits[history.index(h)].as_dict() for h in marked],
        "checked_commits": checked,
        "rule_targets_present": [t for t in targets if match(t, thresholds.divergence.targets)],
        "rule_comparisons": sum(len(rules.divergence_series(history, thresholds, c.hash)) for c in history.commits),
        "marks": [shown(m, m.as_dict(), first_only=True) for m in marks],
        "judged": {
            "baseline": result.baseline.as_dict() if result.baseline else None,
            "groups": {status.value: [shown(m.mark, m.as_dict(), first_only=False) for m in judged.marks
                                      if m.status is status]
                       for status in rules.MarkStatus},
            "fixed": [{**m.as_dict(), "value_now": now} for m, now in judged.fixed],
            "stale": [vars(a) for a in judged.stale],
        },
    }


#: Speed (latency where it runs natively, packets executed on Hexagon), then accuracy.
HEAT_METRICS = (("latency", "latency"), ("packets", "packets"), ("ulp_mean", "ULP mean"))
#: How a heat-map cell (and a change in the summary) is coloured: by what the gate says of it, never
#: by its ratio alone. Red: a line that fails the gate; amber: a suspect the gate would time again;
#: green: a deterministic metric (packets, ULP mean: exact, no noise) that went down; grey: the
#: latency of a kernel whose code is the same at both commits (noise by construction); white: the rest
#: (a latency the gate passed, or a speed-up, which it does not judge: both within its noise).
FAIL, UNDECIDED, BETTER, SAME_CODE = "fail", "undecided", "better", "same code"


def judged_cells(history: res.History, result: GateResult) -> dict[tuple[res.Series, str], str]:
    """What the gate's ``result`` says of each (combination, metric) of :data:`HEAT_METRICS` and
    :data:`EXACTNESS_METRICS` at its pair: FAIL or UNDECIDED where one of its lines blames it (an
    int8 accumulator not bit-exact at a first commit too), SAME_CODE for the latency of a kernel
    whose code is the same at both commits, BETTER for a deterministic metric of the heat map that
    went down; those it says nothing of are left out. A first commit has no heat map: only int8's
    cells are said there."""
    heat = {metric for metric, _ in HEAT_METRICS}
    cells = {}
    if result.baseline is not None:
        _compared_cells(history, result, heat, cells)
    shown = {*EXACTNESS_METRICS, *(heat if result.baseline is not None else ())}
    for blamed in said_of(result).blamed:
        if blamed.culprit.metric in shown:
            cells[(blamed.culprit.series, blamed.culprit.metric)] = (
                UNDECIDED if blamed.status is Status.UNDECIDED else FAIL)
    return cells


def _compared_cells(history: res.History, result: GateResult, heat: set, cells: dict) -> None:
    """The cells a gate's pair judges by comparing its two commits: same-code latency, and the heat
    map's deterministic metrics that went down."""
    before, after = result.baseline.hash, result.candidate.hash
    for series in history.series():
        if code_identity.same_code(history, series, before, after):
            cells[(series, "latency")] = SAME_CODE
        for metric in heat - {"latency"}:
            a, b = history.value(metric, series, before), history.value(metric, series, after)
            if res.finite(a) and res.finite(b) and b < a:
                cells[(series, metric)] = BETTER


def heatmap(history: res.History, result: GateResult, cells: dict) -> dict | None:
    """The gate's pair (its candidate against its baseline): workloads x (dtype, target, order), the
    ratios of latency (or packets) and of ULP mean side by side, each with what the gate says of it
    (``cells``: :func:`judged_cells`); None without a baseline."""
    if result.baseline is None:
        return None
    before, after = result.baseline.hash, result.candidate.hash
    series = history.series()
    columns = sorted({(s.dtype, s.target, s.order, s.machine) for s in series})
    rows = []
    for workload in sorted({s.workload for s in series}, key=lambda w: (not w.startswith("seed"), w)):
        row = []
        for dtype, target, order, machine in columns:
            one = res.Series(workload, dtype, target, order, machine)
            cell = {}
            for metric, _title in HEAT_METRICS:
                a, b = history.value(metric, one, before), history.value(metric, one, after)
                if res.finite(a) and res.finite(b) and a > 0:
                    cell[metric] = {"ratio": b / a, "judged": cells.get((one, metric), "")}
            row.append(cell)
        if any(row):
            rows.append({"workload": workload, "cells": row})
    return {"columns": [{"dtype": d, "target": t, "order": o, "machine": m} for d, t, o, m in columns],
            "metrics": [{"name": n, "title": t} for n, t in HEAT_METRICS], "rows": rows,
            "before": result.baseline.as_dict(), "after": result.candidate.as_dict()}


def heat_color(cell) -> str:
    """Background of a heat-map cell (``{"ratio", "judged"}``): by what the gate says of it
    (:data:`FAIL` ...), deeper the further the ratio is from 1 (full at a factor of 2)."""
    if not cell:
        return "#f6f8fa"
    judged, ratio = cell["judged"], cell["ratio"]
    if judged == SAME_CODE:
        return "#eaeef2"
    if judged == UNDECIDED:
        return "#fff1c2"
    if judged not in (FAIL, BETTER) or not res.finite(ratio) or ratio <= 0:
        return "#ffffff"
    strength = 0.25 + 0.75 * min(1.0, abs(math.log2(ratio)))
    base = (207, 34, 46) if judged == FAIL else (26, 127, 55)
    return "#" + "".join(f"{round(255 - (255 - c) * strength):02x}" for c in base)


def _summary_classes(rows: list[dict], cells: dict) -> list[dict]:
    """Each summary row with what the gate says of its latency, packets and ULP mean (``judged``:
    :func:`judged_cells`), which colours its changes; never its ratio alone."""
    for row in rows:
        series = res.Series(row["workload"], row["dtype"], row["target"], row["order"], row["machine"])
        row["judged"] = {metric: cells.get((series, metric), "")
                         for metric in (*(m for m, _ in HEAT_METRICS), *EXACTNESS_METRICS)}
    return rows


def _json_safe(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


# ----------------------------------------------------------------------------- rendering


def _fmt(value, spec=".4g", missing="–"):
    if value is None:
        return missing
    if isinstance(value, float) and not math.isfinite(value):
        return missing
    return format(value, spec)


def mark_figures(history: res.History, marks: list[dict]) -> dict:
    """Difference maps of each marked combination, keyed like the marks (commit + combination)."""
    figures = {}
    for m in marks:
        ids = (m["workload"], m["dtype"], m["target"], m["order"])
        key = f"{m['commit']}/{'/'.join(ids)}"
        if key not in figures:
            figures[key] = maps.figure(history.kept(m["commit"], m["machine"]).maps.get(ids))
    return figures


def render_template(name: str, **context) -> str:
    """The page of ``reports/templates/<name>`` (autoescaped: every value is data, never markup)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = _fmt
    env.filters["heat"] = heat_color
    try:
        return env.get_template(name).render(**context)
    except (TemplateError, TypeError, ValueError) as err:
        raise ReportError(f"cannot render {TEMPLATES / name}: {err}") from None


def render_html(facts: dict, history: res.History, marks: list[dict]) -> str:
    """The report's page. It is made to be published, so it names the TVM clone and the results by
    their directories' names, never by this machine's paths (report.json keeps them whole)."""
    html = render_template("report.html.j2", facts=facts, charts=charts(history, marks),
                           figures=mark_figures(history, marks), multi_machine=len(history.machines) > 1)
    for path in sorted({str(p) for p in (history.repo, history.results_dir) if p}, key=len, reverse=True):
        html = html.replace(path, Path(path).name)
    return html


REPORT_FILES = ("index.html", "report.json")
#: Who wrote a report.json (its mark: the report replaces only its own files).
WRITER = "tvm-suite report"


def check_out(out: Path, run_dir: Path, results_dir: Path | None = None) -> None:
    """The report's files may go into ``out`` (:func:`suite.outputs.check_dir`): a directory (or
    none yet) apart from the results it reports on (``results_dir``, by default ``run_dir/results``),
    their side data and any other history, links resolved, where an index.html or report.json, if
    any, is an earlier report's (its report.json says so). Other files there are left alone."""
    outputs.check_dir(out, "--out", WRITER, "report.json", ("index.html",),
                      reading=(results_dir if results_dir is not None else Path(run_dir) / "results",))


def write_report(out, html: str, facts: dict) -> None:
    """Write the report's two files into ``out``, each atomically (a temporary file renamed over
    the old one); nothing else in ``out`` is touched."""
    out = Path(out)
    cache.ensure_dir(out, "--out")
    text = json.dumps(_json_safe(outputs.marked(facts, WRITER)), indent=1, allow_nan=False) + "\n"
    cache.write_file(out / "report.json", lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    cache.write_file(out / "index.html", lambda tmp: Path(tmp).write_text(html, encoding="utf-8"))
    for name in REPORT_FILES:
        os.chmod(out / name, 0o644)


def make_report(history: res.History, result: GateResult, out) -> dict:
    """Write the report of ``history`` with the gate's ``result`` into ``out``; its facts."""
    check_out(Path(out), history.run_dir, history.results_dir)
    facts = compute(history, result)
    html = render_html(facts, history, facts["divergence"]["marks"])
    write_report(out, html, facts)
    return facts
