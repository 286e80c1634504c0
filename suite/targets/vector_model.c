/*
 * The HVX floating-point model on HVX integer instructions, 64 lanes at once, for the instructions
 * TVM's fp16 code executes most: vmpy(hf,hf)->qf16, vadd(hf,hf)->qf16, vadd(qf16,qf16)->qf16,
 * vadd(qf16,hf)->qf16, vmax/vmin(hf,hf), in qfloat and in the IEEE twin. The same integer
 * algorithm as qfloat_model.c's and ieee_model.c's lane functions (and qfloat.py's, ieee_twin.py's),
 * on every lane at once; tests/test_qfloat.py checks every face of the model against the numpy one
 * on the same operands, bit for bit.
 *
 * Why: QEMU runs most HVX integer instructions as a few host vector instructions (its TCG "gvec"
 * operations: add, sub, and, or, xor, shifts by a scalar, min, max, about 1-2 ns for 64 lanes),
 * where the scalar model spends some 25 instructions per lane. Multiplies, per-lane shifts and
 * leading-zero counts are QEMU helper calls (15-30 ns): a few per instruction. No HVX store is
 * used (QEMU 10 spends over 1 us on each) and no predicate register (the rewritten kernel may keep
 * its own in Q0-Q3): a condition is a lane mask, all ones or zero, the sign of a difference.
 *
 * Few vector registers: every one the model writes that the kernel still needs is copied aside by
 * the stub that calls it, into a register the kernel does not need there, or, when none is left,
 * to memory (a spill costs a hundred times a register move). So every operation below goes through
 * pin(), an empty volatile asm: the compiler keeps the operations in the order written and cannot
 * hoist a constant (each is a vsplat where it is used), and the order written keeps few values
 * alive at once: special results (overflow, underflow, zero, NaN, infinity) are folded into one
 * vector early, holding NOT_SPECIAL in the ordinary lanes.
 *
 * Everything but the products fits 16-bit lanes: the rounding input H is below 2**13 in
 * magnitude (an aligned sum is normalised to 12 bits before its addend), exponents and the
 * rounding's case index are small, so masks from 16-bit differences are exact.
 *
 * Entry points: V qfv_<name>(V a, V b) (qfloat) and V qiv_<name>(V a, V b) (the IEEE twin), the
 * sources in V0, V1 and the result in V0 (the Hexagon calling convention).
 */

#include <hexagon_types.h>
#include <hvx_hexagon_protos.h>

typedef HVX_Vector V;

#define INLINE static inline __attribute__((always_inline))

/* Empty, volatile: keeps every operation where it is written (see above). */
INLINE V pin(V x) { __asm__ volatile("" : "+v"(x)); return x; }

/* 16-bit lanes */
INLINE V k(int x) { V r; __asm__ volatile("%0.h = vsplat(%1)" : "=v"(r) : "r"(x)); return r; }
INLINE V add(V a, V b) { return pin(Q6_Vh_vadd_VhVh(a, b)); }
INLINE V sub(V a, V b) { return pin(Q6_Vh_vsub_VhVh(a, b)); }
INLINE V and_(V a, V b) { return pin(Q6_V_vand_VV(a, b)); }
INLINE V or_(V a, V b) { return pin(Q6_V_vor_VV(a, b)); }
INLINE V xor_(V a, V b) { return pin(Q6_V_vxor_VV(a, b)); }
INLINE V not_(V a) { return pin(Q6_V_vnot_V(a)); }
INLINE V shl(V a, int n) { return pin(Q6_Vh_vasl_VhR(a, n)); }
INLINE V sar(V a, int n) { return pin(Q6_Vh_vasr_VhR(a, n)); }
INLINE V shr(V a, int n) { return pin(Q6_Vuh_vlsr_VuhR(a, n)); }
INLINE V max_(V a, V b) { return pin(Q6_Vh_vmax_VhVh(a, b)); }
INLINE V min_(V a, V b) { return pin(Q6_Vh_vmin_VhVh(a, b)); }
INLINE V abs_(V a) { return pin(Q6_Vh_vabs_Vh(a)); }
/* per-lane shifts by 0..15 and the bit length of non-negative lanes: QEMU helpers */
INLINE V shlv(V a, V n) { return pin(Q6_Vh_vasl_VhVh(a, n)); }
INLINE V sarv(V a, V n) { return pin(Q6_Vh_vasr_VhVh(a, n)); }
INLINE V bitlen(V a) { return sub(k(16), pin(Q6_Vuh_vcl0_Vuh(a))); }
/* masks (all ones where true) */
INLINE V lt(V a, V b) { return sar(sub(a, b), 15); }               /* for |a - b| < 2**15 */
INLINE V ne0(V a) { return sar(or_(a, sub(k(0), a)), 15); }       /* any a: a or -a has bit 15 */
INLINE V eq(V a, V b) { return not_(ne0(sub(a, b))); }
INLINE V sel(V m, V x, V y) { return xor_(y, and_(xor_(x, y), m)); } /* m ? x : y */
INLINE V bit(V m) { return and_(m, k(1)); }

