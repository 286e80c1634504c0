"""Run TVM's v68 HVX qfloat code on qemu-hexagon by replacing each HVX floating-point instruction
with a call into the suite's model of it (``hvx_model.c``: the qfloat model ``qfloat_model.c``, or
its IEEE twin ``ieee_model.c``, as the harness's input says), keeping VLIW packet semantics.

QEMU 7.2-11.1 implement no HVX floating point (Debian's qemu-hexagon 10.0.2 aborts on the
unmodified seed kernel: "decode.c:492: decode_insns: code should not be reached"). The assembly
LLVM emits for a ``+hvx-qfloat`` v68 target is rewritten packet by packet:

* every instruction with a vector operand or result typed ``.hf``/``.sf``/``.qf16``/``.qf32``
  (or ``.bf``, ``.f8``, or a ``vconv``/``vcvt``/``vfmax``... mnemonic) is an *HVX FP* instruction;
  those the model knows (:data:`suite.targets.qfloat.INSTRUCTIONS`) are rewritten, any other one
  raises :class:`UnknownHvxFp` naming the instruction;
* for a packet ``{ I1 .. In }`` with HVX FP instructions F, the rewritten code is as follows;
  the model code of steps 1 and 3 lives out of line in stubs (section ``.text.qfm_stubs``) reached
  by a plain ``jump`` and jumping back, so the kernel's code grows by one word per step: growing
  it more pushed branch and ``loop0`` targets out of range in packets too full for a constant
  extender, which crashed the assembler (clang 14 and llvm-mc 22 alike).

  1. *before the packet*: save the scalar context the calls may change to ``__qfm_ctx``; compute
     every instruction of F from the old values of its sources (nothing of the packet has
     executed yet), so FP instructions of one packet read each other's old values as in
     hardware; put the results in their destination registers unless a remaining instruction
     of the packet reads a destination's *old* value (those wait in ``__qfm_vbuf``); restore the
     context. An instruction of :data:`VECTOR_FORMS` goes to the *vector model*
     (``vector_model.c``: 64 lanes at once on HVX integer instructions, sources in V0, V1, the
     result in V0), the others to the *scalar model* (``qfm_<name>``, one lane at a time, its
     sources stored to ``__qfm_vbuf`` and its result written there). The vector model changes
     vector registers: those the kernel still needs are kept in registers that are dead at that
     point (:func:`vector_liveness`; a register move is about a nanosecond under QEMU) or, when
     none is left, in ``__qfm_vsave`` (see :data:`SPILL`); the stub calls the qfloat entry or the
     twin's as ``__qfm_arith`` says, each keeping only what it changes;
  2. the packet without F: ``.new`` consumers of an F result (``vmem(r1+#0) = v3.new``) read the
     register, which already holds the new value; an emptied packet becomes ``{ nop }`` when it
     ends a hardware loop (``:endloop0`` etc.) and disappears otherwise;
  3. *after the packet*, only for destinations whose old value the packet reads (software
     pipelining: ``{ v1.sf = vmax(v3.sf,v0.sf); vmemu(r5+#0) = v1 }``): load the results
     (saving r0 around it). A packet that ends a hardware loop is split for this: the packet
     without its ``:endloopN``, the loads, then ``{ nop } :endloopN``. A packet with a jump,
     call or return cannot be split and is refused with :class:`RewriteError` naming it.

  Cases met in TVM's code and how they are kept:

  * an FP source loaded by a ``.cur`` load of the same packet (``{ v2.qf16 = vadd(v7.hf,v10.hf);
    v7.cur = vmem(r5+#-5) }``) reads the loaded data: the load is first repeated as a plain load
    (same address from the old registers, no post-increment, same condition), which writes the
    same value the packet writes anyway;
  * a destination read both old and ``.new`` in one packet (``{ v27 = valign(v0,v30,r7);
    v0.hf = v24.qf16; vmem(r2+#3) = v0.new }``): the ``.new`` store is done before the packet
    with the new value (old registers for its address and condition, the old vector value put
    back afterwards) and removed from it; the destination is then loaded after the packet. In a
    packet with loads (their data must not see the store early: ``{ v22 = valign(v28,v31,r7);
    v31.hf = v19.qf16; v26 = vmem(r1+#0); vmem(r6+#0) = v31.new }``) the store is done after the
    packet instead, once the destination holds its new value, provided nothing in the packet
    writes the store's address or predicate registers; otherwise :class:`RewriteError`.
  * ``.tmp`` loads feeding an FP source are refused with :class:`RewriteError` (none met).

  Counts over the v68 assembly of every ResNet-50 workload and the seed conv2d in both dtypes and
  every loop order (258 files, 232 with HVX floating point): 68,712 rewritten packets; 3,682
  results loaded after their packet, 39 of them through an endloop split; 1,565 ``.cur``
  preloads; 14 early and 2 late ``.new`` stores; 1,380 ``.new`` reads; no refusal.

Both models are compiled with ``-G0`` (no GP) and without hardware loops (SA0/LC0/SA1/LC1 of
the kernel's loops survive the call); the scalar model without HVX (it never touches vector
registers), the vector model without vector stores and predicate registers (the kernel may keep
its own in Q0-Q3). :func:`model_object` checks their assembly for that.

Speed (QEMU 10.0.2, one host core; ``experiments/qfloat_emulation.py``): the seed's
``seed-tuned`` order executes about 3.7 million rewritten instructions; with the scalar model only
it ran 18.6 s (qfloat) and 20.3 s (twin), with the vector model 2.7 s and 4.6 s, every output bit
the same. What is left is the vector model itself, mostly QEMU's helpers for per-lane shifts,
leading-zero counts and multiplies (30-55 ns each against 1-2 ns for other HVX instructions).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from suite import cache
from suite.targets import hexagon, qfloat

#: The model the rewritten code calls: hvx_model.c (entry points, scratch memory, which arithmetic),
#: qfloat_model.c (qfloat) and ieee_model.c (its IEEE twin, see suite.targets.ieee_twin), one lane at a
#: time; vector_model.c: both on HVX integer instructions, 64 lanes at once, for the instructions fp16
#: code executes most.
MODEL_SOURCES = tuple(Path(__file__).with_name(name) for name in ("hvx_model.c", "qfloat_model.c", "ieee_model.c"))
VECTOR_SOURCE = Path(__file__).with_name("vector_model.c")
#: The vector model without LLVM's machine scheduler: its order is the source's (see
#: vector_model.c), which keeps few vector registers alive, and every one a stub must keep aside
#: costs a register move, or a spill when no register is free.
VECTOR_FLAGS = ["-O1", "-ffreestanding", "-fno-builtin", "-nostdlib", "-G0", "-mllvm", "-disable-hexagon-hwloops",
                "-mllvm", "-enable-misched=false", "-mllvm", "-enable-post-misched=false"]
MODEL_FLAGS = ["-O2", "-ffreestanding", "-fno-builtin", "-nostdlib", "-G0",
               "-mllvm", "-disable-hexagon-hwloops"]
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
#: last, adjusted so that the counts are those of the program TVM emitted (see _window_adjust).
CNT_SNAP = "__qfm_cnt_snap"
READ_PACKETS_INSTRUCTIONS = ".word 0x6814c000"   # r1:0 = C21:20
READ_HVX = ".word 0x6816c000"                    # r1:0 = C23:22 (r0: HVX instructions)
WRITE_HVX = ".word 0x6222c016"                   # C22 = r2
WRITE_PACKETS_INSTRUCTIONS = ".word 0x6320c014"  # C21:20 = r1:0
_HVX_INSTRUCTION = re.compile(r"\bv\d+|\bq[0-3]\b|\bvmem|\bvtmp")


class RewriteError(RuntimeError):
    """A packet whose semantics the rewriter cannot keep; the message names the packet."""


class UnknownHvxFp(RewriteError):
    """An HVX floating-point instruction the model does not know; the message names it."""


# ----------------------------------------------------------------------------- recognising instructions

_FP_TYPED = re.compile(r"\bv\d+(?::\d+)?\.(?:hf|sf|qf16|qf32|bf|f8)\b")
_FP_MNEMONIC = re.compile(r"\b(?:vconv|vcvt|vfmax|vfmin|vfneg|vfmv|vassign_fp)\b")
_BINARY = re.compile(
    r"^(v\d+(?::\d+)?)\.(qf16|qf32|hf|sf)\s*=\s*(vmpy|vadd|vsub|vmax|vmin)\(\s*"
    r"(v\d+)\.(hf|sf|qf16|qf32)\s*,\s*(v\d+)\.(hf|sf|qf16|qf32)\s*\)$")
_CONVERT = re.compile(r"^(v\d+)\.(hf|sf)\s*=\s*(v\d+(?::\d+)?)\.(qf16|qf32)$")
_FORMS = {form: name for name, (_, form, _, _) in qfloat.INSTRUCTIONS.items()}


def is_hvx_fp(instruction: str) -> bool:
    """Whether an instruction is HVX floating point (typed vector operand or FP mnemonic)."""
    return bool(_FP_TYPED.search(instruction) or _FP_MNEMONIC.search(instruction))


def _regs(text: str) -> list[int]:
    """Vector register numbers of an operand: ``v3`` -> [3], ``v1:0`` -> [0, 1] (low first)."""
    m = re.fullmatch(r"v(\d+)(?::(\d+))?", text)
    if m.group(2) is None:
        return [int(m.group(1))]
    hi, lo = int(m.group(1)), int(m.group(2))
    if hi != lo + 1 or lo % 2:
        raise RewriteError(f"not a vector register pair: {text}")
    return [lo, hi]


@dataclass
class FpInstr:
    text: str
    form: str          # canonical form, e.g. "vmpy(hf,hf)->qf16"
    name: str          # qfloat.INSTRUCTIONS key / qfm_<name> in the C model
    dst: list[int]     # destination registers (two for a pair, low first)
    srcs: list[list[int]]


def _normalise(instruction: str) -> str:
    text = re.sub(r"\bv\d+:\d+", "vNN", instruction)
    text = re.sub(r"\bv\d+", "vN", text)
    text = re.sub(r"\bq\d\b", "qN", text)
    text = re.sub(r"\br\d+", "rN", text)
    return re.sub(r"\s+", " ", text).strip()


def canonical_form(instruction: str) -> str:
    """``vmpy(hf,hf)->qf16`` style name of an HVX FP instruction (normalised text if unmodelled)."""
    text = instruction.strip()
    m = _BINARY.match(text)
    if m:
        dst = m.group(2) + (":pair" if ":" in m.group(1) else "")
        return f"{m.group(3)}({m.group(5)},{m.group(7)})->{dst}"
    m = _CONVERT.match(text)
    if m:
        src = m.group(4) + (":pair" if ":" in m.group(3) else "")
        return f"conv({src})->{m.group(2)}"
    return _normalise(text)


def parse_fp(instruction: str) -> FpInstr:
    """The model's view of one HVX FP instruction, or :class:`UnknownHvxFp` naming it."""
    text = instruction.strip()
    form = canonical_form(text)
    name = _FORMS.get(form)
    if name is None:
        raise UnknownHvxFp(f"HVX floating-point instruction not modelled: '{text}' (form {form})")
    m = _BINARY.match(text)
    if m:
        return FpInstr(text, form, name, _regs(m.group(1)), [_regs(m.group(4)), _regs(m.group(6))])
    m = _CONVERT.match(text)
    return FpInstr(text, form, name, _regs(m.group(1)), [_regs(m.group(3))])


