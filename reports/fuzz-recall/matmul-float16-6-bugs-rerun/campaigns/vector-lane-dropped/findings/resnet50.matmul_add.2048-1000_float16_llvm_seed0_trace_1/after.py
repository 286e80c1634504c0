# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(private=True, s_tir=True)
def main(lv172: T.Buffer((T.int64(1), T.int64(2048)), "float16"), p106: T.Buffer((T.int64(2048), T.int64(1000)), "float16"), p107: T.Buffer((T.int64(1), T.int64(1000)), "float16"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(1000)), "float16")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    matmul_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(1000)), "float16")
    for i0_0_i1_0_i0_1_i1_1_fused in range(T.int64(50)):
        for k_0, i0_2, i1_2, k_1, i0_3, i1_3 in T.grid(T.int64(128), T.int64(1), T.int64(1), T.int64(16), T.int64(1), T.int64(20)):
            with T.sblock("matmul"):
                v_i0 = T.axis.spatial(T.int64(1), i0_2 + i0_3)
                v_i1 = T.axis.spatial(T.int64(1000), i0_0_i1_0_i0_1_i1_1_fused * T.int64(20) + i1_2 * T.int64(20) + i1_3)
                v_k = T.axis.reduce(T.int64(2048), k_0 * T.int64(16) + k_1)
                T.reads(lv172[v_i0, v_k], p106[v_k, v_i1])
                T.writes(matmul_intermediate[v_i0, v_i1])
                with T.init():
                    matmul_intermediate[v_i0, v_i1] = T.float16(0.0)
                matmul_intermediate[v_i0, v_i1] = matmul_intermediate[v_i0, v_i1] + lv172[v_i0, v_k] * p106[v_k, v_i1]
        for ax0 in range(T.int64(1)):
            for ax1_fused in T.vectorized(T.int64(20)):
                with T.sblock("T_add"):
                    v_ax0 = T.axis.spatial(T.int64(1), ax0)
                    v_ax1 = T.axis.spatial(T.int64(1000), i0_0_i1_0_i0_1_i1_1_fused * T.int64(20) + ax1_fused)
                    T.reads(matmul_intermediate[v_ax0, v_ax1], p107[v_ax0, v_ax1])
                    T.writes(T_add_intermediate[v_ax0, v_ax1])
                    T_add_intermediate[v_ax0, v_ax1] = matmul_intermediate[v_ax0, v_ax1] + p107[v_ax0, v_ax1]