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

from suite import cache
from suite.compat import release
from suite.core import retimings, run_place, runstore, workloads
from suite.core.combo import Combo
from suite.core.runstore import Timing
from suite.errors import Skipped, UserError, first_line
from suite.targets.base import ModuleKernel

#: Samples per timing. A one-sided Mann-Whitney test of two sets of n samples reaches at best
#: p = 1/C(2n, n): 0.05 for n = 3, 0.0040 for n = 5, 2.9e-4 for n = 7. With n = 5, p < alpha = 0.01
#: needs the two sets apart but for one inversion (U >= 24 of 25). 7 would tolerate more noise but
#: costs 40% more: timing is most of a cached run (the untuned kernels take 0.2-1.5 s a call).
REPEATS = 5
#: Samples a side when the gate times suspects again, interleaved: it judges the 15 paired ratios
#: (suite.reporting.rules.remeasured); reports/thresholds.toml has what they give for a kernel
#: timed against itself (experiments/retime_noise.py).
RETIME_REPEATS = 15
MIN_REPEAT_MS = 20
#: The sides of a gate's re-measurement, in the order of its timings (suite.reporting.gate_result.Remeasure).
SIDES = ("baseline", "candidate")


def take(combo: Combo, repeats: int = REPEATS) -> Timing:
    """Time a measured native combination now (Skipped when it has no kernel to run)."""
    from suite.core import measurement

    kernel = measurement.load_kernel(combo)
    samples = kernel.time(repeat=repeats, min_repeat_ms=MIN_REPEAT_MS)
    return Timing(tuple(samples), kernel_name(combo), release.build_id())


def kernel_name(combo: Combo) -> str:
    """The kernel file of a measured combination by its name in the cache (``measure/<entry>/<file>``,
    relative to the cache's root): what a timing keeps, so that a run directory names no path of
    this machine and can be copied to another one."""
    return (combo.entry / combo.target.KERNEL_FILE).relative_to(cache.root()).as_posix()


def kernel_path(kept: Timing) -> Path | None:
    """Where the kernel a timing names is in this machine's cache: its name under the cache's root.
    A timing of an older run names it by an absolute path: that path where it still exists, else
    its name (the entry and the file) under this cache. None for a name that is no cache entry's."""
    path = Path(kept.kernel)
    if path.is_absolute():
        if path.is_file():
            return path
        path = Path(*path.parts[-3:])
    if ".." in path.parts or len(path.parts) != 3:
        return None
    return cache.root() / path


def _rebuilt(ids, kept: Timing) -> tuple[Path | None, str]:
    """The kernel of ``kept`` (a timing of ``ids``) rebuilt into this cache from what the timing
    keeps of its build: the TVM build that compiled it and its cache entry, whose name holds the
    digest of everything the build depends on. It is rebuilt only where both are this machine's
    now (the same TVM installed, the suite's code and tuning records the same): (its path, "") or
    (None, why it cannot be rebuilt here)."""
    from suite.core import measurement

    entry = Path(kept.kernel).parts[-2] if len(Path(kept.kernel).parts) >= 2 else kept.kernel
    installed = release.build_id()
    if kept.tvm != installed:
        return None, f"built by TVM {kept.tvm}, the installed TVM is {installed}"
    try:
        combo = Combo.resolve(*ids)
    except UserError as err:
        return None, f"this suite has no such combination ({err})"
    if combo.entry.name != entry:
        return None, "this suite's build of it is another now (its code or the tuning records changed)"
    try:
        record = measurement.measure(combo)
    except (UserError, Skipped) as err:
        return None, f"rebuilding it failed ({first_line(err)})"
    path = combo.entry / combo.target.KERNEL_FILE
    if not record.ok or not path.is_file():
        return None, f"rebuilding it failed ({record.reason or 'no kernel'})"
    return path, ""


def save(place: run_place.Place, combo: Combo, timing: Timing) -> None:
    cache.write_json(place.file(run_place.relative("timings", combo.ids)), timing.to_json())


def for_asv(combo: Combo) -> Timing:
    """This run's timing of ``combo``: the one its run keeps (see suite.core.runstore), else taken
    now and kept there."""
    found = run_place.current()
    if found is not None and (kept := runstore.own_timing(found, combo.ids)) is not None:
        return kept
    timing = take(combo)
    if found is not None:
        save(found, combo, timing)
    return timing


def other_runtime(timings: list[Timing]) -> str | None:
    """What a re-measurement of these timings is (None for kernels of the installed TVM alone):
    kernels other TVM builds compiled, re-timed in the installed TVM's runtime."""
    foreign = sorted({t.tvm for t in timings} - {release.build_id()})
    return f"kernels of {', '.join(foreign)} re-timed in the runtime of {release.build_id()}" if foreign else None


