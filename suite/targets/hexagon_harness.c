/*
 * Freestanding harness that runs one TVM-generated Hexagon object under qemu-hexagon.
 *
 * Built with   clang --target=hexagon-unknown-linux-musl -ffreestanding -nostdlib -fno-builtin
 * and linked   ld.lld -static -e _start kernel.o harness.o   (the kernel object first, so that the
 * fp16 conversions TVM emits in it win over the weak fallbacks here).
 *
 * It provides what the object needs from a runtime: the workspace allocator, a parallel launch that
 * runs the tasks one after another, the error reporter, fp16 conversions, integer division helpers,
 * memset/memcpy; and it talks to the suite through stdin/stdout (Linux syscalls via trap0(#1)).
 *
 * stdin  (little-endian int32 words):
 *   MAGIC_IN, VERSION, flags, nargs, then per argument: type_code, bits, ndim, shape[ndim], is_input;
 *   then the raw bytes of each input argument, in order.
 *   flags: FLAG_IEEE_TWIN runs the HVX floating-point model linked in (hvx_model.c) as its IEEE
 *   twin instead of qfloat; an ELF without the model refuses it. FLAG_FAST_TICKS drains the
 *   execution counters every 20 microseconds instead of every 20 ms (a test of their exactness).
 * stdout:
 *   MAGIC_OUT, status (0 = ok), elapsed guest nanoseconds of the call (int64, two words), the
 *   packets, instructions and HVX instructions the call executed (int64 each, two words; see
 *   "execution counters" below), then the raw bytes of each output argument, in order.
 * Errors are written to stderr as one line and end the program with a non-zero status.
 */

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int usize;

#define MAGIC_IN 0x48585654u  /* "TVXH" */
#define MAGIC_OUT 0x54585654u /* "TVXT" */
#define VERSION 3
#define FLAG_IEEE_TWIN 1u
#define FLAG_FAST_TICKS 2u
#define MAX_ARGS 16
#define MAX_DIMS 8
#define ARENA_BYTES (384u << 20)

/* ------------------------------------------------------------------ syscalls (asm-generic numbers) */

static long syscall4(long n, long a, long b, long c, long d) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  register long r6 __asm__("r6") = n;
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r6) : "memory");
  return r0;
}

static long syscall3(long n, long a, long b, long c) { return syscall4(n, a, b, c, 0); }

#define SYS_read 63
#define SYS_write 64
#define SYS_exit_group 94
#define SYS_clock_gettime 113

static void write_all(int fd, const void* data, usize n) {
  const u8* p = (const u8*)data;
  while (n > 0) {
    long done = syscall3(SYS_write, fd, (long)p, (long)n);
    if (done <= 0) return;
    p += done;
    n -= (usize)done;
  }
}

static usize cstrlen(const char* s) {
  usize n = 0;
  while (s && s[n]) n++;
  return n;
}

static void put_str(int fd, const char* s) { write_all(fd, s, cstrlen(s)); }

__attribute__((noreturn)) static void exit_now(int status) {
  for (;;) syscall3(SYS_exit_group, status, 0, 0);
}

__attribute__((noreturn)) static void fail(const char* what) {
  put_str(2, "hexagon harness: ");
  put_str(2, what);
  put_str(2, "\n");
  exit_now(3);
}

static int read_all(void* data, usize n) {
  u8* p = (u8*)data;
  while (n > 0) {
    long got = syscall3(SYS_read, 0, (long)p, (long)n);
    if (got <= 0) return -1;
    p += got;
    n -= (usize)got;
  }
  return 0;
}

static i64 now_ns(void) {
  struct { i32 sec; i32 nsec; } ts = {0, 0}; /* 32-bit time ABI of Hexagon Linux */
  syscall3(SYS_clock_gettime, 1 /* CLOCK_MONOTONIC */, (long)&ts, 0);
  return (i64)ts.sec * 1000000000LL + ts.nsec;
}

