"""A peer for latency: the same layer run by PyTorch on the same device, in the same dtype.

Users ask whether a TVM kernel is any good; PyTorch (oneDNN on the CPU, cuDNN/cuBLAS on the GPU)
is the usual yardstick. A workload's op chain is rebuilt with ``torch.nn.functional`` on the
workload's own inputs (NHWC data as channels-last tensors, so no layout conversion is timed) and
timed on every run, as TVM's kernel is; a run keeps the ratios (suite.core.runstore).

- On the CPU PyTorch runs eagerly, on all cores, timed with a wall clock.
- On the GPU the peer is a **CUDA-graph replay** of the chain (conv, bias add, relu: each op's
  kernel, captured once), timed with CUDA events, TF32 off (float32 is float32, as in TVM's
  kernels) and cuDNN's autotuner on (its algorithm search runs before the capture). Run eagerly,
  each op is a launch dispatched from Python: for GPU layers of a few microseconds that dispatch is
  most of the time (on an H100 every ResNet-50 layer took 24-140 us eagerly, nearly whatever its
  size), so the eager figure measures Python, not cuDNN. It is kept beside the graph's, labelled
  ``eager``.

Conv2d and dense (matmul) chains have a peer; other workloads are skipped with that reason.
"""

from __future__ import annotations

import importlib.util
import os
import time

import numpy as np

from suite import cache
from suite.core import run_place, runstore, workloads
from suite.errors import Skipped
from suite.targets.cuda import gpu_info
from suite.targets.llvm import host_cpu_model

#: Timed runs per peer measurement (median reported), after warm-up runs.
REPEATS = 7
WARMUP = 2
PEER_OPS = ("conv2d", "matmul")


class NoPeer(Skipped):
    """No PyTorch peer for this combination (the reason is recorded as a skip)."""


def available() -> bool:
    return importlib.util.find_spec("torch") is not None


def _torch(device: str = "cpu"):
    if not available():
        raise NoPeer("PyTorch is not installed (pip install torch: the CPU build)")
    import torch

    if device == "cuda":
        if not torch.cuda.is_available():
            raise NoPeer("this PyTorch sees no CUDA GPU (a CPU build, or no GPU)")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    return torch


def _to_torch_layout(array: np.ndarray, torch, layout: str, device: str):
    """An NHWC (or NCHW) array as an NCHW-shaped tensor; NHWC data stays channels-last in memory."""
    tensor = torch.from_numpy(np.ascontiguousarray(array)).to(device)
    if tensor.dim() == 4 and layout == "NHWC":
        return tensor.permute(0, 3, 1, 2)
    return tensor


def _layer(workload, inputs, torch, device: str = "cpu"):
    """A function running the workload's op chain in PyTorch, and the layout of its output."""
    steps = workload.chain["steps"]
    if steps[0]["op"] not in PEER_OPS:
        raise NoPeer(f"no PyTorch peer for {steps[0]['op']} (conv2d and dense layers only)")
    functional = torch.nn.functional
    layout = steps[0]["attrs"].get("data_layout", "NC")
    tensors = [_to_torch_layout(a, torch, layout, device) for a in inputs]
    if steps[0]["op"] == "conv2d":
        attrs = steps[0]["attrs"]
        weight = torch.from_numpy(inputs[steps[0]["args"][1][1]]).to(device)
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


def pytorch_output(workload_id: str, dtype: str, device: str = "cpu", graph: bool = False) -> np.ndarray:
    """PyTorch's result for the workload, in the workload's layout (for checking the peer); with
    ``graph``, from a replay of the CUDA graph the GPU peer times."""
    torch = _torch(device)
    workload = workloads.get(workload_id)
    run, layout = _layer(workload, workloads.make_inputs(workload, dtype), torch, device)
    with torch.inference_mode():
        out = _captured(run, torch)() if graph else run()
    if out.dim() == 4 and layout == "NHWC":
        out = out.permute(0, 2, 3, 1)
    return out.contiguous().cpu().numpy()


