"""The tuning record as `tvm-suite tune` writes it (suite.core.tuning_records.TuningRecord): the fields of
its measure, and the record it replaces where the measure compares them; no TVM, the search faked."""

import json
import types
from pathlib import Path

import pytest

from suite.compat import release, schedules
from suite.core import tuning, tuning_records

EVERY_MEASURE = {"workload", "dtype", "target", "tuned_on", "trials", "tuning_s", "measure", "measure_is",
                 "candidates_measured", "candidates_failed", "candidates_checked", "candidates_refused", "trace",
                 "trace_sha256"}


class Target:
    name = "tgt"

    def __init__(self, measure: str):
        self.tuning_measure = measure

    def identity(self) -> dict:
        return {"target": self.name}


def written(tmp_path, measure: str, measured: list, previous=None, measure_previous=None):
    """(the record returned, the JSON written) of a faked search."""
    found = tuning.Search(None, [["search"]], measured, 3, 1, 7, Path("logs"), 12.34, {"main": None},
                          measure_previous)
    check = types.SimpleNamespace(first_refusal="CHANGED: output[0]")
    logged = []
    record = tuning._record("wl", "float16", Target(measure), 16, logged.append, found, check, previous, tmp_path)
    path = tuning_records.record_path("tgt", "float16", "wl", tmp_path)
    assert str(path) in logged[-1]
    assert tuning_records.read_record(path)[1] == record.to_json()  # its trace_sha256 is its trace's
    return record, json.loads(path.read_text())


@pytest.fixture(autouse=True)
def no_tvm(monkeypatch):
    monkeypatch.setattr(release, "installed_version", lambda: "0.0")
    monkeypatch.setattr(schedules, "schedule", lambda func: types.SimpleNamespace(mod=None))
    monkeypatch.setattr(schedules, "apply_trace", lambda trace, schedule: None)


def test_a_latency_record_has_the_seconds_of_its_candidates(tmp_path):
    record, data = written(tmp_path, "latency", [0.5, 0.75])
    assert set(data) == EVERY_MEASURE | {"candidates_s", "best_measured_s"}
    assert (data["candidates_s"], data["best_measured_s"], data["candidates_measured"]) == ([0.5, 0.75], 0.5, 2)
    assert data["tuned_on"] == {"tvm": "0.0", "target": "tgt"} and data["tuning_s"] == 12.3
    assert record.candidates_measured == 2 and record.best_packets is None
    _, nothing_ran = written(tmp_path, "latency", [])
    assert nothing_ran["best_measured_s"] is None and nothing_ran["candidates_s"] == []


def test_a_packets_record_keeps_the_record_it_replaces_where_that_is_better(tmp_path):
    previous = {"target": "llvm", "trace": [["previous"]], "trace_sha256": "ab", "measure": "latency"}
    packets = EVERY_MEASURE | {"candidates_packets", "candidates_emulated_s", "best_packets", "best_emulated_s"}
    _, alone = written(tmp_path, "packets", [(100, 0.5), (120, 0.25)])
    assert set(alone) == packets
    _, worse = written(tmp_path, "packets", [(100, 0.5)], previous, lambda mod: (150, 0.9))
    assert set(worse) == packets | {"previous_record"} and worse["trace"] == [["search"]]
    assert worse["previous_record"] == {"target": "llvm", "trace_sha256": "ab", "measure": "latency",
                                        "packets": 150, "emulated_s": 0.9, "kept": False}
    record, better = written(tmp_path, "packets", [(100, 0.5)], previous, lambda mod: (50, 0.1))
    assert better["trace"] == [["previous"]] and (better["best_packets"], better["best_emulated_s"]) == (50, 0.1)
    assert better["candidates_packets"] == [100] and better["previous_record"]["kept"] is True
    assert record.trace == [["previous"]]

    def fails(mod):
        raise RuntimeError("no longer replays")

    _, failed = written(tmp_path, "packets", [(100, 0.5)], previous, fails)
    assert failed["previous_record"] == {"target": "llvm", "trace_sha256": "ab", "failed": "no longer replays"}
    assert failed["trace"] == [["search"]] and failed["best_packets"] == 100