/* ------------------------------------------------------------------ memory */

void* memset(void* dst, int value, usize n) {
  u8* d = (u8*)dst;
  u32 word = (u8)value * 0x01010101u;
  while (n && ((usize)d & 3)) { *d++ = (u8)value; n--; }
  for (; n >= 4; n -= 4, d += 4) *(volatile u32*)d = word;
  while (n--) *d++ = (u8)value;
  return dst;
}

void* memcpy(void* dst, const void* src, usize n) {
  u8* d = (u8*)dst;
  const u8* s = (const u8*)src;
  if ((((usize)d | (usize)s) & 3) == 0)
    for (; n >= 4; n -= 4, d += 4, s += 4) *(volatile u32*)d = *(const u32*)s;
  while (n--) *(volatile u8*)d++ = *s++;
  return dst;
}

void* memmove(void* dst, const void* src, usize n) {
  u8* d = (u8*)dst;
  const u8* s = (const u8*)src;
  if (d <= s || d >= s + n) return memcpy(dst, src, n);
  while (n--) *(volatile u8*)(d + n) = s[n];
  return dst;
}

/* LLVM's Hexagon backend calls this for copies it knows are large and 8-byte multiples. */
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* dst, const void* src, usize n) {
  return memcpy(dst, src, n);
}

/* A stack allocator over a static arena (the .bss costs nothing until touched). Each block has a
 * header linking it to the block below; freeing marks it, and freed blocks on top are popped, which
 * gives the space back for TVM's workspaces (allocated and freed in LIFO order). */
static u8 arena[ARENA_BYTES] __attribute__((aligned(128)));
static usize arena_top;      /* first free byte */
static u8* arena_last;       /* the block on top, or 0 */

typedef struct {
  usize previous_top;        /* arena_top before this block */
  u8* previous_block;        /* the block below */
  u32 freed;
} BlockHeader;

static void* arena_alloc(u64 nbytes) {
  usize start = ((arena_top + 127u) & ~127u) + 128u; /* 128 bytes for the header, 128-aligned data */
  if (start > ARENA_BYTES || nbytes > (u64)(ARENA_BYTES - start)) return 0;
  BlockHeader* header = (BlockHeader*)(arena + start - sizeof(BlockHeader));
  header->previous_top = arena_top;
  header->previous_block = arena_last;
  header->freed = 0;
  arena_top = start + (usize)nbytes;
  arena_last = arena + start;
  return arena + start;
}

static void arena_free(void* ptr) {
  u8* p = (u8*)ptr;
  if (p < arena + 128 || p >= arena + ARENA_BYTES) return;
  ((BlockHeader*)(p - sizeof(BlockHeader)))->freed = 1;
  while (arena_last && ((BlockHeader*)(arena_last - sizeof(BlockHeader)))->freed) {
    BlockHeader* top = (BlockHeader*)(arena_last - sizeof(BlockHeader));
    arena_top = top->previous_top;
    arena_last = top->previous_block;
  }
}

/* ------------------------------------------------------------------ the TVM runtime the object calls */

void* TVMBackendAllocWorkspace(int device_type, int device_id, u64 nbytes, int code_hint, int bits_hint) {
  (void)device_type; (void)device_id; (void)code_hint; (void)bits_hint;
  void* ptr = arena_alloc(nbytes);
  if (!ptr) put_str(2, "hexagon harness: workspace allocation failed (arena exhausted)\n");
  return ptr;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  (void)device_type; (void)device_id;
  arena_free(ptr);
  return 0;
}

typedef struct {
  void* sync_handle;
  i32 num_task;
} TVMParallelGroupEnv;
typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/* One core: the tasks run one after another, in order. */
int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  TVMParallelGroupEnv env;
  int n = num_task > 0 ? num_task : 1;
  env.sync_handle = 0;
  env.num_task = n;
  for (int task = 0; task < n; ++task) {
    int status = flambda(task, &env, cdata);
    if (status != 0) return status;
  }
  return 0;
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  (void)task_id; (void)penv;
  return 0;
}

