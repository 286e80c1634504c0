"""The seed issue's experiment, on the executed qfloat target (a script, not an asv benchmark).

    python experiments/seed_issue.py [--target hexagon-v68-qf] [--inputs suite|uniform]

For every loop order of the seed conv2d in float16: the output on ``--target`` against the
``default`` order on the same target (the issue's comparison: on hardware, max |diff| 0.5 and
mean |diff| 0.0708 for the loop swap), against llvm's output of the same order (IEEE fp16 on this
CPU), and against float64; and the same pair run by the target's IEEE twin (the same program, HVX
floating point rounded as IEEE does), with the cause the suite assigns to a mark: *arithmetic*
when the twin's pair stays inside the divergence rules, *schedule* when it is marked too. ``--inputs suite`` uses the suite's fixed inputs (activations
U[0, 1), weights N(0, 1/fan_in)); ``uniform`` draws both tensors from U[0, 1) (fixed seed), the
usual TVM test data. Builds come from the suite's cache; runs with other inputs are cached by
content like any emulated run.
"""

import argparse
import sys

import numpy as np

ORDERS = ("default", "seed-swap", "seed-swap-vec", "reduction-outer", "tuned", "seed-tuned")


def _inputs(workload, kind):
    from suite.core import workloads

    if kind == "suite":
        return workloads.make_inputs(workload, "float16")
    rng = np.random.default_rng(20221116)  # the date of the seed issue
    return [rng.uniform(0.0, 1.0, size=item["shape"]).astype("float16") for item in workload.chain["inputs"]]


def _output(combo, inputs, ieee_twin=False):
    """The output of a measured combination on ``inputs`` (of its IEEE twin with ``ieee_twin``; a
    build without a rewritten instruction never calls the model: its twin output is its output)."""
    from suite.core import measurement

    record = measurement.measure(combo)
    if not record.has_output:
        return None, record.reason
    args = (combo.entry / combo.target.KERNEL_FILE, inputs, combo.workload.output_shape, combo.dtype)
    if ieee_twin and (record.codegen or {}).get("rewritten") != 0:
        return combo.target.load_ieee_twin(*args).output(), record
    return combo.target.load(*args).output(), record


def _compare(a, b):
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(np.mean(a != b)), float(diff.max()), float(diff.mean())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="hexagon-v68-qf")
    parser.add_argument("--inputs", choices=("suite", "uniform"), default="suite")
    args = parser.parse_args(argv)
    from suite.core import metrics, reference, workloads
    from suite.core.combo import Combo
    from suite.reporting import rules, thresholds

    workload = workloads.get(workloads.SEED_ID)
    inputs = _inputs(workload, args.inputs)
    ref = reference.evaluate(workload.chain, inputs)
    mag = reference.evaluate_magnitude(workload.chain, inputs)
    k = reference.accumulation_length(workload.chain)
    default = Combo.resolve(workload.id, "float16", args.target, "default")
    twins = default.target.ieee_twin
    base, _ = _output(default, inputs)
    base_twin = _output(default, inputs, ieee_twin=True)[0] if twins else None
    limits = thresholds.load()
    print(f"seed conv2d float16 on {args.target}, inputs: {args.inputs}")
    print("| order | qfloat instr. | vs default: differ | max | mean | vs llvm same order: differ | max | mean "
          "| ULP mean | err ratio vs default | bias shift | prob. bound | IEEE twin: vs twin default: differ "
          "| err ratio | bias shift | cause |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for order in ORDERS:
        out, record = _output(Combo.resolve(workload.id, "float16", args.target, order), inputs)
        if out is None:
            print(f"| {order} | skipped: {record} |")
            continue
        ieee, _ = _output(Combo.resolve(workload.id, "float16", "llvm", order), inputs)
        m = metrics.accuracy_metrics(out, ref, mag, k, "float16")
        shift = metrics.error_shift(out, base, ref)
        vs_default = _compare(out, base)
        vs_llvm = _compare(out, ieee) if ieee is not None else (float("nan"),) * 3
        twin, cause = {}, "-"
        if twins and order != "default":
            twin_out, _ = _output(Combo.resolve(workload.id, "float16", args.target, order), inputs, ieee_twin=True)
            twin = {f"twin_{k}": v for k, v in metrics.error_shift(twin_out, base_twin, ref).items()}
            twin["differ"] = _compare(twin_out, base_twin)[0]
            cause = rules.attribute({**shift, **twin}, args.target, limits)["cause"] or "not marked"
        print(f"| {order} | {record.codegen.get('qfloat_total', '-')} | {vs_default[0]:.1%} | {vs_default[1]:.4g} "
              f"| {vs_default[2]:.4g} | {vs_llvm[0]:.1%} | {vs_llvm[1]:.4g} | {vs_llvm[2]:.4g} | {m['ulp_mean']:.3g} "
              f"| {shift['error_ratio']:.3f} | {shift['bias_shift']:+.3f} | {m['prob_bound_fraction']:.3g} "
              f"| {twin.get('differ', float('nan')):.1%} | {twin.get('twin_error_ratio', float('nan')):.3f} "
              f"| {twin.get('twin_bias_shift', float('nan')):+.3f} "
              f"| {cause} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
