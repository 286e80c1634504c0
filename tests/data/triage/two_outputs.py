# Two outputs of one PrimFunc, as a fused kernel's report has them: C = A @ B and the row sums S of
# A (float32). The before program of the two-output cases: two_outputs_swapped.py (EQUIVALENT) and
# two_outputs_wrong_sum.py (CHANGED, S only).
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
    for i, k in T.grid(16, 32):
        with T.sblock("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]
