"""What every stub of the rewritten Hexagon code (:mod:`suite.targets.hvx_rewrite`) is made of:
the model's entry points and scratch memory, the scalar context saved and restored around its
calls, the counting windows that keep QEMU's counters those of the program TVM emitted, and the
routines that spill a vector register to memory."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from suite.targets.hvx_asm import strip_comment

CTX, VBUF, VSAVE = "__qfm_ctx", "__qfm_vbuf", "__qfm_vsave"
#: The vector model's entry points (vector_model.c), per arithmetic (hvx_model.c's __qfm_arith: 0
#: qfloat, 1 the IEEE twin): <prefix><name>, sources in V0, V1, the result in V0.
VECTOR_ENTRIES = {"qfloat": "qfv_", "ieee": "qiv_"}
ARITH = "__qfm_arith"
#: The instructions the vector model computes (the forms fp16 code executes most).
VECTOR_FORMS = ("vmpy_qf16_hf", "vadd_qf16", "vadd_qf16_mix", "vadd_hf", "vmax_hf", "vmin_hf")
VBUF_SLOTS = 16
#: __qfm_ctx: register pair R(2k+1):R(2k) at 8k, P3:0 and USR at 128, M1:0 at 136, and the word that
#: keeps R0 around post-packet loads at 144.
PREDICATES, MODIFIERS, POST_SAVE = 128, 136, 144   # POST_SAVE: two register pairs
#: Scalar registers a C function must give back unchanged (the Hexagon ABI): a model function
#: that uses them saves them itself.
CALLEE_SAVED = frozenset(range(16, 28)) | {29, 30}
STUB_SECTION = ".text.qfm_stubs"
#: QEMU's execution counters (hexagon_harness.c): every stub reads them first and writes them back
#: last, adjusted so that the counts are those of the program TVM emitted (see window_adjust).
CNT_SNAP = "__qfm_cnt_snap"
READ_PACKETS_INSTRUCTIONS = ".word 0x6814c000"   # r1:0 = C21:20
READ_HVX = ".word 0x6816c000"                    # r1:0 = C23:22 (r0: HVX instructions)
WRITE_HVX = ".word 0x6222c016"                   # C22 = r2
WRITE_PACKETS_INSTRUCTIONS = ".word 0x6320c014"  # C21:20 = r1:0
HVX_INSTRUCTION = re.compile(r"\bv\d+|\bq[0-3]\b|\bvmem|\bvtmp")


#: ``__qfm_spill_vN``: vector register N to the 128 bytes at r1, by word extractions and scalar
#: stores (clobbers r2-r5): QEMU spends far longer on an HVX vector store than on the 32 extractions
#: and 16 scalar stores, and vector loads are cheap. The stubs put sources, results and the
#: registers the vector model clobbers into memory with these, and read them back with vector loads.
SPILL = "__qfm_spill_v"


def spill_source() -> str:
    """The assembly of the 32 spill routines (one per vector register)."""
    lines = ["\t.text\n"]
    for reg in range(32):
        lines += [f"\t.p2align 4\n\t.globl {SPILL}{reg}\n{SPILL}{reg}:\n", "\t{ r4 = #0; r5 = #4 }\n"]
        for word in range(0, 32, 2):
            following = f"; r4 = #{4 * word + 8}; r5 = #{4 * word + 12}" if word < 30 else ""
            lines += [f"\t{{ r2 = vextract(v{reg},r4) }}\n", f"\t{{ r3 = vextract(v{reg},r5) }}\n",
                      f"\t{{ memd(r1+#{4 * word}) = r3:2{following} }}\n"]
        lines.append("\t{ jumpr r31 }\n")
    return "".join(lines)


@dataclass(frozen=True)
class VectorModelRegisters:
    """What each entry point of the vector model (and every function it calls) may change, per
    arithmetic (VECTOR_ENTRIES) and instruction name: ``vector``, the vector registers it names;
    ``scalar``, the scalar registers it names but the ABI lets it change (not CALLEE_SAVED);
    ``predicates``, whether it names a predicate register."""

    vector: dict
    scalar: dict
    predicates: bool

    def to_json(self) -> str:
        return json.dumps({"vector": self.vector, "scalar": self.scalar, "predicates": self.predicates},
                          sort_keys=True, default=sorted)

    @classmethod
    def from_json(cls, text: str) -> VectorModelRegisters:
        found = json.loads(text)
        sets = {part: {arith: {name: frozenset(regs) for name, regs in names.items()}
                       for arith, names in found[part].items()} for part in ("vector", "scalar")}
        return cls(sets["vector"], sets["scalar"], bool(found["predicates"]))


def emit(lines: list[str], *instrs: str) -> None:
    lines.append("\t{ " + "; ".join(instrs) + " }\n")


@dataclass(frozen=True)
class Counts:
    """Packets, instructions and HVX instructions, as QEMU counts them: a constant extender and a
    nop are no instruction; an instruction naming a vector or vector-predicate register is an HVX
    one."""

    packets: int = 0
    instructions: int = 0
    hvx: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.packets + other.packets, self.instructions + other.instructions, self.hvx + other.hvx)

    def __sub__(self, other: Counts) -> Counts:
        return Counts(self.packets - other.packets, self.instructions - other.instructions, self.hvx - other.hvx)


def counts_of(lines: list[str]) -> Counts:
    """What QEMU counts executing the packets the rewriter emitted (``_emit`` lines and words)."""
    total = Counts()
    for line in lines:
        code = strip_comment(line).strip()
        if code.startswith(".word"):
            total += Counts(1, 1, 0)
        elif code.startswith("{"):
            parts = [part.strip() for part in code.strip("{} ").split(";") if part.strip() not in ("", "nop")]
            total += Counts(1, len(parts), sum(bool(HVX_INSTRUCTION.search(part)) for part in parts))
    return total


def open_window(out: list[str]) -> None:
    """Read the counters into __qfm_cnt_snap (r1:0 must be saved before: this changes them)."""
    out.append(f"\t{READ_PACKETS_INSTRUCTIONS}\n")
    emit(out, f"memd(##{CNT_SNAP}) = r1:0")
    out.append(f"\t{READ_HVX}\n")
    emit(out, f"memw(##{CNT_SNAP}+8) = r0")


def close_window(out: list[str], adjust: Counts) -> None:
    """Write the counters back as read by open_window plus ``adjust`` (changes r0-r3): everything
    in between is erased from the counts."""
    emit(out, f"r1:0 = memd(##{CNT_SNAP})", f"r2 = #{adjust.packets}", f"r3 = #{adjust.instructions}")
    emit(out, "r1:0 = vaddw(r1:0,r3:2)", f"r2 = memw(##{CNT_SNAP}+8)")
    emit(out, f"r2 = add(r2,#{adjust.hvx})")
    out.append(f"\t{WRITE_HVX}\n")
    out.append(f"\t{WRITE_PACKETS_INSTRUCTIONS}\n")


#: What a window itself leaves counted: the packet that writes the packets and instructions back
#: counts itself (the write sets the counts as of the start of its packet).
CLOSING = Counts(1, 1, 0)


def window_adjust(target: Counts, before: Counts, after: Counts) -> Counts:
    """The adjustment that makes a window's code count as ``target``: the counts read when it
    opened include ``before`` (what ran since the kernel's jump to the stub), and ``after`` (the
    closing packet, the rest of the stub, and kernel packets the rewrite added) is counted after
    the write."""
    return target - before - after


def save_context(out: list[str], scalars: set[int] | None = None, predicates: bool = True) -> None:
    """Save the scalar state the stub's calls may change to __qfm_ctx: the registers ``scalars``
    (R0-R15, R28, R31 when None: what any C function may change, and USR and M1:0 as well) and
    P3:0 with ``predicates``; open the counting window once R1:0 is saved. R0 becomes the
    context's address."""
    pairs = sorted({reg // 2 for reg in (scalars if scalars is not None else set(range(16)) | {28, 31})} | {0})
    emit(out, f"memd(##{CTX}) = r1:0")
    open_window(out)
    emit(out, f"r0 = ##{CTX}")
    stores = [f"memd(r0+#{8 * k}) = r{2 * k + 1}:{2 * k}" for k in pairs if k]
    for i in range(0, len(stores), 2):
        emit(out, *stores[i:i + 2])
    if scalars is None:
        emit(out, "r2 = p3:0")
        emit(out, "r3 = usr")
        emit(out, "r5:4 = c7:6")
        emit(out, f"memd(r0+#{PREDICATES}) = r3:2", f"memd(r0+#{MODIFIERS}) = r5:4")
    elif predicates:
        emit(out, "r2 = p3:0")
        emit(out, f"memw(r0+#{PREDICATES}) = r2")


def restore_context(out: list[str], scalars: set[int] | None = None, predicates: bool = True) -> None:
    """Put back what :func:`save_context` saved with the same arguments."""
    pairs = sorted({reg // 2 for reg in (scalars if scalars is not None else set(range(16)) | {28, 31})} | {0})
    emit(out, f"r0 = ##{CTX}")
    if scalars is None:
        emit(out, f"r3:2 = memd(r0+#{PREDICATES})", f"r5:4 = memd(r0+#{MODIFIERS})")
        emit(out, "p3:0 = r2")
        emit(out, "usr = r3")
        emit(out, "c7:6 = r5:4")
    elif predicates:
        emit(out, f"r2 = memw(r0+#{PREDICATES})")
        emit(out, "p3:0 = r2")
    loads = [f"r{2 * k + 1}:{2 * k} = memd(r0+#{8 * k})" for k in pairs if k]
    for i in range(0, len(loads), 2):
        emit(out, *loads[i:i + 2])
    emit(out, "r1:0 = memd(r0+#0)")


def vbuf_slot(n: int) -> str:
    return f"##{VBUF}+{n * 128}" if n else f"##{VBUF}"
