"""One measurement: a combination built, run and scored against float64, cached.

Three stages, each taking the result of the one before, each failure a field of its result (as
TVM MetaSchedule's builder and runner return BuilderResult and RunnerResult):

- :func:`build`: the combination scheduled and compiled -> :class:`BuiltKernel`;
- :func:`run`: the kernel run on the workload's inputs (and by its IEEE twin, where the target
  has one) -> :class:`RunOutputs`: outputs, emulated seconds, execution counts;
- :func:`score`: the outputs against the float64 reference -> :class:`~suite.core.record.Record`.

:func:`measure` runs them once per TVM build and keeps the result as one cache entry (record,
kernel and outputs valid together: :mod:`suite.core.entries`). Latency is not part of it: it is
timed afresh on every run (:mod:`suite.core.timing`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from suite import cache, floats
from suite.compat import release
from suite.core import (
    entries,
    execution,
    metrics,
    quantized,
    reference,
    run_place,
    runstore,
    schedules,
    tuning_records,
    workloads,
)
from suite.core.combo import SCHEMA, Combo
from suite.core.entries import OUTPUT_FILE, TWIN_FILE

#: An int8 combination's int32 accumulator, from its accumulator kernel (suite.core.quantized).
ACCUMULATOR_FILE = "accumulator.npy"
from suite.core.record import Kind, Record, Status
from suite.errors import Skipped, UserError
from suite.targets import llvm
from suite.targets.base import Mode, Output

KIND_OF_MODE = {Mode.NATIVE: Kind.LATENCY, Mode.EMULATED: Kind.EMULATED, Mode.COMPILE_ONLY: Kind.COMPILE_ONLY}
REFERENCE_FILES = ("reference.npy", "magnitude.npy")


def measure(combo: Combo, verify=()) -> Record:
    """The record of one combination: computed on first use, then read from the cache (measured
    again when a part named in ``verify`` is damaged)."""
    record = entries.cached(combo, verify)
    if record is not None:
        return record
    if reason := combo.target.unavailable() or combo.target.dtype_unavailable(combo.dtype):
        # Not cached: measured once the target is usable here (tools installed, a GPU present).
        return Record(*combo.ids, status=Status.SKIPPED, reason=reason)
    staged = cache.staging_dir(combo.entry)
    try:
        built = build(combo, staged / combo.target.KERNEL_FILE)
        ran = run(built) if built.failure is None and combo.target.mode is not Mode.COMPILE_ONLY else None
        record = score(built, ran)
        outputs = ({OUTPUT_FILE: ran.ran.output, TWIN_FILE: ran.ran.twin, ACCUMULATOR_FILE: ran.accumulator}
                   if ran is not None else {})
        entries.publish(combo, record, staged, outputs)
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # gone already once published
    return record


def note_tvm_build(place: run_place.Place | None = None) -> None:
    """Keep, beside the results of the running asv benchmark (or at ``place``: `tvm-suite run`, before
    asv), what its TVM was built with (its LLVM): the gate does not compare kernels of two LLVMs as
    if one compiler had built them; and this machine's CPU (its dot-product features, read now: an
    int8 kernel's tuned order depends on them). Every benchmark's setup calls it; only the first of a
    run and commit imports TVM."""
    try:
        runstore.note_build(lambda: {"tvm": release.installed_version(), "build_id": release.build_id(),
                                     "llvm": release.llvm_build(), "cpu": llvm.host_cpu_facts()}, place)
    except release.TVMUnavailable:
        pass  # the combination's own record says why


def measure_many(combos, jobs: int | None = None) -> dict[Combo, Record]:
    """Measure several combinations in parallel processes (builds and emulated runs take minutes).

    Each combination not yet cached is measured by its own ``python`` process (at most ``jobs`` at a
    time) that fills the shared cache; targets that are ``exclusive`` (a GPU) are measured one at
    a time, below. (:func:`suite.core.cluster.measure_many` sends them to a Dask cluster first.)
    Returns {combo: record}.
    """
    combos = list(dict.fromkeys(combos))
    pending = [c for c in combos if entries.cached(c) is None and not c.target.unavailable()
               and not c.target.dtype_unavailable(c.dtype) and not c.target.exclusive]
    code = "import sys; from suite.core import measurement as m; m.measure(m.Combo.resolve(*sys.argv[1:]))"

    def one(combo):
        subprocess.run([sys.executable, "-c", code, *combo.ids], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=False)

    if pending:
        with ThreadPoolExecutor(max(1, min(jobs or os.cpu_count() or 1, len(pending)))) as pool:
            list(pool.map(one, pending))
    # Anything a worker could not record is measured here, so its failure is recorded the same way.
    return {c: measure(c) for c in combos}


# ----------------------------------------------------------------------------- the stages


@dataclass(frozen=True)
class BuiltKernel:
    """What :func:`build` made of a combination: the kernel (:class:`suite.core.execution.Built`),
    or the failure that left none, and what the combination adds to it."""

    combo: Combo
    kernel: execution.Built
    tvm_version: str
    tuned_from: str | None = None  #: order tuned: the target whose tuning record was replayed
    compile_s: float | None = None  #: scheduling and compiling
    failure: execution.Failure | None = None


@dataclass(frozen=True)
class RunOutputs:
    """What :func:`run` got from a built kernel (:class:`suite.core.execution.Ran`), with the
    packet floor of its workload where the target counts packets."""

    built: BuiltKernel
    ran: execution.Ran | None = None
    counts: dict | None = None  #: what the emulated call executed (QEMU's counters), and the packet floor
    failure: execution.Failure | None = None
    accumulator: np.ndarray | None = None  #: int8: the int32 accumulator of the same kernel's blocks


def build(combo: Combo, kernel_path: Path) -> BuiltKernel:
    """Schedule the combination's PrimFunc in its loop order and compile it to ``kernel_path``
    (:func:`suite.core.execution.build`). A build TVM refuses is a failure of that TVM build; a
    missing tool or TVM is the user's to fix (raised, not data)."""
    workload, dtype, target, order = combo.workload, combo.dtype, combo.target, combo.order
    tvm_version = release.installed_version()
    tuned_from = None
    if order == "tuned":  # whose record replays: the first of the target's records_from with one
        tuned_from = tuning_records.records_target(target.records_from, dtype, workload.id)
    started = time.perf_counter()
    try:
        func = schedules.apply(workloads.prim_func(workload, dtype), order, workload.id, dtype,
                               (tuned_from,) if tuned_from else target.records_from)
    except (UserError, release.TVMUnavailable):
        raise
    except Exception as err:
        failure = execution.failure_of(execution.Stage.BUILD, err)
        return BuiltKernel(combo, execution.Built(target, kernel_path, failure=failure), tvm_version, tuned_from,
                           failure=failure)
    scheduled_s = time.perf_counter() - started
    kernel = execution.build(target, func, kernel_path, order)
    if kernel.failure is not None:
        return BuiltKernel(combo, kernel, tvm_version, tuned_from, failure=kernel.failure)
    return BuiltKernel(combo, kernel, tvm_version, tuned_from, scheduled_s + kernel.compile_s)


