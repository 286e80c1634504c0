# The matmul with its reduction split 4 x 8, the outer part bound with the wrong stride
# (ko * 4 where the split is ko * 8): each output sums k = 0..19 with repeats, not k = 0..31.
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for i, j, ko, ki in T.grid(32, 32, 4, 8):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            vk = T.axis.reduce(32, ko * 4 + ki)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
