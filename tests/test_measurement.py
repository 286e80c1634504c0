"""Real TVM builds and runs on the llvm target, measured against the float64 reference."""

import numpy as np
import pytest

from suite import measurement, metrics, workloads

SEED = workloads.SEED_ID


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_seed_conv2d_is_measured_with_real_metrics(dtype):
    record = measurement.measure(SEED, dtype, "llvm")
    assert record["status"] == "ok", record
    m = record["metrics"]
    assert record["accumulation_length"] == 147
    assert record["latency_s"] > 0 and len(record["latency_samples_s"]) == measurement.LATENCY_REPEATS
    assert record["gflops"] == pytest.approx(236_027_904 / record["latency_s"] / 1e9)
    assert m["nonfinite"] == 0
    # Plain recursive summation stays well inside the worst-case rounding bound...
    assert 0 < m["bound_fraction"] < 1
    # ...and a few ULPs of the output scale, in either dtype.
    assert 0.5 < m["scaled_error"] < 50
    assert 1 < m["ulp_mean"] < 100


def test_fp16_error_in_absolute_terms_is_larger_than_fp32():
    fp16 = measurement.measure(SEED, "float16", "llvm")["metrics"]
    fp32 = measurement.measure(SEED, "float32", "llvm")["metrics"]
    assert fp16["max_abs_error"] > 100 * fp32["max_abs_error"]


def test_output_matches_an_independent_recomputation():
    workload = workloads.get("resnet50.matmul_add.2048-1000")
    record = measurement.measure(workload.id, "float32", "llvm")
    assert record["status"] == "ok"
    out = measurement.output(workload.id, "float32", "llvm")
    x, w, b = workloads.make_inputs(workload, "float32")
    expected = x.astype(np.float64) @ w.astype(np.float64) + b
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert record["accumulation_length"] == 2049


def test_measurements_are_cached_and_deterministic(suite_cache):
    record = measurement.measure(SEED, "float32", "llvm")
    where = measurement.entry_dir(SEED, "float32", "llvm")
    assert (where / "record.json").exists() and (where / "kernel.so").exists()
    first = measurement.output(SEED, "float32", "llvm")
    # Same TVM build, same inputs: a fresh compile and run gives bit-identical results.
    (where / "record.json").unlink()
    again = measurement.measure(SEED, "float32", "llvm")
    np.testing.assert_array_equal(measurement.output(SEED, "float32", "llvm"), first)
    assert again["metrics"] == record["metrics"]
    assert metrics.divergence(first, first)["differ_fraction"] == 0.0


def test_kernel_of_a_measured_combination_runs():
    kernel = measurement.load_kernel("resnet50.mean.7x7x2048", "float16", "llvm")
    assert kernel.output().shape == (1, 2048)
