"""Tensor intrinsics across TVM releases: TVM's own registered once, and the suite's VNNI int8
dot product of 64 lanes, by name."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import sys
from functools import lru_cache

from suite.compat.release import schedule_namespace, tvm


def register_tensor_intrinsics(names=None) -> None:
    """Register the tensor intrinsics ``names`` (those a tensorizing trace names; None: all): the
    suite's own (:data:`VNNI_I8X64_INTRIN`) alone where they are all it needs, else TVM's too
    (``wmma_*``, ``mma_*``, ``dot_16x4_*``...). TVM's cost more: it parses every intrinsic's
    TVMScript (about 4 CPU-seconds), so only traces that use them pay for it."""
    names = None if names is None else set(names)
    if names is None or VNNI_I8X64_INTRIN in names:
        _register_vnni_i8x64()
    if names is None or names - {VNNI_I8X64_INTRIN}:
        register_tvm_tensor_intrinsics()


@lru_cache(maxsize=None)
def register_tvm_tensor_intrinsics() -> None:
    # TVMScript's parser takes inspect.stack() for each of the hundreds of intrinsics it parses, and
    # inspect looks the module of each frame up by its file: a frame of a frozen module (the import
    # machinery's own, "<frozen importlib._bootstrap>") names no file of any module, so every lookup
    # scans every loaded module (20 of the 24 CPU-seconds of the import, measured in a plain process).
    # Those files named as their modules' for the import, the frames read as before (no source), at once.
    frozen = {}
    for name, module in list(sys.modules.items()):
        if getattr(getattr(module, "__spec__", None), "origin", None) == "frozen":
            for file in (f"<frozen {module.__name__}>", f"<frozen {name}>"):
                if file not in inspect.modulesbyfile:
                    frozen.setdefault(file, name)
    inspect.modulesbyfile.update(frozen)
    # TVMScript's decorators read of inspect.stack() only each frame, its file, line and function, and
    # the source line of one frame, to see whether the function is defined in a class (no tensor
    # intrinsic is): inspect's reading of every frame's source file, 60% of what is left, is skipped.
    full_stack, inspect.stack = inspect.stack, _frames_without_source
    try:
        importlib.import_module(schedule_namespace().__name__ + ".tensor_intrin")
    finally:
        inspect.stack = full_stack
        for file in frozen:
            inspect.modulesbyfile.pop(file, None)


def _frames_without_source(context: int = 1) -> list:
    """``inspect.stack()`` of the caller without the source lines (``code_context`` None)."""
    frame, frames = sys._getframe(1), []
    while frame is not None:
        frames.append(inspect.FrameInfo(frame, frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name,
                                        None, None))
        frame = frame.f_back
    return frames

#: The suite's VNNI dot product (uint8 x int8 -> int32, 16 lanes of 4): what TVM's ``dot_16x4_vnni``
#: computes, with the operands LLVM's ``llvm.x86.avx512.vpdpbusd.512`` takes since LLVM 22 (the 0.27
#: wheel's): <64 x i8>. TVM 0.27's own passes <16 x i32>, which LLVM 22 refuses ("Intrinsic has
#: incorrect argument type"), so that no kernel tensorized with it builds.
VNNI_I8X64_INTRIN = "tvm_suite_dot_16x4_vnni_i8x64"


def dot_product_intrinsic_name(intrinsic: str | None) -> str | None:
    """The registered tensor intrinsic that does what TVM's ``intrinsic`` does on the installed
    TVM's LLVM, registered: :data:`VNNI_I8X64_INTRIN` for ``dot_16x4_vnni`` from LLVM 22 on, else
    TVM's own."""
    if intrinsic is None:
        return None
    if intrinsic == "dot_16x4_vnni" and int(tvm().target.codegen.llvm_version_major()) >= 22:
        _register_vnni_i8x64()
        return VNNI_I8X64_INTRIN
    register_tvm_tensor_intrinsics()
    return intrinsic


@lru_cache(maxsize=None)
def _register_vnni_i8x64() -> None:
    tvm()
    from tvm.script import tirx as T  # 0.27's TVMScript (s_tir blocks)

    @T.prim_func(s_tir=True)
    def description(a: T.Buffer((4,), "uint8", offset_factor=1), b: T.Buffer((16, 4), "int8", offset_factor=1),
                    c: T.Buffer((16,), "int32", offset_factor=1)) -> None:
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            for i, k in T.grid(16, 4):
                with T.sblock("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    c[vi] = c[vi] + T.cast(a[vk], "int32") * T.cast(b[vi, vk], "int32")

    @T.prim_func(s_tir=True)
    def implementation(a: T.Buffer((4,), "uint8", offset_factor=1), b: T.Buffer((16, 4), "int8", offset_factor=1),
                       c: T.Buffer((16,), "int32", offset_factor=1)) -> None:
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            # a's 4 bytes in every 32-bit lane; b's 16 rows of 4 bytes as they lie
            c[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), c.vload([0], "int32x16"),
                T.reinterpret(T.broadcast(T.reinterpret(a.vload([0], "uint8x4"), dtype="int32"), 16), dtype="int8x64"),
                b.vload([0, 0], "int8x64"), dtype="int32x16")

    schedule_namespace().TensorIntrin.register(VNNI_I8X64_INTRIN, description, implementation)
