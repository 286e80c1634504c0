"""One combination (workload x dtype x target x loop order) and the grid of them.

A :class:`Combo` is resolved and validated once (unknown names fail there, with one line); it
knows its label, its cache key and its cache entry. A :class:`Grid` is the benchmark parameter
grid, which travels to asv's benchmark processes through the environment: :meth:`Grid.to_env`
and :meth:`Grid.from_env` are the two halves of that contract.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from suite import cache, targets
from suite.compat import release
from suite.core import schedules, workloads
from suite.core.record import Need
from suite.targets.base import Target

#: Bump when the meaning of a cached record, output or reference changes.
SCHEMA = 4

#: Targets and loop orders of a quick run (`tvm-suite run --quick`, and asv run without a grid).
QUICK_TARGETS, QUICK_ORDERS = ("llvm",), ("default", "tuned")

#: The environment variables that narrow the benchmark grid (comma-separated lists).
ENV = {"workloads": "TVM_SUITE_WORKLOADS", "dtypes": "TVM_SUITE_DTYPES",
       "targets": "TVM_SUITE_TARGETS", "orders": "TVM_SUITE_ORDERS"}


#: The suite's code that determines a measurement: a change to it (a fix in a schedule, a target, a
#: metric) measures every combination again rather than reading what the old code computed; a change
#: of a comment or docstring does not (cache.source_digest).
_MEASURING_CODE = ("compat/*.py", "cache.py", "core/workloads.py", "core/models.py", "core/quantized.py",
                   "floats.py",
                   "core/reference.py",
                   "core/metrics.py", "core/bounds.py", "core/schedules.py", "core/tuning.py",
                   "core/tuning_records.py", "core/dot_product.py", "core/output_check.py",
                   "core/execution.py", "core/measurement.py", "core/entries.py", "core/record.py", "targets/*.py",
                   "targets/*.c")


@lru_cache(maxsize=None)
def suite_code() -> str:
    root = Path(__file__).resolve().parents[1]
    files = sorted(p for pattern in _MEASURING_CODE for p in root.glob(pattern))
    return cache.digest({p.relative_to(root).as_posix(): cache.source_digest(p) for p in files})


@dataclass(frozen=True, eq=False)
class Combo:
    workload: workloads.Workload
    dtype: str
    target: Target
    order: str

    @classmethod
    def resolve(cls, workload_id: str, dtype: str, target_name: str, order: str = "default") -> Combo:
        """The combination of these names, each checked (UserError naming the valid ones)."""
        return cls(workloads.get(workload_id), workloads.check_dtype(dtype, workloads.MEASURED_DTYPES),
                   targets.get(target_name),
                   schedules.check_order(order))

    @property
    def ids(self) -> tuple[str, str, str, str]:
        """The asv parameters of this combination."""
        return self.workload.id, self.dtype, self.target.name, self.order

    def __eq__(self, other):
        return isinstance(other, Combo) and self.ids == other.ids

    def __hash__(self):
        return hash(self.ids)

    def __repr__(self):
        return f"Combo({self.label})"

    @property
    def label(self) -> str:
        return " ".join(self.ids)

    @property
    def cost(self) -> tuple[tuple[str, str], float]:
        """What measuring it costs, roughly, for the time left of a phase (suite.progress): its
        kind (target and dtype: an emulated target takes minutes where llvm takes seconds), whose
        seconds so far are the rate, and its weight in that kind (a build's fixed share, plus its
        FLOPs per 100 MFLOP: the reference, an emulation and the timing grow with them)."""
        return (self.target.name, self.dtype), 1.0 + self.workload.flops / 1e8

    def with_order(self, order: str) -> Combo:
        return Combo(self.workload, self.dtype, self.target, schedules.check_order(order))

    @cached_property
    def key(self) -> dict:
        """Everything that determines this combination's measurement."""
        return {
            "schema": SCHEMA,
            "suite": suite_code(),
            "tvm": release.build_id(),
            "workload": self.workload.id,
            "chain": cache.digest(self.workload.chain),
            "dtype": self.dtype,
            "target": self.target.identity(),
            "order": self.order,
            "schedule": schedules.schedule_digest(self.order, self.workload.id, self.dtype,
                                                  self.target.records_from),
        }

    @cached_property
    def entry(self) -> Path:
        """The cache directory of this combination's measurement (no TVM import)."""
        return cache.entry("measure", "-".join(self.ids), self.key)

    def to_env(self) -> dict[str, str]:
        return Grid([self.workload.id], [self.dtype], [self.target.name], [self.order]).to_env()


@dataclass(frozen=True)
class Grid:
    """Workload ids x dtypes x target names x loop orders (all validated)."""

    workloads: list[str]
    dtypes: list[str]
    targets: list[str]
    orders: list[str]

    @classmethod
    def of(cls, workloads_=None, dtypes=None, targets_=None, orders=None) -> Grid:
        """A grid of these names (None: the default of each axis), every name checked."""
        return cls(select_workloads(workloads_),
                   [workloads.check_dtype(d, workloads.MEASURED_DTYPES) for d in dtypes or workloads.DTYPES],
                   [targets.get(t).name for t in targets_ or targets.names()],
                   [schedules.check_order(o) for o in orders or schedules.ORDERS])

    @classmethod
    def from_env(cls, environ=None) -> Grid:
        """The grid the environment names; an axis it does not name is that of `tvm-suite run
        --quick` (llvm, orders default and tuned), so that a plain ``asv run`` covers what the
        suite's quick run covers, not every target and order."""
        environ = os.environ if environ is None else environ
        listed = {axis: _split(environ.get(variable, "")) for axis, variable in ENV.items()}
        return cls.of(listed["workloads"], listed["dtypes"], listed["targets"] or list(QUICK_TARGETS),
                      listed["orders"] or list(QUICK_ORDERS))

    def to_env(self) -> dict[str, str]:
        return {variable: ",".join(getattr(self, axis)) for axis, variable in ENV.items()}

    def params(self) -> list[list[str]]:
        """asv's ``params``, in the order of ``PARAM_NAMES``."""
        return [self.workloads, self.dtypes, self.targets, self.orders]

    def for_need(self, need: Need, against_default: bool = False, dtypes: tuple[str, ...] | None = None) -> Grid | None:
        """The part of the grid whose combinations can give what a benchmark ``need``s (e.g.
        latency: native targets only), without ``default`` for comparisons against it, of
        ``dtypes`` only (None: all; the float metrics and the integer ones are read by classes of
        their own); None when nothing is left. Saves asv a process per combination that could
        only be skipped."""
        names = [t for t in self.targets if need.can(targets.get(t))]
        orders = [o for o in self.orders if not (against_default and o == "default")]
        kept = [d for d in self.dtypes if dtypes is None or d in dtypes]
        return Grid(self.workloads, kept, names, orders) if names and orders and kept else None

    def combos(self) -> list[Combo]:
        return [Combo.resolve(w, d, t, o) for w in self.workloads for d in self.dtypes
                for t in self.targets for o in self.orders]


PARAM_NAMES = ["workload", "dtype", "target", "order"]


def _split(value: str) -> list[str] | None:
    items = [item.strip() for item in value.split(",") if item.strip()]
    return items or None


def select_workloads(names: list[str] | None) -> list[str]:
    """Workload ids for a list of ids and model names (None: the default set)."""
    if not names:
        return workloads.default_ids()
    ids = []
    for name in names:
        if name in workloads.all_models():
            ids += [w.id for w in workloads.catalog(name)]
        else:
            ids.append(workloads.get(name).id)
    return list(dict.fromkeys(ids))
