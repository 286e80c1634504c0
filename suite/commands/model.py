"""``tvm-suite model``: a whole model run on a target call by call, its logits against float64 and
against llvm, and (``--attribute``) each call's share of the error (docs/model.md)."""

from __future__ import annotations


from tabulate import tabulate

from suite import cache, outputs, targets
from suite.commands import common_args
from suite.commands.base import say_json
from suite.commands.common_args import names, path
from suite.core import model_accuracy, model_calls, models, schedules, workloads
from suite.core.model_accuracy import MODEL_ORDERS
from suite.reporting import report
from suite.errors import ExitCode, UserError
from suite.targets.base import Mode

EXIT_CODES = [(ExitCode.OK, "every setting measured"),
              (ExitCode.NOT_READY, "a setting not measured: a call its target could not build or run")]

#: The most inputs a run takes: each is a float64 evaluation of the whole model (seconds for
#: ResNet-18) and a run of every call on every target (minutes on an emulated one).
MAX_INPUTS = 1000
#: The calls an attribution table shows, largest share first (--json has them all).
SHOWN_CALLS = 8


def add_arguments(p) -> None:
    p.add_argument("--model", required=True, help=f"one of: {', '.join(models.model_names())}")
    p.add_argument("--dtypes", type=names, default=list(workloads.DTYPES),
                   help=f"comma-separated, of {', '.join(workloads.DTYPES)} (default: {','.join(workloads.DTYPES)})")
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
    dtypes = [workloads.check_dtype(d) for d in dict.fromkeys(args.dtypes)]
    chosen = [_runnable(targets.get(t)) for t in dict.fromkeys(args.targets)]
    orders = [_model_order(o) for o in dict.fromkeys(args.orders)]
    if args.out:
        _check_out(args.out)
    baseline = _runnable(targets.get(model_accuracy.BASELINE_TARGET))
    plan = model_calls.model_calls(args.model)
    settings = model_accuracy.settings_to_run(dtypes, chosen, orders, baseline)
    found, logits = model_accuracy.evaluate(plan, settings, args.inputs, attribute=args.attribute,
                                            twin=not args.no_twin)
    status = ExitCode.OK if all(r["status"] == "measured" for r in found["results"] if r["requested"]) \
        else ExitCode.NOT_READY
    if args.out:
        _write(args.out, found, logits)
    if args.json:  # and the tables for people, on stderr
        say_json(found, int(status))
    _print(found)
    return int(status)


def _runnable(target):
    if target.mode is Mode.COMPILE_ONLY:
        raise UserError(f"{target.name} is compile-only: it runs no kernel, and a model needs every call's output")
    if reason := target.unavailable():
        raise UserError(reason)
    return target


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


def _write(out, found: dict, logits: dict) -> None:
    page = report.render_template("model.html.j2", m=found)  # rendered first: a template error writes nothing
    cache.write_json(out / "model.json", outputs.marked(found, WRITER))
    for name, array in logits.items():
        cache.write_array(out / f"{found['model']}.{name}.logits.npy", array)
    cache.write_text(out / "model.html", page)
    print(f"written to {out}: model.json, model.html and the logits of every setting (.npy)")


def _number(value, spec=".3g") -> str:
    return "-" if value is None else format(value, spec)


