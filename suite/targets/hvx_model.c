/*
 * What the rewritten kernel calls (suite/targets/hvx_rewrite.py): one qfm_<name> per HVX
 * floating-point instruction, computed by the qfloat model (qfloat_model.c, what Hexagon v68-v75
 * computes) or by its IEEE twin (ieee_model.c, the same instruction rounded once to nearest even),
 * as __qfm_arith says. The harness sets it from its input (hexagon_harness.c), so one ELF runs
 * under either model: the same kernel code, the same packets; only the arithmetic differs.
 *
 * Freestanding, integer-only; compiled with the models' flags (hvx_toolchain.MODEL_FLAGS).
 */

/* Scratch memory for the rewritten code: saved scalar context and vector operands/results.
 * hvx_rewrite.py addresses it as ##__qfm_ctx and ##__qfm_vbuf. */
__attribute__((aligned(128))) unsigned char __qfm_vbuf[128 * 16];
__attribute__((aligned(8))) unsigned int __qfm_ctx[64];
/* The kernel's vector registers the vector model (vector_model.c) clobbers, each at 128 * its number. */
__attribute__((aligned(128))) unsigned char __qfm_vsave[128 * 32];

/* The execution counts (packets, instructions, HVX instructions) at the start of a stub, which it
 * writes back, adjusted, at its end: the stub and the model calls leave no trace in QEMU's counters
 * (hexagon_harness.c, hvx_rewrite.py). */
__attribute__((aligned(8))) unsigned int __qfm_cnt_snap[4];

/* 0: qfloat; 1: the IEEE twin. */
unsigned int __qfm_arith;

#define BOTH(NAME)                                                                             \
    void qf_##NAME(const void *, const void *, void *);                                        \
    void ieee_##NAME(const void *, const void *, void *);                                      \
    void qfm_##NAME(const void *u, const void *v, void *d)                                     \
    {                                                                                          \
        if (__qfm_arith)                                                                       \
            ieee_##NAME(u, v, d);                                                              \
        else                                                                                   \
            qf_##NAME(u, v, d);                                                                \
    }
/* vmax/vmin round nothing: both models select as the hardware does */
#define SAME(NAME)                                                                             \
    void qf_##NAME(const void *, const void *, void *);                                        \
    void qfm_##NAME(const void *u, const void *v, void *d) { qf_##NAME(u, v, d); }

BOTH(vmpy_qf16_hf)
BOTH(vmpy_qf16_mix_hf)
BOTH(vmpy_qf16)
BOTH(vmpy_qf32_hf)
BOTH(vmpy_qf32_mix_hf)
BOTH(vmpy_qf32_qf16)
BOTH(vmpy_qf32)
BOTH(vmpy_qf32_sf)
BOTH(vadd_hf)
BOTH(vadd_qf16_mix)
BOTH(vadd_qf16)
BOTH(vsub_hf)
BOTH(vsub_qf16_mix)
BOTH(vsub_qf16)
BOTH(vadd_sf)
BOTH(vadd_qf32_mix)
BOTH(vadd_qf32)
BOTH(vsub_sf)
BOTH(vsub_qf32_mix)
BOTH(vsub_qf32)
BOTH(vconv_hf_qf16)
BOTH(vconv_hf_qf32)
BOTH(vconv_sf_qf32)
SAME(vmax_hf)
SAME(vmin_hf)
SAME(vmax_sf)
SAME(vmin_sf)
