"""Preloaded into the Dask workers tests/test_cluster.py starts (``dask worker --preload``).

``TVM_SUITE_TEST_SLOW``: combination labels ("workload dtype target order", "|"-separated) whose
measurement starts with a pause of ``TVM_SUITE_TEST_SLOW_S`` seconds, so that a test can kill the
worker in the middle of it. ``TVM_SUITE_TEST_FAKE_BUILD``: the TVM build id this worker claims.
Neither changes a result.
"""

import os
import time

from suite.compat import release
from suite.core import measurement

SLOW = set(filter(None, os.environ.get("TVM_SUITE_TEST_SLOW", "").split("|")))
PAUSE_S = float(os.environ.get("TVM_SUITE_TEST_SLOW_S", "4"))
FAKE_BUILD = os.environ.get("TVM_SUITE_TEST_FAKE_BUILD")

_build = getattr(measurement, "_unpaused_build", measurement.build)  # Dask may load this twice


def _slow_build(combo, kernel_path):
    if combo.label in SLOW:
        time.sleep(PAUSE_S)
    return _build(combo, kernel_path)


measurement._unpaused_build, measurement.build = _build, _slow_build
if FAKE_BUILD:
    release.build_id = lambda: FAKE_BUILD