static int error_raised;

void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, i32 num_parts) {
  error_raised = 1;
  put_str(2, "hexagon harness: kernel raised ");
  put_str(2, kind ? kind : "Error");
  put_str(2, ": ");
  for (i32 i = 0; i < num_parts; ++i)
    if (parts[i]) put_str(2, parts[i]);
  put_str(2, "\n");
}

void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  const char* parts[1];
  parts[0] = message;
  TVMFFIErrorSetRaisedFromCStrParts(kind, parts, 1);
}

/* The object calls the runtime through function-pointer variables it defines (weak), which a
 * loader sets; declared weak here so that an object without them still links. */
extern void* __TVMBackendAllocWorkspace __attribute__((weak));
extern void* __TVMBackendFreeWorkspace __attribute__((weak));
extern void* __TVMBackendParallelLaunch __attribute__((weak));
extern void* __TVMBackendParallelBarrier __attribute__((weak));
extern void* __TVMFFIErrorSetRaisedFromCStr __attribute__((weak));
extern void* __TVMFFIErrorSetRaisedFromCStrParts __attribute__((weak));

static void bind_runtime(void) {
  if (&__TVMBackendAllocWorkspace) __TVMBackendAllocWorkspace = (void*)TVMBackendAllocWorkspace;
  if (&__TVMBackendFreeWorkspace) __TVMBackendFreeWorkspace = (void*)TVMBackendFreeWorkspace;
  if (&__TVMBackendParallelLaunch) __TVMBackendParallelLaunch = (void*)TVMBackendParallelLaunch;
  if (&__TVMBackendParallelBarrier) __TVMBackendParallelBarrier = (void*)TVMBackendParallelBarrier;
  if (&__TVMFFIErrorSetRaisedFromCStr) __TVMFFIErrorSetRaisedFromCStr = (void*)TVMFFIErrorSetRaisedFromCStr;
  if (&__TVMFFIErrorSetRaisedFromCStrParts)
    __TVMFFIErrorSetRaisedFromCStrParts = (void*)TVMFFIErrorSetRaisedFromCStrParts;
}

/* ------------------------------------------------------------------ fp16 (IEEE binary16), weak fallbacks */

__attribute__((weak)) float __extendhfsf2(u16 h) {
  u32 sign = (u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else { /* subnormal half: normalize */
    exp = 113;
    while (!(man & 0x400u)) { man <<= 1; exp--; }
    bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
  }
  union { u32 u; float f; } v;
  v.u = bits;
  return v.f;
}

__attribute__((weak)) u16 __truncsfhf2(float f) {
  union { float f; u32 u; } v;
  v.f = f;
  u32 x = v.u, sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) /* inf or nan */
    return (u16)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  if (absx >= 0x477ff000u) return (u16)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (absx >= 0x38800000u) { /* normal half */
    u32 mant = absx & 0x7fffffu, exp = (absx >> 23) - 112u;
    u32 half = (exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) half++;
    return (u16)(sign | half);
  }
  if (absx < 0x33000000u) return (u16)sign; /* below half the smallest subnormal */
  { /* subnormal half, round to nearest even */
    u32 exp = absx >> 23, mant = (absx & 0x7fffffu) | 0x800000u;
    u32 shift = 126u - exp; /* 14 .. 24 */
    u32 half = mant >> shift, rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rest > mid || (rest == mid && (half & 1u))) half++;
    return (u16)(sign | half);
  }
}

__attribute__((weak)) float __gnu_h2f_ieee(u16 h) { return __extendhfsf2(h); }
__attribute__((weak)) u16 __gnu_f2h_ieee(float f) { return __truncsfhf2(f); }

/* ------------------------------------------------------------------ integer division helpers */

