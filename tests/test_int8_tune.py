"""The `tuned` order of int8 on llvm: MetaSchedule with the CPU's dot-product intrinsic (VNNI's
``dot_16x4_vnni`` where the CPU has avx512_vnni, else ``dot_16x4_avx512``, else none), every
candidate checked against the exact integer oracle, the record saying which intrinsic was offered
and whether the kept kernel used it (``vpdpbusd`` in its disassembly)."""

import json
import shutil

import numpy as np
import pytest
from conftest import one_line, run_in_process

from suite.compat import intrinsics, release, schedules
from suite.core import (
    dot_product,
    execution,
    quantized,
    tuning,
    tuning_records,
    workloads,
)
from suite.reporting import thresholds
from suite.targets import get as target
from suite.targets import llvm
from suite.targets.base import Output

MEAN = "resnet18.mean.7x7x512"
VNNI_CPU = "avx512_vnni" in llvm.host_cpu_flags()


def test_the_intrinsic_follows_the_cpu_features():
    vnni = llvm.dot_product_intrinsic(frozenset({"avx2", "avx512f", "avx512bw", "avx512_vnni"}))
    assert (vnni.intrinsic, vnni.instruction) == ("dot_16x4_vnni", "vpdpbusd")
    avx512 = llvm.dot_product_intrinsic(frozenset({"avx2", "avx512f", "avx512bw"}))
    assert (avx512.intrinsic, avx512.instruction) == ("dot_16x4_avx512", "vpmaddubsw")
    assert "not avx512_vnni" in avx512.reason
    for without in (frozenset({"avx2", "fma"}), frozenset(), frozenset({"avx512f"})):
        none = llvm.dot_product_intrinsic(without)
        assert (none.intrinsic, none.instruction) == (None, None) and "no dot-product intrinsic" in none.reason
    assert llvm.dot_product_intrinsic() == llvm.dot_product_intrinsic(llvm.host_cpu_flags())


def test_int8_is_tuned_where_it_runs_and_unknown_dtypes_are_refused():
    one_line(run_in_process("tune", "--target", "cuda", "--dtype", "int8", "--workloads", MEAN),
             "int8 cannot be tuned on cuda", "does not run int8", "targets that tune int8: llvm")
    one_line(run_in_process("tune", "--target", "llvm", "--dtype", "int4", "--workloads", MEAN),
             "unknown dtype 'int4'", "float32, float16, int8")


