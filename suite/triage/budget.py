"""The memory a triage needs, bounded before anything is allocated.

A report's shapes are the reporter's: a parameter of 100000 x 100000 float32 is 37 GiB of input,
and the interpreter holds float64 values beside magnitudes and rounding counts. Triage adds up
what it will hold and refuses, in one line naming the sizes, beyond ``--max-memory`` (default
:data:`DEFAULT_MAX_MEMORY`), instead of failing in numpy's allocator with a traceback, or
swapping the machine to a halt.

What is counted (bytes per element):

- the inputs, in their own dtype, twice: the arrays drawn here and each target's copy;
- the reference: the interpreter's copy of each input (8: float64 or int64), and of each buffer the
  program writes, its outputs and the buffers it allocates (8 value + 8 magnitude + 4 roundings + 1
  written = 21);
- the outputs the targets hand back, in the output's dtype, four times (before, after and the
  IEEE twin's two).

The interpreter's temporaries are bounded apart from this (``vectorize.LANE_CAP`` lanes at a time).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from suite.errors import UserError
from suite.triage import ir

GIB = 1 << 30
DEFAULT_MAX_MEMORY = 2 * GIB
#: Bytes the interpreter holds per element of a buffer the program writes (see the module doc).
WRITTEN_BYTES = 8 + 8 + 4 + 1
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": GIB, "gb": GIB, "gib": GIB, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


class TooLarge(UserError):
    """A program whose inputs and reference would not fit the memory limit (one line, the sizes)."""


def parse_size(text: str) -> int:
    """``--max-memory``: bytes, or a number with K, M, G or T (powers of 1024: ``2G``, ``512MiB``)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or a number with K, M, G or T: 2G, 512M)")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is no memory at all")
    return size


def words(size: float) -> str:
    """``74.5 GiB``, ``512 MiB``, ``3 KiB``, ``100 bytes``."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{int(size)} bytes"


@dataclass(frozen=True)
class Needs:
    inputs: int
    reference: int
    outputs: int

    @property
    def total(self) -> int:
        return self.inputs + self.reference + self.outputs


def itemsize(dtype: str) -> int:
    return 1 if dtype == "bool" else max(1, ir.bits_of(dtype) // 8)


def needs(program: ir.Program) -> Needs:
    """What a triage of ``program`` holds (see the module doc), by part."""
    written = {id(b) for b in program.written_params()}
    inputs = [b for b in program.params if id(b) not in written]
    outputs = [b for b in program.params if id(b) in written]
    allocated = [s.buf for s in ir.walk(program.body) if isinstance(s, ir.Alloc)]
    allocated += [b for s in ir.walk(program.body) if isinstance(s, ir.Block) for b in s.allocs]
    return Needs(inputs=2 * sum(b.size * itemsize(b.dtype) for b in inputs),
                 reference=sum(b.size * 8 for b in inputs) + sum(b.size * WRITTEN_BYTES for b in outputs + allocated),
                 outputs=4 * sum(b.size * itemsize(b.dtype) for b in outputs))


def check(program: ir.Program, limit: int, where: str) -> None:
    """TooLarge where a triage of ``program`` needs more than ``limit`` bytes."""
    found = needs(program)
    if found.total > limit:
        raise TooLarge(f"{where}: triage would hold about {words(found.total)} (inputs {words(found.inputs)}, "
                       f"reference {words(found.reference)}, outputs {words(found.outputs)}), over the limit of "
                       f"{words(limit)}; give --max-memory {_round_up(found.total)} if this machine has it")


def _round_up(size: int) -> str:
    return f"{-(-size // GIB)}G" if size >= GIB else f"{-(-size // (1 << 20))}M"
