# uint8 by int8 dot products accumulated in int32 (the accumulator of a quantized dense layer).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def qdot(A: T.Buffer((4, 64), "uint8"), W: T.Buffer((64, 16), "int8"), C: T.Buffer((4, 16), "int32")):
    for i, j, k in T.grid(4, 16, 64):
        with T.sblock("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[v_i, v_j] = 0
            C[v_i, v_j] = C[v_i, v_j] + T.Cast("int32", A[v_i, v_k]) * T.Cast("int32", W[v_k, v_j])
