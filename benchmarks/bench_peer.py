"""TVM's latency as a ratio to PyTorch's for the same layer, dtype and device (skipped without PyTorch)."""

from .common import PARAM_NAMES, PARAMS, measured, not_imported, safe_import

peers = safe_import("suite.peers")


class PyTorchPeer:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 1200

    def setup(self, workload, dtype, target, order):
        if peers is None:
            raise not_imported()
        if not peers.available():
            raise NotImplementedError("PyTorch is not installed")
        device = peers.DEVICE_OF_TARGET.get(target)
        if device is None:
            raise NotImplementedError(f"no PyTorch peer on {target} (peers: {', '.join(peers.DEVICE_OF_TARGET)})")
        record = measured(workload, dtype, target, order)
        try:
            self.ratio = record["latency_s"] / peers.pytorch_latency(workload, dtype, device)["latency_s"]
        except peers.NoPeer as err:
            raise NotImplementedError(str(err)) from None

    def track_latency_ratio_to_pytorch(self, *params):
        """TVM latency / PyTorch latency: below 1 TVM is faster."""
        return float(self.ratio)

    track_latency_ratio_to_pytorch.unit = "ratio"
