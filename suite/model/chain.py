"""A whole model's calls chained: in float64 by the suite's reference (:func:`forward`, no TVM), and
on the target, each call's kernel on the target's outputs before it (:func:`target_forward`); one
input's attribution, each call run on the float64 chain's inputs (:func:`attribute_one`), and its
sums over the inputs (:class:`PlacementSums`), for :mod:`suite.model.accuracy`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from suite import floats
from suite.core import execution, reference, workloads
from suite.model.calls import CALL, IMAGE, PARAM, Call, ModelCalls
from suite.model.store import InputShares
from suite.targets.base import Output


class CallFailed(Exception):
    """A call of the model could not be run on the target (the message says which and why)."""



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


class PlacementSums:
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
