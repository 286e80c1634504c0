"""int8 on Hexagon (docs/int8-hexagon.md): the quantized workloads built for v68 and run under
qemu-hexagon (integer HVX, which QEMU executes itself), exact against the integer oracle; `tuned`
from MetaSchedule with HVX's vrmpy, its use counted in what the emulator executed."""

import json

import numpy as np
import pytest
from conftest import one_line, run_in_process

from suite import targets
from suite.core import dot_product, execution, quantized, schedules, tuning_records, workloads
from suite.targets import hexagon
from suite.targets.base import Output

QF = "hexagon-v68-qf"
#: A 1x1 stride-2 conv2d with a residual (6.4 M multiply-accumulates): 256 output channels and
#: 128 input ones, so its weights pack into vrmpy's 32x4 blocks.
CONV = "resnet18.conv2d_add_radd_relu.28x28x128-k1s2-256"
UNAVAILABLE = targets.get(QF).unavailable()


def test_int8_on_a_target_that_cannot_run_it_is_refused_naming_those_that_can():
    for target in ("cuda", "hexagon-v68"):
        one_line(run_in_process("tune", "--target", target, "--dtype", "int8", "--workloads", CONV),
                 f"int8 cannot be tuned on {target}", "targets that tune int8: llvm, hexagon-v68-qf, hexagon-v73-qf")


def test_an_int8_record_replays_only_on_its_own_instruction_set(tmp_path, monkeypatch):
    # An llvm int8 record holds x86 dot products: a Hexagon target does not fall back to it as it
    # does for float records, so its `tuned` int8 order is a skip until Hexagon is tuned.
    record = {"workload": CONV, "dtype": "int8", "trace": [[], []]}
    record["trace_sha256"] = tuning_records.trace_digest(record["trace"])
    for dtype in ("int8", "float16"):
        path = tuning_records.record_path("llvm", dtype, CONV, tmp_path)
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({**record, "dtype": dtype}))
    monkeypatch.setenv(tuning_records.RECORDS_ENV, str(tmp_path))
    records = targets.get(QF).records_from
    assert tuning_records.records_target(records, "float16", CONV) == "llvm"
    assert tuning_records.records_target(records, "int8", CONV) is None
    assert tuning_records.records_target("llvm", "int8", CONV) == "llvm"
    with pytest.raises(tuning_records.NoTunedRecord, match=f"tvm-suite tune --target {QF} --dtype int8"):
        tuning_records.replay(quantized.prim_func(workloads.get(CONV).chain), CONV, "int8", records)


@pytest.mark.slow
@pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE))
def test_an_int8_conv2d_on_hexagon_is_exact_against_the_oracle():
    done = run_in_process("measure", "--target", QF, "--dtype", "int8", "--workload", CONV,
                          "--order", "default", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout)
    assert record["status"] == "ok", record
    metrics = record["metrics"]
    assert metrics["accumulator_mismatches"] == 0 and metrics["accumulator_wrapped"] == 0
    assert metrics["exact_fraction"] == 1.0 and metrics["max_step_error"] == 0
    assert record["counts"]["packets"] > 0 and record["counts"]["hvx_instructions"] > 0


def _committed_hexagon_int8():
    return [tuning_records.read_record(p)[1] for p in sorted(tuning_records.records_dir(QF, "int8").glob("traces/*.json"))]


def test_every_committed_hexagon_int8_record_says_whether_vrmpy_ran():
    records = _committed_hexagon_int8()
    if not records:
        pytest.skip("no committed Hexagon int8 records")
    for record in records:
        offered, used = record["dot_product"], record["tensorized"]
        assert (offered["intrinsic"], offered["instruction"]) == ("dot_32x4_u8i8i32_vrmpy", "vrmpy")
        assert used["used"] == (used["trace_tensorizes"] and bool(used["instruction_count"])
                                and used["executed_count"] > 0), record["workload"]
        assert record["measure"] == "packets" and record["accumulator_trace_sha256"]
        chain = workloads.get(record["workload"]).chain
        packable = dot_product.pack_weights(quantized.prim_func(chain), chain, 32) is not None
        assert (record.get("prologue") == dot_product.PACK_WEIGHTS_32X4) == packable


@pytest.mark.slow
@pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE))
def test_a_tuned_hexagon_int8_kernel_executes_vrmpy_and_is_exact(tmp_path):
    used = [r for r in _committed_hexagon_int8() if r["tensorized"]["used"]]
    if not used:
        pytest.skip("no committed Hexagon int8 record that used vrmpy")
    record = min(used, key=lambda r: workloads.get(r["workload"]).flops)
    workload, target = workloads.get(record["workload"]), targets.get(QF)
    func = schedules.apply(workloads.prim_func(workload, "int8"), "tuned", workload.id, "int8", QF)
    built = execution.build(target, func, tmp_path / target.KERNEL_FILE, "tuned")
    assert built.failure is None, built.failure
    inputs = workloads.make_inputs(workload, "int8")
    oracle = quantized.evaluate(workload.chain, inputs)
    ran = execution.run(built, [*inputs, Output(tuple(workload.output_shape), "uint8")], twin=False)
    assert ran.failure is None, ran.failure
    assert (ran.output == oracle.output).all()
    stdin = hexagon.encode_inputs(inputs, workload.output_shape, "uint8")
    executed = hexagon.executed_mnemonic_count(built.path.with_suffix(".elf"), stdin, "vrmpy",
                                               ("qemu-hexagon", "-cpu", target.arch))
    # The emulator executes the same instructions on every run: the record's count, again.
    assert executed == record["tensorized"]["executed_count"] > 0
    assert hexagon.mnemonic_count(built.path, "vrmpy") == record["tensorized"]["instruction_count"]
    # Its accumulator, scheduled by the record's accumulator trace, is the oracle's bit for bit.
    acc = schedules.apply(quantized.accumulator_func(workload.chain), "tuned", workload.id, "int8", QF,
                          accumulator=True)
    (tmp_path / "acc").mkdir()
    built_acc = execution.build(target, acc, tmp_path / "acc" / target.KERNEL_FILE, "tuned")
    plan = quantized.plan(workload.chain)
    used_inputs = [inputs[i] for i in (plan.data, plan.weight, plan.bias) if i is not None]
    ran_acc = execution.run(built_acc, [*used_inputs, Output(tuple(workload.output_shape), "int32")], twin=False)
    assert ran_acc.failure is None, ran_acc.failure
    assert np.array_equal(ran_acc.output.astype(np.int64), oracle.accumulator)
