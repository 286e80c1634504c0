"""One measurement: workload -> schedule -> build -> run -> reference -> metrics, cached.

The measurement of a :class:`~suite.core.combo.Combo` is computed once per TVM build and kept in
its cache entry (latency is not: it is timed afresh on every run, see :mod:`suite.core.timing`): ``record.json`` (a :class:`~suite.core.record.Record`), the compiled kernel and
``output.npy``. The entry is one unit: it is assembled in a staging directory and published with
one rename, and the record lists the sha256 of every file beside it, so a missing or damaged part
makes the whole entry count as absent and be measured again, never a wrong number.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from suite import cache, compat
from suite.core import metrics, reference, runstore, schedules, tuning, workloads
from suite.core.combo import SCHEMA, Combo
from suite.core.record import Kind, Record, Status
from suite.errors import Skipped, UserError, first_line
from suite.targets.base import Mode

RECORD_FILE, OUTPUT_FILE, TWIN_FILE = "record.json", "output.npy", "ieee_twin.npy"
REFERENCE_FILES = ("reference.npy", "magnitude.npy")
KIND_OF_MODE = {Mode.NATIVE: Kind.LATENCY, Mode.EMULATED: Kind.EMULATED, Mode.COMPILE_ONLY: Kind.COMPILE_ONLY}


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


# ----------------------------------------------------------------------------- the cache entry


def cached(combo: Combo, verify=()) -> Record | None:
    """The record of a complete cache entry, or None (absent, a part missing, or a part named in
    ``verify`` not the bytes the record vouches for). Looking a record up stats its parts; the
    parts a caller reads (``output.npy``, the kernel) are checked by their sha256 when read."""
    try:
        record = Record.from_json(cache.read_sealed_json(combo.entry / RECORD_FILE))
    except ValueError:
        return None
    if record.ids != combo.ids:
        return None
    for name, digest in record.parts.items():
        if not (combo.entry / name).is_file():
            return None
        if name in verify and cache.file_digest(combo.entry / name) != digest:
            return None
    return record


#: The reason of a record whose measurement was lost with the cluster workers that ran it (they died
#: more often than the scheduler allows, see suite.core.cluster): a failure of the run that lost it,
#: not data about TVM, so the next run measures it again (forget_lost).
LOST = "lost on the cluster: "


def is_lost(record: Record | None) -> bool:
    return record is not None and record.status is Status.FAILED and record.reason.startswith(LOST)


def forget_lost(combo: Combo) -> bool:
    """Remove the entry of a combination whose measurement was lost on a cluster; True if removed.
    A lost record holds no measurement, so nothing measured is lost."""
    if not is_lost(cached(combo)):
        return False
    cache.remove_dir(combo.entry)
    return True


def publish_measured(combo: Combo, record: Record, files: dict[str, bytes]) -> Record:
    """Publish an entry measured elsewhere (a cluster worker): its record and the bytes of the
    files the record vouches for. An intact entry already here is kept as it is (and returned);
    files that are not the bytes the record names are refused (ValueError)."""
    if record.ids != combo.ids:
        raise ValueError(f"a record of {' '.join(record.ids)} is not one of {combo.label}")
    if set(files) != set(record.parts):
        raise ValueError(f"{combo.label}: files {sorted(files)} are not the parts {sorted(record.parts)}")
    for name, data in files.items():
        if Path(name).name != name or hashlib.sha256(data).hexdigest() != record.parts[name]:
            raise ValueError(f"{combo.label}: {name} is not the file its record names")
    if (kept := cached(combo)) is not None and not is_lost(kept):
        return kept
    staged = cache.staging_dir(combo.entry)
    try:
        for name, data in files.items():
            (staged / name).write_bytes(data)
        _publish(combo, record, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # gone already once published
    return record


def _publish(combo: Combo, record: Record, staged: Path) -> None:
    if not record.ok:  # a failed or skipped combination keeps no files beside its record
        shutil.rmtree(staged)
        staged.mkdir()
    record.parts = {p.name: cache.file_digest(p) for p in sorted(staged.iterdir()) if p.is_file()}
    cache.write_sealed_json(staged / RECORD_FILE, record.to_json())
    cache.publish_dir(staged, combo.entry)


def measure(combo: Combo, verify=()) -> Record:
    """The record of one combination: computed on first use, then read from the cache (measured
    again when a part named in ``verify`` is damaged)."""
    record = cached(combo, verify)
    if record is not None:
        return record
    if reason := combo.target.unavailable():
        # Not cached: measured once the target is usable here (tools installed, a GPU present).
        return Record(*combo.ids, status=Status.SKIPPED, reason=reason)
    staged = cache.staging_dir(combo.entry)
    try:
        record = _compute(combo, staged)
        _publish(combo, record, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # gone already once published
    return record


def note_tvm_build() -> None:
    """Keep, beside the results of the running asv benchmark, what its TVM was built with (its
    LLVM): the gate does not compare kernels of two LLVMs as if one compiler had built them.
    Every benchmark's setup calls it; only the first of a run and commit imports TVM."""
    try:
        runstore.note_build(lambda: {"tvm": compat.installed_version(), "build_id": compat.build_id(),
                                     "llvm": compat.llvm_build()})
    except compat.TVMUnavailable:
        pass  # the combination's own record says why


