"""A whole model run on a target, call by call, against its float64 evaluation (`tvm-suite model`).

Every fused PrimFunc of the model (:mod:`suite.model.calls`) runs on the target in call order
through :mod:`suite.core.execution`, each output fed to the calls that read it; the same calls
chained in float64 by the suite's reference (:mod:`suite.core.reference`, no TVM) give the exact
logits. Both take the model's weights and images (:mod:`suite.model.weights`) rounded to the
dtype under test, so the error is that of the arithmetic and of the activations stored in that
dtype between calls, not of rounding the weights.

A *setting* is one dtype x target x loop order. Its kernels are the measurement cache's
(:func:`suite.core.measurement.measure`: one build per fused PrimFunc, shared with `run` and
`measure`); in ``tuned``, a PrimFunc without a tuning record runs its ``default`` schedule, and
the result lists the calls that did. A call that cannot be built or run makes the setting
*not measured*, with the reason: no partial number stands for the model's.

int8 (:mod:`suite.model.int8`): every call runs its quantized kernel, built with the parameters the
model's calibration gives that call; the float64 side is the float model (its weights unrounded),
and every call's uint8 output is also compared with the exact integer pipeline's (numpy int64), bit
for bit (:class:`suite.model.results.Exactness`).

Attribution (``attribute``): with R_i the float64 chain's output of call i and T_i the target's
output of call i *on the float64 chain's inputs of call i* (one more target run per call and
input, whatever the number of placements), the local error of call i is d_i = T_i - R_i, and

- *only i on the target*: the float64 chain with call i's output replaced by T_i;
- *all but i*: the float64 chain with every d_j added where it arises, except d_i;
- *all local errors*: the float64 chain with every d_j added (how well local errors, added up,
  reproduce the real run: ``injected_share``).

Only the float64 side is recomputed per placement (from call i on); the target never runs again.
Shares are of the mean squared error of the logits against float64: ``only_share`` = MSE(only i)
/ MSE(the target's run); their sum falls short of (or exceeds) 1 by the interaction: errors of
different calls reinforcing or cancelling, and what is not additive.
"""

from __future__ import annotations

import time

import numpy as np

from suite import cache, floats, progress
from suite.core import workloads
from suite.errors import Interrupted
from suite.model import int8
from suite.model import store as model_store
from suite.model.calls import ModelCalls
from suite.model.chain import (
    CallFailed,
    PlacementSums,
    attribute_one,
    forward,
    target_forward,
)
from suite.model.results import CacheReuse, ModelResult
from suite.model.scoring import setting_result
from suite.model.settings import Outcome, Setting, kernel_orders, setting_key
from suite.model.store import InputRun, InputShares
from suite.model.weights import images

#: The loop orders a whole model runs in.
MODEL_ORDERS = ("default", "tuned")
#: The dtypes a whole model runs in: the float ones, and int8 (the model quantized: suite.model.int8).
MODEL_DTYPES = (*workloads.FLOAT_DTYPES, *workloads.INTEGER_DTYPES)
#: What the inputs and weights are, said with every result.
DATA_NOTE = ("synthetic: seeded images (smooth fields plus pixel noise, each its own colour cast) and seeded "
             "He-initialized weights with batch norm folded, its statistics calibrated on the first images; no "
             "pretrained weights (docs/model.md)")



