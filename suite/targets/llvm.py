"""The llvm CPU target, tuned to the host CPU (``mcpu`` from LLVM's view of this machine)."""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from pathlib import Path

from suite import compat
from suite.targets.base import ModuleKernel, Target


@lru_cache(maxsize=None)
def host_cpu_model() -> str:
    """The CPU model name of this machine (from /proc/cpuinfo, else the platform)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class LLVMTarget(Target):
    name = "llvm"
    peer_device = "cpu"

    def tvm_target(self):
        return compat.make_target({"kind": "llvm", "mcpu": compat.host_cpu()})

    def tuning_target(self):
        """The host CPU with its core count."""
        return compat.make_target(
            {"kind": "llvm", "mcpu": compat.host_cpu(), "num-cores": os.cpu_count() or 1}
        )

    def identity(self) -> dict:
        return {"target": self.name, "cpu": host_cpu_model()}

    def load(self, path: Path, inputs, output_shape, dtype) -> ModuleKernel:
        return ModuleKernel(compat.load_module(path), compat.cpu_device(), inputs, output_shape, dtype)