static u64 udivmod64(u64 n, u64 d, u64* rem) {
  u64 q = 0, r = 0;
  if (d == 0) fail("integer division by zero");
  for (int i = 63; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    if (r >= d) { r -= d; q |= (u64)1 << i; }
  }
  if (rem) *rem = r;
  return q;
}

static u32 udivmod32(u32 n, u32 d, u32* rem) {
  u32 q = 0, r = 0;
  if (d == 0) fail("integer division by zero");
  for (int i = 31; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    if (r >= d) { r -= d; q |= 1u << i; }
  }
  if (rem) *rem = r;
  return q;
}

u32 __hexagon_udivsi3(u32 n, u32 d) { return udivmod32(n, d, 0); }
u32 __hexagon_umodsi3(u32 n, u32 d) { u32 r; udivmod32(n, d, &r); return r; }
i32 __hexagon_divsi3(i32 n, i32 d) {
  u32 q = udivmod32(n < 0 ? 0u - (u32)n : (u32)n, d < 0 ? 0u - (u32)d : (u32)d, 0);
  return (n < 0) != (d < 0) ? -(i32)q : (i32)q;
}
i32 __hexagon_modsi3(i32 n, i32 d) {
  u32 r;
  udivmod32(n < 0 ? 0u - (u32)n : (u32)n, d < 0 ? 0u - (u32)d : (u32)d, &r);
  return n < 0 ? -(i32)r : (i32)r;
}
u64 __hexagon_udivdi3(u64 n, u64 d) { return udivmod64(n, d, 0); }
u64 __hexagon_umoddi3(u64 n, u64 d) { u64 r; udivmod64(n, d, &r); return r; }
i64 __hexagon_divdi3(i64 n, i64 d) {
  u64 q = udivmod64(n < 0 ? 0ull - (u64)n : (u64)n, d < 0 ? 0ull - (u64)d : (u64)d, 0);
  return (n < 0) != (d < 0) ? -(i64)q : (i64)q;
}
i64 __hexagon_moddi3(i64 n, i64 d) {
  u64 r;
  udivmod64(n < 0 ? 0ull - (u64)n : (u64)n, d < 0 ? 0ull - (u64)d : (u64)d, &r);
  return n < 0 ? -(i64)r : (i64)r;
}

/* ------------------------------------------------------------------ execution counters */
/* QEMU's Hexagon translator counts the packets, instructions and HVX instructions it executes in
 * the reserved control registers C20, C21 and C22 (32 bits each), and the guest can read and write
 * them: a read gives the counts before the reading packet, a write sets them as of the start of the
 * writing packet, which then counts itself; constant extenders are no instructions (QEMU 10.0,
 * target/hexagon/genptr.c; checked with hand-written packets). The assembler has no name for them,
 * so the transfers are words: Rdd = Css is 0x68000000 | s << 16 | 3 << 14 | d, Cdd = Rss is
 * 0x63200000 | s << 16 | 3 << 14 | d (3 << 14: the parse bits of a packet of one).
 *
 * 32 bits wrap (a scalar conv2d executes more than 2**32 instructions), so while the kernel runs a
 * SIGALRM every 20 ms adds what the counters gained since the last look into 64-bit totals. The
 * handler leaves no trace in the counts: its last packet writes back the value it read in its
 * first, less the two packets and two instructions counted after that write (the write itself and
 * the return; QEMU 10.0 counts no packet of its signal trampoline). The rewritten qfloat code
 * (hvx_rewrite.py) writes the counters too, so that its stubs and model calls leave no trace
 * either; both keep the counts a function of the program alone. */
#define SYS_rt_sigaction 134
#define SYS_setitimer 103
#define SIGALRM_NUMBER 14
#define SA_RESTART_FLAG 0x10000000u

typedef struct {
  u32 last[3];      /* packets, instructions, HVX instructions at the last look */
  u32 ticks;
  u64 total[3];
} CounterState;
CounterState __qfm_counter_state __attribute__((aligned(8)));

