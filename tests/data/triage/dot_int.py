# int8 x int8 dot products accumulated in int32 (a quantized dense layer): the before program of
# the sign case (CHANGED: integer results must match exactly).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def dot(A: T.Buffer((16, 64), "int8"), W: T.Buffer((64,), "int8"), Y: T.Buffer((16,), "int32")):
    for i, k in T.grid(16, 64):
        with T.sblock("Y"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                Y[vi] = 0
            Y[vi] = Y[vi] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", W[vk])
