# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(lv1: T.Buffer((1, 230, 230, 3), "float32"), param_0: T.Buffer((7, 7, 3, 64), "float32"), conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float32")):
    T.func_attr({"layout_free_buffers": [1], "tirx.noalias": True})
    with T.sblock("root"):
        T.reads()
        T.writes()
        T.sblock_attr({"meta_schedule.parallel": 32})
        conv2d_nhwc_global = T.sblock_alloc_buffer((1, 112, 112, 64))
        param_0_global = T.sblock_alloc_buffer((16, 7, 2, 7, 3, 2))
        for ax0, ax1, ax2, ax3 in T.grid(7, 7, 3, 64):
            with T.sblock("param_0_global"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(param_0[v0, v1, v2, v3])
                T.writes(param_0_global[v3 // 4, v1, v3 % 4 // 2, v0, v2, v3 % 2])
                T.sblock_attr({"meta_schedule.layout_rewrite_preproc": True})
                param_0_global[v3 // 4, v1, v3 % 4 // 2, v0, v2, v3 % 2] = param_0[v0, v1, v2, v3]
        for nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused in T.parallel(64, annotations={"pragma_auto_unroll_max_step": 512, "pragma_unroll_explicit": 1}):
            for ff_1 in range(16):
                for nn_2_init, yy_2_init, xx_2_init, ff_2_init, nn_3_init, yy_3_init, xx_3_init, ff_3_init in T.grid(1, 14, 7, 2, 1, 1, 2, 2):
                    with T.sblock("conv2d_nhwc_init"):
                        v_nn = T.axis.spatial(1, nn_2_init + nn_3_init)
                        v_yy = T.axis.spatial(112, nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused // 8 * 14 + yy_2_init + yy_3_init)
                        v_xx = T.axis.spatial(112, nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused % 8 * 14 + xx_2_init * 2 + xx_3_init)
                        v_ff = T.axis.spatial(64, ff_1 * 4 + ff_2_init * 2 + ff_3_init)
                        T.reads()
                        T.writes(conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff])
                        T.sblock_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                        conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff] = T.float32(0.0)
                for ry_0, rx_0, rc_0, nn_2, yy_2, xx_2, ff_2, ry_1, rx_1, rc_1, nn_3, yy_3, xx_3, ff_3 in T.grid(1, 7, 1, 1, 14, 7, 2, 7, 1, 3, 1, 1, 2, 2):
                    with T.sblock("conv2d_nhwc_update"):
                        v_nn = T.axis.spatial(1, nn_2 + nn_3)
                        v_yy = T.axis.spatial(112, nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused // 8 * 14 + yy_2 + yy_3)
                        v_xx = T.axis.spatial(112, nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused % 8 * 14 + xx_2 * 2 + xx_3)
                        v_ff = T.axis.spatial(64, ff_1 * 4 + ff_2 * 2 + ff_3)
                        v_ry = T.axis.reduce(7, ry_0 * 7 + ry_1)
                        v_rx = T.axis.reduce(7, rx_0 + rx_1)
                        v_rc = T.axis.reduce(3, rc_0 * 3 + rc_1)
                        T.reads(conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff], lv1[v_nn, v_yy * 2 + v_ry, v_xx * 2 + v_rx, v_rc], param_0_global[v_ff // 4, v_rx, v_ff % 4 // 2, v_ry, v_rc, v_ff % 2])
                        T.writes(conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff])
                        T.sblock_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                        conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff] = conv2d_nhwc_global[v_nn, v_yy, v_xx, v_ff] + lv1[v_nn, v_yy * 2 + v_ry, v_xx * 2 + v_rx, v_rc] * param_0_global[v_ff // 4, v_rx, v_ff % 4 // 2, v_ry, v_rc, v_ff % 2]
                for ax0, ax1, ax2 in T.grid(1, 14, 14):
                    for ax3_fused in T.vectorized(4):
                        with T.sblock("conv2d_nhwc_global"):
                            v0 = T.axis.spatial(1, ax0)
                            v1 = T.axis.spatial(112, nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused // 8 * 14 + ax1)
                            v2 = T.axis.spatial(112, nn_0_yy_0_xx_0_ff_0_nn_1_yy_1_xx_1_fused % 8 * 14 + ax2)
                            v3 = T.axis.spatial(64, ff_1 * 4 + ax3_fused)
                            T.reads(conv2d_nhwc_global[v0, v1, v2, v3])
                            T.writes(conv2d_nhwc[v0, v1, v2, v3])
                            conv2d_nhwc[v0, v1, v2, v3] = conv2d_nhwc_global[v0, v1, v2, v3]