"""Loop orders: how a workload's PrimFunc is scheduled before it is built.

``default`` is the PrimFunc exactly as Relax legalization (or TE, for the seed) produced it.
Other orders are applied with TVM's schedule primitives to the workload's *reduction block*
(the one block with reduction iter vars: the conv2d, matmul, mean-sum or max-pool block):

- ``seed-swap``: the reorder of the seed issue, generalized: the first reduction loop moves
  above the last spatial loop (the seed conv2d's ``nn,yy,xx,ff,ry,rx,rc`` becomes
  ``nn,yy,xx,ry,ff,rx,rc``, i.e. ``sch.reorder(i4, i3)``). Each output element still sums its
  terms in the same order.
- ``reduction-outer``: every reduction loop above every spatial loop, each group keeping its
  relative order.
- ``tuned``: the committed MetaSchedule trace of (workload, dtype), replayed, from the first target
  of the combination's ``records_from`` that has one (see :mod:`suite.core.tuning_records`); a missing
  trace is a skip, one that no longer applies a failure.
- ``seed-tuned``: the seed conv2d only: the PrimFunc MetaSchedule produced on Hexagon in the
  seed issue, rebuilt primitive by primitive (it sums ``rx`` outermost, so its results differ).
- ``seed-swap-vec``: the seed conv2d only: ``seed-swap`` with the 64 output channels (``ff``)
  vectorized, as the seed issue's hardware most likely compiled its swapped module: LLVM does not
  vectorize ``seed-swap`` by itself (0 HVX qfloat instructions for v68), this gives 86.

An order that cannot be applied raises :class:`suite.errors.OrderNotApplicable` with the reason.
"""

from __future__ import annotations

from suite import cache
from suite.compat import schedules
from suite.core import tuning_records
from suite.core.workloads import SEED_ID
from suite.errors import OrderNotApplicable, UserError

ORDERS = ("default", "seed-swap", "reduction-outer", "tuned", "seed-tuned", "seed-swap-vec")
#: Orders that only the seed conv2d has: they rebuild the seed issue's own schedules.
SEED_ONLY = ("seed-tuned", "seed-swap-vec")

#: Tile sizes of the seed issue's tuned PrimFunc, per loop nn, yy, xx, ff (three levels,
#: outer to inner) and ry, rx, rc (two levels), read off its block bindings.
SEED_TILES = ([1, 1, 1], [28, 2, 2], [7, 16, 1], [1, 1, 64], [1, 7], [7, 1], [1, 3])


class UnknownOrder(UserError, ValueError):
    pass


def schedule_digest(order: str, workload_id: str, dtype: str, records) -> str | None:
    """What, besides TVM and the workload, determines the scheduled PrimFunc: the tuned trace that
    replays, of the first of ``records`` (a target name, or names in order of preference) with one."""
    if order != "tuned":
        return None
    found = tuning_records.records_target(records, dtype, workload_id)
    if not found:
        return None
    return cache.digest(tuning_records.read_record(tuning_records.trace_path(found, dtype, workload_id))[0])


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise UnknownOrder(f"unknown loop order {order!r}; valid orders: {', '.join(ORDERS)}")
    return order


def apply(func, order: str, workload_id: str, dtype: str, records, accumulator: bool = False):
    """``func`` (the PrimFunc of workload ``workload_id``) scheduled in loop order ``order``;
    ``records``: whose tuning records ``tuned`` replays (a target name, or names by preference);
    ``accumulator``: ``func`` is an int8 kernel's accumulator function (``tuned`` replays the
    record's trace of it)."""
    check_order(order)
    if order == "default":
        return func
    if order == "tuned":
        return tuning_records.replay(func, workload_id, dtype, records, accumulator)
    if order in SEED_ONLY and workload_id != SEED_ID:
        raise OrderNotApplicable(f"{order} is the seed issue's schedule of {SEED_ID} only")
    steps = {"seed-swap": _seed_swap, "reduction-outer": _reduction_outer, "seed-tuned": _seed_tuned,
             "seed-swap-vec": _seed_swap_vec}
    sch = schedules.schedule(func)
    try:
        steps[order](sch)
    except schedules.schedule_error() as err:
        raise OrderNotApplicable(f"{order}: TVM refused it: {_schedule_error_reason(err)}") from None
    return sch.mod["main"]


# ----------------------------------------------------------------------------- analysis


def reduction_block(sch):
    """The one block with reduction iter vars; OrderNotApplicable if there is none or several."""
    found = []
    for block in sch.get_child_blocks(schedules.get_block(sch, "root")):
        if any(schedules.iter_kind(iv) == "R" for iv in sch.get(block).iter_vars):
            found.append(block)
    if not found:
        raise OrderNotApplicable("no reduction block: every block has only spatial iter vars")
    if len(found) > 1:
        names = ", ".join(sch.get(b).name_hint for b in found)
        raise OrderNotApplicable(f"{len(found)} reduction blocks ({names}); the orders need one")
    return found[0]


