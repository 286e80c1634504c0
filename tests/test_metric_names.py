"""One name per metric: what each benchmark class reads holds every value under its metric's name
(suite.tracked), whatever shorter name a record or a kept file stores it under."""

import importlib
import types
from pathlib import Path

import numpy as np
import pytest

from suite import tracked
from suite.core import metrics, quantized
from suite.core.record import Kind, Record, Status
from suite.targets import hexagon

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def benchmarks(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return lambda module: importlib.import_module(f"benchmarks.{module}")


def full_record() -> Record:
    """A record with every value a record can hold, each as its producer names it."""
    r = np.linspace(-1.0, 1.0, 16)
    y = r.astype(np.float32)
    accuracy = metrics.accuracy_metrics(y, r, np.abs(r), 4, np.float32)
    return Record("w", "float16", "hexagon-v68-qf", "default", Status.OK, kind=Kind.EMULATED, compile_s=1.0,
                  emulated_s=2.0, accumulation_length=4, metrics=accuracy, twin_metrics=accuracy,
                  codegen={"object_bytes": 10, "code_bytes": 8, **hexagon.asm_metrics("")},
                  counts={**dict.fromkeys(hexagon.COUNTS, 7), "packet_floor": 5})


def int8_record() -> Record:
    """An int8 record: judged against the integer oracle, with none of the float metrics."""
    oracle = quantized.Oracle(np.array([1, 2], np.uint8), np.array([5, -7]))
    found = quantized.metrics(oracle.output, oracle.accumulator.astype(np.int32), oracle)
    return Record("w", "int8", "llvm", "default", Status.OK, kind=Kind.LATENCY, compile_s=1.0, metrics=found)


def test_a_records_values_name_every_metric_of_the_classes_that_read_it(benchmarks):
    values, integer_values = full_record().values(), int8_record().values()
    readers = []
    for metric in tracked.METRICS:
        cls = getattr(benchmarks(metric.module), metric.cls)
        if getattr(cls, "read", None) is benchmarks("common").ComboBenchmark.read:
            readers.append(metric.cls)
            assert metric.name in (integer_values if cls.dtypes == "INTEGER_DTYPES" else values), metric
    assert set(readers) == {"Accuracy", "IntegerAccuracy", "TwinAccuracy", "HexagonCodegen", "HexagonEmulated",
                            "HexagonCounts"}
    assert not {"ulp_mean", "bound_fraction"} & set(integer_values)
    # The record keeps its own spellings (cached records and `measure --json` show them).
    assert {"compile_s", "emulated_s"} <= set(full_record().to_json())
    assert {"qfloat_total", "hvx_fp_vector", "scalar_fp"} <= set(full_record().to_json()["codegen"])


def test_latency_and_the_peer_ratios_are_read_under_their_metrics_names(benchmarks, monkeypatch):
    latency, peer = benchmarks("bench_latency"), benchmarks("bench_peer")
    timing = types.SimpleNamespace(for_asv=lambda combo: types.SimpleNamespace(median=0.5),
                                   gflops=lambda combo, seconds: 2.0 / seconds)
    monkeypatch.setattr(latency, "timing", timing)
    monkeypatch.setattr(peer, "timing", timing)
    # As the run keeps them (suite.core.runstore's peers/ files).
    monkeypatch.setattr(peer, "peers", types.SimpleNamespace(
        ratios_for_asv=lambda combo, seconds: {"ratio": seconds * 2, "eager_ratio": seconds * 3}))
    for module, cls, expected in (("bench_latency", latency.Throughput, {"latency": 0.5, "gflops": 4.0}),
                                  ("bench_peer", peer.PyTorchPeer, {"peer_ratio": 1.0, "peer_ratio_eager": 1.5})):
        benchmark = object.__new__(cls)
        benchmark.combo = None
        assert benchmark.read() == expected
        assert {m.name for m in tracked.of_class(module, cls.__name__)} == set(expected)


def test_a_model_settings_values_name_every_metric_of_the_model_classes():
    """A qfloat setting in tuned (twin and packets included): suite.model.grid's values hold
    every metric bench_model's classes declare, under its name."""
    from suite.model import grid as model_grid
    from suite.model.results import Apart, Metrics, SettingResult, Status, TwinMetrics

    errors = {"max_abs_error": 0.01, "mean_abs_error": 0.001, "rmse": 0.002, "nonfinite": 0, "top1_agreement": 0.875,
              "top5_agreement": 1.0}
    metrics_ = Metrics(**errors, vs_llvm=Apart(0.01, 0.001), rmse_ratio=1.2, rmse_ratio_fp32=7000.0,
                       torch_multiplier=3.0, within_torch_rule=True, vs_default=Apart(0.01, 0.001),
                       rmse_ratio_default=1.1)
    twin = TwinMetrics(**{**errors, "top1_agreement": 1.0}, rmse_ratio=1.0, vs_target=Apart(0.01, 0.001),
                       rmse_ratio_default=1.0)
    result = SettingResult("float16", "hexagon-v68-qf", "tuned", True, Status.MEASURED, metrics=metrics_,
                           per_input={"packets": 1e6}, ieee_twin=twin)
    values = model_grid.values(result)
    assert set(values) == {m.name for m in tracked.METRICS if m.module == "bench_model"}
    assert values["model_tuned_rmse_ratio"] == 1.1 and values["model_packets_per_input"] == 1e6
