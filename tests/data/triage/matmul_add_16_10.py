# ResNet's dense layer in miniature (miniresnet.matmul_add.16-10): a float16 1x16 by 16x10 matmul
# and a bias add, as Relax legalization writes it.
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(x: T.Buffer((1, 16), "float16"), w: T.Buffer((16, 10), "float16"), b: T.Buffer((1, 10), "float16"),
         out: T.Buffer((1, 10), "float16")):
    mm = T.sblock_alloc_buffer((1, 10), "float16")
    for i, j, k in T.grid(1, 10, 16):
        with T.sblock("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                mm[vi, vj] = T.float16(0)
            mm[vi, vj] = mm[vi, vj] + x[vi, vk] * w[vk, vj]
    for i, j in T.grid(1, 10):
        with T.sblock("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            out[vi, vj] = mm[vi, vj] + b[vi, vj]
