"""Run TVM's v68 HVX qfloat code on qemu-hexagon by replacing each HVX floating-point instruction
with a call into the suite's model of it (``hvx_model.c``: the qfloat model ``qfloat_model.c``, or
its IEEE twin ``ieee_model.c``, as the harness's input says), keeping VLIW packet semantics.

QEMU 7.2-11.1 implement no HVX floating point (Debian's qemu-hexagon 10.0.2 aborts on the
unmodified seed kernel: "decode.c:492: decode_insns: code should not be reached"). The assembly
LLVM emits for a ``+hvx-qfloat`` v68 target is rewritten packet by packet:

* every instruction with a vector operand or result typed ``.hf``/``.sf``/``.qf16``/``.qf32``
  (or ``.bf``, ``.f8``, or a ``vconv``/``vcvt``/``vfmax``... mnemonic) is an *HVX FP* instruction;
  those the model knows (:data:`suite.targets.qfloat.INSTRUCTIONS`) are rewritten, any other one
  raises :class:`~suite.targets.hvx_asm.UnknownHvxFp` naming the instruction;
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
     point (:func:`suite.targets.hvx_asm.vector_liveness`; a register move is the cheapest way
     under QEMU) or, when none is left, in ``__qfm_vsave`` (see :data:`SPILL`); the stub calls
     the qfloat entry or the twin's as ``__qfm_arith`` says, each keeping only what it changes;
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
  * ``.tmp`` loads feeding an FP source are refused with :class:`RewriteError`.

  How often each case occurs over a set of builds: ``experiments/qfloat_emulation.py build``
  prints it (and ``run`` the emulation's speed).

The assembly is read by :mod:`suite.targets.hvx_asm`; the model is compiled, and the rewritten
kernel assembled and linked, by :mod:`suite.targets.hvx_toolchain`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from suite.targets.hvx_asm import (ALL_VECTOR, ALIGNMENT, SECTION, FpInstr, Packet, RewriteError, VectorUse,
                                   assembly_packets, is_hvx_fp, padding_positions, parse, parse_fp,
                                   strip_comment, vector_liveness, vector_use)

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
        code = strip_comment(line).strip()
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


@dataclass(kw_only=True)
class _Plan:
    """How one packet with HVX FP instructions is rewritten: what :func:`_plan` decides, and
    :func:`_emit_stub` and :func:`_emit_kernel_side` write."""

    packet: Packet
    where: str
    fps: list[FpInstr]
    rest: list[str]                # the packet's other instruction lines, moved .new stores taken out
    dests: set[int]
    preloads: list[str] = field(default_factory=list)        # .cur loads feeding FP sources, repeated as plain loads
    early_stores: list[tuple] = field(default_factory=list)  # (register, store): .new stores done before the packet
    late_stores: list[tuple] = field(default_factory=list)   # ... after it
    after: set[int] = field(default_factory=set)   # destinations loaded after the packet (the packet reads the old value)
    vector: list[bool] = field(default_factory=list)         # per FP instruction: computed by the vector model
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
    plan = _Plan(packet=packet, where=where, fps=fps, rest=rest, dests={reg for fp in fps for reg in fp.dst})
    codes = [strip_comment(line).strip() for line in rest]
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
    _plan_slots(plan)
    return plan


def _plan_slots(plan: _Plan) -> None:
    """The __qfm_vbuf slots: each source of a scalar-model instruction once, then the results kept
    in memory, then a spare."""
    for fp, vec in zip(plan.fps, plan.vector):
        if not vec:
            for reg in (reg for src in fp.srcs for reg in src):
                plan.slot_of.setdefault(reg, len(plan.slot_of))
    free = len(plan.slot_of)
    vector_fps = [fp for fp, vec in zip(plan.fps, plan.vector) if vec]
    for fp, vec in zip(plan.fps, plan.vector):
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
        raise RewriteError(f"too many HVX FP operands in {plan.where}")


def _plan_vector(plan: _Plan, arith: str, vector_regs: dict, dead: set[int]) -> _VectorBody:
    """Where the vector model's instructions of the packet take their sources and leave their
    results, when it computes ``arith``. The model (sources in V0, V1, the result in V0) clobbers
    the registers ``vector_regs`` names; those whose values are still read (live after the
    packet, or a source of the packet) are *kept*: copied to a register that is dead here and that
    the model leaves alone (a register move, the cheapest way), or, when none is left, spilled to
    ``__qfm_vsave`` (see SPILL, dearer). A result goes straight to its destination
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
    return any(strip_comment(line).strip() for line in lines)


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
    _emit_scalar_calls(plan, out, result)
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
    _emit_early_stores(plan, tail, result)
    _emit(tail, f"jump {label}_ret")
    kept, emptied = _has_code(plan.rest), not _has_code(plan.rest)
    nop = emptied and bool(plan.packet.suffix)        # an emptied loop end keeps its packet: { nop }
    target = (Counts(0 if kept or nop else 1, len(plan.fps), len(plan.fps))
              + _instructions(store for _reg, store in plan.early_stores))
    _close_window(out, _window_adjust(target, before, _CLOSING + counts_of(tail)))
    out.extend(tail)


