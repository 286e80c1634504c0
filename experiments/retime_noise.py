"""How far apart the gate's interleaved re-timing puts one kernel and itself, and whether it tells
a 5% or 10% slower kernel from noise (a script, not an asv benchmark): the measurement behind
``[latency] retimed_max_ratio`` in reports/thresholds.toml.

    python experiments/retime_noise.py --results reports/tvm-main/results [--commit C] [--rounds 3]
        [--repeats K] [--limit N] [--out FILE]

For every llvm combination of one kept commit whose kernel this machine's cache holds, the
gate's own re-measurement (:func:`suite.core.timing.remeasure`: A B, B A, ... on the same arrays)
times the kernel against itself, ``--rounds`` times. Each round gives the A/A ratio of medians
and the one-sided U test's p. The same samples with the second side scaled by 1.05 and 1.10 are
what a kernel that much slower would have given (a slower kernel's every sample is slower). Prints
the A/A ratios' spread, and for several candidate ratios the A/A pairs the re-timing rule would
fail (false alarms) and the scaled pairs it would catch, with alpha from the thresholds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from suite import cache, outputs
from suite.commands import common_args
from suite.core import timing
from suite.errors import UserError
from suite.reporting import results, rules, thresholds as thresholds_mod

STEPS = (1.05, 1.10)
RATIOS = (1.01, 1.02, 1.03, 1.05)


def kept_timings(history: results.History, commit: results.Commit):
    """(series, its kept timing) of every llvm combination at ``commit`` whose kernel is in the cache."""
    for series in history.series():
        if series.target != "llvm":
            continue
        kept = history.kept(commit.hash, series.machine).timings.get(series.ids)
        if kept is not None and (path := timing.kernel_path(kept)) is not None and path.is_file():
            yield series, kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=common_args.path, required=True)
    parser.add_argument("--commit", help="the kept commit whose kernels are timed (default: the last with results)")
    parser.add_argument("--rounds", type=common_args.whole_number(1, 100), default=3)
    parser.add_argument("--repeats", type=common_args.whole_number(2, 1000), default=timing.RETIME_REPEATS,
                        help="samples per side of one re-timing (the gate's: %(default)s)")
    parser.add_argument("--limit", type=common_args.whole_number(1, 10_000), default=10_000,
                        help="at most this many combinations")
    parser.add_argument("--out", type=common_args.path, help="write every pair as JSON (never over an existing file)")
    args = parser.parse_args(argv)
    try:
        if args.out is not None:  # before any work: apart from every history, never over a file
            outputs.check_new(args.out, "--out", reading=(args.results,))
        history = results.load(args.results)
    except UserError as err:  # an --out refused; absent, damaged or untrusted results: one line
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        return 2
    th = thresholds_mod.load(None)
    with_data = [c for c in history.commits if any(c.hash in per for s in history.values.values() for per in s.values())]
    commit = next((c for c in with_data if args.commit and c.hash.startswith(args.commit)), None) if args.commit \
        else (with_data[-1] if with_data else None)
    if commit is None:
        print(f"{args.results}: no commit {args.commit or ''} with results", file=sys.stderr)
        return 2
    pairs = []
    found = list(kept_timings(history, commit))[:args.limit]
    if not found:
        print(f"no kernel of {commit.label} is in this machine's cache ({cache.root()})", file=sys.stderr)
        return 2
    print(f"{len(found)} combinations of {commit.label}, {args.rounds} round(s) each", file=sys.stderr)
    for n, (series, kept) in enumerate(found, 1):
        for _ in range(args.rounds):
            again = timing.remeasure(series, [kept, kept], args.repeats)
            if isinstance(again, str):
                print(f"  {' '.join(series.ids)}: {again}", file=sys.stderr)
                break
            a, b = again[0]
            pairs.append({"ids": list(series.ids), "a": a, "b": b})
        print(f"  {n}/{len(found)} timed", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    ratios = np.array([np.median(p["b"]) / np.median(p["a"]) for p in pairs])
    print(f"A/A re-timed ratio of medians over {len(pairs)} pairs: min {ratios.min():.3f}, "
          f"1% {np.quantile(ratios, 0.01):.3f}, median {np.median(ratios):.3f}, "
          f"99% {np.quantile(ratios, 0.99):.3f}, max {ratios.max():.3f}")
    alpha = th.latency.alpha
    print(f"\n{'ratio':>6} {'A/A failing':>12}" + "".join(f" {f'caught x{s:g}':>13}" for s in STEPS))
    table = []
    for limit in RATIOS:
        def fails(a, b):
            return np.median(b) / np.median(a) > limit and rules.mann_whitney(a, b) < alpha

        false = int(sum(fails(p["a"], p["b"]) for p in pairs))
        caught = {s: int(sum(fails(p["a"], [x * s for x in p["b"]]) for p in pairs)) for s in STEPS}
        table.append({"ratio": limit, "aa_failing": false, "caught": {str(s): c for s, c in caught.items()}})
        print(f"{limit:>6g} {false:>7} of {len(pairs):<4}" + "".join(f" {c:>7} of {len(pairs):<4}"
                                                                      for c in caught.values()))
    if args.out is not None:
        cache.write_json(args.out, {"commit": commit.hash, "alpha": alpha, "pairs": pairs, "table": table})
    return 0


if __name__ == "__main__":
    sys.exit(main())
