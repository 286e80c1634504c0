"""How often the release gate is wrong on noise, and whether it catches a real slowdown (a script,
not an asv benchmark).

    python experiments/gate_noise.py --pairs 20 --load none|cpu [--builds cached|beside] --out DIR

Makes ``2 * pairs`` real `tvm-suite run`s of the installed TVM on a subset grid (8 combinations,
every run timed afresh), filed under consecutive commits of a stand-in repository, optionally with
a CPU hog beside them (``--load cpu``: one busy process per core but one), which stays on while the
gates run, their re-measurements included. With ``--builds cached`` (the default) the builds are
cached after the first run; with ``--builds beside`` every run has an empty cache of its own, so
that it builds every combination, its helper process building the next ones while the suite times
the current one (suite.core.ahead). Then, for every pair (A, B):

- A/A: `tvm-suite gate --commit B --baseline A`, with re-measurement off and on: any NOT READY is a
  false alarm (each `run` gives the gate's verdict against the run before it and keeps its
  re-measurements; they are removed before the pairs are judged, so that each gate decides anew);
- A/B, the statistic: B's recorded samples of one combination scaled by 1.3 in the verified history
  (the gate is a pure function of it: suite.reporting.gate.evaluate), judged without
  re-measurement: a catch is that combination judged slower (another combination failing on noise
  is not).

Prints the tables (decisions, false alarms, misses, run wall times) and writes them as JSON.
"""

import argparse
import dataclasses
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time

from suite import cache as suite_cache
from suite import outputs
from suite.commands.common_args import path
from suite.core import run_place
from suite.errors import UserError
from suite.reporting import gate, results, thresholds

WORKLOADS = "seed.conv2d_nhwc_7x7s2,resnet50.matmul_add.2048-1000,resnet50.conv2d_add_relu.56x56x64-k1s1-64," \
            "resnet50.conv2d_add_relu.28x28x128-k3s1-128"
SCALED = ("resnet50.conv2d_add_relu.56x56x64-k1s1-64", "float16", "llvm", "tuned")


