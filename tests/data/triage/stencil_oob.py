# A two-point stencil that reads one element past the end of A at i = 15 (UNDEFINED).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def stencil(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = (A[vi] + A[vi + 1]) * T.float32(0.5)
