"""The gate's false alarms and misses on a kept history of TVM commits, beside the change-point
detectors others use, on the same values (a script, not an asv benchmark).

    python experiments/gate_error_rates.py --results reports/tvm-main/results
        [--results reports/tvm-main-hexagon/results] [--plants 24] [--seed 0]
        [--remeasure none|real] [--peers otava=PYTHON,edivisive=PYTHON] [--out DIR]

Several ``--results`` (kept histories of the same commits on other machines or targets: llvm on
this machine, Hexagon on the emulator) are judged each on its own and scored as one series: the
plants are spread over them (a kind goes to a history whose values have its metric: packets
only where Hexagon was measured), and each detector's catches and false alarms are summed.

1. False alarms: every consecutive pair of commits with results is judged by the gate
   (:func:`suite.reporting.gate.evaluate`, the verdict of `gate`, `run` and `check`). A failing
   check on unplanted data is a false alarm unless a re-measurement confirms it (``--remeasure
   real`` times both kernels again where the cache still holds them); one on a kernel whose code
   is the same at both commits is a false alarm by construction. Counted per check.
2. Planted steps: at seeded random commits, a step is planted into the verified history in memory
   (the gate is a pure function of it, so this is what a sealed history with the step would give):
   latency +5%, +10%, +30% (every sample of the combination from that commit on, on kernels whose
   code changed there where there are any), packets +1%, ULP mean +1 ULP, and a new divergence
   mark (error ratio 1.6, z 20, on a tuned fp16 conv2d not marked at the commit before: a mark
   inherited from it, not 1.1x worse, is known, not new). A catch is the planted combination flagged by the
   gate at the pair that ends at the planted commit; anything else is a miss. With ``--remeasure
   real`` the gate times its suspects and every kernel whose code changed again, for real (once
   per pair of kernels, reused by every plant), the planted combination's candidate samples
   scaled by its step: how a kernel that much slower would time.
3. Peers, on the same per-combination series (latency: medians; LNT: the samples): asv's own step
   detection (``asv.step_detect``: L1 piecewise fit, upward steps), LNT's rule (changes under 1%
   ignored, then Mann-Whitney U at 0.05 where there are samples), Apache Otava and MongoDB's
   E-Divisive (run by ``change_point_peers.py`` in their own environments: their numpy pins
   exclude each other's and the suite's).

Prints precision, recall and F1 of every detector in one table and writes it all as JSON.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from asv import step_detect
from scipy.stats import mannwhitneyu

from suite import cache, outputs
from suite.commands import common_args
from suite.errors import Terminated, UserError, signals_raise
from suite.reporting import code_identity, gate, results, rules, thresholds as thresholds_mod

LATENCY_STEPS = (1.05, 1.10, 1.30)
#: The metric each kind of planted step moves, which the gate and the peers should flag.
METRIC = {**{f"latency+{round((s - 1) * 100)}%": "latency" for s in LATENCY_STEPS},
          "packets+1%": "packets", "ulp_mean+1": "ulp_mean", "mark": "error_ratio"}
#: Random pairs a kind of step may find no combination at in a row before it is left out.
TRIES = 50
PEERS_SCRIPT = Path(__file__).with_name("change_point_peers.py")
PEERS = ("otava", "edivisive")  #: the detectors change_point_peers.py runs


@dataclasses.dataclass(frozen=True)
class Plant:
    kind: str  #: latency+5%, packets+1%, ulp_mean+1, mark
    metric: str  #: the metric the gate and the peers should flag
    series: results.Series
    commit: int  #: index in the commits with results: the first commit with the step
    history: int  #: which of the judged histories (the order of --results)


@dataclasses.dataclass(frozen=True)
class Judged:
    """One kept history and the commits of it the gate compares."""
    name: str
    history: results.History
    commits: list


def commits_with_data(history: results.History) -> list[results.Commit]:
    """The commits the gate compares: a commit whose TVM did not build (asv's nulls) is passed over."""
    return [c for c in history.commits if gate.has_data(history, c)]


# ----------------------------------------------------------------------------- planting


def has_metric(history: results.History, metric: str) -> bool:
    return any(results.finite(v) for per_commit in history.values.get(metric, {}).values()
               for v in per_commit.values())


def marked(history: results.History, series: results.Series, commit: str, th) -> bool:
    """Whether ``series`` has a divergence mark at ``commit`` already (a planted one would not be new)."""
    return bool(rules.shift_rules({m: history.value(m, series, commit) for m in rules.SHIFT_METRICS}, th))


def choose_plants(judged: list[Judged], count: int, seed: int, th) -> list[Plant]:
    """``count`` steps, the kinds in turn (each kind that some history has the metric of), each at a
    seeded random pair of a seeded random history that has it, on a combination not planted with
    that metric yet; a kind that finds none in :data:`TRIES` tries in a row is left out."""
    rng = random.Random(seed)
    holding = {kind: [i for i, j in enumerate(judged) if len(j.commits) > 1 and has_metric(j.history, metric)]
               for kind, metric in METRIC.items()}
    kinds = [kind for kind in METRIC if holding[kind]]
    plants, used, missed = [], set(), 0
    while len(plants) < count and kinds:
        kind = kinds[len(plants) % len(kinds)]
        if missed == TRIES:
            kinds.remove(kind)
            missed = 0
            continue
        metric, holders = METRIC[kind], holding[kind]
        which = holders[0] if len(holders) == 1 else rng.choice(holders)
        history, commits = judged[which].history, judged[which].commits
        index = rng.randrange(1, len(commits))
        at, before = commits[index], commits[index - 1]
        candidates = [s for s in history.series()
                      if results.finite(history.value(metric, s, at.hash))
                      and results.finite(history.value(metric, s, before.hash))
                      and (metric != "error_ratio" or (s.dtype == "float16" and "conv2d" in s.workload
                                                       and not marked(history, s, before.hash, th)))]
        if metric == "latency":  # a kernel whose code changed there, else one made to (planted)
            changed = [s for s in candidates if code_identity.compare(history, s, before.hash, at.hash)
                       is code_identity.Code.CHANGED]
            candidates = changed or candidates
        candidates = [s for s in candidates if (which, s, metric) not in used]
        if not candidates:
            missed += 1
            continue
        series = rng.choice(candidates)
        used.add((which, series, metric))
        plants.append(Plant(kind, metric, series, index, which))
        missed = 0
    return plants


def memoized(remeasure):
    """A maker of one gate's ``remeasure`` (None without one) that times each pair of kernels once
    for each time a gate asks: every plant's gate asks again for the same changed kernels of its
    pair, and the k-th real re-timing of them is the same question (a gate asks a second time
    only where the first found them slower: ``[latency] retimed_times``)."""
    if remeasure is None:
        return lambda: None
    seen = {}

    def for_one_gate():
        asked = {}

        def again(series, timings):
            key = (series, tuple(t.kernel for t in timings))
            n = asked[key] = asked.get(key, -1) + 1
            answers = seen.setdefault(key, [])
            if n == len(answers):
                answers.append(remeasure(series, timings))
            return answers[n]

        return again

    return for_one_gate


def planted_remeasure(remeasure, plant: Plant, history: results.History, commits):
    """The gate's re-measurement of ``history`` with ``plant``: the real one, of the real kernels
    (each timing of the planted combination with the code identity its commit kept, not the one
    the plant gave it: where a kernel is gone from the cache, one of the same code stands in), and
    for a planted latency step the candidate's re-timed samples scaled by the step, as a kernel
    that much slower would give (every sample of it)."""
    if remeasure is None:
        return None
    real = {}
    for commit in commits:
        kept = history.kept(commit.hash, plant.series.machine)
        if (timing := kept.timings.get(plant.series.ids)) is not None:
            real[timing.kernel] = kept.code.get(plant.series.ids)
    factor = 1 + int(plant.kind.split("+")[1].rstrip("%")) / 100 if plant.kind.startswith("latency") else 1

    def again(series, timings):
        if series != plant.series:
            return remeasure(series, timings)
        found = remeasure(series, [dataclasses.replace(t, code=real.get(t.kernel, t.code)) for t in timings])
        if isinstance(found, str):
            return found
        samples, note = found
        return [samples[0], [x * factor for x in samples[1]]], note

    return again


def planted(history: results.History, commits, plant: Plant) -> results.History:
    """The history with ``plant``'s step from its commit on (values and kept samples alike). A step
    comes with a change of the kernel's code where its code was the same: a deterministic value
    (ULP, packets, a mark) moves only when the code does, and a latency step of the same code is
    noise by construction; so the planted commit is one that changed the kernel, as a real step's
    commit is."""
    values = copy.deepcopy(history.values)
    side = dict(history.side)
    later = [c.hash for c in commits[plant.commit:]]
    before = commits[plant.commit - 1].hash
    if code_identity.compare(history, plant.series, before, commits[plant.commit].hash) is code_identity.Code.SAME:
        for h in later:
            kept = history.kept(h, plant.series.machine)
            if (code := kept.code.get(plant.series.ids)) is not None:
                planted_code = hashlib.sha256(f"{code} {plant.kind}".encode()).hexdigest()
                side[(h, plant.series.machine)] = dataclasses.replace(
                    kept, code={**kept.code, plant.series.ids: planted_code})
    per_commit = values.get(plant.metric, {}).get(plant.series, {})
    for h in later:
        value = per_commit.get(h)
        if not results.finite(value):
            continue
        if plant.kind.startswith("latency"):
            factor = 1 + int(plant.kind.split("+")[1].rstrip("%")) / 100
            per_commit[h] = value * factor
            kept = side.get((h, plant.series.machine)) or history.kept(h, plant.series.machine)
            timing = kept.timings.get(plant.series.ids)
            if timing is not None:
                timings = {**kept.timings, plant.series.ids: dataclasses.replace(
                    timing, samples_s=tuple(x * factor for x in timing.samples_s))}
                side[(h, plant.series.machine)] = dataclasses.replace(kept, timings=timings)
        elif plant.kind == "packets+1%":
            per_commit[h] = value * 1.01
        elif plant.kind == "ulp_mean+1":
            per_commit[h] = value + 1.0
        else:  # a new mark: error grew by 60%, far beyond a reordering, with a decisive z
            per_commit[h] = 1.6
            values.setdefault("error_ratio_z", {}).setdefault(plant.series, {})[h] = 20.0
    return dataclasses.replace(history, values=values, side=side)


# ----------------------------------------------------------------------------- the gate


def gate_flags(history, before, at, th, remeasure) -> set[tuple[results.Series, str]]:
    """(series, metric) the gate fails at the pair (before, at)."""
    result = gate.evaluate(history, at, before, th, remeasure)
    flagged = {(s.series, "latency") for s in result.slowdowns
               if s.verdict.fails or s.verdict is rules.Slowness.SUSPECT}
    flagged |= {(m.mark.series, "error_ratio") for m in result.marks.marks if m.fails}
    for check in result.checks:
        if check.status is not gate.Status.FAIL or check.name.startswith(("latency", "divergence")):
            continue
        metric = check.name.split(" ")[0]
        for series in history.series():
            if any(rules.where(series, len(history.machines) > 1) + ":" in d for d in check.details):
                flagged.add((series, metric))
    return flagged


def false_alarms(history, commits, th, remeasure) -> tuple[list[dict], dict]:
    """The gate on every consecutive pair (``remeasure``: a maker of each gate's, :func:`memoized`)."""
    pairs, per_check = [], {}
    for before, at in zip(commits, commits[1:]):
        result = gate.evaluate(history, at, before, th, remeasure())
        same = [s for s in result.slowdowns if s.verdict.fails
                and code_identity.same_code(history, s.series, before.hash, at.hash)]
        failing = [c.name.split(" vs ")[0] for c in result.checks if c.status is gate.Status.FAIL]
        for name in failing:
            per_check[name] = per_check.get(name, 0) + 1
        changes = code_identity.changes(history, before, at)
        pairs.append({"baseline": before.label, "candidate": at.label, "verdict": result.verdict.name,
                      "failing": failing, "same_code_failures": len(same),
                      "kernels_changed": [" ".join(s.ids) for s in changes.changed],
                      "kernels_same": changes.same})
    return pairs, per_check


# ----------------------------------------------------------------------------- peers


def series_values(history, commits, metric, series) -> list[tuple[int, float]]:
    return [(i, v) for i, c in enumerate(commits) if results.finite(v := history.value(metric, series, c.hash))]


def worse_up(metric: str, value: float) -> float:
    """Values oriented so that worse is up (asv's step detection only looks up)."""
    from suite import tracked

    return -value if tracked.get(metric).worse == tracked.LOWER else value


def asv_flags(points, metric) -> set[int]:
    if len(points) < 3:
        return set()
    y = [worse_up(metric, v) for _, v in points]
    steps = step_detect.detect_steps(y)
    _, _, regressions = step_detect.detect_regressions(steps)
    return {points[after][0] for _, after, _, _ in (regressions or [])}


def lnt_flags(history, commits, metric, series, points) -> set[int]:
    found = set()
    for (i, a), (j, b) in zip(points, points[1:]):
        if a == 0 or abs(b - a) / abs(a) < 0.01 or worse_up(metric, b) <= worse_up(metric, a):
            continue
        if metric == "latency":
            before, now = (history.kept(commits[k].hash, series.machine).timings.get(series.ids) for k in (i, j))
            if before is not None and now is not None:
                if mannwhitneyu(now.samples_s, before.samples_s, alternative="greater").pvalue >= 0.05:
                    continue
        found.add(j)
    return found


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


def external_flags(python: str, detector: str, series: dict[str, list[float]]) -> dict[str, list[int]]:
    try:
        out = subprocess.run([python, str(PEERS_SCRIPT)], input=json.dumps({"detector": detector, "series": series}),
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    except (OSError, subprocess.CalledProcessError, ValueError) as err:
        last = (getattr(err, "stderr", "") or str(err)).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"--peers {detector}: {python} failed: {last[0]}") from None


# ----------------------------------------------------------------------------- scoring


def truth(plant: Plant) -> tuple:
    return plant.history, plant.series, plant.metric, plant.commit


def score(name: str, flags: set, plants: list[Plant]) -> dict:
    """flags: (history, series, metric, commit index) a detector raised over the planted histories."""
    truth_set = {truth(p) for p in plants}
    tp = len(flags & truth_set)
    fp = len(flags - truth_set)
    fn = len(truth_set - flags)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / len(truth_set) if truth_set else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"detector": name, "caught": tp, "planted": len(truth_set), "false_alarms": fp, "missed": fn,
            "precision": precision, "recall": recall, "f1": f1}


