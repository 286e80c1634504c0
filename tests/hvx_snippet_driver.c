/*
 * Test driver for hand-written HVX assembly snippets (tests/test_hvx_rewrite.py): reads 32 input
 * vectors (4096 bytes) from stdin, calls  void snippet(const void *in, void *out)  and writes the
 * 64-vector output area (8192 bytes, zeroed before the call) to stdout. Freestanding, no libc.
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

static u8 in_area[32 * 128] __attribute__((aligned(128)));
static u8 out_area[64 * 128] __attribute__((aligned(128)));

void snippet(const void *in, void *out);

__attribute__((noreturn)) void _start(void)
{
    u32 got = 0;
    while (got < sizeof(in_area)) {
        long k = sys3(63, 0, (long)(in_area + got), sizeof(in_area) - got);
        if (k <= 0)
            for (;;)
                sys3(94, 2, 0, 0);
        got += (u32)k;
    }
    snippet(in_area, out_area);
    for (u32 sent = 0; sent < sizeof(out_area);) {
        long k = sys3(64, 1, (long)(out_area + sent), sizeof(out_area) - sent);
        if (k <= 0)
            break;
        sent += (u32)k;
    }
    for (;;)
        sys3(94, 0, 0, 0);
}
