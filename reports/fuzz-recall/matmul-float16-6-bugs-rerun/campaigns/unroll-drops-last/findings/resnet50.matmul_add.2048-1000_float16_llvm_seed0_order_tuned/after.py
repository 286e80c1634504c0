# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(private=True, s_tir=True)
def main(lv172: T.Buffer((T.int64(1), T.int64(2048)), "float16"), p106: T.Buffer((T.int64(2048), T.int64(1000)), "float16"), p107: T.Buffer((T.int64(1), T.int64(1000)), "float16"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(1000)), "float16")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    matmul_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(1000)), "float16")
    for i0_0_i1_0_i0_1_i1_1_fused in T.parallel(T.int64(25), annotations={"pragma_auto_unroll_max_step": 512, "pragma_unroll_explicit": 1}):
        for i0_2_init, i1_2_init, i0_3_init, i1_3_init in T.grid(T.int64(1), T.int64(40), T.int64(1), T.int64(1)):
            with T.sblock("matmul_init"):
                v_i0 = T.axis.spatial(T.int64(1), i0_2_init + i0_3_init)
                v_i1 = T.axis.spatial(T.int64(1000), i0_0_i1_0_i0_1_i1_1_fused * T.int64(40) + i1_2_init + i1_3_init)
                T.reads()
                T.writes(matmul_intermediate[v_i0, v_i1])
                T.sblock_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                matmul_intermediate[v_i0, v_i1] = T.float16(0.0)
        for k_0, i0_2, i1_2, k_1, i0_3, i1_3 in T.grid(T.int64(1024), T.int64(1), T.int64(40), T.int64(2), T.int64(1), T.int64(1)):
            with T.sblock("matmul_update"):
                v_i0 = T.axis.spatial(T.int64(1), i0_2 + i0_3)
                v_i1 = T.axis.spatial(T.int64(1000), i0_0_i1_0_i0_1_i1_1_fused * T.int64(40) + i1_2 + i1_3)
                v_k = T.axis.reduce(T.int64(2048), k_0 * T.int64(2) + k_1)
                T.reads(matmul_intermediate[v_i0, v_i1], lv172[v_i0, v_k], p106[v_k, v_i1])
                T.writes(matmul_intermediate[v_i0, v_i1])
                T.sblock_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                matmul_intermediate[v_i0, v_i1] = matmul_intermediate[v_i0, v_i1] + lv172[v_i0, v_k] * p106[v_k, v_i1]
    for ax0_ax1_fused_0 in T.parallel(T.int64(16)):
        for ax0_ax1_fused_1 in T.vectorized(T.int64(64)):
            with T.sblock("T_add"):
                v_ax0 = T.axis.spatial(T.int64(1), T.int64(0))
                v_ax1 = T.axis.spatial(T.int64(1000), ax0_ax1_fused_0 * T.int64(64) + ax0_ax1_fused_1)
                T.where(ax0_ax1_fused_0 * T.int64(64) + ax0_ax1_fused_1 < T.int64(1000))
                T.reads(matmul_intermediate[v_ax0, v_ax1], p107[v_ax0, v_ax1])
                T.writes(T_add_intermediate[v_ax0, v_ax1])
                T_add_intermediate[v_ax0, v_ax1] = matmul_intermediate[v_ax0, v_ax1] + p107[v_ax0, v_ax1]