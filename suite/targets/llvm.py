"""The llvm CPU target, tuned to the host CPU (``mcpu`` from LLVM's view of this machine).

Within :func:`building_for` it builds for another machine's CPU and keys the cache on that
machine's CPU instead: a cluster worker building for its client (:mod:`suite.core.cluster`).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from suite.compat import build, intrinsics, metaschedule, runtime
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


#: The x86 features that decide which dot-product instructions an int8 (or bfloat16) kernel can use:
#: a tuned order chooses its intrinsic by them (VNNI's vpdpbusd, else AVX-512 or AVX2 sequences).
DOT_PRODUCT_FEATURES = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
                        "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16")


def host_cpu_flags() -> frozenset[str]:
    """The feature flags this machine's kernel reports for its CPU (/proc/cpuinfo; empty elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def host_cpu_facts() -> dict:
    """What a run keeps about this machine's CPU, read now (CPUs differ between machines of one
    name): its model, LLVM's name for it, and which of DOT_PRODUCT_FEATURES it has."""
    flags = host_cpu_flags()
    return {"model": host_cpu_model(), "mcpu": build.host_cpu(),
            "features": {name: name in flags for name in DOT_PRODUCT_FEATURES}}


@dataclass(frozen=True)
class DotProductChoice:
    """The tensor intrinsic an int8 tuning of the llvm target offers MetaSchedule, chosen from a
    CPU's feature flags (:func:`dot_product_intrinsic`): ``intrinsic`` (None: none), the
    instruction its kernels contain when it is used, and why, in words."""

    intrinsic: str | None
    instruction: str | None
    reason: str

    def to_json(self) -> dict:
        return {"intrinsic": self.intrinsic, "instruction": self.instruction, "reason": self.reason}


#: The CPU features (/proc/cpuinfo's names) each dot-product intrinsic's instructions need.
INTRINSIC_FEATURES = {"dot_16x4_vnni": ("avx512_vnni",), "dot_16x4_avx512": ("avx512f", "avx512bw")}


def lacking_features(intrinsic: str | None, flags: frozenset[str] | None = None) -> list[str]:
    """The features ``intrinsic`` needs that a CPU with ``flags`` (default: this one's) lacks."""
    flags = host_cpu_flags() if flags is None else frozenset(flags)
    return [f for f in INTRINSIC_FEATURES.get(intrinsic, ()) if f not in flags]


def dot_product_intrinsic(flags: frozenset[str] | None = None) -> DotProductChoice:
    """The x86 dot-product intrinsic for uint8 x int8 -> int32 that a CPU with feature ``flags``
    (/proc/cpuinfo's names; default: this machine's, read now) runs: VNNI's ``dot_16x4_vnni``
    (``vpdpbusd``) where it has avx512_vnni, else ``dot_16x4_avx512`` (``vpmaddubsw`` then
    ``vpmaddwd``) where it has avx512bw, else none."""
    flags = host_cpu_flags() if flags is None else frozenset(flags)
    if not lacking_features("dot_16x4_vnni", flags):
        return DotProductChoice("dot_16x4_vnni", "vpdpbusd", "the CPU has avx512_vnni")
    if not lacking_features("dot_16x4_avx512", flags):
        return DotProductChoice("dot_16x4_avx512", "vpmaddubsw", "the CPU has avx512bw but not avx512_vnni")
    return DotProductChoice(None, None, "the CPU has neither avx512_vnni nor avx512bw: no dot-product intrinsic")


#: (LLVM's name, model name) of the CPU to build for instead of this one; see building_for().
_BUILD_FOR: ContextVar[tuple[str, str] | None] = ContextVar("suite_llvm_build_for", default=None)


def this_cpu() -> dict:
    """This machine's CPU as :func:`building_for` takes it: LLVM's name and the model name."""
    return {"mcpu": build.host_cpu(), "model": host_cpu_model()}


@contextmanager
def building_for(mcpu: str, model: str):
    """Build for CPU ``mcpu`` (LLVM's name) and key the cache on its ``model`` name, in this
    thread, for the duration of the block (the kernels may not run here: see can_run())."""
    token = _BUILD_FOR.set((mcpu, model))
    try:
        yield
    finally:
        _BUILD_FOR.reset(token)


def build_cpu() -> tuple[str, str]:
    """(mcpu, model) the llvm target builds for: this machine's, or the one of building_for()."""
    return _BUILD_FOR.get() or (build.host_cpu(), host_cpu_model())


#: LLVM's x86 *tuning* features (how to schedule, not which instructions exist): ignored by can_run().
_TUNING_PREFIXES = ("false-deps-", "slow-", "fast-", "prefer-", "tuning-", "lea-", "idivl-", "idivq-", "pad-",
                    "use-", "no-bypass", "allow-light", "avoid-", "branchfusion", "macrofusion", "sbb-dep",
                    "ermsb", "fsrm")


