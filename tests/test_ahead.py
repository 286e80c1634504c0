"""Measuring ahead (suite.core.ahead): the helper process that measures the next combinations of
`run` while the suite times the current one."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from suite.core import ahead, entries, measurement
from suite.core.combo import Combo

MEAN = "resnet50.mean.7x7x2048"


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache"


def _combos():
    return [Combo.resolve(MEAN, dtype, "llvm", "default") for dtype in ("float32", "float16")]


def test_the_helper_measures_in_order_into_the_cache_the_same_values(fresh_cache, tmp_path, monkeypatch):
    combos = _combos()
    with ahead.MeasureAhead(combos) as helper:
        helper.wait(combos[0])
        assert entries.cached(combos[0]) is not None
        helper.wait(combos[1])
        assert all(entries.cached(c) is not None for c in combos)
        assert helper.busy_s > 0
    by_helper = {c: (measurement.measure(c), measurement.output(c)) for c in combos}
    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path / "other"))
    (tmp_path / "other").mkdir()
    for combo in combos:  # measured here, in this process: bit for bit what the helper measured
        record, output = measurement.measure(combo), measurement.output(combo)
        assert record.ok and record.metrics == by_helper[combo][0].metrics
        assert np.array_equal(output, by_helper[combo][1]) and output.dtype == by_helper[combo][1].dtype


def test_waiting_on_a_helper_that_is_ahead_takes_no_look_through_proc(monkeypatch):
    """The helper is mostly ahead of the timing: waiting for a combination it has measured reads
    its line and returns, without a look through /proc for its CPU seconds (milliseconds of the
    timing process's time each); that look is for a helper that keeps the suite waiting (the tests
    below)."""
    from suite import children

    echo = "import sys\nfor line in sys.stdin: print(line.rstrip('\\n') + '\\t0.25', flush=True)"
    start = children.start_python
    monkeypatch.setattr(children, "start_python", lambda args, **kwargs: start(["-c", echo], **kwargs))
    monkeypatch.setattr(ahead, "POLL_S", 60.0)  # no poll runs out while the stand-in starts, however loaded
    looked = []
    monkeypatch.setattr(ahead, "_session", lambda pid: looked.append(pid) or [])
    combos = _combos()
    with ahead.MeasureAhead(combos) as helper:
        for combo in combos:
            helper.wait(combo)
    assert helper.busy_s == 0.5 and helper.taken_back is None
    assert looked == []


def test_a_stopped_helper_leaves_the_rest_to_the_caller(fresh_cache):
    combos = _combos()
    helper = ahead.MeasureAhead(combos)
    helper.close()
    started = time.perf_counter()
    helper.wait(combos[1])  # it never comes: wait returns at once
    assert time.perf_counter() - started < 1
    assert entries.cached(combos[1]) is None
    assert measurement.measure(combos[1]).ok


def test_a_helper_is_worth_it_for_more_than_one_combination():
    combos = _combos()
    assert ahead.worth_it(combos) is (len(os.sched_getaffinity(0)) > 1)
    assert not ahead.worth_it(combos[:1])


@pytest.mark.parametrize("how", ["stopped", "no progress"])
def test_a_stopped_or_wedged_helper_is_ended_and_its_work_taken_back(fresh_cache, monkeypatch, how):
    """kill -STOP the helper: the suite does not wait on it for as long as it stays stopped. A
    helper whose processes use no CPU for STALL_S seconds (here told it is sleeping, not stopped)
    is wedged, and taken back the same way."""
    import signal

    combos = _combos()
    helper = ahead.MeasureAhead(combos)
    os.kill(helper._process.pid, signal.SIGSTOP)
    if how == "no progress":
        monkeypatch.setattr(ahead, "_state", lambda pid: "S")
        monkeypatch.setattr(ahead, "STALL_S", 1.0)
    started = time.perf_counter()
    helper.wait(combos[0])
    waited = time.perf_counter() - started
    assert waited < (2 if how == "stopped" else 5), waited
    assert helper.taken_back.endswith("is stopped" if how == "stopped" else "made no progress for 1 s")
    assert helper._process.poll() is not None  # ended, not left stopped
    helper.wait(combos[1])  # the rest: at once
    assert measurement.measure(combos[1]).ok