def detect(judged: list[Judged], plants: list[Plant], th, remeasure, peers: dict[str, str]) -> dict[str, set]:
    """What each detector flags over every plant's history: (history, series, metric, commit index)."""
    found = {name: set() for name in ("gate", "asv", "lnt", *peers)}
    metrics = sorted({p.metric for p in plants})
    for plant in plants:
        commits = judged[plant.history].commits
        with_step = planted(judged[plant.history].history, commits, plant)
        before, at = commits[plant.commit - 1], commits[plant.commit]
        found["gate"] |= {(plant.history, s, m, plant.commit) for s, m in
                          gate_flags(with_step, before, at, th,
                                     planted_remeasure(remeasure(), plant, judged[plant.history].history, commits))
                          if m in metrics}
        keyed = {}
        for metric in metrics:
            for series in with_step.series():
                points = series_values(with_step, commits, metric, series)
                if len(points) < 2:
                    continue
                found["asv"] |= {(plant.history, series, metric, i) for i in asv_flags(points, metric)}
                found["lnt"] |= {(plant.history, series, metric, i)
                                 for i in lnt_flags(with_step, commits, metric, series, points)}
                keyed[f"{metric}|{'|'.join(series.ids)}|{series.machine}"] = (series, metric, points)
        for name, python in peers.items():
            flags = external_flags(python, name, {k: [worse_up(m, v) for _, v in pts]
                                                  for k, (_, m, pts) in keyed.items()})
            for key, indices in flags.items():
                series, metric, points = keyed[key]
                found[name] |= {(plant.history, series, metric, points[i][0]) for i in indices if i < len(points)}
    # Every detector saw each plant's history once; what it flags at a commit where no plant of
    # that combination was is a false alarm (the same real value series for all of them).
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=common_args.path, required=True, action="append",
                        help="a kept history's results directory; again for another (scored as one series)")
    parser.add_argument("--thresholds", type=common_args.path)
    parser.add_argument("--plants", type=common_args.whole_number(1, 10_000), default=24)
    parser.add_argument("--seed", type=common_args.whole_number(0, 2**32 - 1), default=0)
    parser.add_argument("--remeasure", choices=("none", "real"), default="none")
    parser.add_argument("--peers", type=peers_option, default={},
                        help=f"detector=python of its environment, comma-separated (of {', '.join(PEERS)})")
    parser.add_argument("--out", type=common_args.path,
                        help="write OUT/gate_error_rates.json (never over an existing file)")
    args = parser.parse_args(argv)
    written = args.out / "gate_error_rates.json" if args.out is not None else None
    if len({r.resolve() for r in args.results}) < len(args.results):  # a link to one given is the same
        print(f"{Path(sys.argv[0]).name}: error: --results: the same directory given twice", file=sys.stderr)
        return 2
    try:
        if written is not None:  # before any work: apart from every history, never over a file
            outputs.check_new(written, "--out", reading=args.results)
        # Ctrl-C and SIGTERM raise here even where the parent started this with SIGINT ignored
        # (a background job, pytest-xdist's workers), as in `tvm-suite`
        with signals_raise():
            return judge(args, written)
    except UserError as err:  # absent, damaged or untrusted results or thresholds, a peer that failed
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # the JSON is written only at the end: nothing half written
        print(f"{Path(sys.argv[0]).name}: interrupted: nothing written", file=sys.stderr)
        return 143 if isinstance(stop, Terminated) else 130


