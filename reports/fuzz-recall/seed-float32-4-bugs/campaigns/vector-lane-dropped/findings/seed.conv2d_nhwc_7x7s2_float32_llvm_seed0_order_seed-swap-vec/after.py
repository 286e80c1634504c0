# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(lv1: T.Buffer((1, 230, 230, 3), "float32"), param_0: T.Buffer((7, 7, 3, 64), "float32"), conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float32")):
    T.func_attr({"layout_free_buffers": [1], "tirx.noalias": True})
    # with T.sblock("root"):
    pad_temp = T.sblock_alloc_buffer((1, 230, 230, 3))
    for i0, i1, i2, i3 in T.grid(1, 230, 230, 3):
        with T.sblock("pad_temp"):
            v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(lv1[v_i0, v_i1, v_i2, v_i3])
            T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
            pad_temp[v_i0, v_i1, v_i2, v_i3] = lv1[v_i0, v_i1, v_i2, v_i3]
    for nn, yy, xx, ry in T.grid(1, 112, 112, 7):
        for ff in T.vectorized(64):
            for rx, rc in T.grid(7, 3):
                with T.sblock("conv2d_nhwc"):
                    v_nn, v_yy, v_xx, v_ff, v_ry, v_rx, v_rc = T.axis.remap("SSSSRRR", [nn, yy, xx, ff, ry, rx, rc])
                    T.reads(pad_temp[v_nn, v_yy * 2 + v_ry, v_xx * 2 + v_rx, v_rc], param_0[v_ry, v_rx, v_rc, v_ff])
                    T.writes(conv2d_nhwc[v_nn, v_yy, v_xx, v_ff])
                    with T.init():
                        conv2d_nhwc[v_nn, v_yy, v_xx, v_ff] = T.float32(0.0)
                    conv2d_nhwc[v_nn, v_yy, v_xx, v_ff] = conv2d_nhwc[v_nn, v_yy, v_xx, v_ff] + pad_temp[v_nn, v_yy * 2 + v_ry, v_xx * 2 + v_rx, v_rc] * param_0[v_ry, v_rx, v_rc, v_ff]