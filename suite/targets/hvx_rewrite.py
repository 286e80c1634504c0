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
     context. An instruction of :data:`~suite.targets.hvx_stubs.VECTOR_FORMS` goes to the
     *vector model* (``vector_model.c``: 64 lanes at once on HVX integer instructions, sources in
     V0, V1, the result in V0), the others to the *scalar model* (``qfm_<name>``, one lane at a
     time, its sources stored to ``__qfm_vbuf`` and its result written there). The vector model changes
     vector registers: those the kernel still needs are kept in registers that are dead at that
     point (:func:`suite.targets.hvx_asm.vector_liveness`; a register move is the cheapest way
     under QEMU) or, when none is left, in ``__qfm_vsave`` (see
     :data:`~suite.targets.hvx_stubs.SPILL`); the stub calls the qfloat entry or the twin's as
     ``__qfm_arith`` says, each keeping only what it changes;
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

import re
from collections import Counter
from dataclasses import dataclass

from suite.targets.hvx_asm import (ALL_VECTOR, ALIGNMENT, SECTION, FpInstr, Packet, assembly_packets, is_hvx_fp,
                                   padding_positions, parse, parse_fp, strip_comment, vector_liveness)
from suite.targets.hvx_plan import Plan, VectorBody, plan_packet
from suite.targets.hvx_stubs import (ARITH, CLOSING, CTX, HVX_INSTRUCTION, POST_SAVE, SPILL, STUB_SECTION,
                                     VECTOR_ENTRIES, VSAVE, Counts, VectorModelRegisters, close_window, counts_of, emit,
                                     open_window, restore_context, save_context, vbuf_slot, window_adjust)

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


def _has_code(lines: list[str]) -> bool:
    return any(strip_comment(line).strip() for line in lines)


def _instructions(codes) -> Counts:
    """Instructions moved out of a packet, as QEMU would have counted them in it."""
    codes = list(codes)
    return Counts(0, len(codes), sum(bool(HVX_INSTRUCTION.search(code)) for code in codes))


def _emit_stub(plan: Plan, label: str, stubs: list[str], result: RewriteResult) -> None:
    """The out-of-line code that runs before the packet: the scalar model's sources to memory and
    its calls, the vector model's calls for the arithmetic __qfm_arith selects (see
    :func:`suite.targets.hvx_plan.plan_vector`), results to their registers (or to memory, for
    those loaded after the packet), the context back; all in a counting window
    (:func:`window_adjust`) whose target is what the kernel's packet no longer counts: its HVX FP
    instructions, the ``.new`` stores done here, and the packet itself if it was emptied away."""
    out = stubs
    out.append(f"{label}:\t// {plan.packet.text()}\n")
    before = Counts(1, 1, 0)                          # the kernel's jump here
    for load in plan.preloads:
        emit(out, load)
        before += Counts(1, 1, 1)
        result.preloads += 1
    before += Counts(1, 1, 0)                         # the first packet of save_context
    save_context(out, plan.scalars)
    _emit_scalar_calls(plan, out, result)
    if plan.bodies:
        qfloat, ieee = plan.bodies
        emit(out, f"r0 = memw(##{ARITH})")
        emit(out, "p0 = cmp.eq(r0,#0)", f"if (p0.new) jump:t {label}_qf")
        _emit_vector_body(plan, ieee, out)
        emit(out, f"jump {label}_done")
        out.append(f"{label}_qf:\n")
        _emit_vector_body(plan, qfloat, out)
        out.append(f"{label}_done:\n")
        result.vector += sum(plan.vector)
    for fp, vec in zip(plan.fps, plan.vector):
        for reg in fp.dst if not vec else ():
            if reg not in plan.after:
                emit(out, f"r1 = {vbuf_slot(plan.result_slot[reg])}")
                emit(out, f"v{reg} = vmem(r1+#0)")
    tail: list[str] = []
    restore_context(tail, plan.scalars)
    _emit_early_stores(plan, tail, result)
    emit(tail, f"jump {label}_ret")
    kept, emptied = _has_code(plan.rest), not _has_code(plan.rest)
    nop = emptied and bool(plan.packet.suffix)        # an emptied loop end keeps its packet: { nop }
    target = (Counts(0 if kept or nop else 1, len(plan.fps), len(plan.fps))
              + _instructions(store for _reg, store in plan.early_stores))
    close_window(out, window_adjust(target, before, CLOSING + counts_of(tail)))
    out.extend(tail)


def _emit_scalar_calls(plan: Plan, out: list[str], result: RewriteResult) -> None:
    """The scalar model's part of a stub: its sources to memory, without a vector store (see
    SPILL), then a call per instruction; every FP instruction of the packet is counted here."""
    for reg, slot in plan.slot_of.items():
        emit(out, f"r1 = {vbuf_slot(slot)}")
        emit(out, f"call {SPILL}{reg}")
    for fp, vec in zip(plan.fps, plan.vector):  # the scalar model touches no vector register
        if not vec:
            first = plan.slot_of[fp.srcs[0][0]]
            second = plan.slot_of[fp.srcs[1][0]] if len(fp.srcs) > 1 else first
            emit(out, f"r0 = {vbuf_slot(first)}", f"r1 = {vbuf_slot(second)}")
            emit(out, f"r2 = {vbuf_slot(plan.result_slot[fp.dst[0]])}")
            emit(out, f"call qfm_{fp.name}")
        result.counts[fp.form] += 1


