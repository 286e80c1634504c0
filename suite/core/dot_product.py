"""int8 tuning's dot products: the weights packed into the blocks of the target's dot-product
intrinsic first (16x4, Hexagon's 32x4; the record's ``prologue``), whether a kept kernel used the
intrinsic (:class:`Tensorized`: its instruction in the disassembly), its trace as it applies to the
kernel's accumulator, and which tensor intrinsics a trace uses (docs/int8-tuned.md,
docs/int8-hexagon.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from suite.compat import schedules
from suite.core import quantized

#: The prologue of int8 records whose weights the tuned kernel first copies into blocks of 16 (x86)
#: or 32 (HVX) output channels by 4 input channels (:func:`pack_weights`); a record names it under
#: ``prologue``.
PACK_WEIGHTS, PACK_WEIGHTS_32X4 = "pack_weights_16x4", "pack_weights_32x4"
PROLOGUES = {16: PACK_WEIGHTS, 32: PACK_WEIGHTS_32X4}
#: The output lanes of the dot-product intrinsics that are not 16 wide (x86's are): HVX's vrmpy.
_WIDE_INTRINSICS = {"dot_32x4_u8i8i32_vrmpy": 32}


def intrinsic_lanes(intrinsic: str | None) -> int:
    """The output channels one call of the dot-product ``intrinsic`` computes (x86's: 16; vrmpy: 32)."""
    return _WIDE_INTRINSICS.get(intrinsic, 16)


def pack_weights(func, chain: dict, lanes: int = 16):
    """``func`` (an int8 kernel of ``chain``, or its accumulator function) whose conv2d (NHWC, HWIO)
    or matmul first copies its weights into blocks of ``lanes`` (16 or 32) output channels by 4 input
    channels, the 4 contiguous (``[O/lanes, KH, KW, I/4, lanes, 4]``, a matmul's ``[N/lanes, K/4,
    lanes, 4]``): the operand layout of the lanes x 4 dot-product intrinsics (the activations' 4
    channels and the output's lanes lie contiguous in NHWC already). The copy is never inlined back
    (``meta_schedule.inline_rule``). None where the chain has no such weights, or their channels are
    not multiples of ``lanes`` and 4."""
    schedule = schedules.schedule(func)
    return schedule.mod["main"] if pack_weights_in(schedule, chain, lanes) else None


def pack_weights_in(schedule, chain: dict, lanes: int = 16) -> bool:
    """:func:`pack_weights` done in ``schedule`` (a schedule of such a kernel), so that its trace
    holds the packing (a fuzz trace replays on the unpacked kernel); whether the weights allow it."""
    found = quantized.plan(chain)
    if found.weight is None or found.op not in ("conv2d", "matmul"):
        return False
    if found.op == "conv2d" and (found.attrs.get("data_layout"), found.attrs.get("kernel_layout")) != ("NHWC", "HWIO"):
        return False
    shape = [int(d) for d in chain["inputs"][found.weight]["shape"]]
    if shape[-1] % lanes or shape[-2] % 4:
        return False
    block = schedule.get_sblock(found.op)
    copy = schedule.cache_read(block, schedules.block_read_names(schedule, block).index(f"input{found.weight}"), "global")
    if found.op == "conv2d":
        schedule.transform_layout(copy, ("write", 0),
                                  lambda ry, rx, rc, o: (o // lanes, ry, rx, rc // 4, o % lanes, rc % 4))
    else:
        schedule.transform_layout(copy, ("write", 0), lambda k, n: (n // lanes, k // 4, n % lanes, k % 4))
    schedule.annotate(copy, "meta_schedule.inline_rule", "disable")
    return True


@dataclass(frozen=True)
class Tensorized:
    """Whether a kept int8 kernel used the dot-product intrinsic offered: ``trace_tensorizes``, its
    trace has a Tensorize instruction; ``instruction``, the intrinsic's instruction, and
    ``instruction_count``, how often it occurs in the kernel's disassembly (llvm-objdump; None:
    none was offered, or no disassembler); on Hexagon ``executed_count``, how many times the
    emulator executed it in one call on the workload's inputs (None elsewhere); ``used``: all."""

    trace_tensorizes: bool
    instruction: str | None
    instruction_count: int | None
    executed_count: int | None = None

    @property
    def used(self) -> bool:
        executed = self.executed_count is None or self.executed_count > 0
        return self.trace_tensorizes and bool(self.instruction_count) and executed

    def to_json(self) -> dict:
        found = {"trace_tensorizes": self.trace_tensorizes, "instruction": self.instruction,
                 "instruction_count": self.instruction_count, "used": self.used}
        return found if self.executed_count is None else {**found, "executed_count": self.executed_count}


def instruction_count(kernel: Path, mnemonic: str) -> int | None:
    """How many ``mnemonic`` instructions the disassembly of ``kernel`` (a shared library) holds;
    None where no ``llvm-objdump`` (or ``objdump``) is installed."""
    tool = shutil.which("llvm-objdump") or shutil.which("objdump")
    if tool is None:
        return None
    text = subprocess.run([tool, "-d", "--no-show-raw-insn", str(kernel)], check=True, capture_output=True,
                          text=True).stdout
    return len(re.findall(rf"^\s*[0-9a-f]+:\s+(?:\{{\w+\}}\s*)?{re.escape(mnemonic)}\b", text, re.MULTILINE))


def accumulator_trace(trace: list, accumulator_func) -> list:
    """``trace`` (a kernel's, as JSON) as it applies to the kernel's accumulator function: every
    instruction that applies there, in order, the others (those of the blocks after the
    accumulator, and what depends on them) left out; as JSON, its decisions kept (renumbered: a
    decision names its instruction by position, an instruction its inputs by name)."""
    instructions, decisions = trace[0], {int(i): d for i, d in (trace[1] if len(trace) > 1 else [])}
    kept: list[int] = []
    for index in range(len(instructions)):
        trying = kept + [index]
        candidate = [[instructions[i] for i in trying],
                     [[position, decisions[i]] for position, i in enumerate(trying) if i in decisions]]
        try:
            schedules.apply_trace(candidate, schedules.schedule(accumulator_func))
        except Exception:  # an instruction of a block the accumulator has not, or of one left out
            continue
        kept = trying
    return [[instructions[i] for i in kept], [[position, decisions[i]] for position, i in enumerate(kept) if i in decisions]]


def tensorizes(trace) -> bool:
    instructions = trace[0] if trace else []
    return any(isinstance(inst, list) and inst and inst[0] == "Tensorize" for inst in instructions)


def tensor_intrinsics(trace) -> set[str]:
    """The names of the tensor intrinsics a trace's Tensorize instructions use (their first attribute)."""
    return {str(inst[2][0]) for inst in (trace[0] if trace else [])
            if isinstance(inst, list) and inst and inst[0] == "Tensorize" and len(inst) > 2 and inst[2]}
