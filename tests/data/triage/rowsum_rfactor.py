# The row sums rfactor'd: 32 partial sums of 32 terms each, then their sum (another order of the
# same additions).
b = sch.get_sblock("S")
i, k = sch.get_loops(b)
ko, ki = sch.split(k, factors=[32, 32])
sch.rfactor(ko, factor_axis=1)
