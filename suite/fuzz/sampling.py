"""Schedules sampled from MetaSchedule's design space, as its search samples its first candidates:
the space's sampling instructions (tile sizes, compute locations, unroll factors) decide anew from a
seed, then the target's postprocessors apply; a schedule a postprocessor rejects is dropped and
another sampled (counted). Trace ``index`` of a combination draws from a seed of its own, derived
from the campaign's seed and the combination, so that a rerun samples the same traces, and a
campaign that stopped continues without sampling the ones before again."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from suite import cache, compat
from suite.core import workloads
from suite.errors import UserError

#: Postprocessor rejections tolerated before a design space is given up as unsampleable.
MAX_RESAMPLES = 50


def space_kind(target) -> str:
    """Whose schedule rules and postprocessors: the target's own design space where it names one
    (Hexagon's), else TVM's defaults for the kind of target it tunes for."""
    return str(target.tuning_target().kind.name)


def design_space(workload, dtype: str, target) -> list:
    """The design space of (workload, dtype, target), JSON traces without decisions; kept in the
    cache per TVM build, since MetaSchedule takes up to a minute to make its first one."""
    key = {"tvm": compat.build_id(), "workload": workload.id, "dtype": dtype, "target": target.identity(),
           "code": [cache.source_digest(Path(compat.__file__)), cache.source_digest(Path(__file__))]}
    where = cache.entry("fuzz-space", f"{workload.id}-{dtype}-{target.name}", key)
    found = cache.load_entry(where, ("space.json",))
    if found:
        stored = cache.read_json(found["space.json"])
        if isinstance(stored, list) and stored:
            return stored
    spaces = compat.design_space(workloads.prim_func(workload, dtype), target.tuning_target(), space_kind(target))
    cache.store_entry(where, {"space.json": lambda tmp: cache.write_json(tmp, spaces)})
    return spaces


def trace_seed(seed: int, combination: str, index: int, attempt: int) -> int:
    """The schedule seed of one attempt at trace ``index`` of a combination: TVM takes 1..2^31-2."""
    return zlib.crc32(f"{seed}/{combination}/{index}/{attempt}".encode()) % (2**31 - 2) + 1


def sample(workload, dtype: str, target, spaces: list, seed: int, index: int) -> tuple[list, int]:
    """Trace ``index`` of (workload, dtype, target): (its JSON trace, how many samples the
    postprocessors rejected first). The design spaces take turns, as MetaSchedule's do."""
    func = workloads.prim_func(workload, dtype)
    combination = f"{workload.id}/{dtype}/{target.name}"
    space = spaces[index % len(spaces)]
    for attempt in range(MAX_RESAMPLES):
        try:
            trace = compat.sample_schedule(func, space, trace_seed(seed, combination, index, attempt),
                                           space_kind(target))
        except compat.schedule_error():  # a sampled decision a primitive refuses: rejected as well
            trace = None
        if trace is not None:
            return json.loads(json.dumps(trace)), attempt
    raise UserError(f"{combination}: {MAX_RESAMPLES} samples of its design space {index % len(spaces)} in a row "
                    "were rejected by the postprocessors; this TVM's design space cannot be sampled here")
