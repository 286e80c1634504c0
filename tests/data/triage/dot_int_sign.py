# The dot product unrolled by hand into two halves, the second half's sign flipped.
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def dot(A: T.Buffer((16, 64), "int8"), W: T.Buffer((64,), "int8"), Y: T.Buffer((16,), "int32")):
    for i, ko, ki in T.grid(16, 2, 32):
        with T.sblock("Y"):
            vi = T.axis.spatial(16, i)
            vk = T.axis.reduce(64, ko * 32 + ki)
            with T.init():
                Y[vi] = 0
            Y[vi] = Y[vi] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", W[vk]) * T.if_then_else(vk < 32, 1, -1)