def run(built: BuiltKernel) -> RunOutputs:
    """Run a built kernel once on the workload's inputs (:func:`suite.core.execution.run`): its
    output, emulated seconds and execution counts where the target has them, and the output of its
    IEEE twin where it has one. Anything the run raises is a failure of the run."""
    combo = built.combo
    workload, dtype, target = combo.workload, combo.dtype, combo.target
    inputs = workloads.make_inputs(workload, dtype)
    arguments = [*inputs, Output(tuple(workload.output_shape), workloads.output_dtype(dtype))]
    ran = execution.run(built.kernel, arguments, timed=True)
    if ran.failure is not None:
        return RunOutputs(built, ran, failure=ran.failure)
    counts = None
    if ran.counts:
        floor = target.packet_floor(workloads.multiply_accumulates(workload.chain), dtype)
        counts = {**ran.counts, **({"packet_floor": floor} if floor else {})}
    accumulator = None
    if dtype in workloads.INTEGER_DTYPES:
        accumulator, failure = _accumulator(combo, inputs, built.kernel.path.with_name("accumulator.so"))
        if failure is not None:
            return RunOutputs(built, ran, counts, failure=failure)
    return RunOutputs(built, ran, counts, accumulator=accumulator)


def _accumulator(combo: Combo, inputs, path: Path) -> tuple[np.ndarray | None, execution.Failure | None]:
    """An int8 combination's accumulator: the kernel's blocks up to it (suite.core.quantized.
    accumulator_func), scheduled in the combination's order, built and run on the same inputs. The
    file is removed: the record vouches for the array alone."""
    workload = combo.workload
    try:
        func = schedules.apply(quantized.accumulator_func(workload.chain), combo.order, workload.id, combo.dtype,
                               combo.target.records_from, accumulator=True)
    except (UserError, release.TVMUnavailable):
        raise
    except Exception as err:
        return None, execution.failure_of(execution.Stage.BUILD, err)
    try:
        kernel = execution.build(combo.target, func, path, combo.order)
        if kernel.failure is not None:
            return None, kernel.failure
        found = quantized.plan(workload.chain)
        used = [inputs[i] for i in (found.data, found.weight, found.bias) if i is not None]
        ran = execution.run(kernel, [*used, Output(tuple(workload.output_shape), quantized.ACCUMULATOR_DTYPE)],
                            twin=False)
        return (None, ran.failure) if ran.failure is not None else (ran.output, None)
    finally:
        path.unlink(missing_ok=True)


