"""Does the triage interpreter agree with the op-chain reference, and how fast is it?

For the seed conv2d and every ResNet-50 workload: the workload's PrimFunc (as Relax legalized
it, float32, the suite's inputs) evaluated by ``suite.triage.interp``, against
``suite.core.reference.evaluate`` of its op chain: the largest difference relative to the
largest |value|, the seconds of the interpreter, and its accumulation length K against
``reference.accumulation_length``. Exits 1 when any workload differs by more than 1e-12.

    python experiments/triage_reference.py [--dtype float32|float16] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from suite.triage import tvmscript
from suite.core import reference, workloads
from suite.triage import interp

TOLERANCE = 1e-12


def measure(workload, dtype: str) -> dict:
    func = workloads.prim_func(workload, dtype)
    program = tvmscript.translate(func, "main")
    inputs = workloads.make_inputs(workload, dtype)
    names = [p.name for p in program.params[:-1]]
    started = time.perf_counter()
    result = interp.evaluate(program, dict(zip(names, inputs)))
    seconds = time.perf_counter() - started
    expected = reference.evaluate(workload.chain, inputs)
    return {"workload": workload.id, "seconds": seconds,
            "max_rel_diff": float(np.max(np.abs(result.output - expected)) / np.max(np.abs(expected))),
            "k": result.k, "chain_k": reference.accumulation_length(workload.chain),
            "findings": [f.message for f in result.findings]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=workloads.DTYPES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(w, args.dtype) for w in [workloads.seed_workload(), *workloads.catalog("resnet50")]]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'workload':55s} {'seconds':>8s} {'max rel diff':>13s} {'K':>6s} {'chain K':>8s}")
        for row in rows:
            print(f"{row['workload']:55s} {row['seconds']:8.2f} {row['max_rel_diff']:13.2e} {row['k']:6d} "
                  f"{row['chain_k']:8d}{'  ' + '; '.join(row['findings']) if row['findings'] else ''}")
        worst = max(rows, key=lambda r: r["max_rel_diff"])
        print(f"{len(rows)} workloads: max relative difference {worst['max_rel_diff']:.2e} ({worst['workload']}), "
              f"{sum(r['seconds'] for r in rows):.1f} s in all, slowest {max(r['seconds'] for r in rows):.2f} s")
    bad = [r for r in rows if not r["max_rel_diff"] <= TOLERANCE or r["findings"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
