"""ULP error and rounding-bound use of every workload's output against a float64 reference."""

from .common import ComboBenchmark


class Accuracy(ComboBenchmark):
    need = "OUTPUT"
