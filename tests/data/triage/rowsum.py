# Row sums of a 64x1024 float16 matrix, summed left to right: the before program of the rfactor
# case (REORDERED with rowsum_rfactor.py).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def rowsum(A: T.Buffer((64, 1024), "float16"), S: T.Buffer((64,), "float16")):
    for i, k in T.grid(64, 1024):
        with T.sblock("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float16(0)
            S[vi] = S[vi] + A[vi, vk]
