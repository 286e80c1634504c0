"""The llvm CPU target, tuned to the host CPU (``mcpu`` from LLVM's view of this machine)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from suite import cache, compat


class Kernel:
    """A compiled workload bound to its inputs on a device, ready to run and time."""

    def __init__(self, module, device, inputs, output_shape, dtype, entry="main", synchronize=False):
        self.device = device
        self.synchronize = synchronize  # GPU launches return at once: run() waits for the kernel
        self.function = module[entry]
        self._module, self._entry = module, entry
        self.args = [compat.to_device(a, device) for a in inputs]
        self.result = compat.empty(tuple(output_shape), dtype, device)
        self.args.append(self.result)

    def run(self) -> None:
        self.function(*self.args)
        if self.synchronize:
            self.device.sync()

    def output(self) -> np.ndarray:
        self.run()
        return self.result.numpy()

    def time(self, repeat: int = 5, min_repeat_ms: int = 20) -> list[float]:
        """Seconds per run, one value per repeat, from TVM's own time_evaluator."""
        evaluator = self._module.time_evaluator(
            self._entry, self.device, number=1, repeat=repeat, min_repeat_ms=min_repeat_ms
        )
        return [float(t) for t in evaluator(*self.args).results]


def export_library(module, path: Path) -> None:
    """Write a built module as a shared library at ``path``, atomically."""
    cache.write_file(path, module.export_library)


def host_cpu_model() -> str:
    """The CPU model name of this machine (from /proc/cpuinfo, else the platform)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


class LLVMTarget:
    name = "llvm"
    executes = True

    def tvm_target(self):
        return compat.make_target({"kind": "llvm", "mcpu": compat.host_cpu()})

    def tuning_target(self):
        """The target MetaSchedule tunes for: the host CPU with its core count."""
        return compat.make_target(
            {"kind": "llvm", "mcpu": compat.host_cpu(), "num-cores": os.cpu_count() or 1}
        )

    def identity(self) -> dict:
        # Read without importing TVM, so cached measurements can be looked up cheaply.
        return {"target": self.name, "cpu": host_cpu_model()}

    def unavailable(self) -> str | None:
        return None

    def prepare(self, func, order: str):
        """Every loop order runs on the CPU as scheduled."""
        return func

    def build(self, func, path: Path) -> None:
        export_library(compat.build(func, self.tvm_target()), path)

    def load(self, path: Path, inputs, output_shape, dtype) -> Kernel:
        return Kernel(compat.load_module(path), compat.cpu_device(), inputs, output_shape, dtype)
