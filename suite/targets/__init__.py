"""Targets: one module per target family, each a :class:`suite.targets.base.Target`.

``llvm`` (this CPU), ``llvm-avx512bf16`` (this CPU, bfloat16 with its AVX-512 BF16 asked for),
``hexagon-v68``/``-v69``/``-v73`` (compile-only), ``hexagon-v68-emu`` (emulated, HVX floating point
off), ``hexagon-v68-qf``/``-v73-qf`` (emulated, HVX qfloat on the suite's model),
``hexagon-v68-qemu`` (a user's qfloat-capable QEMU), ``cuda`` (the NVIDIA GPU, where there is one).
"""

from __future__ import annotations

from suite.errors import UserError
from suite.targets import hexagon, hexagon_qf, llvm
from suite.targets.base import Mode, Target
from suite.targets.cuda import CUDATarget
from suite.targets.llvm import LLVMTarget

_TARGETS: dict[str, Target] = {t.name: t for t in (LLVMTarget(), llvm.LLVMNativeBf16Target(), *hexagon.all_targets(),
                                                   *hexagon_qf.all_targets(), CUDATarget())}

__all__ = ["Mode", "Target", "UnknownTarget", "get", "names"]


class UnknownTarget(UserError, ValueError):
    """A target name the suite does not know; the message lists the valid ones."""


def names() -> list[str]:
    return list(_TARGETS)


def get(name: str) -> Target:
    try:
        return _TARGETS[name]
    except KeyError:
        raise UnknownTarget(f"unknown target {name!r}; valid targets: {', '.join(names())}") from None