def pytorch_latency(workload_id: str, dtype: str, device: str = "cpu") -> dict:
    """Median seconds per run of the workload in PyTorch on this CPU or GPU, timed now (like TVM's
    latency, afresh on every run: a ratio of two timings taken together is not moved by the load
    of the machine as much as either timing is).

    ``latency_s`` is the peer: a CUDA-graph replay on the GPU, the eager chain on the CPU
    (``timed_as`` says which); ``eager_latency_s`` is the eager chain on either."""
    workload = workloads.get(workload_id)
    if not available():
        raise NoPeer("PyTorch is not installed (pip install torch: the CPU build)")
    if workload.chain["steps"][0]["op"] not in PEER_OPS:  # known without importing torch
        raise NoPeer(f"no PyTorch peer for {workload.chain['steps'][0]['op']} (conv2d and dense layers only)")
    torch = _torch(device)
    run, _ = _layer(workload, workloads.make_inputs(workload, dtype), torch, device)
    try:
        with torch.inference_mode():
            if device == "cuda":
                eager = _time_cuda(run, torch)
                graph = _time_cuda(_captured(run, torch), torch)
            else:
                eager = graph = _time_cpu(run, torch)
    except RuntimeError as err:  # e.g. an op PyTorch has no kernel for in this dtype on the CPU
        raise NoPeer(f"PyTorch cannot run it: {str(err).splitlines()[0]}") from None
    return {"latency_s": float(np.median(graph)), "samples_s": graph,
            "timed_as": "cuda-graph replay" if device == "cuda" else "eager",
            "eager_latency_s": float(np.median(eager)), "eager_samples_s": eager,
            "torch": torch.__version__, "device": device, **_processor(device)}


def _captured(run, torch):
    """``run`` captured once as a CUDA graph; the returned function replays it and returns the
    output (a tensor of the graph's own memory). Warm-up runs on a side stream first, as capture
    requires, so cuDNN's algorithm search is done before capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = run()

    def replay():
        graph.replay()
        return output

    return replay


def _processor(device: str) -> dict:
    if device == "cuda":
        return {"device": "cuda", **(gpu_info() or {})}
    return {"cpu": host_cpu_model(), "threads": os.cpu_count()}


def _time_cpu(run, torch) -> list[float]:
    torch.set_num_threads(os.cpu_count() or 1)  # TVM's kernels use every core too
    for _ in range(WARMUP):
        run()
    samples = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return samples


def _time_cuda(run, torch) -> list[float]:
    """Seconds per run from CUDA events; each sample spans at least 20 ms of runs, like TVM's."""
    for _ in range(WARMUP):  # the first runs include cuDNN's algorithm search
        run()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    stop.record()
    stop.synchronize()
    number = max(1, int(20.0 / max(start.elapsed_time(stop), 1e-3)))
    samples = []
    for _ in range(REPEATS):
        start.record()
        for _ in range(number):
            run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / 1e3 / number)
    return samples


def latency_ratios(combo, latency_s: float) -> dict:
    """TVM's latency over PyTorch's for the same layer, dtype and device, PyTorch timed now:
    ``ratio`` against the peer (a CUDA-graph replay on the GPU), ``eager_ratio`` against the eager
    chain. NoPeer when the target has no peer device or PyTorch cannot run the layer."""
    device = combo.target.peer_device
    if device is None:
        raise NoPeer(f"no PyTorch peer on {combo.target.name}")
    if combo.dtype in workloads.INTEGER_DTYPES:
        raise NoPeer(f"no PyTorch peer for {combo.dtype} (its quantized layers are other operators)")
    peer = pytorch_latency(combo.workload.id, combo.dtype, device)
    return {"ratio": latency_s / peer["latency_s"], "eager_ratio": latency_s / peer["eager_latency_s"]}


def ratios_for_asv(combo, latency_s: float) -> dict:
    """This run's peer ratios of ``combo``: those its run keeps (see suite.core.runstore; `tvm-suite
    run` times both before asv runs, so asv's processes need not import torch), else taken now and
    kept there."""
    found = run_place.current()
    if found is not None and (kept := runstore.own_ratios(found, combo.ids)) is not None:
        return kept
    ratios = latency_ratios(combo, latency_s)
    if found is not None:
        save_ratios(found, combo, ratios)
    return ratios


def save_ratios(place, combo, ratios: dict) -> None:
    cache.write_json(place.file(run_place.relative("peers", combo.ids)), ratios)
