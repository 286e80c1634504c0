"""How much the choice of loop order changes a workload's output, against ``default``."""

from .common import PARAM_NAMES, PARAMS, measured, measurement


class DivergenceFromDefault:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 1200

    def setup(self, workload, dtype, target, order):
        measured(workload, dtype, target, order)
        try:
            self.divergence = measurement.divergence(workload, dtype, target, order, "default")
        except measurement.Skip as err:
            raise NotImplementedError(str(err)) from None

    def track_differ_fraction(self, *params):
        """Fraction of output elements whose bits differ from the default order's."""
        return float(self.divergence["differ_fraction"])

    track_differ_fraction.unit = "fraction"

    def track_max_ulp_distance(self, *params):
        return float(self.divergence["max_ulp_distance"])

    track_max_ulp_distance.unit = "ULP"

    def track_exceeds_bound(self, *params):
        """1 when either output uses more than the worst-case rounding bound."""
        return float(self.divergence["exceeds_bound"])

    track_exceeds_bound.unit = "flag"
