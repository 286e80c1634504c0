"""Weights and input images of a whole model: synthetic, deterministic, with activations of a sane
scale layer after layer. No pretrained weights can be fetched here, so none are used.

- Images: seeded synthetic images (:func:`images`) in the range of ImageNet-normalized
  photographs: a smooth field (bilinear over a grid of 4 to 32 pixels) plus pixel noise,
  standardized per channel, then each its own colour cast and contrast (a per-channel offset
  and gain). Image ``i`` is the same whatever the count.
- Weights: seeded He initialisation (convolutions normal with variance 2/fan_in, the classifier
  1/fan_in), then the batch norm a trained ResNet has after each convolution, folded into the
  convolution's weight and bias with its statistics calibrated on the first
  :data:`CALIBRATION_IMAGES` images: each convolution's output has, per channel over those
  images, mean ``beta`` and standard deviation ``gamma`` (seeded, about 0 and 1). The classifier's
  input is centred per feature and scaled to unit variance (a batch norm before it, folded), so
  the logits differ from image to image rather than all picking one class.

Everything is float64 and independent of TVM (the calibration runs the model with the suite's
float64 reference, :mod:`suite.core.reference`): every TVM commit sees the same weights, and a
dtype sees them rounded to it.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from suite.core import reference
from suite.model.calls import CALL, IMAGE, PARAM, ModelCalls

#: Images the batch norm statistics are calibrated on: the first ones of :func:`images`, whatever
#: the number of inputs asked for, so that the weights do not depend on it.
CALIBRATION_IMAGES = 8
BN_EPS = 1e-5
#: The spacings, in pixels, of the grid a synthetic image's smooth part is interpolated from (one
#: per image, drawn).
SMOOTH_PIXELS = (4, 8, 16, 32)


def _rng(*names) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, names)).encode()))


def images(plan: ModelCalls, count: int) -> list[np.ndarray]:
    """The model's first ``count`` synthetic input images (float64, the model's image shape)."""
    return [image(plan, index) for index in range(count)]


def image(plan: ModelCalls, index: int) -> np.ndarray:
    """The model's synthetic input image ``index`` (float64, the model's image shape)."""
    nchw = plan.layout == "NCHW"
    _, a, b, c = plan.image_shape
    height, width, channels = (b, c, a) if nchw else (a, b, c)
    rng = _rng(plan.model, "image", index)
    # Each image its own character (how smooth, how noisy, its colour cast and contrast): images of
    # one stationary texture would all give the model's pooled features the same values.
    cell = int(rng.choice(SMOOTH_PIXELS))
    grid = rng.normal(size=(height // cell + 2, width // cell + 2, channels))
    picture = _bilinear(grid, height, width) + rng.uniform(0.1, 0.6) * rng.normal(size=(height, width, channels))
    picture = (picture - picture.mean(axis=(0, 1))) / picture.std(axis=(0, 1))
    picture = picture * rng.uniform(0.5, 1.5, size=channels) + rng.normal(0.0, 0.5, size=channels)
    picture = picture[None]
    return picture.transpose(0, 3, 1, 2) if nchw else picture


def _bilinear(grid: np.ndarray, height: int, width: int) -> np.ndarray:
    """``grid`` (h x w x c) interpolated bilinearly to ``height`` x ``width``."""
    for axis, size in ((0, height), (1, width)):
        at = np.linspace(0, grid.shape[axis] - 1, size)
        low = np.minimum(at.astype(int), grid.shape[axis] - 2)
        frac = (at - low).reshape((-1, 1, 1) if axis == 0 else (1, -1, 1))
        grid = np.take(grid, low, axis=axis) * (1 - frac) + np.take(grid, low + 1, axis=axis) * frac
    return grid


def weights(plan: ModelCalls) -> list[np.ndarray]:
    """Every weight parameter of the model (float64, parameter order): He initialisation, batch
    norm folded and calibrated (see the module docstring)."""
    params = [_initial(plan, k, shape) for k, shape in enumerate(plan.param_shapes)]
    calibration = images(plan, CALIBRATION_IMAGES)
    values: dict[tuple[str, int], list[np.ndarray]] = {(IMAGE, 0): calibration}
    last_use = plan.last_use()
    for call in plan.calls:
        chain = call.workload.chain
        first = chain["steps"][0]
        if first["op"] == "conv2d":  # the rest of the chain from the folded convolution's output
            folded = _fold_batch_norm(plan, call, first, params, _inputs(call, params, values))
            rest = _after_first_step(chain)
            values[(CALL, call.index)] = (
                [reference.evaluate(rest, [y, *x]) for y, x in zip(folded, _inputs(call, params, values))]
                if rest["steps"] else folded)
        else:
            if first["op"] == "matmul":
                _standardize_classifier_input(call, first, params, _inputs(call, params, values))
            values[(CALL, call.index)] = [reference.evaluate(chain, x) for x in _inputs(call, params, values)]
        for done in [key for key in values if key[0] == CALL and last_use[key[1]] <= call.index]:
            del values[done]
    return params


def _inputs(call, params, values) -> list[list[np.ndarray]]:
    """The call's arguments on each calibration image (the weights as calibrated so far)."""
    return [[params[index] if kind == PARAM else values[(kind, index)][image] for kind, index in call.args]
            for image in range(len(values[(IMAGE, 0)]))]


