/*
 * HVX qfloat arithmetic (Hexagon v68-v75) for the Hexagon guest: the C face of
 * suite/targets/qfloat.py, bit for bit the same integer algorithm (see that file for the formats,
 * the rounding rule and the sources: Qualcomm's target/hexagon/mmvec/mmvec_qfloat.c in quic/qemu
 * and the HVX Programmer's Reference Manual; no code was copied from either).
 *
 * Freestanding: no libc, no floating point, no division, no HVX (the rewriter in hvx_rewrite.py
 * stores vector registers to memory and calls qfm_*, which hvx_model.c sends to the qf_* functions
 * below, or to the IEEE twin's in ieee_model.c). Compile with
 *   clang --target=hexagon-unknown-linux-musl -mcpu=hexagonv68 -O2 -ffreestanding -fno-builtin
 *         -nostdlib -G0 -mllvm -disable-hexagon-hwloops -c qfloat_model.c
 * (hvx_toolchain.model_object() compiles the three files so and links them into one object)
 * (-G0: no GP-relative data; no hardware loops, so SA0/LC0/SA1/LC1 of the caller survive a call;
 * hvx_toolchain.model_object() checks the object's disassembly for both).
 *
 * Every qf_* function takes pointers to 128-byte vectors: u, v (sources) and d (destination).
 * A "pair" (Vdd / Vuu) is 256 bytes: register v[0] then v[1].
 */

typedef signed short i16;
typedef unsigned short u16;
typedef signed int i32;
typedef unsigned int u32;
typedef signed long long i64;
typedef unsigned long long u64;

#define INLINE static inline __attribute__((always_inline))

INLINE int bitlen32(u32 a) { return a ? 32 - __builtin_clz(a) : 0; }

/* ------------------------------------------------------------------------------ rounding
 * The exact value is sig * 2**exp with H = floor(sig * 2**(f+1)) and st = "not an integer".
 * qfloat.py:_round has the derivation from [QEMU-QF] rnd_sat_qf_sig. */
INLINE u32 qf_round(int exp, i32 H, u32 st, const int f, const int emin, const int emax,
                    const int bias, const int ebits)
{
    const i32 lim = 1 << (f + 2);
    const u32 fmask = (1u << (f + 1)) - 1;
    const u32 sign = H < 0;
    const u32 zero = (H == 0) & (st == 0);
    const int pov = (H >= lim) | (H < -lim);
    u32 field;
    int ef;
    if (exp > emax || (pov && exp == emax)) {            /* saturate */
        field = sign ? (1u << f) : (1u << f) - 1;
        ef = emax + bias;
    } else if (exp <= emin - 2) {                        /* smallest magnitude */
        field = sign ? fmask : 0;
        ef = emin + bias;
    } else {
        const int halve = (exp == emin - 1) | pov;       /* here pov implies exp < emax */
        const int odd_only = halve | (exp == emax);
        int adj = halve;
        if (halve) {
            st |= (u32)H & 1;
            H >>= 1;
        }
        const i32 r = H & 7, q = H >> 3;
        i32 n;
        if (odd_only)
            n = 4 * q + ((r < 4 || (r == 4 && !st)) ? 1 : 3);
        else if (r < 3 || (r == 3 && !st))
            n = 4 * q + 1;
        else if (r < 5 || (r == 5 && !st)) {
            n = 2 * q + 1;
            adj = 1;
        } else
            n = 4 * q + 3;
        const u32 j = ((u32)(n < 0 ? -n : n) >> 1) & ((1u << f) - 1);
        field = (sign ? ~j : j) & fmask;
        ef = exp + bias + adj;
    }
    if (zero)
        ef = 0;
    return (field << ebits) | ((u32)ef & ((1u << ebits) - 1));
}

#define R16(e, H, st) qf_round((e), (H), (st), 10, -15, 16, 15, 5)
#define R32(e, H, st) qf_round((e), (H), (st), 23, -127, 128, 127, 8)

/* ------------------------------------------------------------------------------ decoding */
INLINE i32 qf16_k(u32 x) { return ((i32)(i16)(u16)x >> 4) | 1; }
INLINE int qf16_e(u32 x) { return (int)(x & 31) - 15; }
INLINE i32 qf32_k(u32 x) { return ((i32)x >> 7) | 1; }
INLINE int qf32_e(u32 x) { return (int)(x & 255) - 127; }
INLINE i32 hf_mag(u32 x) { u32 fl = (x >> 10) & 31; return (i32)((x & 0x3FF) | (fl ? 0x400u : 0)); }
INLINE int hf_e(u32 x) { int fl = (x >> 10) & 31; return fl ? fl - 15 : -14; }
INLINE u32 hf_neg(u32 x) { return (x >> 15) & 1; }
INLINE i32 sf_mag(u32 x) { u32 fl = (x >> 23) & 255; return (i32)((x & 0x7FFFFF) | (fl ? 0x800000u : 0)); }
INLINE int sf_e(u32 x) { int fl = (x >> 23) & 255; return fl ? fl - 127 : -126; }
INLINE u32 sf_neg(u32 x) { return x >> 31; }

