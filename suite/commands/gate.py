"""``tvm-suite gate``: the release gate's verdict on a commit, from asv results (``report`` gives
it too: :func:`judged`)."""

from __future__ import annotations

import sys

from suite.commands import common_args
from suite.commands.base import say, say_json
from suite.commands.common_args import commit_name, path
from suite.core import retimings, timing
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
    from suite.reporting import gate_result

    history, result = judged(args, remeasure=None if args.no_remeasure else timing.remeasure)
    if not args.no_remeasure:  # --no-remeasure times nothing again: it writes nothing
        keep(history, result)
    status = result.verdict.exit_code
    say(gate_result.format_table(result, history), status)  # for people: on stderr with --json
    if args.json:
        say_json(result.as_dict(), status)
    return status


def keep(history, result) -> None:
    """Keep what the gate found by timing suspects again, merged into what earlier gates kept
    (``runs/.gate/``: suite.core.retimings.keep_remeasured), so that the report and later gates give
    the same verdict on the same samples. A kept history (suite.history.keep.is_kept) is only read:
    there, what was timed again is printed, and one line says it was not kept. Where the directory
    cannot be written, one line says so. Either way on stderr, and the verdict stands: it does not
    depend on what is kept."""
    from suite.history import keep as kept_histories

    found = result.newly_remeasured()
    if not found or result.baseline is None:
        return
    run_dir = history.run_dir
    if kept_histories.is_kept(run_dir):
        multi = len(history.machines) > 1
        count = f"{len(found)} {'kernel' if len(found) == 1 else 'kernels'} timed again"
        print(f"tvm-suite: note: {count} not kept: {run_dir} is a kept history, which a gate only reads (the gate "
              "of the run directory the commits were measured in keeps its re-timings); what they gave:",
              file=sys.stderr)
        for suspect in result.retimed():
            print(f"  {suspect.line(multi)}", file=sys.stderr)
        return
    try:
        retimings.keep_remeasured(run_dir, result.baseline.hash, result.candidate.hash, found)
    except OSError as err:
        print(f"tvm-suite: note: the re-measurements were not kept ({err.strerror or err}: "
              f"{err.filename or run_dir}); the verdict stands", file=sys.stderr)


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