# ----------------------------------------------------------------------------- reading assembly

_OPEN = re.compile(r"^\s*\{\s*$")
_CLOSE = re.compile(r"^\s*\}\s*(.*)$")
_ONE_LINE = re.compile(r"^(\s*)\{(.*)\}\s*(:[\w:]+)?\s*$")   # { a; b } :endloop0


@dataclass
class Packet:
    open_line: str
    lines: list[str]           # instruction lines as written (with their indentation)
    close_line: str
    suffix: str                # e.g. ":endloop0", "" if none
    number: int = 0            # 1-based index among the packets of the file
    line_no: int = 0           # line of the opening brace (1-based)
    raw: list = field(default_factory=list)   # the packet's lines exactly as read

    def instructions(self) -> list[str]:
        return [_strip_comment(line).strip() for line in self.lines if _strip_comment(line).strip()]

    def text(self) -> str:
        return " ; ".join(self.instructions()) + (" " + self.suffix if self.suffix else "")


def _strip_comment(line: str) -> str:
    return line.split("//", 1)[0]


def _is_bare_instruction(line: str) -> bool:
    code = _strip_comment(line).strip()
    if not code or code.startswith(".") or code.endswith(":") or code.startswith("#"):
        return False
    return line[:1] in (" ", "\t")


def parse(asm: str) -> list:
    """Items of an assembly text: plain lines (str) and :class:`Packet` objects, in order."""
    items: list = []
    lines = asm.splitlines(keepends=True)
    i, number = 0, 0
    while i < len(lines):
        line = lines[i]
        one = _ONE_LINE.match(_strip_comment(line).rstrip("\n"))
        if _OPEN.match(line):
            start = i
            body = []
            i += 1
            while i < len(lines) and not _CLOSE.match(lines[i]):
                if _OPEN.match(lines[i]):
                    raise RewriteError(f"line {i + 1}: packet opened inside a packet")
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise RewriteError(f"line {start + 1}: packet not closed")
            number += 1
            suffix = _CLOSE.match(lines[i]).group(1).strip()
            items.append(Packet(line, body, lines[i], suffix, number, start + 1,
                                lines[start:i + 1]))
        elif one:
            # A packet on one line: instructions separated by ';' (a compound instruction such as
            # "p0 = cmp.eq(r1,r2); if (!p0.new) jump:t .L" comes apart and is joined back).
            number += 1
            indent, body, suffix = one.group(1), one.group(2), one.group(3) or ""
            instrs = [part.strip() for part in body.split(";") if part.strip()]
            items.append(Packet(f"{indent}{{\n", [f"{indent}\t{x}\n" for x in instrs],
                                f"{indent}}}{' ' + suffix if suffix else ''}\n", suffix, number,
                                i + 1, [line]))
        elif _is_bare_instruction(line) and is_hvx_fp(_strip_comment(line)):
            # A lone instruction outside braces is a packet of one.
            number += 1
            indent = line[: len(line) - len(line.lstrip())]
            text = line if line.endswith("\n") else line + "\n"
            items.append(Packet(f"{indent}{{\n", [text], f"{indent}}}\n", "", number, i + 1, [line]))
        else:
            items.append(line)
        i += 1
    return items


# ----------------------------------------------------------------------------- other instructions

_VREG = re.compile(r"\bv(\d+)(?::(\d+))?(\.(?:new|cur|tmp))?")
_ASSIGN = re.compile(r"^(?:if\s*\([^)]*\)\s*)?(.+?)\s*([-+|&^]?=)(?!=)\s*(.+)$")
_CONTROL = re.compile(r"\b(?:jump|jumpr|call|callr|dealloc_return|trap0|trap1|rte|return)\b")


def _vector_regs(text: str):
    """(number, suffix) for every vector register named in ``text`` (pairs expanded)."""
    for m in _VREG.finditer(text):
        suffix = m.group(3) or ""
        if m.group(2) is not None:
            yield int(m.group(2)), suffix
            yield int(m.group(1)), suffix
        else:
            yield int(m.group(1)), suffix


