"""MetaSchedule for ``hexagon-v68-qf``: candidates built as the target builds them, run under the
emulator, ranked by **packets executed**.

The measure is the packets the kernel call executes (QEMU's counters, read by the harness around
the call; on the qf targets those of the program TVM emitted, the qfloat model's own packets not
counted: :mod:`suite.targets.hvx_rewrite`). One packet issues per cycle at best, so packets are a
lower bound of the cycles a Hexagon would spend (QEMU models no stall), exact and the same on every
run, and they rank code as a VLIW machine does: a 64-lane HVX multiply costs one packet, as on
hardware. The emulator's CPU seconds, which the records were tuned by until then, rank scalar code
first (a qfloat model call costs far more than the vector instruction it stands for); they stay in
the record beside the packets (``candidates_emulated_s``), and the runner logs both.

- design space: TVM's own Hexagon rules, the ones its ``hexagon`` target kind selects
  (``ScheduleRule/Postproc/Mutator.create("hexagon")``: ``MultiLevelTilingWideVector`` with SRSRS
  tiling and 1024-bit vectors, ``ParallelizeVectorizeUnroll`` up to 128 lanes, ``VerifyVTCMLimit``
  ...), passed explicitly;
- tuned for: TVM's ``hexagon``-kind target of the ``qcom/hexagon-v68`` tag (4 cores, 4 MiB of
  VTCM) with the suite's LLVM options; built for: the suite's ``llvm`` target of ``mtriple=hexagon``
  (the 0.27 wheel cannot build with the ``hexagon`` kind);
- builder: MetaSchedule's ``LocalBuilder`` (a process per candidate, with a timeout) building with
  the target's TVM target as a replayed trace is built (:func:`build_candidate`); its
  export writes the assembly, rewrites the HVX FP instructions, assembles and links the static ELF
  (:func:`suite.targets.hvx_toolchain.build_qfloat_elf`) in a temporary directory: the artifact. A
  candidate that does not build, or that the rewrite refuses, is a builder error;
- runner (:class:`EmulatorMeasure`): that ELF under the target's ``qemu-hexagon`` on the
  workload's own inputs; returns the packets executed (in MetaSchedule's ``run_secs``, which only
  ranks them: its cost model learns ratios to the best). An emulation that fails or runs past its
  timeout, or an output that is wrong (not finite, or far from the float64 reference: the check
  :func:`suite.core.tuning.tune` gives) is that candidate's runner error. Like any runner error,
  MetaSchedule records the candidate as failed and goes on.
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from suite.compat import build as compat_build
from suite.compat import intrinsics, metaschedule
from suite.targets import hexagon, hvx_toolchain

#: Seconds one candidate may take to build (TVM + LLVM, rewrite, assemble, link): scalar fp16
#: code of heavily unrolled candidates takes LLVM minutes.
BUILD_TIMEOUT_S = 300.0
#: Seconds one candidate may run under the emulator (the untuned ResNet-50 conv2d layers take
#: 2-60 s on an idle core).
RUN_TIMEOUT_S = 300.0
CANDIDATE_PREFIX = "tvm-suite-hexagon-candidate-"


class WrongOutput(RuntimeError):
    """A candidate whose output cannot be the workload's (the message says how)."""


def build_candidate(mod, _target, _params=None, *, mcpu: str, mattr: list[str], llvm_options: list[str]):
    """A candidate built as the target builds a replayed trace (MetaSchedule's ``f_build``, run in
    the builder's process): with the ``llvm`` target of ``mtriple=hexagon``, whatever target
    MetaSchedule tunes for (TVM's ``hexagon`` kind, which this wheel cannot build with)."""
    return metaschedule.plain_build(mod, compat_build.hexagon_target(mcpu, mattr, llvm_options))


def export_elf(module, arch: str) -> str:
    """The runnable ELF of a built candidate (MetaSchedule's ``f_export``, run in the builder's
    process): assembly, HVX FP rewrite, assembly, link, in a directory of its own."""
    where = Path(tempfile.mkdtemp(prefix=CANDIDATE_PREFIX))
    asm = hvx_toolchain.emit_object_and_assembly(module, where / "kernel.o")
    stats = hvx_toolchain.build_qfloat_elf(asm, where / "kernel.elf", arch, tvm_object=where / "kernel.o")
    (where / "rewrite.json").write_text(json.dumps(stats))
    return str(where / "kernel.elf")


