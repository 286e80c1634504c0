"""The IEEE twin of the HVX floating-point model: the same instructions, IEEE 754 arithmetic.

The qfloat model (:mod:`suite.targets.qfloat`) says what Hexagon v68-v75 computes; this twin says
what the same instruction stream would compute if every HVX floating-point instruction formed its
exact result and rounded it **once, to nearest, ties to even**, to the IEEE format of its width:

* a ``qf16`` register lane holds an IEEE binary16 (half), a ``qf32`` lane an IEEE binary32 (single);
* ``vmpy``/``vadd``/``vsub`` of any operand kinds: the exact product/sum/difference of the operand
  values, rounded once to the result's format (widening ``vmpy(hf,hf)->qf32`` is exact);
* ``Vd.hf = Vu.qf16`` and ``Vd.sf = Vu.qf32`` copy (the value is already in that format);
  ``Vd.hf = Vuu.qf32`` rounds the single to a half;
* ``vmax``/``vmin`` round nothing: the twin selects exactly as the qfloat model does (the
  hardware's compare), so that rounding is the only difference between the two models.

Running a kernel's rewritten instructions on both models (``hvx_model.c`` switches between their
C faces) tells whether a divergence comes from qfloat's rounding or from the schedule itself:
with the twin, a reordering of the sums is all that separates two loop orders.

This is the numpy face; ``ieee_model.c`` is the C face run in the Hexagon guest, the same integer
algorithm, bit for bit (``tests/test_ieee_twin.py``).

Round to nearest, ties to even, from IEEE 754-2019 (written from the standard's definitions):

* A binary format of precision p (11 for binary16, 24 for binary32) with exponent range
  [emin, emax] (-14..15, -126..127) holds the numbers +-n * 2**q with integers 0 <= n < 2**p and
  qmin = emin - p + 1 <= q <= emax - p + 1 (section 3.3: subnormals are the n < 2**(p-1) at q = qmin).
* roundTiesToEven (4.3.1) delivers the representable number nearest to the exact result; of two
  equally near, the one with an even n. For an exact value v = M * 2**E (M > 0 an integer) whose
  leading bit has weight 2**(b-1+E), b = bitlen(M), the representable numbers around v are the
  multiples of 2**Q with Q = max(b - p + E, qmin) (p significant bits, never finer than the
  subnormal spacing). With s = Q - E > 0: n = floor(M / 2**s), remainder r = M mod 2**s, and v
  rounds up to (n+1) * 2**Q exactly when r > 2**(s-1), or r == 2**(s-1) and n is odd (a tie to
  even). With s <= 0, v is representable: n = M * 2**-s. Rounding up can give n = 2**p, which is
  2**(p-1) * 2**(Q+1): the next binade.
* Where the exact value is not held whole (a sum of two singles whose exponents are more than 38
  apart), M carries guard bits and a *sticky* flag: the exact value lies strictly between M and
  M+1 units of 2**E. With at least two guard bits below the rounding position, r == 2**(s-1) and
  sticky means "above the tie": round up; every other decision is unchanged.
* Overflow (7.4): a rounded result of magnitude 2**(emax+1) or more is infinity, sign kept.
  Underflow: the rounded result is delivered as is (subnormal, or zero when n rounds to 0).
* Zeros (6.3): the sign of a product is the XOR of the operands' signs, also for zero; an exact
  zero sum of operands of opposite signs is +0, and x + x keeps the sign of x (so (-0) + (-0) = -0).
* Infinity and NaN (6.1, 6.2, 7.2): inf * 0 and inf - inf are invalid: NaN; a NaN operand gives
  NaN. The twin's NaN is the canonical quiet one (binary16 0x7E00, binary32 0x7FC00000): IEEE
  leaves payload propagation to the implementation.
"""

from __future__ import annotations

import numpy as np

from suite.targets import qfloat

_I64 = np.int64

#: p: precision; qmin: exponent of the smallest subnormal's last place; bias; width; the NaN.
#: (emax = bias: a rounded exponent above it gives the all-ones field, infinity.)
HALF = dict(p=11, qmin=-24, bias=15, bits=16, nan=0x7E00)
SINGLE = dict(p=24, qmin=-149, bias=127, bits=32, nan=0x7FC00000)
#: Largest exponent difference of two singles whose aligned sum is kept whole in an int64:
#: 24 + 38 = 62 bits.
EXACT_ALIGN = 38


