"""Reading the Hexagon assembly LLVM emits: packets, HVX floating-point instructions (the qfloat
model's view of each), vector-register use and liveness, and the padding an assembler put into
the object built from it. What :mod:`suite.targets.hvx_rewrite` rewrites, read.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from suite.targets import hexagon, qfloat


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
        return [strip_comment(line).strip() for line in self.lines if strip_comment(line).strip()]

    def text(self) -> str:
        return " ; ".join(self.instructions()) + (" " + self.suffix if self.suffix else "")


def strip_comment(line: str) -> str:
    return line.split("//", 1)[0]


def _is_bare_instruction(line: str) -> bool:
    code = strip_comment(line).strip()
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
        one = _ONE_LINE.match(strip_comment(line).rstrip("\n"))
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
        elif _is_bare_instruction(line) and is_hvx_fp(strip_comment(line)):
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
#: Instructions that write their destination with a plain "=" and keep part of it (operands Vx, Vxx
#: of the HVX manual): ``Vx.w = vinsert(Rt)`` sets the low word only, ``Vxx.w = vasrinto(Vu,Vv)``
#: accumulates into the pair. LLVM builds a vector of a few lanes (10 float16, say) by vinsert and
#: valign: taken for a plain write, the vector being built looked dead before its vinsert, and the
#: vector model's calls clobbered its other lanes.
_READS_DESTINATION = re.compile(r"^(?:vinsert|vasrinto)\s*\(")


def vector_regs(text: str):
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
        for reg, suffix in vector_regs(instruction):      # no plain assignment: read and written
            (use.reads_new if suffix == ".new" else use.reads_old).add(reg)
            use.writes.add(reg)
        return use
    lhs, op, rhs = m.groups()
    for reg, suffix in vector_regs(rhs):
        (use.reads_new if suffix == ".new" else use.reads_old).add(reg)
    if re.match(r"^(?:v?mem\w*|memu?[bhwd]\w*)\s*\(", lhs):     # a store: the lhs is an address
        for reg, _ in vector_regs(lhs):
            use.reads_old.add(reg)
    else:
        for reg, suffix in vector_regs(lhs):
            if suffix in (".cur", ".tmp"):
                use.forwarded.add(reg)
                if suffix == ".tmp":
                    continue
            use.writes.add(reg)
            if op != "=" or _READS_DESTINATION.match(rhs):
                use.reads_old.add(reg)
    return use


# ----------------------------------------------------------------------------- the object's padding

ALIGNMENT = re.compile(r"^\s*\.(?:p2align|balign|align|falign)\b")
SECTION = re.compile(r"^\s*(?:\.section\s+([^,\s]+)|\.(text|data|bss)\s*$)")
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


def assembly_packets(items: list) -> dict[str, list[int]]:
    """Per section of an assembly text: the indices in ``items`` of its packets, in order."""
    sections: dict[str, list[int]] = {}
    section = ".text"
    for index, item in enumerate(items):
        if isinstance(item, Packet):
            sections.setdefault(section, []).append(index)
        elif found := SECTION.match(strip_comment(item)):
            section = found.group(1) or f".{found.group(2)}"
        elif _is_bare_instruction(item):
            sections.setdefault(section, []).append(index)
    return sections


def padding_positions(items: list, padding: dict[int, int]) -> dict[int, int]:
    """Where the padding before a packet goes in the text: at the alignment directive that made
    it, before the labels it aligns (a jump to them skips it), else before those labels."""
    found = {}
    for index, count in padding.items():
        start = index
        while start > 0 and isinstance(items[start - 1], str) and not _is_bare_instruction(items[start - 1]) \
                and not SECTION.match(strip_comment(items[start - 1])):
            start -= 1
        aligned = [k for k in range(start, index) if ALIGNMENT.match(items[k])]
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
    for name, indices in assembly_packets(items).items():
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
    indices, successors, uses = _control_flow(items)
    live_in = [frozenset()] * len(indices)
    changed = True
    while changed:
        changed = False
        for position in range(len(indices) - 1, -1, -1):
            reads, writes = uses[position]
            out = frozenset().union(*(live_in[p] for p in successors[position]))
            found = reads | (out - writes)
            if found != live_in[position]:
                live_in[position], changed = found, True
    return {indices[position]: live_in[position] for position in range(len(indices))}


def _control_flow(items: list) -> tuple[list[int], list[set[int]], list[tuple[frozenset, frozenset]]]:
    """The packets of ``items`` as steps of a control-flow graph: per step, its index in ``items``,
    the steps that may follow it, and the vector registers it reads and surely writes (all of them
    read where control may leave for code this text does not show)."""
    steps, label_at = [], {}
    for index, item in enumerate(items):
        if isinstance(item, Packet):
            steps.append((index, item.instructions(), item.suffix))
        elif (label := _LABEL.match(strip_comment(item))) and not item.lstrip().startswith("//"):
            label_at[label.group(1)] = len(steps)
        elif _is_bare_instruction(item):
            steps.append((index, [strip_comment(item).strip()], ""))
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
    return [index for index, _, _ in steps], successors, uses


# ----------------------------------------------------------------------------- census


def census(asm: str) -> Counter:
    """HVX FP instruction forms in an assembly text: canonical form -> number of lines."""
    counts: Counter = Counter()
    for line in asm.splitlines():
        code = strip_comment(line).strip().strip("{}").strip()
        if code and not code.startswith(".") and is_hvx_fp(code):
            counts[canonical_form(code)] += 1
    return counts


