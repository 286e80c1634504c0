"""Latency: TVM's time_evaluator samples, taken afresh on every run and kept with the run.

Builds, outputs and accuracy are cached per TVM build (:mod:`suite.core.measurement`); timings are
not, since they say how fast the kernel was *this time*. A run (``tvm-suite run`` or ``history``)
keeps the samples of every native combination in ``<run dir>/runs/<commit>/timings/`` beside
``results/``: asv's latency benchmarks report their median, and the gate tests a slowdown on the
samples themselves and can time both kernels again (:func:`remeasure`).

The timing kept is time_evaluator's, not asv's own ``time_*`` timing: it runs the kernel from C++
(no Python call per run, which dominates kernels of microseconds), batches runs to at least
``MIN_REPEAT_MS`` per sample, and times GPUs with CUDA events.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from suite import cache, compat
from suite.core import runstore, workloads
from suite.core.combo import Combo
from suite.targets.base import ModuleKernel

#: Samples per timing. A one-sided Mann-Whitney test of two sets of n samples reaches at best
#: p = 1/C(2n, n): 0.05 for n = 3, 0.0040 for n = 5, 2.9e-4 for n = 7. With n = 5, p < alpha = 0.01
#: needs the two sets apart but for one inversion (U >= 24 of 25). 7 would tolerate more noise but
#: costs 40% more: timing is most of a cached run (the untuned kernels take 0.2-1.5 s a call).
REPEATS = 5
MIN_REPEAT_MS = 20


@dataclass
class Timing:
    samples_s: list[float]
    kernel: str  #: the kernel file that was timed (its cache entry), to time it again
    tvm: str  #: compat.build_id() of the TVM that timed it

    @property
    def median(self) -> float:
        return float(np.median(self.samples_s))


def take(combo: Combo, repeats: int = REPEATS) -> Timing:
    """Time a measured native combination now (Skipped when it has no kernel to run)."""
    from suite.core import measurement

    kernel = measurement.load_kernel(combo)
    samples = kernel.time(repeat=repeats, min_repeat_ms=MIN_REPEAT_MS)
    return Timing(samples, str(combo.entry / combo.target.KERNEL_FILE), compat.build_id())


def save(run_dir: Path, commit: str, combo: Combo, timing: Timing) -> None:
    cache.write_json(runstore.path(run_dir, "timings", commit, combo.ids), asdict(timing))


def _timing_problem(value) -> str | None:
    if (not isinstance(value, dict) or set(value) != {"samples_s", "kernel", "tvm"}
            or not runstore.positive_numbers(value["samples_s"]) or not isinstance(value["kernel"], str)
            or not isinstance(value["tvm"], str)):
        return "not timing samples (samples_s: positive seconds, kernel and tvm: text)"
    return None


def load(run_dir: Path, commit: str, ids) -> Timing | None:
    """The samples a run kept of a combination; None when it kept none; DamagedRunData naming the
    file when they are damaged."""
    data = runstore.read_json(run_dir, runstore.relative("timings", ids), commit, _timing_problem)
    return Timing(**data) if data is not None else None


def for_asv(combo: Combo) -> Timing:
    """This run's timing of ``combo``: the one its run keeps (see suite.core.runstore), else taken
    now and kept there."""
    found = runstore.current()
    if found is not None and (kept := load(*found, combo.ids)) is not None:
        return kept
    timing = take(combo)
    if found is not None:
        save(*found, combo, timing)
    return timing


def other_runtime(timings: list[Timing]) -> str | None:
    """What a re-measurement of these timings is (None for kernels of the installed TVM alone):
    kernels other TVM builds compiled, re-timed in the installed TVM's runtime."""
    foreign = sorted({t.tvm for t in timings} - {compat.build_id()})
    return f"kernels of {', '.join(foreign)} re-timed in the runtime of {compat.build_id()}" if foreign else None


def gflops(combo: Combo, latency_s: float) -> float:
    return combo.workload.flops / latency_s / 1e9


def mann_whitney(before: list[float], after: list[float]) -> float:
    """One-sided p-value that ``after`` is slower than ``before`` (exact for small samples)."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(after, before, alternative="greater").pvalue)


def remeasure(ids, timings: list[Timing], repeats: int = REPEATS) -> list[list[float]] | None:
    """Time the kernels of several timings again, interleaved (A B A B ...), so that a change of
    machine load falls on all of them alike. None where any kernel cannot run here any more (gone
    from the cache, or a file this runtime cannot load).

    A kernel built by another TVM (a release history: each commit's own wheel compiled it) is loaded
    into the installed TVM's runtime, which then times every side alike. What is re-timed is each
    commit's generated code; the runtime around it (thread pool, workspace allocation) is the
    installed one's (see :func:`other_runtime`). Every TVM the suite drives exports kernels through
    tvm-ffi 0.1 (suite.history.releases), so their ``.so`` files load in one another's runtime:
    checked for kernels of 0.25.0 and 0.26.0 in 0.27.0's."""
    if not all(Path(t.kernel).is_file() for t in timings):
        return None
    combo = Combo.resolve(*ids)
    inputs = workloads.make_inputs(combo.workload, combo.dtype)
    try:
        kernels = [combo.target.load(Path(t.kernel), inputs, combo.workload.output_shape, combo.dtype)
                   for t in timings]
    except Exception:  # noqa: BLE001 - TVM raises its own error types for a module it cannot load
        return None
    if not all(isinstance(k, ModuleKernel) for k in kernels):
        return None
    samples = [[] for _ in kernels]
    for _ in range(repeats):
        for kernel, kept in zip(kernels, samples):
            kept.extend(kernel.time(repeat=1, min_repeat_ms=MIN_REPEAT_MS))
    return samples
