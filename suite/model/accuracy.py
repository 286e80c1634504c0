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
from dataclasses import dataclass, field

import numpy as np

from suite import cache, floats, progress
from suite.core import execution, measurement, reference, tuning_records, workloads
from suite.core.combo import Combo
from suite.errors import Interrupted
from suite.model import int8
from suite.model import store as model_store
from suite.model.calls import CALL, IMAGE, PARAM, Call, ModelCalls
from suite.model.results import (
    AgainstDefault,
    Apart,
    Attribution,
    CacheReuse,
    CallId,
    CallShare,
    Errors,
    Exactness,
    Metrics,
    ModelResult,
    OrderShare,
    Seconds,
    SettingResult,
    Status,
    TwinMetrics,
)
from suite.model.store import InputRun, InputShares
from suite.model.weights import images
from suite.targets.base import Output, Target

#: The loop orders a whole model runs in.
MODEL_ORDERS = ("default", "tuned")
#: The dtypes a whole model runs in: the float ones, and int8 (the model quantized: suite.model.int8).
MODEL_DTYPES = (*workloads.FLOAT_DTYPES, *workloads.INTEGER_DTYPES)
#: The target every setting is compared with (same dtype and order), and whose fp32 ``default`` run
#: is the baseline of the RMSE ratio.
BASELINE_TARGET = "llvm"
#: The k of top-k agreement (besides top-1): :attr:`suite.model.results.Errors.top5_agreement`.
TOP = 5
#: What the inputs and weights are, said with every result.
DATA_NOTE = ("synthetic: seeded images (smooth fields plus pixel noise, each its own colour cast) and seeded "
             "He-initialized weights with batch norm folded, its statistics calibrated on the first images; no "
             "pretrained weights (docs/model.md)")


def torch_multiplier(dtype: str, size: int) -> float:
    """PyTorch's accuracy rule (torch/_dynamo/utils.py ``same``): a result passes when its RMSE
    against float64 is at most this times its eager run's: 3 for float16/bfloat16 and for outputs
    under 1000 elements (noise dominates), else 2."""
    return 3.0 if dtype in ("float16", "bfloat16") or size < 1000 else 2.0


class CallFailed(Exception):
    """A call of the model could not be run on the target (the message says which and why)."""


@dataclass(frozen=True)
class Setting:
    dtype: str
    target: Target
    order: str

    @property
    def ids(self) -> tuple[str, str, str]:
        return self.dtype, self.target.name, self.order


@dataclass
class Kernels:
    """What each call of a model runs in one setting: the build of its fused PrimFunc (by workload
    id; int8: by call index, each call's kernel built with its own calibrated requantize), the
    workloads that ran ``default`` in ``tuned`` (no tuning record), or why none runs."""

    built: dict = field(default_factory=dict)
    untuned: list[str] = field(default_factory=list)
    failure: str | None = None

    def of(self, call: Call) -> execution.Built:
        """The kernel call ``call`` runs."""
        return self.built[call.index] if call.index in self.built else self.built[call.workload.id]


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


def run_call(built: execution.Built, call: Call, inputs: list[np.ndarray], dtype: str,
             tally: dict | None = None) -> np.ndarray:
    """Call ``call``'s kernel on ``inputs`` (in ``dtype``) once; CallFailed where it does not run.
    ``tally``: what an emulated call executed (packets, instructions, emulated seconds) added to it."""
    output = Output(tuple(call.workload.output_shape), workloads.output_dtype(dtype))
    ran = execution.run(built, [*inputs, output], timed=True, twin=False)
    if ran.failure is not None:
        raise CallFailed(f"call {call.index} ({call.workload.id}): {ran.failure.words()}")
    if tally is not None:  # an emulated run's time is the one run's, kept with its output: no second run
        for name, value in {**(ran.counts or {}), **({"emulated_s": ran.emulated_s} if ran.emulated_s else {})}.items():
            tally[name] = tally.get(name, 0) + value
    return ran.output


def run_twin_call(built: execution.Built, call: Call, inputs: list[np.ndarray], dtype: str) -> np.ndarray:
    """The IEEE twin's output of ``call`` on ``inputs`` (a target with a twin); CallFailed where it does not run."""
    ran = execution.run_twin(built, [*inputs, Output(tuple(call.workload.output_shape), workloads.output_dtype(dtype))])
    if ran.failure is not None:
        raise CallFailed(f"call {call.index} ({call.workload.id}), IEEE twin: {ran.failure.words()}")
    return ran.twin


def _arguments(call: Call, image, params, outputs) -> list:
    pools = {IMAGE: [image], PARAM: params, CALL: outputs}
    return [pools[kind][index] for kind, index in call.args]


