"""``tvm-suite check CANDIDATE``: release readiness of a TVM commit against the release before
it (the library: :mod:`suite.jobs.check`)."""

from __future__ import annotations

from suite.commands import common_args
from suite.commands.base import VERDICT_EXITS, say, say_json
from suite.commands.common_args import commit_name, path
from suite.core.combo import QUICK_ORDERS, Grid

EXIT_CODES = VERDICT_EXITS


def add_arguments(p) -> None:
    p.add_argument("candidate", metavar="CANDIDATE", type=commit_name, help="a tag or commit of --tvm-repo")
    p.add_argument("--baseline", type=commit_name,
                   help="a tag or commit (default: the newest apache-tvm release before the candidate; with "
                        "--baseline-from, the kept history's newest commit with data); an empty name is an error")
    p.add_argument("--baseline-from", type=path, metavar="DIR",
                   help="the baseline from a kept history (the --out of `tvm-suite history` or `run`), never built "
                        "or measured again; its latency is judged only where it was measured on this machine")
    common_args.grid(p, "default,tuned")
    p.add_argument("--thresholds", type=path, help="TOML thresholds of the verdict (default: reports/thresholds.toml)")
    common_args.machine(p)
    common_args.tvm_history(p, ".asv/check")
    common_args.json_output(p, "the verdict and its checks")


def run(args) -> int:
    from suite.jobs import check

    common_args.check_history_outputs(args)
    grid = Grid.of(args.workloads, args.dtypes, args.targets, args.orders or list(QUICK_ORDERS))
    summary = check.run(args.tvm_repo, args.candidate, args.baseline, grid, args.out, env_dir=args.env_dir,
                        git_mirrors=args.git_mirrors, machine=args.machine, thresholds_path=args.thresholds,
                        baseline_from=args.baseline_from)
    say(summary.text, summary.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.facts, summary.exit_status)
    return summary.exit_status
