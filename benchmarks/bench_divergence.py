"""How much the choice of loop order changes a workload's output and its error, against ``default``
on the same target."""

from .common import ComboBenchmark, measurement


class DivergenceFromDefault(ComboBenchmark):
    need = "OUTPUT"
    against_default = True

    def read(self):
        return measurement.tracked_divergence(self.combo)
