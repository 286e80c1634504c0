"""The executed qfloat targets: hexagon-v68-qf (TVM's qfloat code on the suite's model) and
hexagon-v68-qemu (the same code on a user's qfloat-capable QEMU)."""

import os

import numpy as np
import pytest

from suite import targets
from suite.core import measurement, schedules, workloads
from suite.core.combo import Combo
from suite.core.record import Kind, Status
from suite.targets import hexagon_qf
from suite.targets.base import Mode

SEED = workloads.SEED_ID
needs_v68_qemu = pytest.mark.skipif(
    targets.get("hexagon-v68-qf").unavailable() is not None,
    reason=f"{targets.get('hexagon-v68-qf').unavailable()}")
#: A qemu-hexagon without HVX floating point that raises SIGILL at it (Debian unstable's 11.1.3
#: static binary; .ci/run fetches it). Debian 12's backported 10.0.2 aborts in its decoder instead.
NO_HVX_FP_QEMU = os.environ.get("TVM_SUITE_TEST_QEMU_WITHOUT_HVX_FP")


def test_targets_and_what_they_need(monkeypatch):
    qf, real = targets.get("hexagon-v68-qf"), targets.get("hexagon-v68-qemu")
    assert qf.mode is Mode.EMULATED and real.mode is Mode.EMULATED
    assert targets.get("hexagon-v73-qf").mattr[0] == "+hvxv73"
    # Built exactly as the compile-only v68 target builds: the tag's flags, qfloat on.
    assert qf.identity()["mattr"] == targets.get("hexagon-v68").mattr
    assert qf.llvm_options == targets.get("hexagon-v68").llvm_options
    monkeypatch.setattr(hexagon_qf, "emulator_cpus", lambda emulator: frozenset({"v66", "v67"}))
    assert "knows CPU v68" in qf.unavailable()
    monkeypatch.delenv(hexagon_qf.QEMU_ENV, raising=False)
    assert "set TVM_SUITE_QEMU_HEXAGON" in real.unavailable()
    record = measurement.measure(Combo.resolve(SEED, "float16", "hexagon-v68-qemu", "seed-tuned"))
    assert record.status is Status.SKIPPED and "TVM_SUITE_QEMU_HEXAGON" in record.reason


def test_seed_swap_vec_is_the_seed_swap_with_channels_vectorized():
    func = workloads.prim_func(workloads.get(SEED), "float16")
    text = schedules.apply(func, "seed-swap-vec", SEED, "float16", "hexagon-v68").script()
    assert "for ff in T.vectorized(64):" in text
    other = "resnet50.conv2d_add_relu.56x56x64-k3s1-64"
    record = measurement.measure(Combo.resolve(other, "float16", "llvm", "seed-swap-vec"))
    assert record.status is Status.SKIPPED
    assert record.reason == "seed-swap-vec is the seed issue's schedule of seed.conv2d_nhwc_7x7s2 only"


@needs_v68_qemu
@pytest.mark.slow
def test_qfloat_code_runs_on_the_model():
    """A fp16 layer whose bias add LLVM vectorizes (hf + hf -> qf16 -> hf; the untuned conv sum
    itself stays scalar IEEE) runs through the rewrite: close to float64, but not IEEE's result."""
    wid = "resnet50.conv2d_add_relu.56x56x64-k1s1-64"
    qf = measurement.measure(Combo.resolve(wid, "float16", "hexagon-v68-qf", "default"))
    assert qf.status is Status.OK and qf.kind is Kind.EMULATED, qf.reason
    assert qf.emulated_s > 0
    assert qf.codegen["e_flags"] == "0x68" and qf.codegen["rewritten"] > 0
    assert set(qf.codegen["rewritten_forms"]) <= {"vadd(hf,hf)->qf16", "vadd(qf16,hf)->qf16",
                                                  "vadd(qf16,qf16)->qf16", "conv(qf16)->hf",
                                                  "vmax(hf,hf)->hf"}  # bias add, relu
    m = qf.metrics
    assert m["nonfinite"] == 0 and m["prob_bound_fraction"] < 1
    ieee = measurement.output(Combo.resolve(wid, "float16", "llvm", "default"))
    assert not np.array_equal(measurement.output(Combo.resolve(wid, "float16", "hexagon-v68-qf", "default")), ieee)


@needs_v68_qemu
@pytest.mark.slow
@pytest.mark.skipif(not NO_HVX_FP_QEMU, reason="set TVM_SUITE_TEST_QEMU_WITHOUT_HVX_FP to a qemu-hexagon without "
                                               "HVX floating point that raises SIGILL (Debian's 11.1.3)")
def test_a_qemu_without_hvx_fp_fails_naming_the_instruction(monkeypatch):
    monkeypatch.setenv(hexagon_qf.QEMU_ENV, NO_HVX_FP_QEMU)
    record = measurement.measure(Combo.resolve(SEED, "float16", "hexagon-v68-qemu", "seed-tuned"))
    assert record.status is Status.FAILED
    assert "cannot execute HVX floating point: `v" in record.reason and ".qf16 = vmpy(" in record.reason


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get(hexagon_qf.QEMU_ENV),
                    reason="no qemu-hexagon that executes HVX floating point is configured (TVM_SUITE_QEMU_HEXAGON); "
                           "the model has not been compared with one")
def test_model_and_a_real_qfloat_emulator_agree_bit_for_bit():
    for order in ("default", "seed-tuned", "seed-swap-vec"):
        model = measurement.output(Combo.resolve(SEED, "float16", "hexagon-v68-qf", order))
        real = measurement.output(Combo.resolve(SEED, "float16", "hexagon-v68-qemu", order))
        assert np.array_equal(model.view(np.uint16), real.view(np.uint16)), order


class _ObjectOfAnother:
    """A built module whose first ``times`` objects are another module's: two code generations of
    one module that disagree, as TVM's once did (hvx_toolchain.emit_object_and_assembly)."""

    def __init__(self, module, other, times):
        self.module, self.other, self.times = module, other, times

    def write_to_file(self, path, fmt):
        if fmt == "o" and self.times > 0:
            self.times -= 1
            return self.other.write_to_file(path, fmt)
        return self.module.write_to_file(path, fmt)


@needs_v68_qemu
@pytest.mark.slow
def test_an_object_that_is_not_its_assemblys_is_emitted_again(tmp_path):
    from suite.compat import build
    from suite.targets import hvx_asm, hvx_toolchain

    target = targets.get("hexagon-v68-qf")
    matmul = workloads.get("resnet50.matmul_add.2048-1000")  # half a second an emission; a mean takes 10
    built = [build.build(target.prepare(workloads.prim_func(matmul, dtype), "default"), target.tvm_target())
             for dtype in ("float16", "float32")]
    asm = hvx_toolchain.emit_object_and_assembly(_ObjectOfAnother(*built, times=1), tmp_path / "kernel.o")
    assert asm == (tmp_path / "kernel.s").read_text()
    assert hvx_asm.object_padding(asm, tmp_path / "kernel.o") is not None  # the pair agrees now
    with pytest.raises(hvx_asm.RewriteError, match="packets"):
        hvx_toolchain.emit_object_and_assembly(_ObjectOfAnother(*built, times=hvx_toolchain.PAIR_ATTEMPTS),
                                               tmp_path / "again.o")
