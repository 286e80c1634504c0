"""Hexagon codegen: compile metrics of TVM's real Hexagon code, and emulated runs on qemu-hexagon.

Compile metrics (every Hexagon target) are read from the object and assembly TVM generated: a change
in TVM's Hexagon codegen shows as a step. Emulated time (``hexagon-v68-emu``) is QEMU's time on this
host, not hardware latency; packets executed (every executed Hexagon target) are exact and
deterministic: the first-order cost of VLIW code, a lower bound of cycles. Accuracy of the emulated outputs is tracked by bench_accuracy and
bench_divergence like any target's. Combinations on other targets are skipped.
"""

from .common import ComboBenchmark


class HexagonCodegen(ComboBenchmark):
    """The object: code size and compile time (asv), compile success and the instruction counts of
    the assembly where the target keeps it (kept beside asv's results: no lower-is-better)."""

    need = "CODEGEN"


class HexagonEmulated(ComboBenchmark):
    need = "EMULATED"


class HexagonCounts(ComboBenchmark):
    """Packets and instructions the emulated kernel executed, exact (asv); its HVX instructions and,
    for a conv2d or dense, its HVX efficiency (kept beside asv's results)."""

    need = "COUNTS"

