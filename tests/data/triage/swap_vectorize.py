# The first reduction loop above the output channels, which are vectorized: on Hexagon v68 the
# channel sums then run on HVX qfloat.
b = sch.get_sblock("conv2d_nhwc")
n, y, x, f, ry, rx, rc = sch.get_loops(b)
sch.reorder(ry, f)
sch.vectorize(f)