def score(built: BuiltKernel, ran: RunOutputs | None) -> Record:
    """The record of a combination: the failure of its build or run, the build's metrics alone on
    a compile-only target (``ran`` None), else the accuracy of its outputs against float64."""
    combo = built.combo
    failure = built.failure or (ran.failure if ran is not None else None)
    if failure is not None:  # a record that ends before an output keeps nothing of the build
        return Record(*combo.ids, status=failure.status, reason=failure.words(), tvm_version=built.tvm_version,
                      flops=combo.workload.flops, tuned_from=built.tuned_from)
    built_fields = dict(kind=KIND_OF_MODE[combo.target.mode], tvm_version=built.tvm_version,
                        flops=combo.workload.flops, compile_s=built.compile_s, codegen=built.kernel.codegen,
                        tuned_from=built.tuned_from, code=built.kernel.code)
    if ran is None:
        return Record(*combo.ids, status=Status.OK, reason="compile-only target", **built_fields)
    if combo.dtype in workloads.INTEGER_DTYPES:  # judged exactly against the integer oracle
        oracle = quantized.evaluate(combo.workload.chain, workloads.make_inputs(combo.workload, combo.dtype))
        return Record(*combo.ids, status=Status.OK, **built_fields, emulated_s=ran.ran.emulated_s,
                      counts=ran.counts, metrics=quantized.metrics(ran.ran.output, ran.accumulator, oracle))
    ref, mag = reference_arrays(combo.workload, combo.dtype)
    k = reference.accumulation_length(combo.workload.chain)
    output, twin = ran.ran.output, ran.ran.twin
    return Record(*combo.ids, status=Status.OK, **built_fields, emulated_s=ran.ran.emulated_s, counts=ran.counts,
                  accumulation_length=k,
                  metrics=metrics.accuracy_metrics(output, ref, mag, k, combo.dtype),
                  twin_metrics=(metrics.accuracy_metrics(twin, ref, mag, k, combo.dtype) if twin is not None else None))


def reference_entry(workload, dtype: str) -> Path:
    """The cache directory of a reference (``reference.npy``, ``magnitude.npy``)."""
    key = {"schema": SCHEMA, "chain": workload.chain, "id": workload.id, "dtype": dtype}
    return cache.entry("reference", f"{workload.id}-{dtype}", key)


