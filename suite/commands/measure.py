"""``tvm-suite measure``: compile, run and print the metrics of one combination (``--against``:
its divergence from another order; ``--save-arrays``: inputs, output and reference as .npy)."""

from __future__ import annotations

import sys

import numpy as np

from suite import cache, outputs
from suite.commands import common_args
from suite.commands.base import say_json
from suite.commands.common_args import path
from suite.core import measurement, quantized, schedules, timing, workloads
from suite.core.combo import Combo
from suite.core.record import Kind
from suite.errors import ExitCode, Skipped, UserError

EXIT_CODES = [(ExitCode.OK, "measured"), (ExitCode.NOT_READY, "the combination failed to build or run, or was skipped")]


def add_arguments(p) -> None:
    common_args.combination(p)
    p.add_argument("--against", metavar="ORDER", help="also compare the output with this order's")
    common_args.json_output(p, "the record")
    p.add_argument("--save-arrays", metavar="DIR", type=path,
                   help="write inputs, output and reference as .npy, and the record as .json")


def run(args) -> int:
    # Check every argument before any compile starts.
    combo = Combo.resolve(args.workload, args.dtype, args.target, args.order)
    if args.against is not None:  # an empty name is an unknown order, never "none"
        from suite.reporting import rules, thresholds

        schedules.check_order(args.against)
        limits = thresholds.load()  # once, and a bad thresholds file refused before any compile
    if args.save_arrays:
        stem = _stem(combo)
        outputs.check_dir(args.save_arrays, "--save-arrays", WRITER, f"{stem}.json", (f"{stem}.*.npy",))
        cache.ensure_dir(args.save_arrays, "--save-arrays")
    if reason := combo.target.unavailable():  # tools missing, no GPU
        raise UserError(reason)
    record = measurement.measure(combo)
    shown = record.to_json()
    shown.pop("parts", None)
    if record.ok and record.kind is Kind.LATENCY:  # latency is timed afresh, never cached
        samples = timing.take(combo).samples_s
        median = float(np.median(samples))
        shown["latency"] = {"samples_s": samples, "median_s": median, "gflops": timing.gflops(combo, median)}
    if args.against and record.ok:
        try:
            found = measurement.divergence(combo, args.against)
            shown["divergence"] = {**found, **rules.attribute(found, combo.target.name, limits)}
        except Skipped as err:
            shown["divergence"] = {"against": args.against, "skipped": str(err)}
    if args.save_arrays:
        _save_arrays(args, combo, record, shown)
    if args.json:  # and the record for people, on stderr
        say_json(shown, 0 if record.ok else 1)
    _print_record(shown)
    return 0 if record.ok else 1


