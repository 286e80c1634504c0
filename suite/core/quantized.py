"""int8 workloads: the quantized counterpart of a fused PrimFunc, and its exact integer oracle.

Relax has no QNN, so the suite writes each quantized workload itself in TE, from the same op chain
the float workload is described by (:mod:`suite.core.workloads`). ``docs/int8.md`` defines it:

- activations (and residuals) ``uint8`` with zero point 0, weights ``int8`` (symmetric), bias
  ``int32``; a conv2d or matmul accumulates ``int32(x) * int32(w)`` into an ``int32``, the bias added
  in ``int32`` (the *accumulator*);
- requantize, ``q = (acc * M + 2^(S-1)) >> S`` in int64 with ``S = 31 + shift`` and ``M`` in
  ``[2^30, 2^31)``: round half up (towards +infinity) of ``acc * M / 2^S``, the shift arithmetic;
- a residual added to ``q`` (it is in the output's scale), then the output zero point ``z`` (0 after a
  relu, 128 otherwise) and a saturation to ``[0, 255]``: ``y = clip(q + r + z, 0, 255)`` as uint8. The
  relu *is* that clip (z = 0);
- max pool: the largest uint8 of the window (padding is 0, uint8's least value; its accumulator is
  that maximum, widened to int32); mean: the int32 sum (the accumulator), then ``(sum + n // 2) // n``,
  round half up.

The oracle computes the same in numpy int64 (no TVM): the accumulator exactly, never wrapped, and the
output from it. A kernel's int32 accumulator (:func:`accumulator_func`: the kernel's own blocks up to
the bias, scheduled in the same order) matches it bit for bit or it is wrong: :func:`metrics` counts
the mismatches, and the elements whose exact value leaves int32 (``accumulator_wrapped``); there the
kernel's value is compared with the two's-complement wrap of the exact one, the wrap x86 gives for
TVM's int32 add (which LLVM marks ``nsw``: overflow is undefined behaviour, see docs/int8.md).

Quantization parameters follow from the chain alone (its reduction length), inputs from fixed seeds.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from suite.compat import release

#: The dtype name of the quantized workloads (`--dtypes int8`), and the dtypes of their tensors.
DTYPE = "int8"
ACTIVATION_DTYPE, WEIGHT_DTYPE, ACCUMULATOR_DTYPE, OUTPUT_DTYPE = "uint8", "int8", "int32", "uint8"

#: Input draws: activations uniform over [0, 255], residuals over [0, 127] (the output's scale: a
#: residual of the whole range would saturate most sums), weights round(N(0, 32)) clipped to
#: [-127, 127], bias round(U(-0.1, 0.1) * the accumulator's scale), as the float workloads' bias is a
#: tenth of their output's scale.
RESIDUAL_MAX, WEIGHT_STD, BIAS_SHARE = 127, 32.0, 0.1
#: The root mean square of a uniform draw from 0..255: sqrt(255 * 511 / 6).
ACTIVATION_RMS = math.sqrt(255 * 511 / 6)
#: The requantized accumulator's standard deviation, in output steps (a quarter of uint8's range
#: above its zero point of 128 without relu, an eighth of it after relu).
OUTPUT_STD = 32.0
RELU_ZERO_POINT, ZERO_POINT = 0, 128
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


class NotQuantizable(ValueError):
    """An op chain that has no quantized form here (an op other than conv2d, matmul, max_pool2d,
    mean, add and relu, or ops in another arrangement)."""


@dataclass(frozen=True)
class Requantize:
    """``q = (acc * multiplier + 2^(S-1)) >> S``, ``S = 31 + shift``: round half up of
    ``acc * multiplier / 2^S``; ``multiplier`` in [2^30, 2^31)."""

    multiplier: int
    shift: int

    @property
    def total_shift(self) -> int:
        return 31 + self.shift

    @classmethod
    def of(cls, real: float) -> Requantize:
        """The multiplier and shift nearest the real factor ``real`` (0 < real < 1)."""
        if not 0 < real < 1:
            raise ValueError(f"a requantize factor is in (0, 1), not {real}")
        fraction, exponent = math.frexp(real)  # real = fraction * 2^exponent, fraction in [0.5, 1)
        multiplier = round(fraction * 2 ** 31)
        if multiplier == 2 ** 31:
            multiplier, exponent = 2 ** 30, exponent + 1
        return cls(multiplier, -exponent)

    def apply(self, acc: np.ndarray) -> np.ndarray:
        """The requantized values of int64 ``acc`` (|acc| < 2^32, so ``acc * M`` fits int64)."""
        acc = np.asarray(acc, dtype=np.int64)
        if acc.size and int(np.max(np.abs(acc))) >= 2 ** 32:
            raise ValueError("requantize takes accumulators of magnitude below 2^32")
        s = self.total_shift
        return (acc * np.int64(self.multiplier) + np.int64(1 << (s - 1))) >> np.int64(s)


@dataclass(frozen=True)
class Plan:
    """The quantized form of an op chain: its reduction op and the inputs each part reads."""

    op: str  #: conv2d, matmul, max_pool2d or mean
    attrs: dict
    data: int  #: the input index of the reduced activation
    weight: int | None = None
    bias: int | None = None
    residual: int | None = None
    relu: bool = False
    requantize: Requantize | None = None  #: conv2d and matmul
    #: the constant added before the clip, where not the relu's 0 or 128: a whole quantized model's
    #: (suite.model.int8), whose residual may carry a zero point of its own (0 less it)
    offset: int | None = None
    #: the value a conv2d pads its input with: that input's zero point (0 but for a whole model's image)
    pad: int = 0

    @property
    def zero_point(self) -> int:
        if self.offset is not None:
            return self.offset
        return RELU_ZERO_POINT if self.relu else ZERO_POINT


def plan(chain: dict) -> Plan:
    """The quantized form of ``chain`` (NotQuantizable when it has none)."""
    steps = chain["steps"]
    first = steps[0]
    op, attrs = first["op"], first.get("attrs", {})
    if op not in ("conv2d", "matmul", "max_pool2d", "mean") or any(kind != "input" for kind, _ in first["args"]):
        raise NotQuantizable(f"no quantized form of a chain that starts with {op}")
    data = first["args"][0][1]
    weight = first["args"][1][1] if op in ("conv2d", "matmul") else None
    bias = residual = None
    relu = False
    for index, step in enumerate(steps[1:], start=1):
        inputs = [i for kind, i in step["args"] if kind == "input"]
        chained = [i for kind, i in step["args"] if kind == "step"]
        if chained != [index - 1]:
            raise NotQuantizable(f"step {index} ({step['op']}) does not take the step before it")
        if step["op"] == "add" and len(inputs) == 1 and weight is not None and not relu:
            role = chain["inputs"][inputs[0]].get("role")
            if role == "bias" and bias is None and residual is None:
                bias = inputs[0]
                continue
            if role == "activation" and residual is None:
                residual = inputs[0]
                continue
        if step["op"] == "relu" and not inputs and index == len(steps) - 1:
            relu = True
            continue
        raise NotQuantizable(f"no quantized form of {step['op']} at step {index}")
    requantize = None
    if weight is not None:
        requantize = Requantize.of(OUTPUT_STD / accumulator_scale(chain, weight))
    return Plan(op, attrs, data, weight, bias, residual, relu, requantize)


def reduction_length(chain: dict, weight: int) -> int:
    """Terms each accumulator sums: kh*kw*cin of a conv2d, the inner dimension of a matmul."""
    return chain["inputs"][weight]["fan_in"]


def accumulator_scale(chain: dict, weight: int) -> float:
    """The accumulator's expected root mean square: sqrt(K) * rms(x) * std(w)."""
    return math.sqrt(reduction_length(chain, weight)) * ACTIVATION_RMS * WEIGHT_STD