def reference_arrays(workload, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The float64 reference and its magnitude (abs-input) companion, cached by op chain (a
    verified entry: damaged, it is computed again)."""
    where = reference_entry(workload, dtype)
    found = cache.load_entry(where, REFERENCE_FILES)
    arrays = [cache.read_array(found[name]) for name in REFERENCE_FILES] if found else [None]
    if any(a is None or a.shape != tuple(workload.output_shape) for a in arrays):
        inputs = workloads.make_inputs(workload, dtype)
        arrays = [reference.evaluate(workload.chain, inputs), reference.evaluate_magnitude(workload.chain, inputs)]
        cache.store_entry(where, {name: lambda tmp, a=array: np.save(tmp, a, allow_pickle=False)
                                  for name, array in zip(REFERENCE_FILES, arrays)})
    return arrays[0], arrays[1]


# ----------------------------------------------------------------------------- using a measurement


def _require_output(combo: Combo, verify=(OUTPUT_FILE,)) -> Record:
    record = measure(combo, verify)
    if not record.has_output:
        raise Skipped(record.reason if not record.ok else f"{combo.target.name} is compile-only: no output")
    return record


def output(combo: Combo) -> np.ndarray:
    """The saved output of a measured combination; Skipped when it has none."""
    return _part(combo, OUTPUT_FILE)


def _part(combo: Combo, name: str) -> np.ndarray:
    _require_output(combo, verify=(name,))
    array = cache.read_array(combo.entry / name)
    if array is None:  # removed since measure() checked it
        raise Skipped(f"the cached {name} of {combo.label} vanished; measure it again")
    return floats.as_saved(array, workloads.output_dtype(combo.dtype))


def load_kernel(combo: Combo):
    """A ready-to-run kernel of a measured combination, for timing; Skipped otherwise."""
    _require_output(combo, verify=(combo.target.KERNEL_FILE,))
    workload = combo.workload
    inputs = workloads.make_inputs(workload, combo.dtype)
    return combo.target.load(combo.entry / combo.target.KERNEL_FILE, inputs, workload.output_shape,
                             workloads.output_dtype(combo.dtype))


def divergence(combo: Combo, against: str = "default") -> dict:
    """How the output of ``combo`` differs from that of the ``against`` order on the same target.

    ``differ_fraction`` and ``max_ulp_distance`` compare the two outputs bit for bit (information:
    any reordering of a sum changes bits); ``error_ratio``, ``bias_shift`` and their z-scores
    compare their errors against float64 (:func:`suite.core.metrics.error_shift`: what tells a
    reordering from different arithmetic); ``exceeds_bound`` is 1.0 when either output uses more
    than the probabilistic rounding bound. Cached under the digests of both outputs, with the
    maps of where they differ (:func:`difference_maps`). Raises Skipped when either has no output.
    """
    return _divergence_entry(combo, against)[0]


def difference_maps(combo: Combo, against: str = "default") -> dict:
    """Mean |diff| from ``against`` per output channel and over H x W (see divergence())."""
    path = _divergence_entry(combo, against)[1]
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def tracked_divergence(combo: Combo) -> dict:
    """The divergence from ``default`` that asv tracks; its maps (.npz) are kept with the run, where
    a report over asv results finds them (asv keeps numbers only; see suite.core.runstore)."""
    result, maps = _divergence_entry(combo, "default")  # once: it reads both outputs whole, to check them
    if (found := run_place.current()) is not None:
        cache.write_file(found.file(run_place.relative("maps", combo.ids)), lambda tmp: shutil.copyfile(maps, tmp))
    return result


def _divergence_entry(combo: Combo, against: str) -> tuple[dict, Path]:
    if combo.order == against:
        raise Skipped(f"{combo.order} against itself")
    if combo.dtype in workloads.INTEGER_DTYPES:
        raise Skipped(f"{combo.dtype} outputs are judged exactly against the integer oracle in every order "
                      "(exact_fraction, accumulator_mismatches), not by their divergence from another order")
    base = combo.with_order(against)
    ours, theirs = _require_output(combo), _require_output(base)
    key = {"schema": SCHEMA, "ours": ours.parts[OUTPUT_FILE], "theirs": theirs.parts[OUTPUT_FILE],
           "twins": [ours.parts.get(TWIN_FILE), theirs.parts.get(TWIN_FILE)],
           "bounds": [ours.metrics["prob_bound_fraction"], theirs.metrics["prob_bound_fraction"]]}
    where = cache.entry("divergence", f"{combo.label}-vs-{against}", key)
    found = cache.load_entry(where, ("divergence.json", "maps.npz"))
    stored = cache.read_json(found["divergence.json"]) if found else None
    if isinstance(stored, dict):
        return stored, where / "maps.npz"
    a, b = output(combo), output(base)
    ref, _ = reference_arrays(combo.workload, combo.dtype)
    result = {
        **metrics.divergence(a, b),
        **metrics.error_shift(a, b, ref),
        "exceeds_bound": float(max(ours.metrics["prob_bound_fraction"], theirs.metrics["prob_bound_fraction"]) > 1),
        "against": against,
    }
    if TWIN_FILE in ours.parts and TWIN_FILE in theirs.parts:  # the same pair, IEEE arithmetic
        twins = [_part(c, TWIN_FILE) for c in (combo, base)]
        result.update({f"twin_{k}": v for k, v in metrics.error_shift(twins[0], twins[1], ref).items()})
    maps = metrics.difference_maps(a, b, combo.workload.layout)
    cache.store_entry(where, {"maps.npz": lambda tmp: np.savez_compressed(tmp, **maps),
                              "divergence.json": lambda tmp: Path(tmp).write_text(json.dumps(result))})
    return result, where / "maps.npz"
