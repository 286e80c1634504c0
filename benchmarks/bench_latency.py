"""Latency of every workload's kernel on native targets: the median of this run's time_evaluator
samples (suite.core.timing; taken afresh on every run) and the throughput it gives."""

from .common import ComboBenchmark, safe_import

timing = safe_import("suite.core.timing")


class Throughput(ComboBenchmark):
    need = "LATENCY"

    def read(self):
        latency = timing.for_asv(self.combo).median
        return {"latency": latency, "gflops": timing.gflops(self.combo, latency)}