# ----------------------------------------------------------------------------- inputs


def input_dtypes(chain: dict) -> list[str]:
    """The dtype of each input of the quantized chain."""
    found = plan(chain)
    by_index = {found.weight: WEIGHT_DTYPE, found.bias: ACCUMULATOR_DTYPE}
    return [by_index.get(i, ACTIVATION_DTYPE) for i in range(len(chain["inputs"]))]


def make_inputs(workload_id: str, chain: dict) -> list[np.ndarray]:
    """The inputs of the quantized workload, from fixed seeds (per workload and input)."""
    found = plan(chain)
    arrays = []
    for index, item in enumerate(chain["inputs"]):
        rng = np.random.default_rng(zlib.crc32(f"{workload_id}/{index}/{DTYPE}".encode()))
        shape = item["shape"]
        if index == found.weight:
            values = np.clip(np.rint(rng.normal(0.0, WEIGHT_STD, size=shape)), -127, 127).astype(np.int8)
        elif index == found.bias:
            scale = accumulator_scale(chain, found.weight)
            values = np.rint(rng.uniform(-BIAS_SHARE, BIAS_SHARE, size=shape) * scale).astype(np.int32)
        elif index == found.residual:
            values = rng.integers(0, RESIDUAL_MAX + 1, size=shape, dtype=np.uint8)
        else:
            values = rng.integers(0, 256, size=shape, dtype=np.uint8)
        arrays.append(values)
    return arrays


