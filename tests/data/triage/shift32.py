# Packing 4-bit fields into an int32 by shifting each by 4 * i: at i = 8 the shift is 32, the
# width of int32 (UNDEFINED: LLVM's shl by >= the width is poison).
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def pack(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = T.shift_left(A[vi] & 15, vi * 4)
