"""``tvm-suite run``: the main job on the installed TVM, ending with the gate's verdict (the
library: :mod:`suite.jobs.run`)."""

from __future__ import annotations

from suite import outputs
from suite.commands import common_args
from suite.commands.base import VERDICT_EXITS, say, say_json
from suite.commands.common_args import path
from suite.core import schedules
from suite.core.combo import QUICK_ORDERS, Grid

EXIT_CODES = VERDICT_EXITS


def add_arguments(p) -> None:
    p.add_argument("--quick", action="store_true",
                   help="orders default and tuned only, few asv repeats (every workload still runs)")
    common_args.grid(p, "all; with --quick: default,tuned")
    p.add_argument("--out", type=path, default=".asv",
                   help="asv results, report, HTML, logs (default: .asv); an html/ there that tvm-suite did not "
                        "publish is refused, never replaced")
    p.add_argument("--tvm-repo", type=path, help="a TVM clone whose tag v<version> names the installed TVM's commit "
                                                 "(default: a versions repository in --out)")
    p.add_argument("--tvm-commit", help="the TVM commit the installed TVM was built from (needs --tvm-repo)")
    p.add_argument("--cluster", type=common_args.cluster_address, metavar="ADDRESS",
                   help="a Dask scheduler (tcp://HOST:8786) whose workers build, run and check every combination "
                        "not yet cached; latency is timed here (needs the cluster extra)")
    p.add_argument("--thresholds", type=path, help="TOML thresholds of the verdict (default: reports/thresholds.toml)")
    common_args.machine(p)
    common_args.json_output(p, "the verdict, its checks and the combinations' counts")


def run(args) -> int:
    from suite.jobs import run as main_job

    outputs.check_apart(args.out, "--out")
    orders = args.orders or list(QUICK_ORDERS if args.quick else schedules.ORDERS)
    grid = Grid.of(args.workloads, args.dtypes, args.targets, orders)
    summary = main_job.run(grid, quick=args.quick, out_dir=args.out, tvm_repo=args.tvm_repo, tvm_commit=args.tvm_commit,
                           cluster=args.cluster, thresholds_path=args.thresholds, machine=args.machine)
    say(summary.text, summary.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.facts, summary.exit_status)
    return summary.exit_status
