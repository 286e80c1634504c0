"""The IEEE twin of the HVX floating-point model: exact cases worked out from IEEE 754, the numpy
face against this machine's own IEEE arithmetic, and TVM kernels run on one ELF under both models.
(The C face against the numpy face, bit for bit, is in test_qfloat.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from test_hvx_rewrite import KERNELS, _elementwise, _link
from test_qfloat import needs_qemu

from suite import targets
from suite.compat import build, release, schedules
from suite.targets import hexagon, hvx_toolchain
from suite.targets import ieee_twin as tw
from suite.targets import qfloat as q


def _one(fn, *args):
    return int(fn(*[np.array([x]) for x in args])[0])


# ----------------------------------------------------------------------------- exact cases
# Each expected pattern is worked out by hand from IEEE 754-2019 (binary16: 1 sign, 5 exponent bits,
# bias 15, 10 fraction bits; binary32: 8 exponent bits, bias 127, 23 fraction bits; roundTiesToEven),
# not read off the model.


def test_ties_go_to_even():
    # 1 + 2**-11 (0x3C00 + 0x1000) lies halfway between 1.0 (fraction 0, even) and 1 + 2**-10
    # (fraction 1, odd): 1.0. Then (1 + 2**-10) + 2**-11 lies halfway between fraction 1 and
    # fraction 2: the even one, 0x3C02.
    assert _one(tw.vadd_hf, 0x3C00, 0x1000) == 0x3C00
    assert _one(tw.vadd_hf, 0x3C01, 0x1000) == 0x3C02
    # A product tie: 1.5 * (1 + 2**-10) = 1.5 + 2**-10 + 2**-11, halfway between fractions 513
    # (odd) and 514 (even) of the binade [1, 2): 0x3E02.
    assert _one(tw.vmpy_qf16_hf, 0x3E00, 0x3C01) == 0x3E02
    # binary32: 1 + 2**-24 (0x33800000 is 2**-24) ties down to 1.0; (1 + 2**-23) + 2**-24 up to
    # fraction 2: 0x3F800002.
    assert _one(tw.vadd_sf, 0x3F800000, 0x33800000) == 0x3F800000
    assert _one(tw.vadd_sf, 0x3F800001, 0x33800000) == 0x3F800002
    # single -> half: 1 + 2**-11 (0x3F801000) ties to 1.0; one bit more, 1 + 2**-11 + 2**-23, is
    # above the tie: 1 + 2**-10.
    assert _one(tw.vconv_hf_qf32, 0x3F801000) == 0x3C00
    assert _one(tw.vconv_hf_qf32, 0x3F801001) == 0x3C01


def test_exact_products_stay_exact():
    # 1.0 * 1.0 is 1.0 (qfloat gives 1025/1024 here), and -1.5 * 1.5 = -2.25 = -(1 + 1/8) * 2:
    # sign 1, exponent field 16, fraction 128: 0xC080.
    assert _one(tw.vmpy_qf16_hf, 0x3C00, 0x3C00) == 0x3C00
    assert _one(q.vmpy_qf16_hf, 0x3C00, 0x3C00) != 0x3C00
    assert _one(tw.vmpy_qf16_hf, 0xBE00, 0x3E00) == 0xC080
    # widening hf*hf -> single is exact: (1 + 2**-10)**2 = 1 + 2**-9 + 2**-20:
    # fraction bits 2**14 and 2**3 of 0x3F800000.
    assert _one(tw.vmpy_qf32_hf, 0x3C01, 0x3C01) == 0x3F804008
    # qf16/qf32 lanes hold halves/singles in the twin: the conversions to them copy.
    assert _one(tw.vconv_hf_qf16, 0xC080) == 0xC080 and _one(tw.vconv_sf_qf32, 0x3F804008) == 0x3F804008


def test_overflow_goes_to_infinity():
    # 65504 (0x7BFF, the largest half) * 2 = 131008 > 65504: +inf (0x7C00); with a negative factor -inf.
    assert _one(tw.vmpy_qf16_hf, 0x7BFF, 0x4000) == 0x7C00
    assert _one(tw.vmpy_qf16_hf, 0xFBFF, 0x4000) == 0xFC00
    # 65504 + 16 = 65520 is halfway between 65504 (fraction 1023, odd) and 2**16 (even, but beyond
    # emax): ties to even carries it to infinity. 65504 + 15 = 65519 is below the tie: 65504.
    assert _one(tw.vadd_hf, 0x7BFF, 0x4C00) == 0x7C00
    assert _one(tw.vadd_hf, 0x7BFF, 0x4B80) == 0x7BFF
    # inf * 0 and inf - inf are invalid: the canonical NaN; inf + 1 is inf.
    assert _one(tw.vmpy_qf16_hf, 0x7C00, 0x0000) == 0x7E00
    assert _one(tw.vsub_hf, 0x7C00, 0x7C00) == 0x7E00
    assert _one(tw.vadd_hf, 0x7C00, 0x3C00) == 0x7C00


def test_underflow():
    # The smallest subnormal 2**-24 (0x0001): squared, 2**-48 rounds to zero, signed by the
    # operands (+0, or -0 with one negative factor).
    assert _one(tw.vmpy_qf16_hf, 0x0001, 0x0001) == 0x0000
    assert _one(tw.vmpy_qf16_hf, 0x8001, 0x0001) == 0x8000
    # 2**-24 * 0.5 = 2**-25 is halfway between 0 (even) and 2**-24 (odd): 0. Times 0.75 it is
    # above the tie: 2**-24.
    assert _one(tw.vmpy_qf16_hf, 0x0001, 0x3800) == 0x0000
    assert _one(tw.vmpy_qf16_hf, 0x0001, 0x3A00) == 0x0001
    # Gradual underflow: 2**-14 (0x0400, the smallest normal) * 0.5 = 2**-15, the subnormal 0x0200.
    assert _one(tw.vmpy_qf16_hf, 0x0400, 0x3800) == 0x0200


def test_exact_zero_signs():
    # x + (-x) is +0 in round to nearest; (-0) + (-0) is -0; a product's zero carries the XOR of
    # the signs; x - x is +0.
    assert _one(tw.vadd_hf, 0x3C00, 0xBC00) == 0x0000
    assert _one(tw.vadd_hf, 0x8000, 0x8000) == 0x8000
    assert _one(tw.vmpy_qf16_hf, 0x8000, 0x4500) == 0x8000
    assert _one(tw.vsub_sf, 0xBF800000, 0xBF800000) == 0x00000000
    assert _one(tw.vsub_hf, 0x8000, 0x0000) == 0x8000


def test_sums_of_far_apart_singles():
    # 2**30 (0x4E800000) and 2**-30 (0x30800000): 60 binades apart. 2**30 + 2**-30 rounds to 2**30;
    # 2**30 - 2**-30 lies just below 2**30, whose nearest single is 2**30 itself (spacing 64 below).
    assert _one(tw.vadd_sf, 0x4E800000, 0x30800000) == 0x4E800000
    assert _one(tw.vsub_sf, 0x4E800000, 0x30800000) == 0x4E800000
    # (1 + 2**-23) * 2**30 minus 2**-30: the exact value is just below a representable single with
    # an odd fraction and above the midpoint below it, so it rounds back to that single (0x4E800001).
    assert _one(tw.vsub_sf, 0x4E800001, 0x30800000) == 0x4E800001


# ----------------------------------------------------------------------------- against the machine's IEEE


def _patterns(rng, n, bits):
    """Random bits (every class: NaN, inf, subnormals), ordinary values, subnormals, near-cancelling."""
    ftype, utype = (np.float16, np.uint16) if bits == 16 else (np.float32, np.uint32)
    raw = rng.integers(0, 1 << bits, n, dtype=np.uint64).astype(utype)
    ordinary = ftype(rng.uniform(-4, 4, n)).view(utype)
    subnormal = ((rng.integers(0, 2, n).astype(np.uint64) << (bits - 1))
                 | rng.integers(0, 1 << (10 if bits == 16 else 23), n, dtype=np.uint64)).astype(utype)
    return np.choose(rng.choice(3, n), [raw, ordinary, subnormal]).astype(utype)


@pytest.mark.parametrize("bits", [16, 32])
def test_numpy_face_is_this_machines_ieee_arithmetic(bits):
    """x86's binary32 arithmetic is IEEE round-to-nearest-even; binary16 products and sums
    computed in binary32 and rounded to binary16 are correctly rounded too (24 >= 2*11 + 2: double
    rounding is innocuous). 300,000 operand pairs per operation, NaNs compared as NaN."""
    rng = np.random.default_rng(bits)
    n = 300_000
    ftype, utype = (np.float16, np.uint16) if bits == 16 else (np.float32, np.uint32)
    a, b = _patterns(rng, n, bits), _patterns(rng, n, bits)
    near = rng.random(n) < 0.2                               # b close to -a: cancellation
    b = np.where(near, (a ^ utype(1 << (bits - 1))) + rng.integers(-3, 4, n).astype(utype), b).astype(utype)
    x, y = a.view(ftype).astype(np.float32), b.view(ftype).astype(np.float32)
    with np.errstate(all="ignore"):
        cases = {"mul": ((x * y).astype(ftype), (tw.vmpy_qf16_hf if bits == 16 else tw.vmpy_qf32)(a, b)),
                 "add": ((x + y).astype(ftype), (tw.vadd_hf if bits == 16 else tw.vadd_sf)(a, b)),
                 "sub": ((x - y).astype(ftype), (tw.vsub_hf if bits == 16 else tw.vsub_sf)(a, b))}
        if bits == 32:
            cases["to half"] = (x.astype(np.float16), tw.vconv_hf_qf32(a))
        else:
            cases["widening mul"] = ((x * y).astype(np.float32), tw.vmpy_qf32_hf(a, b))
    for name, (want, got) in cases.items():
        got_f = got.view(want.dtype)
        same = (got == want.view(got.dtype)) | (np.isnan(got_f) & np.isnan(want))
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, (f"{name}: {bad.size} differ; a={int(a[bad[0]]):#x} b={int(b[bad[0]]):#x} "
                               f"twin={int(got[bad[0]]):#x} machine={int(want.view(got.dtype)[bad[0]]):#x}")


def test_selections_are_the_qfloat_models():
    rng = np.random.default_rng(3)
    a, b = _patterns(rng, 10_000, 16), _patterns(rng, 10_000, 16)
    assert np.array_equal(tw.vmax_hf(a, b), q.vmax_hf(a, b)) and np.array_equal(tw.vmin_hf(a, b), q.vmin_hf(a, b))
    assert set(tw.INSTRUCTIONS) == set(q.INSTRUCTIONS)


# ----------------------------------------------------------------------------- one ELF, two models


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("kind", ["mul", "add", "fma"])
def test_tvm_kernel_under_both_models(kind, tmp_path):
    """The same ELF of a TVM fp16 kernel: with the qfloat model as predicted from qfloat's numpy
    face, with the twin as numpy's own float16 arithmetic computes it."""
    shape, dtype, _forms, predict = KERNELS[kind]
    func, n_inputs = _elementwise(kind, shape, dtype)
    module = build.build(func, targets.get("hexagon-v68").tvm_target())
    build.write_module_file(module, tmp_path / "k.s", "s")
    hvx_toolchain.build_qfloat_elf((tmp_path / "k.s").read_text(), tmp_path / "k.elf")
    rng = np.random.default_rng(7)
    inputs = [np.float16(rng.uniform(-3, 3, shape)) for _ in range(n_inputs)]
    runs = {twin: hexagon.emulate(tmp_path / "k.elf", hexagon.encode_inputs(inputs, shape, dtype, ieee_twin=twin),
                                  shape, dtype).output for twin in (False, True)}
    bits = [x.view(np.uint16).reshape(-1) for x in inputs]
    assert np.array_equal(runs[False].view(np.uint16).reshape(-1), predict(*bits))
    a, b = inputs[0], inputs[1]
    ieee = {"mul": lambda: a * b, "add": lambda: a + b, "fma": lambda: a * b + inputs[2] * a}[kind]()
    assert np.array_equal(runs[True].view(np.uint16), ieee.view(np.uint16))
    assert not np.array_equal(runs[True], runs[False])           # qfloat rounds otherwise