def evaluate(plan: ModelCalls, settings: list[tuple[Setting, bool]], count: int, attribute: bool = False,
             stream=None, twin: bool = True, say_kept: bool = True) -> tuple[ModelResult, dict[str, np.ndarray]]:
    """Run every setting over ``count`` synthetic inputs: the result (its JSON: docs/model.md), and
    the logits (inputs x classes) of each setting measured (``dtype.target.order``) and of float64
    (``dtype.float64``); ``twin``: on targets with an IEEE twin, its chain too. Each input of each setting is kept in the cache as soon as it is done
    (:mod:`suite.model.store`) and read from it after: an interrupted run loses nothing it
    finished, and a rerun runs only the rest (``say_kept``: Ctrl-C is :class:`suite.errors.Interrupted`
    saying so; else the KeyboardInterrupt, for a caller that says what it kept itself)."""
    classes = int(plan.calls[-1].workload.output_shape[-1])
    outcomes = []
    for setting, requested in settings:
        orders = kernel_orders(plan, setting)
        outcomes.append(Outcome(setting, requested, [w.id for w, o in orders if o != setting.order],
                                model_store.InputStore(plan, setting.ids, setting_key(plan, setting), classes),
                                twin=twin))
    dtypes = list(dict.fromkeys(o.setting.dtype for o in outcomes))
    exact_params = model_store.weights(plan)
    quantized_model = int8.quantized_model(plan, forward) if any(d in workloads.INTEGER_DTYPES for d in dtypes) else None
    # what the target takes: the weights rounded to the dtype, or quantized (int8 weights, int32 biases)
    params = {d: list(quantized_model.params) if d in workloads.INTEGER_DTYPES
              else [floats.rounded(p, d) for p in exact_params] for d in dtypes}
    # float64 takes a float dtype's values too: the error is the arithmetic's, not the weights'
    # rounding; int8's is against the float model itself (its weights unrounded).
    rounded = {d: exact_params if d in workloads.INTEGER_DTYPES else [p.astype(np.float64) for p in params[d]]
               for d in dtypes}
    float64 = {d: model_store.Float64Store(plan, d, classes) for d in dtypes}
    exact_logits: dict[str, list[np.ndarray]] = {d: [] for d in dtypes}
    float64_s = dict.fromkeys(dtypes, 0.0)
    done = 0
    try:
        with progress.Progress("model: inputs", count, stream=stream) as step:
            for index, image in enumerate(images(plan, count)):
                for dtype in dtypes:
                    active = [o for o in outcomes if o.setting.dtype == dtype and o.failure is None]
                    runs = {id(o): o.store.load_run(index) for o in active}
                    for o in active:  # kept without the twin's chain, which is wanted now: run again
                        if o.has_twin and runs[id(o)] is not None and runs[id(o)].twin is None:
                            runs[id(o)] = None
                    shares = {id(o): o.store.load_attribution(index, len(plan.calls))
                              for o in active if o.attributed(attribute)}
                    chain_needed = any(v is None for v in (*runs.values(), *shares.values()))
                    integer = dtype in workloads.INTEGER_DTYPES
                    image_d = quantized_model.image.quantize(image) if integer else floats.rounded(image, dtype)
                    pipeline = (int8.integer_forward(plan, quantized_model, image_d)
                                if integer and any(v is None for v in runs.values()) else None)
                    kept = float64[dtype].load(index)
                    exact = None
                    if kept is None or chain_needed:
                        started = time.perf_counter()
                        exact = forward(plan, image if integer else image_d.astype(np.float64), rounded[dtype])
                        seconds = time.perf_counter() - started
                        if kept is None:
                            float64[dtype].store(index, exact[-1], seconds)
                            kept = exact[-1], seconds
                    logits64, seconds64 = kept
                    exact_logits[dtype].append(logits64)
                    float64_s[dtype] += seconds64
                    for outcome in active:
                        done += _run_setting(plan, outcome, index, image_d, rounded[dtype], params[dtype], exact,
                                             runs[id(outcome)], shares.get(id(outcome)), attribute, pipeline)
                step.step()
    except KeyboardInterrupt as err:
        if not say_kept:
            raise
        raise Interrupted.by(err, f"{done} input run(s) of this command were kept in the cache ({cache.root()}) "
                                  "as each finished; the same command again runs only the rest") from None
    found = ModelResult(plan.model, count, DATA_NOTE, plan.calls, {d: s / count for d, s in float64_s.items()},
                        tuple(setting_result(plan, o, outcomes, exact_logits, count) for o in outcomes),
                        _reuse(outcomes, count, attribute))
    logits = {f"{d}.float64": np.concatenate(exact_logits[d]) for d in dtypes}
    logits.update({".".join(o.setting.ids): np.concatenate(o.logits) for o in outcomes if o.failure is None})
    logits.update({".".join(o.setting.ids) + ".ieee-twin": np.concatenate(o.twins)
                   for o in outcomes if o.failure is None and o.has_twin})
    return found, logits


