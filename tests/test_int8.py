"""int8 workloads: the integer oracle on cases worked by hand (requantize's rounding at .5, a known
accumulator, a wrapped one), and real TVM builds of ResNet-18 int8 workloads in two loop orders,
whose int32 accumulators match the oracle bit for bit."""

import json

import numpy as np
import pytest

from conftest import one_line, run_in_process
from suite.core import execution, measurement, quantized, workloads
from suite.core.combo import Combo, Grid
from suite.core.record import Status
from suite.targets import get as target
from suite.targets.base import Output

#: x (1x4 uint8) . w (4x3 int8) + bias: a matmul small enough to work out by hand.
MATMUL = {"inputs": [{"shape": [1, 4], "role": "activation"}, {"shape": [4, 3], "role": "weight", "fan_in": 4},
                     {"shape": [1, 3], "role": "bias"}],
          "steps": [{"op": "matmul", "args": [["input", 0], ["input", 1]], "attrs": {}},
                    {"op": "add", "args": [["step", 0], ["input", 2]], "attrs": {}}],
          "output_shape": [1, 3]}


def test_requantize_rounds_half_up_at_every_half():
    half = quantized.Requantize.of(0.5)
    assert (half.multiplier, half.total_shift) == (2 ** 30, 31)
    acc = np.array([5, 3, 1, -1, -3, -5, -6, 4])
    # x / 2 rounded half towards +infinity: 2.5 -> 3, -2.5 -> -2, -1.5 -> -1, -0.5 -> 0
    assert half.apply(acc).tolist() == [3, 2, 1, 0, -1, -2, -3, 2]
    # Just below and just above a half: 0.75 * 2 = 1.5 -> 2, and 0.75 * 3 = 2.25 -> 2.
    three_quarters = quantized.Requantize.of(0.75)
    assert three_quarters.apply(np.array([2, 3, -2])).tolist() == [2, 2, -1]


def test_the_multiplier_is_in_its_range_and_near_the_factor():
    for real in (0.9999999999, 0.5, 1 / 3, 1e-6):
        rq = quantized.Requantize.of(real)
        assert 2 ** 30 <= rq.multiplier < 2 ** 31
        assert rq.multiplier * 2.0 ** -rq.total_shift == pytest.approx(real, rel=2 ** -30)


def test_the_oracle_of_a_matmul_worked_by_hand():
    x = np.array([[1, 2, 3, 255]], np.uint8)
    w = np.array([[1, -1, 0], [2, -2, 0], [3, -3, 0], [-128, 127, 1]], np.int8)
    b = np.array([[10, -10, 0]], np.int32)
    found = quantized.evaluate(MATMUL, [x, w, b])
    assert found.accumulator.tolist() == [[1 + 4 + 9 - 255 * 128 + 10, -14 + 255 * 127 - 10, 255]]
    rq = quantized.plan(MATMUL).requantize
    expected = np.clip(rq.apply(found.accumulator) + quantized.ZERO_POINT, 0, 255)
    assert found.output.tolist() == expected.tolist() and found.output.dtype == np.uint8


def test_a_wrapped_accumulator_is_reported_and_compared_with_its_wrap():
    oracle = quantized.Oracle(np.array([255, 0, 7], np.uint8), np.array([2 ** 31 + 5, -(2 ** 31) - 1, 7]))
    wrapped = np.array([-(2 ** 31) + 5, 2 ** 31 - 1, 7], np.int32)
    found = quantized.metrics(np.array([255, 0, 7], np.uint8), wrapped, oracle)
    assert found == {"exact_fraction": 1.0, "max_step_error": 0.0, "accumulator_mismatches": 0.0,
                     "accumulator_wrapped": 2.0}
    # Saturating instead of wrapping is a different value: a mismatch, never "close".
    saturated = np.array([2 ** 31 - 1, -(2 ** 31), 8], np.int32)
    found = quantized.metrics(np.array([250, 0, 9], np.uint8), saturated, oracle)
    assert found["accumulator_mismatches"] == 3 and found["exact_fraction"] == pytest.approx(1 / 3)
    assert found["max_step_error"] == 5