def _emit_early_stores(plan: Plan, out: list[str], result: RewriteResult) -> None:
    """The ``.new`` stores done before the packet: each with its destination's new value, the old
    one kept in the spare slot and put back (R0 saved around it)."""
    for reg, store in plan.early_stores:
        emit(out, f"memw(##{CTX}+{POST_SAVE}) = r0")
        emit(out, f"r0 = {vbuf_slot(plan.spare)}")
        emit(out, f"vmem(r0+#0) = v{reg}")
        emit(out, f"r0 = {vbuf_slot(plan.result_slot[reg])}")
        emit(out, f"v{reg} = vmem(r0+#0)")
        emit(out, f"r0 = memw(##{CTX}+{POST_SAVE})")
        emit(out, store)
        emit(out, f"memw(##{CTX}+{POST_SAVE}) = r0")
        emit(out, f"r0 = {vbuf_slot(plan.spare)}")
        emit(out, f"v{reg} = vmem(r0+#0)")
        emit(out, f"r0 = memw(##{CTX}+{POST_SAVE})")
        result.early_stores += 1


def _emit_vector_body(plan: Plan, body: VectorBody, out: list[str]) -> None:
    """Keep what the model clobbers, call it per instruction, put everything back."""
    for reg, spare in body.kept.items():
        if spare is None:
            emit(out, f"r1 = ##{VSAVE}+{reg * 128}")
            emit(out, f"call {SPILL}{reg}")
        else:
            emit(out, f"v{spare} = v{reg}")
    vector_fps = [fp for fp, vec in zip(plan.fps, plan.vector) if vec]
    for fp, (how, at) in zip(vector_fps, body.placed):
        for arg, src in enumerate(fp.srcs):  # the old value: a kept copy, or the untouched register
            spare = body.kept.get(src[0], src[0])
            if spare is None:
                emit(out, f"r1 = ##{VSAVE}+{src[0] * 128}")
                emit(out, f"v{arg} = vmem(r1+#0)")
            else:
                emit(out, f"v{arg} = v{spare}")
        emit(out, f"call {VECTOR_ENTRIES[body.arith]}{fp.name}")
        if how == "slot":
            emit(out, f"r1 = {vbuf_slot(at)}")
            emit(out, f"call {SPILL}0")
        else:
            emit(out, f"v{at} = v0")
    for reg in body.restored:
        spare = body.kept[reg]
        if spare is None:
            emit(out, f"r1 = ##{VSAVE}+{reg * 128}")
            emit(out, f"v{reg} = vmem(r1+#0)")
        else:
            emit(out, f"v{reg} = v{spare}")
    for fp, (how, at) in zip(vector_fps, body.placed):
        if how == "register":
            emit(out, f"v{fp.dst[0]} = v{at}")
        elif how == "slot" and fp.dst[0] not in plan.after:
            emit(out, f"r1 = {vbuf_slot(at)}")
            emit(out, f"v{fp.dst[0]} = vmem(r1+#0)")


def _emit_kernel_side(plan: Plan, label: str, out: list[str], stubs: list[str], result: RewriteResult) -> None:
    """In the kernel: the jump to the stub, the packet without its FP instructions, and the loads
    of results whose old values the packet read (split off an :endloop packet), in a counting
    window of their own that counts as the ``.new`` stores it does."""
    packet = plan.packet
    out.append(f"\t// qfloat model: {packet.text()}\n")
    emit(out, f"jump {label}")
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


def _emit_post_loads(plan: Plan, label: str, split: bool, out: list[str], stubs: list[str],
                     result: RewriteResult) -> None:
    """After the packet, the jump to a stub that loads the results whose old values the packet
    read, and does the late ``.new`` stores, in a counting window that counts as those stores."""
    emit(out, f"jump {label}_post")
    out.append(f"{label}_post_ret:\n")
    stubs.append(f"{label}_post:\n")
    emit(stubs, f"memd(##{CTX}+{POST_SAVE}) = r1:0")
    open_window(stubs)
    emit(stubs, f"memd(##{CTX}+{POST_SAVE}+8) = r3:2")
    for reg in sorted(plan.after):
        emit(stubs, f"r0 = {vbuf_slot(plan.result_slot[reg])}")
        emit(stubs, f"v{reg} = vmem(r0+#0)")
    tail: list[str] = []
    emit(tail, f"r1:0 = memd(##{CTX}+{POST_SAVE})")
    emit(tail, f"r3:2 = memd(##{CTX}+{POST_SAVE}+8)")
    for _reg, store in plan.late_stores:
        emit(tail, store)
        result.late_stores += 1
    emit(tail, f"jump {label}_post_ret")
    after = CLOSING + counts_of(tail) + (Counts(1, 0, 0) if split else Counts())   # and the { nop } below
    target = _instructions(store for _reg, store in plan.late_stores)
    close_window(stubs, window_adjust(target, Counts(2, 2, 0), after))  # the jump here, the save
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
        plan = plan_packet(item, fps, rest, model, dead)
        label = f".Lqfm_{item.number}"
        _emit_kernel_side(plan, label, out, stubs, result)
        _emit_stub(plan, label, stubs, result)
    if stubs:
        out.append("\n// qfloat model stubs (suite/targets/hvx_rewrite.py)\n")
        out.append(f"\t.section\t{STUB_SECTION},\"ax\",@progbits\n\t.p2align\t4\n")
        out.extend(stubs)
    result.text = "".join(out)
    return result
