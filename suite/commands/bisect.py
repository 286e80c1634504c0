"""``tvm-suite bisect``: the first commit in A..B where a metric of one combination worsens (the
library: :mod:`suite.history.bisect`)."""

from __future__ import annotations

from suite.commands import common_args
from suite.commands.base import say, say_json
from suite.core.combo import Combo
from suite.errors import ExitCode

EXIT_CODES = [(ExitCode.OK, "the first bad commit found"),
              (ExitCode.NOTHING_WORSENED, "nothing worsened over the range (an answer, not a failure)")]


def add_arguments(p) -> None:
    p.add_argument("--range", required=True, help="A..B: A good, B bad; the commits after A up to B")
    common_args.combination(p, dtype="float16")
    p.add_argument("--metric", required=True, help="a lower-is-better metric, e.g. ulp_mean, latency, code_bytes")
    common_args.tvm_history(p, ".asv/bisect")
    common_args.json_output(p, "the answer")


def run(args) -> int:
    from suite.history import bisect

    common_args.check_history_outputs(args)
    combo = Combo.resolve(args.workload, args.dtype, args.target, args.order)  # names checked first
    summary = bisect.run_bisect(args.tvm_repo, args.range, combo.ids, args.metric, args.out,
                                env_dir=args.env_dir, git_mirrors=args.git_mirrors)
    say(summary.text, summary.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.facts, summary.exit_status)
    return summary.exit_status