# ----------------------------------------------------------------------------- the oracle (numpy int64)


@dataclass(frozen=True)
class Oracle:
    """The exact integer result of a quantized chain."""

    output: np.ndarray  #: uint8
    accumulator: np.ndarray  #: int64, exact (never wrapped)


def evaluate(chain: dict, inputs, found: Plan | None = None) -> Oracle:
    """The quantized chain on ``inputs`` in numpy int64: the exact accumulator and the output
    (``found``: the chain's plan with other requantize parameters; default its own)."""
    found = found or plan(chain)
    x = np.asarray(inputs[found.data], dtype=np.int64)
    if found.op == "max_pool2d":
        pooled = _max_pool(x, found.attrs)
        return Oracle(pooled.astype(np.uint8), pooled)
    if found.op == "mean":
        total = _sum(x, found.attrs)
        count = math.prod(x.shape) // math.prod(total.shape)
        return Oracle(((total + count // 2) // count).astype(np.uint8), total)
    w = np.asarray(inputs[found.weight], dtype=np.int64)
    acc = _conv2d(x, w, found.attrs, found.pad) if found.op == "conv2d" else x @ w
    if found.bias is not None:
        acc = acc + np.asarray(inputs[found.bias], dtype=np.int64)
    return Oracle(_output(found, found.requantize.apply(acc), inputs), acc)


def _output(found: Plan, q: np.ndarray, inputs) -> np.ndarray:
    if found.residual is not None:
        q = q + np.asarray(inputs[found.residual], dtype=np.int64)
    return np.clip(q + found.zero_point, 0, 255).astype(np.uint8)


def wrap_int32(values) -> np.ndarray:
    """int64 ``values`` wrapped to int32 as two's complement does (what x86 computes for TVM's
    int32 add and multiply)."""
    values = np.asarray(values, dtype=np.int64)
    return ((values - INT32_MIN) % (2 ** 32) + INT32_MIN).astype(np.int32)


def _nhwc(x, layout):
    return x if layout == "NHWC" else x.transpose(0, 2, 3, 1)


def _conv2d(x, w, attrs, pad: int = 0) -> np.ndarray:
    if attrs.get("groups", 1) != 1:
        raise NotQuantizable("a grouped conv2d has no quantized form here")
    layout = attrs["data_layout"]
    x = _nhwc(x, layout)
    w = w if attrs["kernel_layout"] == "HWIO" else w.transpose(2, 3, 1, 0)
    top, left, bottom, right = attrs["padding"]
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    kh, kw = w.shape[:2]
    x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=pad)
    oh = (x.shape[1] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[2] - dw * (kw - 1) - 1) // sw + 1
    acc = np.zeros((x.shape[0], oh, ow, w.shape[3]), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            tap = x[:, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw, :]
            acc += tap @ w[i, j]
    return acc if layout == "NHWC" else acc.transpose(0, 3, 1, 2)


def _max_pool(x, attrs) -> np.ndarray:
    layout = attrs["layout"]
    x = _nhwc(x, layout)
    top, left, bottom, right = attrs["padding"]
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    if attrs.get("ceil_mode"):
        raise NotQuantizable("max_pool2d with ceil_mode has no quantized form here")
    x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))  # 0: uint8's least value
    oh = (x.shape[1] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[2] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            out = np.maximum(out, x[:, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw])
    return out if layout == "NHWC" else out.transpose(0, 3, 1, 2)


def _sum(x, attrs) -> np.ndarray:
    return np.sum(x, axis=tuple(attrs["axis"]), keepdims=bool(attrs.get("keepdims")), dtype=np.int64)


# ----------------------------------------------------------------------------- judging a kernel


def metrics(output, accumulator, oracle: Oracle) -> dict[str, float]:
    """A kernel's output (uint8) and accumulator (int32) against the oracle:

    - ``exact_fraction``: output elements equal to the oracle's; ``max_step_error``: the largest
      difference, in output steps;
    - ``accumulator_mismatches``: accumulator elements that differ from the exact value wrapped to
      int32 (any is a wrong kernel); ``accumulator_wrapped``: elements whose exact value leaves
      int32 (the kernel cannot hold it: its output there is not the oracle's).
    """
    output = np.asarray(output)
    if output.shape != oracle.output.shape:
        raise ValueError(f"shapes differ: output {output.shape}, oracle {oracle.output.shape}")
    if output.size == 0:
        raise ValueError("the metrics of an empty output are undefined")
    steps = np.abs(output.astype(np.int64) - oracle.output.astype(np.int64))
    accumulator, exact = np.asarray(accumulator), oracle.accumulator
    if accumulator.shape != exact.shape:
        raise ValueError(f"shapes differ: accumulator {accumulator.shape}, oracle {exact.shape}")
    return {"exact_fraction": float(np.mean(steps == 0)), "max_step_error": float(np.max(steps)),
            "accumulator_mismatches": float(np.count_nonzero(accumulator.astype(np.int64) != wrap_int32(exact))),
            "accumulator_wrapped": float(np.count_nonzero((exact < INT32_MIN) | (exact > INT32_MAX)))}


# ----------------------------------------------------------------------------- the kernels (TE)


def prim_func(chain: dict, found: Plan | None = None):
    """The quantized workload's PrimFunc: its inputs, then the uint8 output (``found``: as in
    :func:`evaluate`)."""
    params, _, output = _compute(chain, found)
    return release.te().create_prim_func([*params, output])


def accumulator_func(chain: dict):
    """The same kernel up to its accumulator (conv2d or matmul with the bias; mean's sum; max pool's
    maximum, widened), which it outputs as int32: its blocks are the full kernel's first ones, named
    alike, so a loop order applies to both the same way."""
    params, accumulator, _ = _compute(chain)
    found = plan(chain)
    used = [params[i] for i in (found.data, found.weight, found.bias) if i is not None]
    return release.te().create_prim_func([*used, accumulator])


def _compute(chain: dict, found: Plan | None = None):
    """(placeholders, accumulator tensor, output tensor) of the quantized chain."""
    te, tir = release.te(), release.tir()
    found = found or plan(chain)
    params = [te.placeholder(tuple(item["shape"]), dtype, name=f"input{i}")
              for i, (item, dtype) in enumerate(zip(chain["inputs"], input_dtypes(chain)))]
    shape = tuple(chain["output_shape"])
    x = params[found.data]

    def int64(value):
        return tir.const(value, "int64")

    if found.op == "max_pool2d":
        out = _te_max_pool(te, tir, x, found.attrs, shape)
        return params, te.compute(shape, lambda *i: out(*i).astype(ACCUMULATOR_DTYPE), name="widen"), out
    if found.op == "mean":
        total = _te_sum(te, x, found.attrs, shape)
        count = math.prod(x.shape) // math.prod(shape)
        out = te.compute(shape, lambda *i: te.floordiv(total(*i) + count // 2, count).astype(OUTPUT_DTYPE),
                         name="divide")
        return params, total, out
    if found.op == "conv2d":
        acc = _te_conv2d(te, tir, x, params[found.weight], found.attrs, shape, found.pad)
    else:
        w = params[found.weight]
        k = te.reduce_axis((0, w.shape[0]), name="k")
        acc = te.compute(shape, lambda i, j: te.sum(x[i, k].astype(ACCUMULATOR_DTYPE) * w[k, j].astype(ACCUMULATOR_DTYPE),
                                                    axis=k), name="matmul")
    if found.bias is not None:
        b = params[found.bias]
        acc = te.compute(shape, lambda *i: acc(*i) + b(*_broadcast(b.shape, i)), name="bias_add")
    rq, residual, zero_point = found.requantize, found.residual, found.zero_point
    s = rq.total_shift

    def requantize(*i):
        q = (acc(*i).astype("int64") * int64(rq.multiplier) + int64(1 << (s - 1))) >> int64(s)
        if residual is not None:
            q = q + params[residual](*i).astype("int64")
        return te.max(te.min(q + int64(zero_point), int64(255)), int64(0)).astype(OUTPUT_DTYPE)

    return params, acc, te.compute(shape, requantize, name="requantize")


def _broadcast(shape, index):
    """The index of a broadcast operand (right-aligned, its unit dimensions at 0)."""
    index = index[len(index) - len(shape):]
    return [0 if int(n) == 1 else i for n, i in zip(shape, index)]


def _te_pad(te, tir, x, layout, padding, fill):
    top, left, bottom, right = padding
    if not any(padding):
        return x
    h_axis, w_axis = (1, 2) if layout == "NHWC" else (2, 3)
    shape = list(x.shape)
    height, width = shape[h_axis], shape[w_axis]
    shape[h_axis] = height + top + bottom
    shape[w_axis] = width + left + right

    def value(*i):
        h, w = i[h_axis], i[w_axis]
        inside = te.all(h >= top, h < height + top, w >= left, w < width + left)
        source = list(i)
        source[h_axis], source[w_axis] = h - top, w - left
        return te.if_then_else(inside, x(*source), tir.const(fill, x.dtype))

    return te.compute(tuple(shape), value, name="pad")


def _te_conv2d(te, tir, x, w, attrs, shape, pad: int = 0):
    if attrs.get("groups", 1) != 1:
        raise NotQuantizable("a grouped conv2d has no quantized form here")
    layout, hwio = attrs["data_layout"], attrs["kernel_layout"] == "HWIO"
    padded = _te_pad(te, tir, x, layout, attrs["padding"], pad)
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    kh, kw, cin = (w.shape[0], w.shape[1], w.shape[2]) if hwio else (w.shape[2], w.shape[3], w.shape[1])
    ry, rx, rc = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx"), te.reduce_axis((0, cin), "rc")
    wide = ACCUMULATOR_DTYPE

    def weight(o):
        return w[ry, rx, rc, o] if hwio else w[o, rc, ry, rx]

    if layout == "NHWC":
        def conv(n, h, v, o):
            return te.sum(padded[n, h * sh + ry * dh, v * sw + rx * dw, rc].astype(wide) * weight(o).astype(wide),
                          axis=[ry, rx, rc])
    else:
        def conv(n, o, h, v):
            return te.sum(padded[n, rc, h * sh + ry * dh, v * sw + rx * dw].astype(wide) * weight(o).astype(wide),
                          axis=[rc, ry, rx])
    return te.compute(shape, conv, name="conv2d")


def _te_max_pool(te, tir, x, attrs, shape):
    if attrs.get("ceil_mode"):
        raise NotQuantizable("max_pool2d with ceil_mode has no quantized form here")
    layout = attrs["layout"]
    padded = _te_pad(te, tir, x, layout, attrs["padding"], 0)
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    if layout == "NHWC":
        def pool(n, h, v, c):
            return te.max(padded[n, h * sh + ry * dh, v * sw + rx * dw, c], axis=[ry, rx])
    else:
        def pool(n, c, h, v):
            return te.max(padded[n, c, h * sh + ry * dh, v * sw + rx * dw], axis=[ry, rx])
    return te.compute(shape, pool, name="max_pool2d")


def _te_sum(te, x, attrs, shape):
    axes = sorted(a % len(x.shape) for a in attrs["axis"])
    keep = bool(attrs.get("keepdims"))
    reduced = {a: te.reduce_axis((0, x.shape[a]), f"r{a}") for a in axes}

    def total(*i):
        kept = iter(i)
        index = []
        for a in range(len(x.shape)):
            if a in reduced:
                index.append(reduced[a])
                if keep:
                    next(kept)
            else:
                index.append(next(kept))
        return te.sum(x(*index).astype(ACCUMULATOR_DTYPE), axis=[reduced[a] for a in axes])

    return te.compute(shape, total, name="sum")
