# The reduction above the 10 output columns, which are vectorized: 10 float16 lanes of a 64-lane
# HVX vector on Hexagon v68, which LLVM builds word by word (vinsert, valign) from scalar loads.
b = sch.get_sblock("matmul")
i, j, k = sch.get_loops(b)
sch.reorder(k, j)
sch.vectorize(j)
