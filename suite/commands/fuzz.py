"""``tvm-suite fuzz``: the command line of a fuzz campaign (options, the summary printed,
``--json``); the work is :mod:`suite.fuzz.campaign`'s."""

from __future__ import annotations

import sys

from suite import outputs, targets
from suite.commands import common_args
from suite.commands.base import say, say_json
from suite.commands.common_args import cluster_address, names, path, whole_number
from suite.core import workloads
from suite.errors import ExitCode
from suite.fuzz import EMULATED_TIMEOUT_S, NATIVE_TIMEOUT_S

EXIT_CODES = [(ExitCode.OK, "nothing found: no schedule computed a wrong result, crashed or hung"),
              (ExitCode.CHANGED, "a schedule computes something else (CHANGED): kept in OUT/findings"),
              (ExitCode.UNDEFINED, "a schedule is undefined (UNDEFINED): kept in OUT/findings"),
              (ExitCode.SHIFTED, "a schedule moved the error beyond any reordering (SHIFTED), none CHANGED or "
                                 "UNDEFINED: kept in OUT/findings"),
              (ExitCode.CRASHED, "a schedule crashed TVM or hung, none computed a wrong result: kept in OUT/findings")]
INTERRUPTED = "every schedule judged is in OUT/journal.jsonl; rerun with the same --seed and --out to continue"
#: More traces than a week of campaign judges on one machine: a typo, not a campaign.
MAX_TRACES = 100_000
MAX_MINUTES = 7 * 24 * 60


def _fuzzed_targets() -> list[str]:
    """The targets whose code runs here or under an emulator (Hexagon's executed qfloat ones), with
    the dtypes each runs where that is not all of fuzz's."""
    found = []
    for name in targets.names():
        if "hexagon" in name and not name.endswith("-qf"):
            continue
        runs = [d for d in workloads.MEASURED_DTYPES if not targets.get(name).dtype_unavailable(d)]
        found.append(name if len(runs) == len(workloads.MEASURED_DTYPES) else f"{name} ({', '.join(runs)})")
    return found


def add_arguments(p) -> None:
    p.add_argument("--workloads", type=names, default=["seed"],
                   help="comma-separated workload ids or model names (default: seed, the seed conv2d)")
    p.add_argument("--dtypes", type=names, default=["float32"],
                   help=f"comma-separated, of {', '.join(workloads.MEASURED_DTYPES)} (default: float32; int8 is "
                        "judged exactly against the integer oracle, bfloat16 by its rounding bound, u = 2^-8)")
    p.add_argument("--targets", type=names, default=["llvm"],
                   help=f"comma-separated, of those that run code and can be tuned: "
                        f"{', '.join(_fuzzed_targets())} "
                        "(default: llvm)")
    p.add_argument("--traces", type=whole_number(1, MAX_TRACES), default=10,
                   help=f"schedules sampled per combination, besides the named orders (1 to {MAX_TRACES:,}; default 10)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the sampling (default 0): the same seed samples "
                                                       "the same traces, and continues a campaign it stopped")
    p.add_argument("--minutes", type=common_args.positive_number(MAX_MINUTES, "minutes"), default=60.0,
                   help="stop after this long, keeping every schedule judged (default 60)")
    p.add_argument("--out", type=path, default="fuzz-out",
                   help="the campaign's directory: journal, findings, summary (default: ./fuzz-out)")
    p.add_argument("--plant", type=whole_number(0, MAX_TRACES), default=0, metavar="K",
                   help="also plant K known bugs in scheduled TIR and report the oracle's recall (default 0)")
    p.add_argument("--trace-timeout", type=common_args.positive_number(3600, "seconds"), metavar="S",
                   help="a schedule whose build and run take longer is a TIMEOUT finding (default: "
                        f"{NATIVE_TIMEOUT_S:g} on llvm and cuda, {EMULATED_TIMEOUT_S:g} on Hexagon's "
                        "emulator: a build and two emulated runs, the kernel and its IEEE twin)")
    p.add_argument("--cluster", type=cluster_address, metavar="ADDR",
                   help="build and run the schedules on the workers of the Dask scheduler at ADDR (tcp://HOST:8786), "
                        "which must run this TVM build and this suite (default: worker processes here, one per core)")
    p.add_argument("--thresholds", type=path, help="TOML thresholds: the rounding bound's lambda and limit ([bound]) "
                                                   "and the divergence rules ([divergence]) of the verdicts "
                                                   "(default: reports/thresholds.toml)")
    common_args.json_output(p, "the summary, its exit status and the findings")


def run(args) -> int:
    from suite.fuzz import campaign, combinations, directory

    outputs.check_apart(args.out, "--out")
    made = not (args.out.exists() or args.out.is_symlink())
    options = combinations.Options(workloads=args.workloads, dtypes=args.dtypes, targets=args.targets, traces=args.traces,
                               seed=args.seed, minutes=args.minutes, out=args.out, plant=args.plant,
                               timeout_s=args.trace_timeout, cluster=args.cluster, thresholds=args.thresholds)
    try:
        summary = campaign.Campaign(options, log=lambda line: print(f"fuzz: {line}", file=sys.stderr, flush=True)).run()
    except BaseException:  # a campaign that failed leaves no empty --out of its making behind
        if made:
            outputs.remove_made_dir(args.out, (directory.OWN_MARK, directory.LOCK))
        raise
    status = int(summary.exit_status)
    say(summary.text(), status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.to_json(), status)
    return status
