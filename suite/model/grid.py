"""The whole-model benchmarks (``benchmarks/bench_model.py``): their grid, its environment
contract, what a setting would cost on an emulated target, and their values.

The grid is model x dtype x target x order. Its environment contract, beside the workload grid's
(:class:`suite.core.combo.Grid`, whose dtypes, targets and orders it shares):

- ``TVM_SUITE_MODELS``: comma-separated models (:func:`suite.core.models.model_names`), or ``none``;
  default ``miniresnet`` (ResNet's data flow, 9 calls: seconds on llvm, so `run --quick` stays quick);
- ``TVM_SUITE_MODEL_INPUTS``: inputs per setting, 1 to 1000; default 8;
- ``TVM_SUITE_MODEL_BUDGET_S``: the emulated seconds one setting may take on an emulated target
  (every call run under qemu-hexagon, per input, and again by the IEEE twin where the call has
  rewritten instructions); a setting estimated above it is skipped with the estimate as its
  reason; default 1800.

Of the grid's targets, those that run kernels; of its orders, ``default`` and ``tuned``; its
dtypes all (int8: the model quantized, against the float model and the exact integer pipeline). A
setting whose target does not run its dtype, or int8 of a model without an int8 form, is skipped
with that reason. Every
setting of a model is measured in one :func:`suite.model.accuracy.evaluate` (the metrics
are relative to llvm's runs, which always run) and kept input by input in the cache
(:mod:`suite.model.store`): the first benchmark process of a model, or `run`'s measure
phase, measures; the others read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from suite import targets
from suite.core import entries, models, workloads
from suite.core.combo import Combo, Grid
from suite.errors import UserError
from suite.model import accuracy, calls, int8
from suite.model.results import ModelResult, SettingResult
from suite.model.settings import (
    BASELINE_TARGET,
    Setting,
    kernel_orders,
    settings_to_run,
)
from suite.targets.base import Mode

ENV = {"models": "TVM_SUITE_MODELS", "inputs": "TVM_SUITE_MODEL_INPUTS", "budget_s": "TVM_SUITE_MODEL_BUDGET_S"}
DEFAULT_MODELS = ("miniresnet",)
DEFAULT_INPUTS = 8
MAX_INPUTS = 1000
DEFAULT_BUDGET_S = 1800.0
#: Emulated seconds per GFLOP of a call whose own measurement is not in the cache: ResNet-18's
#: 56x56x64 3x3 convolution (0.23 GFLOP) in its default order emulated in 32 s (docs/model.md).
FALLBACK_S_PER_GFLOP = 32 / 0.231
PARAM_NAMES = ["model", "dtype", "target", "order"]


@dataclass(frozen=True)
class ModelGrid:
    models: list[str]
    dtypes: list[str]
    targets: list[str]
    orders: list[str]
    inputs: int
    budget_s: float

    @classmethod
    def from_env(cls, environ=None) -> ModelGrid:
        environ = os.environ if environ is None else environ
        grid = Grid.from_env(environ)
        names = [n.strip() for n in environ.get(ENV["models"], "").split(",") if n.strip()] or list(DEFAULT_MODELS)
        if names == ["none"]:  # no whole-model benchmarks in this run
            names = []
        elif "none" in names:
            raise UserError(f"{ENV['models']}={environ[ENV['models']]!r}: 'none' means no model and stands alone")
        for name in names:
            models.parse_model_name(name)
        running = [t for t in grid.targets if targets.get(t).mode is not Mode.COMPILE_ONLY]
        orders = [o for o in grid.orders if o in accuracy.MODEL_ORDERS]
        dtypes = [d for d in grid.dtypes if d in accuracy.MODEL_DTYPES]
        return cls(list(dict.fromkeys(names)), dtypes, running, orders,
                   _number(environ, "inputs", DEFAULT_INPUTS, int, 1, MAX_INPUTS),
                   _number(environ, "budget_s", DEFAULT_BUDGET_S, float, 0, float("inf")))

    def params(self) -> list[list[str]]:
        return [self.models, self.dtypes, self.targets, self.orders]

    @property
    def empty(self) -> bool:
        return not (self.models and self.dtypes and self.targets and self.orders)


def _number(environ, axis: str, default, kind, low, high):
    text = environ.get(ENV[axis], "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise UserError(f"{ENV[axis]}={text!r} is not a number") from None
    if not low <= value <= high or value != value:
        raise UserError(f"{ENV[axis]}={text} is out of range ({low} to {high})")
    return value


def estimate_s(plan, setting: Setting, inputs: int) -> tuple[float, str]:
    """Emulated seconds ``inputs`` inputs of ``setting`` would take, and how that was estimated:
    each call at its PrimFunc's measured emulated seconds (the measurement cache's, where kept;
    else by its FLOPs at :data:`FALLBACK_S_PER_GFLOP`), twice where the IEEE twin reruns it."""
    per_input, measured = 0.0, 0
    kept = {}
    for workload, order in kernel_orders(plan, setting):
        record = entries.cached(Combo(workload, setting.dtype, setting.target, order))
        kept[workload.id] = record
    for call in plan.calls:
        record = kept[call.workload.id]
        if record is not None and record.emulated_s:
            seconds, measured = record.emulated_s, measured + 1
            if setting.target.ieee_twin and (record.codegen or {}).get("rewritten"):
                seconds *= 2
        else:
            seconds = call.workload.flops / 1e9 * FALLBACK_S_PER_GFLOP
        per_input += seconds
    how = (f"{per_input:,.0f} s per input, {measured} of {len(plan.calls)} calls at their measured emulated "
           f"seconds, the rest by FLOPs at {FALLBACK_S_PER_GFLOP:.0f} s/GFLOP")
    return per_input * inputs, how


def plan_settings(grid: ModelGrid, model: str) -> tuple[object, list, dict]:
    """The model's calls, the settings to run (llvm's baselines included), and the requested
    settings skipped with their reason (a dtype the target or the model does not take, emulated
    ones over the budget)."""
    plan = calls.model_calls(model)
    llvm = targets.get(BASELINE_TARGET)
    chosen = [targets.get(t) for t in grid.targets]
    settings = settings_to_run(grid.dtypes, chosen, grid.orders, llvm)
    skipped, unquantizable = {}, None
    if any(d in workloads.INTEGER_DTYPES for d in grid.dtypes):
        try:
            int8.check_quantizable(plan)
        except UserError as err:
            unquantizable = str(err)
    for setting, requested in settings:
        if reason := setting.target.dtype_unavailable(setting.dtype):
            skipped[setting.ids] = reason
        elif unquantizable and setting.dtype in workloads.INTEGER_DTYPES:
            skipped[setting.ids] = unquantizable
        elif setting.target.mode is Mode.EMULATED:
            if reason := setting.target.unavailable():
                skipped[setting.ids] = reason
                continue
            total, how = estimate_s(plan, setting, grid.inputs)
            if total > grid.budget_s:
                skipped[setting.ids] = (f"not feasible within the budget: about {total:,.0f} emulated seconds for "
                                        f"{grid.inputs} inputs ({how}), over {grid.budget_s:,.0f} s "
                                        f"({ENV['budget_s']})")
    return plan, [(s, r) for s, r in settings if s.ids not in skipped], skipped


def measure(grid: ModelGrid, model: str, stream=None) -> ModelResult:
    """Every setting of ``model`` in ``grid`` (from the cache where kept): `tvm-suite model`'s
    result, with the skipped settings as results of status skipped and their reason."""
    plan, settings, skipped = plan_settings(grid, model)
    # Ctrl-C is the caller's to word (`run` says what it filed); what was measured is kept all the same.
    found, _ = accuracy.evaluate(plan, settings, grid.inputs, stream=stream, say_kept=False)
    return replace(found, results=(*found.results, *(SettingResult.skipped(*ids, why)
                                                                 for ids, why in skipped.items())))


def values(result: SettingResult) -> dict:
    """A measured setting's values under the names of suite.tracked's model metrics."""
    m = result.metrics
    found = {"model_rmse_ratio": m.rmse_ratio, "model_rmse_ratio_fp32": m.rmse_ratio_fp32,
             "model_max_abs_error": m.max_abs_error, "model_top1_agreement": m.top1_agreement,
             "model_top5_agreement": m.top5_agreement, "model_rmse": m.rmse,
             "model_tuned_rmse_ratio": m.rmse_ratio_default,
             "model_integer_differing": None if result.exactness is None else result.exactness.differing}
    if (t := result.ieee_twin) is not None:
        found.update({"model_twin_rmse_ratio": t.rmse_ratio, "model_twin_top1_agreement": t.top1_agreement,
                      "model_twin_tuned_rmse_ratio": t.rmse_ratio_default})
    if packets := result.packets_per_input:
        found["model_packets_per_input"] = packets
    return {k: float("nan") if v is None else float(v) for k, v in found.items()}
