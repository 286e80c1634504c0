"""Every workload's output against its oracle: ULP error and rounding-bound use against a float64
reference (float dtypes), exactness against the integer oracle (int8: suite.core.quantized)."""

from .common import ComboBenchmark


class Accuracy(ComboBenchmark):
    need = "OUTPUT"
    dtypes = "FLOAT_DTYPES"  # ULP and rounding bounds mean nothing for int8: IntegerAccuracy reads those


class IntegerAccuracy(ComboBenchmark):
    need = "OUTPUT"
    dtypes = "INTEGER_DTYPES"
