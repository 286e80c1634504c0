"""The compiler changes `gate_benchmark.py` makes, each a real change of how TVM lowers a kernel.

A change is applied where the suite builds a combination (:func:`build`): to the scheduled PrimFunc
before TVM lowers it (a rewrite of its loops, as a TIR pass would make), to TVM's pass
configuration for that build, or, on the executed Hexagon targets, to the assembly TVM's LLVM
emitted before the suite assembles it (as a change of LLVM's Hexagon back end would make). The kernel is then compiled by the installed TVM, run and timed like
any other; what it does to speed and accuracy is measured, never assumed (`gate_benchmark.py`
measures each change's step before it scores anything). Nothing in ``suite/`` knows of these
changes: only this experiment can make them, in its own process.

What each change is *meant* to do (``intent``) only names it; a pair is scored by what was measured.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from suite import cache
from suite.compat import build as compat_build
from suite.compat import release
from suite.compat import schedules as compat_schedules
from suite.core import execution, schedules, tuning_records, workloads
from suite.core.combo import Combo
from suite.errors import OrderNotApplicable
from suite.targets import hexagon_qf, hvx_toolchain

#: A change's intent: the kinds of pair the experiment needs (issue 59), before anything is measured.
INTENTS = ("same", "no-effect", "slower", "accuracy")


class NotApplicable(Exception):
    """The change has nothing to change in this kernel (no such loop): no series is made of it."""


@dataclass(frozen=True)
class Change:
    name: str
    intent: str
    words: str
    #: TVM pass configuration for the build, by the option's name without its namespace prefix
    #: (``tir.`` before 0.27, ``tirx.`` from it: :func:`suite.compat.build.pass_config`)
    config: dict = field(default_factory=dict)
    #: a rewrite of the scheduled PrimFunc: (func) -> func, raising NotApplicable
    rewrite: Callable | None = None
    #: an edit of the Hexagon assembly TVM emitted (qfloat targets only): (text) -> text, raising NotApplicable
    assembly: Callable | None = None


def _loops(kind: str, to: str, which: slice):
    """A rewrite that makes the ``which`` loops of ``kind`` (``T.vectorized``, ``T.parallel``) ``to``
    loops, as a pass that stopped vectorising or parallelising them would: made on the PrimFunc's
    TVMScript, which TVM parses back (0.27's Python has no statement mutator)."""

    def rewrite(func):
        text = func.script()
        found = [m.start() for m in re.finditer(rf"\bT\.{kind}\(", text)]
        chosen = found[which]
        if not chosen:
            raise NotApplicable(f"no T.{kind} loop")
        for start in reversed(chosen):
            text = text[:start] + f"T.{to}(" + text[start + len(f"T.{kind}("):]
        return _parsed(text)

    return rewrite


def _unroll_halved(func):
    """MetaSchedule's auto-unroll limit (``pragma_auto_unroll_max_step``) halved on every block
    that has one: a tuned kernel's inner loops unrolled half as far."""
    text = func.script()
    pattern = re.compile(r'("pragma_auto_unroll_max_step":\s*)(\d+)')
    if not any(int(m.group(2)) > 1 for m in pattern.finditer(text)):
        raise NotApplicable("no auto-unroll limit above 1")
    return _parsed(pattern.sub(lambda m: f"{m.group(1)}{int(m.group(2)) // 2}", text))


def _reduction_swapped(innermost: bool):
    """A rewrite that swaps two nested reduction loops of the reduction block, the innermost pair
    or the outermost: every output element sums the same terms in another order (a ULP shift, as a
    reordering pass would make)."""

    def rewrite(func):
        sch = compat_schedules.schedule(func)
        try:
            block = schedules.reduction_block(sch)
        except OrderNotApplicable as err:
            raise NotApplicable(str(err)) from None
        # the reduction loops, outer to inner (spatial loops between them stay where they are)
        loops = [loop for loop, kind in schedules.loop_kinds(sch, block) if kind == "R" and int(sch.get(loop).extent) > 1]
        nested = list(zip(loops, loops[1:]))
        for outer, inner in (reversed(nested) if innermost else nested):
            try:
                sch.reorder(inner, outer)
            except compat_schedules.schedule_error():
                continue
            return sch.mod["main"]
        raise NotApplicable("no two reduction loops of extent above 1 that TVM lets swap")

    return rewrite


# ----------------------------------------------------------------------------- Hexagon assembly

_LOOP0 = re.compile(r"\bloop0\((\.\w+),")
_PACKET_END = re.compile(r"^\s*\}\s*(:endloop\d+)?\s*$")
_ACCUMULATE = re.compile(r"^(\s*)(v\d+)\.qf16 = vadd\((v\d+)\.qf16,(v\d+)\.qf16\)\s*$")
_VECTORS = re.compile(r"\bv(\d+)(?::(\d+))?\b")


def _loop0_packets(lines: list[str]) -> list[list[tuple[int, int]]]:
    """Each innermost hardware loop's packets, as (first line, last line) of each: from the
    label its ``loop0`` names to the packet that ends in ``:endloop0``."""
    bodies = []
    for label in dict.fromkeys(_LOOP0.findall("\n".join(lines))):
        start = next((i for i, line in enumerate(lines) if line.strip() == f"{label}:"), None)
        if start is None:
            continue
        packets, opened = [], None
        for i in range(start + 1, len(lines)):
            if lines[i].strip() == "{":
                opened = i
            elif opened is not None and (end := _PACKET_END.match(lines[i])):
                packets.append((opened, i))
                opened = None
                if end.group(1) == ":endloop0":
                    bodies.append(packets)
                    break
    return bodies


def _vectors_read(line: str) -> set[int]:
    """The vector registers a line names (a pair ``v3:2`` names both)."""
    found = set()
    for high, low in _VECTORS.findall(line):
        found.update(range(int(low), int(high) + 1) if low else (int(high),))
    return found


def _extra_packets(every: int):
    """An edit that adds one packet (a ``nop``) after every ``every``-th packet of each innermost
    hardware loop: a packetizer that fills one packet group fewer, the same instructions run."""

    def edit(text: str) -> str:
        lines = text.splitlines()
        after = [last + 1 for packets in _loop0_packets(lines) for n, (_, last) in enumerate(packets[:-1], 1)
                 if n % every == 0]
        if not after:
            raise NotApplicable(f"no hardware loop of more than {every} packets")
        for i in reversed(after):
            lines[i:i] = ["\t{", "\t\tnop", "\t}"]
        return "\n".join(lines) + "\n"

    return edit


def _accumulator_rounded(text: str) -> str:
    """Every qf16 partial sum of each innermost hardware loop (``vD.qf16 = vadd(vD.qf16,vX.qf16)``)
    converted to IEEE half in a packet of its own before it is added to (``vD.hf = vD.qf16``, then
    ``vD.qf16 = vadd(vX.qf16,vD.hf)``): the fp16 accumulator rounded at that loop level, where
    LLVM keeps it in qf16 until the loop ends (a back end that spills it as half would)."""
    lines = text.splitlines()
    rounded = []  # (the packet's first line, the accumulating line, accumulator, addend)
    for packets in _loop0_packets(lines):
        for first, last in packets:
            for j in range(first + 1, last):
                m = _ACCUMULATE.match(lines[j])
                if m is None or m.group(2) not in m.group(3, 4) or m.group(3) == m.group(4):
                    continue
                acc, addend = m.group(2), (m.group(4) if m.group(3) == m.group(2) else m.group(3))
                others = set().union(*(_vectors_read(lines[k]) for k in range(first + 1, last) if k != j))
                if int(acc[1:]) not in others:  # nothing else in the packet reads it as qf16
                    rounded.append((first, j, acc, addend, m.group(1)))
    if not rounded:
        raise NotApplicable("no qf16 partial sum in a hardware loop")
    for first, j, acc, addend, indent in reversed(rounded):
        lines[j] = f"{indent}{acc}.qf16 = vadd({addend}.qf16,{acc}.hf)"
        lines[first:first] = ["\t{", f"\t\t{acc}.hf = {acc}.qf16", "\t}"]
    return "\n".join(lines) + "\n"


class _AssemblyEdited:
    """A qfloat Hexagon target that builds from edited assembly: the object assembled from it
    (the kernel whose code identity is taken), and the ELF the suite rewrites and links from it,
    as the target builds TVM's own (:meth:`suite.targets.hexagon_qf.HexagonQfTarget.build`)."""

    def __init__(self, target, text: str):
        self._target, self._text = target, text

    def __getattr__(self, name):
        return getattr(self._target, name)

    def build(self, func, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        hvx_toolchain.assemble(self._text, path, self._target.arch)
        cache.write_file(path.with_suffix(".s"), lambda tmp: Path(tmp).write_text(self._text))
        stats = hvx_toolchain.build_qfloat_elf(self._text, path.with_suffix(".elf"), self._target.arch, tvm_object=path)
        cache.write_json(path.with_suffix(".rewrite.json"), stats)


def _emitted_assembly(target, func) -> str:
    module = compat_build.build(func, target.tvm_target())
    with tempfile.TemporaryDirectory() as tmp:
        place = Path(tmp) / "kernel.s"
        compat_build.write_module_file(module, place, "s")
        return place.read_text()


def _parsed(text: str):
    return release.tvm().script.from_source(text)


CHANGES = {change.name: change for change in (
    Change("same", "same", "the same TVM again: a rebuild of the same code (noise only)"),
    Change("asserts-off", "no-effect", "the packed function's argument checks left out (disable_assert)",
           config={"disable_assert": True}),
    Change("storage-rewrite-off", "no-effect", "buffers not merged by StorageRewrite (disable_storage_rewrite)",
           config={"disable_storage_rewrite": True}),
    Change("unroll-halved", "slower", "MetaSchedule's auto-unroll limit halved", rewrite=_unroll_halved),
    Change("vectorize-off-last", "slower", "the last vectorized loop made serial",
           rewrite=_loops("vectorized", "serial", slice(-1, None))),
    Change("vectorize-off", "slower", "every vectorized loop made serial",
           rewrite=_loops("vectorized", "serial", slice(None))),
    Change("parallel-off", "slower", "the parallel loop made serial", rewrite=_loops("parallel", "serial", slice(None))),
    Change("reduction-swapped", "accuracy", "the two innermost nested reduction loops swapped",
           rewrite=_reduction_swapped(innermost=True)),
    Change("reduction-swapped-outer", "accuracy", "the two outermost nested reduction loops swapped",
           rewrite=_reduction_swapped(innermost=False)),
    Change("extra-packet-per-8", "slower", "one packet more after every 8th of each innermost hardware loop (Hexagon)",
           assembly=_extra_packets(8)),
    Change("extra-packet-per-32", "slower", "one packet more after every 32nd of each innermost hardware loop (Hexagon)",
           assembly=_extra_packets(32)),
    Change("accumulator-rounded", "accuracy",
           "the fp16 partial sums of each innermost hardware loop rounded to half at every add (Hexagon)",
           assembly=_accumulator_rounded),
)}


def check(names) -> list[Change]:
    unknown = [n for n in names if n not in CHANGES]
    if unknown:
        raise ValueError(f"unknown change {unknown[0]!r}: the changes are {', '.join(CHANGES)}")
    return [CHANGES[n] for n in names]


def scheduled(combo: Combo):
    """The combination's PrimFunc in its loop order, as the suite schedules it (its tuned record
    replayed for ``tuned``)."""
    records = combo.target.records_from
    if combo.order == "tuned":
        found = tuning_records.records_target(records, combo.dtype, combo.workload.id)
        records = (found,) if found else records
    return schedules.apply(workloads.prim_func(combo.workload, combo.dtype), combo.order, combo.workload.id,
                           combo.dtype, records)


def build(combo: Combo, change: Change, path: Path) -> execution.Built:
    """The combination built by the installed TVM with ``change`` made (NotApplicable where it has
    nothing to change), into ``path``: a failure of TVM is the build's ``failure``."""
    target = combo.target
    if change.assembly is not None and not isinstance(target, hexagon_qf.HexagonQfTarget):
        raise NotApplicable("an edit of the assembly of the qfloat Hexagon targets")
    func = scheduled(combo)
    if change.rewrite is not None:
        func = change.rewrite(func)
    tvm = release.tvm()
    with tvm.transform.PassContext(opt_level=2, config=compat_build.pass_config(change.config)):
        if change.assembly is not None:
            target = _AssemblyEdited(target, change.assembly(_emitted_assembly(target, target.prepare(func, combo.order))))
        return execution.build(target, func, path, combo.order)


# ----------------------------------------------------------------------------- lowering bugs (issue 63)
#
# A bug planted in one of TVM's own lowering passes, for every build of the processes started with
# :func:`lowering_bug_env` (a fuzz campaign and its worker children): the factory of that pass is
# replaced by one whose pass, named as TVM's (so that ``PassContext(disabled_pass=[name])`` takes the
# bug out with the pass), edits the TIR it is given, as the faulty pass would, and then runs TVM's.
# The edit is made on the module's TVMScript (0.27's Python has no statement mutator).

#: The variable naming the lowering bug a process's TVM is built with (:func:`lowering_bug_env`).
BUG_ENV = "TVM_SUITE_LOWERING_BUG"


@dataclass(frozen=True)
class LoweringBug:
    name: str
    words: str
    namespace: str  #: the TVM module of the pass's factory, e.g. "tirx.transform"
    factory: str  #: the factory's name there, e.g. "UnrollLoop"
    edit: Callable  #: (TVMScript of the module the pass is given) -> the faulty pass's


def _auto_unrolled_drop_last(text: str) -> str:
    """Each serial loop of constant extent 2..64 inside an auto-unroll region (``pragma_auto_unroll_max_step``)
    one iteration short: the last copy of an unrolled body dropped."""
    lines, out, region = text.splitlines(), [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if region is not None and line.strip() and indent <= region:
            region = None
        if '"pragma_auto_unroll_max_step"' in line and "with T.attr(" in line:
            region = indent
        elif region is not None:
            line = re.sub(rf"\bin range\(({_EXTENT})\):", lambda m: f"in range({_shorter(m.group(1))}):", line)
            line = re.sub(r"\bin T\.grid\((.*)\):$", lambda m: "in T.grid(" + ", ".join(
                _shorter(e.strip()) for e in m.group(1).split(",")) + "):", line)
        out.append(line)
    return "\n".join(out) + "\n"


#: A constant extent as TVMScript prints it: ``20``, or ``T.int64(20)`` (before NarrowDataType).
_EXTENT = r"(?:\d+|T\.int(?:32|64)\(\d+\))"


def _shorter(extent: str) -> str:
    value = int(re.sub(r"\D*(\d+)\)?$", r"\1", extent.replace("int64", "").replace("int32", "")))
    if not 2 <= value <= 64:
        return extent
    return extent.replace(f"({value})", f"({value - 1})") if "(" in extent else str(value - 1)


def _vector_lane_dropped(text: str) -> str:
    """Each vectorized loop one lane short: its last lane never stored (a loop of 2 lanes left a
    serial loop of 1: TVM refuses a vector of one lane)."""

    def shorter(m):
        extent = _shorter(m.group(1))
        kind = "serial" if re.fullmatch(r"(T\.int\d+\()?1\)?", extent) else "vectorized"
        return f"T.{kind}({extent})"

    return re.sub(rf"\bT\.vectorized\(({_EXTENT})\)", shorter, text)


LOWERING_BUGS = {bug.name: bug for bug in (
    LoweringBug("unroll-drops-last", "UnrollLoop drops the last iteration of each loop it unrolls",
                "tirx.transform", "UnrollLoop", _auto_unrolled_drop_last),
    LoweringBug("vector-lane-dropped", "VectorizeLoop drops the last lane of each vectorized loop",
                "tirx.transform", "VectorizeLoop", _vector_lane_dropped),
)}


def faulty_pass(name: str, real: Callable, *args, **kwargs):
    """The pass lowering bug ``name`` (:data:`LOWERING_BUGS`) puts where TVM's factory ``real``
    (called with ``args``) would have made its own: named as TVM's, it edits what it is given and
    runs TVM's pass on the edit."""
    tvm = release.tvm()
    bug = LOWERING_BUGS[name]
    inner = real(*args, **kwargs)
    if args and args[0] is False:  # the pass told not to do its work (VectorizeLoop(False)): nor its fault
        return inner

    def faulty(mod, _ctx):
        return inner(tvm.script.from_source(bug.edit(mod.script()), check_well_formed=False))

    return tvm.transform.module_pass(faulty, opt_level=inner.info.opt_level, name=inner.info.name)


_SITECUSTOMIZE = '''"""Written by experiments/compiler_changes.py: once TVM is imported, the factory of one of its
lowering passes is replaced by the faulty one of the lowering bug ${BUG_ENV} names."""
import importlib, importlib.abc, importlib.util, os, sys


class _AfterTvm(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "tvm":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            # the suite and the experiment are imported at the first build, not in TVM's own import
            place = importlib.import_module("tvm." + NAMESPACE)
            real = getattr(place, FACTORY)

            def factory(*args, **kwargs):
                if REPO not in sys.path:
                    sys.path.append(REPO)
                from experiments import compiler_changes
                return compiler_changes.faulty_pass(os.environ[BUG_ENV], real, *args, **kwargs)

            setattr(place, FACTORY, factory)

        spec.loader.exec_module = exec_module
        return spec


REPO, BUG_ENV, NAMESPACE, FACTORY = {repo!r}, {env!r}, {namespace!r}, {factory!r}
if os.environ.get(BUG_ENV):
    sys.meta_path.insert(0, _AfterTvm())
'''


def lowering_bug_env(name: str, where: Path) -> dict:
    """The environment variables that plant lowering bug ``name`` in the TVM of a process started
    with them, and of every Python process it starts (a campaign's workers): a ``sitecustomize.py``
    written to ``where``, first on ``PYTHONPATH``."""
    import os

    if name not in LOWERING_BUGS:
        raise ValueError(f"unknown lowering bug {name!r}: the bugs are {', '.join(LOWERING_BUGS)}")
    where.mkdir(parents=True, exist_ok=True)
    repo = str(Path(__file__).resolve().parent.parent)
    bug = LOWERING_BUGS[name]
    (where / "sitecustomize.py").write_text(_SITECUSTOMIZE.replace("${BUG_ENV}", BUG_ENV).format(
        repo=repo, env=BUG_ENV, namespace=bug.namespace, factory=bug.factory))
    path = os.pathsep.join(filter(None, [str(where), repo, os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, BUG_ENV: name}


# ----------------------------------------------------------------------------- more lowering bugs (issue 63, recall)
# More mistakes of TVM's lowering passes for `fuzz_recall.py`, planted as the ones above are.


def _reduction_init_skipped_after_split(text: str) -> str:
    """LowerInitBlock: the init of a reduction whose reduction variable is bound to a split or
    fused loop (``T.axis.reduce(N, k_0 * 8 + k_1)``, not one loop variable) is lost, so the
    reduction accumulates onto what its buffer held. The pass meets a reduction's init in two
    forms: a block's ``T.init()`` (an unscheduled or hand-split reduction: the pass's own work),
    and the init block of its own that ``decompose_reduction`` made (it reads nothing and writes
    the buffer the split update accumulates into), which the real pass lets through. Both are lost
    (the second left as ``T.evaluate(0)``): TVM 0.27's CPU postprocessors decompose every reduction
    MetaSchedule splits, so the first form alone never meets a schedule fuzz samples."""
    lines = text.splitlines()
    blocks = []  # (first line, end line, split reduction?, reads nothing?, buffer written)
    for i, line in enumerate(lines):
        if "with T.sblock(" not in line:
            continue
        indent = len(line) - len(line.lstrip())
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip()
                    and len(lines[j]) - len(lines[j].lstrip()) <= indent), len(lines))
        own = [lines[j].strip() for j in range(i + 1, end) if len(lines[j]) - len(lines[j].lstrip()) == indent + 4]
        split = any((m := re.search(r"T\.axis\.reduce\([^,]+,\s*(.+)\)\s*$", s))
                    and not re.fullmatch(r"\w+", m.group(1).strip()) for s in own)
        written = next((m.group(1) for s in own if (m := re.match(r"T\.writes\((\w+)\[", s))), None)
        blocks.append((i, end, split, "T.reads()" in own, written))
    accumulated = {written for *_, split, _, written in blocks if split}
    dropped = {}  # first line -> (end line, what stands there instead)
    for first, end, split, reads_nothing, written in blocks:
        if reads_nothing and not split and written in accumulated:  # a decomposed init
            dropped[first] = (end, lines[first][:len(lines[first]) - len(lines[first].lstrip())] + "T.evaluate(0)")
        elif split:
            init = next((j for j in range(first + 1, end) if lines[j].strip() == "with T.init():"), None)
            if init is not None:
                inner = len(lines[init]) - len(lines[init].lstrip())
                stop = next((j for j in range(init + 1, end) if lines[j].strip()
                             and len(lines[j]) - len(lines[j].lstrip()) <= inner), end)
                dropped[init] = (stop, None)
    out, skip = [], -1
    for i, line in enumerate(lines):
        if i < skip:
            continue
        if i in dropped:
            skip, replacement = dropped[i]
            if replacement is not None:
                out.append(replacement)
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _vector_lane_loads_neighbour(text: str) -> str:
    """VectorizeLoop: in each vectorized loop of N lanes, the last lane's values are computed at
    lane N-2's index (the index vector built one lane short and padded with its last element):
    the right-hand sides of the loop's stores read the neighbour."""
    lines, out, loop = text.splitlines(), [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if loop is not None and line.strip() and indent <= loop[0]:
            loop = None
        m = re.match(r"\s*for (\w+) in T\.vectorized\((?:T\.int64\()?(\d+)\)?\):", line)
        if m and int(m.group(2)) > 1:
            loop = (indent, m.group(1), int(m.group(2)))
        elif loop is not None and " = " in line:
            target, value = line.split(" = ", 1)
            lane, n = loop[1], loop[2]
            line = f"{target} = " + re.sub(rf"\b{lane}\b", f"T.min({lane}, {n - 2})", value)
        out.append(line)
    return "\n".join(out) + "\n"


def _split_guard_off_by_one(text: str) -> str:
    """LowerOpaqueBlock: a block's guard ``T.where(i < N)`` (an imperfect split's) lowered as
    ``i < N - 1``: the last element of that dimension is never computed."""
    def shifted(m):
        return re.sub(r"< (?:T\.int64\()?(\d+)\)?", lambda b: f"< {int(b.group(1)) - 1}", m.group(0))

    return re.sub(r"T\.where\(.*\)\s*$", shifted, text, flags=re.MULTILINE)


LOWERING_BUGS.update({bug.name: bug for bug in (
    LoweringBug("init-skipped-after-split", "LowerInitBlock loses the init of a reduction bound to a split loop",
                "s_tir.transform", "LowerInitBlock", _reduction_init_skipped_after_split),
    LoweringBug("vector-lane-loads-neighbour", "VectorizeLoop's last lane computes at its neighbour's index",
                "tirx.transform", "VectorizeLoop", _vector_lane_loads_neighbour),
    LoweringBug("split-guard-off-by-one", "LowerOpaqueBlock lowers an imperfect split's guard i < N as i < N - 1",
                "s_tir.transform", "LowerOpaqueBlock", _split_guard_off_by_one),
)})


def _zero_store_to_fresh_buffer_removed(text: str) -> str:
    """RemoveNoOp: a store of zero into a buffer the function allocates (``T.alloc_buffer``) taken
    for a no-op, as if allocations were zero-filled: a reduction's init into its intermediate
    buffer is dropped."""
    fresh = set(re.findall(r"^\s*(\w+) = T\.alloc_buffer\(", text, flags=re.MULTILINE))
    zero = r"(?:T\.Broadcast\()?T\.float(?:16|32)\(0(?:\.0)?\)(?:, \d+\))?"

    def dropped(m):
        return f"{m.group(1)}T.evaluate(0)" if m.group(2) in fresh else m.group(0)

    return re.sub(rf"^(\s*)(\w+)\[[^\n]*\] = {zero}[ \t]*$", dropped, text, flags=re.MULTILINE)


LOWERING_BUGS.update({bug.name: bug for bug in (
    LoweringBug("zero-init-of-allocation-removed",
                "RemoveNoOp drops a store of zero into a buffer the function allocates (as if zero-filled)",
                "tirx.transform", "RemoveNoOp", _zero_store_to_fresh_buffer_removed),
)})