def judge(args, written: Path | None) -> int:
    if args.out is not None:
        cache.ensure_dir(args.out, "--out")  # a file, read-only: said before the work, not after
    th = thresholds_mod.load(args.thresholds)  # a bad file refused before the histories are read
    print(f"{Path(sys.argv[0]).name}: reading {len(args.results)} kept histor{'y' if len(args.results) == 1 else 'ies'}",
          file=sys.stderr, flush=True)
    histories = [results.load(r) for r in args.results]
    judged = [Judged(str(r), h, commits_with_data(h)) for r, h in zip(args.results, histories)]
    for j in judged:
        if len(j.commits) < 2:
            print(f"{j.name}: {len(j.commits)} commit(s) with results: nothing to compare", file=sys.stderr)
            return 2
    remeasure = memoized(None)
    if args.remeasure == "real":
        from suite.core import timing

        remeasure = memoized(timing.remeasure)
    pairs, per_check = [], {}
    for j in judged:
        found_pairs, found_checks = false_alarms(j.history, j.commits, th, remeasure)
        pairs += [{"history": j.name, **p} for p in found_pairs]
        for name, count in found_checks.items():
            per_check[name] = per_check.get(name, 0) + count
    plants = choose_plants(judged, args.plants, args.seed, th)
    found = detect(judged, plants, th, remeasure, args.peers)
    table = [score(name, flags, plants) for name, flags in found.items()]
    print(f"{sum(len(j.commits) for j in judged)} commits in {len(judged)} histories, {len(pairs)} pairs, "
          f"{len(plants)} planted steps", file=sys.stderr)
    print("\nthe gate on every consecutive pair:")
    for p in pairs:
        where = f"[{Path(p['history']).parent.name}] " if len(judged) > 1 else ""
        print(f"  {where}{p['baseline']:>14} -> {p['candidate']:<14} {p['verdict']:<12} "
              f"failing: {', '.join(p['failing']) or '-'}; kernels changed {len(p['kernels_changed'])}, "
              f"same {p['kernels_same']}")
    print("\nfalse alarms of the gate per check (unplanted pairs):", per_check or "none")
    print("\nthe gate's catches per kind of step:")
    for kind in dict.fromkeys(p.kind for p in plants):
        mine = [p for p in plants if p.kind == kind]
        caught = sum(truth(p) in found["gate"] for p in mine)
        print(f"  {kind:<12} {caught} of {len(mine)}")
    print(f"\n{'detector':<10} {'caught':>7} {'planted':>8} {'false':>6} {'precision':>10} {'recall':>7} {'F1':>6}")
    for row in table:
        print(f"{row['detector']:<10} {row['caught']:>7} {row['planted']:>8} {row['false_alarms']:>6} "
              f"{row['precision']:>10.3f} {row['recall']:>7.3f} {row['f1']:>6.3f}")
    if written is not None:
        cache.write_text(written, json.dumps(
            {"histories": [j.name for j in judged], "pairs": pairs, "false_alarms_per_check": per_check,
             "table": table,
             "plants": [{"history": judged[p.history].name, "kind": p.kind, "ids": list(p.series.ids),
                         "commit": judged[p.history].commits[p.commit].label,
                         "caught_by": sorted(name for name, flags in found.items() if truth(p) in flags)}
                        for p in plants]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
