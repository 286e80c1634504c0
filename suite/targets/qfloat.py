"""HVX *qfloat* arithmetic (Hexagon v68-v75), modelled bit for bit on raw bit patterns.

This is the numpy face of the model; ``qfloat_model.c`` is the C face that runs inside the Hexagon
guest (see ``hvx_rewrite.py``). Both implement the same integer algorithm, lane by lane, and
``tests/test_qfloat.py`` checks that they agree bit for bit.

Sources (read as documentation only; no code was copied):

* [QEMU-QF] Qualcomm's reference emulation ``target/hexagon/mmvec/mmvec_qfloat.c`` and
  ``mmvec_qfloat.h`` in ``quic/qemu`` (commits 05eda406 and 7c114b09 have the same legacy
  functions; the header of 1a22534e adds the v79 "extended qfloat", see below). It computes in
  C ``double`` arithmetic: ``parse_*`` split an operand into exponent and significand,
  ``rnd_sat_qf_sig`` rounds a significand onto the qfloat grid, ``get_ieee_sig``/``rnd_sat_hf``/
  ``rnd_sat_sf`` convert back to IEEE.
* [HVX-PRM] A text copy of Qualcomm's *Hexagon V6x HVX Programmer's Reference Manual* found in
  the search index (sections "Multiply half precision vector by vector", "Add half precision
  vector by vector", "Convert qfloat to IEEE floating point", "Minimum/maximum", and the
  instruction index). Its *Behavior* pseudo-code names the same helpers as [QEMU-QF]
  (``rnd_sat(exp, sig, sig_low)``, ``sig_low`` two-sum residuals, ``ilogb``), which ties each
  instruction to its [QEMU-QF] function; the instruction index lists the complete legacy set
  modelled here.
* [LLVM] Instruction names ``V6_vmpy_qf16_hf`` etc. as in LLVM's
  ``llvm/lib/Target/Hexagon/HexagonDepInstrInfo.td`` / the ``llvm.hexagon.V6.*`` intrinsics;
  the functions below are named after them.

Formats (confirmed in [QEMU-QF] ``parse_qf16``/``parse_qf32`` and ``rnd_sat_qf16/32``):

* qf16: bits 4:0 are the exponent E (bias 15); bits 15:5 are an 11-bit two's-complement integer m;
  the significand is 2*m+1 (an implied trailing 1), so the value is ``(2m+1) * 2**(E-25)``, always
  odd times a power of two: **the bit pattern 0 decodes as +2**-25, not 0** (``signif =
  (in >> 4) | 1``).
* qf32: bits 7:0 exponent (bias 127), bits 31:8 a 24-bit two's-complement m: ``(2m+1)*2**(E-150)``.
* Negation is the one's complement of the significand field (``negate16``/``negate32``), i.e.
  ``x ^ 0xFFE0`` / ``x ^ 0xFFFFFF00``.
* IEEE inputs (hf/sf) are read as sign and magnitude with **no inf/nan**: exponent field 31
  (hf) / 255 (sf) is just the next binade (``parse_hf``: ``exp = field - 15``, implicit bit when
  field > 0, subnormals at exponent -14).

Rounding (``rnd_sat_qf_sig``), restated on the exact value: a product or sum is formed exactly
(C doubles hold qf16 products and sums exactly; for qf32 sums the reference keeps a two-sum
residual ``sig_low`` whose sign breaks ties, which is the same as rounding the exact sum), scaled
to the exponent ``exp`` so that ``|sig| < 2``, and with R = sig / eps (eps = 2**-10 or 2**-23),
R2 = 4*floor(R/4), R3 = R - R2:

* normal case: R3 <= 1.5 -> R2+1; R3 <= 2.5 -> (R2+2), held at exponent+1 as the odd (R2+2)/2;
  else R2+3. The grid mixes odd multiples of eps and odd multiples of 2*eps, so an exact value on
  the coarse grid moves: 1.0*1.0 gives 1025/1024 (R=1024, R3=0 -> R2+1), and -1.0 (qf16 input)
  gives -1023/1024: the rounding goes up in signed terms, while hf*hf rounds the magnitude and
  then negates, so (-1.0)*(1.0) in hf gives -1025/1024.
* at exp == E_MAX, at exp == E_MIN-1 and when |sig| >= 2 (``prod_ovf``): only odd multiples of
  eps: R3 <= 2 -> R2+1, else R2+3 (after halving sig and adding 1 to the exponent in the last two).
* exp > E_MAX, or |sig| >= 2 at E_MAX: saturate to k = +-(2**(f+1) - 1) at the top exponent
  (qf16: m field 0x3FF / 0x400 with E=31, i.e. +-131008);
  exp <= E_MIN-2: the smallest magnitude (+-1 * 2**(E_MIN-f)) at E=0;
  an exact zero gives the bit pattern 0 (the "squash to zero" in [QEMU-QF]).

Conversions to IEEE (``get_ieee_sig``, ``rnd_sat_hf``/``rnd_sat_sf``) round to nearest even but
are not IEEE at the top: a value in [2**16, 131008) converts to an exponent field of 31 with its
mantissa (an IEEE NaN bit pattern), >= 131008 to 0x7FFF (and 0x7C00 only by a carry); for sf,
values >= 2**128 get exponent field 255. Subnormal results are computed from a 53-bit significand
shifted right, so bits more than 42 (hf) / 29 (sf) places below the result's last bit are dropped
before the round-to-nearest decision (this only matters for qf32 -> hf of tiny values).

vmax/vmin on hf/sf ([QEMU-QF] ``max_hf``/``min_hf``/``max_sf``/``min_sf``): compare the values
(sign-magnitude, exponent field 31/255 is an ordinary binade), ties keep the first operand, and
+0/-0 pairs follow the reference's special case.

Out of scope: v79+ uses an *extended* qfloat (extra LREQ bits per element, IEEE-like rounding,
``parse_extqf32``/``rnd_sat_extqf32`` in [QEMU-QF]'s header); and HVX IEEE arithmetic
(``+hvx-ieee-fp``, v73+: ``Vd.hf = vadd(Vu.hf,Vv.hf)``, ``vfmax``...). Vector compares
``Qd4 = vcmp.gt(Vu.hf,Vv.hf)`` exist on v68 but write predicate registers; they are not modelled
(the rewriter rejects them by name).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

# ----------------------------------------------------------------------------- format constants

#: [QEMU-QF] mmvec_qfloat.h: E_MIN_QF16 -15, E_MAX_QF16 16, BIAS_QF16 15, FRAC_HF 10;
#: E_MIN_QF32 -127, E_MAX_QF32 128, BIAS_QF32 127, FRAC_SF 23; E_MIN_HF -14, E_MIN_SF -126.
QF16 = dict(f=10, emin=-15, emax=16, bias=15, ebits=5)
QF32 = dict(f=23, emin=-127, emax=128, bias=127, ebits=8)

_I64 = np.int64


def _u16(x):
    return np.asarray(x).astype(np.uint16)


def _u32(x):
    return np.asarray(x).astype(np.uint32)


def _bitlen(a):
    """Bit length of non-negative integers below 2**53 (0 -> 0)."""
    a = np.asarray(a, dtype=_I64)
    _, e = np.frexp(a.astype(np.float64))
    return np.where(a == 0, 0, e).astype(_I64)


# ----------------------------------------------------------------------------- operand decoding
# Each decoder gives (k, e): the value is k * 2**(e - f), f = 10 (16-bit) or 23 (32-bit);
# k is a signed integer (qf: odd; IEEE: sign * magnitude).


def _dec_qf16(x):
    x = _u16(x)
    k = (x.view(np.int16).astype(_I64) >> 4) | 1          # [QEMU-QF] parse_qf16: (in >> 4) | 1
    return k, (x & 0x1F).astype(_I64) - 15


def _dec_qf32(x):
    x = _u32(x)
    k = (x.view(np.int32).astype(_I64) >> 7) | 1          # [QEMU-QF] parse_qf32: (in >> 7) | 1
    return k, (x & 0xFF).astype(_I64) - 127


def _dec_hf(x):
    """Sign (bool), magnitude s (11 bits), exponent; field 31 is an ordinary binade."""
    x = _u16(x).astype(_I64)
    field = (x >> 10) & 0x1F
    s = (x & 0x3FF) | np.where(field > 0, 0x400, 0)
    return (x >> 15) == 1, s, np.maximum(field - 15, -14)  # [QEMU-QF] parse_hf


def _dec_sf(x):
    x = _u32(x).astype(_I64)
    field = (x >> 23) & 0xFF
    s = (x & 0x7FFFFF) | np.where(field > 0, 0x800000, 0)
    return (x >> 31) == 1, s, np.maximum(field - 127, -126)  # [QEMU-QF] parse_sf


# ----------------------------------------------------------------------------- rounding


def _round(exp, H, st, fmt):
    """qfloat rounding of an exact value ([QEMU-QF] rnd_sat_qf_sig), on integers.

    The value is sig * 2**exp with H = floor(sig * 2**(f+1)) (half-eps units) and ``st`` true
    when sig * 2**(f+1) is not an integer. Returns the raw bit pattern (int64).
    """
    f, emin, emax, bias, ebits = fmt["f"], fmt["emin"], fmt["emax"], fmt["bias"], fmt["ebits"]
    exp = np.asarray(exp, _I64)
    H = np.asarray(H, _I64)
    st = np.asarray(st, bool)
    sign = H < 0
    zero = (H == 0) & ~st
    lim = 1 << (f + 2)                                   # |sig| >= 2  <=>  H >= lim or H < -lim
    pov = (H >= lim) | (H < -lim)                        # prod_ovf (sig == -2 exactly excluded)
    ovf = (exp > emax) | (pov & (exp == emax))
    undf = ~ovf & (exp <= emin - 2)
    halve = (exp == emin - 1) | (pov & (exp < emax))    # scale = 2, exp_adj = 1
    case_a = (exp == emax) | halve                      # odd multiples of eps only
    Hs = np.where(halve, H >> 1, H)
    sts = st | (halve & ((H & 1) != 0))
    r = Hs & 7                                           # R3 in half-eps units, 0..7
    q = Hs >> 3                                          # R2 = 4*q (eps units)
    n_a = 4 * q + np.where((r < 4) | ((r == 4) & ~sts), 1, 3)
    b1 = (r < 3) | ((r == 3) & ~sts)
    b2 = ~b1 & ((r < 5) | ((r == 5) & ~sts))
    n_b = np.where(b1, 4 * q + 1, np.where(b2, 2 * q + 1, 4 * q + 3))
    n = np.where(case_a, n_a, n_b)
    adj = np.where(case_a, halve, b2).astype(_I64)
    j = (np.abs(n) >> 1) & ((1 << f) - 1)
    fmask = (1 << (f + 1)) - 1
    field = np.where(sign, ~j, j) & fmask
    efield = exp + bias + adj
    field = np.where(ovf, np.where(sign, 1 << f, (1 << f) - 1), field)
    efield = np.where(ovf, emax + bias, efield)
    field = np.where(undf, np.where(sign, fmask, 0), field)
    efield = np.where(undf, emin + bias, efield)
    efield = np.where(zero, 0, efield)                   # exact zero: exponent field 0
    return (field << ebits) | (efield & ((1 << ebits) - 1))


def _floor_shift(k, s):
    """floor(k * 2**-s) for s >= 0 and whether bits were lost."""
    s = np.minimum(np.asarray(s, _I64), 62)
    return k >> s, (k & ((np.int64(1) << s) - 1)) != 0


def _mul(ka, ea, kb, eb, f_in, fmt):
    """Round the exact product (ka*2**(ea-f_in)) * (kb*2**(eb-f_in)) to the qfloat ``fmt``."""
    p = ka * kb                                          # < 2**48: exact in int64
    shift = 2 * f_in - (fmt["f"] + 1)
    if shift >= 0:
        H, st = _floor_shift(p, np.full(p.shape, shift))
    else:
        H, st = p << -shift, np.zeros(p.shape, bool)
    return _round(ea + eb, H, st, fmt)


def _add(ka, ea, kb, eb, fmt):
    """Round the exact sum of two operands k*2**(e-f) ([QEMU-QF] add_qf16 and relatives).

    The exponent of the sum is the reference's ``exp_ab``: the operand with the larger exponent
    field (the second one on a tie) normalised by ``ilogb`` of its significand, but not below the
    other operand's exponent.
    """
    f = fmt["f"]
    a_big = ea > eb
    kB, eB = np.where(a_big, ka, kb), np.where(a_big, ea, eb)
    kS, eS = np.where(a_big, kb, ka), np.where(a_big, eb, ea)
    ilog = np.where(kB == 0, -(f + 1), _bitlen(np.abs(kB)) - 1 - f)
    exp_ab = np.maximum(eB + ilog, eS)
    da = eB - exp_ab                                     # 0 .. f+1
    db = eS - exp_ab                                     # <= 0
    lo, st = _floor_shift(kS, np.maximum(-db - 1, 0))
    lo = np.where(db == 0, 2 * kS, lo)
    st = np.where(db == 0, False, st)
    H = (kB << (da + 1)) + lo
    return _round(exp_ab, H, st, fmt)


def _neg16(x):
    return np.asarray(x, _I64) ^ 0xFFE0                 # [QEMU-QF] negate16


def _neg32(x):
    return np.asarray(x, _I64) ^ 0xFFFFFF00             # [QEMU-QF] negate32


def _out16(x):
    return (np.asarray(x, _I64) & 0xFFFF).astype(np.uint16)


def _out32(x):
    return (np.asarray(x, _I64) & 0xFFFFFFFF).astype(np.uint32)


def _signed(sign, s):
    return np.where(sign, -s, s)


# ----------------------------------------------------------------------------- multiplies


def vmpy_qf16(a, b):
    """``Vd.qf16 = vmpy(Vu.qf16,Vv.qf16)`` ([QEMU-QF] mpy_qf16): signed product, no negation."""
    ka, ea = _dec_qf16(a)
    kb, eb = _dec_qf16(b)
    return _out16(_mul(ka, ea, kb, eb, 10, QF16))


def vmpy_qf16_hf(a, b):
    """``Vd.qf16 = vmpy(Vu.hf,Vv.hf)`` (mpy_qf16_hf): round |a|*|b|, then negate if signs differ."""
    sa, ma, ea = _dec_hf(a)
    sb, mb, eb = _dec_hf(b)
    r = _mul(ma, ea, mb, eb, 10, QF16)
    return _out16(np.where(sa != sb, _neg16(r), r))


def vmpy_qf16_mix_hf(a, b):
    """``Vd.qf16 = vmpy(Vu.qf16,Vv.hf)`` (mpy_qf16_mix_hf): qf16 * |b|, negated if b < 0."""
    ka, ea = _dec_qf16(a)
    sb, mb, eb = _dec_hf(b)
    r = _mul(ka, ea, mb, eb, 10, QF16)
    return _out16(np.where(sb, _neg16(r), r))


def vmpy_qf32(a, b):
    """``Vd.qf32 = vmpy(Vu.qf32,Vv.qf32)`` (mpy_qf32)."""
    ka, ea = _dec_qf32(a)
    kb, eb = _dec_qf32(b)
    return _out32(_mul(ka, ea, kb, eb, 23, QF32))


def vmpy_qf32_sf(a, b):
    """``Vd.qf32 = vmpy(Vu.sf,Vv.sf)`` (mpy_qf32_sf): round |a|*|b|, negate if signs differ."""
    sa, ma, ea = _dec_sf(a)
    sb, mb, eb = _dec_sf(b)
    r = _mul(ma, ea, mb, eb, 23, QF32)
    return _out32(np.where(sa != sb, _neg32(r), r))


def vmpy_qf32_hf(a, b):
    """``Vdd.qf32 = vmpy(Vu.hf,Vv.hf)`` lane-wise (mpy_qf32_hf): hf lane i -> qf32 lane i.

    In registers, even hf lanes go to ``Vdd.v[0]`` and odd ones to ``Vdd.v[1]`` ([HVX-PRM]:
    ``u0 = Vu.w[i] & 0xFFFF`` -> ``Vdd.v[0].qf32[i]``); see :func:`widen_to_pair`.
    """
    sa, ma, ea = _dec_hf(a)
    sb, mb, eb = _dec_hf(b)
    r = _mul(ma, ea, mb, eb, 10, QF32)
    return _out32(np.where(sa != sb, _neg32(r), r))


def vmpy_qf32_mix_hf(a, b):
    """``Vdd.qf32 = vmpy(Vu.qf16,Vv.hf)`` lane-wise (mpy_qf32_mix_hf)."""
    ka, ea = _dec_qf16(a)
    sb, mb, eb = _dec_hf(b)
    r = _mul(ka, ea, mb, eb, 10, QF32)
    return _out32(np.where(sb, _neg32(r), r))


def vmpy_qf32_qf16(a, b):
    """``Vdd.qf32 = vmpy(Vu.qf16,Vv.qf16)`` lane-wise (mpy_qf32_qf16)."""
    ka, ea = _dec_qf16(a)
    kb, eb = _dec_qf16(b)
    return _out32(_mul(ka, ea, kb, eb, 10, QF32))


# ----------------------------------------------------------------------------- adds and subtracts


def vadd_qf16(a, b):
    """``Vd.qf16 = vadd(Vu.qf16,Vv.qf16)`` (add_qf16)."""
    ka, ea = _dec_qf16(a)
    kb, eb = _dec_qf16(b)
    return _out16(_add(ka, ea, kb, eb, QF16))


def vsub_qf16(a, b):
    """``Vd.qf16 = vsub(Vu.qf16,Vv.qf16)`` (sub_qf16)."""
    ka, ea = _dec_qf16(a)
    kb, eb = _dec_qf16(b)
    return _out16(_add(ka, ea, -kb, eb, QF16))


def vadd_qf16_mix(a, b):
    """``Vd.qf16 = vadd(Vu.qf16,Vv.hf)`` (add_qf16_mix)."""
    ka, ea = _dec_qf16(a)
    sb, mb, eb = _dec_hf(b)
    return _out16(_add(ka, ea, _signed(sb, mb), eb, QF16))


def vsub_qf16_mix(a, b):
    """``Vd.qf16 = vsub(Vu.qf16,Vv.hf)`` (sub_qf16_mix)."""
    ka, ea = _dec_qf16(a)
    sb, mb, eb = _dec_hf(b)
    return _out16(_add(ka, ea, _signed(~sb, mb), eb, QF16))


def _add_ieee(a, b, dec, fmt, neg, flip_b):
    """add_hf/add_sf (and sub via flip_b): both negative -> negate(round(|a|+|b|)), else round(a+b)."""
    sa, ma, ea = dec(a)
    sb, mb, eb = dec(b)
    if flip_b:
        sb = ~sb
    both = sa & sb
    r = _add(_signed(sa & ~both, ma), ea, _signed(sb & ~both, mb), eb, fmt)
    return np.where(both, neg(r), r)


def vadd_hf(a, b):
    """``Vd.qf16 = vadd(Vu.hf,Vv.hf)`` (add_hf)."""
    return _out16(_add_ieee(a, b, _dec_hf, QF16, _neg16, False))


def vsub_hf(a, b):
    """``Vd.qf16 = vsub(Vu.hf,Vv.hf)`` (sub_hf: the same as add_hf with b's sign flipped)."""
    return _out16(_add_ieee(a, b, _dec_hf, QF16, _neg16, True))


def vadd_qf32(a, b):
    """``Vd.qf32 = vadd(Vu.qf32,Vv.qf32)`` (add_qf32)."""
    ka, ea = _dec_qf32(a)
    kb, eb = _dec_qf32(b)
    return _out32(_add(ka, ea, kb, eb, QF32))


def vsub_qf32(a, b):
    """``Vd.qf32 = vsub(Vu.qf32,Vv.qf32)`` (sub_qf32)."""
    ka, ea = _dec_qf32(a)
    kb, eb = _dec_qf32(b)
    return _out32(_add(ka, ea, -kb, eb, QF32))


def vadd_qf32_mix(a, b):
    """``Vd.qf32 = vadd(Vu.qf32,Vv.sf)`` (add_qf32_mix)."""
    ka, ea = _dec_qf32(a)
    sb, mb, eb = _dec_sf(b)
    return _out32(_add(ka, ea, _signed(sb, mb), eb, QF32))


def vsub_qf32_mix(a, b):
    """``Vd.qf32 = vsub(Vu.qf32,Vv.sf)`` (sub_qf32_mix)."""
    ka, ea = _dec_qf32(a)
    sb, mb, eb = _dec_sf(b)
    return _out32(_add(ka, ea, _signed(~sb, mb), eb, QF32))


def vadd_sf(a, b):
    """``Vd.qf32 = vadd(Vu.sf,Vv.sf)`` (add_sf)."""
    return _out32(_add_ieee(a, b, _dec_sf, QF32, _neg32, False))


def vsub_sf(a, b):
    """``Vd.qf32 = vsub(Vu.sf,Vv.sf)`` (sub_sf)."""
    return _out32(_add_ieee(a, b, _dec_sf, QF32, _neg32, True))


# ----------------------------------------------------------------------------- conversions


def _to_ieee(k, p, half):
    """[QEMU-QF] get_ieee_sig + rnd_sat_hf/rnd_sat_sf for the value k * 2**p (k odd, nonzero)."""
    if half:
        emin, frac_bits, mbits, bias, top = -14, 42, 10, 15, 0x7FF        # HF_MAX = 0x7FF << 6
    else:
        emin, frac_bits, mbits, bias, top = -126, 29, 23, 127, 0xFFFFFF   # SF_MAX = 0xFFFFFF << 105
    sign = k < 0
    a = np.abs(k)
    bl = _bitlen(a)
    exp_d = bl - 1 + p
    m53 = a << (53 - bl)                                   # double's significand, bit 52 leading
    shift = emin - exp_d
    sig53 = np.where(exp_d <= emin - 1, m53 >> np.clip(shift, 0, 62), m53)
    sig53 = np.where(shift >= 53, 0, sig53)
    signif = sig53 >> frac_bits
    frac = sig53 & ((np.int64(1) << frac_bits) - 1)
    halfway = np.int64(1) << (frac_bits - 1)
    mant = signif & ((1 << mbits) - 1)
    emax = 16 if half else 128
    at_max = (exp_d > emax) | ((exp_d == emax) & (m53 >= (np.int64(top) << (53 - top.bit_length()))))
    lsb = signif & 1
    up = ~at_max & (((lsb == 0) & (frac > halfway)) | ((lsb == 1) & (frac >= halfway)))
    carry = up & (mant == (1 << mbits) - 1)
    mant = np.where(at_max, (1 << mbits) - 1, np.where(up, np.where(carry, 0, mant + 1), mant))
    exp_d = exp_d + carry
    if half:
        bits = (sign.astype(_I64) << 15) | (np.clip(exp_d + bias, 0, 31) << 10) | mant
        return np.where(exp_d > 16, (sign.astype(_I64) << 15) | 0x7FFF, bits)
    return (sign.astype(_I64) << 31) | (np.clip(exp_d + bias, 0, 255) << 23) | mant


def vconv_hf_qf16(a):
    """``Vd.hf = Vu.qf16`` (conv_hf_qf16)."""
    k, e = _dec_qf16(a)
    return _out16(_to_ieee(k, e - 10, True))


def vconv_hf_qf32(a):
    """``Vd.hf = Vuu.qf32`` lane-wise (conv_hf_qf32): qf32 lane -> hf lane.

    In registers ``Vd.hf[2i] = Vuu.v[0].qf32[i]`` and ``Vd.hf[2i+1] = Vuu.v[1].qf32[i]`` ([HVX-PRM]).
    """
    k, e = _dec_qf32(a)
    return _out16(_to_ieee(k, e - 23, True))


def vconv_sf_qf32(a):
    """``Vd.sf = Vu.qf32`` (conv_sf_qf32)."""
    k, e = _dec_qf32(a)
    return _out32(_to_ieee(k, e - 23, False))


# ----------------------------------------------------------------------------- max / min


def _key(x, bits):
    x = np.asarray(x).astype(_I64)
    mag = x & ((1 << (bits - 1)) - 1)
    return np.where((x >> (bits - 1)) & 1 == 1, -mag, mag), mag == 0


def _maxmin(a, b, bits, is_max):
    ka, za = _key(a, bits)
    kb, zb = _key(b, bits)
    a64, b64 = np.asarray(a).astype(_I64), np.asarray(b).astype(_I64)
    if is_max:   # [QEMU-QF] max_hf: both zero -> (a == +0) ? a : b; else b > a ? b : a
        r = np.where(kb > ka, b64, a64)
        r = np.where(za & zb, np.where(a64 == 0, a64, b64), r)
    else:        # min_hf: both zero -> (a == +0) ? b : a; else a > b ? b : a
        r = np.where(ka > kb, b64, a64)
        r = np.where(za & zb, np.where(a64 == 0, b64, a64), r)
    return r


def vmax_hf(a, b):
    """``Vd.hf = vmax(Vu.hf,Vv.hf)`` (max_hf)."""
    return _out16(_maxmin(a, b, 16, True))


def vmin_hf(a, b):
    """``Vd.hf = vmin(Vu.hf,Vv.hf)`` (min_hf)."""
    return _out16(_maxmin(a, b, 16, False))


def vmax_sf(a, b):
    """``Vd.sf = vmax(Vu.sf,Vv.sf)`` (max_sf)."""
    return _out32(_maxmin(a, b, 32, True))


def vmin_sf(a, b):
    """``Vd.sf = vmin(Vu.sf,Vv.sf)`` (min_sf)."""
    return _out32(_maxmin(a, b, 32, False))


# ----------------------------------------------------------------------------- catalogue

#: Every modelled instruction: name -> (function, canonical form, operand kinds, result kind).
#: Kinds: hf/qf16 (16-bit lanes), sf/qf32 (32-bit lanes); "qf32:pair" is a register pair whose
#: lanes come from the even/odd 16-bit lanes of the sources (widening), "qf32:pair" as a source of
#: vconv_hf_qf32 is read the same way.
INSTRUCTIONS = {
    "vmpy_qf16_hf": (vmpy_qf16_hf, "vmpy(hf,hf)->qf16", ("hf", "hf"), "qf16"),
    "vmpy_qf16_mix_hf": (vmpy_qf16_mix_hf, "vmpy(qf16,hf)->qf16", ("qf16", "hf"), "qf16"),
    "vmpy_qf16": (vmpy_qf16, "vmpy(qf16,qf16)->qf16", ("qf16", "qf16"), "qf16"),
    "vmpy_qf32_hf": (vmpy_qf32_hf, "vmpy(hf,hf)->qf32:pair", ("hf", "hf"), "qf32:pair"),
    "vmpy_qf32_mix_hf": (vmpy_qf32_mix_hf, "vmpy(qf16,hf)->qf32:pair", ("qf16", "hf"), "qf32:pair"),
    "vmpy_qf32_qf16": (vmpy_qf32_qf16, "vmpy(qf16,qf16)->qf32:pair", ("qf16", "qf16"), "qf32:pair"),
    "vmpy_qf32": (vmpy_qf32, "vmpy(qf32,qf32)->qf32", ("qf32", "qf32"), "qf32"),
    "vmpy_qf32_sf": (vmpy_qf32_sf, "vmpy(sf,sf)->qf32", ("sf", "sf"), "qf32"),
    "vadd_hf": (vadd_hf, "vadd(hf,hf)->qf16", ("hf", "hf"), "qf16"),
    "vadd_qf16_mix": (vadd_qf16_mix, "vadd(qf16,hf)->qf16", ("qf16", "hf"), "qf16"),
    "vadd_qf16": (vadd_qf16, "vadd(qf16,qf16)->qf16", ("qf16", "qf16"), "qf16"),
    "vsub_hf": (vsub_hf, "vsub(hf,hf)->qf16", ("hf", "hf"), "qf16"),
    "vsub_qf16_mix": (vsub_qf16_mix, "vsub(qf16,hf)->qf16", ("qf16", "hf"), "qf16"),
    "vsub_qf16": (vsub_qf16, "vsub(qf16,qf16)->qf16", ("qf16", "qf16"), "qf16"),
    "vadd_sf": (vadd_sf, "vadd(sf,sf)->qf32", ("sf", "sf"), "qf32"),
    "vadd_qf32_mix": (vadd_qf32_mix, "vadd(qf32,sf)->qf32", ("qf32", "sf"), "qf32"),
    "vadd_qf32": (vadd_qf32, "vadd(qf32,qf32)->qf32", ("qf32", "qf32"), "qf32"),
    "vsub_sf": (vsub_sf, "vsub(sf,sf)->qf32", ("sf", "sf"), "qf32"),
    "vsub_qf32_mix": (vsub_qf32_mix, "vsub(qf32,sf)->qf32", ("qf32", "sf"), "qf32"),
    "vsub_qf32": (vsub_qf32, "vsub(qf32,qf32)->qf32", ("qf32", "qf32"), "qf32"),
    "vconv_hf_qf16": (vconv_hf_qf16, "conv(qf16)->hf", ("qf16",), "hf"),
    "vconv_hf_qf32": (vconv_hf_qf32, "conv(qf32:pair)->hf", ("qf32:pair",), "hf"),
    "vconv_sf_qf32": (vconv_sf_qf32, "conv(qf32)->sf", ("qf32",), "sf"),
    "vmax_hf": (vmax_hf, "vmax(hf,hf)->hf", ("hf", "hf"), "hf"),
    "vmin_hf": (vmin_hf, "vmin(hf,hf)->hf", ("hf", "hf"), "hf"),
    "vmax_sf": (vmax_sf, "vmax(sf,sf)->sf", ("sf", "sf"), "sf"),
    "vmin_sf": (vmin_sf, "vmin(sf,sf)->sf", ("sf", "sf"), "sf"),
}

LANE_BITS = {"hf": 16, "qf16": 16, "sf": 32, "qf32": 32, "qf32:pair": 32}


def widen_to_pair(lanes32):
    """Lane-wise widening results (one per 16-bit source lane) in register-pair layout.

    ``lanes32`` has 2n entries (n = 32 per 128-byte vector); returns (v0, v1): even lanes, odd lanes.
    Works per 64-lane vector: for longer inputs the layout repeats every 64 lanes.
    """
    x = np.asarray(lanes32).reshape(-1, 64)
    return np.ascontiguousarray(x[:, 0::2]).reshape(-1), np.ascontiguousarray(x[:, 1::2]).reshape(-1)


def pair_to_narrow(v0, v1):
    """The hf lane order of ``Vd.hf = Vuu.qf32``: lane 2i from v0[i], lane 2i+1 from v1[i]."""
    v0 = np.asarray(v0).reshape(-1, 32)
    v1 = np.asarray(v1).reshape(-1, 32)
    out = np.empty((v0.shape[0], 64), dtype=v0.dtype)
    out[:, 0::2], out[:, 1::2] = v0, v1
    return out.reshape(-1)


# ----------------------------------------------------------------------------- readable decode/encode


def qf16_value(bits) -> Fraction:
    """Exact value of one qf16 bit pattern: (2m+1) * 2**(E-25)."""
    bits = int(bits) & 0xFFFF
    m = bits >> 5
    m = m - 2048 if m >= 1024 else m
    return Fraction(2 * m + 1) * Fraction(2) ** ((bits & 31) - 25)


def qf32_value(bits) -> Fraction:
    """Exact value of one qf32 bit pattern: (2m+1) * 2**(E-150)."""
    bits = int(bits) & 0xFFFFFFFF
    m = bits >> 8
    m = m - (1 << 24) if m >= (1 << 23) else m
    return Fraction(2 * m + 1) * Fraction(2) ** ((bits & 255) - 150)


def qf16_bits(k: int, e_field: int) -> int:
    """The qf16 pattern of the value k * 2**(e_field-25), k odd in [-2047, 2047]."""
    if k % 2 == 0 or not -2047 <= k <= 2047 or not 0 <= e_field <= 31:
        raise ValueError("qf16 needs an odd k in [-2047, 2047] and an exponent field in 0..31")
    return ((((k - 1) // 2) & 0x7FF) << 5) | e_field


def qf32_bits(k: int, e_field: int) -> int:
    """The qf32 pattern of the value k * 2**(e_field-150), k odd, |k| < 2**24."""
    if k % 2 == 0 or not -(1 << 24) < k < (1 << 24) or not 0 <= e_field <= 255:
        raise ValueError("qf32 needs an odd k with |k| < 2**24 and an exponent field in 0..255")
    return ((((k - 1) // 2) & 0xFFFFFF) << 8) | e_field


def to_float(bits, kind: str):
    """float64 values of raw patterns of one kind (hf/sf IEEE; qf16/qf32 exact in float64)."""
    if kind == "hf":
        return _u16(bits).view(np.float16).astype(np.float64)
    if kind == "sf":
        return _u32(bits).view(np.float32).astype(np.float64)
    if kind == "qf16":
        k, e = _dec_qf16(bits)
        return np.ldexp(k.astype(np.float64), (e - 10).astype(np.int32))
    if kind == "qf32":
        k, e = _dec_qf32(bits)
        return np.ldexp(k.astype(np.float64), (e - 23).astype(np.int32))
    raise ValueError(f"unknown kind {kind!r}")
