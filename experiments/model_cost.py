"""What a whole model costs on an emulated target, per model and order, and which combinations are
feasible within a budget (docs/model.md, "Cost"):

    python experiments/model_cost.py --models miniresnet,resnet18,resnet50 --orders default,tuned \\
        --target hexagon-v68-qf --dtype float16 --inputs 1 --budget-s 1800 [--json out.json]

For each model x order the setting's emulated seconds for ``--inputs`` inputs are first estimated
(suite.model.grid.estimate_s: each call at its PrimFunc's measured emulated seconds where the
measurement cache has them, else by its FLOPs). A setting within the budget is then run
(suite.model.accuracy.evaluate, with llvm's baselines; kept in the cache, so a second
invocation reads it): packets and emulated seconds per input (what every call executed, exact),
wall seconds per input, the logits' errors and agreement, and the IEEE twin's. One over the budget
is reported with its estimate, not run. ``--measure-calls`` first measures every PrimFunc of the
setting (build and one emulated run each: the measurement cache's), so that the estimate is of
measured calls rather than FLOPs.
"""

from __future__ import annotations

import argparse
import sys
import time

from tabulate import tabulate

from suite import cache, outputs
from suite.commands.common_args import names, path, whole_number
from suite.errors import UserError


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=names, default=["miniresnet"])
    p.add_argument("--orders", type=names, default=["default", "tuned"])
    p.add_argument("--target", default="hexagon-v68-qf")
    p.add_argument("--dtype", default="float16")
    p.add_argument("--inputs", type=whole_number(1, 1000), default=1)
    p.add_argument("--budget-s", type=seconds, default=1800.0)
    p.add_argument("--measure-calls", action="store_true")
    p.add_argument("--json", type=path, help="also write the rows here (a file that does not exist yet)")
    args = p.parse_args(argv)
    try:
        if args.json is not None:  # before any work: apart from every history, never over a file
            outputs.check_new(args.json, "--json")
        return _run(args)
    except UserError as err:  # a --json refused, an unknown model, target or dtype: one line, as the suite says it
        print(f"model_cost: {err}", file=sys.stderr)
        return 2


def seconds(value: str) -> float:
    number = float(value)
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"{value} is not a number of seconds from 0 up")
    return number


def _run(args) -> int:

    from suite import targets
    from suite.core import measurement
    from suite.core.combo import Combo
    from suite.model import accuracy, calls, grid
    from suite.model.settings import (
        BASELINE_TARGET,
        Setting,
        kernel_orders,
        settings_to_run,
    )

    target, llvm = targets.get(args.target), targets.get(BASELINE_TARGET)
    if reason := target.unavailable():
        print(f"model_cost: {reason}", file=sys.stderr)
        return 2
    rows = []
    for model in args.models:
        plan = calls.model_calls(model)
        for order in args.orders:
            setting = Setting(args.dtype, target, order)
            if args.measure_calls:
                for workload, used in kernel_orders(plan, setting):
                    measurement.measure(Combo(workload, args.dtype, target, used))
            estimate, how = grid.estimate_s(plan, setting, args.inputs)
            row = {"model": model, "dtype": args.dtype, "target": args.target, "order": order,
                   "inputs": args.inputs, "calls": len(plan.calls), "estimate_s": estimate, "estimated": how}
            if estimate > args.budget_s:
                rows.append({**row, "status": "skipped", "reason": f"estimated {estimate:,.0f} s over the budget "
                                                                   f"{args.budget_s:,.0f} s"})
                continue
            settings = settings_to_run([args.dtype], [target], [order], llvm)
            started = time.perf_counter()
            found, _ = accuracy.evaluate(plan, settings, args.inputs)
            wall = time.perf_counter() - started
            r = found.result(args.dtype, args.target, order)
            if not r.measured:
                rows.append({**row, "status": r.status.value, "reason": r.reason})
                continue
            m, twin = r.metrics, r.ieee_twin
            rows.append({**row, "status": "measured", "wall_s_this_run": wall,
                         "s_per_input": r.seconds_per_input.target, "twin_s_per_input": r.seconds_per_input.ieee_twin,
                         "per_input": r.per_input, "max_abs_error": m.max_abs_error,
                         "rmse_ratio": m.rmse_ratio, "rmse_ratio_default": m.rmse_ratio_default,
                         "top1": m.top1_agreement, "top5": m.top5_agreement,
                         "twin_max_abs_error": None if twin is None else twin.max_abs_error,
                         "twin_rmse_ratio": None if twin is None else twin.rmse_ratio,
                         "twin_rmse_ratio_default": None if twin is None else twin.rmse_ratio_default,
                         "default_calls": len(r.default_calls or ())})
    table = [[r["model"], r["order"], r["inputs"], f"{r['estimate_s']:,.0f}", r["status"],
              f"{r['s_per_input']:.2f}" if "s_per_input" in r else "-",
              f"{(r.get('per_input') or {}).get('emulated_s', 0):.2f}" if "s_per_input" in r else "-",
              f"{(r.get('per_input') or {}).get('packets', 0):,.0f}" if "s_per_input" in r else "-",
              f"{r['max_abs_error']:.3g}" if "max_abs_error" in r else "-",
              f"{r['rmse_ratio']:.3g}" if "rmse_ratio" in r else "-",
              f"{r['top1']:.2f}/{r['top5']:.2f}" if "top1" in r else "-",
              f"{r['twin_rmse_ratio']:.3g}" if r.get("twin_rmse_ratio") is not None else "-"]
             for r in rows]
    print(tabulate(table, ["model", "order", "N", "estimate s", "status", "s/input", "emulated s/input",
                           "packets/input", "max|err|", "RMSE/eager", "top-1/5", "twin RMSE/eager"],
                   tablefmt="github", disable_numparse=True))
    for r in rows:
        if r["status"] != "measured":
            print(f"{r['model']} {r['order']}: {r['status']}: {r.get('reason')}; {r['estimated']}")
    if args.json:
        cache.write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