/* ------------------------------------------------------------------------------ exact sums
 * qfloat.py:_add. exp_ab: the operand with the larger exponent (the second on a tie), normalised
 * by ilogb of its significand, not below the other exponent. */
#define ADD_CORE(NAME, F, RND)                                                                  \
    INLINE u32 NAME(i32 ka, int ea, i32 kb, int eb)                                            \
    {                                                                                         \
        i32 kB, kS;                                                                           \
        int eB, eS;                                                                           \
        if (ea > eb) { kB = ka; eB = ea; kS = kb; eS = eb; }                                  \
        else { kB = kb; eB = eb; kS = ka; eS = ea; }                                          \
        const int ilog = kB ? bitlen32((u32)(kB < 0 ? -kB : kB)) - 1 - (F) : -((F) + 1);      \
        int exp_ab = eB + ilog;                                                               \
        if (exp_ab < eS)                                                                      \
            exp_ab = eS;                                                                      \
        const int da = eB - exp_ab, db = eS - exp_ab;                                         \
        i32 H = (i32)((u32)kB << (da + 1));                                                   \
        u32 st = 0;                                                                           \
        if (db == 0)                                                                          \
            H += 2 * kS;                                                                      \
        else {                                                                                \
            int s = -db - 1;                                                                  \
            if (s > 30)                                                                       \
                s = 30;                                                                       \
            H += kS >> s;                                                                     \
            st = ((u32)kS & ((1u << s) - 1)) != 0;                                            \
        }                                                                                     \
        return RND(exp_ab, H, st);                                                            \
    }
ADD_CORE(add16, 10, R16)
ADD_CORE(add32, 23, R32)

/* ------------------------------------------------------------------------------ lane operations */
INLINE u32 l_vmpy_qf16_hf(u32 a, u32 b)
{
    const i32 p = hf_mag(a) * hf_mag(b);
    const u32 r = R16(hf_e(a) + hf_e(b), p >> 9, (p & 511) != 0);
    return ((a ^ b) & 0x8000) ? r ^ 0xFFE0 : r;
}
INLINE u32 l_vmpy_qf16_mix_hf(u32 a, u32 b)
{
    const i32 p = qf16_k(a) * hf_mag(b);
    const u32 r = R16(qf16_e(a) + hf_e(b), p >> 9, (p & 511) != 0);
    return hf_neg(b) ? r ^ 0xFFE0 : r;
}
INLINE u32 l_vmpy_qf16(u32 a, u32 b)
{
    const i32 p = qf16_k(a) * qf16_k(b);
    return R16(qf16_e(a) + qf16_e(b), p >> 9, (p & 511) != 0);
}
INLINE u32 l_vmpy_qf32_hf(u32 a, u32 b)
{
    const u32 r = R32(hf_e(a) + hf_e(b), (hf_mag(a) * hf_mag(b)) << 4, 0);
    return ((a ^ b) & 0x8000) ? r ^ 0xFFFFFF00u : r;
}
INLINE u32 l_vmpy_qf32_mix_hf(u32 a, u32 b)
{
    const u32 r = R32(qf16_e(a) + hf_e(b), (i32)((u32)(qf16_k(a) * hf_mag(b)) << 4), 0);
    return hf_neg(b) ? r ^ 0xFFFFFF00u : r;
}
INLINE u32 l_vmpy_qf32_qf16(u32 a, u32 b)
{
    return R32(qf16_e(a) + qf16_e(b), (i32)((u32)(qf16_k(a) * qf16_k(b)) << 4), 0);
}
INLINE u32 l_vmpy_qf32(u32 a, u32 b)
{
    const i64 p = (i64)qf32_k(a) * qf32_k(b);
    return R32(qf32_e(a) + qf32_e(b), (i32)(p >> 22), (p & ((1 << 22) - 1)) != 0);
}
INLINE u32 l_vmpy_qf32_sf(u32 a, u32 b)
{
    const i64 p = (i64)sf_mag(a) * sf_mag(b);
    const u32 r = R32(sf_e(a) + sf_e(b), (i32)(p >> 22), (p & ((1 << 22) - 1)) != 0);
    return ((a ^ b) >> 31) ? r ^ 0xFFFFFF00u : r;
}

