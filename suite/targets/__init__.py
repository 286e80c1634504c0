"""Targets: one module per target family, each able to build a PrimFunc and run it.

A target object has ``name``, ``identity()`` (what keys its builds in the cache),
``unavailable()`` (why it cannot run on this machine, or None), ``prepare(func, order)`` (the
target's own scheduling of a loop order, e.g. GPU thread binding), ``build(func, path)`` (compile
to a file) and ``load(path, inputs, output_shape, dtype)`` (a :class:`suite.targets.llvm.Kernel`-like
object with ``run()``, ``output()``, ``time()``).
"""

from __future__ import annotations

from suite.errors import UserError
from suite.targets import hexagon
from suite.targets.cuda import CUDATarget
from suite.targets.llvm import LLVMTarget

# Hexagon targets: compile-only (``executes = False``) and emulated (``emulated = True``); see hexagon.py.
# cuda runs only where a GPU is (``unavailable()`` says why not); see cuda.py.
_TARGETS = {target.name: target for target in (LLVMTarget(), *hexagon.all_targets(), CUDATarget())}


class UnknownTarget(UserError, ValueError):
    """A target name the suite does not know; the message lists the valid ones."""


def names() -> list[str]:
    return list(_TARGETS)


def get(name: str):
    try:
        return _TARGETS[name]
    except KeyError:
        raise UnknownTarget(f"unknown target {name!r}; valid targets: {', '.join(names())}") from None
