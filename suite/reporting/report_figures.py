"""The report's figures: the history charts (inline SVG, one line per order x target, the commits
with marks marked) and the heat map of the gate's pair, each cell coloured by what the gate says of
it (:func:`judged_cells`, :func:`heat_color`), never by its ratio alone."""

from __future__ import annotations

import math

from suite.reporting import results as res
from suite.reporting import code_identity
from suite.reporting.gate_result import GateResult, Status
from suite.reporting.pair_verdicts import said_of
from suite.reporting.report_summary import EXACTNESS_METRICS

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


def summary_classes(rows: list[dict], cells: dict) -> list[dict]:
    """Each summary row with what the gate says of its latency, packets and ULP mean (``judged``:
    :func:`judged_cells`), which colours its changes; never its ratio alone."""
    for row in rows:
        series = res.Series(row["workload"], row["dtype"], row["target"], row["order"], row["machine"])
        row["judged"] = {metric: cells.get((series, metric), "")
                         for metric in (*(m for m, _ in HEAT_METRICS), *EXACTNESS_METRICS)}
    return rows