/* 32-bit lanes */
INLINE V kw(int x) { V r; __asm__ volatile("%0 = vsplat(%1)" : "=v"(r) : "r"(x)); return r; }
INLINE V addw(V a, V b) { return pin(Q6_Vw_vadd_VwVw(a, b)); }
INLINE V subw(V a, V b) { return pin(Q6_Vw_vsub_VwVw(a, b)); }
INLINE V maxw(V a, V b) { return pin(Q6_Vw_vmax_VwVw(a, b)); }
INLINE V minw(V a, V b) { return pin(Q6_Vw_vmin_VwVw(a, b)); }
INLINE V absw(V a) { return pin(Q6_Vw_vabs_Vw(a)); }
INLINE V shlw(V a, int n) { return pin(Q6_Vw_vasl_VwR(a, n)); }
INLINE V sarw(V a, int n) { return pin(Q6_Vw_vasr_VwR(a, n)); }
INLINE V shrw(V a, int n) { return pin(Q6_Vuw_vlsr_VuwR(a, n)); }
INLINE V shlvw(V a, V n) { return pin(Q6_Vw_vasl_VwVw(a, n)); }    /* helpers, as above */
INLINE V shrvw(V a, V n) { return pin(Q6_Vw_vlsr_VwVw(a, n)); }
INLINE V clzw(V a) { return pin(Q6_Vuw_vcl0_Vuw(a)); }
INLINE V mulw(V a, V b) { return pin(Q6_Vw_vmpyie_VwVuh(a, b)); }  /* a * (b & 0xFFFF) per word */
INLINE V ltw(V a, V b) { return sarw(subw(a, b), 31); }            /* for |a - b| < 2**31 */
INLINE V ne0w(V a) { return sarw(or_(a, subw(kw(0), a)), 31); }
INLINE V eqw(V a, V b) { return not_(ne0w(subw(a, b))); }

/* ------------------------------------------------------------------------------ qfloat (qf16) */

/* Not a result of r16's special cases (those are 0x8000, 0x801F, 0x7FE0, 0x7FFF, 0xFFE0 and 0). */
#define NOT_SPECIAL 1

/* qfloat.py:_round for qf16 (f 10, E_MIN -15, E_MAX 16, bias 15) of the exact value with
 * H = floor(sig * 2**11), st = 1 when sig * 2**11 is not an integer, at exponent e. qfloat.py's
 * case analysis, regrouped: the increment of the rounded significand is 1 + 2 [t >= 9 or 11], the
 * halved case (hb) takes half of q4, and the result's sign is that of n, which is that of H. */
INLINE V r16(V e, V H, V st)
{
    /* Overflow, underflow and zero first: their whole result, NOT_SPECIAL elsewhere. A zero lane
     * (H and st zero) rounds to field 0 (n = 1): only its exponent field needs the zero. */
    const V pov = or_(lt(k(4095), H), lt(H, k(-4096)));                /* |sig| >= 2 */
    const V e_max = eq(e, k(16));
    const V ovf = or_(lt(k(16), e), and_(pov, e_max));
    const V zero = not_(ne0(or_(H, st)));
    V special = and_(ovf, or_(shl(sel(sar(H, 15), k(0x400), k(0x3FF)), 5), and_(not_(zero), k(31))));
    const V undf = and_(not_(ovf), lt(e, k(-16)));
    special = or_(special, and_(undf, shl(and_(sar(H, 15), k(0x7FF)), 5)));
    special = sel(or_(or_(ovf, undf), zero), special, k(NOT_SPECIAL));
    const V halve = or_(eq(e, k(-16)), and_(pov, lt(e, k(16))));
    const V odd_only = or_(halve, e_max);
    const V Hs = sel(halve, sar(H, 1), H);
    const V t = or_(shl(and_(Hs, k(7)), 1), or_(st, and_(bit(halve), H)));  /* 2 R3 + sticky: 0..15 */
    const V q4 = shl(sar(Hs, 3), 2);                                          /* R2 */
    const V inc = add(k(1), and_(not_(lt(t, sel(odd_only, k(9), k(11)))), k(2)));
    const V hb = and_(not_(odd_only), and_(not_(lt(t, k(7))), lt(t, k(11))));
    const V n = add(sel(hb, sar(q4, 1), q4), inc);
    const V efield = add(add(e, k(15)), bit(or_(halve, hb)));
    const V field = and_(xor_(and_(shr(abs_(n), 1), k(0x3FF)), sar(n, 15)), k(0x7FF));
    return sel(eq(special, k(NOT_SPECIAL)), or_(shl(field, 5), and_(efield, k(31))), special);
}

