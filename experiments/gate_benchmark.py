"""The gate against the change-point detectors others use, on regressions made in the compiler and
measured on the machine where it runs (a script, not an asv benchmark).

    python experiments/gate_benchmark.py --out DIR [--combos 16] [--hexagon-combos 4] [--commits 6]
        [--seed 0] [--changes same,asserts-off,...] [--rounds 30] [--thresholds FILE]
        [--peers otava=PYTHON,edivisive=PYTHON]

1. Kernels: ``--combos`` tuned llvm combinations of the quick grid (ResNet-50's fused PrimFuncs in
   float32 and float16, the committed records replayed), drawn with ``--seed``; and
   ``--hexagon-combos`` tuned float16 conv2d combinations on ``hexagon-v68-qf`` (the seed conv2d
   and ResNet-50's, their Hexagon records replayed), executed under qemu-hexagon with the suite's
   qfloat model: packets executed, exact, in place of latency.
2. Compiler changes (`compiler_changes.py`): each combination is built by the installed TVM as it
   is (A) and with each change made in its lowering (B): loops no longer vectorised or
   parallelised, the unroll limit halved, argument checks or storage rewriting left out, two
   reduction loops swapped; on Hexagon also the back end's assembly edited (a packet more per
   packet group, the fp16 partial sums rounded to half at every add). Every kernel is compiled,
   run against the float64 reference and timed (on Hexagon: its packets counted) for real; a change
   with nothing to change in a kernel makes no series of it.
3. The measured step of each pair of kernels whose code differs: B's time over A's from
   ``--rounds`` interleaved rounds (A B, B A, ...) on the same arrays, the median of the paired
   ratios with a seeded bootstrap 95% interval, taken before anything is scored. The change's
   intent names it; the step decides what the pair is: a regression from +3% (its interval above
   1), no effect within 2%, too close to call between, an improvement below 0.98 (neither a catch
   nor a false alarm). For the deterministic values (ULP mean, packets) any growth is a regression.
4. Histories: one per change, of ``--commits`` commits; each combination runs A up to a seeded
   commit and B from it (the ``same`` change: A throughout). Each commit is measured as a run
   measures it, every combination in turn: 5 timing samples (none on Hexagon), the values of its
   kernel (on Hexagon also its error against the ``default`` order's, and its IEEE twin's: what the
   divergence marks read), its code identity, the build note.
5. Every detector on every consecutive pair of every series: the gate (:func:`gate.evaluate`, its
   suspects and changed kernels timed again for real), asv's step detection (as ``asv publish``
   runs it, threshold 0.05, and at its best threshold on this data), LNT's rule (its defaults: the
   minimum of the samples, a 1% floor, a 0.01 s absolute floor, Mann-Whitney U at 0.05, 2.576
   standard deviations; and without the absolute floor), Apache Otava and MongoDB's E-Divisive at their defaults (``--peers``: each in an
   environment of its own, `change_point_peers.py`), and code identity alone ("the code changed and
   the value got worse").

Prints, per detector, catches, misses, false alarms and undecided, recall (undecided as a miss and
as a catch) and the false-alarm rate with Wilson 95% intervals, precision and F1, over all pairs
and per measured step; writes DIR/gate_benchmark.json. Ctrl-C keeps every measurement
(DIR/measured.jsonl) and a rerun with the same options continues from it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # compiler_changes beside this script

from suite import cache, outputs  # noqa: E402
from suite.commands import common_args  # noqa: E402
from suite.compat import release  # noqa: E402
from suite.errors import Terminated, UserError, signals_raise  # noqa: E402

#: Samples per commit's timing, as a run takes them (suite.core.timing.REPEATS).
REPEATS = 5
MIN_REPEAT_MS = 20
#: A measured step from here is a regression (its interval above 1); within NO_EFFECT of 1, none.
REGRESSION_FROM = 1.03
NO_EFFECT = 0.02
#: Measured steps are reported in these bins (lower bounds).
STEP_BINS = (1.03, 1.05, 1.10, 1.50)
BOOTSTRAP = 2000
PEERS_SCRIPT = Path(__file__).with_name("change_point_peers.py")
PEERS = ("otava", "edivisive")
MACHINE = "gate-benchmark"
JOURNAL = "measured.jsonl"
RESULT = "gate_benchmark.json"
#: Written first into --out: what makes the directory this experiment's (suite.outputs.check_dir).
MARK = "gate_benchmark.mark.json"
WRITER = "experiments/gate_benchmark.py"


# ----------------------------------------------------------------------------- options


def peers_option(value: str) -> dict[str, str]:
    """--peers: detector=python of its environment, comma-separated; checked before any work."""
    found = {}
    for item in (i.strip() for i in value.split(",") if i.strip()):
        name, _, python = item.partition("=")
        if name not in PEERS or not python:
            raise argparse.ArgumentTypeError(f"{item!r}: give detector=PYTHON, the detectors {', '.join(PEERS)}")
        if name in found:
            raise argparse.ArgumentTypeError(f"{name}: given twice")
        if not (Path(python).is_file() and os.access(python, os.X_OK)):
            raise argparse.ArgumentTypeError(f"{name}: {python} is not an executable file")
        found[name] = python
    return found


def changes_option(value: str) -> list[str]:
    import compiler_changes

    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no change named")
    try:
        compiler_changes.check(names)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if "same" not in names:
        raise argparse.ArgumentTypeError("the changes must include 'same' (the A/A series)")
    return list(dict.fromkeys(names))


# ----------------------------------------------------------------------------- the journal


class Journal:
    """Every measurement, one JSON line each, appended and flushed to disk as it is made: Ctrl-C
    loses at most the one being made, and a rerun with the same options reads back what is there.
    A line cut short by a kill is the last one and is dropped; any other damage is refused."""

    def __init__(self, path: Path, options: dict):
        self.path = path
        self.found: dict[str, dict] = {}
        if path.exists():
            lines = path.read_bytes().split(b"\n")
            for n, line in enumerate(lines):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    key = entry["key"]
                except (ValueError, KeyError, TypeError):
                    if n == len(lines) - 1:  # cut short by a kill: measured again
                        break
                    raise UserError(f"{path}: line {n + 1} is damaged: remove the file to measure again") from None
                self.found[key] = entry
            kept = self.found.get("options", {}).get("value")
            if kept is not None and kept != options:
                raise UserError(f"{path} holds measurements made with other options ({_differing(kept, options)}): "
                                "give another --out, or the same options")
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for the run
        if "options" not in self.found:
            self.add("options", value=options)

    def get(self, key: str):
        return self.found.get(key)

    def add(self, key: str, **entry) -> dict:
        entry = {"key": key, **entry}
        self._file.write(json.dumps(entry, sort_keys=True).encode() + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.found[key] = entry
        return entry

    def close(self):
        self._file.close()


def _differing(kept: dict, options: dict) -> str:
    return ", ".join(f"{k} {kept.get(k)!r} there, {options.get(k)!r} now" for k in sorted(set(kept) | set(options))
                     if kept.get(k) != options.get(k))


# ----------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Variant:
    """One combination built with one change: its kernel, code identity and accuracy values."""
    ids: tuple[str, str, str, str]
    change: str
    path: Path
    code: str
    values: dict


@dataclass(frozen=True)
class Step:
    """B's time over A's, measured: the median paired ratio of interleaved rounds, its 95% interval."""
    ratio: float
    low: float
    high: float
    rounds: int

    @property
    def kind(self) -> str:
        if self.ratio >= REGRESSION_FROM and self.low > 1.0:
            return "regression"
        if abs(self.ratio - 1) < NO_EFFECT:
            return "no effect"
        if self.ratio <= 1 - NO_EFFECT:
            return "improvement"
        return "too close to call"


def choose_combos(count: int, seed: int) -> list[tuple[str, str, str, str]]:
    from suite.core import tuning_records, workloads
    from suite.core.combo import Combo

    found = []
    for workload in workloads.default_ids():
        for dtype in ("float32", "float16"):
            combo = Combo.resolve(workload, dtype, "llvm", "tuned")
            if tuning_records.records_target(combo.target.records_from, dtype, workload):
                found.append(combo.ids)
    rng = random.Random(seed)
    return sorted(rng.sample(found, min(count, len(found))))


HEXAGON = "hexagon-v68-qf"


def choose_hexagon_combos(count: int, seed: int) -> list[tuple[str, str, str, str]]:
    """The seed conv2d and ResNet-50's conv2d workloads tuned for Hexagon in float16 (drawn with
    ``seed``), but the 224x224 stem, whose every emulated variant takes minutes."""
    from suite.core import tuning_records, workloads

    found = [(w, "float16", HEXAGON, "tuned") for w in workloads.default_ids()
             if "conv2d" in w and "224x224" not in w and tuning_records.records_target((HEXAGON,), "float16", w)]
    chosen = sorted(random.Random(seed).sample(found, min(max(count - 1, 0), len(found))))
    return ([(workloads.SEED_ID, "float16", HEXAGON, "tuned")] if count else []) + chosen


def hexagon_unavailable() -> str | None:
    from suite import targets

    return targets.get(HEXAGON).unavailable()


def emulated(ids) -> bool:
    return ids[2] == HEXAGON


#: What a run keeps of an emulated kernel beside its accuracy: what the divergence marks read
#: (suite.core.measurement: its error against default's, and its IEEE twin's).
SHIFT_METRICS = ("error_ratio", "error_ratio_z", "bias_shift", "bias_shift_z")


def default_outputs(kernels: Path, ids) -> tuple[np.ndarray, np.ndarray] | str:
    """The ``default`` order's output of an emulated combination and its IEEE twin's (what its
    divergence is measured against), built and run once; or why there is none."""
    from suite.core import execution, measurement, workloads
    from suite.core.combo import Combo

    combo = Combo.resolve(*ids).with_order("default")
    place = kernels / "default" / ".".join(combo.ids)
    files = [place.with_suffix(".output.npy"), place.with_suffix(".twin.npy")]
    if all(f.is_file() for f in files):
        return tuple(np.load(f) for f in files)
    place.parent.mkdir(parents=True, exist_ok=True)
    built = measurement.build(combo, place.with_suffix(".o"))
    if built.failure is not None:
        return f"its default order failed to build: {built.failure.words()}"
    ran = execution.run(built.kernel, [*workloads.make_inputs(combo.workload, combo.dtype),
                                      measurement.Output(tuple(combo.workload.output_shape), combo.dtype)])
    if ran.failure is not None:
        return f"its default order failed to run: {ran.failure.words()}"
    for f, array in zip(files, (ran.output, ran.twin)):
        cache.write_file(f, lambda tmp, array=array: np.save(tmp, array))  # tmp ends in .npy
    return ran.output, ran.twin


def build_variant(journal: Journal, kernels: Path, ids, change) -> Variant | str:
    """The variant's kernel (built once; a rerun finds it by its journal line and code identity),
    or why there is none (the change has nothing to change here, or TVM refused the build)."""
    import compiler_changes

    from suite.core import execution, measurement, metrics, reference, workloads
    from suite.core.combo import Combo
    from suite.targets import elf

    key = f"variant|{change.name}|{'|'.join(ids)}"
    path = kernels / change.name / f"{'.'.join(ids)}.so"
    kept = journal.get(key)
    if kept is not None:
        if kept.get("none"):
            return kept["none"]
        if path.is_file() and elf.code_digest(path) == kept["code"]:
            return Variant(tuple(ids), change.name, path, kept["code"], kept["values"])
    combo = Combo.resolve(*ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        built = compiler_changes.build(combo, change, path)
    except compiler_changes.NotApplicable as why:
        journal.add(key, none=f"not applicable: {why}")
        return journal.get(key)["none"]
    if built.failure is not None:
        journal.add(key, none=f"TVM refused the build: {built.failure.words()}")
        return journal.get(key)["none"]
    arguments = [*workloads.make_inputs(combo.workload, combo.dtype),
                 measurement.Output(tuple(combo.workload.output_shape), combo.dtype)]
    ran = execution.run(built, arguments)
    if ran.failure is not None:
        journal.add(key, none=f"the kernel failed to run: {ran.failure.words()}")
        return journal.get(key)["none"]
    ref, magnitude = measurement.reference_arrays(combo.workload, combo.dtype)
    k = reference.accumulation_length(combo.workload.chain)
    values = {m: float(v) for m, v in metrics.accuracy_metrics(ran.outputs[0], ref, magnitude, k, combo.dtype).items()}
    values["accumulation_length"] = float(k)
    if emulated(ids):
        against = default_outputs(kernels, ids)
        if isinstance(against, str):
            journal.add(key, none=against)
            return against
        values["packets"] = float(ran.counts["packets"])
        values["twin_prob_bound_fraction"] = float(
            metrics.accuracy_metrics(ran.twin, ref, magnitude, k, combo.dtype)["prob_bound_fraction"])
        values.update({m: float(v) for m, v in metrics.error_shift(ran.output, against[0], ref).items()})
        values.update({f"twin_{m}": float(v) for m, v in metrics.error_shift(ran.twin, against[1], ref).items()})
    journal.add(key, code=built.code, values=values)
    return Variant(tuple(ids), change.name, path, built.code, values)


def load(variant: Variant):
    from suite.core import workloads
    from suite.core.combo import Combo

    combo = Combo.resolve(*variant.ids)
    inputs = workloads.make_inputs(combo.workload, combo.dtype)
    return combo.target.load(variant.path, inputs, combo.workload.output_shape, combo.dtype)


def measure_step(journal: Journal, a: Variant, b: Variant, rounds: int, seed: int) -> Step:
    key = f"step|{b.change}|{'|'.join(b.ids)}"
    kept = journal.get(key)
    if kept is None:
        kernels = [load(a), load(b)]
        samples = [[], []]
        for round_ in range(rounds):
            order = (0, 1) if round_ % 2 == 0 else (1, 0)
            for side in order:
                samples[side].extend(kernels[side].time(repeat=1, min_repeat_ms=MIN_REPEAT_MS,
                                                        arguments_of=kernels[0]))
        kept = journal.add(key, a=samples[0], b=samples[1])
    ratios = [y / x for x, y in zip(kept["a"], kept["b"])]
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(ratios, size=(BOOTSTRAP, len(ratios))), axis=1)
    return Step(float(np.median(ratios)), float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975)),
                len(ratios))


def timing_of(journal: Journal, change: str, commit: int, variant: Variant, loaded: dict) -> list[float]:
    key = f"timing|{change}|{commit}|{'|'.join(variant.ids)}"
    kept = journal.get(key)
    if kept is None:
        if variant.path not in loaded:
            loaded[variant.path] = load(variant)
        kept = journal.add(key, samples=loaded[variant.path].time(repeat=REPEATS, min_repeat_ms=MIN_REPEAT_MS),
                           kernel=variant.change)
    return kept["samples"]


# ----------------------------------------------------------------------------- the histories


@dataclass(frozen=True)
class Series:
    """One combination's series in one change's history: which commit B starts at (None: A
    throughout), and what the pair at that commit is by measurement."""
    change: str
    ids: tuple[str, str, str, str]
    a: Variant
    b: Variant
    start: int | None
    step: Step | None  #: where B's code differs from A's
    code_changed: bool

    def at(self, commit: int) -> Variant:
        return self.b if self.start is not None and commit >= self.start else self.a

    @property
    def metrics(self) -> tuple[str, str]:
        """What each detector is scored on: the speed (latency; packets executed where emulated)
        and the error (ULP mean)."""
        return ("packets" if emulated(self.ids) else "latency", "ulp_mean")


def commit_hash(change: str, index: int) -> str:
    return hashlib.sha1(f"gate-benchmark {change} {index}".encode()).hexdigest()


def history_of(change: str, series: list[Series], commits: int, journal: Journal, loaded: dict):
    """The history a run of each commit would keep: asv's values (latency: the median of the
    samples; accuracy), and the side data (timing samples naming the kernel timed, code identity,
    the tuning record replayed, the build note)."""
    from suite.core import runstore
    from suite.reporting import results as res

    hashes = [commit_hash(change, i) for i in range(commits)]
    values: dict = {}
    side = {}
    build = _build_note()
    for i, h in enumerate(hashes):
        timings, code, records = {}, {}, {}
        for s in series:  # every combination in turn, as a run measures a commit
            variant = s.at(i)
            key = res.Series(*s.ids, machine=MACHINE)
            if not emulated(s.ids):  # emulated: packets, among its values
                samples = timing_of(journal, change, i, variant, loaded)
                timings[s.ids] = runstore.Timing(tuple(samples), str(variant.path), release.build_id())
                values.setdefault("latency", {}).setdefault(key, {})[h] = float(np.median(samples))
            code[s.ids] = variant.code
            records[s.ids] = s.ids[2] if emulated(s.ids) else "llvm"
            for metric, value in variant.values.items():
                values.setdefault(metric, {}).setdefault(key, {})[h] = value
        side[(h, MACHINE)] = runstore.SideData(h, True, Path("/nonexistent") / h, timings=timings, records=records,
                                               code=code, build=build)
    commits_ = tuple(res.Commit(h, 1_780_000_000_000 + i * 86_400_000, (f"{change}-{i}",))
                     for i, h in enumerate(hashes))
    return res.History(Path("/nonexistent/results"), commits_, values, (MACHINE,), (), "as measured", "", None,
                       side, {})


def _build_note() -> dict:
    """What a run keeps of the TVM that built its kernels (suite.core.measurement.note_tvm_build)."""
    return {"tvm": release.installed_version(), "build_id": release.build_id(), "llvm": release.llvm_build()}


# ----------------------------------------------------------------------------- detectors


def gate_pair(history, before, at, th):
    """The gate on one pair, its suspects and changed kernels timed again for real: (its result,
    the history with its re-timings kept, as `run` and `check` keep them for the report)."""
    from suite.core import timing
    from suite.reporting import gate

    result = gate.evaluate(history, at, before, th, timing.remeasure)
    return result, gate.with_remeasured(history, result)


def culprits_of(checks) -> dict[tuple, str]:
    """(series ids, metric) -> "flagged" or "undecided": what the gate's failing and undecided
    lines are about (its culprits), a failed build counting against every metric."""
    found = {}
    for check in checks:
        for culprit in check.culprits:
            for metric in ((culprit.metric,) if culprit.metric else ("latency", "ulp_mean")):
                state = "undecided" if culprit.undecided else "flagged"
                if found.get((culprit.series.ids, metric)) != "flagged":
                    found[(culprit.series.ids, metric)] = state
    return found


def report_agrees(history, before, at, th, result) -> str | None:
    """None where the report says of the pair what the gate said (verdict, line, and each failing
    or undecided line with its combination), else what differs."""
    from suite.reporting import pair_verdicts

    said, gave = pair_verdicts.pair_verdict(history, before, at, th), pair_verdicts.said_of(result)
    for what in ("verdict", "line", "blamed"):
        if getattr(said, what) != getattr(gave, what):
            return f"{what}: the report says {getattr(said, what)!r}, the gate {getattr(gave, what)!r}"
    return None


def worse_up(metric: str, value: float) -> float:
    from suite import tracked

    return -value if tracked.get(metric).worse == tracked.LOWER else value


def asv_flags(values: list[float], metric: str, threshold: float) -> set[int]:
    from asv import step_detect

    if len(values) < 3:
        return set()
    steps = step_detect.detect_steps([worse_up(metric, v) for v in values])
    _, _, regressions = step_detect.detect_regressions(steps, threshold=threshold)
    return {after for _, after, _, _ in (regressions or [])}


def lnt_flags(samples: list[list[float]], metric: str, absolute_floor: bool) -> set[int]:
    """LNT's rule (llvm-lnt ``lnt/server/reporting/analysis.py``, ``ComparisonResult``), each commit
    against the one before: each side's value is the minimum of its samples (LNT's default
    aggregation), the change is measured against the previous sample nearest the new value; a
    change under 1%, or under 0.01 absolute (``absolute_floor``: LNT's default; seconds, for
    times), is ignored; with 4 samples a side, Mann-Whitney U at 0.05 must reject "the same"; with
    several samples the change must exceed 2.576 standard deviations of the new ones; with one a
    side (a deterministic value), a change of 0.2% is enough. Worse only, as for every detector."""
    from scipy.stats import mannwhitneyu

    found = set()
    for j in range(1, len(samples)):
        before, now = [worse_up(metric, v) for v in samples[j - 1]], [worse_up(metric, v) for v in samples[j]]
        current = min(now)  # worse is up: LNT's minimum, its maximum where bigger is better
        nearest = min(before, key=lambda v: (abs(current - v), -before.index(v)))
        delta = current - nearest
        pct = delta / nearest if nearest else 0.0
        if delta <= 0 or abs(pct) < 0.01 or (absolute_floor and abs(delta) < 0.01):
            continue
        if abs(delta) <= 2 * 0.0001 * 2.576:  # LNT's floor of what it can sample
            continue
        if len(now) >= 4 and len(before) >= 4 and mannwhitneyu(now, before, alternative="two-sided").pvalue >= 0.05:
            continue
        if len(now) > 1:
            if abs(delta) <= 2.576 * statistics.stdev(now):
                continue
        elif abs(pct) < 0.002:
            continue
        found.add(j)
    return found


def external_flags(python: str, detector: str, series: dict[str, list[float]]) -> dict[str, list[int]]:
    try:
        out = subprocess.run([python, str(PEERS_SCRIPT)], input=json.dumps({"detector": detector, "series": series}),
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    except (OSError, subprocess.CalledProcessError, ValueError) as err:
        last = (getattr(err, "stderr", "") or str(err)).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"--peers {detector}: {python} failed: {last[0]}") from None


# ----------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Pair:
    """One consecutive pair of one series, and what it is by measurement."""
    change: str
    ids: tuple[str, str, str, str]
    metric: str
    index: int  #: the later commit
    truth: str  #: regression, no effect, same code, improvement, too close to call
    step: float | None  #: the measured step (latency: ratio; ULP: B's over A's)

    @property
    def positive(self) -> bool:
        return self.truth == "regression"

    @property
    def negative(self) -> bool:
        return self.truth in ("no effect", "same code")


def deterministic_step(a: float, b: float) -> tuple[str, float]:
    """What a pair of a deterministic value (ULP mean, packets) is: any growth is a regression."""
    return ("regression" if b > a else "improvement" if b < a else "no effect",
            b / a if a else (math.inf if b > a else 1.0))


def pairs_of(series: list[Series], commits: int) -> list[Pair]:
    found = []
    for s in series:
        speed, error = s.metrics
        for i in range(1, commits):
            if not (s.start == i and s.code_changed):
                found += [Pair(s.change, s.ids, speed, i, "same code", None),
                          Pair(s.change, s.ids, error, i, "same code", None)]
                continue
            if speed == "packets":
                found.append(Pair(s.change, s.ids, speed, i, *deterministic_step(s.a.values[speed], s.b.values[speed])))
            else:
                found.append(Pair(s.change, s.ids, speed, i, s.step.kind, s.step.ratio))
            found.append(Pair(s.change, s.ids, error, i, *deterministic_step(s.a.values[error], s.b.values[error])))
    return found


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Score:
    detector: str
    metric: str
    positives: int
    caught: int
    undecided_positive: int
    missed: int
    negatives: int
    false_alarms: int
    undecided_negative: int

    @property
    def recall(self) -> float:
        return self.caught / self.positives if self.positives else math.nan

    @property
    def recall_undecided_caught(self) -> float:
        return (self.caught + self.undecided_positive) / self.positives if self.positives else math.nan

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.negatives if self.negatives else math.nan

    @property
    def precision(self) -> float:
        flagged = self.caught + self.false_alarms
        return self.caught / flagged if flagged else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r and not math.isnan(p) and not math.isnan(r) else 0.0

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "recall": self.recall, "recall_undecided_caught": self.recall_undecided_caught,
                "recall_wilson": wilson(self.caught, self.positives),
                "false_alarm_rate": self.false_alarm_rate,
                "false_alarm_wilson": wilson(self.false_alarms, self.negatives),
                "precision": self.precision, "f1": self.f1}


def score(detector: str, metric: str, pairs: list[Pair], flags: dict[tuple, str], keep=lambda p: True) -> Score:
    mine = [p for p in pairs if p.metric == metric and keep(p)]
    said = [flags.get((p.change, p.ids, p.metric, p.index)) for p in mine]
    pos = [(p, f) for p, f in zip(mine, said) if p.positive]
    neg = [(p, f) for p, f in zip(mine, said) if p.negative]
    return Score(detector, metric, len(pos), sum(f == "flagged" for _, f in pos),
                 sum(f == "undecided" for _, f in pos), sum(f is None for _, f in pos), len(neg),
                 sum(f == "flagged" for _, f in neg), sum(f == "undecided" for _, f in neg))


# ----------------------------------------------------------------------------- the run


def machine_facts() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])
    return {"cpu": model, "cores_online": os.cpu_count(), "cores_allowed": len(os.sched_getaffinity(0)),
            "avx512f": "avx512f" in flags, "load_average": list(os.getloadavg()), "tvm": release.build_id(),
            "llvm": release.llvm_build()}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def measure(args, journal: Journal) -> dict:
    import compiler_changes

    from suite.reporting import thresholds as thresholds_mod

    th = thresholds_mod.load(args.thresholds)
    changes = compiler_changes.check(args.changes)
    combos = choose_combos(args.combos, args.seed)
    not_made = []
    if args.hexagon_combos:
        if (why := hexagon_unavailable()) is None:
            combos += choose_hexagon_combos(args.hexagon_combos, args.seed)
        else:
            say(f"no Hexagon series: {why}")
            not_made.append({"change": "*", "ids": [HEXAGON], "why": why})
    kernels = args.out / "kernels"
    started = time.monotonic()
    say(f"{len(combos)} combinations x {len(changes)} changes, {args.commits} commits each")
    base = {}
    variants = {}
    for ids in combos:
        found = build_variant(journal, kernels, ids, compiler_changes.CHANGES["same"])
        if isinstance(found, str):
            say(f"  left out {' '.join(ids)}: {found}")
            continue
        base[ids] = found
        for change in changes:
            if change.name != "same":
                variants[(change.name, ids)] = build_variant(journal, kernels, ids, change)
    say(f"built in {time.monotonic() - started:.0f} s")
    rng = random.Random(args.seed)
    series: dict[str, list[Series]] = {}
    for change in changes:
        for ids, a in base.items():
            start = rng.randrange(2, args.commits - 1) if args.commits > 3 else 1
            if change.name == "same":
                series.setdefault(change.name, []).append(Series(change.name, ids, a, a, None, None, False))
                continue
            b = variants[(change.name, ids)]
            twin = next((other for other in changes[:changes.index(change)] if other.name != "same"
                         and isinstance(variants[(other.name, ids)], Variant)
                         and variants[(other.name, ids)].code == getattr(b, "code", None) != a.code), None)
            if twin is not None:  # one kernel counts once
                b = f"the same kernel as {twin.name}"
            if isinstance(b, str):
                not_made.append({"change": change.name, "ids": list(ids), "why": b})
                continue
            changed = b.code != a.code
            step = measure_step(journal, a, b, args.rounds, args.seed) if changed and not emulated(ids) else None
            series.setdefault(change.name, []).append(Series(change.name, ids, a, b, start, step, changed))
    say(f"steps measured at {time.monotonic() - started:.0f} s")
    loaded: dict = {}
    histories = {name: history_of(name, found, args.commits, journal, loaded) for name, found in series.items()}
    say(f"series timed at {time.monotonic() - started:.0f} s")
    pairs = [p for name, found in series.items() for p in pairs_of(found, args.commits)]
    flags, judged, disagreements = judge(histories, series, args, th, journal)
    say(f"judged at {time.monotonic() - started:.0f} s")
    reports = write_reports(judged, args.out, th)
    return {"series": series, "pairs": pairs, "flags": flags, "not_made": not_made, "disagreements": disagreements,
            "reports": reports, "seconds": time.monotonic() - started}


def write_reports(judged: dict, out: Path, th) -> dict[str, str]:
    """Each change's history as `tvm-suite report` writes it (its gate: the last pair's, as a `run`
    of the last commit gives it): what a reader opens to see the series."""
    from suite.reporting import gate, report

    found = {}
    for change, history in judged.items():
        last, before = history.commits[-1], history.commits[-2]
        where = out / "reports" / change
        report.make_report(history, gate.evaluate(history, last, before, th, None), where)
        found[change] = str(where / "index.html")
    return found


def thresholds_digest(th) -> str:
    """What the gate's verdicts depend on besides the measurements: a rerun with other thresholds
    judges again what it measured (and keeps both)."""
    return hashlib.sha256(json.dumps(th.as_dict(), sort_keys=True, default=str).encode()).hexdigest()[:16]


def judge(histories, series, args, th, journal) -> dict[str, dict]:
    """What each detector flags: detector -> {(change, ids, metric, index): "flagged"|"undecided"}."""
    detectors = ["gate", "asv (publish: 0.05)", "asv (best)", "LNT (defaults)", "LNT (no 0.01 s floor)",
                 *args.peers, "code identity alone"]
    flags = {d: {} for d in detectors}
    asv_by_threshold = {t: {} for t in (0.0, 0.01, 0.02, 0.05)}
    disagreements, judged = [], {}
    judged_by = thresholds_digest(th)
    for change, history in histories.items():
        commits = history.commits
        for i in range(1, len(commits)):
            key = f"gate|{judged_by}|{change}|{i}"
            kept = journal.get(key)
            if kept is None:
                result, history = gate_pair(history, commits[i - 1], commits[i], th)
                kept = journal.add(key, verdict=result.verdict.name, line=result.line(),
                                   flags=[[list(ids), metric, f] for (ids, metric), f in culprits_of(result.checks).items()],
                                   retimed=result.newly_remeasured(),
                                   report_differs=report_agrees(history, commits[i - 1], commits[i], th, result))
            elif kept.get("retimed"):  # the re-timings it kept, as a rerun of `report` reads them
                pair = (commits[i - 1].hash, commits[i].hash)
                history = dataclasses.replace(history, remeasured={**history.remeasured, pair: kept["retimed"]})
            for ids, metric, f in kept["flags"]:
                flags["gate"][(change, tuple(ids), metric, i)] = f
            if kept.get("report_differs"):
                disagreements.append({"change": change, "pair": i, "differs": kept["report_differs"]})
        judged[change] = history
        keyed = {}
        for s in series[change]:
            key_series = next(x for x in history.series() if x.ids == s.ids)
            for metric in s.metrics:
                values = [history.value(metric, key_series, c.hash) for c in commits]
                samples = ([list(history.kept(c.hash, MACHINE).timings[s.ids].samples_s) for c in commits]
                           if metric == "latency" else None)
                where = lambda j: (change, s.ids, metric, j)  # noqa: E731
                for t, found in asv_by_threshold.items():
                    found.update({where(j): "flagged" for j in asv_flags(values, metric, t)})
                per_commit = samples if metric == "latency" else [[v] for v in values]
                flags["LNT (defaults)"].update({where(j): "flagged" for j in lnt_flags(per_commit, metric, True)})
                flags["LNT (no 0.01 s floor)"].update(
                    {where(j): "flagged" for j in lnt_flags(per_commit, metric, False)})
                for j in range(1, len(commits)):
                    if s.at(j).code != s.at(j - 1).code and worse_up(metric, values[j]) > worse_up(metric, values[j - 1]):
                        flags["code identity alone"][where(j)] = "flagged"
                keyed[f"{change}|{metric}|{'|'.join(s.ids)}"] = (s.ids, metric, [worse_up(metric, v) for v in values])
        for name, python in args.peers.items():
            found = external_flags(python, name, {k: v for k, (_, _, v) in keyed.items()})
            for k, indices in found.items():
                ids, metric, _ = keyed[k]
                flags[name].update({(change, ids, metric, j): "flagged" for j in indices if 0 < j < len(commits)})
    flags["asv (publish: 0.05)"] = asv_by_threshold[0.05]
    flags["asv (best)"] = asv_by_threshold  # chosen per metric once the pairs are known (scoring)
    return flags, judged, disagreements


def tables(outcome: dict) -> dict:
    pairs = outcome["pairs"]
    rows = {}
    for metric in sorted({p.metric for p in pairs}, key=("latency", "packets", "ulp_mean").index):
        found = []
        for detector, flags in outcome["flags"].items():
            if detector == "asv (best)":
                best = max(((t, score(detector, metric, pairs, f)) for t, f in flags.items()),
                           key=lambda ts: (ts[1].f1, -ts[0]))
                found.append(dataclasses.replace(best[1], detector=f"asv (best: {best[0]:g})"))
                continue
            found.append(score(detector, metric, pairs, flags))
        rows[metric] = found
    by_step = {}
    for low, high in zip(STEP_BINS, (*STEP_BINS[1:], math.inf)):
        label = f"+{(low - 1) * 100:g}%" + (f" to +{(high - 1) * 100:g}%" if high != math.inf else " and more")
        keep = lambda p, low=low, high=high: p.negative or (p.step is not None and low <= p.step < high)  # noqa: E731
        by_step[label] = [score(d, "latency", pairs, f if d != "asv (best)" else f[0.05], keep)
                          for d, f in outcome["flags"].items() if d not in ("asv (best)",)]
    return {"by_metric": rows, "latency_by_step": by_step}


#: The metrics of a divergence mark (suite.reporting.rules.marks_at): what the gate's mark culprits name.
MARK_METRICS = ("error_ratio", "bias_shift", "prob_bound_fraction")


def hexagon_steps(outcome: dict) -> list[dict]:
    """Each emulated series whose code changed: its exact steps, the divergence values the marks
    read at A and B, and the marks the gate named at the step (not scored: no peer reads them)."""
    found = []
    for change, series in outcome["series"].items():
        for s in series:
            if not (emulated(s.ids) and s.code_changed):
                continue
            named = sorted(metric for (c, ids, metric, i), f in outcome["flags"]["gate"].items()
                           if c == change and ids == s.ids and i == s.start and metric in MARK_METRICS and f == "flagged")
            found.append({"change": change, "ids": list(s.ids),
                          **{m: deterministic_step(s.a.values[m], s.b.values[m])[1] for m in ("packets", "ulp_mean")},
                          **{m: [s.a.values[m], s.b.values[m]] for m in ("error_ratio", "bias_shift")},
                          "marks_named": named})
    return sorted(found, key=lambda d: (d["change"], d["ids"]))


def _f(x: float, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def print_table(title: str, scores: list[Score]) -> None:
    print(f"\n{title}")
    print("| detector | regressions | caught | undecided | missed | recall (undecided missed / caught) [95%] "
          "| negatives | false alarms | FA rate [95%] | precision | F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in scores:
        lo, hi = wilson(s.caught, s.positives)
        flo, fhi = wilson(s.false_alarms, s.negatives)
        print(f"| {s.detector} | {s.positives} | {s.caught} | {s.undecided_positive} | {s.missed} | "
              f"{_f(s.recall)} / {_f(s.recall_undecided_caught)} [{_f(lo, 2)}-{_f(hi, 2)}] | {s.negatives} | "
              f"{s.false_alarms}" + (f" (+{s.undecided_negative} undecided)" if s.undecided_negative else "") +
              f" | {_f(s.false_alarm_rate, 4)} [{_f(flo, 3)}-{_f(fhi, 3)}] | {_f(s.precision)} | {_f(s.f1)} |")


def report(outcome: dict, facts: dict, args) -> dict:
    found = tables(outcome)
    pairs = outcome["pairs"]
    steps = sorted(({"change": s.change, "ids": list(s.ids), "ratio": s.step.ratio, "low": s.step.low,
                     "high": s.step.high, "kind": s.step.kind, "ulp_mean": [s.a.values["ulp_mean"], s.b.values["ulp_mean"]]}
                    for found_ in outcome["series"].values() for s in found_ if s.step is not None),
                   key=lambda d: (d["change"], d["ratio"]))
    hexagon = hexagon_steps(outcome)
    print(f"machine: {facts['cpu']}, {facts['cores_allowed']} of {facts['cores_online']} cores, "
          f"load {facts['load_average'][0]:.2f} at the start; TVM {facts['tvm']}; {outcome['seconds']:.0f} s")
    kinds = {}
    for p in pairs:
        kinds.setdefault(p.metric, {}).setdefault(p.truth, 0)
        kinds[p.metric][p.truth] += 1
    print(f"pairs by measurement: {json.dumps(kinds)}")
    judged_pairs = len({(p.change, p.index) for p in pairs})
    print(f"report and gate: {judged_pairs - len(outcome['disagreements'])} of {judged_pairs} pairs said alike"
          + "".join(f"\n  differs at {d['change']} pair {d['pair']}: {d['differs']}" for d in outcome["disagreements"]))
    print("\nmeasured steps (B over A, median of paired ratios, 95% interval):")
    for d in steps:
        print(f"  {d['change']:<20} {' '.join(d['ids'][:2]):<58} {d['ratio']:7.3f} [{d['low']:.3f}-{d['high']:.3f}] "
              f"{d['kind']}")
    if hexagon:
        print("\nHexagon steps (B over A, exact: packets executed, ULP mean; the error against default's, "
              "as the divergence marks read it; the marks the gate named at the step):")
        for d in hexagon:
            print(f"  {d['change']:<20} {d['ids'][0]:<44} packets {d['packets']:7.3f}  ULP {d['ulp_mean']:7.3f}  "
                  f"error ratio {d['error_ratio'][0]:.3f} -> {d['error_ratio'][1]:.3f}  "
                  f"bias shift {d['bias_shift'][0]:+.3f} -> {d['bias_shift'][1]:+.3f}  marks named: "
                  f"{', '.join(d['marks_named']) or 'none'}")
    for metric, scores in found["by_metric"].items():
        print_table(f"{metric}: every pair of every series", scores)
    for label, scores in found["latency_by_step"].items():
        print_table(f"latency, regressions of a measured step {label} (negatives: every no-effect pair)", scores)
    return {"machine": facts, "options": vars(args) | {"out": str(args.out), "thresholds": str(args.thresholds),
                                                        "peers": sorted(args.peers)},
            "seconds": outcome["seconds"], "pairs_by_truth": kinds,
            "report_disagreements": outcome["disagreements"], "reports": outcome["reports"], "steps": steps,
            "hexagon_steps": hexagon, "not_made": outcome["not_made"],
            "tables": {m: [s.to_json() for s in scores] for m, scores in found["by_metric"].items()},
            "latency_by_step": {label: [s.to_json() for s in scores] for label, scores in found["latency_by_step"].items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=common_args.path, required=True,
                        help="a directory for the kernels, the measurements and gate_benchmark.json")
    parser.add_argument("--combos", type=common_args.whole_number(0, 64), default=16,
                        help="tuned llvm combinations (0: the Hexagon series alone)")
    parser.add_argument("--hexagon-combos", type=common_args.whole_number(0, 16), default=4,
                        help=f"tuned float16 conv2d combinations on {HEXAGON} (0: none; skipped, saying why, "
                             "without qemu-hexagon)")
    parser.add_argument("--commits", type=common_args.whole_number(3, 50), default=6)
    parser.add_argument("--rounds", type=common_args.whole_number(5, 1000), default=30,
                        help="interleaved rounds that measure each step")
    parser.add_argument("--seed", type=common_args.whole_number(0, 2**32 - 1), default=0)
    parser.add_argument("--changes", type=changes_option,
                        default="same,asserts-off,storage-rewrite-off,unroll-halved,vectorize-off-last,vectorize-off,"
                                "parallel-off,reduction-swapped,reduction-swapped-outer,extra-packet-per-8,"
                                "extra-packet-per-32,accumulator-rounded")
    parser.add_argument("--thresholds", type=common_args.path)
    parser.add_argument("--peers", type=peers_option, default={},
                        help=f"detector=python of its environment, comma-separated (of {', '.join(PEERS)})")
    args = parser.parse_args(argv)
    if not (args.combos or args.hexagon_combos):
        parser.error("--combos 0 and --hexagon-combos 0: nothing to measure")
    name = Path(sys.argv[0]).name
    try:
        with signals_raise():
            return run(args)
    except UserError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        print(f"{name}: interrupted: every measurement made is kept in {args.out / JOURNAL}; the same command "
              "continues from it", file=sys.stderr)
        return 143 if isinstance(stop, Terminated) else 130


def run(args) -> int:
    from suite.reporting import thresholds as thresholds_mod

    thresholds_mod.load(args.thresholds)  # a bad file refused before any work
    outputs.check_dir(args.out, "--out", WRITER, MARK, names=(JOURNAL, RESULT))
    cache.ensure_dir(args.out, "--out")
    if not (args.out / MARK).exists():
        cache.write_json(args.out / MARK, outputs.marked({}, WRITER))
    result = args.out / RESULT
    options = {k: v for k, v in vars(args).items() if k in ("combos", "hexagon_combos", "commits", "rounds", "seed", "changes")}
    options["tvm"] = release.build_id()
    facts = machine_facts()
    journal = Journal(args.out / JOURNAL, options)
    try:
        outcome = measure(args, journal)
    finally:
        journal.close()
    found = report(outcome, facts, args)
    found["machine"]["load_average_end"] = list(os.getloadavg())
    cache.write_text(result, json.dumps(found, indent=1, default=str))
    say(f"written: {result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
