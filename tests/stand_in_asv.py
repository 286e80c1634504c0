"""A stand-in for asv 0.6 (``python stand_in_asv.py --config CONF COMMAND ...``, started where
`tvm-suite` starts ``python -m asv``), for tests of `tvm-suite history` without asv's environments,
installs or benchmarks: milliseconds, offline.

``machine`` and ``publish`` do nothing; ``setup`` makes the environment's interpreter; ``run``
over ``HASHFILE:`` does what asv does with each commit it has not finished (``--skip-existing``):
runs the benchmarks its results file lacks, each keeping side data where the run's context in this
process's environment says (as asv's benchmark processes do: ``run_place.current()``, the grid of
``Grid.from_env()``), then writes the commit's results file once. With STOP_AT (a commit) in the
environment it stops in that commit after its first benchmark, prints STOPPED and waits to be
ended (a run interrupted there). Every call appends what it was told (the suite's and git's
variables) to ``stand-in-asv.jsonl`` in the directory it runs in.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

#: name -> version: two benchmark classes, whose values each keeps with the run
BENCHMARKS = {"bench_stand_in.First.track_value": "1", "bench_stand_in.Second.track_value": "1"}
STOP_AT, STOPPED = "STAND_IN_ASV_STOP_AT", "stand-in asv: stopped"
ENV_NAME = "stand-in-py3.11"


def main(args: list[str]) -> int:
    config = json.loads(Path(args[args.index("--config") + 1]).read_text())
    command = args[args.index("--config") + 2]
    told = {k: v for k, v in os.environ.items() if k.startswith(("TVM_SUITE_", "GIT_CONFIG_"))}
    with open("stand-in-asv.jsonl", "a") as log:
        log.write(json.dumps({"command": command, "env": told}) + "\n")
    if command == "setup":
        python = Path(config["env_dir"]) / ENV_NAME / "bin" / "python"
        python.parent.mkdir(parents=True, exist_ok=True)
        python.touch()
    elif command == "run":
        machine = args[args.index("--machine") + 1]
        hashfile = next(a for a in args if a.startswith("HASHFILE:")).removeprefix("HASHFILE:")
        run(Path(config["results_dir"]), machine, Path(hashfile).read_text().split())
    return 0


def run(results_dir: Path, machine: str, commits: list[str]) -> None:
    from suite.core import runstore
    from suite.core.combo import Grid

    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "benchmarks.json").write_text(json.dumps(
        {**{name: {"name": name, "version": version, "params": [], "param_names": []}
            for name, version in BENCHMARKS.items()}, "version": 2}))
    grid = Grid.from_env()
    ids = (grid.workloads[0], grid.dtypes[0], grid.targets[0], grid.orders[0])
    for commit in commits:
        path = results_dir / machine / f"{commit[:8]}-{ENV_NAME}.json"
        results = json.loads(path.read_text())["results"] if path.exists() else {}
        if set(BENCHMARKS) <= set(results):  # --skip-existing: nothing left, the file is left as it is
            continue
        os.environ["ASV_COMMIT"] = commit  # what asv gives each benchmark process
        for name in BENCHMARKS:
            if name in results:
                continue
            benchmark_class, method = name.rsplit(".", 1)
            runstore.note_values(benchmark_class, ids, {method: 1.0})
            results[name] = [[1.0], [], BENCHMARKS[name]]
            if os.environ.get(STOP_AT) == commit:
                print(STOPPED, flush=True)
                time.sleep(600)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "commit_hash": commit, "env_name": ENV_NAME, "date": 1_780_000_000_000, "python": "3.11",
            "params": {"machine": machine, "python": "3.11"}, "requirements": {}, "env_vars": {},
            "result_columns": ["result", "params", "version"], "results": results, "durations": {}, "version": 2}))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
