"""A peer for latency: the same layer run by PyTorch on the same CPU, in the same dtype.

Users ask whether a TVM kernel is any good; PyTorch (oneDNN on the CPU) is the usual yardstick.
A workload's op chain is rebuilt with ``torch.nn.functional`` on the workload's own inputs
(NHWC data as channels-last tensors, so no layout conversion is timed), timed on all cores,
and cached per workload, dtype, PyTorch version and CPU. Conv2d and dense (matmul) chains have
a peer; other workloads are skipped with that reason.
"""

from __future__ import annotations

import importlib.util
import os
import time

import numpy as np

from suite import cache, workloads
from suite.targets.llvm import host_cpu_model

#: Timed runs per peer measurement (median reported), after warm-up runs.
REPEATS = 7
WARMUP = 2
PEER_OPS = ("conv2d", "matmul")


class NoPeer(Exception):
    """No PyTorch peer for this combination (the reason is recorded as a skip)."""


def available() -> bool:
    return importlib.util.find_spec("torch") is not None


def _torch():
    if not available():
        raise NoPeer("PyTorch is not installed (pip install torch: the CPU build)")
    import torch

    return torch


def _to_torch_layout(array: np.ndarray, torch, layout: str):
    """An NHWC (or NCHW) array as an NCHW-shaped tensor; NHWC data stays channels-last in memory."""
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if tensor.dim() == 4 and layout == "NHWC":
        return tensor.permute(0, 3, 1, 2)
    return tensor


def _layer(workload, inputs, torch):
    """A function running the workload's op chain in PyTorch, and the layout of its output."""
    steps = workload.chain["steps"]
    if steps[0]["op"] not in PEER_OPS:
        raise NoPeer(f"no PyTorch peer for {steps[0]['op']} (conv2d and dense layers only)")
    functional = torch.nn.functional
    layout = steps[0]["attrs"].get("data_layout", "NC")
    tensors = [_to_torch_layout(a, torch, layout) for a in inputs]
    if steps[0]["op"] == "conv2d":
        attrs = steps[0]["attrs"]
        weight = torch.from_numpy(inputs[steps[0]["args"][1][1]])
        weight = weight.permute(3, 2, 0, 1).contiguous() if attrs["kernel_layout"] == "HWIO" else weight
        top, left, bottom, right = attrs["padding"]
        if (top, left) != (bottom, right):
            raise NoPeer("asymmetric padding has no single PyTorch conv2d")
        tensors[steps[0]["args"][1][1]] = weight.to(memory_format=torch.channels_last)

    def run():
        values = []
        for step in steps:
            args = [tensors[i] if kind == "input" else values[i] for kind, i in step["args"]]
            if step["op"] == "conv2d":
                a = step["attrs"]
                values.append(functional.conv2d(args[0], args[1], stride=a["strides"],
                                                padding=a["padding"][:2], dilation=a["dilation"]))
            elif step["op"] == "matmul":
                values.append(torch.matmul(args[0], args[1]))
            elif step["op"] == "add":
                values.append(args[0] + args[1])
            elif step["op"] == "relu":
                values.append(torch.relu(args[0]))
            else:
                raise NoPeer(f"no PyTorch peer for an op chain containing {step['op']}")
        return values[-1]

    return run, layout


def pytorch_output(workload_id: str, dtype: str) -> np.ndarray:
    """PyTorch's result for the workload, in the workload's layout (for checking the peer)."""
    torch = _torch()
    workload = workloads.get(workload_id)
    run, layout = _layer(workload, workloads.make_inputs(workload, dtype), torch)
    with torch.inference_mode():
        out = run()
    if out.dim() == 4 and layout == "NHWC":
        out = out.permute(0, 2, 3, 1)
    return out.contiguous().numpy()


def pytorch_latency(workload_id: str, dtype: str) -> dict:
    """Median seconds per run of the workload in PyTorch on this CPU (cached)."""
    torch = _torch()
    workload = workloads.get(workload_id)
    key = {"workload": workload_id, "chain": cache.digest(workload.chain), "dtype": dtype,
           "torch": torch.__version__, "cpu": host_cpu_model(), "threads": os.cpu_count()}
    path = cache.entry("peer", f"pytorch-{workload_id}-{dtype}", key) / "peer.json"
    stored = cache.read_json(path)
    if stored is not None:
        return stored
    run, _ = _layer(workload, workloads.make_inputs(workload, dtype), torch)
    torch.set_num_threads(os.cpu_count() or 1)  # TVM's kernels use every core too
    samples = []
    try:
        with torch.inference_mode():
            for _ in range(WARMUP):
                run()
            for _ in range(REPEATS):
                started = time.perf_counter()
                run()
                samples.append(time.perf_counter() - started)
    except RuntimeError as err:  # e.g. an op PyTorch has no kernel for in this dtype on the CPU
        raise NoPeer(f"PyTorch cannot run it: {str(err).splitlines()[0]}") from None
    result = {"latency_s": float(np.median(samples)), "samples_s": samples, "torch": torch.__version__}
    cache.write_json(path, result)
    return result
