"""One setting's result from the runs of every setting (:func:`setting_result`): its logits' errors
against float64, its distance from llvm's and from its own ``default``'s, the RMSE ratios and
PyTorch's rule (:func:`torch_multiplier`), the IEEE twin's metrics, int8's exactness against the
integer pipeline, and its error's attribution to calls, for :mod:`suite.model.accuracy`."""

from __future__ import annotations

import numpy as np

from suite.model.calls import ModelCalls
from suite.model.chain import PlacementSums
from suite.model.results import (
    AgainstDefault,
    Apart,
    Attribution,
    CallId,
    CallShare,
    Errors,
    Exactness,
    Metrics,
    OrderShare,
    Seconds,
    SettingResult,
    Status,
    TwinMetrics,
)
from suite.model.settings import BASELINE_TARGET, Outcome

#: The k of top-k agreement (besides top-1): :attr:`suite.model.results.Errors.top5_agreement`.
TOP = 5


def torch_multiplier(dtype: str, size: int) -> float:
    """PyTorch's accuracy rule (torch/_dynamo/utils.py ``same``): a result passes when its RMSE
    against float64 is at most this times its eager run's: 3 for float16/bfloat16 and for outputs
    under 1000 elements (noise dominates), else 2."""
    return 3.0 if dtype in ("float16", "bfloat16") or size < 1000 else 2.0



def _find(outcomes, dtype, target, order) -> Outcome | None:
    return next((o for o in outcomes if o.setting.ids == (dtype, target, order) and o.failure is None), None)


def setting_result(plan: ModelCalls, outcome: Outcome, outcomes, exact_logits, count: int) -> SettingResult:
    dtype, target, order = outcome.setting.ids
    default_calls = None
    if order == "tuned":
        untuned = set(outcome.untuned)
        default_calls = tuple(CallId(c.index, c.workload.id) for c in plan.calls if c.workload.id in untuned)
    if outcome.failure is not None:
        return SettingResult(dtype, target, order, outcome.requested, Status.NOT_MEASURED, outcome.failure,
                             default_calls)
    logits = np.concatenate(outcome.logits).astype(np.float64)
    exact = np.concatenate(exact_logits[dtype])
    llvm = _find(outcomes, dtype, BASELINE_TARGET, order)
    eager = _find(outcomes, dtype, BASELINE_TARGET, "default")
    fp32 = _find(outcomes, "float32", BASELINE_TARGET, "default")
    default = _find(outcomes, dtype, target, "default") if order != "default" else None
    errors = _against(logits, exact)
    multiplier = torch_multiplier(dtype, exact.size)
    eager_rmse = _rmse(eager, exact) if eager else None
    metrics = Metrics(
        **vars(errors),
        vs_llvm=_difference(logits, llvm) if llvm else None,
        rmse_ratio=_ratio(errors.rmse, eager_rmse),
        rmse_ratio_fp32=_ratio(errors.rmse, _rmse(fp32, np.concatenate(exact_logits["float32"]))) if fp32 else None,
        torch_multiplier=multiplier,
        within_torch_rule=bool(errors.rmse <= multiplier * eager_rmse) if eager_rmse is not None else None,
        vs_default=_difference(logits, default) if default else None,
        rmse_ratio_default=_ratio(errors.rmse, _rmse(default, exact)) if default else None)
    # an emulated target: what it executed per input (exact), and its emulated seconds
    per_input = ({name: value / count for name, value in sorted(outcome.counts.items())} if outcome.counts
                 else None)
    attribution = None
    if outcome.attribution is not None:
        attribution = _attribution(plan, outcome.attribution, metrics.rmse ** 2,
                                   _attribution_vs_default(plan, outcome, default, logits)
                                   if default is not None and default.attribution is not None else None)
    return SettingResult(
        dtype, target, order, outcome.requested, Status.MEASURED, default_calls=default_calls, metrics=metrics,
        seconds_per_input=Seconds(outcome.target_s / count,
                                  outcome.twin_s / count if outcome.has_twin else None,
                                  outcome.attribution_s / count if attribution is not None else None),
        per_input=per_input,
        ieee_twin=_twin_metrics(outcome, logits, exact, eager_rmse, default) if outcome.has_twin else None,
        attribution=attribution, exactness=_exactness(plan, outcome) if outcome.integer else None)


def _exactness(plan: ModelCalls, outcome: Outcome) -> Exactness:
    """An int8 chain against the integer pipeline: each call's differing elements over the inputs,
    and the first call (in call order) with any: on every input its inputs were the pipeline's own."""
    per_call = np.sum(np.array(outcome.differing, dtype=np.int64), axis=0)
    wrong = [i for i, n in enumerate(per_call) if n]
    first = plan.calls[wrong[0]] if wrong else None
    outputs = sum(int(np.prod(c.workload.output_shape)) for c in plan.calls) * len(outcome.differing)
    return Exactness(outputs, int(np.sum(per_call)), int(per_call[-1]),
                     CallId(first.index, first.workload.id) if first else None,
                     int(per_call[first.index]) if first else 0)