def test_an_int8_record_without_a_trace_of_its_accumulator_is_a_skip_with_its_reason(tmp_path, monkeypatch):
    record = {"workload": MEAN, "dtype": "int8", "trace": [[], []]}
    record["trace_sha256"] = tuning_records.trace_digest(record["trace"])
    path = tuning_records.record_path("llvm", "int8", MEAN, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    monkeypatch.setenv(tuning_records.RECORDS_ENV, str(tmp_path))
    func = quantized.accumulator_func(workloads.get(MEAN).chain)
    with pytest.raises(tuning_records.NoTunedRecord, match="no accumulator trace"):
        tuning_records.replay(func, MEAN, "int8", "llvm", accumulator=True)


def test_a_record_that_used_vnni_is_a_skip_on_a_cpu_without_it():
    used = [r for r in _committed_int8() if r["tensorized"]["used"]]
    if not used:
        pytest.skip("no committed int8 record that used a dot-product intrinsic")
    record = used[0]
    func = quantized.prim_func(workloads.get(record["workload"]).chain)
    with pytest.raises(tuning_records.NoTunedRecord, match="this CPU lacks avx512_vnni"):
        tuning_records.replay(func, record["workload"], "int8", "llvm", cpu_flags=frozenset({"avx2", "avx512f", "avx512bw"}))


def _built(func, where):
    built = execution.build(target("llvm"), func, where / "kernel.so")
    assert built.failure is None, built.failure
    return built.path


def _packed_dot_product(intrinsic: str):
    """A uint8 x int8 -> int32 matmul (16x64 by 64x32) whose weights lie in 16x4 blocks, its inner
    16x4 tensorized with ``intrinsic``: (function, its exact output)."""
    te = release.te()
    a = te.placeholder((16, 64), "uint8", name="a")
    b = te.placeholder((2, 16, 16, 4), "int8", name="b")
    k = te.reduce_axis((0, 64), "k")
    c = te.compute((16, 32), lambda i, j: te.sum(
        a[i, k].astype("int32") * b[j // 16, k // 4, j % 16, k % 4].astype("int32"), axis=k), name="c")
    schedule = schedules.schedule(te.create_prim_func([a, b, c]))
    block = schedule.get_sblock("c")
    i, j, kk = schedule.get_loops(block)
    jo, ji = schedule.split(j, [None, 16])
    ko, ki = schedule.split(kk, [None, 4])
    schedule.reorder(i, jo, ko, ji, ki)
    schedule.decompose_reduction(block, ko)
    schedule.tensorize(ji, intrinsic)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (16, 64)).astype(np.uint8)
    w = rng.integers(-128, 128, (2, 16, 16, 4)).astype(np.int8)
    exact = x.astype(np.int64) @ w.transpose(0, 2, 1, 3).reshape(32, 64).T.astype(np.int64)
    return schedule.mod["main"], [x, w], exact


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("llvm-objdump") and not shutil.which("objdump"), reason="no disassembler")
def test_the_instruction_is_counted_in_a_real_build(tmp_path):
    # The default int8 kernel of the mean has no dot product: 0, not None (the disassembler ran).
    func = workloads.prim_func(workloads.get(MEAN), "int8")
    assert dot_product.instruction_count(_built(func, tmp_path), "vpdpbusd") == 0
    if not VNNI_CPU:
        pytest.skip("this CPU has no avx512_vnni: a vpdpbusd kernel would not run here")
    # VNNI's intrinsic as the suite registers it for the installed TVM's LLVM: it builds, it is
    # vpdpbusd in the code, and it is exact.
    func, inputs, exact = _packed_dot_product(intrinsics.dot_product_intrinsic_name("dot_16x4_vnni"))
    (tmp_path / "dot").mkdir()
    built = execution.build(target("llvm"), func, tmp_path / "dot" / "kernel.so")
    assert built.failure is None, built.failure
    assert dot_product.instruction_count(built.path, "vpdpbusd") >= 1
    ran = execution.run(built, [*inputs, Output((16, 32), "int32")], twin=False)
    assert (ran.output.astype(np.int64) == exact).all()


def _committed_int8():
    return [tuning_records.read_record(p)[1] for p in sorted(tuning_records.records_dir("llvm", "int8").glob("traces/*.json"))]


def test_every_committed_int8_record_says_what_it_was_offered_and_used():
    records = _committed_int8()
    if not records:
        pytest.skip("no committed int8 records")
    for record in records:
        offered, used = record["dot_product"], record["tensorized"]
        assert offered["intrinsic"] in ("dot_16x4_vnni", "dot_16x4_avx512", None), record["workload"]
        assert used["used"] == (used["trace_tensorizes"] and bool(used["instruction_count"])), record["workload"]
        assert record["candidates_refused"] == 0 or record["candidates_measured"] >= 1
        assert record["accumulator_trace_sha256"] == tuning_records.trace_digest(record["accumulator_trace"])
        # Weights packed 16x4 exactly where a conv2d's or matmul's channels allow it and an intrinsic was offered.
        chain = workloads.get(record["workload"]).chain
        packable = dot_product.pack_weights(quantized.prim_func(chain), chain) is not None
        assert (record.get("prologue") == dot_product.PACK_WEIGHTS) == (packable and offered["intrinsic"] is not None)


@pytest.mark.slow
def test_a_committed_tensorized_record_replays_with_vpdpbusd_and_exact(tmp_path):
    used = [r for r in _committed_int8() if r["tensorized"]["used"]]
    if not used or not VNNI_CPU:
        pytest.skip("no committed int8 record that used vpdpbusd, or no avx512_vnni on this CPU")
    record = min(used, key=lambda r: workloads.get(r["workload"]).flops)
    workload = workloads.get(record["workload"])
    func = tuning_records.replay(workloads.prim_func(workload, "int8"), workload.id, "int8", "llvm")
    assert dot_product.instruction_count(_built(func, tmp_path), "vpdpbusd") == record["tensorized"]["instruction_count"]
    shown = run_in_process("measure", "--workload", workload.id, "--dtype", "int8", "--order", "tuned", "--json")
    assert shown.returncode == 0, shown.stderr[-2000:]
    metrics = json.loads(shown.stdout)["metrics"]
    assert metrics["exact_fraction"] == 1.0 and metrics["accumulator_mismatches"] == 0


def _tune(flags, records):
    bound = thresholds.load().bound
    return tuning.tune(MEAN, "int8", target("llvm"), 2, lam=bound.lam, limit=bound.max_fraction, root=records,
                       cpu_flags=flags)


@pytest.mark.slow
@pytest.mark.longest
def test_a_cpu_without_dot_products_tunes_int8_without_an_intrinsic_and_says_so(tmp_path, monkeypatch):
    path = _tune(frozenset({"avx2", "fma"}), tmp_path)
    record = tuning_records.read_record(path)[1]
    assert record["dot_product"] == {"intrinsic": None, "instruction": None, "chosen_by": "the flags given",
                                     "cpu_flags": ["avx2", "fma"],
                                     "reason": "the CPU has neither avx512_vnni nor avx512bw: no dot-product intrinsic"}
    assert record["tensorized"] == {"trace_tensorizes": False, "instruction": None, "instruction_count": None,
                                    "used": False}
    assert record["candidates_refused"] == 0 and record["candidates_checked"] >= 1
    # The record replays as the tuned order, kernel and accumulator, exact.
    monkeypatch.setenv(tuning_records.RECORDS_ENV, str(tmp_path))
    shown = run_in_process("measure", "--workload", MEAN, "--dtype", "int8", "--order", "tuned", "--json")
    assert shown.returncode == 0, shown.stderr[-2000:]
    metrics = json.loads(shown.stdout)["metrics"]
    assert metrics["exact_fraction"] == 1.0 and metrics["accumulator_mismatches"] == 0
