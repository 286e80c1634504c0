"""A whole model quantized (`tvm-suite model --dtypes int8`): its calibration, the exact integer
pipeline, and every call's quantized kernel built with its calibrated parameters.

Each call runs its fused PrimFunc's quantized form (:mod:`suite.core.quantized`: uint8
activations, int8 weights, an int32 bias and accumulator, requantize by a fixed-point multiplier
and shift, round half up), with the requantize factor and zero point the model's calibration
gives that call (docs/model.md, "int8"):

- every tensor between calls has one scale and zero point: ``real = (q - zero_point) * scale``.
  A tensor after a relu, a max pool or a mean of one is unsigned (zero point 0, ``scale = max /
  255``); one without a relu (a shortcut's convolution, the logits) is signed (zero point 128,
  ``scale = max|y| / 127``); the image is asymmetric (``scale = (max - min) / 255``, its zero point
  ``round(-min / scale)``). The maxima are those of the float64 model on the
  :data:`CALIBRATION_IMAGES` synthetic images from :data:`CALIBRATION_FIRST` on (fixed seeds, no
  data drawn at run time, none of them an input of a run);
- tensors that the arithmetic adds or compares as integers share one scale, the largest any of
  them needs: a max pool's or a mean's input and output, a residual and the output it is added to;
- weights per tensor, symmetric: ``scale = max|w| / 127``, ``round(w / scale)``; a bias in the
  accumulator's scale (the input's times the weight's), less ``zero_point x sum(w)`` where the
  input has a zero point (the image): the kernel multiplies ``q``, not ``q - zero_point``, and
  pads that input with its zero point (real 0), so the fold holds at the border too;
- requantize by ``input scale x weight scale / output scale``; the constant added before the clip
  is the output's zero point less the residual's.

The *integer pipeline* is the same calls chained in numpy int64 (:func:`suite.core.quantized.evaluate`
with each call's plan): a target's chain must equal it bit for bit, call by call.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from suite import cache
from suite.compat import release
from suite.core import execution, quantized, schedules
from suite.core.combo import Combo
from suite.errors import UserError
from suite.model import store as model_store
from suite.model import weights as model_weights
from suite.model.calls import CALL, IMAGE, PARAM, ModelCalls

DTYPE = quantized.DTYPE
SIGNED_ZERO_POINT, SIGNED_MAX, UNSIGNED_MAX = 128, 127, 255
#: The calibration images: the synthetic images from index CALIBRATION_FIRST on, past every input a
#: run takes (at most 1000), so that no input is one the scales were fitted to.
CALIBRATION_FIRST, CALIBRATION_IMAGES = 1000, 32


@dataclass(frozen=True)
class Scale:
    """How a uint8 tensor holds real numbers: ``real = (q - zero_point) * value``."""

    value: float
    zero_point: int

    def quantize(self, real: np.ndarray) -> np.ndarray:
        return np.clip(np.rint(real / self.value) + self.zero_point, 0, 255).astype(np.uint8)

    def real(self, q: np.ndarray) -> np.ndarray:
        return (np.asarray(q, dtype=np.float64) - self.zero_point) * self.value


@dataclass(frozen=True)
class QuantizedModel:
    """A model's calibrated quantization: the image's scale, each call's plan (its requantize and
    the constant before the clip), the weights and biases as integers (by parameter), the logits'
    scale."""

    image: Scale
    plans: tuple[quantized.Plan, ...]
    params: tuple[np.ndarray, ...]
    logits: Scale

    def to_json(self) -> dict:
        """The scales and each call's parameters (kept beside the integer weights)."""
        return {"image": [self.image.value, self.image.zero_point],
                "logits": [self.logits.value, self.logits.zero_point], "plans": [_plan_json(p) for p in self.plans]}

    def key(self) -> dict:
        """What determines the kernels and the integer pipeline (for cache keys)."""
        return {**self.to_json(),
                "params": cache.digest([cache.bytes_digest(np.ascontiguousarray(p).tobytes()) for p in self.params])}


def _plan_json(found: quantized.Plan) -> dict:
    """A call's calibrated parameters: its requantize (multiplier, shift), the constant before the
    clip, the conv2d's padding value."""
    rq = found.requantize
    return {"requantize": None if rq is None else [rq.multiplier, rq.shift], "offset": found.offset, "pad": found.pad}


def quantized_model(plan: ModelCalls, forward64) -> QuantizedModel:
    """The model's quantization (:func:`quantize` on its calibrated float64 weights, ``forward64``
    the float64 chain), kept in the cache beside them and read back: the same one for every run of
    this code (and, in a process, read once per model)."""
    if plan.model not in _READ:
        _READ[plan.model] = _kept_or_quantized(plan, forward64)
    return _READ[plan.model]


_READ: dict[str, QuantizedModel] = {}