def measure_many(combos, jobs: int | None = None) -> dict[Combo, Record]:
    """Measure several combinations in parallel processes (builds and emulated runs take minutes).

    Each combination not yet cached is measured by its own ``python`` process (at most ``jobs`` at a
    time) that fills the shared cache; targets that are ``exclusive`` (a GPU) are measured one at
    a time, below. (:func:`suite.core.cluster.measure_many` sends them to a Dask cluster first.)
    Returns {combo: record}.
    """
    combos = list(dict.fromkeys(combos))
    pending = [c for c in combos if cached(c) is None and not c.target.unavailable() and not c.target.exclusive]
    code = "import sys; from suite.core import measurement as m; m.measure(m.Combo.resolve(*sys.argv[1:]))"

    def one(combo):
        subprocess.run([sys.executable, "-c", code, *combo.ids], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=False)

    if pending:
        with ThreadPoolExecutor(max(1, min(jobs or os.cpu_count() or 1, len(pending)))) as pool:
            list(pool.map(one, pending))
    # Anything a worker could not record is measured here, so its failure is recorded the same way.
    return {c: measure(c) for c in combos}


def _compute(combo: Combo, staged: Path) -> Record:
    workload, dtype, target, order = combo.workload, combo.dtype, combo.target, combo.order
    record = Record(*combo.ids, status=Status.OK, kind=KIND_OF_MODE[target.mode],
                    tvm_version=compat.installed_version(), flops=workload.flops)
    kernel_path = staged / target.KERNEL_FILE
    if order == "tuned":  # whose record replays: the first of the target's records_from with one
        record.tuned_from = tuning.records_target(target.records_from, dtype, workload.id)
    started = time.perf_counter()
    try:
        func = schedules.apply(workloads.prim_func(workload, dtype), order, workload.id, dtype,
                               (record.tuned_from,) if record.tuned_from else target.records_from)
        target.build(target.prepare(func, order), kernel_path)
    except (UserError, compat.TVMUnavailable):  # a missing tool or TVM is the user's to fix, not data
        raise
    except Skipped as err:
        return _ended(record, Status.SKIPPED, str(err))
    except Exception as err:  # a TVM build failure is data about that TVM build
        return _ended(record, Status.FAILED, f"build failed: {first_line(err)}")
    record.compile_s = time.perf_counter() - started
    record.codegen = target.codegen_metrics(kernel_path)
    if target.mode is Mode.COMPILE_ONLY:
        record.reason = "compile-only target"
        return record

    inputs = workloads.make_inputs(workload, dtype)
    try:
        kernel = target.load(kernel_path, inputs, workload.output_shape, dtype)
        output = kernel.output()
        if target.mode is Mode.EMULATED:  # emulated time is not latency: one run, never latency_s
            record.emulated_s = float(kernel.time(repeat=1)[0])
        if getattr(kernel, "counts", None):
            floor = target.packet_floor(workloads.multiply_accumulates(workload.chain), dtype)
            record.counts = {**kernel.counts, **({"packet_floor": floor} if floor else {})}
    except Skipped as err:
        return _ended(record, Status.SKIPPED, str(err))
    except Exception as err:
        return _ended(record, Status.FAILED, f"run failed: {first_line(err)}")
    cache.write_array(staged / OUTPUT_FILE, output)

    ref, mag = reference_arrays(workload, dtype)
    record.accumulation_length = reference.accumulation_length(workload.chain)
    record.metrics = metrics.accuracy_metrics(output, ref, mag, record.accumulation_length, dtype)
    if target.ieee_twin:
        try:
            twin = _ieee_twin_output(combo, kernel_path, inputs, record, output)
        except Exception as err:
            return _ended(record, Status.FAILED, f"IEEE twin run failed: {first_line(err)}")
        cache.write_array(staged / TWIN_FILE, twin)
        record.twin_metrics = metrics.accuracy_metrics(twin, ref, mag, record.accumulation_length, dtype)
    return record