class EmulatorMeasure:
    """Runs a candidate's ELF under the emulator: ``[packets executed]``, or an exception. Every
    candidate that ran keeps ``(packets, emulated CPU seconds)`` in ``measured``.

    ``inputs``, ``output_shape`` and ``dtype`` are the workload's (a trace built as it is replayed
    takes the original argument layouts); without them, inputs are drawn from the argument list
    MetaSchedule gives (every argument but the last is an input, uniform in [0, 1)).
    """

    def __init__(self, emulator, inputs=None, output_shape=None, dtype=None, check=None,
                 timeout_s: float = RUN_TIMEOUT_S, log=None):
        self.emulator = tuple(emulator)
        self.inputs, self.output_shape, self.dtype = inputs, output_shape, dtype
        self.check = check
        self.timeout_s = timeout_s
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.count = 0
        self.measured: list[tuple[int, float]] = []

    def arguments(self, args) -> tuple[list, list, str]:
        if self.inputs is not None:
            return list(self.inputs), list(self.output_shape), self.dtype
        *given, (out_dtype, out_shape) = args
        rng = np.random.default_rng(0)
        arrays = [rng.random(shape).astype(dtype) if np.dtype(dtype).kind == "f" else np.zeros(shape, dtype)
                  for dtype, shape in given]
        return arrays, out_shape, out_dtype

    def __call__(self, artifact_path: str, args) -> list[float]:
        """(MetaSchedule removes the artifact's directory after the run: its RemoveBuildArtifact.)"""
        started = time.perf_counter()
        self.count += 1
        try:
            packets, cpu_s, emulated_s = self.run(Path(artifact_path), args)
        except Exception as err:
            self.log(f"candidate {self.count}: failed after {time.perf_counter() - started:.1f} s: {err}")
            raise
        self.measured.append((packets, cpu_s))
        self.log(f"candidate {self.count}: {packets:,} packets executed; {cpu_s:.4g} s emulated CPU "
                 f"(harness clock {emulated_s:.4g} s; not hardware latency), run in "
                 f"{time.perf_counter() - started:.1f} s")
        return [float(packets)]

    def run(self, elf: Path, args=None) -> tuple[int, float, float]:
        """(packets executed, emulated CPU seconds, harness clock seconds) of one ELF; an
        exception when it fails or its output is wrong."""
        inputs, shape, dtype = self.arguments(args)
        stdin = hexagon.encode_inputs(inputs, shape, dtype)
        run = hexagon.emulate(elf, stdin, shape, dtype, self.emulator, timeout_s=self.timeout_s)
        if self.check is not None and (problem := self.check(run.output)):
            raise WrongOutput(problem)
        return run.counts["packets"], run.cpu_s, run.emulated_s


def measure_module(mod, *, build, export, measure: EmulatorMeasure) -> tuple[int, float]:
    """(packets, emulated CPU seconds) of a module built, exported and run as a candidate is (the
    committed record's trace, measured against a new search's best)."""
    elf = Path(export(build(mod, None)))
    try:
        return measure.run(elf)[:2]
    finally:
        shutil.rmtree(elf.parent, ignore_errors=True)


def tuning_options(target, inputs=None, output_shape=None, dtype=None, check=None, dot_product=None) -> dict:
    """``tune_tir``'s builder, runner and design space for an executed qfloat ``target``; with
    ``dot_product`` (int8: a :class:`suite.targets.llvm.DotProductChoice` naming ``vrmpy``'s
    intrinsic), TVM's Hexagon space whose tiling first tries that intrinsic;
    ``measured``: the list the runner fills with each candidate's (packets, emulated CPU seconds);
    ``measure_module``: (packets, emulated CPU seconds) of an IRModule measured as a candidate is."""
    # Built once here rather than by the builder processes at once.
    hexagon.harness_object(target.arch)
    hvx_toolchain.model_object(target.arch)
    measure = EmulatorMeasure(("qemu-hexagon", "-cpu", target.arch), inputs, output_shape, dtype, check)
    build = functools.partial(build_candidate, mcpu=f"hexagon{target.arch}", mattr=list(target.mattr),
                              llvm_options=list(target.llvm_options))
    export = functools.partial(export_elf, arch=target.arch)
    return {
        "builder": metaschedule.local_builder(BUILD_TIMEOUT_S, f_build=build, f_export=export),
        "runner": metaschedule.custom_runner(measure),
        "space": metaschedule.dot_product_space(intrinsics.dot_product_intrinsic_name(dot_product.intrinsic), "hexagon")
                 if dot_product is not None and dot_product.intrinsic else metaschedule.tuning_space("hexagon"),
        "measured": measure.measured,
        "measure_module": functools.partial(measure_module, build=build, export=export, measure=measure),
    }
