"""How much the choice of loop order changes a workload's output and its error, against ``default``
on the same target."""

from .common import ComboBenchmark, measurement


class DivergenceFromDefault(ComboBenchmark):
    need = "OUTPUT"
    against_default = True
    dtypes = "FLOAT_DTYPES"  # int8 is judged exactly in every order (bench_accuracy.IntegerAccuracy)

    def read(self):
        return measurement.tracked_divergence(self.combo)