def _kept_or_quantized(plan: ModelCalls, forward64) -> QuantizedModel:
    where = cache.entry("model-int8", plan.model, {**model_store.recipe_key(plan), "int8": cache.source_digest(Path(__file__))})
    found = cache.load_entry(where, ("quantized.json", "params.npz"))
    if found:
        about = cache.read_json(found["quantized.json"])
        try:
            with np.load(found["params.npz"], allow_pickle=False) as data:
                params = tuple(data[f"p{k}"] for k in range(len(plan.param_shapes)))
            return _from_json(plan, about, params)
        except (OSError, ValueError, KeyError, TypeError):
            model_store.damaged(where, f"{plan.model}'s int8 quantization")
    try:
        model = quantize(plan, model_store.weights(plan), forward64)
    except quantized.NotQuantizable as err:
        raise UserError(f"{plan.model} has no int8 form here: {err}") from None
    about = model.to_json()
    cache.store_entry(where, {"quantized.json": lambda tmp: Path(tmp).write_text(json.dumps(about)),
                              "params.npz": lambda tmp: model_store.write_npz(tmp, {f"p{k}": p for k, p in
                                                                                    enumerate(model.params)})})
    return model


def _from_json(plan: ModelCalls, about: dict, params: tuple) -> QuantizedModel:
    """The kept quantization: each call's plan is its chain's, with the kept parameters."""
    plans = []
    for call, kept in zip(plan.calls, about["plans"], strict=True):
        rq = kept["requantize"]
        plans.append(replace(quantized.plan(call.workload.chain), offset=kept["offset"], pad=kept["pad"],
                             requantize=None if rq is None else quantized.Requantize(*rq)))
    return QuantizedModel(Scale(*about["image"]), tuple(plans), params, Scale(*about["logits"]))


def quantize(plan: ModelCalls, params64: list[np.ndarray], forward64) -> QuantizedModel:
    """The model's quantization, calibrated on the calibration images: ``forward64(plan, image,
    params)`` is every call's float64 output (:func:`suite.model.chain.forward`, the module above)."""
    low, high = np.inf, -np.inf  # the image's least and largest value, and each call's output's
    largest, magnitude = np.full(len(plan.calls), -np.inf), np.zeros(len(plan.calls))
    for index in range(CALIBRATION_FIRST, CALIBRATION_FIRST + CALIBRATION_IMAGES):  # one image's outputs at a time
        image = model_weights.image(plan, index)
        low, high = min(low, float(np.min(image))), max(high, float(np.max(image)))
        for call, output in zip(plan.calls, forward64(plan, image, params64)):
            largest[call.index] = max(largest[call.index], float(np.max(output)))
            magnitude[call.index] = max(magnitude[call.index], float(np.max(np.abs(output))))
    plans = [quantized.plan(call.workload.chain) for call in plan.calls]
    # The tensors: the image, and each call's output; tensors added or compared as integers share a scale.
    parent: dict = {}

    def find(slot):
        while parent.get(slot, slot) != slot:
            slot = parent[slot]
        return slot

    def union(a, b):
        parent[find(a)] = find(b)

    for call, found in zip(plan.calls, plans):
        out = (CALL, call.index)
        if found.op in ("max_pool2d", "mean"):
            union(call.args[found.data], out)
        if found.residual is not None:
            union(call.args[found.residual], out)
    signed = {(CALL, c.index): f.op in ("conv2d", "matmul") and not f.relu for c, f in zip(plan.calls, plans)}
    for call, found in zip(plan.calls, plans):  # a pool or mean of a signed tensor is signed too
        if found.op in ("max_pool2d", "mean") and signed.get(call.args[found.data]):
            raise quantized.NotQuantizable(f"call {call.index}: a {found.op} of a signed tensor has no uint8 form here")
    needed: dict = {}
    for call in plan.calls:
        slot = (CALL, call.index)
        need = magnitude[call.index] / SIGNED_MAX if signed[slot] else max(largest[call.index], 0.0) / UNSIGNED_MAX
        root = find(slot)
        needed[root] = max(needed.get(root, 0.0), need)
    image_scale = (high - low) / UNSIGNED_MAX
    scales = {(IMAGE, 0): Scale(image_scale, int(np.clip(round(-low / image_scale), 0, 255)))}
    for call in plan.calls:
        slot = (CALL, call.index)
        value = needed[find(slot)]
        if not value > 0:
            raise quantized.NotQuantizable(f"call {call.index} ({call.workload.id}): its output is 0 on every "
                                           "calibration image")
        scales[slot] = Scale(float(value), SIGNED_ZERO_POINT if signed[slot] else 0)
    params = [None] * len(params64)
    for call, found in zip(plan.calls, plans):
        if found.weight is None:
            continue
        plans[call.index] = _plan_call(call, found, scales, params64, params)
    for call, found in zip(plan.calls, plans):  # a pool pads with 0: its input's zero point must be 0
        if found.op == "max_pool2d" and scales[call.args[found.data]].zero_point != 0:
            raise quantized.NotQuantizable(f"call {call.index}: a max pool of a tensor with a zero point")
    return QuantizedModel(scales[(IMAGE, 0)], tuple(plans), tuple(params), scales[(CALL, plan.calls[-1].index)])


