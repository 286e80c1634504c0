"""One measurement: workload -> schedule -> build -> run -> reference -> metrics, cached.

A measurement of (workload, dtype, target, order) is computed once per TVM build and kept in
the cache as ``record.json`` (metrics, latency, status), ``output.npy`` and the compiled
kernel, so that asv's many benchmark processes only look values up.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from suite import cache, compat, metrics, reference, schedules, targets, workloads
from suite.errors import TargetUnavailable, UserError

#: Bump when the meaning of a cached record or reference changes.
SCHEMA = 1
#: Repeats of TVM's time_evaluator per measurement (median reported).
LATENCY_REPEATS = 5


class Skip(Exception):
    """A combination that cannot be measured; its reason is recorded, never a pass."""


def _key(workload, dtype, target, order) -> dict:
    return {
        "schema": SCHEMA,
        "tvm": compat.build_id(),
        "workload": workload.id,
        "chain": cache.digest(workload.chain),
        "dtype": dtype,
        "target": target.identity(),
        "order": order,
        "schedule": schedules.schedule_digest(order, workload.id, dtype, records_target(target)),
    }


def records_target(target) -> str:
    """Whose tuning records the ``tuned`` order replays: Hexagon targets replay llvm's."""
    return getattr(target, "tuning_records_of", target.name)


def entry_dir(workload_id: str, dtype: str, target_name: str, order: str = "default") -> Path:
    """Where the measurement of this combination lives in the cache (no TVM import)."""
    workload = workloads.get(workload_id)
    target = targets.get(target_name)
    schedules.check_order(order)
    workloads.check_dtype(dtype)
    label = f"{workload_id}-{dtype}-{target_name}-{order}"
    return cache.entry("measure", label, _key(workload, dtype, target, order))


