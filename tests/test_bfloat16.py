"""bfloat16 on llvm (docs/bfloat16.md): its format and rounding bounds by value, its inputs rounded
to nearest even from the float draws, unknown dtypes refused, a CPU without AVX-512 BF16 skipped
with its reason, and real ResNet-18 bf16 kernels on both llvm settings within the Higham bound."""

import math
import shutil
import subprocess

import numpy as np
import pytest

from conftest import one_line, run_in_process
from suite import floats
from suite.core import bounds, measurement, metrics, reference, workloads
from suite.core.combo import Combo, Grid
from suite.core.record import Need, Status
from suite.targets import get as target
from suite.targets import llvm

#: A 1x1 stride-2 conv2d with a bias and a residual (K = 64 + 2): a rigorous bound exists in bf16.
CONV = "resnet18.conv2d_add_radd_relu.56x56x64-k1s2-128"
#: The classifier: K = 512 + 1 >= 256, so bf16 has no rigorous bound there.
MATMUL = "resnet18.matmul_add.512-1000"


def test_the_bfloat16_format_and_its_bounds_by_value():
    assert bounds.unit_roundoff("bfloat16") == 2.0 ** -8
    # gamma_K = K u / (1 - K u): 255/256 / (1/256) = 255 at K = 255; none from K = 256 (K u >= 1).
    assert bounds.gamma(255, "bfloat16") == 255.0
    assert bounds.gamma(64, "bfloat16") == pytest.approx((64 / 256) / (1 - 64 / 256))
    assert math.isnan(bounds.gamma(256, "bfloat16")) and math.isnan(bounds.gamma(513, "bfloat16"))
    u = 2.0 ** -8
    assert bounds.gamma_tilde(513, "bfloat16", 9.4) == pytest.approx(math.expm1(9.4 * math.sqrt(513) * u
                                                                               + 513 * u * u / (1 - u)))
    # The spacing of bf16: 2^-7 at 1, 2^-6 at 3, float32's least subnormal spacing times 2^16 at 0.
    assert metrics.ulp(np.array([1.0, 3.0, 0.0]), "bfloat16").tolist() == [2.0 ** -7, 2.0 ** -6, 2.0 ** -133]
    bf16 = floats.bfloat16_type()
    a = np.array([1.0, -0.0, 2.0, -1.0], dtype=bf16)
    b = np.array([1.0078125, 0.0, 2.0, 1.0], dtype=bf16)
    assert metrics.ulp_distance(a, b).tolist() == [1, 0, 0, 2 * 0x3F80]


def test_inputs_are_the_float_draws_rounded_to_nearest_even_and_the_reference_is_theirs():
    workload = workloads.get(MATMUL)
    inputs = workloads.make_inputs(workload, "bfloat16")
    again = workloads.make_inputs(workload, "bfloat16")
    bits = [x.view(np.uint16) for x in inputs]
    assert all(x.dtype.name == "bfloat16" for x in inputs)
    assert all(np.array_equal(a, b.view(np.uint16)) for a, b in zip(bits, again))  # fixed seeds
    # Rounded from the same float64 draws as float32's, to nearest, ties to even: widened back,
    # each is within half a bf16 spacing of the float32 draw (itself 2^-24 relative from float64).
    wide = [x.astype(np.float64) for x in workloads.make_inputs(workload, "float32")]
    for rounded, draw in zip(inputs, wide):
        half = metrics.ulp(draw, "bfloat16") / 2
        assert np.all(np.abs(rounded.astype(np.float64) - draw) <= half * (1 + 2.0 ** -16))
    ref, _ = measurement.reference_arrays(workload, "bfloat16")
    assert np.array_equal(ref, reference.evaluate(workload.chain, [x.astype(np.float64) for x in inputs]))


def test_bfloat16_is_asked_for_and_unknown_dtypes_are_refused_in_one_line(cli):
    assert Grid.of([MATMUL]).dtypes == ["float32", "float16"]
    assert Grid.of([MATMUL], ["bfloat16"], ["llvm", "llvm-avx512bf16"]).dtypes == ["bfloat16"]
    # asv's accuracy and divergence classes read the float dtypes, bfloat16 with them; int8 apart.
    grid = Grid.of([MATMUL], ["bfloat16", "int8"], ["llvm"])
    assert grid.for_need(Need.OUTPUT, False, workloads.FLOAT_DTYPES).dtypes == ["bfloat16"]
    assert grid.for_need(Need.OUTPUT, False, workloads.INTEGER_DTYPES).dtypes == ["int8"]
    for bad in ("int4", "float8"):
        one_line(run_in_process("run", "--dtypes", f"float16,{bad}", "--workloads", MATMUL),
                 f"unknown dtype '{bad}'", "float32, float16, int8, bfloat16")
        one_line(run_in_process("measure", "--workload", MATMUL, "--dtype", bad), f"unknown dtype '{bad}'",
                 "bfloat16")