def _initial(plan: ModelCalls, k: int, shape) -> np.ndarray:
    """Parameter ``k`` before calibration: He-initialized weights, zero biases."""
    role, fan_in = _role(plan, k)
    if role == "bias":
        return np.zeros(shape)
    if role == "conv weight":
        return _rng(plan.model, "param", k).normal(0.0, math.sqrt(2.0 / fan_in), size=shape)
    if role == "classifier weight":
        return _rng(plan.model, "param", k).normal(0.0, math.sqrt(1.0 / fan_in), size=shape)
    raise ValueError(f"{plan.model}: parameter {k} is an input of no known role ({role})")


def _role(plan: ModelCalls, k: int) -> tuple[str, int | None]:
    """What parameter ``k`` is to the one call that reads it, and its fan-in where it is a weight."""
    readers = [(call, position) for call in plan.calls for position, arg in enumerate(call.args)
               if arg == (PARAM, k)]
    if len(readers) != 1:
        raise ValueError(f"{plan.model}: parameter {k} is read by {len(readers)} calls; weights are one call's")
    call, position = readers[0]
    item = call.workload.chain["inputs"][position]
    if item["role"] == "weight":
        op = next(s["op"] for s in call.workload.chain["steps"] if ["input", position] in s["args"])
        return ("conv weight" if op == "conv2d" else "classifier weight"), item["fan_in"]
    return item["role"], None


def _param_of(call, position: int) -> int:
    kind, index = call.args[position]
    if kind != PARAM:
        raise ValueError(f"call {call.index} ({call.workload.id}): input {position} is no weight")
    return index


def _bias_after(chain: dict) -> int | None:
    """The chain input added as a bias to the first step's output, or None."""
    for step in chain["steps"][1:]:
        if step["op"] == "add" and ["step", 0] in step["args"]:
            other = next(a for a in step["args"] if a != ["step", 0])
            if other[0] == "input" and chain["inputs"][other[1]]["role"] == "bias":
                return other[1]
    return None


def _fold_batch_norm(plan, call, conv: dict, params, inputs) -> list[np.ndarray]:
    """Scale the convolution's weight and set its bias so that its output has, per channel over
    the calibration images, mean beta and standard deviation gamma; returns the scaled
    convolution's output on each image (before its bias)."""
    (_, data), (_, weight) = conv["args"]
    w = _param_of(call, weight)
    alone = {"inputs": [call.workload.chain["inputs"][data], call.workload.chain["inputs"][weight]],
             "steps": [{"op": "conv2d", "args": [["input", 0], ["input", 1]], "attrs": conv["attrs"]}]}
    raw = [reference.evaluate(alone, [x[data], x[weight]]) for x in inputs]
    channel = 1 if conv["attrs"]["data_layout"] == "NCHW" else -1
    per_channel = np.concatenate([np.moveaxis(y, channel, -1).reshape(-1, y.shape[channel]) for y in raw])
    mean, std = per_channel.mean(axis=0), np.sqrt(per_channel.var(axis=0) + BN_EPS)
    rng = _rng(plan.model, "batch norm", call.index)
    gamma, beta = rng.uniform(0.8, 1.2, size=mean.shape), rng.normal(0.0, 0.2, size=mean.shape)
    scale = gamma / std
    out_axis = 0 if conv["attrs"]["kernel_layout"] == "OIHW" else 3
    params[w] = params[w] * np.expand_dims(scale, tuple(a for a in range(4) if a != out_axis))
    if (bias := _bias_after(call.workload.chain)) is not None:
        b = _param_of(call, bias)
        params[b] = (beta - mean * scale).reshape(params[b].shape)
    shape = [1, 1, 1, 1]
    shape[channel] = -1
    return [y * scale.reshape(shape) for y in raw]


def _after_first_step(chain: dict) -> dict:
    """``chain`` from its first step's output on: that output is input 0, the chain's inputs follow."""
    def moved(ref):
        kind, index = ref
        if kind == "input":
            return ["input", index + 1]
        return ["input", 0] if index == 0 else ["step", index - 1]

    return {"inputs": [{"shape": list(reference.output_shape({**chain, "steps": chain["steps"][:1]}))},
                       *chain["inputs"]],
            "steps": [{**step, "args": [moved(a) for a in step["args"]]} for step in chain["steps"][1:]]}


def _standardize_classifier_input(call, matmul: dict, params, inputs) -> None:
    """Centre the classifier's input per feature and scale it to unit variance, folded into its
    weight and bias (one scale for all features: a few images estimate a mean well, not a variance
    per feature)."""
    (_, data), (_, weight) = matmul["args"]
    w = _param_of(call, weight)
    features = np.concatenate([x[data] for x in inputs])
    mean = features.mean(axis=0)
    std = math.sqrt((features - mean).var() + BN_EPS)
    params[w] = params[w] / std
    if (bias := _bias_after(call.workload.chain)) is not None:
        b = _param_of(call, bias)
        params[b] = (-(mean @ params[w])).reshape(params[b].shape)
