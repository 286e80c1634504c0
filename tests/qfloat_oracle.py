"""A float64 transcription of the qfloat algorithm as documented, for cross-checking qfloat.py.

This follows the *Behavior* pseudo-code of Qualcomm's HVX Programmer's Reference Manual (qfloat
section) and the helper semantics of ``target/hexagon/mmvec/mmvec_qfloat.c`` in ``quic/qemu``
step by step, in Python floats (IEEE double, like the reference's C ``double``): ldexp, ilogb,
the two-sum residual ``sig_low``, floor-based remainders and the double's significand bits. It is
written independently of ``suite/targets/qfloat.py`` (which works on integers) so that the two can
be compared; it is slow (scalar Python) and only used by the tests.
"""

from __future__ import annotations

import math
import struct

EPS = {16: 2.0 ** -10, 32: 2.0 ** -23}
UNITS = {16: 2.0 ** 10, 32: 2.0 ** 23}
LIMITS = {16: (-15, 16, 15), 32: (-127, 128, 127)}   # E_MIN, E_MAX, BIAS of qf16 / qf32


def ilogb(x: float) -> int:
    return math.frexp(x)[1] - 1


# -- parsing: (sign, exp, sig) --------------------------------------------------------------------

def parse_qf(bits: int, w: int):
    if w == 16:
        s16 = bits - 0x10000 if bits & 0x8000 else bits
        return 0, (bits & 0x1F) - 15, float((s16 >> 4) | 1) * EPS[16]
    s32 = bits - (1 << 32) if bits & 0x80000000 else bits
    return 0, (bits & 0xFF) - 127, float((s32 >> 7) | 1) * EPS[32]


def parse_ieee(bits: int, w: int):
    if w == 16:
        field, mant, sign, mbits, bias, emin = (bits >> 10) & 31, bits & 0x3FF, bits >> 15, 10, 15, -14
    else:
        field, mant, sign, mbits, bias, emin = (bits >> 23) & 255, bits & 0x7FFFFF, bits >> 31, 23, 127, -126
    sig = mant | ((1 << mbits) if field > 0 else 0)
    return sign, max(field - bias, emin), float(sig) * EPS[w]


# -- rounding to qfloat -----------------------------------------------------------------------------

def rnd_sat_qf(exp: int, sig: float, sig_low: float, w: int) -> int:
    e_min, e_max, bias = LIMITS[w]
    eps, units = EPS[w], UNITS[w]
    f = 10 if w == 16 else 23
    sign = 0 if sig >= 0.0 else 1
    prod_ovf = abs(sig) >= 2.0 and sig != -2.0
    scale = 2.0 if (exp == e_min - 1 or (prod_ovf and exp < e_max)) else 1.0
    sig_s = sig / scale
    r1 = sig_s * units
    r3 = r1 - math.floor(r1 / 4.0) * 4.0
    adj = 0
    sig_f = 0.0
    ovf = exp >= e_max + 1 or (prod_ovf and exp == e_max)
    undf = (not ovf) and exp <= e_min - 2

    def odd_only():
        if r3 == 0.0 and sig_low < 0.0:
            return sig_s + (-1.0 - r3) * eps
        if r3 < 2.0 or (r3 == 2.0 and sig_low <= 0.0):
            return sig_s + (1.0 - r3) * eps
        return sig_s + (3.0 - r3) * eps

    if ovf or undf:
        pass
    elif exp == e_max:
        sig_f = odd_only()
    elif exp == e_min - 1 or prod_ovf:
        sig_f, adj = odd_only(), 1
    else:
        if r3 == 0.0 and sig_low < 0.0:
            sig_f = sig_s + (-1.0 - r3) * eps
        elif r3 < 1.5 or (r3 == 1.5 and sig_low <= 0.0):
            sig_f = sig_s + (1.0 - r3) * eps
        elif r3 < 2.5 or (r3 == 2.5 and sig_low <= 0.0):
            sig_f, adj = (sig + (2.0 - r3) * eps) * 0.5, 1
        else:
            sig_f = sig_s + (3.0 - r3) * eps
    mask = (1 << f) - 1
    if ovf:
        e_field, mag = e_max + bias, (sign - 1) & mask
        field = (sign << f) | mag
    elif undf:
        e_field, mag = e_min + bias, (-sign) & mask
        field = (sign << f) | mag
    else:
        e_field = exp + bias + adj
        # bits of the double's magnitude from 2**0 down to 2**-(f-1) (the implied 1 is dropped)
        mag = int(math.floor(abs(sig_f) * 2.0 ** (f - 1))) & mask
        field = (sign << f) | ((~mag & mask) if sign else mag)
    if sig == 0.0 and sig_low == 0.0:
        e_field = 0
    ebits = 5 if w == 16 else 8
    return ((field << ebits) | (e_field & ((1 << ebits) - 1))) & ((1 << w) - 1)