@dataclass
class VectorUse:
    reads_old: set = field(default_factory=set)    # registers read as they were before the packet
    reads_new: set = field(default_factory=set)    # Vs.new consumers
    writes: set = field(default_factory=set)
    forwarded: set = field(default_factory=set)    # .cur / .tmp load destinations
    control: bool = False


def vector_use(instruction: str) -> VectorUse:
    """Conservative vector-register use of a non-FP instruction."""
    use = VectorUse(control=bool(_CONTROL.search(instruction)))
    m = _ASSIGN.match(instruction)
    if m is None or ";" in instruction:
        for reg, suffix in _vector_regs(instruction):      # no plain assignment: read and written
            (use.reads_new if suffix == ".new" else use.reads_old).add(reg)
            use.writes.add(reg)
        return use
    lhs, op, rhs = m.groups()
    for reg, suffix in _vector_regs(rhs):
        (use.reads_new if suffix == ".new" else use.reads_old).add(reg)
    if re.match(r"^(?:v?mem\w*|memu?[bhwd]\w*)\s*\(", lhs):     # a store: the lhs is an address
        for reg, _ in _vector_regs(lhs):
            use.reads_old.add(reg)
    else:
        for reg, suffix in _vector_regs(lhs):
            if suffix in (".cur", ".tmp"):
                use.forwarded.add(reg)
                if suffix == ".tmp":
                    continue
            use.writes.add(reg)
            if op != "=":
                use.reads_old.add(reg)
    return use


# ----------------------------------------------------------------------------- rewriting

@dataclass
class RewriteResult:
    text: str
    counts: Counter                 # canonical form -> instructions rewritten
    packets: int = 0                # packets that held HVX FP instructions
    loads_after: int = 0            # destinations loaded after their packet (old value read)
    new_reads: int = 0              # .new consumers turned into plain reads
    emptied: int = 0                # packets left with no instruction
    preloads: int = 0               # .cur loads repeated before their packet
    early_stores: int = 0           # .new stores done before their packet
    late_stores: int = 0            # .new stores done after their packet (it has loads)
    endloop_splits: int = 0         # packets split to load results before their :endloop
    vector: int = 0                 # instructions computed by the vector model


def _emit(lines: list[str], *instrs: str) -> None:
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
        code = _strip_comment(line).strip()
        if code.startswith(".word"):
            total += Counts(1, 1, 0)
        elif code.startswith("{"):
            parts = [part.strip() for part in code.strip("{} ").split(";") if part.strip() not in ("", "nop")]
            total += Counts(1, len(parts), sum(bool(_HVX_INSTRUCTION.search(part)) for part in parts))
    return total


def _open_window(out: list[str]) -> None:
    """Read the counters into __qfm_cnt_snap (r1:0 must be saved before: this changes them)."""
    out.append(f"\t{READ_PACKETS_INSTRUCTIONS}\n")
    _emit(out, f"memd(##{CNT_SNAP}) = r1:0")
    out.append(f"\t{READ_HVX}\n")
    _emit(out, f"memw(##{CNT_SNAP}+8) = r0")


def _close_window(out: list[str], adjust: Counts) -> None:
    """Write the counters back as read by _open_window plus ``adjust`` (changes r0-r3): everything
    in between is erased from the counts."""
    _emit(out, f"r1:0 = memd(##{CNT_SNAP})", f"r2 = #{adjust.packets}", f"r3 = #{adjust.instructions}")
    _emit(out, "r1:0 = vaddw(r1:0,r3:2)", f"r2 = memw(##{CNT_SNAP}+8)")
    _emit(out, f"r2 = add(r2,#{adjust.hvx})")
    out.append(f"\t{WRITE_HVX}\n")
    out.append(f"\t{WRITE_PACKETS_INSTRUCTIONS}\n")


#: What a window itself leaves counted: the packet that writes the packets and instructions back
#: counts itself (the write sets the counts as of the start of its packet).
_CLOSING = Counts(1, 1, 0)


def _window_adjust(target: Counts, before: Counts, after: Counts) -> Counts:
    """The adjustment that makes a window's code count as ``target``: the counts read when it
    opened include ``before`` (what ran since the kernel's jump to the stub), and ``after`` (the
    closing packet, the rest of the stub, and kernel packets the rewrite added) is counted after
    the write."""
    return target - before - after


