"""The IEEE twin of the executed qfloat targets: the same program, every HVX floating-point
instruction rounded once to nearest even (suite.targets.ieee_twin). Its error against float64, and
its divergence from ``default``, say whether a divergence on the qfloat target comes from qfloat's
arithmetic or from the schedule. Targets without a twin have no benchmarks here."""

from .common import ComboBenchmark, measurement


class TwinAccuracy(ComboBenchmark):
    need = "IEEE_TWIN"


class TwinDivergence(ComboBenchmark):
    need = "IEEE_TWIN"
    against_default = True

    def read(self):
        return measurement.divergence(self.combo, "default")
