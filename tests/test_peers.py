"""The PyTorch latency peer: it times the same layer (checked against the reference)."""

import numpy as np
import pytest

from suite.core import measurement, peers, workloads

pytestmark = pytest.mark.skipif(not peers.available(), reason="PyTorch is not installed")


@pytest.mark.parametrize("workload_id", ["resnet50.conv2d_add_radd_relu.56x56x64-k1s1-256",
                                         "resnet50.matmul_add.2048-1000"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_pytorch_computes_the_same_layer(workload_id, dtype):
    workload = workloads.get(workload_id)
    reference, magnitude = measurement.reference_arrays(workload, dtype)
    out = peers.pytorch_output(workload_id, dtype)
    assert out.shape == tuple(workload.output_shape) and out.dtype == np.dtype(dtype)
    # Same inputs, same ops: PyTorch's error stays within the worst-case rounding bound too.
    error = np.abs(out.astype(np.float64) - reference)
    assert np.all(error <= 2 * 2.0 ** -11 * (workload.chain["inputs"][1]["fan_in"] + 2) * magnitude + 1e-30)
    assert error.max() < (3e-3 if dtype == "float16" else 1e-5)


def test_latency_is_measured_afresh():
    first = peers.pytorch_latency("resnet50.matmul_add.2048-1000", "float32")
    assert first["latency_s"] > 0 and len(first["samples_s"]) == peers.REPEATS
    assert peers.pytorch_latency("resnet50.matmul_add.2048-1000", "float32")["samples_s"] != first["samples_s"]


def test_on_the_cpu_the_peer_is_the_eager_chain():
    timed = peers.pytorch_latency("resnet50.conv2d_add_relu.7x7x512-k3s1-512", "float32")
    assert timed["timed_as"] == "eager" and timed["device"] == "cpu"
    assert timed["eager_latency_s"] == timed["latency_s"] > 0


def test_workloads_without_a_peer_are_skipped_with_the_reason():
    with pytest.raises(peers.NoPeer, match="conv2d and dense layers only"):
        peers.pytorch_latency("resnet50.max_pool2d.112x112x64-k3s2", "float32")
