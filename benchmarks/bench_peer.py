"""TVM's latency as a ratio to PyTorch's for the same layer, dtype and device (skipped without PyTorch
or a peer device): against the peer (a CUDA-graph replay on the GPU) and against the eager chain."""

from .common import ComboBenchmark, safe_import

peers = safe_import("suite.core.peers")
timing = safe_import("suite.core.timing")


class PyTorchPeer(ComboBenchmark):
    need = "LATENCY"

    @staticmethod
    def runs_here() -> bool:
        return peers is not None and peers.available()

    def read(self):
        # The run keeps the ratios as "ratio" and "eager_ratio" (suite.core.runstore's peers/ files).
        ratios = peers.ratios_for_asv(self.combo, timing.for_asv(self.combo).median)
        return {"peer_ratio": ratios["ratio"], "peer_ratio_eager": ratios["eager_ratio"]}
