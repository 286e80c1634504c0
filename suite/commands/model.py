"""``tvm-suite model``: a whole model run on a target call by call, its logits against float64 and
against llvm, and (``--attribute``) each call's share of the error (docs/model.md)."""

from __future__ import annotations

from suite import cache, outputs, targets
from suite.commands import common_args
from suite.commands.base import say_json
from suite.commands.common_args import names, path
from suite.core import models, schedules, workloads
from suite.errors import ExitCode, UserError
from suite.model import accuracy, calls, int8
from suite.model.accuracy import MODEL_DTYPES, MODEL_ORDERS
from suite.model.results import ModelResult
from suite.model.settings import BASELINE_TARGET, settings_to_run
from suite.reporting import report
from suite.targets.base import Mode

EXIT_CODES = [(ExitCode.OK, "every setting measured (and every int8 chain equal to the exact integer pipeline)"),
              (ExitCode.NOT_READY, "a setting not measured (a call its target could not build or run), or an int8 "
                                   "chain unlike the exact integer pipeline")]

#: The most inputs a run takes: each is a float64 evaluation of the whole model (seconds for
#: ResNet-18) and a run of every call on every target (minutes on an emulated one).
MAX_INPUTS = 1000


def add_arguments(p) -> None:
    p.add_argument("--model", required=True, help=f"one of: {', '.join(models.model_names())}")
    p.add_argument("--dtypes", type=names, default=list(workloads.DTYPES),
                   help=f"comma-separated, of {', '.join(MODEL_DTYPES)} (default: {','.join(workloads.DTYPES)}; int8: "
                        "the model quantized, against the float model and the exact integer pipeline)")
    p.add_argument("--targets", type=names, default=["llvm"],
                   help=f"comma-separated, of {', '.join(_running_targets())} (default: llvm; llvm runs always: "
                        "the baseline)")
    p.add_argument("--orders", type=names, default=list(MODEL_ORDERS),
                   help=f"comma-separated, of {', '.join(MODEL_ORDERS)} (default: {','.join(MODEL_ORDERS)})")
    p.add_argument("--inputs", type=common_args.whole_number(1, MAX_INPUTS), default=8, metavar="N",
                   help=f"synthetic input images, 1 to {MAX_INPUTS} (default: 8)")
    p.add_argument("--attribute", action="store_true",
                   help="also each call's share of the logits' error (one more target run per call and input, "
                        "and a float64 evaluation per call and input)")
    p.add_argument("--no-twin", action="store_true",
                   help="on a target with an IEEE twin (hexagon-v68-qf), leave its chain out (it doubles the "
                        "emulation of every call with a rewritten instruction)")
    common_args.json_output(p, "the results")
    p.add_argument("--out", type=path, metavar="DIR", help="also write model.json and every setting's logits (.npy)")


def _running_targets() -> list[str]:
    return [name for name in targets.names() if targets.get(name).mode is not Mode.COMPILE_ONLY]


def run(args) -> int:
    # Every name checked before any work.
    models.parse_model_name(args.model)
    dtypes = [workloads.check_dtype(d, MODEL_DTYPES) for d in dict.fromkeys(args.dtypes)]
    chosen = [targets.get(t) for t in dict.fromkeys(args.targets)]
    for target in chosen:  # what a target runs is said before whether it runs here
        for dtype in dtypes:
            _runs_dtype(target, dtype)
    chosen = [_runnable(t) for t in chosen]
    orders = [_model_order(o) for o in dict.fromkeys(args.orders)]
    if args.out:
        _check_out(args.out)
    baseline = _runnable(targets.get(BASELINE_TARGET))
    plan = calls.model_calls(args.model)
    if any(d in workloads.INTEGER_DTYPES for d in dtypes):
        int8.check_quantizable(plan)
    settings = settings_to_run(dtypes, chosen, orders, baseline)
    found, logits = accuracy.evaluate(plan, settings, args.inputs, attribute=args.attribute, twin=not args.no_twin)
    status = ExitCode.OK if found.requested_measured and found.integer_exact else ExitCode.NOT_READY
    if args.out:
        _write(args.out, found, logits)
    if args.json:  # and the tables for people, on stderr
        say_json(found.to_json(), int(status))
    for line in found.lines():
        print(line)
    return int(status)


def _runnable(target):
    if target.mode is Mode.COMPILE_ONLY:
        raise UserError(f"{target.name} is compile-only: it runs no kernel, and a model needs every call's output")
    if reason := target.unavailable():
        raise UserError(reason)
    return target


def _runs_dtype(target, dtype: str) -> None:
    """UserError where ``target`` does not run ``dtype``, naming the targets that do."""
    if reason := target.dtype_unavailable(dtype):
        can = [t for t in _running_targets() if not targets.get(t).dtype_unavailable(dtype)]
        raise UserError(f"{reason}; a whole model in {dtype} runs on: {', '.join(can)}")


def _model_order(order: str) -> str:
    schedules.check_order(order)
    if order not in MODEL_ORDERS:
        raise UserError(f"a whole model runs in the orders {', '.join(MODEL_ORDERS)}, not {order!r}")
    return order


#: Who wrote a model.json (its mark: the command replaces only its own files).
WRITER = "tvm-suite model"


def _check_out(out) -> None:
    """--out apart from every history, its model.json, model.html and logits, if any, this
    command's own (:func:`suite.outputs.check_dir`), made and writable."""
    outputs.check_dir(out, "--out", WRITER, "model.json", ("model.html", "*.logits.npy"))
    cache.ensure_dir(out, "--out")


def _write(out, found: ModelResult, logits: dict) -> None:
    document = found.to_json()
    page = report.render_template("model.html.j2", m=document)  # rendered first: a template error writes nothing
    cache.write_json(out / "model.json", outputs.marked(document, WRITER))
    for name, array in logits.items():
        cache.write_array(out / f"{found.model}.{name}.logits.npy", array)
    cache.write_text(out / "model.html", page)
    print(f"written to {out}: model.json, model.html and the logits of every setting (.npy)")
