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
- the gate's verdict on each commit against the one before it (:mod:`suite.reporting.pair_verdicts`):
  the regressions of the history are the lines that fail the gate on a
  pair, in the gate's words and with its culprits, by its thresholds; nothing is timed: a suspect no
  gate timed again is said as the gate says it (NO VERDICT), with the gate that decides it;
- the heat map of the gate's pair, coloured by what the gate says of each cell (same-code latency
  noise is grey, never red or green).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from suite import cache, outputs
from suite.asv_plumbing.config import REPORTS
from suite.errors import UserError
from suite.reporting import results as res
from suite.reporting import code_identity, gate_checks, maps, rules
from suite.reporting.gate_result import GateResult, Status, Verdict
from suite.reporting.pair_verdicts import bisect_command, pair_facts, series_verdicts
from suite.reporting.report_figures import charts, heat_color, heatmap, judged_cells, summary_classes
from suite.reporting.report_summary import SUMMARY_METRICS, model_rows, summary_rows
from suite.reporting.rules import match
from suite.reporting.thresholds import Thresholds

TEMPLATES = REPORTS / "templates"


class ReportError(UserError):
    pass


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
        "summary": summary_classes(rows, cells),
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
