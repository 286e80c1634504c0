/*
 * The IEEE twin of the HVX floating-point model, for the Hexagon guest: the C face of
 * suite/targets/ieee_twin.py, the same integer algorithm bit for bit (that file has the
 * semantics and the derivation of round-to-nearest-even from IEEE 754-2019).
 *
 * Every HVX floating-point instruction forms its exact result and rounds it once, ties to even,
 * to the IEEE format of its width: a qf16 lane holds an IEEE half, a qf32 lane an IEEE single.
 * vmax/vmin round nothing and are the qfloat model's selections (qf_vmax_hf ... in
 * qfloat_model.c). Freestanding and integer-only, like the qfloat model (same flags); hvx_model.c
 * calls the ieee_* functions below when the harness asks for the twin.
 */

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

#define INLINE static inline __attribute__((always_inline))

/* precision, exponent of the smallest subnormal's last place, bias (= emax), width, the NaN */
typedef struct {
    int p, qmin, bias, bits;
    u32 nan;
} Fmt;

static const Fmt HALF = {11, -24, 15, 16, 0x7E00u};
static const Fmt SINGLE = {24, -149, 127, 32, 0x7FC00000u};
#define EXACT_ALIGN 38 /* 24 + 38 = 62 bits: the aligned sum of two singles kept whole */

INLINE int bitlen64(u64 a) { return a ? 64 - __builtin_clzll(a) : 0; }

typedef struct {
    u32 sign;
    u64 m;
    int e;
    u32 inf, nan;
} Val;

INLINE Val decode(u32 x, const Fmt *f)
{
    Val v;
    const int frac_bits = f->p - 1;
    const u32 top = (1u << (f->bits - f->p)) - 1;
    const u32 field = (x >> frac_bits) & top;
    const u32 frac = x & ((1u << frac_bits) - 1);
    v.sign = (x >> (f->bits - 1)) & 1;
    v.m = field ? (frac | (1u << frac_bits)) : frac;
    v.e = (int)(field ? field : 1) + f->qmin - 1;
    v.inf = field == top && frac == 0;
    v.nan = field == top && frac != 0;
    return v;
}

/* (-1)**sign * m * 2**e (m < 2**62; sticky: a little above m units), rounded to nearest even */
INLINE u32 round_to(u32 sign, u64 m, int e, u32 sticky, const Fmt *f)
{
    const int p = f->p;
    int q = bitlen64(m) - p + e;
    if (q < f->qmin)
        q = f->qmin;
    const int s = q - e;
    u64 n;
    if (s <= 0)
        n = m << -s;
    else if (s >= 63)
        n = 0;
    else {
        const u64 r = m & ((1ull << s) - 1), half = 1ull << (s - 1);
        n = m >> s;
        if (r > half || (r == half && (sticky || (n & 1))))
            n++;
    }
    if (n == (1ull << p)) {
        n >>= 1;
        q++;
    }
    const u32 top = (1u << (f->bits - p)) - 1;
    u32 out;
    if (n >= (1ull << (p - 1))) {
        const int field = q + p - 1 + f->bias; /* all ones or more: above emax, infinity */
        out = field >= (int)top ? top << (p - 1) : ((u32)field << (p - 1)) | (u32)(n - (1ull << (p - 1)));
    } else
        out = (u32)n;
    return (sign << (f->bits - 1)) | out;
}

INLINE u32 infinity(u32 sign, const Fmt *f)
{
    return (sign << (f->bits - 1)) | (((1u << (f->bits - f->p)) - 1) << (f->p - 1));
}

INLINE u32 mul(u32 a, u32 b, const Fmt *in, const Fmt *out)
{
    const Val x = decode(a, in), y = decode(b, in);
    const u32 sign = x.sign ^ y.sign;
    if (x.nan || y.nan || (x.inf && y.m == 0) || (y.inf && x.m == 0))
        return out->nan;
    if (x.inf || y.inf)
        return infinity(sign, out);
    return round_to(sign, x.m * y.m, x.e + y.e, 0, out);
}

INLINE u32 add(u32 a, u32 b, const Fmt *f, u32 negate_b)
{
    Val x = decode(a, f), y = decode(b, f);
    y.sign ^= negate_b;
    if (x.nan || y.nan || (x.inf && y.inf && x.sign != y.sign))
        return f->nan;
    if (x.inf || y.inf)
        return infinity(x.inf ? x.sign : y.sign, f);
    const Val big = x.e >= y.e ? x : y, small = x.e >= y.e ? y : x;
    const int d = big.e - small.e;
    u32 sign, sticky = 0;
    u64 m;
    int e;
    if (d <= EXACT_ALIGN) { /* the exact sum, in units of the smaller exponent */
        const i64 whole = (big.sign ? -(i64)(big.m << d) : (i64)(big.m << d))
                          + (small.sign ? -(i64)small.m : (i64)small.m);
        sign = whole < 0;
        m = (u64)(whole < 0 ? -whole : whole);
        e = small.e;
    } else { /* three guard bits and a sticky flag (ieee_twin.py: _add) */
        sticky = small.m != 0;
        m = (big.m << 3) - (big.sign == small.sign || small.m == 0 ? 0 : 1);
        e = big.e - 3;
        sign = big.sign;
    }
    if (m == 0 && !sticky)
        sign = x.sign & y.sign; /* exact zero: +0 unless both operands are negative */
    return round_to(sign, m, e, sticky, f);
}

