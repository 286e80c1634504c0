# two_outputs.py with S's reduction split 4 x 8 and its outer part bound with the wrong stride
# (ko * 4 where the split is ko * 8): S sums k = 0..19 with repeats (CHANGED); C is as before
# (EQUIVALENT).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def two(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 16), "float32"), C: T.Buffer((16, 16), "float32"),
        S: T.Buffer((16,), "float32")):
    for i, j, k in T.grid(16, 16, 32):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, ko, ki in T.grid(16, 4, 8):
        with T.sblock("S"):
            vi = T.axis.spatial(16, i)
            vk = T.axis.reduce(32, ko * 4 + ki)
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]
