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

  1. *before the packet*: save the scalar context a C call can clobber (r0-r15, r28, r31, p3:0,
     USR, M1:0) to ``__qfm_ctx``; store the source vector registers of F (old values: nothing of
     the packet has executed yet) to ``__qfm_vbuf``; call one ``qfm_<name>`` per instruction of F,
     each writing its result to its own slot, so FP instructions of one packet read each other's
     old values as in hardware; load the results of F into their destination registers unless a
     remaining instruction of the packet reads a destination's *old* value; restore the context;
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

The model is compiled without HVX (it never touches vector registers), with ``-G0`` (no GP) and
without hardware loops (SA0/LC0/SA1/LC1 of the kernel's loops survive the call);
:func:`model_object` checks its assembly for that.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from suite import cache
from suite.targets import hexagon, qfloat

#: The model the rewritten code calls: hvx_model.c (entry points, scratch memory, which arithmetic),
#: qfloat_model.c (qfloat) and ieee_model.c (its IEEE twin, see suite.targets.ieee_twin).
MODEL_SOURCES = tuple(Path(__file__).with_name(name) for name in ("hvx_model.c", "qfloat_model.c", "ieee_model.c"))
MODEL_FLAGS = ["-O2", "-ffreestanding", "-fno-builtin", "-nostdlib", "-G0",
               "-mllvm", "-disable-hexagon-hwloops"]
CTX, VBUF = "__qfm_ctx", "__qfm_vbuf"
VBUF_SLOTS = 16
POST_SAVE = 30 * 4          # __qfm_ctx word used to keep r0 around post-packet loads
STUB_SECTION = ".text.qfm_stubs"


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


def _emit(lines: list[str], *instrs: str) -> None:
    lines.append("\t{ " + "; ".join(instrs) + " }\n")


def _save_context(out: list[str]) -> None:
    _emit(out, f"memd(##{CTX}) = r1:0")
    _emit(out, f"r0 = ##{CTX}")
    _emit(out, "memd(r0+#8) = r3:2", "memd(r0+#16) = r5:4")
    _emit(out, "memd(r0+#24) = r7:6", "memd(r0+#32) = r9:8")
    _emit(out, "memd(r0+#40) = r11:10", "memd(r0+#48) = r13:12")
    _emit(out, "memd(r0+#56) = r15:14", "memd(r0+#64) = r29:28")
    _emit(out, "memd(r0+#72) = r31:30")
    _emit(out, "r2 = p3:0")
    _emit(out, "r3 = usr")
    _emit(out, "r5:4 = c7:6")
    _emit(out, "memd(r0+#80) = r3:2", "memd(r0+#88) = r5:4")


def _restore_context(out: list[str]) -> None:
    _emit(out, f"r0 = ##{CTX}")
    _emit(out, "r3:2 = memd(r0+#80)", "r5:4 = memd(r0+#88)")
    _emit(out, "p3:0 = r2")
    _emit(out, "usr = r3")
    _emit(out, "c7:6 = r5:4")
    _emit(out, "r3:2 = memd(r0+#8)", "r5:4 = memd(r0+#16)")
    _emit(out, "r7:6 = memd(r0+#24)", "r9:8 = memd(r0+#32)")
    _emit(out, "r11:10 = memd(r0+#40)", "r13:12 = memd(r0+#48)")
    _emit(out, "r15:14 = memd(r0+#56)", "r29:28 = memd(r0+#64)")
    _emit(out, "r31:30 = memd(r0+#72)")
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


def _rewrite_packet(packet: Packet, fps: list[FpInstr], rest: list[str], result: RewriteResult,
                    out: list[str], stubs: list[str]) -> None:
    where = f"packet {packet.number} (line {packet.line_no}): {{ {packet.text()} }}"
    codes = [_strip_comment(line).strip() for line in rest]
    uses = [vector_use(code) for code in codes]
    dests = {reg for fp in fps for reg in fp.dst}
    sources = [reg for fp in fps for src in fp.srcs for reg in src]

    # FP sources forwarded by .cur loads: repeat the load first, as a plain load.
    preloads = []
    for code, use in zip(codes, uses):
        hit = use.forwarded & set(sources)
        if not hit:
            continue
        m = _CUR_LOAD.match(code)
        if m is None:
            raise RewriteError(f"HVX FP source forwarded by a .tmp (or unusual .cur) load in {where}")
        if m.group("cond") and ".new" in m.group("cond"):
            raise RewriteError(f"HVX FP source loaded under a .new predicate in {where}")
        preloads.append(f"{m.group('cond') or ''}v{m.group('reg')} = vmem({m.group('base')}"
                        f"+#{m.group('off') or 0}){m.group('nt') or ''}")

    # .new stores of a destination whose old value the packet also reads: store early, before the
    # packet (with the new value); in a packet with loads, whose data must not see the store,
    # store late instead: after the packet, once the destination holds its new value, provided
    # nothing in the packet changes the store's address or predicate registers.
    reads_old = set().union(*(u.reads_old for u in uses)) if uses else set()
    reads_new = set().union(*(u.reads_new for u in uses)) if uses else set()
    early_stores, late_stores = [], []
    for reg in sorted(dests & reads_old & reads_new):
        for i, code in enumerate(codes):
            if f"v{reg}.new" not in code:
                continue
            m = _NEW_STORE.match(code)
            if m is None or (m.group("cond") and ".new" in m.group("cond")):
                raise RewriteError(f"an HVX FP destination is read both old and by '{code}' "
                                   f"(not a plain .new vector store) in {where}")
            plain = code.replace(f"v{reg}.new", f"v{reg}")
            if not any(_LOAD.search(other) for other in codes):
                early_stores.append((reg, plain, i))
                continue
            needed = set(re.findall(r"\b[rp]\d+\b", code.split("=")[0] if "vmem" in code.split("=")[0] else code))
            written = {w for j, other in enumerate(codes) if j != i for w in _written_scalars(other)}
            if needed & written or any(u.control for u in uses):
                raise RewriteError(f"cannot move '{code}' before a packet with loads, nor after it: {where}")
            late_stores.append((reg, plain, i))
    if early_stores or late_stores:
        moved = {i for _, _, i in early_stores + late_stores}
        rest = [line for i, line in enumerate(rest) if i not in moved]
        codes = [c for i, c in enumerate(codes) if i not in moved]
        uses = [u for i, u in enumerate(uses) if i not in moved]
        reads_new = set().union(*(u.reads_new for u in uses)) if uses else set()
    forwarded = set().union(*(u.forwarded for u in uses)) if uses else set()
    after = dests & (reads_old - forwarded) | {reg for reg, _, _ in late_stores}
    if after & reads_new:
        raise RewriteError(f"an HVX FP destination is read both old and .new in {where}")
    jumps = any(u.control for u in uses)
    if after and jumps:
        raise RewriteError(f"a destination of HVX FP is read (old value) by a packet that jumps, "
                           f"calls or returns: {where}")

    # Vector slots: each source register once, then the results, then spares.
    slot_of: dict[int, int] = {}
    for reg in sources:
        slot_of.setdefault(reg, len(slot_of))
    result_slot = []
    free = len(slot_of)
    for fp in fps:
        result_slot.append(free)
        free += len(fp.dst)
    spare = free
    if free + 1 > VBUF_SLOTS:
        raise RewriteError(f"too many HVX FP operands in {where}")
    slot_of_result = {reg: dslot + k for fp, dslot in zip(fps, result_slot)
                      for k, reg in enumerate(fp.dst)}

    label = f".Lqfm_{packet.number}"
    out.append(f"\t// qfloat model: {packet.text()}\n")
    _emit(out, f"jump {label}")
    out.append(f"{label}_ret:\n")
    main = out
    out = stubs
    out.append(f"{label}:\t// {packet.text()}\n")
    for load in preloads:
        _emit(out, load)
        result.preloads += 1
    _save_context(out)
    for reg, slot in slot_of.items():
        _emit(out, f"r1 = {_slot(slot)}")
        _emit(out, f"vmem(r1+#0) = v{reg}")
    for fp, dslot in zip(fps, result_slot):
        first = slot_of[fp.srcs[0][0]]
        second = slot_of[fp.srcs[1][0]] if len(fp.srcs) > 1 else first
        _emit(out, f"r0 = {_slot(first)}", f"r1 = {_slot(second)}")
        _emit(out, f"r2 = {_slot(dslot)}")
        _emit(out, f"call qfm_{fp.name}")
        result.counts[fp.form] += 1
    for reg, slot in slot_of_result.items():
        if reg not in after:
            _emit(out, f"r1 = {_slot(slot)}")
            _emit(out, f"v{reg} = vmem(r1+#0)")
    _restore_context(out)
    for reg, store, _ in early_stores:
        _emit(out, f"memw(##{CTX}+{POST_SAVE}) = r0")
        _emit(out, f"r0 = {_slot(spare)}")
        _emit(out, f"vmem(r0+#0) = v{reg}")
        _emit(out, f"r0 = {_slot(slot_of_result[reg])}")
        _emit(out, f"v{reg} = vmem(r0+#0)")
        _emit(out, f"r0 = memw(##{CTX}+{POST_SAVE})")
        _emit(out, store)
        _emit(out, f"memw(##{CTX}+{POST_SAVE}) = r0")
        _emit(out, f"r0 = {_slot(spare)}")
        _emit(out, f"v{reg} = vmem(r0+#0)")
        _emit(out, f"r0 = memw(##{CTX}+{POST_SAVE})")
        result.early_stores += 1
    _emit(out, f"jump {label}_ret")
    out = main

    kept = []
    for line in rest:
        new_line = line
        for reg in dests - after:
            new_line, n = re.subn(rf"\bv{reg}\.new\b", f"v{reg}", new_line)
            result.new_reads += n
        kept.append(new_line)
    split = bool(after) and bool(packet.suffix)       # the loads go before the :endloop packet
    if kept:
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
    if after:
        _emit(out, f"jump {label}_post")
        out.append(f"{label}_post_ret:\n")
        stubs.append(f"{label}_post:\n")
        _emit(stubs, f"memw(##{CTX}+{POST_SAVE}) = r0")
        for reg in sorted(after):
            _emit(stubs, f"r0 = {_slot(slot_of_result[reg])}")
            _emit(stubs, f"v{reg} = vmem(r0+#0)")
        _emit(stubs, f"r0 = memw(##{CTX}+{POST_SAVE})")
        for _reg, store, _ in late_stores:
            _emit(stubs, store)
            result.late_stores += 1
        _emit(stubs, f"jump {label}_post_ret")
        result.loads_after += len(after)
    if split:
        out.append(packet.open_line)
        out.append("\t\tnop\n")
        out.append(packet.close_line)
        result.endloop_splits += 1
    result.packets += 1


def rewrite(asm: str) -> RewriteResult:
    """The assembly with every HVX FP instruction replaced by a call into the qfloat model.

    Text without HVX FP instructions comes back unchanged. Raises :class:`UnknownHvxFp` for an
    HVX FP instruction the model does not know and :class:`RewriteError` for a packet whose
    semantics cannot be kept.
    """
    result = RewriteResult("", Counter())
    out: list[str] = []
    stubs: list[str] = []
    for item in parse(asm):
        if isinstance(item, str):
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
        _rewrite_packet(item, fps, rest, result, out, stubs)
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


_MODEL_FORBIDDEN = re.compile(r"\b(?:loop[01]|sa[01]|lc[01]|usr|gp|m[01]|c\d+)\b|:sat\b|\b(?:call|jump)\s+(?!\.L|(?:qf|ieee)_)")


def model_object(arch: str = "v68") -> Path:
    """The HVX floating-point model (``hvx_model.c`` with the qfloat model and its IEEE twin)
    compiled for ``arch`` and linked into one relocatable object, cached by sources, flags and
    clang version.

    Refuses a model whose code would touch what the rewritten kernel keeps live across the call
    without saving it: hardware-loop registers, GP, saturation flags, or calls to anything but
    the models' own functions (runtime helpers, memcpy).
    """
    sources = {path.name: path.read_text() for path in MODEL_SOURCES}
    key = {"sources": sources, "flags": MODEL_FLAGS, "clang": hexagon.tool_version("clang"), "arch": arch}
    where = cache.entry("qfloat-model", arch, key)
    if not cache.load_entry(where, ("hvx_model.o",)):
        with tempfile.TemporaryDirectory() as tmp:
            objects = []
            for source in MODEL_SOURCES:
                listing = Path(tmp) / f"{source.stem}.s"
                hexagon.check_run(_clang(arch, False) + MODEL_FLAGS + ["-S", str(source), "-o", str(listing)],
                                  f"compiling {source.name}")
                for line in listing.read_text().splitlines():
                    code = _strip_comment(line).strip()
                    if code and not code.startswith(".") and _MODEL_FORBIDDEN.search(code):
                        raise RuntimeError(f"{source.name} code touches caller state: {code!r}")
                objects.append(Path(tmp) / f"{source.stem}.o")
                hexagon.check_run(_clang(arch, False) + MODEL_FLAGS + ["-c", str(source), "-o", str(objects[-1])],
                                  f"compiling {source.name}")
            cache.store_entry(where, {"hvx_model.o": lambda out: hexagon.check_run(
                ["ld.lld", "-r", *map(str, objects), "-o", out], "linking the HVX model")})
    return where / "hvx_model.o"


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


def build_qfloat_elf(asm_text: str, out_elf_path, arch: str = "v68") -> dict:
    """Rewrite, assemble and link a kernel's assembly with the harness and the qfloat model.

    Returns statistics: instructions rewritten per canonical form, packets, loads placed after
    their packet, ``.new`` reads, and the seconds each step took.
    """
    hexagon.require_tools(("clang", "ld.lld"), "the qfloat build")
    t0 = time.perf_counter()
    result = rewrite(asm_text)
    t1 = time.perf_counter()
    out_elf = Path(out_elf_path)
    out_elf.parent.mkdir(parents=True, exist_ok=True)
    obj = out_elf.with_suffix(".o")
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
            "endloop_splits": result.endloop_splits,
            "rewrite_s": t1 - t0, "assemble_s": t2 - t1, "link_s": t3 - t2}