@pytest.mark.slow
@needs_qemu
def test_kernel_without_hvx_fp_is_the_same_under_both_models(tmp_path):
    """A TVM kernel with no HVX floating point (int16, vectorized) never calls the model: the two
    runs give the same bytes. An ELF without the model refuses the twin, naming why."""
    te = release.te()
    shape = (4, 128)
    A = te.placeholder(shape, "int16", name="A")
    B = te.placeholder(shape, "int16", name="B")
    C = te.compute(shape, lambda i, j: A[i, j] * B[i, j], name="C")
    sch = schedules.schedule(te.create_prim_func([A, B, C]))
    _, inner = sch.split(sch.get_loops(schedules.get_block(sch, "C"))[-1], factors=[None, 64])
    sch.vectorize(inner)
    module = build.build(sch.mod["main"], targets.get("hexagon-v68").tvm_target())
    build.write_module_file(module, tmp_path / "k.s", "s")
    asm = (tmp_path / "k.s").read_text()
    assert hvx_toolchain.build_qfloat_elf(asm, tmp_path / "k.elf")["instructions"] == 0
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-200, 200, shape).astype(np.int16) for _ in range(2)]
    runs = [hexagon.emulate(tmp_path / "k.elf", hexagon.encode_inputs(inputs, shape, "int16", ieee_twin=twin),
                            shape, "int16").output for twin in (False, True)]
    assert runs[0].tobytes() == runs[1].tobytes()
    assert np.array_equal(runs[0], inputs[0] * inputs[1])
    hvx_toolchain.assemble(asm, tmp_path / "plain.o")
    _link([tmp_path / "plain.o", hexagon.harness_object("v68")], tmp_path / "plain.elf")
    with pytest.raises(hexagon.EmulationFailed, match="no HVX floating-point model is linked"):
        hexagon.emulate(tmp_path / "plain.elf", hexagon.encode_inputs(inputs, shape, "int16", ieee_twin=True),
                        shape, "int16")