def _reuse(outcomes, count: int, attribute: bool) -> CacheReuse:
    """How much of each setting came from the cache: every input, and its attribution where asked
    for (reused), some (resumed), none (run)."""
    reused, resumed, run = [], [], []
    for o in outcomes:
        if o.failure is not None:
            continue
        wanted = count * (2 if o.attributed(attribute) else 1)
        kept = o.kept + (o.attribution_kept if o.attributed(attribute) else 0)
        (reused if kept == wanted else resumed if kept else run).append(" ".join(o.setting.ids))
    return CacheReuse(tuple(reused), tuple(resumed), tuple(run))


def _add_counts(total: dict | None, counts: dict | None) -> dict | None:
    if counts is None:
        return total
    total = dict(total or {})
    for name, value in counts.items():
        total[name] = total.get(name, 0) + value
    return total


def _run_setting(plan, outcome: Outcome, index: int, image_d, params64, params, exact, kept: InputRun | None,
                 share: tuple[InputShares, float] | None, attribute: bool, pipeline: list | None = None) -> int:
    """One input of one setting: its run (from the cache where kept, else on the target, then
    kept), and its attribution where asked for; the number of runs this kept. int8: ``pipeline``,
    every call's output in the exact integer pipeline, is what each call's output is compared with;
    its logits are kept dequantized."""
    dtype, stored = outcome.setting.dtype, 0
    try:
        if kept is None:
            tally: dict = {}
            built = outcome.built(plan)  # not timed: a build is the measurement cache's
            differing: list[int] | None = [] if outcome.integer else None
            started = time.perf_counter()
            logits = target_forward(plan, built, image_d, params, dtype, tally=tally, expected=pipeline,
                                    differing=differing)
            target_s = time.perf_counter() - started
            if outcome.integer:
                logits = int8.quantized_model(plan, forward).logits.real(logits)
            twin, twin_s = None, 0.0
            if outcome.has_twin:
                started = time.perf_counter()
                twin = target_forward(plan, outcome.kernels, image_d, params, dtype, twin=True)
                twin_s = time.perf_counter() - started
            kept = InputRun(logits, twin, target_s, twin_s, tally or None,
                            None if differing is None else tuple(differing))
            outcome.store.store_run(index, kept)
            stored += 1
        else:
            outcome.kept += 1
        outcome.logits.append(kept.logits)
        if outcome.integer:
            outcome.differing.append(list(kept.differing))
        if outcome.has_twin:
            outcome.twins.append(kept.twin)
        outcome.target_s += kept.target_s
        outcome.twin_s += kept.twin_s
        outcome.counts = _add_counts(outcome.counts, kept.counts)
        if outcome.attributed(attribute):
            if share is None:
                built = outcome.built(plan)
                started = time.perf_counter()
                one = attribute_one(plan, built, image_d, params64, params, dtype, exact)
                share = one, time.perf_counter() - started
                outcome.store.store_attribution(index, *share)
                stored += 1
            else:
                outcome.attribution_kept += 1
            sums, seconds = share
            if outcome.attribution is None:
                outcome.attribution = PlacementSums(len(plan.calls))
            outcome.attribution.add(sums)
            outcome.only_logits.append(sums.only_logits)
            outcome.attribution_s += seconds
    except CallFailed as err:
        outcome.failure = str(err)
    return stored
