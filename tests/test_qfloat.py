"""The qfloat model: known answers, the numpy face against a float64 transcription of the
documented algorithm, and the numpy face against the C face run under qemu-hexagon, bit for bit;
the same C-against-numpy check for the IEEE twin (suite.targets.ieee_twin; its own answers are in
test_ieee_twin.py).

The C faces run for real: the HVX model (``hvx_model.c``, ``qfloat_model.c``, ``ieee_model.c``)
linked with ``qfloat_driver.c`` into a freestanding v68 ELF, fed every instruction's operands, for
both models, in one qemu-hexagon run (a few seconds in all).
"""

from __future__ import annotations

import shutil
import struct
import subprocess

import numpy as np
import pytest

from qfloat_oracle import ORACLE
from fractions import Fraction

from suite.targets import hvx_stubs, hvx_toolchain, ieee_twin, qfloat as q

LANES = 100_032                      # operands per instruction (a multiple of 64)
ORACLE_LANES = 4_000
DRIVER = hvx_toolchain.MODEL_SOURCES[0].parents[2] / "tests" / "qfloat_driver.c"


def _emulator_reason() -> str | None:
    missing = [tool for tool in ("qemu-hexagon", "clang", "ld.lld") if shutil.which(tool) is None]
    if missing:
        return f"needs qemu-hexagon, clang and ld.lld; missing: {', '.join(missing)}"
    try:
        cpus = subprocess.run(["qemu-hexagon", "-cpu", "help"], capture_output=True, text=True,
                              timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as err:
        return f"qemu-hexagon does not run: {err}"
    if "v68" not in cpus.split():
        return "qemu-hexagon does not know CPU v68 (Debian 12's QEMU 7.2 knows v67 only)"
    return None


EMULATOR_REASON = _emulator_reason()
needs_qemu = pytest.mark.skipif(EMULATOR_REASON is not None, reason=EMULATOR_REASON or "")


# ----------------------------------------------------------------------------- operands


def _ieee(rng, n, bits):
    """IEEE patterns: random bits, ordinary values, subnormals, +-0, huge (incl. inf/nan fields)."""
    ftype, utype = (np.float16, np.uint16) if bits == 16 else (np.float32, np.uint32)
    mant_bits, exp_mask = (10, 0x1F) if bits == 16 else (23, 0xFF)
    sign = (rng.integers(0, 2, n).astype(np.uint64) << (bits - 1))
    raw = rng.integers(0, 1 << bits, n, dtype=np.uint64)
    ordinary = ftype(rng.uniform(-4, 4, n)).view(utype).astype(np.uint64)
    subnormal = sign | rng.integers(0, 1 << mant_bits, n, dtype=np.uint64)
    zero = sign
    huge_exp = rng.integers(exp_mask - 2, exp_mask + 1, n).astype(np.uint64) << mant_bits
    huge = sign | huge_exp | rng.integers(0, 1 << mant_bits, n, dtype=np.uint64)
    pick = rng.choice(5, n, p=[0.35, 0.3, 0.12, 0.06, 0.17])
    return np.choose(pick, [raw, ordinary, subnormal, zero, huge]).astype(utype)


def _qf(rng, n, bits):
    """qfloat patterns: random bits, results of real arithmetic, extreme exponents, zero."""
    utype = np.uint16 if bits == 16 else np.uint32
    raw = rng.integers(0, 1 << bits, n, dtype=np.uint64)
    if bits == 16:
        made = q.vmpy_qf16_hf(_ieee(rng, n, 16), _ieee(rng, n, 16)).astype(np.uint64)
        ebits = 5
    else:
        made = q.vmpy_qf32_sf(_ieee(rng, n, 32), _ieee(rng, n, 32)).astype(np.uint64)
        ebits = 8
    emax = (1 << ebits) - 1
    extreme_e = rng.choice(np.array([0, 1, emax - 1, emax], np.uint64), n)
    extreme = (raw & ~np.uint64(emax)) | extreme_e
    zero = rng.choice(np.array([0, ((1 << bits) - 1) ^ emax], np.uint64), n)   # 0 and -0*x
    pick = rng.choice(4, n, p=[0.4, 0.35, 0.2, 0.05])
    return np.choose(pick, [raw, made, extreme, zero]).astype(utype)


#: The model faces the C driver runs: (name prefix, numpy face of each instruction, whether its
#: qf16/qf32 lanes hold IEEE values). The twin's qf lanes are halves and singles.
FACES = {"qfloat": ("", lambda name: q.INSTRUCTIONS[name][0], False),
         "ieee": ("ieee:", lambda name: ieee_twin.INSTRUCTIONS[name], True),
         "qfloat-vector": ("vec:", lambda name: q.INSTRUCTIONS[name][0], False),
         "ieee-vector": ("ieee:vec:", lambda name: ieee_twin.INSTRUCTIONS[name], True)}
#: The faces each instruction has: the vector model computes the forms fp16 code executes most.
FACES_OF = {name: [face for face in FACES if "vector" not in face or name in hvx_stubs.VECTOR_FORMS]
            for name in q.INSTRUCTIONS}
_AS_IEEE = {"qf16": "hf", "qf32": "sf", "qf32:pair": "sf"}


def _operands(name, n, seed, ieee_lanes=False):
    """Operands of one instruction, with near-cancelling pairs for the binary ones (qf lanes as
    IEEE values with ``ieee_lanes``: the twin's)."""
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    kinds = q.INSTRUCTIONS[name][2]
    if ieee_lanes:
        kinds = tuple(_AS_IEEE.get(k, k) for k in kinds)
    gen = {"hf": lambda: _ieee(rng, n, 16), "sf": lambda: _ieee(rng, n, 32),
           "qf16": lambda: _qf(rng, n, 16), "qf32": lambda: _qf(rng, n, 32),
           "qf32:pair": lambda: _qf(rng, n, 32)}
    a = gen[kinds[0]]()
    if len(kinds) == 1:
        return a, np.zeros_like(a)
    b = gen[kinds[1]]()
    # cancellation: b close to -a (exact negation nudged by a few units in the last place)
    near = rng.random(n) < 0.15
    bits = q.LANE_BITS[kinds[1]]
    if kinds[0] == kinds[1]:
        if kinds[0] in ("hf", "sf"):
            neg = a.astype(np.uint64) ^ (np.uint64(1) << np.uint64(bits - 1))
        else:
            neg = a.astype(np.uint64) ^ np.uint64(0xFFE0 if bits == 16 else 0xFFFFFF00)
        nudge = rng.integers(-3, 4, n).astype(np.int64) << (0 if kinds[0] in ("hf", "sf")
                                                             else (5 if bits == 16 else 8))
        cand = (neg.astype(np.int64) + nudge).astype(np.uint64) & np.uint64((1 << bits) - 1)
    else:  # qf op IEEE: the IEEE value nearest to -a
        value = -q.to_float(a, kinds[0])
        ftype, utype = (np.float16, np.uint16) if bits == 16 else (np.float32, np.uint32)
        with np.errstate(over="ignore"):
            cand = ftype(value).view(utype).astype(np.uint64)
    b = np.where(near, cand, b.astype(np.uint64)).astype(b.dtype)
    return a, b


# ----------------------------------------------------------------------------- known answers
# Each expected pattern is derived by hand from the bit layout and the rounding rule (see the
# qfloat.py docstring), not read off the model.


def _one(fn, *args):
    return int(fn(*[np.array([x]) for x in args])[0])


def test_bias_exact_product_one_times_one():
    # hf 1.0 = 0x3C00: magnitude 1024 * 2**-10, exponent 0. The product is exactly 1.0 at exp 0:
    # R = 1.0 / 2**-10 = 1024, R2 = 4*floor(1024/4) = 1024, R3 = 0 <= 1.5 -> R2+1 = 1025, so the
    # value becomes 1025/1024. Odd k = 1025 -> m = (k-1)/2 = 512; E = 0 + 15 -> 512<<5 | 15 = 0x400F.
    assert _one(q.vmpy_qf16_hf, 0x3C00, 0x3C00) == 0x400F
    assert q.qf16_value(0x400F) == Fraction(1025, 1024)
    # Back to IEEE: 1025/1024 = 1 + 2**-10 is an hf: 0x3C01 (so x*1.0 comes out one ulp high).
    assert _one(q.vconv_hf_qf16, 0x400F) == 0x3C01
    # The same in qf32: sf 1.0 * 1.0 -> R = 2**23, R3 = 0 -> (2**23+1) * 2**-23: m = 2**22, E = 127.
    assert _one(q.vmpy_qf32_sf, 0x3F800000, 0x3F800000) == (0x400000 << 8) | 127


def test_negative_products():
    # hf*hf rounds the magnitude (1025/1024, as above) and negates by one's complement of m:
    # ~512 & 0x7FF = 0x5FF -> 0x5FF<<5 | 15 = 0xBFEF, i.e. -1025/1024.
    assert _one(q.vmpy_qf16_hf, 0xBC00, 0x3C00) == 0xBFEF
    assert q.qf16_value(0xBFEF) == Fraction(-1025, 1024)
    # qf16*qf16 rounds the signed value: (-1023/1024)*(1025/1024) = -1048575/2**20 at exp 0;
    # R = -1048575/1024 = -1023.999..., R2 = -1024, R3 = 0.00098 <= 1.5 -> R2+1 = -1023:
    # k = -1023 -> m = -512 -> 0x600 -> 0x600<<5 | 15 = 0xC00F.
    a, b = q.qf16_bits(-1023, 15), q.qf16_bits(1025, 15)
    assert (a, b) == (0xC00F, 0x400F)
    assert _one(q.vmpy_qf16, a, b) == 0xC00F


def test_saturation():
    # 65504 * 65504: exponents 15 + 15 = 30 > E_MAX = 16 -> saturate: m = 1023 (0x3FF), E = 31,
    # i.e. 0x7FFF = 2047 * 2**6 = 131008; with one negative factor the hf product is negated:
    # 0x7FFF ^ 0xFFE0 = 0x801F = -131008.
    assert _one(q.vmpy_qf16_hf, 0x7BFF, 0x7BFF) == 0x7FFF
    assert _one(q.vmpy_qf16_hf, 0xFBFF, 0x7BFF) == 0x801F
    assert q.qf16_value(0x801F) == -131008
    # qf16*qf16 of two negative extremes saturates positive; a negative product saturates to
    # the field 0x400 (m = -1024, k = -2047) at E = 31: 0x8000 | 31 = 0x801F.
    big_neg = q.qf16_bits(-2047, 31)
    assert _one(q.vmpy_qf16, big_neg, big_neg) == 0x7FFF
    assert _one(q.vmpy_qf16, big_neg, q.qf16_bits(2047, 31)) == 0x801F


def test_underflow():
    # The smallest hf subnormal 2**-24 (0x0001) squared: exponents -14 + -14 = -28 <= E_MIN-2 = -17
    # -> the smallest magnitude: m = 0, E = 0 -> 0x0000 (value +2**-25); a negative factor
    # gives 0x0000 ^ 0xFFE0 = 0xFFE0 (value -2**-25).
    assert _one(q.vmpy_qf16_hf, 0x0001, 0x0001) == 0x0000
    assert _one(q.vmpy_qf16_hf, 0x8001, 0x0001) == 0xFFE0
    assert q.qf16_value(0xFFE0) == Fraction(-1, 2 ** 25)
    # Back to hf, +-2**-25 is half of the smallest subnormal: a tie, to even -> +-0.
    assert _one(q.vconv_hf_qf16, 0x0000) == 0x0000
    assert _one(q.vconv_hf_qf16, 0xFFE0) == 0x8000


def test_exact_zero():
    # 1.0 + (-1.0) is exactly 0: the result is the bit pattern 0 (exponent field forced to 0).
    assert _one(q.vadd_hf, 0x3C00, 0xBC00) == 0x0000
    x = q.qf16_bits(1537, 20)
    assert _one(q.vsub_qf16, x, x) == 0x0000
    assert _one(q.vadd_sf, 0x3F800000, 0xBF800000) == 0
    # -0 * x: the magnitude product 0 is the pattern 0, negated (signs differ) -> 0xFFE0.
    assert _one(q.vmpy_qf16_hf, 0x8000, 0x4500) == 0xFFE0


def test_coarse_grid_sum():
    # 1.0 + 2.0 (hf): the larger exponent is 1 (2.0 = 1024*2**-10 * 2**1), sig = 1.5 -> R = 1536,
    # R2 = 1536, R3 = 0 -> 1537 * 2**-10 at exp 1: m = 768, E = 16 -> 768<<5 | 16 = 0x6010.
    assert _one(q.vadd_hf, 0x3C00, 0x4000) == 0x6010
    assert q.qf16_value(0x6010) == Fraction(1537, 512)


def test_max_min_zero_rules():
    assert _one(q.vmax_hf, 0x8000, 0x0000) == 0x0000 and _one(q.vmax_hf, 0x0000, 0x8000) == 0x0000
    assert _one(q.vmin_hf, 0x0000, 0x8000) == 0x8000 and _one(q.vmin_hf, 0x8000, 0x0000) == 0x8000
    assert _one(q.vmax_hf, 0xC000, 0x3C00) == 0x3C00 and _one(q.vmin_sf, 0x3F800000, 0xC0000000) == 0xC0000000


def test_readable_encode_decode():
    for k, e in [(1, 0), (-1, 0), (2047, 31), (-2047, 31), (1025, 15)]:
        bits = q.qf16_bits(k, e)
        assert q.qf16_value(bits) == Fraction(k) * Fraction(2) ** (e - 25)
        assert q.to_float(np.array([bits]), "qf16")[0] == float(q.qf16_value(bits))
    bits = q.qf32_bits(-(2 ** 24 - 1), 255)
    assert q.qf32_value(bits) == -(2 ** 24 - 1) * Fraction(2) ** 105
    with pytest.raises(ValueError):
        q.qf16_bits(2, 3)


# ----------------------------------------------------------------------------- numpy vs float64 oracle


@pytest.mark.parametrize("name", list(q.INSTRUCTIONS))
def test_numpy_face_matches_float64_transcription(name):
    fn, _, kinds, _ = q.INSTRUCTIONS[name]
    a, b = _operands(name, ORACLE_LANES, seed=11)
    got = fn(a, b) if len(kinds) > 1 else fn(a)
    want = np.array([ORACLE[name](int(x), int(y)) for x, y in zip(a, b)], dtype=np.uint64)
    bad = np.nonzero(got.astype(np.uint64) != want)[0]
    assert bad.size == 0, (f"{name}: {bad.size} mismatches, first a={int(a[bad[0]]):#x} "
                           f"b={int(b[bad[0]]):#x} numpy={int(got[bad[0]]):#x} oracle={int(want[bad[0]]):#x}")


# ----------------------------------------------------------------------------- numpy vs C under qemu


def _records(face):
    """Per instruction: operands in 256-byte driver slots, and the numpy face's expected slots."""
    prefix, numpy_face, ieee_lanes = FACES[face]
    records = []
    for name, (_, _, kinds, result) in q.INSTRUCTIONS.items():
        if face not in FACES_OF[name]:
            continue
        fn = numpy_face(name)
        if kinds[0] == "qf32:pair":                       # Vd.hf = Vuu.qf32: 64 lanes per slot
            a, _ = _operands(name, LANES, seed=3, ieee_lanes=ieee_lanes)
            nvec = LANES // 64
            A = a.reshape(nvec, 2, 32)                    # register v[0] then v[1]
            slots_a = A.view(np.uint8).reshape(nvec, 256)
            slots_b = np.zeros_like(slots_a)
            want = np.zeros((nvec, 256), np.uint8)
            want[:, :128] = fn(q.pair_to_narrow(A[:, 0], A[:, 1])).view(np.uint8).reshape(nvec, 128)
        else:
            a, b = _operands(name, LANES, seed=3, ieee_lanes=ieee_lanes)
            nvec = a.nbytes // 128
            slots_a = np.zeros((nvec, 256), np.uint8)
            slots_b = np.zeros((nvec, 256), np.uint8)
            slots_a[:, :128] = a.view(np.uint8).reshape(nvec, 128)
            slots_b[:, :128] = b.view(np.uint8).reshape(nvec, 128)
            got = fn(a, b) if len(kinds) > 1 else fn(a)
            want = np.zeros((nvec, 256), np.uint8)
            if result == "qf32:pair":                     # widening: even lanes to v[0], odd to v[1]
                v0, v1 = q.widen_to_pair(got)
                want[:, :128] = v0.view(np.uint8).reshape(nvec, 128)
                want[:, 128:] = v1.view(np.uint8).reshape(nvec, 128)
            else:
                want[:, :128] = got.view(np.uint8).reshape(nvec, 128)
        records.append((prefix + name, nvec, slots_a, slots_b, want))
    return records


@pytest.fixture(scope="module")
def c_face(tmp_path_factory):
    """Run every instruction through the C models (qfloat and its twin, scalar and vector) under
    qemu-hexagon once."""
    if EMULATOR_REASON:
        pytest.skip(EMULATOR_REASON)
    where = tmp_path_factory.mktemp("qfloat-c")
    driver = where / "driver.o"
    subprocess.run(["clang", "--target=hexagon-unknown-linux-musl", "-mcpu=hexagonv68", "-mhvx",
                    "-mhvx-length=128b", "-O2", "-ffreestanding", "-fno-builtin", "-nostdlib", "-c", str(DRIVER), "-o",
                    str(driver)], check=True, capture_output=True)
    elf = where / "driver.elf"
    subprocess.run(["ld.lld", "-static", "-e", "_start", str(driver),
                    str(hvx_toolchain.model_object("v68")), "-o", str(elf)],
                   check=True, capture_output=True)
    records = [record for face in FACES for record in _records(face)]
    stdin = b"".join(name.encode().ljust(32, b"\0") + struct.pack("<I", nvec) + a.tobytes()
                     + b.tobytes() for name, nvec, a, b, _ in records) + b"\0" * 32
    done = subprocess.run(["qemu-hexagon", str(elf)], input=stdin, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-500:]
    results, offset = {}, 0
    for name, nvec, _, _, want in records:
        got = np.frombuffer(done.stdout, np.uint8, nvec * 256, offset).reshape(nvec, 256)
        offset += nvec * 256
        results[name] = (got, want)
    assert offset == len(done.stdout)
    return results


@needs_qemu
@pytest.mark.parametrize("face, name", [(face, name) for name in q.INSTRUCTIONS for face in FACES_OF[name]])
def test_c_face_agrees_bit_for_bit(c_face, face, name):
    got, want = c_face[FACES[face][0] + name]
    bad = np.nonzero((got != want).any(axis=1))[0]
    assert bad.size == 0, f"{face} {name}: {bad.size} of {len(got)} vectors differ, first vector {bad[0]}"
    result_bits = 16 if q.INSTRUCTIONS[name][3] in ("hf", "qf16") else 32
    used = 128 if q.INSTRUCTIONS[name][3] != "qf32:pair" else 256
    assert len(got) * used * 8 // result_bits >= 100_000          # lanes compared


@needs_qemu
def test_model_object_keeps_caller_state():
    # model_object() refuses code touching hardware-loop registers, GP, USR or runtime helpers.
    assert hvx_toolchain.model_object("v68").stat().st_size > 0
