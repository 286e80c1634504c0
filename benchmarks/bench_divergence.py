"""How much the choice of loop order changes a workload's output, against ``default``."""

from .common import ComboBenchmark, measurement


class DivergenceFromDefault(ComboBenchmark):
    need = "OUTPUT"

    def read(self):
        return measurement.divergence(self.combo, "default")
