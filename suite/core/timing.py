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

from pathlib import Path

from suite import cache, compat
from suite.core import runstore, workloads
from suite.core.combo import Combo
from suite.core.runstore import Timing
from suite.targets.base import ModuleKernel

#: Samples per timing. A one-sided Mann-Whitney test of two sets of n samples reaches at best
#: p = 1/C(2n, n): 0.05 for n = 3, 0.0040 for n = 5, 2.9e-4 for n = 7. With n = 5, p < alpha = 0.01
#: needs the two sets apart but for one inversion (U >= 24 of 25). 7 would tolerate more noise but
#: costs 40% more: timing is most of a cached run (the untuned kernels take 0.2-1.5 s a call).
REPEATS = 5
MIN_REPEAT_MS = 20


def take(combo: Combo, repeats: int = REPEATS) -> Timing:
    """Time a measured native combination now (Skipped when it has no kernel to run)."""
    from suite.core import measurement

    kernel = measurement.load_kernel(combo)
    samples = kernel.time(repeat=repeats, min_repeat_ms=MIN_REPEAT_MS)
    return Timing(tuple(samples), str(combo.entry / combo.target.KERNEL_FILE), compat.build_id())


def save(place: runstore.Place, combo: Combo, timing: Timing) -> None:
    cache.write_json(place.file(runstore.relative("timings", combo.ids)), timing.to_json())


def for_asv(combo: Combo) -> Timing:
    """This run's timing of ``combo``: the one its run keeps (see suite.core.runstore), else taken
    now and kept there."""
    found = runstore.current()
    if found is not None and (kept := runstore.own_timing(found, combo.ids)) is not None:
        return kept
    timing = take(combo)
    if found is not None:
        save(found, combo, timing)
    return timing


def other_runtime(timings: list[Timing]) -> str | None:
    """What a re-measurement of these timings is (None for kernels of the installed TVM alone):
    kernels other TVM builds compiled, re-timed in the installed TVM's runtime."""
    foreign = sorted({t.tvm for t in timings} - {compat.build_id()})
    return f"kernels of {', '.join(foreign)} re-timed in the runtime of {compat.build_id()}" if foreign else None


def gflops(combo: Combo, latency_s: float) -> float:
    return combo.workload.flops / latency_s / 1e9


def remeasure(series, timings: list[Timing], repeats: int = REPEATS) -> tuple[list[list[float]], str | None] | str:
    """Time the kernels of several timings of ``series`` (a combination: its ``ids``) again,
    interleaved (A B, B A, A B ...) and on the same arrays, so that a change of machine load, or of
    where the arrays lie in memory, falls on all of them alike: (the new samples of each,
    :func:`other_runtime` of them), or why they cannot be timed here (a kernel gone from the
    cache, or one this runtime cannot load). This is the gate's ``remeasure``.

    A kernel built by another TVM (a release history: each commit's own wheel compiled it) is loaded
    into the installed TVM's runtime, which then times every side alike. What is re-timed is each
    commit's generated code; the runtime around it (thread pool, workspace allocation) is the
    installed one's. Every TVM the suite drives exports kernels through tvm-ffi 0.1
    (suite.history.releases), so their ``.so`` files load in one another's runtime: checked for
    kernels of 0.25.0 and 0.26.0 in 0.27.0's."""
    gone = [t.kernel for t in timings if not Path(t.kernel).is_file()]
    if gone:
        return f"kernel {gone[0]} is gone from the cache"
    combo = Combo.resolve(*series.ids)
    inputs = workloads.make_inputs(combo.workload, combo.dtype)
    try:
        kernels = [combo.target.load(Path(t.kernel), inputs, combo.workload.output_shape, combo.dtype)
                   for t in timings]
    except Exception as err:  # noqa: BLE001 - TVM raises its own error types for a module it cannot load
        return f"this TVM cannot load the kernels ({type(err).__name__})"
    if not all(isinstance(k, ModuleKernel) for k in kernels):
        return f"{combo.target.name} kernels are not timed natively"
    samples = [[] for _ in kernels]
    pairs = list(zip(kernels, samples))
    for round_ in range(repeats):
        # A B, then B A: whatever the kernel timed first in a round gains or loses (a warmer cache,
        # a load that starts mid-round) falls on each side alike.
        for kernel, kept in pairs if round_ % 2 == 0 else reversed(pairs):
            kept.extend(kernel.time(repeat=1, min_repeat_ms=MIN_REPEAT_MS, arguments_of=kernels[0]))
    return samples, other_runtime(timings)
