"""Independent float64 reference evaluation of a fused op chain.

A chain is a JSON-serializable dict describing one fused workload::

    {"inputs": [{"shape": [1, 230, 230, 3], "role": "activation"}, ...],
     "steps": [{"op": "conv2d", "args": [["input", 0], ["input", 1]],
                "attrs": {...}}, ...]}

Each argument is ``["input", i]`` or ``["step", j]`` (an earlier step); the
output is the last step. Everything is computed in float64 with numpy, so
the reference shares no code with TVM.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

Chain = dict[str, Any]
Shape = tuple[int, ...]


def evaluate(chain: Chain, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Evaluate the chain in float64 on ``inputs`` (any float dtype)."""
    values = [np.asarray(x, dtype=np.float64) for x in inputs]
    return _run(chain, values, magnitude=False)


def evaluate_magnitude(chain: Chain, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Evaluate the chain on |inputs| with relu as identity.

    This is the ``m`` of the rounding-error bound |fl(y) - y| <= gamma_K * m:
    every step is monotone in the magnitudes of its operands, and relu is
    1-Lipschitz, so it can only shrink an error and is dropped.
    """
    values = [np.abs(np.asarray(x, dtype=np.float64)) for x in inputs]
    return _run(chain, values, magnitude=True)


def output_shape(chain: Chain) -> Shape:
    """Shape of the chain's output, inferred from the declared input shapes."""
    return _trace(chain)[0]


def accumulation_length(chain: Chain) -> int:
    """Rounded operations K that an output element accumulates.

    Reductions contribute their length (conv2d: kh*kw*cin, matmul: the inner
    dimension, mean: the reduced size + 1 for the division), each add 1,
    relu and max_pool2d 0. Lengths add up along the longest dependency path
    to the output, since gamma_j + gamma_k + gamma_j*gamma_k <= gamma_(j+k).
    """
    return _trace(chain)[1]


# ---------------------------------------------------------------- chain walking


def _steps(chain: Chain) -> list[dict[str, Any]]:
    steps = chain["steps"]
    if not steps:
        raise ValueError("op chain has no steps")
    return steps


def _resolve(ref: Sequence[Any], inputs: Sequence[Any], steps_done: Sequence[Any]) -> Any:
    """Look up an ``["input", i]`` or ``["step", j]`` argument."""
    kind, index = ref
    if kind == "input":
        pool = inputs
    elif kind == "step":
        pool = steps_done
    else:
        raise ValueError(f"unknown argument kind {kind!r}")
    if not 0 <= index < len(pool):
        raise ValueError(f"argument {list(ref)} refers to nothing computed yet")
    return pool[index]


def _run(chain: Chain, inputs: list[np.ndarray], magnitude: bool) -> np.ndarray:
    declared = [tuple(spec["shape"]) for spec in chain["inputs"]]
    actual = [x.shape for x in inputs]
    if declared != actual:
        raise ValueError(f"input shapes {actual} do not match the chain's {declared}")
    results: list[np.ndarray] = []
    for step in _steps(chain):
        op = _lookup(step["op"])
        args = [_resolve(ref, inputs, results) for ref in step["args"]]
        if magnitude and step["op"] == "relu":
            results.append(args[0])
        else:
            results.append(op.evaluate(args, step.get("attrs", {})))
    return results[-1]


def _trace(chain: Chain) -> tuple[Shape, int]:
    """Propagate shapes and rounding depths; return those of the output."""
    input_shapes = [tuple(spec["shape"]) for spec in chain["inputs"]]
    input_depths = [0] * len(input_shapes)
    shapes: list[Shape] = []
    depths: list[int] = []
    for step in _steps(chain):
        op = _lookup(step["op"])
        attrs = step.get("attrs", {})
        arg_shapes = [_resolve(ref, input_shapes, shapes) for ref in step["args"]]
        arg_depth = max(_resolve(ref, input_depths, depths) for ref in step["args"])
        depths.append(arg_depth + op.roundings(arg_shapes, attrs))
        shapes.append(op.shape(arg_shapes, attrs))
    return shapes[-1], depths[-1]


# ---------------------------------------------------------------- layouts and windows


def _to_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "NHWC":
        return x
    if layout == "NCHW":
        return x.transpose(0, 2, 3, 1)
    raise ValueError(f"unsupported data layout {layout!r}")


def _from_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "NHWC" else x.transpose(0, 3, 1, 2)


def _nhwc_shape(shape: Shape, layout: str) -> Shape:
    n, a, b, c = shape
    if layout == "NHWC":
        return shape
    if layout == "NCHW":
        return (n, b, c, a)
    raise ValueError(f"unsupported data layout {layout!r}")


def _from_nhwc_shape(shape: Shape, layout: str) -> Shape:
    n, h, w, c = shape
    return shape if layout == "NHWC" else (n, c, h, w)


def _to_hwio(w: np.ndarray, layout: str) -> np.ndarray:
    if layout == "HWIO":
        return w
    if layout == "OIHW":
        return w.transpose(2, 3, 1, 0)
    raise ValueError(f"unsupported kernel layout {layout!r}")


def _hwio_shape(shape: Shape, layout: str) -> Shape:
    a, b, c, d = shape
    if layout == "HWIO":
        return shape
    if layout == "OIHW":
        return (c, d, b, a)
    raise ValueError(f"unsupported kernel layout {layout!r}")


class _Window(NamedTuple):
    """Sliding-window geometry of a conv2d or pooling step."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right

    def output_hw(self, height: int, width: int) -> tuple[int, int]:
        top, left, bottom, right = self.padding
        sizes = []
        for size, k, s, d, pad in zip(
            (height, width), self.kernel, self.strides, self.dilation, (top + bottom, left + right)
        ):
            extent = size + pad - d * (k - 1) - 1
            if extent < 0:
                raise ValueError(f"window {self} does not fit an input of {height}x{width}")
            sizes.append(extent // s + 1)
        return sizes[0], sizes[1]

    def pad(self, x: np.ndarray, fill: float) -> np.ndarray:
        top, left, bottom, right = self.padding
        return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)

    def rows(self, padded: np.ndarray, out_hw: tuple[int, int]):
        """Yield (i, taps of kernel row i) as (n, oh, ow, c, kw) views of ``padded``."""
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilation
        oh, ow = out_hw
        for i in range(kh):
            row = padded[:, i * dh : i * dh + sh * (oh - 1) + 1 : sh]
            windows = sliding_window_view(row, dw * (kw - 1) + 1, axis=2)
            yield i, windows[:, :, : sw * (ow - 1) + 1 : sw, :, ::dw]


def _window(kernel: Sequence[int], attrs: dict[str, Any]) -> _Window:
    top, left, bottom, right = attrs.get("padding", (0, 0, 0, 0))
    return _Window(
        kernel=(int(kernel[0]), int(kernel[1])),
        strides=tuple(attrs.get("strides", (1, 1))),
        dilation=tuple(attrs.get("dilation", (1, 1))),
        padding=(top, left, bottom, right),
    )


# ---------------------------------------------------------------- ops


def _conv2d_geometry(shapes: Sequence[Shape], attrs: dict[str, Any]) -> tuple[_Window, Shape]:
    """Window and NHWC output shape of a conv2d step."""
    if attrs.get("groups", 1) != 1:
        raise ValueError(f"conv2d with groups={attrs['groups']} is not supported")
    n, h, w, cin = _nhwc_shape(shapes[0], attrs.get("data_layout", "NCHW"))
    kh, kw, kernel_cin, cout = _hwio_shape(shapes[1], attrs.get("kernel_layout", "OIHW"))
    if kernel_cin != cin:
        raise ValueError(f"conv2d input has {cin} channels but the kernel expects {kernel_cin}")
    window = _window((kh, kw), attrs)
    return window, (n, *window.output_hw(h, w), cout)


def _conv2d(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    window, (n, oh, ow, cout) = _conv2d_geometry([a.shape for a in args], attrs)
    data_layout = attrs.get("data_layout", "NCHW")
    x = _to_nhwc(args[0], data_layout)
    w = _to_hwio(args[1], attrs.get("kernel_layout", "OIHW"))
    kw, cin = w.shape[1], w.shape[2]
    out = np.zeros((n * oh * ow, cout))
    # One GEMM per kernel row: as fast as a full im2col (a single GEMM per
    # tap is ~5x slower for thin channels) at 1/kh of its memory.
    for i, taps in window.rows(window.pad(x, 0.0), (oh, ow)):
        columns = taps.transpose(0, 1, 2, 4, 3).reshape(-1, kw * cin)
        out += columns @ w[i].reshape(kw * cin, cout)
    return _from_nhwc(out.reshape(n, oh, ow, cout), data_layout)


def _conv2d_shape(shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    return _from_nhwc_shape(_conv2d_geometry(shapes, attrs)[1], attrs.get("data_layout", "NCHW"))


def _conv2d_roundings(shapes: Sequence[Shape], attrs: dict[str, Any]) -> int:
    kh, kw, cin, _ = _hwio_shape(shapes[1], attrs.get("kernel_layout", "OIHW"))
    return kh * kw * cin


def _pool_geometry(shape: Shape, attrs: dict[str, Any]) -> tuple[_Window, Shape]:
    """Window and NHWC output shape of a max_pool2d step."""
    if attrs.get("ceil_mode", False):
        raise ValueError("max_pool2d with ceil_mode=True is not supported")
    n, h, w, c = _nhwc_shape(shape, attrs.get("layout", "NCHW"))
    window = _window(attrs["pool_size"], attrs)
    return window, (n, *window.output_hw(h, w), c)


def _max_pool2d(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    window, out_shape = _pool_geometry(args[0].shape, attrs)
    layout = attrs.get("layout", "NCHW")
    out = np.full(out_shape, -np.inf)
    # -inf padding so that padded positions never win the max.
    for _, taps in window.rows(window.pad(_to_nhwc(args[0], layout), -np.inf), out_shape[1:3]):
        np.maximum(out, taps.max(axis=-1), out=out)
    return _from_nhwc(out, layout)


def _max_pool2d_shape(shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    return _from_nhwc_shape(_pool_geometry(shapes[0], attrs)[1], attrs.get("layout", "NCHW"))


def _mean_axes(shape: Shape, attrs: dict[str, Any]) -> tuple[int, ...]:
    axis = attrs.get("axis")
    if axis is None:
        return tuple(range(len(shape)))
    return tuple(sorted(a % len(shape) for a in axis))


def _mean(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    axes = _mean_axes(args[0].shape, attrs)
    return np.mean(args[0], axis=axes, keepdims=attrs.get("keepdims", False))


def _mean_shape(shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    axes = _mean_axes(shapes[0], attrs)
    keepdims = attrs.get("keepdims", False)
    return tuple(
        1 if a in axes else size
        for a, size in enumerate(shapes[0])
        if keepdims or a not in axes
    )


def _mean_roundings(shapes: Sequence[Shape], attrs: dict[str, Any]) -> int:
    reduced = math.prod(shapes[0][a] for a in _mean_axes(shapes[0], attrs))
    return reduced + 1


def _matmul_shape(shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    a, b = shapes
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"matmul needs operands of rank >= 2, got {a} and {b}")
    if a[-1] != b[-2]:
        raise ValueError(f"matmul inner dimensions differ: {a} @ {b}")
    return (*np.broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])


def _broadcast_shape(shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    return tuple(np.broadcast_shapes(*shapes))


def _same_shape(shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    return shapes[0]


def _constant(count: int) -> Callable[[Sequence[Shape], dict[str, Any]], int]:
    return lambda shapes, attrs: count


class _Op(NamedTuple):
    evaluate: Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]
    shape: Callable[[Sequence[Shape], dict[str, Any]], Shape]
    roundings: Callable[[Sequence[Shape], dict[str, Any]], int]  # per output element


_OPS: dict[str, _Op] = {
    "conv2d": _Op(_conv2d, _conv2d_shape, _conv2d_roundings),
    "add": _Op(lambda args, attrs: np.add(args[0], args[1]), _broadcast_shape, _constant(1)),
    "relu": _Op(lambda args, attrs: np.maximum(args[0], 0.0), _same_shape, _constant(0)),
    "max_pool2d": _Op(_max_pool2d, _max_pool2d_shape, _constant(0)),
    "mean": _Op(_mean, _mean_shape, _mean_roundings),
    "matmul": _Op(
        lambda args, attrs: np.matmul(args[0], args[1]),
        _matmul_shape,
        lambda shapes, attrs: shapes[0][-1],
    ),
}


def _lookup(name: str) -> _Op:
    try:
        return _OPS[name]
    except KeyError:
        raise ValueError(f"unsupported op {name!r} in op chain") from None