def test_a_target_or_cpu_that_cannot_run_bfloat16_records_a_skip_with_its_reason(monkeypatch):
    record = measurement.measure(Combo.resolve(MATMUL, "bfloat16", "hexagon-v68"))
    assert record.status is Status.SKIPPED and "hexagon-v68 does not run bfloat16" in record.reason
    record = measurement.measure(Combo.resolve(MATMUL, "float32", "llvm-avx512bf16"))
    assert record.status is Status.SKIPPED and "only bfloat16" in record.reason
    # A CPU without AVX-512 BF16 (its flags played here): the native setting is a skip, never a failure.
    monkeypatch.setattr(llvm, "host_cpu_flags", lambda: frozenset({"avx2", "fma", "avx512f"}))
    record = measurement.measure(Combo.resolve(MATMUL, "bfloat16", "llvm-avx512bf16"))
    assert record.status is Status.SKIPPED
    assert "llvm-avx512bf16 needs a CPU with avx512_bf16" in record.reason


def test_the_bfloat16_instructions_of_a_library_are_counted(tmp_path):
    if shutil.which("objdump") is None or shutil.which("objcopy") is None:
        pytest.skip("objdump and objcopy (binutils) are not installed")
    # vcvtneps2bf16 %xmm1, %xmm0 and vdpbf16ps %zmm2, %zmm1, %zmm0 (EVEX, as GNU as encodes them), ret.
    blob = tmp_path / "code.bin"
    blob.write_bytes(bytes.fromhex("62f27e0872c1 62f2764852c2 c3"))
    elf = tmp_path / "code.o"
    done = subprocess.run(["objcopy", "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64", "--rename-section",
                           ".data=.text,alloc,load,readonly,code,contents", str(blob), str(elf)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"objcopy cannot wrap code in an ELF here: {done.stderr.strip()[:100]}")
    assert llvm.bf16_instructions(elf) == 2


@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["llvm", "llvm-avx512bf16"])
def test_a_resnet18_bf16_conv2d_is_within_the_bound_on_both_llvm_settings(target_name):
    reason = target(target_name).unavailable()
    if reason:
        pytest.skip(reason)
    combo = Combo.resolve(CONV, "bfloat16", target_name, "default")
    record = measurement.measure(combo)
    assert record.ok, record.reason
    m = record.metrics
    assert record.accumulation_length == 66
    assert 0 < m["bound_fraction"] <= 1 and m["prob_bound_fraction"] <= 1 and m["nonfinite"] == 0
    assert m["ulp_mean"] < 1  # float32 accumulation rounded once to bf16 (docs/bfloat16.md)
    out = measurement.output(combo)
    assert out.dtype.name == "bfloat16" and out.shape == tuple(combo.workload.output_shape)
    if target_name == "llvm-avx512bf16":  # what the native setting's code contains is recorded
        assert isinstance(record.codegen["bf16_instructions"], int)


def test_a_bfloat16_ulp_limit_is_at_most_two_to_the_seven_and_a_model_limit_is_taken(tmp_path):
    from suite.reporting import thresholds

    path = tmp_path / "t.toml"
    path.write_text("[accuracy.bfloat16]\nulp_mean = 100.0\n")
    found = thresholds.load(path)
    assert ("bfloat16", "ulp_mean", 100.0) in [(a.dtype, a.metric, a.limit) for a in found.accuracy]
    path.write_text("[accuracy.bfloat16]\nulp_mean = 200.0\n")
    with pytest.raises(thresholds.ThresholdsError, match="at most 128"):
        thresholds.load(path)
    path.write_text("[model.bfloat16]\nmax_rmse_ratio = 2\n")  # a whole model runs in bfloat16 too
    assert ("bfloat16", "max_rmse_ratio", 2.0) in [(m.dtype, m.key, m.limit) for m in thresholds.load(path).model]
