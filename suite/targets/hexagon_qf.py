"""Executed Hexagon targets that run TVM's real HVX qfloat code.

- ``hexagon-v68-qf`` (and ``hexagon-v73-qf``): the workload built exactly as ``hexagon-v68``
  (``-v73``) builds it (TVM's tag flags, HVX qfloat on, ``-hexagon-autohvx=1``); each HVX
  floating-point instruction LLVM emitted, and only those, replaced by a call into the suite's own
  qfloat model (:mod:`suite.targets.hvx_rewrite`, :mod:`suite.targets.qfloat`), keeping VLIW packet
  semantics; everything else (integer HVX, loads and stores, scalar code) runs as emitted, on a
  ``qemu-hexagon`` that knows the CPU (Debian bookworm-backports' 10.0.2, or newer). No released
  QEMU executes HVX floating point, hence the model.
- ``hexagon-v68-qemu``: the same v68 ELF, unmodified, on a qemu-hexagon that executes HVX
  floating point itself (Qualcomm's downstream QEMU, say), named by ``TVM_SUITE_QEMU_HEXAGON``
  (its CPU by ``TVM_SUITE_QEMU_HEXAGON_CPU``, default v68). Without it, skipped with that reason;
  pointed at one without HVX floating point, the run fails naming the instruction it could not
  execute. Comparing it with ``hexagon-v68-qf`` bit for bit checks the model.

Their times are emulated seconds (``emulated_s``), never hardware latency.

``hexagon-v68-qf`` (and ``-v73-qf``) can be tuned: MetaSchedule with TVM's Hexagon rules, each
candidate built as above and run under the emulator (:mod:`suite.targets.hexagon_tune`; the
measure is the packets the kernel executes, a lower bound of a Hexagon's cycles, with the emulator's
CPU seconds kept beside them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from suite import cache, floats
from suite.compat import build as compat_build
from suite.targets import hexagon, hexagon_tune, hvx_toolchain
from suite.targets.base import Mode, NotTunable

QEMU_ENV, QEMU_CPU_ENV = "TVM_SUITE_QEMU_HEXAGON", "TVM_SUITE_QEMU_HEXAGON_CPU"
#: TVM's HVX dot product, ``vrmpy`` (``Vx.w += vrmpy(Vu.ub, Vv.b)``): 32 int32 lanes, each adding 4
#: uint8 x int8 products (tvm.s_tir.tensor_intrin.hexagon's VRMPY_u8i8i32_INTRIN; the issue's
#: ``dot_product_32x4_u8i8i32_vrmpy`` is the name of the function that implements it).
VRMPY_INTRINSIC = "dot_32x4_u8i8i32_vrmpy"
#: Why bfloat16 is not run on v73, whose HVX has bf16 (vmpy Vdd.sf = (Vu.bf, Vv.bf) ...), as measured
#: with TVM 0.27 (docs/bfloat16.md; tests/test_bfloat16_hexagon.py checks it still holds).
BF16_NOT_EMITTED = ("TVM emits no HVX bf16 instruction for it: it legalizes bfloat16 to float32 before LLVM (whose IR "
                    "then has no bfloat type), so a +hvxv73 build of ResNet-18's 21 workloads holds 0 .bf "
                    "instructions of 138,658: float32 arithmetic (scalar sfmpy multiply-adds, HVX sf adds through "
                    "qf32, sf max) and integer shifts for the conversions (docs/bfloat16.md)")
_SOURCES = (hexagon.HARNESS_SOURCE, *hvx_toolchain.MODEL_SOURCES, hvx_toolchain.VECTOR_SOURCE, *hvx_toolchain.REWRITER)


@lru_cache(maxsize=None)
def emulator_cpus(emulator: str) -> frozenset[str]:
    """The CPUs ``emulator -cpu help`` lists (empty when it cannot be run)."""
    try:
        out = subprocess.run([emulator, "-cpu", "help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in out.splitlines() if line.strip().startswith("v"))


class _BuiltLikeTheTag(hexagon.HexagonTarget):
    """The compile-only target's build (object + assembly), linked into an ELF that runs."""

    mode = Mode.EMULATED

    def _build_object(self, func, path: Path) -> str:
        return hvx_toolchain.emit_object_and_assembly(compat_build.build(func, self.tvm_target()), path)