/* an hf lane: magnitude (11 bits) and exponent; field 31 is an ordinary binade (qfloat.py:_dec_hf) */
INLINE V hf_mag(V x) { return or_(and_(x, k(0x3FF)), and_(ne0(and_(x, k(0x7C00))), k(0x400))); }
INLINE V hf_e(V x) { return sub(max_(and_(shr(x, 10), k(31)), k(1)), k(15)); }
INLINE V hf_neg(V x) { return sar(x, 15); }                            /* mask of the sign bit */
INLINE V signed_mag(V x) { const V m = hf_mag(x); return sel(hf_neg(x), sub(k(0), m), m); }
/* a qf16 lane: odd significand k and exponent (qfloat.py:_dec_qf16) */
INLINE V qf16_k(V x) { return or_(sar(x, 4), k(1)); }
INLINE V qf16_e(V x) { return sub(and_(x, k(31)), k(15)); }

/* qfloat.py:_add for qf16: the exact sum of ka 2**(ea-10) and kb 2**(eb-10), rounded. The larger
 * operand shifted by da+1 stays below 2**12 (da <= 11 - its bit length); a smaller one shifted
 * right by 15 or more is its sign, as by 30 in the scalar face. */
INLINE V add16(V ka, V ea, V kb, V eb)
{
    const V a_big = lt(eb, ea);
    const V kB = sel(a_big, ka, kb), eB = sel(a_big, ea, eb);
    const V kS = sel(a_big, kb, ka), eS = sel(a_big, eb, ea);
    const V exp_ab = max_(add(eB, sub(bitlen(abs_(kB)), k(11))), eS);
    const V db = sub(eS, exp_ab);
    const V s = max_(min_(sub(k(-1), db), k(15)), k(0));
    const V is0 = eq(db, k(0));
    const V aligned = sarv(kS, s);
    const V st = sel(is0, k(0), bit(ne0(sub(kS, shlv(aligned, s)))));       /* bits shifted out */
    const V lo = sel(is0, shl(kS, 1), aligned);
    return r16(exp_ab, add(shlv(kB, add(sub(eB, exp_ab), k(1))), lo), st);
}

static V vq_vmpy_qf16_hf(V a, V b)
{
    const V sign = and_(hf_neg(xor_(a, b)), k(0xFFE0));
    const V e = add(hf_e(a), hf_e(b));
    const V ma = hf_mag(a), mb = hf_mag(b);
    /* the 22-bit products of the magnitudes, even lanes and odd lanes in 32-bit words */
    const V pe = mulw(and_(ma, kw(0xFFFF)), mb);
    const V po = mulw(shrw(ma, 16), shrw(mb, 16));
    /* H = p >> 9 and the sticky bit (p & 511) != 0, back in 16-bit lanes */
    const V H = or_(shlw(sarw(po, 9), 16), and_(sarw(pe, 9), kw(0xFFFF)));
    const V st = bit(ne0(and_(or_(shlw(po, 16), and_(pe, kw(0xFFFF))), k(511))));
    return xor_(r16(e, H, st), sign);
}

static V vq_vadd_qf16(V a, V b) { return add16(qf16_k(a), qf16_e(a), qf16_k(b), qf16_e(b)); }

static V vq_vadd_qf16_mix(V a, V b) { return add16(qf16_k(a), qf16_e(a), signed_mag(b), hf_e(b)); }

/* add_hf: both negative -> negate(round(|a|+|b|)), otherwise round(a+b) */
static V vq_vadd_hf(V a, V b)
{
    const V both = and_(hf_neg(a), hf_neg(b));
    const V r = add16(sel(both, hf_mag(a), signed_mag(a)), hf_e(a), sel(both, hf_mag(b), signed_mag(b)), hf_e(b));
    return xor_(r, and_(both, k(0xFFE0)));
}

/* max_hf / min_hf: sign-magnitude keys compared in 32-bit halves (keys span +-32767); a pair of
 * zeros as the reference does: max keeps a when a is +0, min keeps b then */
