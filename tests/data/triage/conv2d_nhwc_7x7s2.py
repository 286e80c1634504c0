# The seed conv2d (NHWC, 1x230x230x3 * 7x7x3x64, stride 2, no padding, accumulating in float16),
# in the TVMScript of TVM 0.27: the before program of the loop-swap cases.
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def conv2d(lv1: T.Buffer((1, 230, 230, 3), "float16"), param_0: T.Buffer((7, 7, 3, 64), "float16"),
           conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float16")):
    for n, y, x, f, ry, rx, rc in T.grid(1, 112, 112, 64, 7, 7, 3):
        with T.sblock("conv2d_nhwc"):
            vn, vy, vx, vf, vry, vrx, vrc = T.axis.remap("SSSSRRR", [n, y, x, f, ry, rx, rc])
            with T.init():
                conv2d_nhwc[vn, vy, vx, vf] = T.float16(0)
            conv2d_nhwc[vn, vy, vx, vf] = (conv2d_nhwc[vn, vy, vx, vf]
                                           + lv1[vn, vy * 2 + vry, vx * 2 + vrx, vrc] * param_0[vry, vrx, vrc, vf])