def can_run(mcpu: str) -> str | None:
    """Why code built for ``mcpu`` might not run on this CPU (instruction-set features LLVM gives
    ``mcpu`` beyond those of this CPU), or None when it runs. Conservative: a feature this does not
    know as a tuning flag counts as an instruction set."""
    here = build.host_cpu()
    if mcpu == here:
        return None
    theirs, ours = build.cpu_features(mcpu), build.cpu_features(here)
    if theirs is None or ours is None:
        return f"this TVM cannot compare the features of this CPU ({here}) with those of {mcpu}"
    missing = {f for f in theirs - ours if not f.startswith(_TUNING_PREFIXES)}
    return f"this CPU ({here}) lacks {', '.join(sorted(missing))} of {mcpu}" if missing else None


class LLVMTarget(Target):
    name = "llvm"
    peer_device = "cpu"
    # bfloat16 here is TVM's legalized path: BF16ComputeLegalize runs on every llvm target, computing
    # in float32 and rounding where a value is stored to a bfloat16 parameter (docs/bfloat16.md).
    dtypes = ("float32", "float16", "int8", "bfloat16")

    def tvm_target(self):
        return build.make_target({"kind": "llvm", "mcpu": build_cpu()[0]})

    def tuning_target(self):
        """The host CPU with its core count."""
        return build.make_target(
            {"kind": "llvm", "mcpu": build_cpu()[0], "num-cores": os.cpu_count() or 1}
        )

    def tuning_options(self, inputs=None, output_shape=None, dtype=None, check=None,
                       dot_product: DotProductChoice | None = None) -> dict:
        """The default runner and builder (``dtype``: the output's); with ``dot_product`` (int8:
        the choice suite.core.tuning offers, :func:`dot_product_intrinsic`), the design space with
        that intrinsic."""
        options = super().tuning_options(inputs, output_shape, dtype, check)
        if dot_product is None:
            return options
        return {**options, "space": metaschedule.dot_product_space(intrinsics.dot_product_intrinsic_name(dot_product.intrinsic))}

    def dot_product_choice(self, cpu_flags: frozenset[str] | None = None) -> DotProductChoice:
        """The dot-product intrinsic an int8 tuning offers, chosen by ``cpu_flags`` (default: this CPU's)."""
        return dot_product_intrinsic(cpu_flags)

    def identity(self) -> dict:
        override = _BUILD_FOR.get()
        return {"target": self.name, "cpu": override[1] if override else host_cpu_model()}

    def load(self, path: Path, inputs, output_shape, dtype) -> ModuleKernel:
        return ModuleKernel(runtime.load_module(path), runtime.cpu_device(), inputs, output_shape, dtype)


#: The x86 instructions that compute with bfloat16 (AVX-512 BF16): its dot product and its two
#: conversions from float32. AMX's tdpbf16ps would be another, on CPUs with amx_bf16.
BF16_INSTRUCTIONS = ("vdpbf16ps", "vcvtneps2bf16", "vcvtne2ps2bf16", "tdpbf16ps")


def bf16_instructions(path: Path) -> int | None:
    """How many bfloat16 instructions (:data:`BF16_INSTRUCTIONS`) the shared library at ``path``
    contains (objdump's disassembly), or None where objdump is missing or fails."""
    tool = shutil.which("objdump")
    if tool is None:
        return None
    done = subprocess.run([tool, "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return sum(1 for line in done.stdout.splitlines()
               if len(fields := line.split("\t")) > 1 and fields[1].split(" ", 1)[0] in BF16_INSTRUCTIONS)


class LLVMNativeBf16Target(LLVMTarget):
    """llvm with the CPU's AVX-512 BF16 instructions asked for (``-mattr=+avx512bf16``), bfloat16
    only: what a user writes for native bfloat16. Each build counts the bfloat16 instructions its
    code contains (``codegen``: ``bf16_instructions``), since TVM may legalize them away."""

    name = "llvm-avx512bf16"
    dtypes = ("bfloat16",)
    dtypes_note = "only bfloat16 has native instructions to ask for; the other dtypes run on llvm"
    FEATURE = "avx512_bf16"  #: /proc/cpuinfo's name of what the target needs

    @property
    def records_from(self) -> tuple[str, ...]:
        return (self.name, LLVMTarget.name)  # an llvm trace schedules the same TIR

    def tvm_target(self):
        return build.make_target({"kind": "llvm", "mcpu": build_cpu()[0], "mattr": ["+avx512bf16"]})

    def tuning_target(self):
        return build.make_target({"kind": "llvm", "mcpu": build_cpu()[0], "mattr": ["+avx512bf16"],
                                   "num-cores": os.cpu_count() or 1})

    def unavailable(self) -> str | None:
        if self.FEATURE in host_cpu_flags():
            return None
        return f"{self.name} needs a CPU with {self.FEATURE}; this one ({host_cpu_model()}) lacks it"

    def codegen_metrics(self, path: Path) -> dict | None:
        count = bf16_instructions(path)
        return None if count is None else {"bf16_instructions": count}