def _ieee_twin_output(combo: Combo, kernel_path: Path, inputs, record: Record, output: np.ndarray) -> np.ndarray:
    """The output of the same build with its HVX floating point rounded as IEEE does. A build
    without a rewritten instruction never calls the model: its twin output is its output (the
    emulation is not repeated; tests/test_ieee_twin.py runs both and compares)."""
    if (record.codegen or {}).get("rewritten") == 0:
        return output
    return combo.target.load_ieee_twin(kernel_path, inputs, combo.workload.output_shape, combo.dtype).output()


def _ended(record: Record, status: Status, reason: str) -> Record:
    """A record that ends before an output: nothing of the build is kept beside it."""
    return Record(record.workload, record.dtype, record.target, record.order, status=status, reason=reason,
                  tvm_version=record.tvm_version, flops=record.flops, tuned_from=record.tuned_from)


# ----------------------------------------------------------------------------- using a measurement


def _require_output(combo: Combo, verify=(OUTPUT_FILE,)) -> Record:
    record = measure(combo, verify)
    if not record.has_output:
        raise Skipped(record.reason if not record.ok else f"{combo.target.name} is compile-only: no output")
    return record


def output(combo: Combo) -> np.ndarray:
    """The saved output of a measured combination; Skipped when it has none."""
    return _part(combo, OUTPUT_FILE)


def ieee_twin_output(combo: Combo) -> np.ndarray:
    """The output of the combination's IEEE twin (:mod:`suite.targets.ieee_twin`); Skipped when
    its target has none."""
    if not combo.target.ieee_twin:
        raise Skipped(f"{combo.target.name} has no IEEE twin")
    return _part(combo, TWIN_FILE)


def _part(combo: Combo, name: str) -> np.ndarray:
    _require_output(combo, verify=(name,))
    array = cache.read_array(combo.entry / name)
    if array is None:  # removed since measure() checked it
        raise Skipped(f"the cached {name} of {combo.label} vanished; measure it again")
    return array


def load_kernel(combo: Combo):
    """A ready-to-run kernel of a measured combination, for timing; Skipped otherwise."""
    _require_output(combo, verify=(combo.target.KERNEL_FILE,))
    workload = combo.workload
    inputs = workloads.make_inputs(workload, combo.dtype)
    return combo.target.load(combo.entry / combo.target.KERNEL_FILE, inputs, workload.output_shape, combo.dtype)


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


def export_maps(combo: Combo, against: str, target: Path) -> Path:
    """Copy the difference maps to ``target`` (.npz), where a report over asv results finds them
    (asv keeps numbers only)."""
    source = _divergence_entry(combo, against)[1]
    cache.write_file(target, lambda tmp: shutil.copyfile(source, tmp))
    return target


def tracked_divergence(combo: Combo) -> dict:
    """The divergence from ``default`` that asv tracks; its maps are kept with the run for the
    report (see suite.core.runstore)."""
    result = divergence(combo, "default")
    if (found := runstore.current()) is not None:
        export_maps(combo, "default", found.file(runstore.relative("maps", combo.ids)))
    return result


def _divergence_entry(combo: Combo, against: str) -> tuple[dict, Path]:
    if combo.order == against:
        raise Skipped(f"{combo.order} against itself")
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
