"""The cuda target: the NVIDIA GPU of this machine, as TVM sees it.

- The TVM target comes from the device (``Target.from_device``: compute capability, shared
  memory, threads per block), with the llvm host.
- ``default`` is scheduled by dlight's default GPU rules, the rules Relax's CUDA pipeline applies
  (Matmul, GEMV, Reduction, GeneralReduction, Fallback); ``tuned`` replays MetaSchedule records
  tuned on a GPU (``suite/tuning_records/cuda/``). The CPU loop orders (``seed-swap``,
  ``reduction-outer``, ``seed-tuned``) leave every loop unbound to GPU threads, so they are skips.
- TVM compiles the kernels with NVRTC (``TVM_CUDA_COMPILE_MODE``, TVM's default) into the exported
  library; ``time_evaluator`` times them with CUDA events on the GPU.
- Without a GPU (CI, most machines) every combination is skipped with that reason.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from suite.compat import runtime, schedules
from suite.errors import TargetUnavailable
from suite.targets.base import ModuleKernel, Target


@lru_cache(maxsize=None)
def gpu_info() -> dict | None:
    """Name, compute capability and driver of GPU 0 from nvidia-smi (None without a GPU).

    Read without importing TVM, so that cached measurements are looked up cheaply.
    """
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader", "-i", "0"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    parts = [p.strip() for p in out.split(",")]
    if len(parts) != 3:
        return None
    return {"gpu": parts[0], "compute_capability": parts[1], "driver": parts[2]}


class CUDATarget(Target):
    name = "cuda"
    orders = ("default", "tuned")
    orders_note = "it is a CPU loop order, whose loops would stay unbound to GPU threads"
    exclusive = True
    peer_device = "cuda"

    def __init__(self):
        self._target = None

    def unavailable(self) -> str | None:
        if gpu_info() is None:
            return "no NVIDIA GPU on this machine (nvidia-smi finds none)"
        return None

    def identity(self) -> dict:
        return {"target": self.name, **(gpu_info() or {})}

    def device(self):
        device = runtime.cuda_device()
        if not device.exist:
            raise TargetUnavailable("TVM sees no CUDA device (is this TVM built with CUDA?)")
        return device

    def tvm_target(self):
        """The GPU's own target (its compute capability), hosted by llvm; detected once."""
        if self._target is None:
            self._target = runtime.target_from_device(self.device(), host={"kind": "llvm"})
        return self._target

    def prepare(self, func, order: str):
        """``func`` bound to GPU threads: dlight's rules for ``default``; a tuned trace binds itself."""
        self.check_order(order)
        if order == "default":
            return schedules.dlight_default_schedule(func, self.tvm_target())
        return func

    def order_as_written(self, func) -> str:
        return "tuned" if _binds_threads(func) else "default"

    def load(self, path: Path, inputs, output_shape, dtype) -> ModuleKernel:
        return ModuleKernel(runtime.load_module(path), self.device(), inputs, output_shape, dtype,
                            synchronize=True)


def _binds_threads(func) -> bool:
    """Whether a loop of ``func`` is bound to GPU threads (it is scheduled for a GPU already)."""
    pending = [func.body]
    while pending:
        node = pending.pop()
        kind = type(node).__name__
        if kind == "For" and int(node.kind) == 4:  # ForKind.THREAD_BINDING
            return True
        if kind == "SeqStmt":
            pending.extend(node.seq)
        elif kind in ("BlockRealize", "SBlockRealize"):
            pending.append(node.block)
        elif kind == "IfThenElse":
            pending.extend(n for n in (node.then_case, node.else_case) if n is not None)
        else:
            pending.extend(n for n in (getattr(node, "init", None), getattr(node, "body", None)) if n is not None)
    return False