def _print_record(record: dict) -> None:
    print(f"workload   {record['workload']}")
    print(f"dtype      {record['dtype']}   target {record['target']}   order {record['order']}")
    if record.get("tuned_from"):
        print(f"records    the tuning record of {record['tuned_from']} replayed")
    print(f"tvm        {record.get('tvm_version', '-')}")
    if record["status"] != "ok":
        print(f"{record['status']}: {record['reason']}")
        return
    if "codegen" in record:  # Hexagon compile metrics
        print("codegen    " + "   ".join(f"{k} {v}" for k, v in record["codegen"].items()))
    if "metrics" not in record:
        print(f"compile-only target: compiled in {record['compile_s']:.2f} s, not run")
        return
    m = record["metrics"]
    if "emulated_s" in record:
        print(f"emulated   {record['emulated_s']:.3f} s under qemu-hexagon (not hardware latency)"
              f"   compile {record['compile_s']:.2f} s")
        if c := record.get("counts"):
            floor = (f"   HVX efficiency {c['packet_floor'] / c['packets']:.3f} (floor {c['packet_floor']:,} packets)"
                     if c.get("packet_floor") and c.get("packets") else "")
            print(f"executed   {c['packets']:,} packets   {c['instructions']:,} instructions   "
                  f"{c['hvx_instructions']:,} HVX (exact; a packet issues per cycle at best){floor}")
    else:
        lat = record["latency"]
        print(f"latency    {lat['median_s'] * 1e3:.3f} ms (median of {len(lat['samples_s'])}, timed now)"
              f"   {lat['gflops']:.2f} GFLOP/s   compile {record['compile_s']:.2f} s")
    if "exact_fraction" in m:  # int8: against the exact integer oracle, no ULP
        _print_integer(m)
        if d := record.get("divergence"):  # int8 has none: exact in every order, or wrong
            print(f"vs {d['against']:8s} skipped: {d['skipped']}")
        return
    print(f"ULP error  max {m['ulp_max']:.4g}   mean {m['ulp_mean']:.4g}   p99 {m['ulp_p99']:.4g}")
    print(f"scaled     {m['scaled_error']:.4g} ULP of max|ref|")
    k, dtype = record["accumulation_length"], record["dtype"]
    rigorous = (f"{m['bound_fraction']:.4g} of gamma_K*m" if m["bound_fraction"] == m["bound_fraction"]
                else f"none (no rigorous bound for K = {k} in {dtype}: K*u >= 1)")
    print(f"bound      {rigorous}; probabilistic {m['prob_bound_fraction']:.4g} of gamma~_K(lambda)*m (K={k})")
    print(f"abs error  max {m['max_abs_error']:.4g}   mean {m['mean_abs_error']:.4g}")
    print(f"non-finite {int(m['nonfinite'])}")
    if t := record.get("twin_metrics"):
        print(f"IEEE twin  ULP mean {t['ulp_mean']:.4g}   scaled {t['scaled_error']:.4g}   probabilistic bound "
              f"{t['prob_bound_fraction']:.4g}   (the same program, IEEE rounding in place of qfloat)")
    d = record.get("divergence")
    if d and "skipped" in d:
        print(f"vs {d['against']:8s} skipped: {d['skipped']}")
    elif d:
        print(f"vs {d['against']:8s} {d['differ_fraction'] * 100:.2f}% of elements differ, "
              f"max {d['max_ulp_distance']:.0f} ULP apart, exceeds bound: {bool(d['exceeds_bound'])}")
        print(f"           error vs float64 {d['error_ratio']:.3f}x {d['against']}'s (z {d['error_ratio_z']:.1f}), "
              f"bias shift {d['bias_shift']:+.3f} of {d['against']}'s mean |err| (|z| {d['bias_shift_z']:.1f})")
        if "twin_error_ratio" in d:
            print(f"IEEE twin  error vs float64 {d['twin_error_ratio']:.3f}x {d['against']}'s "
                  f"(z {d['twin_error_ratio_z']:.1f}), bias shift {d['twin_bias_shift']:+.3f} "
                  f"(|z| {d['twin_bias_shift_z']:.1f})")
        if d["marked"]:
            print(f"marked     {', '.join(d['marked'])}: cause {d['cause_words']}")
        else:
            print("marked     no: inside the divergence rules")


def _print_integer(m: dict) -> None:
    print(f"exact      {m['exact_fraction'] * 100:.4g}% of output elements equal the integer oracle's; "
          f"max {m['max_step_error']:.0f} output steps apart")
    print(f"accumulator {m['accumulator_mismatches']:.0f} int32 elements differ from the exact value "
          f"({m['accumulator_wrapped']:.0f} of whose exact value leaves int32)")
    print("ULP        none: int8 is judged exactly against the integer oracle (docs/int8.md)")


#: Who wrote a record beside saved arrays (its mark: the command replaces only its own files).
WRITER = "tvm-suite measure"


def _stem(combo: Combo) -> str:
    return ".".join(combo.ids)


def _save_arrays(args, combo: Combo, record, shown: dict) -> None:
    """The record (``<stem>.json``, this command's mark, first), then inputs, output and reference."""
    if not record.has_output:
        return
    out, stem = args.save_arrays, _stem(combo)
    cache.write_json(out / f"{stem}.json", outputs.marked(shown, WRITER))
    for index, array in enumerate(workloads.make_inputs(combo.workload, combo.dtype)):
        cache.write_array(out / f"{stem}.input{index}.npy", array)
    cache.write_array(out / f"{stem}.output.npy", measurement.output(combo))
    if combo.dtype in workloads.INTEGER_DTYPES:  # the integer oracle's output is the reference
        inputs = workloads.make_inputs(combo.workload, combo.dtype)
        reference = quantized.evaluate(combo.workload.chain, inputs).output
    else:
        reference = measurement.reference_arrays(combo.workload, combo.dtype)[0]
    cache.write_array(out / f"{stem}.reference.npy", reference)
    print(f"record and arrays written to {out}/{stem}.json and {stem}.*.npy", file=sys.stderr)
