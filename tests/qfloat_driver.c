/*
 * Test driver for the HVX floating-point model (suite/targets/hvx_model.c with qfloat_model.c and
 * ieee_model.c) under qemu-hexagon (freestanding, no libc).
 *
 * stdin: records of  name[32] (NUL-padded qfm_* suffix, or "vec:" and a qfv_* suffix for the
 * vector model; "ieee:" before it runs the IEEE twin),
 * u32 nvec, then nvec*256 bytes of first
 * operands and nvec*256 bytes of second operands (each operand slot is 256 bytes so that register
 * pairs fit; single vectors use the first 128). A record with an empty name ends the input.
 * stdout: per record, nvec*256 bytes of results (slot layout as for the operands).
 * Errors: a line on stderr and exit status 1.
 */

typedef unsigned char u8;
typedef unsigned int u32;

static long sys3(long n, long a, long b, long c)
{
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    register long r6 __asm__("r6") = n;
    __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r6) : "memory");
    return r0;
}

static void out(int fd, const void *p, u32 n)
{
    const u8 *c = (const u8 *)p;
    while (n) {
        long k = sys3(64, fd, (long)c, n);
        if (k <= 0)
            return;
        c += k;
        n -= (u32)k;
    }
}

__attribute__((noreturn)) static void quit(int status)
{
    for (;;)
        sys3(94, status, 0, 0);
}

__attribute__((noreturn)) static void fail(const char *msg)
{
    u32 n = 0;
    while (msg[n])
        n++;
    out(2, msg, n);
    out(2, "\n", 1);
    quit(1);
}

static void in(void *p, u32 n)
{
    u8 *c = (u8 *)p;
    while (n) {
        long k = sys3(63, 0, (long)c, n);
        if (k <= 0)
            fail("qfloat_driver: short read");
        c += k;
        n -= (u32)k;
    }
}

typedef void (*op_fn)(const void *, const void *, void *);

#define OPS(X)                                                                                 \
    X(vmpy_qf16_hf) X(vmpy_qf16_mix_hf) X(vmpy_qf16) X(vmpy_qf32_hf) X(vmpy_qf32_mix_hf)        \
    X(vmpy_qf32_qf16) X(vmpy_qf32) X(vmpy_qf32_sf) X(vadd_hf) X(vadd_qf16_mix) X(vadd_qf16)     \
    X(vsub_hf) X(vsub_qf16_mix) X(vsub_qf16) X(vadd_sf) X(vadd_qf32_mix) X(vadd_qf32)           \
    X(vsub_sf) X(vsub_qf32_mix) X(vsub_qf32) X(vconv_hf_qf16) X(vconv_hf_qf32)                  \
    X(vconv_sf_qf32) X(vmax_hf) X(vmin_hf) X(vmax_sf) X(vmin_sf)

#define DECL(N) void qfm_##N(const void *, const void *, void *);
OPS(DECL)

/* The vector model (vector_model.c): qfv_<name>(a, b) (qfloat) and qiv_<name>(a, b) (the IEEE
 * twin), the sources and the result in vector registers; "vec:<name>" runs the one __qfm_arith
 * selects, as the rewritten kernel's stubs do. */
#define VECTOR_OPS(X) X(vmpy_qf16_hf) X(vadd_qf16) X(vadd_qf16_mix) X(vadd_hf) X(vmax_hf) X(vmin_hf)
typedef long V __attribute__((__vector_size__(128)));
extern unsigned int __qfm_arith; /* hvx_model.c: 0 qfloat, 1 the IEEE twin */
#define VDECL(N)                                                                               \
    V qfv_##N(V, V);                                                                           \
    V qiv_##N(V, V);                                                                           \
    static void vec_##N(const void *a, const void *b, void *d)                                 \
    {                                                                                          \
        const V x = *(const V *)a, y = *(const V *)b;                                          \
        *(V *)d = __qfm_arith ? qiv_##N(x, y) : qfv_##N(x, y);                                 \
    }
VECTOR_OPS(VDECL)

struct entry {
    const char *name;
    op_fn fn;
};
#define ENTRY(N) {#N, (op_fn)qfm_##N},
#define VENTRY(N) {"vec:" #N, vec_##N},
static const struct entry table[] = {OPS(ENTRY) VECTOR_OPS(VENTRY)};

#define MAXVEC 4096
static u8 bufa[MAXVEC * 256] __attribute__((aligned(128)));
static u8 bufb[MAXVEC * 256] __attribute__((aligned(128)));
static u8 bufd[MAXVEC * 256] __attribute__((aligned(128)));

static int same(const char *a, const char *b)
{
    for (int i = 0; i < 32; i++) {
        if (a[i] != b[i])
            return 0;
        if (!a[i])
            return 1;
    }
    return 1;
}

__attribute__((noreturn)) void _start(void)
{
    for (;;) {
        char name[32];
        u32 nvec;
        in(name, 32);
        if (!name[0])
            quit(0);
        in(&nvec, 4);
        if (nvec > MAXVEC)
            fail("qfloat_driver: too many vectors in one record");
        const int twin = name[0] == 'i' && name[1] == 'e' && name[2] == 'e' && name[3] == 'e' && name[4] == ':';
        __qfm_arith = twin;
        op_fn fn = 0;
        for (u32 i = 0; i < sizeof(table) / sizeof(table[0]); i++)
            if (same(table[i].name, name + (twin ? 5 : 0)))
                fn = table[i].fn;
        if (!fn)
            fail("qfloat_driver: unknown operation");
        in(bufa, nvec * 256);
        in(bufb, nvec * 256);
        for (u32 i = 0; i < nvec * 256 / 4; i++)   /* results that fill half a slot leave zeros */
            ((u32 *)bufd)[i] = 0;
        for (u32 i = 0; i < nvec; i++)
            fn(bufa + 256 * i, bufb + 256 * i, bufd + 256 * i);
        out(1, bufd, nvec * 256);
    }
}
