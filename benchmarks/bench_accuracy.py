"""ULP error and rounding-bound use of every workload's output against a float64 reference."""

from .common import PARAM_NAMES, PARAMS, measured


class Accuracy:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 1200

    def setup(self, workload, dtype, target, order):
        self.metrics = measured(workload, dtype, target, order)["metrics"]

    def track_ulp_max(self, *params):
        return float(self.metrics["ulp_max"])

    track_ulp_max.unit = "ULP"

    def track_ulp_mean(self, *params):
        return float(self.metrics["ulp_mean"])

    track_ulp_mean.unit = "ULP"

    def track_ulp_p99(self, *params):
        return float(self.metrics["ulp_p99"])

    track_ulp_p99.unit = "ULP"

    def track_scaled_error(self, *params):
        """max|y - r| in ULPs of max|r|: not blown up by cancellation near zero."""
        return float(self.metrics["scaled_error"])

    track_scaled_error.unit = "ULP of max|ref|"

    def track_bound_fraction(self, *params):
        """Share of the worst-case rounding bound used; above 1 no summation order explains it."""
        return float(self.metrics["bound_fraction"])

    track_bound_fraction.unit = "fraction"

    def track_nonfinite(self, *params):
        return float(self.metrics["nonfinite"])

    track_nonfinite.unit = "elements"
