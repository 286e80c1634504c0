"""The report's layout on in-memory histories (tests/histories.py): what a page shows and leaves
out, without a browser (test_report.py opens real reports in headless Chromium at 390 and 1400 px)."""

import pytest

from histories import A, B, C, SAMPLES, SEED, TUNED, Builder
from suite.reporting import gate, report, report_figures
from suite.reporting import thresholds as limits


def three_commits() -> Builder:
    b = Builder(commits=(A, B, C), tags={C: ("v0.27.0.post1",)})
    for commit in (A, B, C):
        b.side.setdefault(commit, {"timings": {}, "records": {}, "failures": {}, "maps": {}, "build": None})
        b.accurate(SEED, commit).timing(SEED, commit)
        b.accurate(TUNED, commit).timing(TUNED, commit, [s / 20 for s in SAMPLES])
    return b


def facts_and_html(b: Builder):
    history = b.history()
    result = gate.evaluate_named(history, history.commits[-1].hash, limits.load())
    facts = report.compute(history, result)
    return facts, report.render_html(facts, history, facts["divergence"]["marks"])


def test_commit_labels_are_whole():
    history = three_commits().history()
    chart = next(c for group in report_figures.charts(history, []) for c in group["charts"] if c["metric"] == "latency")
    assert chart["xticks"][-1]["label"] == "v0.27.0.post1"


def test_latency_is_drawn_on_a_log_scale():
    """tuned (0.5 ms) beside default (10 ms): a factor of 20, a third of the plot each way, not a
    line flat on the floor."""
    history = three_commits().history()
    chart = next(c for group in report_figures.charts(history, []) for c in group["charts"] if c["metric"] == "latency")
    default, tuned = (next(line for line in chart["lines"] if line["label"].startswith(order)) for order in ("default",
                                                                                                              "tuned"))
    gap = tuned["points"][0]["y"] - default["points"][0]["y"]
    plot = chart["bottom"] - chart["top"]
    assert 0.5 * plot < gap < 0.95 * plot, (gap, plot)  # linear: 95% of the plot apart, tuned on the axis
    labels = [t["label"] for t in chart["yticks"]]
    assert float(labels[1]) ** 2 == pytest.approx(float(labels[0]) * float(labels[2]), rel=1e-2)  # geometric


def test_columns_nobody_has_are_left_out_and_no_local_path_is_shown():
    facts, html = facts_and_html(three_commits())
    assert "packets" not in facts["summary_columns"] and "twin_error_ratio" not in facts["summary_columns"]
    assert "latency" in facts["summary_columns"] and "ulp_mean" in facts["summary_columns"]
    header = html.split('id="summary-table"')[1].split("</thead>")[0]
    assert "packets" not in header and "IEEE twin" not in header and "latency ms" in header
    assert "/nonexistent" not in html and facts["thresholds"]["source"] == "thresholds.toml"
