# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(lv1: T.Buffer((1, 230, 230, 3), "float32"), param_0: T.Buffer((7, 7, 3, 64), "float32"), conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float32")):
    T.func_attr({"layout_free_buffers": [1], "tirx.noalias": True})
    # with T.sblock("root"):
    conv2d_nhwc_global = T.sblock_alloc_buffer((1, 112, 112, 64))
    for nn_0_yy_0_xx_0_fused in T.parallel(196, annotations={"pragma_auto_unroll_max_step": 512, "pragma_unroll_explicit": 1}):
        for ff_0 in range(1):
            for nn_1_init, yy_1_init, xx_1_init, ff_1_init, nn_2_init, yy_2_init, xx_2_init in T.grid(1, 2, 16, 1, 1, 2, 1):
                for ff_2_fused_init in T.vectorized(64):
                    with T.sblock("conv2d_nhwc_init"):
                        v_nn = T.axis.spatial(1, nn_1_init + nn_2_init)
                        v_yy = T.axis.spatial(112, nn_0_yy_0_xx_0_fused // 7 * 4 + yy_1_init * 2 + yy_2_init)
                        v_xx = T.axis.spatial(112, nn_0_yy_0_xx_0_fused % 7 * 16 + xx_1_init + xx_2_init)
                        v_ff = T.axis.spatial(64, ff_0 * 64 + ff_1_init * 64 + ff_2_fused_init)
                        T.reads()
                        T.writes(conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff])
                        T.sblock_attr({"meta_schedule.tiling_structure": "SRSRS"})
                        conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff] = T.float32(0.0)
            for ry_0, rx_0, rc_0 in T.grid(1, 7, 1):
                for nn_1, yy_1, xx_1, ff_1, ry_1, rx_1, rc_1, nn_2, yy_2, xx_2 in T.grid(1, 2, 16, 1, 7, 1, 3, 1, 2, 1):
                    for ff_2_fused in T.vectorized(64):
                        with T.sblock("conv2d_nhwc_update"):
                            v_nn = T.axis.spatial(1, nn_1 + nn_2)
                            v_yy = T.axis.spatial(112, nn_0_yy_0_xx_0_fused // 7 * 4 + yy_1 * 2 + yy_2)
                            v_xx = T.axis.spatial(112, nn_0_yy_0_xx_0_fused % 7 * 16 + xx_1 + xx_2)
                            v_ff = T.axis.spatial(64, ff_0 * 64 + ff_1 * 64 + ff_2_fused)
                            v_ry = T.axis.reduce(7, ry_0 * 7 + ry_1)
                            v_rx = T.axis.reduce(7, rx_0 + rx_1)
                            v_rc = T.axis.reduce(3, rc_0 * 3 + rc_1)
                            T.reads(conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff], lv1[v_nn, v_yy * 2 + v_ry, v_xx * 2 + v_rx, v_rc], param_0[v_ry, v_rx, v_rc, v_ff])
                            T.writes(conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff])
                            T.sblock_attr({"meta_schedule.tiling_structure": "SRSRS"})
                            conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff] = conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff] + lv1[v_nn, v_yy * 2 + v_ry, v_xx * 2 + v_rx, v_rc] * param_0[v_ry, v_rx, v_rc, v_ff]
                for ax0, ax1, ax2 in T.grid(1, 4, 16):
                    for ax3_fused in T.vectorized(64):
                        with T.sblock("conv2d_nhwc_global"):
                            v0 = T.axis.spatial(1, ax0)
                            v1 = T.axis.spatial(112, nn_0_yy_0_xx_0_fused // 7 * 4 + ax1)
                            v2 = T.axis.spatial(112, nn_0_yy_0_xx_0_fused % 7 * 16 + ax2)
                            v3 = T.axis.spatial(64, ax3_fused)
                            T.reads(conv2d_nhwc_global[v0, v1, v2, v3])
                            T.writes(conv2d_nhwc[v0, v1, v2, v3])
                            conv2d_nhwc[v0, v1, v2, v3] = conv2d_nhwc_global[v0, v1, v2, v3]