__asm__(
    "  .macro COUNTERS_INTO_TOTALS\n"     /* r1:0 = C21:20, r2 = C22 read; totals += them - last */
    /* Signed differences: a stub's write-back may set the counters below a value read inside its
     * window (see hvx_rewrite.py), and no true difference comes near 2**31 between two looks. */
    "  { r4 = ##__qfm_counter_state }\n"
    "  { r7:6 = memd(r4+#0); r8 = memw(r4+#8) }\n"
    "  { r7:6 = vsubw(r1:0,r7:6); r8 = sub(r2,r8) }\n"
    "  { memd(r4+#0) = r1:0; memw(r4+#8) = r2 }\n"
    "  { r11:10 = memd(r4+#16); r13:12 = sxtw(r6) }\n"
    "  { r11:10 = add(r11:10,r13:12) }\n"
    "  { memd(r4+#16) = r11:10 }\n"
    "  { r11:10 = memd(r4+#24); r13:12 = sxtw(r7) }\n"
    "  { r11:10 = add(r11:10,r13:12) }\n"
    "  { memd(r4+#24) = r11:10 }\n"
    "  { r11:10 = memd(r4+#32); r13:12 = sxtw(r8) }\n"
    "  { r11:10 = add(r11:10,r13:12) }\n"
    "  { memd(r4+#32) = r11:10 }\n"
    "  .endm\n"
    /* the SIGALRM handler: any register may change (the signal frame restores them) */
    "  .text\n"
    "  .p2align 4\n"
    "__qfm_tick:\n"
    "  .word 0x6814c000\n"                /* r1:0 = C21:20 */
    "  .word 0x6816c002\n"                /* r3:2 = C23:22 */
    "  COUNTERS_INTO_TOTALS\n"
    "  { r5 = memw(r4+#12) }\n"
    "  { r5 = add(r5,#1); r13:12 = combine(#2,#2) }\n"
    "  { memw(r4+#12) = r5; r1:0 = vsubw(r1:0,r13:12) }\n"
    "  .word 0x6320c014\n"                /* C21:20 = r1:0 */
    "  { jumpr r31 }\n"
    /* __qfm_counts_begin(): look at the counters now, totals zero */
    "  .globl __qfm_counts_begin\n"
    "  .p2align 4\n"
    "__qfm_counts_begin:\n"
    "  .word 0x6814c000\n"
    "  .word 0x6816c002\n"
    "  { r4 = ##__qfm_counter_state; r7:6 = combine(#0,#0) }\n"
    "  { memd(r4+#0) = r1:0; memw(r4+#8) = r2 }\n"
    "  { memd(r4+#16) = r7:6; memd(r4+#24) = r7:6 }\n"
    "  { memd(r4+#32) = r7:6; jumpr r31 }\n"
    /* __qfm_counts_end(): totals += what the counters gained */
    "  .globl __qfm_counts_end\n"
    "  .p2align 4\n"
    "__qfm_counts_end:\n"
    "  .word 0x6814c000\n"
    "  .word 0x6816c002\n"
    "  COUNTERS_INTO_TOTALS\n"
    "  { jumpr r31 }\n"
    /* the function the counted call is calibrated with: one packet of one instruction */
    "  .globl __qfm_empty_kernel\n"
    "  .p2align 4\n"
    "__qfm_empty_kernel:\n"
    "  { jumpr r31 }\n");

void __qfm_counts_begin(void);
void __qfm_counts_end(void);
void __qfm_tick(int signal);

static void set_ticks(u32 period_us) {
  struct { i32 interval_s, interval_us, value_s, value_us; } timer = {0, (i32)period_us, 0, (i32)period_us};
  syscall3(SYS_setitimer, 0 /* ITIMER_REAL */, (long)&timer, 0);
}