def _git(repo, *args, date=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _hog():
    while True:
        pass


def _suite(*args, cache=None):
    env = {**os.environ, **({"TVM_SUITE_CACHE": str(cache)} if cache else {})}
    return subprocess.run([sys.executable, "-m", "suite.cli", *args], capture_output=True, text=True, env=env)


def _latency_line(gate) -> str:
    return next((line for line in gate.stdout.splitlines() if line.startswith("latency vs")), "")


def _aa_ratios(history, a, b) -> dict[str, float]:
    """Per combination, the median of B's samples over the median of A's."""
    machine = history.machines[0]  # one machine: this one
    before, after = history.kept(a, machine).timings, history.kept(b, machine).timings
    return {" ".join(ids): after[ids].median / before[ids].median for ids in sorted(before) if ids in after}


def _planted(history, b):
    """The history with B's samples of SCALED made 1.3x slower: a slowdown the gate must catch."""
    machine = history.machines[0]
    side = history.kept(b, machine)
    kept = side.timings[SCALED]
    slower = dataclasses.replace(kept, samples_s=tuple(s * 1.3 for s in kept.samples_s))
    return dataclasses.replace(history, side={**history.side, (b, machine): dataclasses.replace(
        side, timings={**side.timings, SCALED: slower})})


def _gate_pair(out, repo, a, b, limits):
    """The A/A gates (re-measurement off and on) and the A/B gate of the pair (A, B)."""
    results_dir = out / "asv" / "results"
    base = ("gate", "--results", str(results_dir), "--commit", b, "--baseline", a, "--tvm-repo", str(repo))
    off, on = _suite(*base, "--no-remeasure"), _suite(*base)
    history = results.load(results_dir, repo)
    ab = gate.evaluate_named(_planted(history, b), b, limits, a)
    latency = next(c for c in ab.checks if c.name.startswith("latency vs"))
    # The gate's detail lines read "<verdict>: <workload> <dtype> <target> <order>: <ratio>x, p ...".
    judged_slower = any(line.startswith(("slower:", "suspect:", "confirmed:")) and " ".join(SCALED) in line
                        for line in latency.details)
    return {
        "pair": [a[:10], b[:10]],
        "aa_exit_no_remeasure": off.returncode, "aa_exit_remeasure": on.returncode,
        "aa_latency_no_remeasure": _latency_line(off), "aa_latency_remeasure": _latency_line(on),
        "aa_failing": [line for line in off.stdout.splitlines() if line.startswith("fail:")],
        "aa_ratios": _aa_ratios(history, a, b),
        "ab_caught": judged_slower, "ab_latency_status": latency.status.value, "ab_exit": int(ab.verdict.exit_code),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--load", choices=("none", "cpu"), default="none")
    parser.add_argument("--builds", choices=("cached", "beside"), default="cached")
    parser.add_argument("--out", type=path, required=True, help="a new directory (a stand-in repository is made in it)")
    args = parser.parse_args(argv)
    try:  # before any work: a new directory, apart from every history
        out = outputs.check_new(args.out, "--out")
    except UserError as err:
        print(f"gate_noise.py: error: {err}", file=sys.stderr)
        return 2
    limits = thresholds.load()  # once, before the runs
    repo = out / "tvm"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    commits = []
    for i in range(2 * args.pairs):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"run {i}", date=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    hogs = []
    if args.load == "cpu":
        hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(max(1, (os.cpu_count() or 2) - 1))]
        for h in hogs:
            h.start()
    walls = []
    rows = []
    try:
        for i, commit in enumerate(commits):
            cache = None
            if args.builds == "beside":
                cache = out / "caches" / str(i)
                cache.mkdir(parents=True)
            t0 = time.perf_counter()
            done = _suite("run", "--quick", "--workloads", WORKLOADS, "--orders", "tuned", "--out", str(out / "asv"),
                          "--tvm-repo", str(repo), "--tvm-commit", commit, cache=cache)
            walls.append(time.perf_counter() - t0)
            if not done.stdout.strip().splitlines()[-1:] or not done.stdout.strip().splitlines()[-1].startswith(
                    "verdict: "):  # a run's verdict (against the run before it) may be anything; its end may not
                print(done.stdout[-2000:], done.stderr[-2000:])
                return 1
            print(f"run {len(walls)}/{len(commits)}: {walls[-1]:.1f} s", flush=True)
        shutil.rmtree(out / "asv" / run_place.RUNS / run_place.GATE, ignore_errors=True)
        rows = [_gate_pair(out, repo, a, b, limits) for a, b in zip(commits[::2], commits[1::2])]
    finally:
        for h in hogs:
            h.terminate()
    summary = {
        "load": args.load, "builds": args.builds, "pairs": args.pairs, "run_wall_s": {"median": statistics.median(walls), "min": min(walls),
                                                              "max": max(walls), "total": sum(walls)},
        "aa_false_not_ready_no_remeasure": sum(r["aa_exit_no_remeasure"] == 1 for r in rows),
        "aa_no_verdict_no_remeasure": sum(r["aa_exit_no_remeasure"] == 2 for r in rows),
        "aa_false_not_ready_remeasure": sum(r["aa_exit_remeasure"] == 1 for r in rows),
        "aa_latency_suspect_no_remeasure": sum("UNDECIDED" in r["aa_latency_no_remeasure"] for r in rows),
        "aa_latency_fail_remeasure": sum("FAIL" in r["aa_latency_remeasure"] for r in rows),
        "aa_ratio_range": [min(v for r in rows for v in r["aa_ratios"].values()),
                           max(v for r in rows for v in r["aa_ratios"].values())],
        "aa_combination_pairs": sum(len(r["aa_ratios"]) for r in rows),
        "ab_caught": sum(r["ab_caught"] for r in rows),
        "ab_latency_not_pass": sum(r["ab_latency_status"] != "PASS" for r in rows),
        "rows": rows,
    }
    suite_cache.write_text(out / "summary.json", json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
