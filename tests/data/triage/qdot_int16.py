# qdot.py accumulating in int16, which wraps (no nsw below 32 bits), then widened to int32.
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def qdot(A: T.Buffer((4, 64), "uint8"), W: T.Buffer((64, 16), "int8"), C: T.Buffer((4, 16), "int32")):
    acc = T.sblock_alloc_buffer((4, 16), "int16")
    for i, j, k in T.grid(4, 16, 64):
        with T.sblock("acc"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            with T.init():
                acc[v_i, v_j] = T.int16(0)
            acc[v_i, v_j] = acc[v_i, v_j] + T.Cast("int16", A[v_i, v_k]) * T.Cast("int16", W[v_k, v_j])
    for i, j in T.grid(4, 16):
        with T.sblock("C"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            C[v_i, v_j] = T.Cast("int32", acc[v_i, v_j])
