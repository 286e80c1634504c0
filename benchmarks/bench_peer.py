"""TVM's latency as a ratio to PyTorch's for the same layer, dtype and device (skipped without PyTorch
or a peer device)."""

from .common import ComboBenchmark, safe_import

peers = safe_import("suite.core.peers")


class PyTorchPeer(ComboBenchmark):
    need = "LATENCY"

    def read(self):
        return {"ratio": peers.latency_ratio(self.combo, self.record)}
