"""The compiler changes `gate_benchmark.py` makes, each a real change of how TVM lowers a kernel.

A change is applied where the suite builds a combination (:func:`build`): to the scheduled PrimFunc
before TVM lowers it (a rewrite of its loops, as a TIR pass would make), or to TVM's pass
configuration for that build. The kernel is then compiled by the installed TVM, run and timed like
any other; what it does to speed and accuracy is measured, never assumed (`gate_benchmark.py`
measures each change's step before it scores anything). Nothing in ``suite/`` knows of these
changes: only this experiment can make them, in its own process.

What each change is *meant* to do (``intent``) only names it; a pair is scored by what was measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from suite import compat
from suite.core import execution, schedules, tuning, workloads
from suite.core.combo import Combo
from suite.errors import OrderNotApplicable

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
    #: (``tir.`` before 0.27, ``tirx.`` from it: :func:`suite.compat.pass_config`)
    config: dict = field(default_factory=dict)
    #: a rewrite of the scheduled PrimFunc: (func) -> func, raising NotApplicable
    rewrite: Callable | None = None


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
        sch = compat.schedule(func)
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
            except compat.schedule_error():
                continue
            return sch.mod["main"]
        raise NotApplicable("no two reduction loops of extent above 1 that TVM lets swap")

    return rewrite


def _parsed(text: str):
    return compat.tvm().script.from_source(text)


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
        found = tuning.records_target(records, combo.dtype, combo.workload.id)
        records = (found,) if found else records
    return schedules.apply(workloads.prim_func(combo.workload, combo.dtype), combo.order, combo.workload.id,
                           combo.dtype, records)


def build(combo: Combo, change: Change, path: Path) -> execution.Built:
    """The combination built by the installed TVM with ``change`` made (NotApplicable where it has
    nothing to change), into ``path``: a failure of TVM is the build's ``failure``."""
    func = scheduled(combo)
    if change.rewrite is not None:
        func = change.rewrite(func)
    tvm = compat.tvm()
    with tvm.transform.PassContext(opt_level=2, config=compat.pass_config(change.config)):
        return execution.build(combo.target, func, path, combo.order)
