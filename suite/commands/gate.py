"""``tvm-suite gate``: the release gate's verdict on a commit, from asv results (``report`` gives
it too: :func:`judged`)."""

from __future__ import annotations

import sys

from suite.commands import common_args
from suite.commands.base import say, say_json
from suite.commands.common_args import commit_name, path
from suite.core import timing
from suite.errors import ExitCode

EXIT_CODES = [(ExitCode.OK, "READY"), (ExitCode.NOT_READY, "NOT READY: a check failed (a failed build is one)"),
              (ExitCode.NO_VERDICT, "DATA MISSING, or NO VERDICT: latency suspects not timed again")]


def add_arguments(p) -> None:
    p.add_argument("--results", type=path, required=True, help="asv results directory")
    p.add_argument("--commit", type=commit_name, required=True,
                   help="candidate commit (hash, prefix of 4 or more, or tag)")
    p.add_argument("--thresholds", type=path, help="TOML thresholds (default: reports/thresholds.toml)")
    p.add_argument("--baseline", type=commit_name,
                   help="baseline commit (default: [latency] baseline: the previous commit with results)")
    p.add_argument("--no-remeasure", action="store_true",
                   help="do not time latency suspects again: a suspect no earlier gate timed again is no verdict")
    p.add_argument("--tvm-repo", type=path, help="TVM clone whose history orders the commits")
    common_args.json_output(p, "the verdict and its checks")


def run(args) -> int:
    from suite.jobs import run as main_job
    from suite.reporting import gate

    history, result = judged(args, remeasure=None if args.no_remeasure else timing.remeasure)
    main_job.keep_remeasured(history, result)
    status = result.verdict.exit_code
    say(gate.format_table(result, history), status)  # for people: on stderr with --json
    if args.json:
        say_json(result.as_dict(), status)
    return status


def judged(args, remeasure):
    """(history, gate result) of ``args.results``: the verified history, the verdict on
    ``args.commit`` (the newest commit without one) against ``args.baseline``."""
    from suite.reporting import gate, results, thresholds

    limits = thresholds.load(args.thresholds)
    history = results.load(args.results, args.tvm_repo)
    for line in history.recovered:
        print(f"recovered: {line}", file=sys.stderr)
    commit = getattr(args, "commit", None)  # an empty name is refused by argparse (commit_name), never "newest"
    if commit is None:
        commit = history.commits[-1].hash
    return history, gate.evaluate_named(history, commit, limits, args.baseline, remeasure)