def _save_context(out: list[str], scalars: set[int] | None = None, predicates: bool = True) -> None:
    """Save the scalar state the stub's calls may change to __qfm_ctx: the registers ``scalars``
    (R0-R15, R28, R31 when None: what any C function may change, and USR and M1:0 as well) and
    P3:0 with ``predicates``; open the counting window once R1:0 is saved. R0 becomes the
    context's address."""
    pairs = sorted({reg // 2 for reg in (scalars if scalars is not None else set(range(16)) | {28, 31})} | {0})
    _emit(out, f"memd(##{CTX}) = r1:0")
    _open_window(out)
    _emit(out, f"r0 = ##{CTX}")
    stores = [f"memd(r0+#{8 * k}) = r{2 * k + 1}:{2 * k}" for k in pairs if k]
    for i in range(0, len(stores), 2):
        _emit(out, *stores[i:i + 2])
    if scalars is None:
        _emit(out, "r2 = p3:0")
        _emit(out, "r3 = usr")
        _emit(out, "r5:4 = c7:6")
        _emit(out, f"memd(r0+#{PREDICATES}) = r3:2", f"memd(r0+#{MODIFIERS}) = r5:4")
    elif predicates:
        _emit(out, "r2 = p3:0")
        _emit(out, f"memw(r0+#{PREDICATES}) = r2")


def _restore_context(out: list[str], scalars: set[int] | None = None, predicates: bool = True) -> None:
    """Put back what :func:`_save_context` saved with the same arguments."""
    pairs = sorted({reg // 2 for reg in (scalars if scalars is not None else set(range(16)) | {28, 31})} | {0})
    _emit(out, f"r0 = ##{CTX}")
    if scalars is None:
        _emit(out, f"r3:2 = memd(r0+#{PREDICATES})", f"r5:4 = memd(r0+#{MODIFIERS})")
        _emit(out, "p3:0 = r2")
        _emit(out, "usr = r3")
        _emit(out, "c7:6 = r5:4")
    elif predicates:
        _emit(out, f"r2 = memw(r0+#{PREDICATES})")
        _emit(out, "p3:0 = r2")
    loads = [f"r{2 * k + 1}:{2 * k} = memd(r0+#{8 * k})" for k in pairs if k]
    for i in range(0, len(loads), 2):
        _emit(out, *loads[i:i + 2])
    _emit(out, "r1:0 = memd(r0+#0)")


def _slot(n: int) -> str:
    return f"##{VBUF}+{n * 128}" if n else f"##{VBUF}"


_CUR_LOAD = re.compile(
    r"^(?P<cond>if\s*\(\s*!?p\d\s*\)\s*)?v(?P<reg>\d+)\.cur\s*=\s*vmem\(\s*(?P<base>r\d+)\s*"
    r"(?:\+\s*#\s*(?P<off>-?\d+)|\+\+\s*#\s*-?\d+|\+\+\s*m[01])?\s*\)(?P<nt>:nt)?$")
_NEW_STORE = re.compile(
    r"^(?P<cond>if\s*\(\s*!?p\d\s*\)\s*)?vmem\(\s*r\d+\s*(?:\+\s*#\s*-?\d+)?\s*\)(?::nt)?\s*=\s*"
    r"v(?P<reg>\d+)\.new$")
_LOAD = re.compile(r"=\s*(?:v?memu?\w*|mem[bhwd]\w*)\s*\(|\bdealloc|\bmemw_locked\b")


def _written_scalars(code: str) -> set[str]:
    """Scalar and predicate registers an instruction writes: its destination and any base register
    it post-increments."""
    found = set()
    code = re.sub(r"^if\s*\(\s*!?p\d(?:\.new)?\s*\)\s*", "", code)
    head = code.split("=", 1)[0] if "=" in code else ""
    if "vmem" not in head and "mem" not in head:
        found |= set(re.findall(r"\b[rp]\d+\b", head.replace("if", "")))
    found |= set(re.findall(r"\b(r\d+)\s*\+\+", code))
    return found


@dataclass
class _Plan:
    """How one packet with HVX FP instructions is rewritten: what :func:`_plan` decides, and
    :func:`_emit_stub` and :func:`_emit_kernel_side` write."""

    packet: Packet
    where: str
    fps: list[FpInstr]
    rest: list[str]                # the packet's other instruction lines, moved .new stores taken out
    preloads: list[str]            # .cur loads feeding FP sources, repeated as plain loads
    early_stores: list[tuple]      # (register, store): .new stores done before the packet
    late_stores: list[tuple]       # ... after it
    after: set[int]                # destinations loaded after the packet (the packet reads the old value)
    dests: set[int]
    vector: list[bool]             # per FP instruction: computed by the vector model
    slot_of: dict[int, int] = field(default_factory=dict)      # scalar-model source -> its __qfm_vbuf slot
    result_slot: dict[int, int] = field(default_factory=dict)  # destination -> the slot its result waits in
    spare: int = 0                 # a free slot (early stores keep the old value there)
    bodies: list[_VectorBody] = field(default_factory=list)  # per arithmetic, see _plan_vector
    scalars: set[int] | None = None  # scalar registers the stub saves (None: all a C call may change)


@dataclass
class _VectorBody:
    """The vector model's part of a stub for one arithmetic (see :func:`_plan_vector`)."""

    arith: str
    kept: dict[int, int | None]    # clobbered register still read -> the free register keeping it, or None: __qfm_vsave
    restored: list[int]            # kept registers put back after the calls
    placed: list[tuple[str, int]]  # per vector-model instruction: ("direct", dst) / ("register", holder) / ("slot", slot)


def _plan_preloads(plan: _Plan, codes: list[str], uses: list[VectorUse], sources: list[int]) -> None:
    """FP sources forwarded by .cur loads: repeat the load first, as a plain load."""
    for code, use in zip(codes, uses):
        if not use.forwarded & set(sources):
            continue
        m = _CUR_LOAD.match(code)
        if m is None:
            raise RewriteError(f"HVX FP source forwarded by a .tmp (or unusual .cur) load in {plan.where}")
        if m.group("cond") and ".new" in m.group("cond"):
            raise RewriteError(f"HVX FP source loaded under a .new predicate in {plan.where}")
        plan.preloads.append(f"{m.group('cond') or ''}v{m.group('reg')} = vmem({m.group('base')}"
                             f"+#{m.group('off') or 0}){m.group('nt') or ''}")


def _plan_new_stores(plan: _Plan, codes: list[str], uses: list[VectorUse]) -> set[int]:
    """.new stores of a destination whose old value the packet also reads: store early, before the
    packet (with the new value); in a packet with loads, whose data must not see the store, store
    late instead: after the packet, once the destination holds its new value, provided nothing in
    the packet changes the store's address or predicate registers. Returns the moved lines."""
    reads_old = set().union(*(u.reads_old for u in uses)) if uses else set()
    reads_new = set().union(*(u.reads_new for u in uses)) if uses else set()
    moved = set()
    for reg in sorted(plan.dests & reads_old & reads_new):
        for i, code in enumerate(codes):
            if f"v{reg}.new" not in code:
                continue
            m = _NEW_STORE.match(code)
            if m is None or (m.group("cond") and ".new" in m.group("cond")):
                raise RewriteError(f"an HVX FP destination is read both old and by '{code}' "
                                   f"(not a plain .new vector store) in {plan.where}")
            plain = code.replace(f"v{reg}.new", f"v{reg}")
            moved.add(i)
            if not any(_LOAD.search(other) for other in codes):
                plan.early_stores.append((reg, plain))
                continue
            address = code.split("=")[0] if "vmem" in code.split("=")[0] else code
            written = {w for j, other in enumerate(codes) if j != i for w in _written_scalars(other)}
            if set(re.findall(r"\b[rp]\d+\b", address)) & written or any(u.control for u in uses):
                raise RewriteError(f"cannot move '{code}' before a packet with loads, nor after it: {plan.where}")
            plan.late_stores.append((reg, plain))
    return moved


def _plan(packet: Packet, fps: list[FpInstr], rest: list[str], model: VectorModelRegisters | None,
          dead: set[int]) -> _Plan:
    """The rewrite of one packet: preloads, moved .new stores, results placed after the packet,
    vbuf slots, and, for instructions of the vector model, the vector registers to keep."""
    where = f"packet {packet.number} (line {packet.line_no}): {{ {packet.text()} }}"
    plan = _Plan(packet, where, fps, rest, [], [], [], set(), {reg for fp in fps for reg in fp.dst}, [])
    codes = [_strip_comment(line).strip() for line in rest]
    uses = [vector_use(code) for code in codes]
    sources = [reg for fp in fps for src in fp.srcs for reg in src]
    _plan_preloads(plan, codes, uses, sources)
    reads_old = set().union(*(u.reads_old for u in uses)) if uses else set()
    moved = _plan_new_stores(plan, codes, uses)
    if moved:
        plan.rest = [line for i, line in enumerate(rest) if i not in moved]
        uses = [u for i, u in enumerate(uses) if i not in moved]
    reads_new = set().union(*(u.reads_new for u in uses)) if uses else set()
    forwarded = set().union(*(u.forwarded for u in uses)) if uses else set()
    plan.after = plan.dests & (reads_old - forwarded) | {reg for reg, _ in plan.late_stores}
    if plan.after & reads_new:
        raise RewriteError(f"an HVX FP destination is read both old and .new in {where}")
    if plan.after and any(u.control for u in uses):
        raise RewriteError(f"a destination of HVX FP is read (old value) by a packet that jumps, "
                           f"calls or returns: {where}")

    plan.vector = [model is not None and fp.name in VECTOR_FORMS and len(fp.dst) == 1 for fp in fps]
    if any(plan.vector):
        plan.bodies = [_plan_vector(plan, arith, model.vector[arith], dead) for arith in VECTOR_ENTRIES]
        if all(plan.vector):  # only the vector model is called: keep only what it (and the stub) may change
            used = {0, 1, 31} | set().union(*(model.scalar[arith][fp.name] for arith in VECTOR_ENTRIES for fp in fps))
            spills = any(None in body.kept.values() or any(how == "slot" for how, _ in body.placed)
                         for body in plan.bodies)
            used |= {2, 3}                                  # the counting window's close
            plan.scalars = used | set(range(1, 6)) if spills else used   # a spill routine uses r1-r5
    # Slots: each source of a scalar-model instruction once, then the results kept in memory, then a spare.
    for fp, vec in zip(fps, plan.vector):
        if not vec:
            for reg in (reg for src in fp.srcs for reg in src):
                plan.slot_of.setdefault(reg, len(plan.slot_of))
    free = len(plan.slot_of)
    vector_fps = [fp for fp, vec in zip(fps, plan.vector) if vec]
    for fp, vec in zip(fps, plan.vector):
        i = vector_fps.index(fp) if vec else -1
        if not vec or any(body.placed[i][0] == "slot" for body in plan.bodies):
            for reg in fp.dst:
                plan.result_slot[reg] = free
                free += 1
    for body in plan.bodies:
        body.placed = [(how, plan.result_slot[fp.dst[0]] if how == "slot" else at)
                       for fp, (how, at) in zip(vector_fps, body.placed)]
    plan.spare = free
    if free + 1 > VBUF_SLOTS:
        raise RewriteError(f"too many HVX FP operands in {where}")
    return plan


def _plan_vector(plan: _Plan, arith: str, vector_regs: dict, dead: set[int]) -> _VectorBody:
    """Where the vector model's instructions of the packet take their sources and leave their
    results, when it computes ``arith``. The model (sources in V0, V1, the result in V0) clobbers
    the registers ``vector_regs`` names; those whose values are still read (live after the
    packet, or a source of the packet) are *kept*: copied to a register that is dead here and that
    the model leaves alone (a register move: about a nanosecond under QEMU), or, when none is left,
    spilled to ``__qfm_vsave`` (see SPILL: some 100 ns). A result goes straight to its destination
    when nothing later in the stub can disturb it, else to a free register, else to a slot;
    results read after the packet (``after``) wait in slots."""
    vector_fps = [fp for fp, vec in zip(plan.fps, plan.vector) if vec]
    clobbered = set().union(*(vector_regs[fp.name] for fp in vector_fps))
    sources = {reg for fp in plan.fps for src in fp.srcs for reg in src}
    free = sorted(dead - clobbered - plan.dests - sources)
    kept = {reg: free.pop(0) if free else None for reg in sorted(clobbered & ((ALL_VECTOR - dead) | sources))}
    overwritten = plan.dests - plan.after
    placed = []
    for fp in vector_fps:
        dst = fp.dst[0]
        disturbed = dst in clobbered or dst in sources     # by a later call, or read by one
        if dst in plan.after or disturbed and not free:
            placed.append(("slot", 0))
        elif disturbed:
            placed.append(("register", free.pop(0)))
        else:
            placed.append(("direct", dst))
    return _VectorBody(arith, kept, sorted(set(kept) - overwritten), placed)


def _has_code(lines: list[str]) -> bool:
    return any(_strip_comment(line).strip() for line in lines)


def _instructions(codes) -> Counts:
    """Instructions moved out of a packet, as QEMU would have counted them in it."""
    codes = list(codes)
    return Counts(0, len(codes), sum(bool(_HVX_INSTRUCTION.search(code)) for code in codes))


def _emit_stub(plan: _Plan, label: str, stubs: list[str], result: RewriteResult) -> None:
    """The out-of-line code that runs before the packet: the scalar model's sources to memory and
    its calls, the vector model's calls for the arithmetic __qfm_arith selects (see
    :func:`_plan_vector`), results to their registers (or to memory, for those loaded after the
    packet), the context back; all in a counting window (:func:`_window_adjust`) whose target is
    what the kernel's packet no longer counts: its HVX FP instructions, the ``.new`` stores done
    here, and the packet itself if it was emptied away."""
    out = stubs
    out.append(f"{label}:\t// {plan.packet.text()}\n")
    before = Counts(1, 1, 0)                          # the kernel's jump here
    for load in plan.preloads:
        _emit(out, load)
        before += Counts(1, 1, 1)
        result.preloads += 1
    before += Counts(1, 1, 0)                         # the first packet of _save_context
    _save_context(out, plan.scalars)
    for reg, slot in plan.slot_of.items():  # the sources to memory, without a vector store (see SPILL)
        _emit(out, f"r1 = {_slot(slot)}")
        _emit(out, f"call {SPILL}{reg}")
    for fp, vec in zip(plan.fps, plan.vector):  # the scalar model touches no vector register
        if not vec:
            first = plan.slot_of[fp.srcs[0][0]]
            second = plan.slot_of[fp.srcs[1][0]] if len(fp.srcs) > 1 else first
            _emit(out, f"r0 = {_slot(first)}", f"r1 = {_slot(second)}")
            _emit(out, f"r2 = {_slot(plan.result_slot[fp.dst[0]])}")
            _emit(out, f"call qfm_{fp.name}")
        result.counts[fp.form] += 1
    if plan.bodies:
        qfloat, ieee = plan.bodies
        _emit(out, f"r0 = memw(##{ARITH})")
        _emit(out, "p0 = cmp.eq(r0,#0)", f"if (p0.new) jump:t {label}_qf")
        _emit_vector_body(plan, ieee, out)
        _emit(out, f"jump {label}_done")
        out.append(f"{label}_qf:\n")
        _emit_vector_body(plan, qfloat, out)
        out.append(f"{label}_done:\n")
        result.vector += sum(plan.vector)
    for fp, vec in zip(plan.fps, plan.vector):
        for reg in fp.dst if not vec else ():
            if reg not in plan.after:
                _emit(out, f"r1 = {_slot(plan.result_slot[reg])}")
                _emit(out, f"v{reg} = vmem(r1+#0)")
    tail: list[str] = []
    _restore_context(tail, plan.scalars)
    for reg, store in plan.early_stores:
        _emit(tail, f"memw(##{CTX}+{POST_SAVE}) = r0")
        _emit(tail, f"r0 = {_slot(plan.spare)}")
        _emit(tail, f"vmem(r0+#0) = v{reg}")
        _emit(tail, f"r0 = {_slot(plan.result_slot[reg])}")
        _emit(tail, f"v{reg} = vmem(r0+#0)")
        _emit(tail, f"r0 = memw(##{CTX}+{POST_SAVE})")
        _emit(tail, store)
        _emit(tail, f"memw(##{CTX}+{POST_SAVE}) = r0")
        _emit(tail, f"r0 = {_slot(plan.spare)}")
        _emit(tail, f"v{reg} = vmem(r0+#0)")
        _emit(tail, f"r0 = memw(##{CTX}+{POST_SAVE})")
        result.early_stores += 1
    _emit(tail, f"jump {label}_ret")
    kept, emptied = _has_code(plan.rest), not _has_code(plan.rest)
    nop = emptied and bool(plan.packet.suffix)        # an emptied loop end keeps its packet: { nop }
    target = (Counts(0 if kept or nop else 1, len(plan.fps), len(plan.fps))
              + _instructions(store for _reg, store in plan.early_stores))
    _close_window(out, _window_adjust(target, before, _CLOSING + counts_of(tail)))
    out.extend(tail)


def _emit_vector_body(plan: _Plan, body: _VectorBody, out: list[str]) -> None:
    """Keep what the model clobbers, call it per instruction, put everything back."""
    for reg, spare in body.kept.items():
        if spare is None:
            _emit(out, f"r1 = ##{VSAVE}+{reg * 128}")
            _emit(out, f"call {SPILL}{reg}")
        else:
            _emit(out, f"v{spare} = v{reg}")
    vector_fps = [fp for fp, vec in zip(plan.fps, plan.vector) if vec]
    for fp, (how, at) in zip(vector_fps, body.placed):
        for arg, src in enumerate(fp.srcs):  # the old value: a kept copy, or the untouched register
            spare = body.kept.get(src[0], src[0])
            if spare is None:
                _emit(out, f"r1 = ##{VSAVE}+{src[0] * 128}")
                _emit(out, f"v{arg} = vmem(r1+#0)")
            else:
                _emit(out, f"v{arg} = v{spare}")
        _emit(out, f"call {VECTOR_ENTRIES[body.arith]}{fp.name}")
        if how == "slot":
            _emit(out, f"r1 = {_slot(at)}")
            _emit(out, f"call {SPILL}0")
        else:
            _emit(out, f"v{at} = v0")
    for reg in body.restored:
        spare = body.kept[reg]
        if spare is None:
            _emit(out, f"r1 = ##{VSAVE}+{reg * 128}")
            _emit(out, f"v{reg} = vmem(r1+#0)")
        else:
            _emit(out, f"v{reg} = v{spare}")
    for fp, (how, at) in zip(vector_fps, body.placed):
        if how == "register":
            _emit(out, f"v{fp.dst[0]} = v{at}")
        elif how == "slot" and fp.dst[0] not in plan.after:
            _emit(out, f"r1 = {_slot(at)}")
            _emit(out, f"v{fp.dst[0]} = vmem(r1+#0)")


def _emit_kernel_side(plan: _Plan, label: str, out: list[str], stubs: list[str], result: RewriteResult) -> None:
    """In the kernel: the jump to the stub, the packet without its FP instructions, and the loads
    of results whose old values the packet read (split off an :endloop packet), in a counting
    window of their own that counts as the ``.new`` stores it does."""
    packet = plan.packet
    out.append(f"\t// qfloat model: {packet.text()}\n")
    _emit(out, f"jump {label}")
    out.append(f"{label}_ret:\n")
    kept = []
    for line in plan.rest:
        new_line = line
        for reg in plan.dests - plan.after:
            new_line, n = re.subn(rf"\bv{reg}\.new\b", f"v{reg}", new_line)
            result.new_reads += n
        kept.append(new_line)
    split = bool(plan.after) and bool(packet.suffix)       # the loads go before the :endloop packet
    if _has_code(kept):
        out.append(packet.open_line)
        out.extend(kept)
        out.append(re.sub(r"\}.*", "}", packet.close_line) if split else packet.close_line)
    elif packet.suffix:
        out.append(packet.open_line)
        out.append("\t\tnop\n")
        out.append(packet.close_line)
        result.emptied += 1
    else:
        result.emptied += 1
    if plan.after:
        _emit(out, f"jump {label}_post")
        out.append(f"{label}_post_ret:\n")
        stubs.append(f"{label}_post:\n")
        _emit(stubs, f"memd(##{CTX}+{POST_SAVE}) = r1:0")
        _open_window(stubs)
        _emit(stubs, f"memd(##{CTX}+{POST_SAVE}+8) = r3:2")
        for reg in sorted(plan.after):
            _emit(stubs, f"r0 = {_slot(plan.result_slot[reg])}")
            _emit(stubs, f"v{reg} = vmem(r0+#0)")
        tail: list[str] = []
        _emit(tail, f"r1:0 = memd(##{CTX}+{POST_SAVE})")
        _emit(tail, f"r3:2 = memd(##{CTX}+{POST_SAVE}+8)")
        for _reg, store in plan.late_stores:
            _emit(tail, store)
            result.late_stores += 1
        _emit(tail, f"jump {label}_post_ret")
        after = _CLOSING + counts_of(tail) + (Counts(1, 0, 0) if split else Counts())   # and the { nop } below
        target = _instructions(store for _reg, store in plan.late_stores)
        _close_window(stubs, _window_adjust(target, Counts(2, 2, 0), after))  # the jump here, the save
        stubs.extend(tail)
        result.loads_after += len(plan.after)
    if split:
        out.append(packet.open_line)
        out.append("\t\tnop\n")
        out.append(packet.close_line)
        result.endloop_splits += 1
    result.packets += 1


# ----------------------------------------------------------------------------- the object's padding

_ALIGNMENT = re.compile(r"^\s*\.(?:p2align|balign|align|falign)\b")
_SECTION = re.compile(r"^\s*(?:\.section\s+([^,\s]+)|\.(text|data|bss)\s*$)")
_DISASSEMBLY_SECTION = re.compile(r"^Disassembly of section (\S+):")
_DISASSEMBLED_WORD = re.compile(r"^\s*[0-9a-f]+:\t(?:[0-9a-f]{2} ){3}[0-9a-f]{2}\t[0-9a-f]{8}(.*)$")


def _object_packets(obj: Path) -> dict[str, list[bool]]:
    """Per executable section of ``obj``: its packets in order, True for a packet of nops only."""
    sections: dict[str, list[bool]] = {}
    current, words = None, []
    for line in hexagon.disassemble(obj).splitlines():
        if head := _DISASSEMBLY_SECTION.match(line):
            current = sections.setdefault(head.group(1), [])
            continue
        word = _DISASSEMBLED_WORD.match(line)
        if word is None or current is None:
            continue
        words += [part.strip() for part in word.group(1).replace("{", " ").split("}")[0].split(";") if part.strip()]
        if "}" in word.group(1):
            current.append(bool(words) and all(part == "nop" for part in words))
            words = []
    return sections


def _assembly_packets(items: list) -> dict[str, list[int]]:
    """Per section of an assembly text: the indices in ``items`` of its packets, in order."""
    sections: dict[str, list[int]] = {}
    section = ".text"
    for index, item in enumerate(items):
        if isinstance(item, Packet):
            sections.setdefault(section, []).append(index)
        elif found := _SECTION.match(_strip_comment(item)):
            section = found.group(1) or f".{found.group(2)}"
        elif _is_bare_instruction(item):
            sections.setdefault(section, []).append(index)
    return sections


def _padding_positions(items: list, padding: dict[int, int]) -> dict[int, int]:
    """Where the padding before a packet goes in the text: at the alignment directive that made
    it, before the labels it aligns (a jump to them skips it), else before those labels."""
    found = {}
    for index, count in padding.items():
        start = index
        while start > 0 and isinstance(items[start - 1], str) and not _is_bare_instruction(items[start - 1]) \
                and not _SECTION.match(_strip_comment(items[start - 1])):
            start -= 1
        aligned = [k for k in range(start, index) if _ALIGNMENT.match(items[k])]
        where = aligned[-1] if aligned else start
        found[where] = found.get(where, 0) + count
    return found


def object_padding(asm: str, obj: Path) -> dict[int, int]:
    """{index in :func:`parse` of ``asm`` of a packet: how many packets of nops the object ``obj``,
    assembled from ``asm``, has right before it that ``asm`` has not}: the padding its assembler
    put in for alignment directives. They run (and count, as packets of no instruction) wherever
    code falls through to an aligned label, and assemblers place them differently (LLVM 22, which
    builds TVM's object, puts more than clang 14, which assembles the rewritten kernel), so the
    rewrite reproduces TVM's instead of aligning anew (:func:`rewrite`). RewriteError when the two
    do not match packet for packet."""
    items = parse(asm)
    object_side = _object_packets(obj)
    padding: dict[int, int] = {}
    for name, indices in _assembly_packets(items).items():
        packets = object_side.get(name)
        if packets is None:
            raise RewriteError(f"the object has no section {name} of its assembly")
        position = 0
        for nops_only in packets:
            ours = items[indices[position]] if position < len(indices) else None
            ours_nops = isinstance(ours, Packet) and all(code == "nop" for code in ours.instructions())
            if ours is not None and (not nops_only or ours_nops):
                position += 1
            elif nops_only and ours is not None:
                padding[indices[position]] = padding.get(indices[position], 0) + 1
            elif not nops_only:
                raise RewriteError(f"section {name} of the object has more packets than its assembly")
        if position != len(indices):
            raise RewriteError(f"section {name} of the object has {len(packets)} packets, its assembly "
                               f"{len(indices)} that do not match them")
    return padding


# ----------------------------------------------------------------------------- liveness

_LABEL = re.compile(r"^\s*([.\w$]+):")
# A target may be written extended, "##.LBB4_5": LLVM does so when it cannot prove the short form reaches.
_BRANCH = re.compile(r"\bjump(?::\w+)?\s+#{0,2}([.\w$]+)\s*$")
_LOOP_SETUP = re.compile(r"\b(?:sp[123])?loop([01])\s*\(\s*#{0,2}([.\w$]+)\s*,")
_RETURN = re.compile(r"\bjumpr(?::\w+)?\s+r31\b|\bdealloc_return\b")
_OTHER_JUMP = re.compile(r"\bjumpr(?::\w+)?\s+r(?!31\b)\d+|\b(?:trap[01]|rte)\b")
ALL_VECTOR = frozenset(range(32))


def _packet_vector_use(instructions: list[str]) -> tuple[set[int], set[int]]:
    """(vector registers a packet reads, those it surely writes: unconditionally, not .tmp)."""
    reads, writes = set(), set()
    for code in instructions:
        if is_hvx_fp(code):
            try:
                fp = parse_fp(code)
            except UnknownHvxFp:  # reported where the packet itself is rewritten
                return set(ALL_VECTOR), set()
            reads |= {reg for src in fp.srcs for reg in src}
            writes |= set(fp.dst)
            continue
        use = vector_use(code)
        reads |= use.reads_old | use.reads_new
        if not code.startswith("if"):
            writes |= use.writes
    return reads, writes


def vector_liveness(items: list) -> dict[int, frozenset[int]]:
    """{index of a packet in ``items``: the vector registers live on entry to it}, i.e. whose value
    before the packet some path from it may read: a backward data-flow over the assembly's control
    flow (fall-through, branches to labels, a hardware loop's end back to the label its loopN set
    up). A return reads none (HVX registers are caller-saved: nothing returns in them); a call
    reads none and falls through; a jump through a register other than R31 may read any."""
    steps, label_at = [], {}
    for index, item in enumerate(items):
        if isinstance(item, Packet):
            steps.append((index, item.instructions(), item.suffix))
        elif (label := _LABEL.match(_strip_comment(item))) and not item.lstrip().startswith("//"):
            label_at[label.group(1)] = len(steps)
        elif _is_bare_instruction(item):
            steps.append((index, [_strip_comment(item).strip()], ""))
    loop_starts = {"0": set(), "1": set()}
    for _, codes, _ in steps:
        for code in codes:
            for m in _LOOP_SETUP.finditer(code):
                loop_starts[m.group(1)].add(m.group(2))
    successors, uses = [], []
    for position, (_, codes, suffix) in enumerate(steps):
        reads, writes = _packet_vector_use(codes)
        following, falls_through = set(), True
        for code in codes:
            conditional = "if" in re.split(r"\bjump|\bdealloc_return", code)[0]
            if _RETURN.search(code):
                falls_through = falls_through and conditional
            elif _OTHER_JUMP.search(code):
                reads = set(ALL_VECTOR)
            elif branch := _BRANCH.search(code):
                if branch.group(1) not in label_at:  # a tail call, or a label this text lacks
                    reads = set(ALL_VECTOR)
                following.add(label_at.get(branch.group(1), len(steps)))
                falls_through = falls_through and conditional
            elif re.search(r"\bjump", code):   # a jump of a form not known here: it may read anything
                reads = set(ALL_VECTOR)
        for loop in re.findall(r"endloop([01]+)", suffix):
            for digit in loop:  # the loop's body starts at the nearest label set up as its start
                starts = [label_at[name] for name in loop_starts[digit] if label_at.get(name, len(steps)) <= position]
                if not starts:
                    reads = set(ALL_VECTOR)
                else:
                    following.add(max(starts))
        if falls_through:
            following.add(position + 1)
        successors.append({p for p in following if p < len(steps)})
        uses.append((frozenset(reads), frozenset(writes)))
    live_in = [frozenset()] * len(steps)
    changed = True
    while changed:
        changed = False
        for position in range(len(steps) - 1, -1, -1):
            reads, writes = uses[position]
            out = frozenset().union(*(live_in[p] for p in successors[position]))
            found = reads | (out - writes)
            if found != live_in[position]:
                live_in[position], changed = found, True
    return {steps[position][0]: live_in[position] for position in range(len(steps))}


def rewrite(asm: str, model: VectorModelRegisters | None = None, padding: dict[int, int] | None = None) -> RewriteResult:
    """The assembly with every HVX FP instruction replaced by a call into the HVX model.

    ``model`` (:func:`vector_model_registers`): what the vector model's entry points change; with
    it, the instructions of VECTOR_FORMS go to the vector model, without it every instruction goes
    to the scalar model. ``padding`` (:func:`object_padding`): the packets of nops TVM's object
    has before packets of ``asm``; given, they are written out as such and the code's alignment
    directives dropped, so that the kernel executes the same packets as TVM's object. Text without
    HVX FP instructions comes back unchanged (but for that). Raises :class:`UnknownHvxFp` for an HVX
    FP instruction the model does not know and :class:`RewriteError` for a packet whose semantics
    cannot be kept.
    """
    result = RewriteResult("", Counter())
    out: list[str] = []
    stubs: list[str] = []
    items = parse(asm)
    live = vector_liveness(items) if model else {}
    code_sections = set(_assembly_packets(items)) if padding is not None else set()
    nops_at = _padding_positions(items, padding or {})
    section = ".text"
    for index, item in enumerate(items):
        out.extend(["\t{ nop }\n"] * nops_at.get(index, 0))
        if isinstance(item, str):
            if found := _SECTION.match(_strip_comment(item)):
                section = found.group(1) or f".{found.group(2)}"
            if not (section in code_sections and _ALIGNMENT.match(item)):   # TVM's padding instead
                out.append(item)
            continue
        fps, rest = [], []
        for line in item.lines:
            code = _strip_comment(line).strip()
            if code and is_hvx_fp(code):
                fps.append(parse_fp(code))
            else:
                rest.append(line)
        if not fps:
            out.extend(item.raw)
            continue
        dead = set(ALL_VECTOR - live[index]) if model else set()
        plan = _plan(item, fps, rest, model, dead)
        label = f".Lqfm_{item.number}"
        _emit_kernel_side(plan, label, out, stubs, result)
        _emit_stub(plan, label, stubs, result)
    if stubs:
        out.append("\n// qfloat model stubs (suite/targets/hvx_rewrite.py)\n")
        out.append(f"\t.section\t{STUB_SECTION},\"ax\",@progbits\n\t.p2align\t4\n")
        out.extend(stubs)
    result.text = "".join(out)
    return result


# ----------------------------------------------------------------------------- census


def census(asm: str) -> Counter:
    """HVX FP instruction forms in an assembly text: canonical form -> number of lines."""
    counts: Counter = Counter()
    for line in asm.splitlines():
        code = _strip_comment(line).strip().strip("{}").strip()
        if code and not code.startswith(".") and is_hvx_fp(code):
            counts[canonical_form(code)] += 1
    return counts


# ----------------------------------------------------------------------------- building


def _clang(arch: str, hvx: bool) -> list[str]:
    flags = ["clang", "--target=hexagon-unknown-linux-musl", f"-mcpu=hexagon{arch}"]
    if hvx:
        flags += ["-mhvx", "-mhvx-length=128b"]
    return flags


_MODEL_FORBIDDEN = re.compile(r"\b(?:loop[01]|sa[01]|lc[01]|usr|gp|m[01]|c\d+)\b|:sat\b"
                              r"|\b(?:call|jump)(?::\w+)?\s+(?!\.L|(?:qf|ieee|vq|vi|half)_)")
#: What the vector model must not do on top: store a vector (QEMU spends over 1 us on each: the
#: spills of a compiler out of registers included) or touch the kernel's predicates Q0-Q3.
_VECTOR_FORBIDDEN = re.compile(r"\bvmem\w*\([^)]*\)(?::\w+)?\s*=|\bq[0-3]\b")


#: ``__qfm_spill_vN``: vector register N to the 128 bytes at r1, by word extractions and scalar
#: stores (clobbers r2-r5). QEMU (10.0, the one the suite runs) spends about 1.25 us on every HVX
#: vector store, against about 30 ns for 32 extractions and 16 scalar stores; vector loads are
#: cheap. The stubs put sources, results and the registers the vector model clobbers into memory
#: with these, and read them back with vector loads.
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


def _check_listing(name: str, listing: str, forbidden) -> None:
    for line in listing.splitlines():
        code = _strip_comment(line).strip()
        if code and not code.startswith(".") and forbidden.search(code):
            raise RuntimeError(f"{name} code touches caller state: {code!r}")


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


def _vector_registers(listing: str) -> VectorModelRegisters:
    """The registers the vector model's entry points use, from its compiled assembly."""
    functions, calls, current = {}, {}, None
    predicates = False
    for line in listing.splitlines():
        code = _strip_comment(line).strip()
        # A label is the whole line: "r1:0 = combine(...)" is a register pair, not a label.
        head = re.fullmatch(r"([A-Za-z_]\w*):", code)
        if head:
            current = head.group(1)
            functions[current], calls[current] = (set(), set()), set()
            continue
        if current is None or not code or code.startswith("."):
            continue
        vector, scalar = functions[current]
        vector |= {reg for reg, _ in _vector_regs(code)}
        for high, low in re.findall(r"\br(\d+)(?::(\d+))?\b", code):
            scalar |= {int(high)} | ({int(low)} if low else set())
        predicates |= bool(re.search(r"\bp[0-3]\b", code))
        calls[current] |= set(re.findall(r"\b(?:call|jump)(?::\w+)?\s+([A-Za-z_]\w*)", code))
    found = {"vector": {}, "scalar": {}}
    for arith, prefix in VECTOR_ENTRIES.items():
        found["vector"][arith], found["scalar"][arith] = {}, {}
        for name in (n for n in functions if n.startswith(prefix)):
            seen, todo, vector, scalar = set(), [name], set(), set()
            while todo:
                function = todo.pop()
                if function in seen or function not in functions:
                    continue
                seen.add(function)
                vector |= functions[function][0]
                scalar |= functions[function][1]
                todo += list(calls[function])
            found["vector"][arith][name.removeprefix(prefix)] = frozenset(vector)
            found["scalar"][arith][name.removeprefix(prefix)] = frozenset(scalar - CALLEE_SAVED)
        if set(found["vector"][arith]) != set(VECTOR_FORMS):
            raise RuntimeError(f"vector_model.c defines {prefix}{sorted(found['vector'][arith])}, not the VECTOR_FORMS")
    return VectorModelRegisters(found["vector"], found["scalar"], predicates)


def model_object(arch: str = "v68") -> Path:
    """The HVX floating-point model compiled for ``arch`` and linked into one relocatable object
    (``hvx_model.c``, the scalar qfloat model and its IEEE twin, the vector model, the spill
    routines), cached by sources, flags and clang version; beside it ``vector_registers.json``
    (:func:`vector_model_registers`).

    Refuses a model whose code would touch what the rewritten kernel keeps live across the call
    without saving it: hardware-loop registers, GP, saturation flags, calls to anything but the
    models' own functions (runtime helpers, memcpy), and in the vector model vector stores and
    predicate registers.
    """
    _model_entry(arch)
    return _model_entry(arch) / "hvx_model.o"


def vector_model_registers(arch: str = "v68") -> VectorModelRegisters:
    """The registers the vector model's entry points may change (see :class:`VectorModelRegisters`)."""
    return VectorModelRegisters.from_json((_model_entry(arch) / "vector_registers.json").read_text())


def _model_entry(arch: str) -> Path:
    sources = {path.name: path.read_text() for path in MODEL_SOURCES + (VECTOR_SOURCE,)}
    key = {"sources": sources, "rewrite": cache.file_digest(Path(__file__)), "flags": MODEL_FLAGS,
           "vector_flags": VECTOR_FLAGS, "clang": hexagon.tool_version("clang"), "arch": arch}
    where = cache.entry("qfloat-model", arch, key)
    if cache.load_entry(where, ("hvx_model.o", "vector_registers.json")):
        return where
    with tempfile.TemporaryDirectory() as tmp:
        objects = []
        for source, flags, hvx, forbidden in [(s, MODEL_FLAGS, False, None) for s in MODEL_SOURCES] + [
                (VECTOR_SOURCE, VECTOR_FLAGS, True, _VECTOR_FORBIDDEN)]:
            listing = Path(tmp) / f"{source.stem}.s"
            hexagon.check_run(_clang(arch, hvx) + flags + ["-S", str(source), "-o", str(listing)],
                              f"compiling {source.name}")
            _check_listing(source.name, listing.read_text(), _MODEL_FORBIDDEN)
            if forbidden is not None:
                _check_listing(source.name, listing.read_text(), forbidden)
                registers = _vector_registers(listing.read_text())
            objects.append(Path(tmp) / f"{source.stem}.o")
            hexagon.check_run(_clang(arch, hvx) + flags + ["-c", str(source), "-o", str(objects[-1])],
                              f"compiling {source.name}")
        spill = Path(tmp) / "spill.s"
        spill.write_text(spill_source())
        objects.append(Path(tmp) / "spill.o")
        hexagon.check_run(_clang(arch, True) + ["-c", str(spill), "-o", str(objects[-1])], "assembling the spills")
        cache.store_entry(where, {
            "hvx_model.o": lambda out: hexagon.check_run(["ld.lld", "-r", *map(str, objects), "-o", out],
                                                         "linking the HVX model"),
            "vector_registers.json": lambda out: Path(out).write_text(registers.to_json())})
    return where


def assemble(asm: str, obj: Path, arch: str = "v68") -> None:
    """Assemble LLVM 22 Hexagon assembly with clang 14 (``.attribute`` lines dropped)."""
    text = "".join(line for line in asm.splitlines(keepends=True)
                   if not line.lstrip().startswith(".attribute"))
    # TVM's assembly declares its line-table file relative to "." (`.file 1 "." ...`); the
    # assembler would record the working directory (a random temporary one under asv) as the
    # DWARF compilation directory. A fixed one keeps the object, the ELF, and so the emulation
    # cache key, the same wherever and whenever the same code is assembled.
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.s"
        src.write_text(text)
        command = _clang(arch, True) + ["-fdebug-compilation-dir=.", "-c", str(src), "-o", str(obj)]
        hexagon.check_run(command, "assembling the rewritten kernel")


def build_qfloat_elf(asm_text: str, out_elf_path, arch: str = "v68", tvm_object: Path | None = None) -> dict:
    """Rewrite, assemble and link a kernel's assembly with the harness and the qfloat model.

    ``tvm_object``: the object TVM built from that assembly, whose alignment padding the kernel
    keeps (:func:`object_padding`); without it, the assembler aligns anew. The rewritten object is
    written beside the ELF (``<name>.rewritten.o``). Returns statistics: instructions rewritten per
    canonical form, packets, loads placed after their packet, ``.new`` reads, and the seconds each
    step took.
    """
    hexagon.require_tools(("clang", "ld.lld"), "the qfloat build")
    t0 = time.perf_counter()
    padding = object_padding(asm_text, Path(tvm_object)) if tvm_object is not None else None
    result = rewrite(asm_text, vector_model_registers(arch), padding)
    t1 = time.perf_counter()
    out_elf = Path(out_elf_path)
    out_elf.parent.mkdir(parents=True, exist_ok=True)
    obj = out_elf.with_name(out_elf.stem + ".rewritten.o")
    assemble(result.text, obj, arch)
    t2 = time.perf_counter()
    harness = hexagon.harness_object(arch)
    model = model_object(arch)
    hexagon.link([obj, harness, model], out_elf)
    t3 = time.perf_counter()
    return {"rewritten": dict(result.counts), "instructions": sum(result.counts.values()),
            "packets": result.packets, "loads_after": result.loads_after,
            "new_reads": result.new_reads, "emptied_packets": result.emptied,
            "preloads": result.preloads, "early_stores": result.early_stores, "late_stores": result.late_stores,
            "endloop_splits": result.endloop_splits, "padding_packets": sum((padding or {}).values()),
            "rewrite_s": t1 - t0, "assemble_s": t2 - t1, "link_s": t3 - t2}