def _emit_scalar_calls(plan: _Plan, out: list[str], result: RewriteResult) -> None:
    """The scalar model's part of a stub: its sources to memory, without a vector store (see
    SPILL), then a call per instruction; every FP instruction of the packet is counted here."""
    for reg, slot in plan.slot_of.items():
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


def _emit_early_stores(plan: _Plan, out: list[str], result: RewriteResult) -> None:
    """The ``.new`` stores done before the packet: each with its destination's new value, the old
    one kept in the spare slot and put back (R0 saved around it)."""
    for reg, store in plan.early_stores:
        _emit(out, f"memw(##{CTX}+{POST_SAVE}) = r0")
        _emit(out, f"r0 = {_slot(plan.spare)}")
        _emit(out, f"vmem(r0+#0) = v{reg}")
        _emit(out, f"r0 = {_slot(plan.result_slot[reg])}")
        _emit(out, f"v{reg} = vmem(r0+#0)")
        _emit(out, f"r0 = memw(##{CTX}+{POST_SAVE})")
        _emit(out, store)
        _emit(out, f"memw(##{CTX}+{POST_SAVE}) = r0")
        _emit(out, f"r0 = {_slot(plan.spare)}")
        _emit(out, f"v{reg} = vmem(r0+#0)")
        _emit(out, f"r0 = memw(##{CTX}+{POST_SAVE})")
        result.early_stores += 1


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
        _emit_post_loads(plan, label, split, out, stubs, result)
    if split:
        out.append(packet.open_line)
        out.append("\t\tnop\n")
        out.append(packet.close_line)
        result.endloop_splits += 1
    result.packets += 1


def _emit_post_loads(plan: _Plan, label: str, split: bool, out: list[str], stubs: list[str],
                     result: RewriteResult) -> None:
    """After the packet, the jump to a stub that loads the results whose old values the packet
    read, and does the late ``.new`` stores, in a counting window that counts as those stores."""
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


def _split_fp(packet: Packet) -> tuple[list[FpInstr], list[str]]:
    """A packet's HVX FP instructions (the model's view of each) and its other lines."""
    fps, rest = [], []
    for line in packet.lines:
        code = strip_comment(line).strip()
        if code and is_hvx_fp(code):
            fps.append(parse_fp(code))
        else:
            rest.append(line)
    return fps, rest


def rewrite(asm: str, model: VectorModelRegisters | None = None, padding: dict[int, int] | None = None) -> RewriteResult:
    """The assembly with every HVX FP instruction replaced by a call into the HVX model.

    ``model`` (:func:`suite.targets.hvx_toolchain.vector_model_registers`): what the vector model's
    entry points change; with it, the instructions of VECTOR_FORMS go to the vector model, without
    it every instruction goes to the scalar model. ``padding``
    (:func:`suite.targets.hvx_asm.object_padding`): the packets of nops TVM's object
    has before packets of ``asm``; given, they are written out as such and the code's alignment
    directives dropped, so that the kernel executes the same packets as TVM's object. Text without
    HVX FP instructions comes back unchanged (but for that). Raises
    :class:`~suite.targets.hvx_asm.UnknownHvxFp` for an HVX
    FP instruction the model does not know and :class:`RewriteError` for a packet whose semantics
    cannot be kept.
    """
    result = RewriteResult("", Counter())
    out: list[str] = []
    stubs: list[str] = []
    items = parse(asm)
    live = vector_liveness(items) if model else {}
    code_sections = set(assembly_packets(items)) if padding is not None else set()
    nops_at = padding_positions(items, padding or {})
    section = ".text"
    for index, item in enumerate(items):
        out.extend(["\t{ nop }\n"] * nops_at.get(index, 0))
        if isinstance(item, str):
            if found := SECTION.match(strip_comment(item)):
                section = found.group(1) or f".{found.group(2)}"
            if not (section in code_sections and ALIGNMENT.match(item)):   # TVM's padding instead
                out.append(item)
            continue
        fps, rest = _split_fp(item)
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