def forward(plan: ModelCalls, image: np.ndarray, params: list[np.ndarray], start: int = 0,
            before: list[np.ndarray] | None = None, replaced: dict | None = None,
            local_errors: dict | None = None) -> list[np.ndarray]:
    """Every call's float64 output: the outputs of calls before ``start`` taken from ``before``;
    a call in ``replaced`` gives that output; a call in ``local_errors`` has it added to its own."""
    outputs = list(before[:start]) if start else []
    for call in plan.calls[start:]:
        if replaced and call.index in replaced:
            outputs.append(replaced[call.index])
            continue
        y = reference.evaluate(call.workload.chain, _arguments(call, image, params, outputs))
        if local_errors and call.index in local_errors:
            y = y + local_errors[call.index]
        outputs.append(y)
    return outputs


def target_forward(plan: ModelCalls, kernels_: Kernels, image, params, dtype: str, twin: bool = False,
                   tally: dict | None = None, expected: list[np.ndarray] | None = None,
                   differing: list[int] | None = None) -> np.ndarray:
    """The model's logits on the target: every call's kernel on the target's outputs before it
    (``twin``: the IEEE twin's kernels on the twin's outputs: the same schedule, IEEE rounding).
    ``expected``: every call's exact output (int8's integer pipeline): the elements of each call's
    output that differ from it are appended to ``differing``."""
    outputs: dict[int, np.ndarray] = {}
    last_use = plan.last_use()
    for call in plan.calls:
        arguments = _arguments(call, image, params, outputs)
        built = kernels_.of(call)
        outputs[call.index] = (run_twin_call(built, call, arguments, dtype) if twin
                               else run_call(built, call, arguments, dtype, **({"tally": tally} if tally is not None
                                                                               else {})))
        if expected is not None:
            differing.append(int(np.count_nonzero(outputs[call.index] != expected[call.index])))
        for done in [i for i in outputs if last_use[i] <= call.index]:
            del outputs[done]
    return outputs[plan.calls[-1].index]


class _PlacementSums:
    """Sums over the inputs of the squared logits errors of each placement, and of each call's
    squared local error (added input by input, in input order: the same sums whether an input's
    share was computed now or kept)."""

    def __init__(self, calls: int):
        self.only, self.all_but = np.zeros(calls), np.zeros(calls)
        self.local, self.local_elements = np.zeros(calls), np.zeros(calls)
        self.injected, self.elements = 0.0, 0

    def add(self, one: InputShares) -> None:
        self.only += one.only
        self.all_but += one.all_but
        self.local += one.local
        self.local_elements += one.local_elements
        self.injected += float(one.injected)
        self.elements += int(one.elements)


def attribute_one(plan: ModelCalls, kernels_: Kernels, image, params64, params, dtype: str,
                  exact: list[np.ndarray]) -> InputShares:
    """One input's placements: each call run once on the target, on the float64 chain's inputs
    (``exact``: every call's float64 output), then the float64 side per placement. The logits of
    each "only this call on the target" placement are kept whole: two orders' differ only by that
    call's kernel, so they attribute the orders' difference too."""
    calls = len(plan.calls)
    only, all_but, local_sq, local_elements = np.zeros(calls), np.zeros(calls), np.zeros(calls), np.zeros(calls)
    local = {}
    for call in plan.calls:
        inputs = [floats.rounded(np.asarray(x), dtype) for x in _arguments(call, image, params, exact)]
        on_exact = run_call(kernels_.of(call), call, inputs, dtype).astype(np.float64)
        local[call.index] = on_exact - exact[call.index]
        local_sq[call.index] = float(np.sum(local[call.index] ** 2))
        local_elements[call.index] = local[call.index].size
    image64, logits = image.astype(np.float64), exact[-1]

    def squared(outputs):
        return float(np.sum((outputs[-1] - logits) ** 2))

    injected = forward(plan, image64, params64, local_errors=local)
    only_logits = np.zeros((calls, logits.size))
    for call in plan.calls:
        i = call.index
        alone = forward(plan, image64, params64, i, exact, replaced={i: exact[i] + local[i]})[-1]
        only[i] = squared([alone])
        only_logits[i] = alone.reshape(-1)
        others = {j: d for j, d in local.items() if j != i}
        all_but[i] = squared(forward(plan, image64, params64, i, injected, local_errors=others))
    return InputShares(only, all_but, local_sq, local_elements, np.float64(squared(injected)), only_logits,
                       np.int64(logits.size))


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
    attribution: _PlacementSums | None = None
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
                        tuple(_result(plan, o, outcomes, exact_logits, count) for o in outcomes),
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
                outcome.attribution = _PlacementSums(len(plan.calls))
            outcome.attribution.add(sums)
            outcome.only_logits.append(sums.only_logits)
            outcome.attribution_s += seconds
    except CallFailed as err:
        outcome.failure = str(err)
    return stored


def _find(outcomes, dtype, target, order) -> Outcome | None:
    return next((o for o in outcomes if o.setting.ids == (dtype, target, order) and o.failure is None), None)


def _result(plan: ModelCalls, outcome: Outcome, outcomes, exact_logits, count: int) -> SettingResult:
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


def _attribution(plan: ModelCalls, sums: _PlacementSums, total_mse: float,
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