def _twin_metrics(outcome: Outcome, logits, exact, eager_rmse, default: Outcome | None) -> TwinMetrics:
    """The same metrics of the IEEE twin's logits (the same schedule with IEEE rounding): what is
    left of the error without qfloat's arithmetic, and how far qfloat moved the logits from it."""
    twin = np.concatenate(outcome.twins).astype(np.float64)
    errors = _against(twin, exact)
    default_twin = np.concatenate(default.twins).astype(np.float64) if default and default.has_twin else None
    return TwinMetrics(
        **vars(errors),
        rmse_ratio=_ratio(errors.rmse, eager_rmse),
        vs_target=_difference(twin, outcome),
        rmse_ratio_default=_ratio(errors.rmse, float(np.sqrt(np.mean((default_twin - exact) ** 2))))
        if default_twin is not None else None)


def _against(logits: np.ndarray, exact: np.ndarray) -> Errors:
    """The logits (inputs x classes) against float64: errors, and how often the top class agrees."""
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(logits - exact)
        rmse = float(np.sqrt(np.mean(error ** 2)))
    finite = np.all(np.isfinite(logits), axis=1)  # an input with a non-finite logit agrees on nothing
    best = np.argmax(exact, axis=1)
    top = np.argsort(-np.where(np.isfinite(logits), logits, -np.inf), axis=1, kind="stable")[:, :TOP]
    return Errors(max_abs_error=float(np.max(error)), mean_abs_error=float(np.mean(error)), rmse=rmse,
                  nonfinite=int(np.count_nonzero(~np.isfinite(logits))),
                  top1_agreement=float(np.mean(finite & (top[:, 0] == best))),
                  top5_agreement=float(np.mean(finite & np.any(top == best[:, None], axis=1))))


def _rmse(outcome: Outcome, exact: np.ndarray) -> float:
    logits = np.concatenate(outcome.logits).astype(np.float64)
    return float(np.sqrt(np.mean((logits - exact) ** 2)))


def _difference(logits: np.ndarray, other: Outcome) -> Apart:
    with np.errstate(invalid="ignore", over="ignore"):
        apart = np.abs(logits - np.concatenate(other.logits).astype(np.float64))
    return Apart(float(np.max(apart)), float(np.mean(apart)))


def _ratio(value: float, scale: float | None) -> float | None:
    """value / scale; None where undefined (no scale, or 0 / 0), inf where only the scale is 0."""
    if scale is None or (scale == 0 and value == 0):
        return None
    return float("inf") if scale == 0 else value / scale


def _attribution(plan: ModelCalls, sums: PlacementSums, total_mse: float,
                 vs_default: AgainstDefault | None) -> Attribution:
    only, all_but = sums.only / sums.elements, sums.all_but / sums.elements
    injected = sums.injected / sums.elements
    rows = sorted(((c.index, c.workload.id, float(np.sqrt(only[c.index])), _ratio(only[c.index], total_mse),
                    _ratio(injected - all_but[c.index], injected),
                    float(np.sqrt(sums.local[c.index] / sums.local_elements[c.index]))) for c in plan.calls),
                  key=lambda row: -row[2])  # by only_rmse, largest first
    summed = _ratio(float(np.sum(only)), total_mse)
    return Attribution(total_mse, summed, None if summed is None else 1.0 - summed, _ratio(injected, total_mse),
                       tuple(CallShare(*row, rank=rank) for rank, row in enumerate(rows, 1)), vs_default)


def _attribution_vs_default(plan: ModelCalls, outcome: Outcome, default: Outcome,
                            logits: np.ndarray) -> AgainstDefault:
    """Each call's share of the logits' difference between this order and ``default`` on the same
    target and dtype (the seed's question: which PrimFunc did tuning change the answers of?). Call
    i's: the two orders' logits when only call i runs on the target, every other call in float64,
    on the same float64 inputs: they differ by call i's kernel alone (zero where both orders run
    the same kernel). Its share is its mean squared difference over that of the two orders'
    chained logits; the shares' sum against 1 is the interaction."""
    apart = sum(np.sum((mine - theirs) ** 2, axis=1) for mine, theirs in zip(outcome.only_logits, default.only_logits))
    elements = sum(mine.shape[1] for mine in outcome.only_logits)
    total = float(np.mean((logits - np.concatenate(default.logits).astype(np.float64)) ** 2))
    rows = sorted(((c.index, c.workload.id, float(np.sqrt(apart[c.index] / elements)),
                    _ratio(float(apart[c.index] / elements), total)) for c in plan.calls),
                  key=lambda row: -row[2])  # by rmse, largest first
    return AgainstDefault(total, _ratio(float(np.sum(apart) / elements), total),
                          tuple(OrderShare(*row, rank=rank) for rank, row in enumerate(rows, 1)))
