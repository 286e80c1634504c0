"""``tvm-suite report``: the HTML report (and report.json) of asv results over commits, the gate's
verdict on the newest first."""

from __future__ import annotations

from suite import outputs
from suite.commands.base import say
from suite.commands.common_args import commit_name, path
from suite.commands.gate import judged
from suite.errors import ExitCode

EXIT_CODES = [(ExitCode.OK, "READY (the report written; its last line gives the verdict)"),
              (ExitCode.NOT_READY, "NOT READY: a check failed (the report written)"),
              (ExitCode.NO_VERDICT, "DATA MISSING, or NO VERDICT: latency suspects not timed again (the report "
              "written)")]


def add_arguments(p) -> None:
    p.add_argument("--results", type=path, required=True, help="asv results directory (e.g. .asv/results)")
    p.add_argument("--out", type=path, required=True, help="directory to write index.html and report.json to "
                                                           "(not inside --results)")
    p.add_argument("--tvm-repo", type=path, help="TVM clone whose history orders the commits (default: the one the "
                                                 "run named, else the dates asv stored)")
    p.add_argument("--thresholds", type=path, help="TOML thresholds (default: reports/thresholds.toml)")
    p.add_argument("--baseline", type=commit_name,
                   help="baseline of the verdict on the newest commit (default: [latency] baseline)")


def run(args) -> int:
    from suite.reporting import report

    outputs.check_apart(args.out, "--out", reading=(args.results,))  # before any work; its files before writing
    history, result = judged(args, remeasure=None)
    facts = report.make_report(history, result, args.out)
    d = facts["divergence"]
    first = d["first_divergent"]
    check = d["check"]  # the gate's check of the marks at its candidate, beside the history of marks
    pairs = ", ".join(f"{n} {name}" for name, n in facts["pair_counts"].items() if n)
    say(f"report: {args.out / 'index.html'} and report.json ({len(facts['commits'])} commits, "
        f"newest {facts['newest']['label']})\n"
        f"first divergent commit: {first['label'] if first else 'none'}; last good: "
        f"{d['last_good']['label'] if d['last_good'] else 'none'}; {len(d['marks'])} marks; at "
        f"{result.candidate.label}: {check['name']} {check['status']} ({check['worst']})\n"
        f"the gate on {len(facts['pairs'])} {'pair' if len(facts['pairs']) == 1 else 'pairs'} of commits: "
        f"{pairs or 'none'}; "
        f"{len(facts['regressions'])} regressions\n{result.line()}", result.verdict.exit_code)
    return result.verdict.exit_code  # the verdict its last line gives