def gflops(combo: Combo, latency_s: float) -> float:
    return combo.workload.flops / latency_s / 1e9


def remeasure(series, timings: list[Timing], repeats: int = RETIME_REPEATS) -> tuple[list[list[float]], str | None] | str:
    """Time the kernels of several timings of ``series`` (a combination: its ``ids``) again,
    interleaved (A B, B A, A B ...) and on the same arrays, so that a change of machine load, or of
    where the arrays lie in memory, falls on all of them alike: (the new samples of each, what was
    done to time them: :func:`other_runtime`, kernels rebuilt), or why they cannot be timed here
    (one this runtime cannot load). This is the gate's ``remeasure``.

    A kernel gone from the cache (a run directory copied to another machine, a cache cleared) is
    rebuilt from what its timing keeps of its build where the same TVM and suite are installed
    (:func:`_rebuilt`), and the note says so; where it cannot be, the answer is a
    :class:`suite.core.retimings.KeptSamples` saying why: the gate judges the suspect on its kept
    samples.

    A kernel built by another TVM (a release history: each commit's own wheel compiled it) is loaded
    into the installed TVM's runtime, which then times every side alike. What is re-timed is each
    commit's generated code; the runtime around it (thread pool, workspace allocation) is the
    installed one's. Every TVM the suite drives exports kernels through tvm-ffi 0.1
    (suite.asv_plumbing.releases), so their ``.so`` files load in one another's runtime: checked for
    kernels of 0.25.0 and 0.26.0 in 0.27.0's."""
    found = _kernels(series.ids, timings)
    if isinstance(found, str):
        return found
    paths, rebuilt = found
    combo = Combo.resolve(*series.ids)
    inputs = workloads.make_inputs(combo.workload, combo.dtype)
    try:
        kernels = [combo.target.load(path, inputs, combo.workload.output_shape, workloads.output_dtype(combo.dtype))
                   for path in paths]
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
    notes = [note for note in (rebuilt, other_runtime(timings)) if note]
    return samples, "; ".join(notes) or None


def _side(index: int, count: int) -> str:
    return f"the {SIDES[index]}'s" if count == len(SIDES) else f"timing {index + 1}'s"


def _kernels(ids, timings: list[Timing]):
    """The kernel file of each timing in this cache, a gone one stood in for by a kernel of the same
    code (:func:`_same_code`) or else rebuilt (:func:`_rebuilt`): (their paths, what was done in
    words or ""), or a KeptSamples saying why one cannot be."""

    paths = [kernel_path(t) for t in timings]
    gone = [i for i, path in enumerate(paths) if path is None or not path.is_file()]
    rebuilt, same, cannot = [], [], {}
    for i in gone:
        path = kernel_path(timings[i])
        if path is None or not path.is_file():  # one build may serve both sides (the same TVM build)
            if (path := _same_code(ids, timings[i])) is not None:
                paths[i] = path
                same.append(i)
                continue
            path, why = _rebuilt(ids, timings[i])
            if path is None:
                cannot.setdefault(why, []).append(_side(i, len(timings)))
                continue
        paths[i] = path
        rebuilt.append(i)
    if cannot:
        return retimings.KeptSamples("; ".join(f"{' and '.join(sides)} kernel{'s are' if len(sides) > 1 else ' is'} gone from "
                                     f"the cache and cannot be rebuilt here: {why}" for why, sides in cannot.items()))

    def sides(indices) -> str:
        return (f"{' and '.join(_side(i, len(timings)) for i in indices)} "
                f"kernel{'s were' if len(indices) > 1 else ' was'} gone from the cache")

    notes = []
    if same:
        notes.append(f"{sides(same)}: a kernel of the same code (its code identity) in this cache timed instead")
    if rebuilt:
        tvm = ", ".join(sorted({timings[i].tvm for i in rebuilt}))
        notes.append(f"{sides(rebuilt)}: rebuilt from the kept build facts (TVM {tvm})")
    return paths, "; ".join(notes)


def _same_code(ids, kept: Timing) -> Path | None:
    """A kernel of this combination in this cache with the code identity ``kept`` names: the same
    machine code, built by another TVM build or for another commit (on TVM's main branch most
    commits generate every kernel alike), so timing it is timing the kernel that is gone. Where
    both sides have the same code, both time that one kernel."""
    from suite.core import entries

    return entries.with_code(ids, kept.code, Path(kept.kernel).name) if kept.code else None