INLINE u32 narrow(u32 a) /* single -> half */
{
    const Val x = decode(a, &SINGLE);
    if (x.nan)
        return HALF.nan;
    if (x.inf)
        return infinity(x.sign, &HALF);
    return round_to(x.sign, x.m, x.e, 0, &HALF);
}

/* ------------------------------------------------------------------------------ vector entry points
 * Same names, operands and register layouts as qfloat_model.c's qf_* functions. */
#define H16(NAME, EXPR)                                                                        \
    void ieee_##NAME(const u16 *u, const u16 *v, u16 *d)                                      \
    {                                                                                         \
        for (int i = 0; i < 64; i++) {                                                        \
            const u32 a = u[i], b = v[i];                                                     \
            d[i] = (u16)(EXPR);                                                               \
        }                                                                                     \
    }
#define S32(NAME, EXPR)                                                                        \
    void ieee_##NAME(const u32 *u, const u32 *v, u32 *d)                                      \
    {                                                                                         \
        for (int i = 0; i < 32; i++) {                                                        \
            const u32 a = u[i], b = v[i];                                                     \
            d[i] = (EXPR);                                                                    \
        }                                                                                     \
    }
/* widening: Vdd.v[0].w[i] from 16-bit lanes 2i, Vdd.v[1].w[i] from lanes 2i+1 */
#define W32(NAME)                                                                              \
    void ieee_##NAME(const u16 *u, const u16 *v, u32 *d)                                      \
    {                                                                                         \
        for (int i = 0; i < 32; i++) {                                                        \
            d[i] = mul(u[2 * i], v[2 * i], &HALF, &SINGLE);                                   \
            d[32 + i] = mul(u[2 * i + 1], v[2 * i + 1], &HALF, &SINGLE);                      \
        }                                                                                     \
    }

H16(vmpy_qf16_hf, mul(a, b, &HALF, &HALF))
H16(vmpy_qf16_mix_hf, mul(a, b, &HALF, &HALF))
H16(vmpy_qf16, mul(a, b, &HALF, &HALF))
W32(vmpy_qf32_hf)
W32(vmpy_qf32_mix_hf)
W32(vmpy_qf32_qf16)
S32(vmpy_qf32, mul(a, b, &SINGLE, &SINGLE))
S32(vmpy_qf32_sf, mul(a, b, &SINGLE, &SINGLE))
H16(vadd_hf, add(a, b, &HALF, 0))
H16(vadd_qf16_mix, add(a, b, &HALF, 0))
H16(vadd_qf16, add(a, b, &HALF, 0))
H16(vsub_hf, add(a, b, &HALF, 1))
H16(vsub_qf16_mix, add(a, b, &HALF, 1))
H16(vsub_qf16, add(a, b, &HALF, 1))
S32(vadd_sf, add(a, b, &SINGLE, 0))
S32(vadd_qf32_mix, add(a, b, &SINGLE, 0))
S32(vadd_qf32, add(a, b, &SINGLE, 0))
S32(vsub_sf, add(a, b, &SINGLE, 1))
S32(vsub_qf32_mix, add(a, b, &SINGLE, 1))
S32(vsub_qf32, add(a, b, &SINGLE, 1))

void ieee_vconv_hf_qf16(const u16 *u, const u16 *unused, u16 *d)
{
    (void)unused;
    for (int i = 0; i < 64; i++)
        d[i] = u[i];
}
void ieee_vconv_sf_qf32(const u32 *u, const u32 *unused, u32 *d)
{
    (void)unused;
    for (int i = 0; i < 32; i++)
        d[i] = u[i];
}
/* Vd.hf = Vuu.qf32: d.hf[2i] from v[0].w[i], d.hf[2i+1] from v[1].w[i] */
void ieee_vconv_hf_qf32(const u32 *u, const u32 *unused, u16 *d)
{
    (void)unused;
    for (int i = 0; i < 32; i++) {
        d[2 * i] = (u16)narrow(u[i]);
        d[2 * i + 1] = (u16)narrow(u[32 + i]);
    }
}