INLINE V key(V x) { const V m = and_(x, k(0x7FFF)); return sel(hf_neg(x), sub(k(0), m), m); }
INLINE V key_lt(V a, V b)  /* mask: key(a) < key(b) */
{
    const V ka = key(a), kb = key(b);
    /* keys are 16-bit two's complement; compare them as 32-bit values, even and odd lanes */
    const V le = subw(sarw(shlw(ka, 16), 16), sarw(shlw(kb, 16), 16));
    const V lo = subw(sarw(ka, 16), sarw(kb, 16));
    return or_(and_(sarw(le, 31), kw(0xFFFF)), and_(sarw(lo, 31), kw((int)0xFFFF0000)));
}
INLINE V both_zero(V a, V b) { return not_(ne0(and_(or_(a, b), k(0x7FFF)))); }
static V vq_vmax_hf(V a, V b)
{
    return sel(both_zero(a, b), sel(eq(a, k(0)), a, b), sel(key_lt(a, b), b, a));
}
static V vq_vmin_hf(V a, V b)
{
    return sel(both_zero(a, b), sel(eq(a, k(0)), b, a), sel(key_lt(b, a), b, a));
}

/* ------------------------------------------------------------------------------ the IEEE twin (half)
 * ieee_twin.py's round to nearest even on 16-bit lanes, as qfloat above. A special result (NaN,
 * infinity, and for products a zero) is folded early into one vector, NOT_SPECIAL elsewhere; the
 * sign of the other lanes rides in a mask. */

/* (M + e) * 2**E rounded to the nearest half, ties to even, without its sign: 0 <= M < 2**15, e = 0,
 * or a little more than 0 when sticky (then M carries at least two guard bits: s >= 2 below).
 * ieee_twin.py:round_to: Q = max(b - 11 + E, -24), s = Q - E; with s > 0 the remainder's bits,
 * shifted to the top of the lane, say below, at or above the tie; s >= 16 (clamped) rounds to 0,
 * M being below 2**15. */
INLINE V round16(V M, V E, V sticky)
{
    const V Q0 = max_(add(sub(bitlen(M), k(11)), E), k(-24));
    const V s = min_(sub(Q0, E), k(16));
    const V inexact = lt(k(0), s);                                             /* s > 0 */
    const V n0 = sel(inexact, sarv(M, min_(s, k(15))), shlv(M, max_(sub(k(0), s), k(0))));
    const V r2 = shlv(M, max_(sub(k(16), s), k(0)));                         /* s > 0: 16 - s < 16 */
    const V tie = eq(r2, k(0x8000));
    const V up = and_(inexact, or_(and_(sar(r2, 15), not_(tie)), and_(tie, or_(sticky, sub(k(0), bit(n0))))));
    V n = sub(n0, up);                                                       /* up is -1 where true */
    const V carry = eq(n, k(2048));
    n = sel(carry, k(1024), n);
    const V normal = not_(lt(n, k(1024)));
    const V field = and_(normal, add(sub(Q0, carry), k(25)));                 /* Q + p - 1 + bias */
    const V out = or_(shl(field, 10), sub(n, and_(normal, k(1024))));
    return sel(and_(normal, not_(lt(field, k(31)))), k(0x7C00), out);
}

/* the special result where there is one, else the rounded one with its sign (a mask) */
INLINE V finish16(V special, V sign, V rounded)
{
    return sel(eq(special, k(NOT_SPECIAL)), or_(rounded, and_(sign, k(0x8000))), special);
}

INLINE V hf_top(V x) { return eq(and_(x, k(0x7C00)), k(0x7C00)); }            /* inf or NaN */
INLINE V hf_nan(V x) { return and_(hf_top(x), ne0(and_(x, k(0x3FF)))); }
INLINE V hf_inf(V x) { return and_(hf_top(x), not_(ne0(and_(x, k(0x3FF))))); }
INLINE V hf_zero(V x) { return not_(ne0(and_(x, k(0x7FFF)))); }

/* A product of halves: the operands normalised (a subnormal's significand shifted up to 11 bits,
 * its exponent down), so that the 22-bit product p of the significands has its leading bit at 20
 * or 21 and H = p >> 9 (with the sticky p & 511) holds 12 or 13 bits: s >= 1. */
