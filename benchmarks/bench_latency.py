"""Latency of every workload's kernel (asv times the call) and its throughput."""

from .common import PARAM_NAMES, PARAMS, measured, measurement, native


class KernelTime:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 1200  # the first process of a combination compiles and measures it
    number = 1
    warmup_time = 0.1

    def setup(self, workload, dtype, target, order):
        native(target)
        measured(workload, dtype, target, order)
        self.kernel = measurement.load_kernel(workload, dtype, target, order)

    def time_kernel(self, workload, dtype, target, order):
        self.kernel.run()


class Throughput:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 1200

    def setup(self, workload, dtype, target, order):
        native(target)
        self.record = measured(workload, dtype, target, order)

    def track_gflops(self, *params):
        return float(self.record["gflops"])

    track_gflops.unit = "GFLOP/s"

    def track_latency_median(self, *params):
        """Median of TVM's time_evaluator repeats, in seconds."""
        return float(self.record["latency_s"])

    track_latency_median.unit = "seconds"