INLINE u32 l_vadd_qf16(u32 a, u32 b) { return add16(qf16_k(a), qf16_e(a), qf16_k(b), qf16_e(b)); }
INLINE u32 l_vsub_qf16(u32 a, u32 b) { return add16(qf16_k(a), qf16_e(a), -qf16_k(b), qf16_e(b)); }
INLINE u32 l_vadd_qf16_mix(u32 a, u32 b)
{
    const i32 m = hf_mag(b);
    return add16(qf16_k(a), qf16_e(a), hf_neg(b) ? -m : m, hf_e(b));
}
INLINE u32 l_vsub_qf16_mix(u32 a, u32 b)
{
    const i32 m = hf_mag(b);
    return add16(qf16_k(a), qf16_e(a), hf_neg(b) ? m : -m, hf_e(b));
}
/* add_hf: both negative -> negate(round(|a|+|b|)), otherwise round(a+b); sub_hf = add_hf(a, -b) */
INLINE u32 l_vadd_hf(u32 a, u32 b)
{
    const u32 na = hf_neg(a), nb = hf_neg(b), both = na & nb;
    const i32 ma = hf_mag(a), mb = hf_mag(b);
    const u32 r = add16((na & !both) ? -ma : ma, hf_e(a), (nb & !both) ? -mb : mb, hf_e(b));
    return both ? r ^ 0xFFE0 : r;
}
INLINE u32 l_vsub_hf(u32 a, u32 b) { return l_vadd_hf(a, b ^ 0x8000); }
INLINE u32 l_vadd_qf32(u32 a, u32 b) { return add32(qf32_k(a), qf32_e(a), qf32_k(b), qf32_e(b)); }
INLINE u32 l_vsub_qf32(u32 a, u32 b) { return add32(qf32_k(a), qf32_e(a), -qf32_k(b), qf32_e(b)); }
INLINE u32 l_vadd_qf32_mix(u32 a, u32 b)
{
    const i32 m = sf_mag(b);
    return add32(qf32_k(a), qf32_e(a), sf_neg(b) ? -m : m, sf_e(b));
}
INLINE u32 l_vsub_qf32_mix(u32 a, u32 b)
{
    const i32 m = sf_mag(b);
    return add32(qf32_k(a), qf32_e(a), sf_neg(b) ? m : -m, sf_e(b));
}
INLINE u32 l_vadd_sf(u32 a, u32 b)
{
    const u32 na = sf_neg(a), nb = sf_neg(b), both = na & nb;
    const i32 ma = sf_mag(a), mb = sf_mag(b);
    const u32 r = add32((na & !both) ? -ma : ma, sf_e(a), (nb & !both) ? -mb : mb, sf_e(b));
    return both ? r ^ 0xFFFFFF00u : r;
}
INLINE u32 l_vsub_sf(u32 a, u32 b) { return l_vadd_sf(a, b ^ 0x80000000u); }

/* qfloat -> IEEE ([QEMU-QF] get_ieee_sig + rnd_sat_hf / rnd_sat_sf), value k * 2**p, k odd */
INLINE u32 to_ieee(i32 k, int p, const int half)
{
    const int emin = half ? -14 : -126, frac_bits = half ? 42 : 29, mbits = half ? 10 : 23;
    const int bias = half ? 15 : 127, emax = half ? 16 : 128;
    const u64 top = half ? (0x7FFull << 42) : (0xFFFFFFull << 29);
    const u32 sign = k < 0;
    const u32 a = sign ? (u32)-k : (u32)k;
    const int bl = bitlen32(a);
    int exp_d = bl - 1 + p;
    const u64 m53 = (u64)a << (53 - bl);
    const int shift = emin - exp_d;
    u64 sig53 = m53;
    if (exp_d <= emin - 1)
        sig53 = shift >= 53 ? 0 : m53 >> shift;
    const u64 signif = sig53 >> frac_bits;
    const u64 frac = sig53 & ((1ull << frac_bits) - 1);
    const u64 halfway = 1ull << (frac_bits - 1);
    const u32 mmask = (1u << mbits) - 1;
    u32 mant = (u32)signif & mmask;
    if (exp_d > emax || (exp_d == emax && m53 >= top))
        mant = mmask;
    else if (((signif & 1) == 0 && frac > halfway) || ((signif & 1) && frac >= halfway)) {
        if (mant == mmask) {
            mant = 0;
            exp_d++;
        } else
            mant++;
    }
    int ef = exp_d + bias;
    if (half) {
        if (exp_d > 16)
            return (sign << 15) | 0x7FFF;
        ef = ef < 0 ? 0 : ef > 31 ? 31 : ef;
        return (sign << 15) | ((u32)ef << 10) | mant;
    }
    ef = ef < 0 ? 0 : ef > 255 ? 255 : ef;
    return (sign << 31) | ((u32)ef << 23) | mant;
}
INLINE u32 l_vconv_hf_qf16(u32 a) { return to_ieee(qf16_k(a), qf16_e(a) - 10, 1); }
INLINE u32 l_vconv_hf_qf32(u32 a) { return to_ieee(qf32_k(a), qf32_e(a) - 23, 1); }
INLINE u32 l_vconv_sf_qf32(u32 a) { return to_ieee(qf32_k(a), qf32_e(a) - 23, 0); }