def _print(found: dict) -> None:
    print(f"model {found['model']}: {len(found['calls'])} calls, {found['inputs']} inputs")
    print(f"data  {found['data']}")
    rows = []
    for r in found["results"]:
        ids = [r["dtype"], r["target"], r["order"] + ("" if r["requested"] else " (baseline)")]
        if r["status"] != "measured":
            rows.append(ids + ["not measured: " + r["reason"]] + [""] * 10)
            continue
        m = r["metrics"]
        untuned = len(r.get("default_calls") or ())
        packets = (r.get("per_input") or {}).get("packets")
        rows.append(ids + [_number(m["max_abs_error"]), _number(m["mean_abs_error"]), _number(m["rmse_ratio"]),
                           _number(m["rmse_ratio_fp32"]), _number(m.get("rmse_ratio_default")),
                           _number((m["vs_llvm"] or {}).get("max_abs")),
                           f"{m['top1_agreement']:.2f}", f"{m['top5_agreement']:.2f}",
                           _seconds(r), "-" if packets is None else f"{packets:,.0f}",
                           f"{untuned} calls default" if untuned else ""])
        if "ieee_twin" in r:
            t = r["ieee_twin"]
            rows.append([r["dtype"], r["target"], f"{r['order']} (IEEE twin)", _number(t["max_abs_error"]),
                         _number(t["mean_abs_error"]), _number(t["rmse_ratio"]), "", _number(t["rmse_ratio_default"]),
                         "", f"{t['top1_agreement']:.2f}", f"{t['top5_agreement']:.2f}",
                         f"{r['seconds_per_input']['ieee_twin']:.2f}", "", ""])
    print(tabulate(rows, ["dtype", "target", "order", "max|err|", "mean|err|", "RMSE/eager", "RMSE/fp32",
                          "RMSE/default", "vs llvm max", "top-1", "top-5", "s/input", "pkts/input", "no record"],
                   tablefmt="plain", disable_numparse=True))
    print("errors of the logits against float64; eager: llvm default in the same dtype (PyTorch's rule passes "
          "at 2x fp32, 3x fp16); default: the same target and dtype in order default; top-k: inputs whose float64 "
          "top class is the target's top-1 / among its top-5; IEEE twin: the same kernels with IEEE rounding")
    kept = found.get("cache") or {}
    if kept:
        print(f"cache: {len(kept['reused'])} setting(s) reused whole, {len(kept['resumed'])} resumed, "
              f"{len(kept['run'])} run" + (f" (reused: {', '.join(kept['reused'])})" if kept["reused"] else ""))
    for r in found["results"]:
        if "attribution" in r:
            _print_attribution(r)


def _seconds(r: dict) -> str:
    """This run's seconds per input on the target, and on an emulated target the emulated seconds
    of the kept runs (an output reused from the cache takes no emulation now)."""
    emulated = (r.get("per_input") or {}).get("emulated_s")
    return f"{r['seconds_per_input']['target']:.2f}" + (f" ({emulated:.0f} emulated)" if emulated else "")


def _print_attribution(r: dict) -> None:
    a = r["attribution"]
    print(f"\nattribution {r['dtype']} {r['target']} {r['order']}: logits MSE {a['total_mse']:.3g}; the calls alone "
          f"sum to {_number(a['sum_only_share'])} of it (interaction {_number(a['interaction_share'])}); local "
          f"errors added up reproduce {_number(a['injected_share'])} of it")
    rows = [[c["rank"], c["index"], c["workload"], _number(c["only_share"]), _number(c["without_share"]),
             _number(c["only_rmse"]), _number(c["local_rmse"])] for c in a["calls"][:SHOWN_CALLS]]
    print(tabulate(rows, ["rank", "call", "workload", "only share", "without share", "only RMSE", "local RMSE"],
                   tablefmt="plain", disable_numparse=True))
    if len(a["calls"]) > SHOWN_CALLS:
        print(f"({len(a['calls']) - SHOWN_CALLS} more calls in --json)")
    d = a.get("vs_default")
    if d is None:
        return
    print(f"\n{r['order']} against default ({r['dtype']} {r['target']}): logits' mean squared difference "
          f"{d['total_mse']:.3g}; the calls alone sum to {_number(d['sum_share'])} of it")
    moved = [c for c in d["calls"] if c["rmse"] > 0]
    if not moved:
        print("no call's kernel gives other outputs in the two orders")
        return
    top = moved[0]
    print(f"most of it: call {top['index']} ({top['workload']}), share {_number(top['share'])}")
    rows = [[c["rank"], c["index"], c["workload"], _number(c["share"]), _number(c["rmse"])]
            for c in moved[:SHOWN_CALLS]]
    print(tabulate(rows, ["rank", "call", "workload", "share", "RMSE apart"], tablefmt="plain", disable_numparse=True))
    if len(d["calls"]) > len(moved):
        print(f"({len(d['calls']) - len(moved)} calls give the same outputs in both orders)")