def loop_kinds(sch, block) -> list[tuple[object, str]]:
    """Each loop around ``block`` (outer to inner) with the kind of the iter vars it binds.

    ``"S"``: only spatial iter vars, ``"R"``: only reduction ones, ``""``: none (a loop the
    block does not depend on). A loop binding both kinds makes the orders inapplicable.
    """
    realize = schedules.block_realize(sch, block)
    uses: dict = {}
    for iter_var, value in zip(realize.block.iter_vars, realize.iter_values):
        kind = schedules.iter_kind(iter_var)
        for var in schedules.vars_in(value):
            uses.setdefault(var, set()).add(kind)
    result = []
    for loop in sch.get_loops(block):
        loop_var = sch.get(loop).loop_var
        kinds = next((k for v, k in uses.items() if v.same_as(loop_var)), set())
        if len(kinds) > 1 or kinds - {"S", "R"}:
            raise OrderNotApplicable(
                f"loop {loop_var.name} of block {realize.block.name_hint!r} binds iter vars of "
                f"kinds {''.join(sorted(kinds))}, not only spatial or only reduction ones"
            )
        result.append((loop, next(iter(kinds), "")))
    return result


def _split_loops(sch):
    block = reduction_block(sch)
    kinds = loop_kinds(sch, block)
    spatial = [loop for loop, kind in kinds if kind == "S"]
    reduction = [loop for loop, kind in kinds if kind == "R"]
    name = sch.get(block).name_hint
    if not reduction:
        raise OrderNotApplicable(f"block {name!r} has no reduction loop")
    if not spatial:
        raise OrderNotApplicable(f"block {name!r} has no spatial loop to move a reduction loop above")
    s_pos = [i for i, (_, kind) in enumerate(kinds) if kind == "S"]
    r_pos = [i for i, (_, kind) in enumerate(kinds) if kind == "R"]
    return block, spatial, reduction, s_pos, r_pos


# ----------------------------------------------------------------------------- orders


def _seed_swap(sch) -> None:
    block, spatial, reduction, s_pos, r_pos = _split_loops(sch)
    if r_pos[0] < s_pos[-1]:
        raise OrderNotApplicable(
            f"nothing to move: the first reduction loop of block {sch.get(block).name_hint!r} "
            "is already above its last spatial loop"
        )
    sch.reorder(reduction[0], spatial[-1])


def _seed_swap_vec(sch) -> None:
    """seed-swap, then the moved spatial loop (the output channels) vectorized."""
    _seed_swap(sch)
    block = reduction_block(sch)
    moved = [loop for loop, kind in loop_kinds(sch, block) if kind == "S"][-1]
    sch.vectorize(moved)


def _reduction_outer(sch) -> None:
    block, spatial, reduction, s_pos, r_pos = _split_loops(sch)
    if r_pos[-1] < s_pos[0]:
        raise OrderNotApplicable(
            f"nothing to move: the reduction loops of block {sch.get(block).name_hint!r} "
            "are already outermost"
        )
    sch.reorder(*reduction, *spatial)


def _seed_tuned(sch) -> None:
    """The seed issue's MetaSchedule result (llvm/Hexagon rules, SRSRS tiling), step by step."""
    block = reduction_block(sch)
    kinds = [kind for _, kind in loop_kinds(sch, block)]
    if kinds != list("SSSSRRR"):
        raise OrderNotApplicable(f"seed-tuned needs loops SSSSRRR, found {''.join(kinds) or 'none'}")
    # MetaSchedule's auto-inline: the producers (TE's zero-padding copy) fold into the conv.
    for producer in sch.get_producers(block):
        sch.compute_inline(producer)
    sch.annotate(block, "meta_schedule.tiling_structure", "SRSRS")
    write_cache = sch.cache_write(block, 0, "global")
    tiles = [
        sch.split(loop, factors=factors, preserve_unit_iters=True)
        for loop, factors in zip(sch.get_loops(block), SEED_TILES)
    ]
    s0, s1, s2 = ([t[level] for t in tiles[:4]] for level in range(3))
    r0, r1 = ([t[level] for t in tiles[4:]] for level in range(2))
    sch.reorder(*s0, *r0, *s1, *r1, *s2)
    # Reuse-write at tile level 1: the write-back sits inside the outer reduction tiles.
    sch.reverse_compute_at(write_cache, r0[-1], preserve_unit_loops=True, index=-1)
    # Post-processing: parallel + auto-unroll on the fused outer tiles, vectorized inner loops.
    outer = sch.fuse(*s0[:3])
    sch.parallel(outer)
    sch.annotate(outer, "pragma_auto_unroll_max_step", 512)
    sch.annotate(outer, "pragma_unroll_explicit", 1)
    sch.vectorize(sch.fuse(s2[3]))
    sch.vectorize(sch.fuse(sch.get_loops(write_cache)[-1]))
    sch.decompose_reduction(block, r0[0])


def _schedule_error_reason(err: BaseException) -> str:
    """The meaningful line of a ScheduleError (its detailed render ends with it)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in lines:
        if line.startswith("Error message:"):
            return line[len("Error message:"):].strip()[:300]
    for line in lines:
        if not line.startswith("ScheduleError: An error occurred") and not line.startswith("Traceback"):
            return line.removeprefix("ScheduleError:").strip()[:300]
    return type(err).__name__