def _bitlen(a):
    """Bit length of non-negative int64 values below 2**62 (exact: frexp is exact below 2**53)."""
    a = np.asarray(a, _I64)
    hi, lo = a >> 31, a & ((1 << 31) - 1)
    _, e_hi = np.frexp(hi.astype(np.float64))
    _, e_lo = np.frexp(lo.astype(np.float64))
    return np.where(hi > 0, e_hi + 31, np.where(lo > 0, e_lo, 0)).astype(_I64)


def _decode(x, fmt):
    """(sign, M, E, inf, nan) of IEEE patterns: the value is (-1)**sign * M * 2**E when finite."""
    p, bits = fmt["p"], fmt["bits"]
    x = np.asarray(x).astype(_I64) & ((1 << bits) - 1)
    frac_bits = p - 1
    field = (x >> frac_bits) & ((1 << (bits - p)) - 1)
    top = (1 << (bits - p)) - 1
    frac = x & ((1 << frac_bits) - 1)
    sign = (x >> (bits - 1)) == 1
    M = np.where(field > 0, frac | (1 << frac_bits), frac)
    E = np.maximum(field, 1) + fmt["qmin"] - 1
    return sign, M, E, (field == top) & (frac == 0), (field == top) & (frac != 0)


def round_to(sign, M, E, sticky, fmt):
    """The IEEE pattern of (-1)**sign * M * 2**E (M >= 0, below 2**62; ``sticky``: the exact value
    is a little above M units), rounded to nearest, ties to even (see the module docstring)."""
    p, qmin, bias, bits = fmt["p"], fmt["qmin"], fmt["bias"], fmt["bits"]
    sign, M, E = np.asarray(sign, bool), np.asarray(M, _I64), np.asarray(E, _I64)
    sticky = np.asarray(sticky, bool)
    b = _bitlen(M)
    Q = np.maximum(b - p + E, qmin)
    s = Q - E
    exact = s <= 0
    sh = np.clip(s, 1, 63)
    n = np.where(exact, M << np.clip(-s, 0, 62), np.where(s >= 63, 0, M >> np.minimum(sh, 62)))
    r = M & ((np.int64(1) << np.minimum(sh, 62)) - 1)
    half = np.int64(1) << (np.minimum(sh, 63) - 1)
    up = ~exact & (s < 63) & ((r > half) | ((r == half) & (sticky | ((n & 1) == 1))))
    n = n + up
    carry = n == (1 << p)
    n = np.where(carry, n >> 1, n)
    Q = Q + carry
    normal = n >= (1 << (p - 1))
    field = np.where(normal, Q + p - 1 + bias, 0)
    mant = np.where(normal, n - (1 << (p - 1)), n)
    top = (1 << (bits - p)) - 1
    over = normal & (field >= top)
    out = np.where(over, top << (p - 1), (field << (p - 1)) | mant)
    return (sign.astype(_I64) << (bits - 1)) | out


def _special(result, nan, inf, inf_sign, fmt):
    """NaN where ``nan``; a signed infinity where ``inf``; ``result`` elsewhere."""
    bits, p = fmt["bits"], fmt["p"]
    infinity = (np.asarray(inf_sign, bool).astype(_I64) << (bits - 1)) | (((1 << (bits - p)) - 1) << (p - 1))
    return np.where(nan, fmt["nan"], np.where(inf, infinity, result))


def _out(x, fmt):
    x = np.asarray(x, _I64) & ((1 << fmt["bits"]) - 1)
    return x.astype(np.uint16 if fmt["bits"] == 16 else np.uint32)


def _mul(a, b, in_fmt, out_fmt):
    sa, ma, ea, ia, na = _decode(a, in_fmt)
    sb, mb, eb, ib, nb = _decode(b, in_fmt)
    sign = sa ^ sb
    finite = round_to(sign, ma * mb, ea + eb, False, out_fmt)
    invalid = na | nb | (ia & (mb == 0) & ~ib & ~nb) | (ib & (ma == 0) & ~ia & ~na)
    return _out(_special(finite, invalid, ia | ib, sign, out_fmt), out_fmt)


