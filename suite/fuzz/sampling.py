"""Schedules sampled from MetaSchedule's design space, as its search samples its first candidates:
the space's sampling instructions (tile sizes, compute locations, unroll factors) decide anew from a
seed, then the space's postprocessors apply; a schedule a postprocessor rejects is dropped and
another sampled (counted). Trace ``index`` of a combination draws from a seed of its own, derived
from the campaign's seed and the combination, so that a rerun samples the same traces, and a
campaign that stopped continues without sampling the ones before again.

int8 samples the space `tvm-suite tune --dtype int8` searches (:mod:`suite.core.tuning`): the
target's dot-product intrinsic offered (on llvm the CPU's VNNI ``dot_16x4_vnni``, else
``dot_16x4_avx512``; on Hexagon HVX's ``vrmpy``), tiled for first and tensorized by the
postprocessors, with the weights packed into the intrinsic's blocks first where their channels
allow (:func:`suite.core.dot_product.pack_weights`). The packing is done in the sampled schedule,
so each trace holds it and replays on the unpacked kernel, as every other trace does."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from suite import cache
from suite.compat import intrinsics, metaschedule, release, schedules
from suite.core import dot_product, workloads
from suite.errors import UserError

#: Postprocessor rejections tolerated before a design space is given up as unsampleable.
MAX_RESAMPLES = 50


@dataclass(frozen=True)
class DesignSpace:
    """The design spaces of a combination: ``traces``, JSON traces without decisions; for int8,
    the dot-product intrinsic offered (``intrinsic``: the registered name, None where none is),
    why (``reason``), and whether the weights are packed first (``packed_lanes``: the intrinsic's
    output lanes; None: as they are)."""

    traces: list
    intrinsic: str | None = None
    reason: str | None = None
    packed_lanes: int | None = None


def space_kind(target) -> str:
    """Whose schedule rules and postprocessors: the target's own design space where it names one
    (Hexagon's), else TVM's defaults for the kind of target it tunes for."""
    return str(target.tuning_target().kind.name)


def design_space(workload, dtype: str, target) -> DesignSpace:
    """The design space of (workload, dtype, target); its traces kept in the cache per TVM build,
    since MetaSchedule takes up to a minute to make its first one."""
    func = workloads.prim_func(workload, dtype)
    choice = target.dot_product_choice() if dtype in workloads.INTEGER_DTYPES and hasattr(
        target, "dot_product_choice") else None
    intrinsic = intrinsics.dot_product_intrinsic_name(choice.intrinsic) if choice else None
    lanes = dot_product.intrinsic_lanes(choice.intrinsic) if intrinsic else None
    packed = dot_product.pack_weights(func, workload.chain, lanes) if lanes else None
    found = DesignSpace([], intrinsic, choice.reason if choice else None, lanes if packed is not None else None)
    key = {"tvm": release.build_id(), "workload": workload.id, "dtype": dtype, "target": target.identity(),
           "intrinsic": intrinsic, "packed_lanes": found.packed_lanes,
           "code": [*(cache.source_digest(p) for p in sorted(Path(metaschedule.__file__).parent.glob("*.py"))),
                    cache.source_digest(Path(__file__)), cache.source_digest(Path(dot_product.__file__))]}
    where = cache.entry("fuzz-space", f"{workload.id}-{dtype}-{target.name}", key)
    stored = cache.load_entry(where, ("space.json",))
    if stored:
        traces = cache.read_json(stored["space.json"])
        if isinstance(traces, list) and traces:
            return DesignSpace(traces, found.intrinsic, found.reason, found.packed_lanes)
    traces = metaschedule.design_space(packed if packed is not None else func, target.tuning_target(), space_kind(target),
                                 intrinsic)
    cache.store_entry(where, {"space.json": lambda tmp: cache.write_json(tmp, traces)})
    return DesignSpace(traces, found.intrinsic, found.reason, found.packed_lanes)


def trace_seed(seed: int, combination: str, index: int, attempt: int) -> int:
    """The schedule seed of one attempt at trace ``index`` of a combination: TVM takes 1..2^31-2."""
    return zlib.crc32(f"{seed}/{combination}/{index}/{attempt}".encode()) % (2**31 - 2) + 1


def sample(workload, dtype: str, target, spaces: DesignSpace, seed: int, index: int) -> tuple[list, int]:
    """Trace ``index`` of (workload, dtype, target): (its JSON trace, how many samples the
    postprocessors rejected first). The design spaces take turns, as MetaSchedule's do."""
    func = workloads.prim_func(workload, dtype)
    combination = f"{workload.id}/{dtype}/{target.name}"
    space = spaces.traces[index % len(spaces.traces)]
    prepare = (partial(dot_product.pack_weights_in, chain=workload.chain, lanes=spaces.packed_lanes)
               if spaces.packed_lanes else None)
    for attempt in range(MAX_RESAMPLES):
        try:
            trace = metaschedule.sample_schedule(func, space, trace_seed(seed, combination, index, attempt),
                                           space_kind(target), spaces.intrinsic, prepare)
        except schedules.schedule_error():  # a sampled decision a primitive refuses: rejected as well
            trace = None
        if trace is not None:
            return json.loads(json.dumps(trace)), attempt
    raise UserError(f"{combination}: {MAX_RESAMPLES} samples of its design space {index % len(spaces.traces)} in a row "
                    "were rejected by the postprocessors; this TVM's design space cannot be sampled here")


def tensorized(spaces: DesignSpace, trace: list) -> list[str] | None:
    """The tensor intrinsics a sampled trace tensorizes with (empty: it did not), where its space
    offered one (None: it offered none)."""
    return sorted(dot_product.tensor_intrinsics(trace)) if spaces.intrinsic else None