def negate(bits: int, w: int) -> int:
    return bits ^ (0xFFE0 if w == 16 else 0xFFFFFF00)


# -- operations -------------------------------------------------------------------------------------

def mpy(a, b, ka: str, kb: str, w_out: int) -> int:
    wa = 16 if ka in ("hf", "qf16") else 32
    sa, ea, ga = (parse_qf if ka.startswith("qf") else parse_ieee)(a, wa)
    sb, eb, gb = (parse_qf if kb.startswith("qf") else parse_ieee)(b, wa)
    r = rnd_sat_qf(ea + eb, ga * gb, 0.0, w_out)
    neg = (sa ^ sb) if (ka.startswith("qf") is False and kb.startswith("qf") is False) else sb
    return negate(r, w_out) if neg else r


def _exp_ab(ea, ga, eb, gb, f):
    if ea > eb:
        e = ea + (-(f + 1) if ga == 0.0 else ilogb(ga))
        return max(e, eb)
    e = eb + (-(f + 1) if gb == 0.0 else ilogb(gb))
    return max(e, ea)


def add(a, b, ka: str, kb: str, w: int, sub: bool) -> int:
    f = 10 if w == 16 else 23
    if ka.startswith("qf"):
        _, ea, ga = parse_qf(a, w)
        if kb.startswith("qf"):
            _, eb, gb = parse_qf(b, w)
        else:
            sb, eb, gb = parse_ieee(b, w)
            if sb:
                gb = -gb
        e = _exp_ab(ea, ga, eb, gb, f)
        sa_, sb_ = math.ldexp(ga, ea - e), math.ldexp(gb, eb - e)
        if sub:
            s = sa_ - sb_
            low = (sa_ - s) - sb_ if ea > eb else sa_ - (sb_ + s)
        else:
            s = sa_ + sb_
            low = (sa_ - s) + sb_ if ea > eb else (sb_ - s) + sa_
        return rnd_sat_qf(e, s, low, w)
    # IEEE + IEEE (add_hf/add_sf, sub_hf/sub_sf): magnitudes and signs
    sa, ea, ga = parse_ieee(a, w)
    sb, eb, gb = parse_ieee(b, w)
    e = _exp_ab(ea, ga, eb, gb, f)
    sa_, sb_ = math.ldexp(ga, ea - e), math.ldexp(gb, eb - e)
    if sub:
        sb = 1 - sb            # a - b == a + (-b); the reference spells out the four sign cases
    if sa == sb:
        s = sa_ + sb_
        low = (sa_ - s) + sb_ if ea > eb else (sb_ - s) + sa_
        r = rnd_sat_qf(e, s, low, w)
        return negate(r, w) if sa else r
    if sa == 0:
        s = sa_ - sb_
        low = (sa_ - s) - sb_ if ea > eb else sa_ - (sb_ + s)
    else:
        s = sb_ - sa_
        low = (sb_ - s) - sa_ if eb > ea else sb_ - (sa_ + s)
    return rnd_sat_qf(e, s, low, w)


