"""Latency of every workload's kernel on native targets: asv times the call; TVM's own median and
the throughput it gives are tracked beside it."""

from .common import ComboBenchmark, measurement


class KernelTime(ComboBenchmark):
    need = "LATENCY"
    number = 1
    warmup_time = 0.1

    def setup(self, *params):
        super().setup(*params)
        self.kernel = measurement.load_kernel(self.combo)

    def time_kernel(self, *params):
        self.kernel.run()


class Throughput(ComboBenchmark):
    need = "LATENCY"