static void catch_ticks(void) {
  struct { void* handler; u32 flags; u32 mask[2]; } action = {(void*)__qfm_tick, SA_RESTART_FLAG, {0, 0}};
  syscall4(SYS_rt_sigaction, SIGALRM_NUMBER, (long)&action, 0, sizeof(action.mask));
}

/* ------------------------------------------------------------------ the call */

typedef struct {
  u8 code;
  u8 bits;
  u16 lanes;
} DLDataType;
typedef struct {
  i32 device_type;
  i32 device_id;
} DLDevice;
typedef struct {
  void* data;
  DLDevice device;
  i32 ndim;
  DLDataType dtype;
  i64* shape;
  i64* strides;
  u64 byte_offset;
} DLTensor;
typedef struct {
  i32 type_index;
  u32 zero_padding;
  union {
    i64 v_int64;
    void* v_ptr;
  } v;
} TVMFFIAny;

#define kTVMFFIDLTensorPtr 7

int __tvm_ffi_main(void* self, const TVMFFIAny* args, i32 num_args, TVMFFIAny* result);
typedef int (*PackedFn)(void* self, const TVMFFIAny* args, i32 num_args, TVMFFIAny* result);
int __qfm_empty_kernel(void* self, const TVMFFIAny* args, i32 num_args, TVMFFIAny* result);

static DLTensor tensors[MAX_ARGS];
static i64 shapes[MAX_ARGS][MAX_DIMS];
static i32 is_input[MAX_ARGS];
static usize nbytes_of[MAX_ARGS];
static TVMFFIAny call_args[MAX_ARGS];

/* fn(args) with the execution counters totalled around it (ticks on while it runs). */
__attribute__((noinline)) static int counted_call(PackedFn fn, i32 nargs, u32 period_us, u64 counts[3]) {
  TVMFFIAny result;
  result.type_index = 0;
  result.zero_padding = 0;
  result.v.v_int64 = 0;
  __qfm_counts_begin();
  set_ticks(period_us);
  int status = fn(0, call_args, nargs, &result);
  /* Ticks off before the last look: a tick delivered after it would total the look's own 16
   * packets and 22 instructions (seen under load). Turning them off is counted in both calls. */
  set_ticks(0);
  __qfm_counts_end();
  for (int i = 0; i < 3; ++i) counts[i] = __qfm_counter_state.total[i];
  return status;
}

static u32 read_word(void) {
  u32 word;
  if (read_all(&word, 4) != 0) fail("truncated input header");
  return word;
}

/* Which arithmetic the HVX model computes (hvx_model.c); weak: kernels without the model link too. */
extern unsigned int __qfm_arith __attribute__((weak));

