"""How many schedules `tvm-suite fuzz` judges an hour, per target.

    python experiments/fuzz_throughput.py [--targets llvm,hexagon-v68-qf] [--workloads W,..]
        [--dtype float16] [--minutes 10] [--out DIR]

For each target, one campaign of ``tvm-suite fuzz`` (a process of its own, as a user runs it) on
the workloads, sampled traces only beyond the named orders, stopped by ``--minutes``; the design
spaces are made first by a campaign of one trace, so that the figure is the steady rate, not
MetaSchedule's first design space. Prints, per target, the schedules judged, the seconds, and
judged per hour (the summary's ``judged_per_hour``), and writes them to ``OUT/throughput.json``.
The rate depends on the machine's load: run it on a quiet one, and say which.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from suite import cache, outputs
from suite.commands.common_args import names, path, positive_number
from suite.commands.fuzz import MAX_MINUTES
from suite.errors import UserError

#: Who wrote a throughput.json (its mark: a rerun replaces only its own).
WRITER = "experiments/fuzz_throughput.py"


def campaign(out: Path, target: str, workloads: str, dtype: str, traces: int, minutes: float) -> dict:
    command = [sys.executable, "-m", "suite.cli", "fuzz", "--targets", target, "--workloads", workloads,
               "--dtypes", dtype, "--traces", str(traces), "--minutes", str(minutes), "--seed", "7",
               "--out", str(out), "--json"]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 12, 13, 14):
        sys.exit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    summary = json.loads(done.stdout)
    summary["wall_s"] = time.monotonic() - started
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=names, default=["llvm", "hexagon-v68-qf"])
    p.add_argument("--workloads", default="resnet18.conv2d_add_radd_relu.28x28x128-k1s2-256,resnet18.matmul_add.512-1000")
    p.add_argument("--dtype", default="float16")
    p.add_argument("--minutes", type=positive_number(MAX_MINUTES, "minutes"), default=10.0)
    p.add_argument("--out", type=path, default=path("fuzz-throughput"))
    args = p.parse_args(argv)
    out = args.out
    try:  # before any campaign: apart from every history, and no throughput.json but its own
        outputs.check_dir(out, "--out", WRITER, "throughput.json")
    except UserError as err:
        print(f"fuzz_throughput.py: error: {err}", file=sys.stderr)
        return 2
    found = {}
    for target in args.targets:
        # design spaces made (and cached) first: not part of the rate
        campaign(out / f"{target}-warm", target, args.workloads, args.dtype, 1, 60)
        summary = campaign(out / target, target, args.workloads, args.dtype, 100_000, args.minutes)
        found[target] = {"judged": summary["judged_this_run"], "seconds": summary["seconds"],
                         "judged_per_hour": summary["judged_per_hour"], "where": summary.get("where"),
                         "outcomes": {label: {k: v for k, v in row.items() if v} for label, row in
                                      summary["table"].items()}}
        print(f"{target:16s} {summary['judged_this_run']:6d} judged in {summary['seconds']:7.0f} s: "
              f"{summary['judged_per_hour'] or 0:8.0f} an hour ({summary.get('where')})", flush=True)
    found["machine"] = {"cores": os.cpu_count(), "load": os.getloadavg()}
    cache.write_json(out / "throughput.json", outputs.marked(found, WRITER))
    return 0


if __name__ == "__main__":
    sys.exit(main())
