# A 32x32x32 float32 matmul as TE/Relax legalization writes it: the before program of the
# wrong-index case (CHANGED).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