def test_every_resnet_workload_has_a_quantized_form_with_its_dtypes():
    for model in ("resnet18", "resnet50"):
        for workload in workloads.catalog(model):
            found = quantized.plan(workload.chain)
            dtypes = quantized.input_dtypes(workload.chain)
            assert dtypes[found.data] == "uint8" and (found.weight is None or dtypes[found.weight] == "int8")
            assert found.relu == ("relu" in [s["op"] for s in workload.chain["steps"]])


def test_int8_is_asked_for_never_in_the_default_grid_and_unknown_dtypes_are_refused(cli):
    assert Grid.of(["resnet18.mean.7x7x512"]).dtypes == ["float32", "float16"]
    assert Grid.of(["resnet18.mean.7x7x512"], ["int8"]).dtypes == ["int8"]
    for bad in ("int4", "float8"):
        one_line(run_in_process("run", "--dtypes", bad, "--workloads", "resnet18.mean.7x7x512"),
                 f"unknown dtype '{bad}'", "float32, float16, int8")
    # A target that does not run int8 says so, naming those that do.
    one_line(run_in_process("model", "--model", "resnet18", "--dtypes", "int8", "--targets", "llvm-avx512bf16",
                            "--inputs", "1"), "llvm-avx512bf16 does not run int8", "runs on: llvm, hexagon-v68-qf")


def test_a_target_that_cannot_run_int8_records_a_skip_with_its_reason():
    record = measurement.measure(Combo.resolve("resnet18.mean.7x7x512", "int8", "hexagon-v68"))
    assert record.status is Status.SKIPPED and "hexagon-v68 does not run int8" in record.reason


def test_a_small_int8_workload_is_exact_through_measure_in_both_orders(cli):
    for order in ("default", "reduction-outer"):
        result = run_in_process("measure", "--workload", "resnet18.mean.7x7x512", "--dtype", "int8",
                                "--order", order, "--json")
        assert result.returncode == 0, result.stderr[-2000:]
        shown = json.loads(result.stdout)
        assert shown["metrics"] == {"exact_fraction": 1.0, "max_step_error": 0.0, "accumulator_mismatches": 0.0,
                                    "accumulator_wrapped": 0.0}
        assert "ulp_mean" not in shown["metrics"] and shown["latency"]["median_s"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["resnet18.conv2d_add_radd_relu.56x56x64-k1s2-128",
                                      "resnet18.max_pool2d.112x112x64-k3s2", "resnet18.matmul_add.512-1000"])
@pytest.mark.parametrize("order", ["default", "reduction-outer"])
def test_resnet18_int8_accumulators_are_bit_exact(workload, order):
    combo = Combo.resolve(workload, "int8", "llvm", order)
    record = measurement.measure(combo)
    assert record.ok, record.reason
    assert record.metrics["accumulator_mismatches"] == 0 and record.metrics["exact_fraction"] == 1.0
    # The kept accumulator is the oracle's, element for element.
    kept = np.load(combo.entry / measurement.ACCUMULATOR_FILE)
    oracle = quantized.evaluate(combo.workload.chain, workloads.make_inputs(combo.workload, "int8"))
    assert kept.dtype == np.int32 and np.array_equal(kept.astype(np.int64), oracle.accumulator)
    assert np.array_equal(measurement.output(combo), oracle.output)


@pytest.mark.slow
def test_tvm_wraps_an_int32_accumulator_that_leaves_int32(tmp_path):
    x = np.array([[255, 255, 255, 255]], np.uint8)
    w = np.array([[127, -127, 1]] * 4, np.int8)
    b = np.array([[2 ** 31 - 1000, -(2 ** 31) + 1000, 7]], np.int32)
    oracle = quantized.evaluate(MATMUL, [x, w, b])
    built = execution.build(target("llvm"), quantized.accumulator_func(MATMUL), tmp_path / "acc.so")
    acc = execution.run(built, [x, w, b, Output((1, 3), "int32")]).output
    found = quantized.metrics(oracle.output, acc, oracle)
    # Two elements leave int32; the kernel stored their two's-complement wrap, as x86 adds.
    assert found["accumulator_wrapped"] == 2 and found["accumulator_mismatches"] == 0