/* vmax/vmin ([QEMU-QF] max_hf/min_hf/max_sf/min_sf) */
INLINE i32 key16(u32 x) { i32 m = x & 0x7FFF; return (x & 0x8000) ? -m : m; }
INLINE i32 key32(u32 x) { i32 m = x & 0x7FFFFFFF; return (x >> 31) ? -m : m; }
INLINE u32 l_vmax_hf(u32 a, u32 b)
{
    if (((a | b) & 0x7FFF) == 0)
        return a == 0 ? a : b;
    return key16(b) > key16(a) ? b : a;
}
INLINE u32 l_vmin_hf(u32 a, u32 b)
{
    if (((a | b) & 0x7FFF) == 0)
        return a == 0 ? b : a;
    return key16(a) > key16(b) ? b : a;
}
INLINE u32 l_vmax_sf(u32 a, u32 b)
{
    if (((a | b) & 0x7FFFFFFF) == 0)
        return a == 0 ? a : b;
    return key32(b) > key32(a) ? b : a;
}
INLINE u32 l_vmin_sf(u32 a, u32 b)
{
    if (((a | b) & 0x7FFFFFFF) == 0)
        return a == 0 ? b : a;
    return key32(a) > key32(b) ? b : a;
}

/* ------------------------------------------------------------------------------ vector entry points
 * 128-byte vectors: 64 lanes of 16 bits or 32 lanes of 32 bits. */
#define V16(NAME)                                                                              \
    void qf_##NAME(const u16 *u, const u16 *v, u16 *d)                                        \
    {                                                                                          \
        for (int i = 0; i < 64; i++)                                                           \
            d[i] = (u16)l_##NAME(u[i], v[i]);                                                  \
    }
#define V32(NAME)                                                                              \
    void qf_##NAME(const u32 *u, const u32 *v, u32 *d)                                        \
    {                                                                                          \
        for (int i = 0; i < 32; i++)                                                           \
            d[i] = l_##NAME(u[i], v[i]);                                                       \
    }
/* widening: Vdd.v[0].w[i] from 16-bit lanes 2i, Vdd.v[1].w[i] from lanes 2i+1 ([HVX-PRM]) */
#define VW(NAME)                                                                               \
    void qf_##NAME(const u16 *u, const u16 *v, u32 *d)                                        \
    {                                                                                          \
        for (int i = 0; i < 32; i++) {                                                         \
            d[i] = l_##NAME(u[2 * i], v[2 * i]);                                               \
            d[32 + i] = l_##NAME(u[2 * i + 1], v[2 * i + 1]);                                  \
        }                                                                                      \
    }

V16(vmpy_qf16_hf)
V16(vmpy_qf16_mix_hf)
V16(vmpy_qf16)
VW(vmpy_qf32_hf)
VW(vmpy_qf32_mix_hf)
VW(vmpy_qf32_qf16)
V32(vmpy_qf32)
V32(vmpy_qf32_sf)
V16(vadd_hf)
V16(vadd_qf16_mix)
V16(vadd_qf16)
V16(vsub_hf)
V16(vsub_qf16_mix)
V16(vsub_qf16)
V32(vadd_sf)
V32(vadd_qf32_mix)
V32(vadd_qf32)
V32(vsub_sf)
V32(vsub_qf32_mix)
V32(vsub_qf32)
V16(vmax_hf)
V16(vmin_hf)
V32(vmax_sf)
V32(vmin_sf)

void qf_vconv_hf_qf16(const u16 *u, const u16 *unused, u16 *d)
{
    (void)unused;
    for (int i = 0; i < 64; i++)
        d[i] = (u16)l_vconv_hf_qf16(u[i]);
}
void qf_vconv_sf_qf32(const u32 *u, const u32 *unused, u32 *d)
{
    (void)unused;
    for (int i = 0; i < 32; i++)
        d[i] = l_vconv_sf_qf32(u[i]);
}
/* Vd.hf = Vuu.qf32: u is the pair (v[0] then v[1]); d.hf[2i] from v[0].w[i], d.hf[2i+1] from v[1] */
void qf_vconv_hf_qf32(const u32 *u, const u32 *unused, u16 *d)
{
    (void)unused;
    for (int i = 0; i < 32; i++) {
        d[2 * i] = (u16)l_vconv_hf_qf32(u[i]);
        d[2 * i + 1] = (u16)l_vconv_hf_qf32(u[32 + i]);
    }
}
