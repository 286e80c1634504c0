"""TVM's runtime across releases: devices (and the target of one), arrays copied to a device or
made empty there, a compiled module loaded."""

from __future__ import annotations

import os

from suite.compat.build import make_target
from suite.compat.release import tvm


def cpu_device():
    return tvm().cpu(0)


# ----------------------------------------------------------------------------- GPU


def cuda_device():
    return tvm().cuda(0)


def target_from_device(device, host: dict | None = None):
    """The target TVM detects for a device (for CUDA: arch, shared memory, threads per block)."""
    detected = tvm().target.Target.from_device(device)
    return tvm().target.Target(detected, host=make_target(host)) if host else detected


def to_device(array, device):
    """A runtime tensor on ``device`` holding ``array``."""
    runtime = tvm().runtime
    make = getattr(runtime, "tensor", None)
    if make is not None:
        return make(array, device)
    return tvm().nd.array(array, device)


def empty(shape, dtype: str, device):
    runtime = tvm().runtime
    make = getattr(runtime, "empty", None)
    if make is not None:
        return make(shape, dtype, device)
    return tvm().nd.empty(shape, dtype, device)


def load_module(path: os.PathLike):
    return tvm().runtime.load_module(str(path))
