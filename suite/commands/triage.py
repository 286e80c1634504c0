"""``tvm-suite triage``: the command line of triage (options, the verdict printed, ``--json``); the
work is :mod:`suite.triage.pipeline`'s."""

from __future__ import annotations

import sys
from pathlib import Path

from suite import outputs, targets
from suite.commands import common_args
from suite.commands.base import say, say_json
from suite.commands.common_args import names, path, trials
from suite.errors import ExitCode

EXIT_CODES = [(ExitCode.OK, "EQUIVALENT: after's output is before's, bit for bit"),
              (ExitCode.REORDERED, "REORDERED: both within the rounding bound of the exact value"),
              (ExitCode.ARITHMETIC, "ARITHMETIC: qfloat marked, its IEEE twin not"),
              (ExitCode.SHIFTED, "SHIFTED: both within the rounding bound, the error moved beyond any reordering"),
              (ExitCode.CHANGED, "CHANGED: the after program computes something else"),
              (ExitCode.UNDEFINED, "UNDEFINED: the before program itself is undefined"),
              (ExitCode.NO_VERDICT, "no verdict: no target could build and run both programs")]


def add_arguments(p) -> None:
    from suite.triage import budget

    p.add_argument("before", type=path, metavar="BEFORE",
                   help="TVMScript file: a PrimFunc or an IRModule, read as data (none of it runs; Python "
                        "that TVMScript does not need is refused)")
    p.add_argument("after", type=path, metavar="AFTER", nargs="?",
                   help="TVMScript file of the scheduled program, read as data (or give --schedule, --trace or --tune)")
    p.add_argument("--schedule", type=path, metavar="FILE",
                   help="Python calling schedule primitives on `sch` (tvm.tir.Schedule spelling accepted), or a "
                        "trace printed as Python. It RUNS, in the sandbox (no network, nothing writable but its "
                        "scratch directory), in a process of its own whose exit is never a verdict")
    p.add_argument("--trace", type=path, metavar="FILE",
                   help="a MetaSchedule trace in JSON (JSON only: data, applied without running anything)")
    p.add_argument("--tune", type=trials, metavar="N", help="tune BEFORE with MetaSchedule, N trials per target (1 to 1,000,000), "
                                                                "each candidate checked against the reference")
    p.add_argument("--target", action="append", type=names, metavar="T",
                   help=f"run on T (repeatable or comma-separated; default llvm): {', '.join(targets.names())}")
    p.add_argument("--inputs", metavar="SPEC", help="LO:HI, NAME=LO:HI or NAME=FILE.npy, comma-separated "
                                                    "(default: floats uniform in [-1, 1), fixed seeds)")
    p.add_argument("--func", dest="function", metavar="NAME", help="the PrimFunc to compare, where a file holds several")
    p.add_argument("--repro", type=path, metavar="PATH",
                   help="where a CHANGED verdict's reproducer goes, a path that does not exist yet (default: "
                        "./triage_repro_<func>.py, or _2, _3... where that exists: never replacing a file)")
    p.add_argument("--max-memory", type=budget.parse_size, metavar="SIZE", default=budget.DEFAULT_MAX_MEMORY,
                   help=f"the most memory the inputs and the reference may take, checked before any is "
                        f"allocated (K, M, G, T; default {budget.words(budget.DEFAULT_MAX_MEMORY)})")
    p.add_argument("--thresholds", type=path, help="TOML thresholds: the [bound] and [divergence] rules the verdicts "
                                                   "apply, as in `gate` (default: reports/thresholds.toml)")
    p.add_argument("--trust-input", action="store_true",
                   help="build and run the programs (and a schedule) without the sandbox: only for input you trust "
                        "(TVM turns strings in a program into native code); the report says so")
    common_args.json_output(p, "the verdict, its exit status and each target's findings")


def run(args) -> int:
    from suite.reporting import thresholds
    from suite.triage import pipeline

    # a CHANGED verdict's reproducer goes apart from every history, the default one too
    outputs.check_apart(args.repro or Path.cwd(),
                        "--repro" if args.repro else "the working directory (where --repro's default goes)")
    request = pipeline.Request(before=args.before, after=args.after, schedule=args.schedule, trace=args.trace,
                               tune=args.tune, targets=[t for ts in args.target or [["llvm"]] for t in ts],
                               inputs=args.inputs, func=args.function, repro=args.repro, max_memory=args.max_memory,
                               trust_input=args.trust_input,
                               thresholds=thresholds.load(args.thresholds))  # refused before any work
    report = pipeline.triage(request, log=lambda line: print(f"triage: {line}", file=sys.stderr, flush=True))
    say(report.text(), report.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(report.to_json(), report.exit_status)
    return report.exit_status