static V vi_vmpy_hf(V a, V b)
{
    const V sign = xor_(hf_neg(a), hf_neg(b));
    const V invalid = or_(or_(hf_nan(a), hf_nan(b)), or_(and_(hf_inf(a), hf_zero(b)), and_(hf_inf(b), hf_zero(a))));
    V special = sel(or_(hf_zero(a), hf_zero(b)), and_(sign, k(0x8000)), k(NOT_SPECIAL));
    special = sel(or_(hf_inf(a), hf_inf(b)), or_(k(0x7C00), and_(sign, k(0x8000))), special);
    special = sel(invalid, k(0x7E00), special);
    const V ua = sub(k(11), bitlen(hf_mag(a))), ub = sub(k(11), bitlen(hf_mag(b)));
    const V ma = shlv(hf_mag(a), min_(ua, k(11))), mb = shlv(hf_mag(b), min_(ub, k(11)));
    const V E = sub(sub(add(hf_e(a), hf_e(b)), add(ua, ub)), k(11));
    const V pe = mulw(and_(ma, kw(0xFFFF)), mb);
    const V po = mulw(shrw(ma, 16), shrw(mb, 16));
    const V H = or_(shlw(sarw(po, 9), 16), and_(sarw(pe, 9), kw(0xFFFF)));
    const V st = ne0(and_(or_(shlw(po, 16), and_(pe, kw(0xFFFF))), k(511)));
    return finish16(special, sign, round16(H, E, st));
}

/* A sum of halves: the significands with three guard bits (below 2**14), the smaller one aligned
 * to the larger one's exponent, the bits shifted out kept as sticky (ieee_twin.py:_add: 3 guard
 * bits and a sticky flag). A sum of opposite signs with sticky set is one unit less, sticky kept:
 * the exact magnitude lies just above it. The larger operand is normal when sticky is set (its
 * exponent is at least 4 above the smallest). */
static V vi_vadd_hf(V a, V b)
{
    const V sa = hf_neg(a), sb = hf_neg(b);
    const V invalid = or_(or_(hf_nan(a), hf_nan(b)), and_(and_(hf_inf(a), hf_inf(b)), xor_(sa, sb)));
    const V special = sel(invalid, k(0x7E00), sel(or_(hf_inf(a), hf_inf(b)),
                                                  or_(k(0x7C00), and_(sel(hf_inf(a), sa, sb), k(0x8000))),
                                                  k(NOT_SPECIAL)));
    const V both_neg = and_(sa, sb);
    const V a_big = not_(lt(hf_e(a), hf_e(b)));                               /* ea >= eb */
    const V eB = sel(a_big, hf_e(a), hf_e(b));
    const V d = min_(sub(eB, sel(a_big, hf_e(b), hf_e(a))), k(15));
    const V mS = shl(sel(a_big, hf_mag(b), hf_mag(a)), 3);
    const V aligned = sarv(mS, d);
    const V sticky = ne0(sub(mS, shlv(aligned, d)));
    const V opposite = xor_(sa, sb);
    const V mB = shl(sel(a_big, hf_mag(a), hf_mag(b)), 3);
    const V M = sel(opposite, sub(sub(mB, aligned), bit(sticky)), add(mB, aligned));
    V sign = xor_(sel(a_big, sa, sb), sar(M, 15));                            /* M < 0: the smaller one won */
    const V Ma = abs_(M);
    sign = sel(and_(eq(Ma, k(0)), not_(sticky)), both_neg, sign);              /* exact zero */
    return finish16(special, sign, round16(Ma, sub(eB, k(13)), sticky));
}

/* ------------------------------------------------------------------------------ entry points
 * What a stub calls for an instruction of these forms: qfv_<name> computes qfloat, qiv_<name> the
 * IEEE twin, for which a qf16 lane is a half and every form below is a half product or sum (max
 * and min are the same in both). The stub calls the one hvx_model.c's __qfm_arith selects, saving
 * around it only the registers that one writes. */

V qfv_vmpy_qf16_hf(V a, V b) { return vq_vmpy_qf16_hf(a, b); }
V qfv_vadd_qf16(V a, V b) { return vq_vadd_qf16(a, b); }
V qfv_vadd_qf16_mix(V a, V b) { return vq_vadd_qf16_mix(a, b); }
V qfv_vadd_hf(V a, V b) { return vq_vadd_hf(a, b); }
V qfv_vmax_hf(V a, V b) { return vq_vmax_hf(a, b); }
V qfv_vmin_hf(V a, V b) { return vq_vmin_hf(a, b); }

V qiv_vmpy_qf16_hf(V a, V b) { return vi_vmpy_hf(a, b); }
V qiv_vadd_qf16(V a, V b) { return vi_vadd_hf(a, b); }
V qiv_vadd_qf16_mix(V a, V b) { return vi_vadd_hf(a, b); }
V qiv_vadd_hf(V a, V b) { return vi_vadd_hf(a, b); }
V qiv_vmax_hf(V a, V b) { return vq_vmax_hf(a, b); }
V qiv_vmin_hf(V a, V b) { return vq_vmin_hf(a, b); }