class HexagonQfTarget(_BuiltLikeTheTag):
    """TVM's qfloat code, its HVX FP instructions run on the suite's qfloat model; its IEEE twin
    runs the same ELF with the model computing IEEE arithmetic instead (:mod:`suite.targets.ieee_twin`)."""

    tuning_measure = "packets"
    ieee_twin = True
    #: int8 runs as integer HVX, which QEMU executes itself (no instruction of it is rewritten)
    dtypes = ("float32", "float16", "int8")

    @property
    def records_from(self) -> tuple[str, ...]:
        """Its own records first (tuned under the emulator), then hexagon-v68-qf's, then llvm's."""
        return tuple(dict.fromkeys((self.name, *super().records_from)))

    def tuning_target(self):
        """TVM's ``qcom/hexagon-<arch>`` target (kind ``hexagon``: its MetaSchedule rules, VTCM
        capacity, 4 cores) with this target's LLVM options; candidates are built with
        :meth:`tvm_target` all the same (:mod:`suite.targets.hexagon_tune`)."""
        if reason := self.unavailable():
            raise NotTunable(f"{self.name} cannot be tuned here: {reason}")
        return compat_build.hexagon_tag_target(f"qcom/hexagon-{self.arch}", self.llvm_options)

    def tuning_options(self, inputs=None, output_shape=None, dtype=None, check=None, dot_product=None) -> dict:
        return hexagon_tune.tuning_options(self, inputs, output_shape, dtype, check, dot_product)

    def dot_product_choice(self, cpu_flags=None):
        """The dot-product intrinsic an int8 tuning offers MetaSchedule: HVX's ``vrmpy`` (uint8 x int8
        -> int32, 32 lanes of 4), which every HVX version has (``cpu_flags``, the host's, play no part)."""
        from suite.targets.llvm import DotProductChoice

        return DotProductChoice(VRMPY_INTRINSIC, "vrmpy", f"HVX ({self.arch}) has vrmpy, uint8 x int8 -> int32")

    def dtype_unavailable(self, dtype: str) -> str | None:
        if dtype == floats.BFLOAT16 and self.arch == "v73":  # the HVX version that has bf16
            return f"{self.name} does not run bfloat16: {BF16_NOT_EMITTED}"
        return super().dtype_unavailable(dtype)

    def unavailable(self) -> str | None:
        if reason := hexagon.missing_tools_reason(what=self.name):
            return reason
        if hexagon.objdump() is None:
            return f"{self.name} needs llvm-objdump (on Debian: apt-get install llvm)"
        if self.arch not in emulator_cpus(shutil.which("qemu-hexagon")):
            return (f"{self.name} needs a qemu-hexagon that knows CPU {self.arch} (QEMU 10 or newer: "
                    "apt-get install -t bookworm-backports qemu-user)")
        return None

    def identity(self) -> dict:
        return {**super().identity(), "model": {p.name: cache.source_digest(p) for p in _SOURCES},
                "emulator": "qemu-hexagon"}

    def build(self, func, path: Path) -> None:
        """Object and assembly as the tag builds them; the rewritten, linked ELF beside them."""
        hexagon.require_tools(("clang", "ld.lld"), self.name)
        asm = self._build_object(func, path)
        stats = hvx_toolchain.build_qfloat_elf(asm, path.with_suffix(".elf"), self.arch, tvm_object=path)
        cache.write_json(path.with_suffix(".rewrite.json"), stats)

    def codegen_metrics(self, path: Path) -> dict:
        stats = cache.read_json(path.with_suffix(".rewrite.json")) or {}
        return {**hexagon.codegen_metrics(path, path.with_suffix(".s")),
                "rewritten": stats.get("instructions", 0), "rewritten_forms": stats.get("rewritten", {})}

    def load(self, path, inputs, output_shape, dtype, ieee_twin=False):
        hexagon.require_tools(("qemu-hexagon",), self.name)
        return hexagon.EmulatedKernel(Path(path).with_suffix(".elf"), inputs, output_shape, dtype,
                                      emulator=("qemu-hexagon", "-cpu", self.arch), ieee_twin=ieee_twin)

    def load_ieee_twin(self, path, inputs, output_shape, dtype):
        return self.load(path, inputs, output_shape, dtype, ieee_twin=True)


class HexagonQemuTarget(_BuiltLikeTheTag):
    """TVM's qfloat code, unmodified, on a user's qemu-hexagon that executes HVX floating point."""

    def emulator(self) -> tuple[str, ...] | None:
        binary = os.environ.get(QEMU_ENV)
        return (binary, "-cpu", os.environ.get(QEMU_CPU_ENV) or self.arch) if binary else None

    def unavailable(self) -> str | None:
        emulator = self.emulator()
        if emulator is None:
            return (f"{self.name} runs on a qemu-hexagon that executes HVX floating point itself: set "
                    f"{QEMU_ENV} to it (and {QEMU_CPU_ENV}, default {self.arch}); no released QEMU does")
        if shutil.which(emulator[0]) is None:
            return f"{QEMU_ENV}={emulator[0]} is not an executable file"
        return hexagon.missing_tools_reason(("clang", "ld.lld"), self.name)

    def identity(self) -> dict:
        return {**super().identity(), "harness": cache.source_digest(hexagon.HARNESS_SOURCE),
                **hexagon.emulator_identity(self.emulator() or ("none",))}

    def build(self, func, path: Path) -> None:
        hexagon.require_tools(("clang", "ld.lld"), self.name)
        self._build_object(func, path)
        harness = hexagon.harness_object(self.arch)
        cache.write_file(path.with_suffix(".elf"), lambda tmp: hexagon.link([path, harness], Path(tmp)))

    def load(self, path, inputs, output_shape, dtype):
        return hexagon.EmulatedKernel(Path(path).with_suffix(".elf"), inputs, output_shape, dtype,
                                      emulator=self.emulator())


def all_targets() -> list:
    v68, v73 = hexagon.all_targets()[0], hexagon.all_targets()[2]
    return [HexagonQfTarget("hexagon-v68-qf", "v68", v68.mattr, v68.llvm_options),
            HexagonQfTarget("hexagon-v73-qf", "v73", v73.mattr, v73.llvm_options),
            HexagonQemuTarget("hexagon-v68-qemu", "v68", v68.mattr, v68.llvm_options)]
