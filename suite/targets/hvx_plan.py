"""How one packet with HVX floating-point instructions is rewritten (:mod:`suite.targets.hvx_rewrite`):
:func:`plan_packet` decides what is computed before the packet, which ``.cur`` loads are repeated and
which ``.new`` stores move, which results wait in ``__qfm_vbuf`` and are loaded after it, and which
instructions the vector model computes, keeping the registers it clobbers (:func:`plan_vector`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from suite.targets.hvx_asm import ALL_VECTOR, FpInstr, Packet, RewriteError, VectorUse, strip_comment, vector_use
from suite.targets.hvx_stubs import VBUF_SLOTS, VECTOR_ENTRIES, VECTOR_FORMS, VectorModelRegisters

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
class Plan:
    """How one packet with HVX FP instructions is rewritten: what :func:`plan_packet` decides, and
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
    bodies: list[VectorBody] = field(default_factory=list)  # per arithmetic, see plan_vector
    scalars: set[int] | None = None  # scalar registers the stub saves (None: all a C call may change)


@dataclass
class VectorBody:
    """The vector model's part of a stub for one arithmetic (see :func:`plan_vector`)."""

    arith: str
    kept: dict[int, int | None]    # clobbered register still read -> the free register keeping it, or None: __qfm_vsave
    restored: list[int]            # kept registers put back after the calls
    placed: list[tuple[str, int]]  # per vector-model instruction: ("direct", dst) / ("register", holder) / ("slot", slot)


def _plan_preloads(plan: Plan, codes: list[str], uses: list[VectorUse], sources: list[int]) -> None:
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


def _plan_new_stores(plan: Plan, codes: list[str], uses: list[VectorUse]) -> set[int]:
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


def plan_packet(packet: Packet, fps: list[FpInstr], rest: list[str], model: VectorModelRegisters | None,
          dead: set[int]) -> Plan:
    """The rewrite of one packet: preloads, moved .new stores, results placed after the packet,
    vbuf slots, and, for instructions of the vector model, the vector registers to keep."""
    where = f"packet {packet.number} (line {packet.line_no}): {{ {packet.text()} }}"
    plan = Plan(packet=packet, where=where, fps=fps, rest=rest, dests={reg for fp in fps for reg in fp.dst})
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
        plan.bodies = [plan_vector(plan, arith, model.vector[arith], dead) for arith in VECTOR_ENTRIES]
        if all(plan.vector):  # only the vector model is called: keep only what it (and the stub) may change
            used = {0, 1, 31} | set().union(*(model.scalar[arith][fp.name] for arith in VECTOR_ENTRIES for fp in fps))
            spills = any(None in body.kept.values() or any(how == "slot" for how, _ in body.placed)
                         for body in plan.bodies)
            used |= {2, 3}                                  # the counting window's close
            plan.scalars = used | set(range(1, 6)) if spills else used   # a spill routine uses r1-r5
    _plan_slots(plan)
    return plan


def _plan_slots(plan: Plan) -> None:
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


def plan_vector(plan: Plan, arith: str, vector_regs: dict, dead: set[int]) -> VectorBody:
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
    return VectorBody(arith, kept, sorted(set(kept) - overwritten), placed)