def _plan_call(call, found: quantized.Plan, scales: dict, params64, params) -> quantized.Plan:
    """A conv2d's or matmul's weights and bias as integers (into ``params``), and its plan."""
    x, y = scales[call.args[found.data]], scales[(CALL, call.index)]
    kind, k = call.args[found.weight]
    if kind != PARAM or found.bias is None or call.args[found.bias][0] != PARAM:
        raise quantized.NotQuantizable(f"call {call.index} ({call.workload.id}): its weight and bias are not "
                                       "parameters of the model")
    w = params64[k]
    w_scale = float(np.max(np.abs(w))) / SIGNED_MAX
    w_q = np.clip(np.rint(w / w_scale), -SIGNED_MAX, SIGNED_MAX).astype(np.int8)
    params[k] = w_q
    accumulator_scale = x.value * w_scale
    _, b = call.args[found.bias]
    bias = np.rint(params64[b] / accumulator_scale)
    if x.zero_point:  # the kernel sums q * w: take zero_point * sum(w) out again
        axes = (0,) if found.op == "matmul" else (0, 1, 2) if found.attrs["kernel_layout"] == "HWIO" else (1, 2, 3)
        bias = bias - x.zero_point * np.sum(w_q.astype(np.int64), axis=axes).reshape(bias.shape)
    if np.any(np.abs(bias) > quantized.INT32_MAX):
        raise quantized.NotQuantizable(f"call {call.index} ({call.workload.id}): its bias leaves int32")
    params[b] = bias.astype(np.int32)
    factor = accumulator_scale / y.value
    if not 0 < factor < 1:
        raise quantized.NotQuantizable(f"call {call.index} ({call.workload.id}): requantize factor {factor:.3g} "
                                       "is not in (0, 1)")
    residual = scales[call.args[found.residual]].zero_point if found.residual is not None else 0
    return replace(found, requantize=quantized.Requantize.of(factor), offset=y.zero_point - residual,
                   pad=x.zero_point)


# ----------------------------------------------------------------------------- the integer pipeline


def integer_forward(plan: ModelCalls, model: QuantizedModel, image_q: np.ndarray) -> list[np.ndarray]:
    """Every call's uint8 output, in numpy int64 arithmetic: the exact integer pipeline."""
    outputs: list[np.ndarray] = []
    for call, found in zip(plan.calls, model.plans):
        pools = {IMAGE: [image_q], PARAM: model.params, CALL: outputs}
        arguments = [pools[kind][index] for kind, index in call.args]
        outputs.append(quantized.evaluate(call.workload.chain, arguments, found).output)
    return outputs


# ----------------------------------------------------------------------------- the kernels


def call_kernel(plan: ModelCalls, model: QuantizedModel, call, target, order: str) -> execution.Built:
    """Call ``call``'s quantized kernel with its calibrated plan, scheduled in ``order`` (``tuned``
    replays the workload's int8 record) and built for ``target``: from the cache where kept."""
    combo = Combo(call.workload, DTYPE, target, order)
    found = model.plans[call.index]
    where = cache.entry("model-int8-kernel", f"{plan.model}.{call.index}.{target.name}.{order}",
                        {"combo": combo.key, "plan": _plan_json(found), "code": cache.source_digest(Path(__file__))})
    kept = cache.load_entry(where, ("kernel.json",))
    if kept:
        about = cache.read_json(kept["kernel.json"])
        files = cache.load_entry(where, about["files"]) if isinstance(about, dict) else None
        if files:
            return execution.Built(target, files[target.KERNEL_FILE], about["compile_s"], about["codegen"],
                                   about["code"])
    with tempfile.TemporaryDirectory(prefix="tvm-suite-model-int8-") as scratch:
        path = Path(scratch) / target.KERNEL_FILE
        try:  # scheduled as measurement.build schedules: a schedule TVM refuses is the build's failure
            func = schedules.apply(quantized.prim_func(call.workload.chain, found), order, call.workload.id, DTYPE,
                                   target.records_from)
        except (UserError, release.TVMUnavailable):
            raise
        except Exception as err:
            return execution.Built(target, path, failure=execution.failure_of(execution.Stage.BUILD, err))
        built = execution.build(target, func, path, order)
        if built.failure is not None:
            return built
        made = sorted(p.name for p in Path(scratch).iterdir() if p.is_file())  # copied with their mode: an ELF runs
        about = {"files": made, "compile_s": built.compile_s, "codegen": built.codegen, "code": built.code}
        cache.store_entry(where, {**{name: (lambda tmp, n=name: shutil.copy(Path(scratch) / n, tmp)) for name in made},
                                  "kernel.json": lambda tmp: Path(tmp).write_text(json.dumps(about))})
    files = cache.load_entry(where, (*made, "kernel.json"))
    if not files:
        raise RuntimeError(f"the kernel of call {call.index} just kept in {where} does not read back")
    return execution.Built(target, files[target.KERNEL_FILE], about["compile_s"], about["codegen"], about["code"])


def check_quantizable(plan: ModelCalls) -> None:
    """UserError when a call of the model has no quantized form (before any work)."""
    for call in plan.calls:
        try:
            quantized.plan(call.workload.chain)
        except quantized.NotQuantizable as err:
            raise UserError(f"{plan.model} has no int8 form: call {call.index} ({call.workload.id}): {err}") from None