def _add(a, b, fmt, negate_b):
    sa, ma, ea, ia, na = _decode(a, fmt)
    sb, mb, eb, ib, nb = _decode(b, fmt)
    if negate_b:
        sb = ~sb
    a_big = ea >= eb
    sB, mB, eB = np.where(a_big, sa, sb), np.where(a_big, ma, mb), np.where(a_big, ea, eb)
    sS, mS, eS = np.where(a_big, sb, sa), np.where(a_big, mb, ma), np.where(a_big, eb, ea)
    d = eB - eS
    near = d <= EXACT_ALIGN
    # Exponents at most 38 apart: the exact sum, in units of the smaller exponent.
    whole = np.where(sB, -1, 1) * (mB << np.minimum(d, EXACT_ALIGN)) + np.where(sS, -1, 1) * mS
    # Further apart: the smaller operand is below 2**-15 of the larger one's last place, so three
    # guard bits and a sticky flag carry it (module docstring).
    same = sB == sS
    far = (mB << 3) - np.where(same | (mS == 0), 0, 1)
    M = np.where(near, np.abs(whole), far)
    E = np.where(near, eS, eB - 3)
    sign = np.where(near, whole < 0, sB)
    sticky = ~near & (mS != 0)
    zero_sign = sa & sb                     # an exact zero: +0 unless both operands are negative
    sign = np.where((M == 0) & ~sticky, zero_sign, sign)
    finite = round_to(sign, M, E, sticky, fmt)
    invalid = na | nb | (ia & ib & (sa != sb))
    return _out(_special(finite, invalid, ia | ib, np.where(ia, sa, sb), fmt), fmt)


# ----------------------------------------------------------------------------- the instructions
# Names and operand kinds as in qfloat.INSTRUCTIONS; a qf16 operand is a half, a qf32 one a single.


def _hh(fmt_out):
    return lambda a, b: _mul(a, b, HALF, fmt_out)


vmpy_qf16_hf = vmpy_qf16_mix_hf = vmpy_qf16 = _hh(HALF)
vmpy_qf32_hf = vmpy_qf32_mix_hf = vmpy_qf32_qf16 = _hh(SINGLE)     # exact: 22 bits, in range


def vmpy_qf32(a, b):
    return _mul(a, b, SINGLE, SINGLE)


vmpy_qf32_sf = vmpy_qf32


def vadd_hf(a, b):
    return _add(a, b, HALF, False)


def vsub_hf(a, b):
    return _add(a, b, HALF, True)


vadd_qf16_mix = vadd_qf16 = vadd_hf
vsub_qf16_mix = vsub_qf16 = vsub_hf


def vadd_sf(a, b):
    return _add(a, b, SINGLE, False)


def vsub_sf(a, b):
    return _add(a, b, SINGLE, True)


vadd_qf32_mix = vadd_qf32 = vadd_sf
vsub_qf32_mix = vsub_qf32 = vsub_sf


def vconv_hf_qf16(a):
    """``Vd.hf = Vu.qf16``: the lane already holds a half."""
    return _out(a, HALF)


def vconv_sf_qf32(a):
    """``Vd.sf = Vu.qf32``: the lane already holds a single."""
    return _out(a, SINGLE)


def vconv_hf_qf32(a):
    """``Vd.hf = Vuu.qf32``: the single rounded to a half (lane order as in the qfloat model)."""
    sign, m, e, inf, nan = _decode(a, SINGLE)
    return _out(_special(round_to(sign, m, e, False, HALF), nan, inf, sign, HALF), HALF)


# Selections round nothing: exactly the qfloat model's (the hardware's) compare.
vmax_hf, vmin_hf, vmax_sf, vmin_sf = qfloat.vmax_hf, qfloat.vmin_hf, qfloat.vmax_sf, qfloat.vmin_sf

#: name -> function, for every instruction of :data:`suite.targets.qfloat.INSTRUCTIONS`.
INSTRUCTIONS = {name: globals()[name] for name in qfloat.INSTRUCTIONS}
