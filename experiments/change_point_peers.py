"""The change-point detectors the gate is compared with, each in the environment of its own library
(their numpy pins exclude each other and the suite's): reads {"detector": NAME, "series": {key:
[values, oldest first]}} as JSON on stdin, prints {key: [index of each commit found to start a
step]} on stdout.

    python change_point_peers.py < request.json          # with otava or signal-processing-algorithms

- ``otava``: Apache Otava's E-Divisive with a t-test (``otava.analysis.compute_change_points``,
  its defaults but a window the length of the series: 0.001 p-value, no magnitude floor);
- ``edivisive``: MongoDB's ``signal_processing_algorithms`` E-Divisive (permutation test at 0.05,
  100 permutations, seeded).
"""

import json
import sys


def otava(values):
    from otava.analysis import compute_change_points

    points, _ = compute_change_points(values, window_len=max(len(values), 3))
    return sorted(int(p.index) for p in points)


def edivisive(values):
    import numpy as np
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    np.random.seed(0)  # its permutation test draws from numpy's global generator
    return sorted(int(i) for i in e_divisive(values, pvalue=0.05, permutations=100))


def main() -> int:
    request = json.load(sys.stdin)
    detect = {"otava": otava, "edivisive": edivisive}[request["detector"]]
    found = {}
    for key, values in request["series"].items():
        found[key] = detect([float(v) for v in values]) if len(values) >= 3 else []
    json.dump(found, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
