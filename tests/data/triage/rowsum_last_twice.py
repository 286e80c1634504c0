# rowsum.py with its last term counted twice: an error of one term, far below the rounding bound
# of a float16 sum of 1,024 terms, and far beyond what any summation order does (SHIFTED).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def rowsum(A: T.Buffer((64, 1024), "float16"), S: T.Buffer((64,), "float16")):
    for i, k in T.grid(64, 1024):
        with T.sblock("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float16(0)
            S[vi] = S[vi] + A[vi, vk] + T.if_then_else(vk == 1023, A[vi, vk], T.float16(0))