static int run(void) {
  if (read_word() != MAGIC_IN) fail("bad input magic");
  if (read_word() != VERSION) fail("input protocol version mismatch");
  u32 flags = read_word();
  if (flags & ~(FLAG_IEEE_TWIN | FLAG_FAST_TICKS)) fail("unknown input flags");
  if (flags & FLAG_IEEE_TWIN) {
    if (!&__qfm_arith) fail("the IEEE twin asked for, but no HVX floating-point model is linked");
    __qfm_arith = 1;
  }
  u32 nargs = read_word();
  if (nargs == 0 || nargs > MAX_ARGS) fail("bad argument count");
  for (u32 i = 0; i < nargs; ++i) {
    DLTensor* t = &tensors[i];
    u32 code = read_word(), bits = read_word(), ndim = read_word();
    if (ndim > MAX_DIMS || bits == 0 || (bits & 7u)) fail("bad tensor header");
    u64 count = 1;
    for (u32 d = 0; d < ndim; ++d) {
      shapes[i][d] = (i64)read_word();
      count *= (u64)shapes[i][d];
    }
    is_input[i] = (i32)read_word();
    u64 nbytes = count * (bits / 8u);
    t->data = arena_alloc(nbytes ? nbytes : 1);
    if (!t->data) fail("arena exhausted by the tensors");
    nbytes_of[i] = (usize)nbytes;
    t->device.device_type = 1; /* kDLCPU */
    t->device.device_id = 0;
    t->ndim = (i32)ndim;
    t->dtype.code = (u8)code;
    t->dtype.bits = (u8)bits;
    t->dtype.lanes = 1;
    t->shape = shapes[i];
    t->strides = 0;
    t->byte_offset = 0;
    call_args[i].type_index = kTVMFFIDLTensorPtr;
    call_args[i].zero_padding = 0;
    call_args[i].v.v_int64 = 0;
    call_args[i].v.v_ptr = t;
  }
  for (u32 i = 0; i < nargs; ++i) {
    if (is_input[i]) {
      if (read_all(tensors[i].data, nbytes_of[i]) != 0) fail("truncated input data");
    } else {
      memset(tensors[i].data, 0, nbytes_of[i]);
    }
  }
  bind_runtime();
  catch_ticks();
  u32 period = flags & FLAG_FAST_TICKS ? 20u : 20000u;
  /* The counted call, once with a function of one packet and one instruction: what the call adds
   * around the kernel (same code both times) comes off. */
  u64 around[3], counts[3];
  counted_call(__qfm_empty_kernel, (i32)nargs, period, around);
  i64 start = now_ns();
  int status = counted_call(__tvm_ffi_main, (i32)nargs, period, counts);
  i64 elapsed = now_ns() - start;
  around[0] -= 1;
  around[1] -= 1;
  u32 trailer[10];
  trailer[0] = MAGIC_OUT;
  trailer[1] = (u32)status;
  trailer[2] = (u32)(u64)elapsed;
  trailer[3] = (u32)((u64)elapsed >> 32);
  for (int i = 0; i < 3; ++i) {
    u64 own = counts[i] - around[i];
    trailer[4 + 2 * i] = (u32)own;
    trailer[5 + 2 * i] = (u32)(own >> 32);
  }
  write_all(1, trailer, sizeof(trailer));
  if (status != 0) {
    if (!error_raised) put_str(2, "hexagon harness: kernel returned an error status\n");
    return 1;
  }
  for (u32 i = 0; i < nargs; ++i)
    if (!is_input[i]) write_all(1, tensors[i].data, nbytes_of[i]);
  return 0;
}

/* ------------------------------------------------------------------ illegal instructions */
/* An emulator without some instruction (Debian's QEMU has no HVX floating point) raises SIGILL at
 * it. The handler reports the faulting address so that the suite can name the instruction; it
 * never returns. Linux asm-generic ABI (Hexagon uses it): rt_sigaction is syscall 134 with
 * struct sigaction {handler, flags, mask[2 words]}; SA_SIGINFO = 4; siginfo_t has si_signo,
 * si_errno, si_code, then si_addr (the faulting instruction's address for SIGILL) at byte 12. */
#define SYS_rt_sigaction 134
#define SIGILL_NUMBER 4
#define SA_SIGINFO_FLAG 4u

static void put_hex(int fd, u32 value) {
  char text[11] = "0x00000000";
  for (int i = 0; i < 8; ++i) text[9 - i] = "0123456789abcdef"[(value >> (4 * i)) & 15u];
  write_all(fd, text, 10);
}

static void on_illegal(int signal, void* info, void* context) {
  (void)signal;
  (void)context;
  put_str(2, "hexagon harness: illegal instruction at pc ");
  put_hex(2, *(u32*)((u8*)info + 12));
  put_str(2, "\n");
  exit_now(4);
}

static void catch_illegal(void) {
  struct { void* handler; u32 flags; u32 mask[2]; } action = {(void*)on_illegal, SA_SIGINFO_FLAG, {0, 0}};
  syscall4(SYS_rt_sigaction, SIGILL_NUMBER, (long)&action, 0, sizeof(action.mask));
}

__attribute__((noreturn)) void _start(void) {
  catch_illegal();
  exit_now(run());
}