def to_ieee(bits: int, w_in: int, w_out: int) -> int:
    _, exp, sig = parse_qf(bits, w_in)
    value = math.ldexp(sig, exp)
    sign = 1 if sig < 0 else 0
    if w_out == 16:
        emin, fr, mb, bias, vmax = -14, 42, 10, 15, 131008.0
    else:
        emin, fr, mb, bias, vmax = -126, 29, 23, 127, 2.0 ** 129 - 2.0 ** 105
    raw = struct.unpack("<Q", struct.pack("<d", value))[0]
    exp_d = ((raw >> 52) & 0x7FF) - 1023
    sig53 = (raw & ((1 << 52) - 1)) | (1 << 52)
    shift = emin - exp_d
    if exp_d <= emin - 1:
        sig53 = sig53 >> shift if shift < 64 else 0
    if shift >= 53:
        sig53 = 0
    signif = sig53 >> fr
    mant = signif & ((1 << mb) - 1)
    r1 = sig53 / 2.0 ** fr
    r3 = r1 - math.floor(r1 / 2.0) * 2.0
    if abs(value) >= vmax:
        mant = (1 << mb) - 1
    elif (0.5 < r3 < 1.0) or r3 >= 1.5:
        if mant == (1 << mb) - 1:
            mant, exp_d = 0, exp_d + 1
        else:
            mant += 1
    if w_out == 16:
        if exp_d > 16:
            return (sign << 15) | 0x7FFF
        return (sign << 15) | (min(max(exp_d + bias, 0), 31) << 10) | mant
    return (sign << 31) | (min(max(exp_d + bias, 0), 255) << 23) | mant


def _key(bits, w):
    sign, exp, sig = parse_ieee(bits, w)
    v = math.ldexp(sig, exp)
    return -v if sign else v


def maxmin(a, b, w, is_max):
    zero_mask = 0x7FFF if w == 16 else 0x7FFFFFFF
    if (a & zero_mask) == 0 and (b & zero_mask) == 0:
        if is_max:
            return a if a == 0 else b
        return b if a == 0 else a
    if is_max:
        return b if _key(b, w) > _key(a, w) else a
    return b if _key(a, w) > _key(b, w) else a


#: name -> scalar oracle on (a, b) raw ints (b ignored by conversions)
ORACLE = {
    "vmpy_qf16_hf": lambda a, b: mpy(a, b, "hf", "hf", 16),
    "vmpy_qf16_mix_hf": lambda a, b: mpy(a, b, "qf16", "hf", 16),
    "vmpy_qf16": lambda a, b: mpy(a, b, "qf16", "qf16", 16),
    "vmpy_qf32_hf": lambda a, b: mpy(a, b, "hf", "hf", 32),
    "vmpy_qf32_mix_hf": lambda a, b: mpy(a, b, "qf16", "hf", 32),
    "vmpy_qf32_qf16": lambda a, b: mpy(a, b, "qf16", "qf16", 32),
    "vmpy_qf32": lambda a, b: mpy(a, b, "qf32", "qf32", 32),
    "vmpy_qf32_sf": lambda a, b: mpy(a, b, "sf", "sf", 32),
    "vadd_hf": lambda a, b: add(a, b, "hf", "hf", 16, False),
    "vadd_qf16_mix": lambda a, b: add(a, b, "qf16", "hf", 16, False),
    "vadd_qf16": lambda a, b: add(a, b, "qf16", "qf16", 16, False),
    "vsub_hf": lambda a, b: add(a, b, "hf", "hf", 16, True),
    "vsub_qf16_mix": lambda a, b: add(a, b, "qf16", "hf", 16, True),
    "vsub_qf16": lambda a, b: add(a, b, "qf16", "qf16", 16, True),
    "vadd_sf": lambda a, b: add(a, b, "sf", "sf", 32, False),
    "vadd_qf32_mix": lambda a, b: add(a, b, "qf32", "sf", 32, False),
    "vadd_qf32": lambda a, b: add(a, b, "qf32", "qf32", 32, False),
    "vsub_sf": lambda a, b: add(a, b, "sf", "sf", 32, True),
    "vsub_qf32_mix": lambda a, b: add(a, b, "qf32", "sf", 32, True),
    "vsub_qf32": lambda a, b: add(a, b, "qf32", "qf32", 32, True),
    "vconv_hf_qf16": lambda a, b: to_ieee(a, 16, 16),
    "vconv_hf_qf32": lambda a, b: to_ieee(a, 32, 16),
    "vconv_sf_qf32": lambda a, b: to_ieee(a, 32, 32),
    "vmax_hf": lambda a, b: maxmin(a, b, 16, True),
    "vmin_hf": lambda a, b: maxmin(a, b, 16, False),
    "vmax_sf": lambda a, b: maxmin(a, b, 32, True),
    "vmin_sf": lambda a, b: maxmin(a, b, 32, False),
}
