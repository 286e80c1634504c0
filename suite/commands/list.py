"""``tvm-suite list``: the workloads, by op chain and shapes."""

from __future__ import annotations

from tabulate import tabulate

from suite.commands import common_args
from suite.commands.base import say_json
from suite.core import workloads
from suite.errors import ExitCode, UserError

EXIT_CODES = [(ExitCode.OK, "listed")]


def add_arguments(p) -> None:
    p.add_argument("--model", help=f"one of: {', '.join(workloads.all_models())} (default: seed and resnet50)")
    common_args.json_output(p, "the workloads")


def run(args) -> int:
    models = [args.model] if args.model else ["seed", *workloads.DEFAULT_MODELS]
    found = []
    for model in models:
        if model not in workloads.all_models():
            raise UserError(f"unknown model {model!r}; valid models: {', '.join(workloads.all_models())}")
        found += workloads.catalog(model)
    if args.json:  # and the table for people, on stderr
        say_json([w.summary() for w in found], 0)
    rows = [
        [w.id, " ".join("x".join(map(str, s)) for s in w.input_shapes), "x".join(map(str, w.output_shape)),
         f"{w.flops / 1e6:.1f}", str(w.occurrences)]
        for w in found
    ]
    print(tabulate(rows, ["workload", "inputs", "output", "MFLOP", "occurrences"], tablefmt="plain",
                   disable_numparse=True, colalign=["left", "left", "left", "right", "right"]))
    print(f"{len(found)} workloads")
    return 0