def reference_arrays(workload, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The float64 reference and its magnitude (abs-input) companion, cached by op chain."""
    key = {"schema": SCHEMA, "chain": workload.chain, "id": workload.id, "dtype": dtype}
    where = cache.entry("reference", f"{workload.id}-{dtype}", key)
    ref, mag = cache.read_array(where / "reference.npy"), cache.read_array(where / "magnitude.npy")
    if ref is None or mag is None:
        inputs = workloads.make_inputs(workload, dtype)
        ref = reference.evaluate(workload.chain, inputs)
        mag = reference.evaluate_magnitude(workload.chain, inputs)
        cache.write_array(where / "reference.npy", ref)
        cache.write_array(where / "magnitude.npy", mag)
    return ref, mag


def measure(workload_id: str, dtype: str, target_name: str, order: str = "default") -> dict:
    """The record of one combination: computed on first use, then read from the cache.

    The record has ``status`` ("ok", "skipped" or "failed"), ``reason`` and, when ok,
    ``metrics`` (see :func:`suite.metrics.accuracy_metrics`), ``latency_s`` (median),
    ``latency_samples_s``, ``gflops`` and ``compile_s``.
    """
    where = entry_dir(workload_id, dtype, target_name, order)
    record = cache.read_json(where / "record.json")
    if record is None and (reason := unavailable(target_name)):
        # Not cached: measured once the target is usable here (tools installed, a GPU present).
        return {"workload": workload_id, "dtype": dtype, "target": target_name, "order": order,
                "status": "skipped", "reason": reason}
    if record is None:
        record = _compute(workloads.get(workload_id), dtype, targets.get(target_name), order, where)
        cache.write_json(where / "record.json", record)
    return record


def unavailable(target_name: str) -> str | None:
    """Why a target cannot run on this machine (missing tools, no GPU), or None."""
    return targets.get(target_name).unavailable()


def measure_many(combos, jobs: int | None = None) -> dict:
    """Measure several combinations in parallel processes (builds and emulated runs take minutes).

    Each combination not yet cached is measured by its own ``python`` process (at most ``jobs`` at a
    time) that fills the shared cache (writes are atomic); returns {combo: record}.
    """
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    combos = [tuple(c) for c in combos]
    pending = [c for c in combos
               if cache.read_json(entry_dir(*c) / "record.json") is None and not unavailable(c[2])]
    code = "import sys; from suite import measurement; measurement.measure(*sys.argv[1:])"

    def one(combo):
        subprocess.run([sys.executable, "-c", code, *combo], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=False)

    # A GPU's kernels are timed one at a time (below, in order); the rest in parallel processes.
    parallel = [c for c in pending if not getattr(targets.get(c[2]), "exclusive", False)]
    if parallel:
        with ThreadPoolExecutor(max(1, min(jobs or os.cpu_count() or 1, len(parallel)))) as pool:
            list(pool.map(one, parallel))
    # Anything a worker could not record is measured here, so its failure is recorded the same way.
    return {c: measure(*c) for c in combos}


def _compute(workload, dtype, target, order, where: Path) -> dict:
    record = {
        "workload": workload.id,
        "dtype": dtype,
        "target": target.name,
        "order": order,
        "tvm_version": compat.installed_version(),
        "flops": workload.flops,
    }
    started = time.perf_counter()
    try:
        func = schedules.apply(workloads.prim_func(workload, dtype), order, workload.id, dtype,
                               records_target(target))
        target.build(target.prepare(func, order), where / "kernel.so")
    except UserError:  # a missing tool (clang, ld.lld) is the user's to fix, not data
        raise
    except (schedules.OrderNotApplicable, TargetUnavailable) as err:
        return {**record, "status": "skipped", "reason": str(err)}
    except compat.TVMUnavailable:
        raise
    except Exception as err:  # a TVM build failure is data about that TVM build
        return {**record, "status": "failed", "reason": f"build failed: {_first_line(err)}"}
    record["compile_s"] = time.perf_counter() - started
    if hasattr(target, "codegen_metrics"):  # Hexagon: code size and instruction counts
        record["codegen"] = target.codegen_metrics(where / "kernel.so")
    if not getattr(target, "executes", True):
        return {**record, "status": "ok", "reason": "compile-only target", "compile_only": True}

    inputs = workloads.make_inputs(workload, dtype)
    try:
        kernel = target.load(where / "kernel.so", inputs, workload.output_shape, dtype)
        output = kernel.output()
        samples = kernel.time(repeat=LATENCY_REPEATS)
    except Exception as err:
        return {**record, "status": "failed", "reason": f"run failed: {_first_line(err)}"}
    cache.write_array(where / "output.npy", output)

    ref, mag = reference_arrays(workload, dtype)
    k = reference.accumulation_length(workload.chain)
    if getattr(target, "emulated", False):  # emulated time is not latency: never latency_s
        return {**record, "status": "ok", "reason": "",
                "metrics": metrics.accuracy_metrics(output, ref, mag, k, dtype),
                "accumulation_length": k, "emulated_s": float(samples[0])}
    latency = float(np.median(samples))
    return {
        **record,
        "status": "ok",
        "reason": "",
        "metrics": metrics.accuracy_metrics(output, ref, mag, k, dtype),
        "accumulation_length": k,
        "latency_s": latency,
        "latency_samples_s": samples,
        "gflops": workload.flops / latency / 1e9,
    }


def divergence(workload_id: str, dtype: str, target_name: str, order: str,
               against: str = "default") -> dict:
    """How far the output of ``order`` is from that of ``against`` on the same target.

    ``differ_fraction`` and ``max_ulp_distance`` compare the two outputs bit for bit;
    ``exceeds_bound`` is 1.0 when either output uses more than the worst-case rounding bound
    (bound fraction above 1), the sign of an error no summation order explains.
    Raises Skip when either combination has no output.
    """
    if order == against:
        raise Skip(f"{order} against itself")
    where = entry_dir(workload_id, dtype, target_name, order)
    path = where / f"divergence-{against}.json"
    stored = cache.read_json(path)
    if stored is not None:
        return stored
    ours = measure(workload_id, dtype, target_name, order)
    theirs = measure(workload_id, dtype, target_name, against)
    result = {
        **metrics.divergence(output(workload_id, dtype, target_name, order),
                             output(workload_id, dtype, target_name, against)),
        "exceeds_bound": float(max(ours["metrics"]["bound_fraction"],
                                   theirs["metrics"]["bound_fraction"]) > 1.0),
        "against": against,
    }
    cache.write_json(path, result)
    return result


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    # TVM errors put the message last, after a traceback of C++ frames.
    return (lines[-1] if lines else type(err).__name__)[:300]


def load_kernel(workload_id: str, dtype: str, target_name: str, order: str = "default"):
    """A ready-to-run kernel of a measured combination, for timing; raises Skip otherwise."""
    record = measure(workload_id, dtype, target_name, order)
    if record["status"] != "ok":
        raise Skip(record["reason"])
    workload = workloads.get(workload_id)
    target = targets.get(target_name)
    where = entry_dir(workload_id, dtype, target_name, order)
    inputs = workloads.make_inputs(workload, dtype)
    return target.load(where / "kernel.so", inputs, workload.output_shape, dtype)


def output(workload_id: str, dtype: str, target_name: str, order: str = "default") -> np.ndarray:
    """The saved output of a measured combination."""
    record = measure(workload_id, dtype, target_name, order)
    if record["status"] != "ok" or record.get("compile_only"):
        raise Skip(record["reason"])
    return cache.read_array(entry_dir(workload_id, dtype, target_name, order) / "output.npy")
