"""A setting of a whole model (one dtype x target x loop order) and what it runs: its kernels, from the
measurement cache (:func:`kernels`; int8: one quantized kernel per call, :mod:`suite.model.int8`), the
key of its inputs' cache entries (:func:`setting_key`), the settings a request runs with the baselines
its metrics need (:func:`settings_to_run`), and one setting's run over the inputs (:class:`Outcome`),
for :mod:`suite.model.accuracy`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from suite import cache
from suite.core import execution, measurement, tuning_records, workloads
from suite.core.combo import Combo
from suite.model import int8
from suite.model import store as model_store
from suite.model.calls import ModelCalls
from suite.model.chain import CallFailed, Kernels, PlacementSums, forward
from suite.targets.base import Target

#: The target every setting is compared with (same dtype and order), and whose fp32 ``default`` run
#: is the baseline of the RMSE ratio.
BASELINE_TARGET = "llvm"


@dataclass(frozen=True)
class Setting:
    dtype: str
    target: Target
    order: str

    @property
    def ids(self) -> tuple[str, str, str]:
        return self.dtype, self.target.name, self.order



def kernel_orders(plan: ModelCalls, setting: Setting) -> list[tuple]:
    """(workload, the order its PrimFunc runs in) for each fused PrimFunc of the model: in ``tuned``,
    ``default`` where no tuning record of it exists."""
    found = []
    for workload in plan.unique_workloads():
        order = setting.order
        if (order == "tuned"
                and tuning_records.records_target(setting.target.records_from, setting.dtype, workload.id) is None):
            order = "default"
        found.append((workload, order))
    return found


def setting_key(plan: ModelCalls, setting: Setting) -> dict:
    """What determines the setting's kernels: each one's measurement key (the TVM build, the
    suite's measuring code, the target, the schedule), without building anything."""
    found = {w.id: cache.digest(Combo(w, setting.dtype, setting.target, order).key)
             for w, order in kernel_orders(plan, setting)}
    if setting.dtype in workloads.INTEGER_DTYPES:  # and each call's calibrated parameters
        found["quantized"] = cache.digest(int8.quantized_model(plan, forward).key())
    return found


def kernels(plan: ModelCalls, setting: Setting) -> Kernels:
    """One build per fused PrimFunc of the model, from the measurement cache (measured there first
    when absent)."""
    found = Kernels()
    if setting.dtype in workloads.INTEGER_DTYPES:
        return _int8_kernels(plan, setting, found)
    for workload, order in kernel_orders(plan, setting):
        if order != setting.order:
            found.untuned.append(workload.id)
        combo = Combo(workload, setting.dtype, setting.target, order)
        record = measurement.measure(combo, verify=(setting.target.KERNEL_FILE,))
        if not record.has_output:
            why = record.reason if not record.ok else f"{setting.target.name} is compile-only: it runs no kernel"
            found.failure = f"{workload.id} ({order}): {why}"
            return found
        found.built[workload.id] = execution.Built(setting.target, combo.entry / setting.target.KERNEL_FILE,
                                                   record.compile_s, record.codegen, record.code)
    return found


def _int8_kernels(plan: ModelCalls, setting: Setting, found: Kernels) -> Kernels:
    """Each call's quantized kernel, with its calibrated plan (suite.model.int8): one build per call."""
    orders = dict((w.id, order) for w, order in kernel_orders(plan, setting))
    found.untuned = [w for w, order in orders.items() if order != setting.order]
    model = int8.quantized_model(plan, forward)
    for call in plan.calls:
        order = orders[call.workload.id]
        built = int8.call_kernel(plan, model, call, setting.target, order)
        if built.failure is not None:
            found.failure = f"call {call.index} ({call.workload.id}, {order}): {built.failure.words()}"
            return found
        found.built[call.index] = built
    return found


@dataclass
class Outcome:
    """One setting's run over the inputs."""

    setting: Setting
    requested: bool
    untuned: list[str] = field(default_factory=list)  #: workloads run ``default`` in ``tuned``
    store: model_store.InputStore | None = None
    kernels: Kernels | None = None  #: built when an input is not in the cache
    logits: list[np.ndarray] = field(default_factory=list)
    twins: list[np.ndarray] = field(default_factory=list)  #: the IEEE twin's logits, on a target with one
    failure: str | None = None
    target_s: float = 0.0
    twin_s: float = 0.0
    counts: dict | None = None  #: what the target executed (emulated targets: packets...), summed
    attribution_s: float = 0.0
    attribution: PlacementSums | None = None
    only_logits: list[np.ndarray] = field(default_factory=list)  #: per input: calls x classes
    kept: int = 0  #: inputs whose run came from the cache
    attribution_kept: int = 0
    twin: bool = True  #: the IEEE twin's chain runs too, on a target with one
    differing: list[list[int]] = field(default_factory=list)  #: int8, per input: each call's elements unlike the pipeline's

    @property
    def integer(self) -> bool:
        return self.setting.dtype in workloads.INTEGER_DTYPES

    @property
    def has_twin(self) -> bool:
        """The IEEE twin's chain runs: on a target with one, in a float dtype (integer HVX has no
        instruction the twin would round otherwise)."""
        return self.twin and bool(self.setting.target.ieee_twin) and not self.integer

    def attributed(self, attribute: bool) -> bool:
        """Whether its error is attributed: asked for, requested, and a float dtype (an int8 chain
        names the first call unlike the integer pipeline instead: :class:`Exactness`)."""
        return attribute and self.requested and not self.integer

    def built(self, plan: ModelCalls) -> Kernels:
        if self.kernels is None:
            self.kernels = kernels(plan, self.setting)
            if self.kernels.failure is not None:
                raise CallFailed(self.kernels.failure)
        return self.kernels


def settings_to_run(dtypes, targets_, orders, baseline_target: Target) -> list[tuple[Setting, bool]]:
    """(setting, requested) for the requested settings and the baselines their metrics need: llvm in
    the same dtype and order, llvm ``default`` in the same dtype, and llvm float32 ``default``."""
    wanted = {(d, t.name, o) for d in dtypes for t in targets_ for o in orders}
    baselines = ({(d, baseline_target.name, o) for d in dtypes for o in orders}
                 | {(d, baseline_target.name, "default") for d in dtypes}
                 | {("float32", baseline_target.name, "default")})
    by_name = {t.name: t for t in (baseline_target, *targets_)}
    all_dtypes = list(dict.fromkeys([*dtypes, "float32"]))
    all_orders = list(dict.fromkeys([*orders, "default"]))
    return [(Setting(d, by_name[t], o), (d, t, o) in wanted)
            for d in all_dtypes for t in by_name for o in all_orders if (d, t, o) in wanted | baselines]

