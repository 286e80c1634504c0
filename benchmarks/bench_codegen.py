"""Hexagon codegen: compile metrics of TVM's real Hexagon code, and emulated runs on qemu-hexagon.

Compile metrics (every Hexagon target) are read from the object and assembly TVM generated: a change
in TVM's Hexagon codegen shows as a step. Emulated time (``hexagon-v68-emu``) is QEMU's time on this
host, not hardware latency; packets executed (every executed Hexagon target) are exact and
deterministic: the first-order cost of VLIW code, a lower bound of cycles. Accuracy of the emulated outputs is tracked by bench_accuracy and
bench_divergence like any target's. Combinations on other targets are skipped.
"""

from .common import ComboBenchmark


class HexagonCodegen(ComboBenchmark):
    """The object: compile success, code size, compile time (every Hexagon target)."""

    need = "CODEGEN"


class HexagonInstructions(ComboBenchmark):
    """Instruction counts read from the generated assembly (the compile-only qfloat targets keep it)."""

    need = "ASSEMBLY"


class HexagonEmulated(ComboBenchmark):
    need = "EMULATED"


class HexagonCounts(ComboBenchmark):
    """Packets, instructions and HVX instructions the emulated kernel executed (exact)."""

    need = "COUNTS"


class HexagonEfficiency(ComboBenchmark):
    """The HVX packet floor of a conv2d or dense over the packets executed."""

    need = "EFFICIENCY"
