"""The models whose fused PrimFuncs are the suite's workloads, written as Relax graphs (no downloads):
ResNet-18 and ResNet-50 (batch 1, 224x224x3), a two-block ResNet on 32x32 images (``miniresnet``: a
whole model in seconds, for tests and smoke runs), and whatever is added to :data:`MODELS`.

Only the graph's structure matters to the suite (weights are inputs of the fused kernels,
filled from fixed seeds later: per workload by :func:`suite.core.workloads.make_inputs`, per whole
model by :mod:`suite.model.weights`), so every weight is a function parameter.
Each convolution is conv2d + bias add (+ residual add) + relu, as in the torchvision models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from suite.compat import relax, release
from suite.errors import UserError

LAYOUTS = ("NHWC", "NCHW")


@dataclass(frozen=True)
class Model:
    """A model: ``body(g, data)`` emits its layers into the graph builder ``g`` (a
    :class:`GraphBuilder`) from the input ``data`` (1 x ``image`` x ``image`` x 3, or NCHW) and
    returns the output; every weight is a parameter (``g.param``)."""

    body: Callable
    image: int = 224


#: Every model the suite knows, by name; each in both layouts (``resnet50``, ``resnet50-nchw``).
#: A model is added here (see docs/add-a-model.md), and its workloads follow: the suite fuses the
#: graph, names each fused PrimFunc by its op chain and shapes, and computes its reference.
MODELS: dict[str, Model] = {}


def model(name: str, image: int = 224):
    """Register the decorated ``body(g, data)`` as the model ``name``."""
    def register(body):
        MODELS[name] = Model(body, image)
        return body
    return register


def model_names() -> list[str]:
    """``resnet50`` (NHWC) and ``resnet50-nchw`` style names for every model and layout."""
    names = []
    for name in MODELS:
        names += [name, f"{name}-nchw"]
    return names


def parse_model_name(name: str) -> tuple[str, str]:
    """``resnet50-nchw`` -> (``resnet50``, ``NCHW``); raises ValueError listing valid names."""
    arch, _, layout = name.partition("-")
    layout = (layout or "nhwc").upper()
    if arch not in MODELS or layout not in LAYOUTS:
        raise UnknownModel(f"unknown model {name!r}; valid models: {', '.join(model_names())}")
    return arch, layout


class UnknownModel(UserError, ValueError):
    pass


@dataclass
class GraphBuilder:
    """Emits layers into a Relax BlockBuilder; weights become parameters. The ops are those the
    suite's float64 reference evaluates (suite.core.reference): conv2d with bias add, residual add
    and relu, max_pool2d, mean, and a dense layer (matmul + add)."""

    dtype: str
    layout: str

    def __post_init__(self):
        self.relax = release.relax()
        self.bb = self.relax.BlockBuilder()
        self.params = []

    def param(self, shape):
        var = self.relax.Var(f"p{len(self.params)}", relax.tensor_type(shape, self.dtype))
        self.params.append(var)
        return var

    def channel_shape(self, channels):
        return (1, 1, 1, channels) if self.layout == "NHWC" else (1, channels, 1, 1)

    def conv(self, x, cin, cout, kernel, stride, relu=True, residual=None):
        op = self.relax.op
        kernel_layout = "HWIO" if self.layout == "NHWC" else "OIHW"
        wshape = (kernel, kernel, cin, cout) if self.layout == "NHWC" else (cout, cin, kernel, kernel)
        y = self.bb.emit(
            op.nn.conv2d(
                x,
                self.param(wshape),
                strides=stride,
                padding=kernel // 2,
                data_layout=self.layout,
                kernel_layout=kernel_layout,
                out_dtype=self.dtype,
            )
        )
        y = self.bb.emit(op.add(y, self.param(self.channel_shape(cout))))
        if residual is not None:
            y = self.bb.emit(op.add(y, residual))
        if relu:
            y = self.bb.emit(op.nn.relu(y))
        return y

    def block(self, x, cin, width, stride, bottleneck):
        cout = width * 4 if bottleneck else width
        shortcut = x
        if stride != 1 or cin != cout:
            shortcut = self.conv(x, cin, cout, 1, stride, relu=False)
        if bottleneck:
            h = self.conv(x, cin, width, 1, 1)
            h = self.conv(h, width, width, 3, stride)
            y = self.conv(h, width, cout, 1, 1, residual=shortcut)
        else:
            h = self.conv(x, cin, width, 3, stride)
            y = self.conv(h, width, cout, 3, 1, residual=shortcut)
        return y, cout

    def max_pool(self, x, size=3, stride=2, padding=1):
        return self.bb.emit(self.relax.op.nn.max_pool2d(x, size, stride, padding, layout=self.layout))

    def global_mean(self, x):
        """The mean over H x W (ResNet's global pooling)."""
        return self.bb.emit(self.relax.op.mean(x, axis=[1, 2] if self.layout == "NHWC" else [2, 3]))

    def dense(self, x, cin, cout):
        """matmul + bias add (a classifier)."""
        y = self.bb.emit(self.relax.op.matmul(x, self.param((cin, cout))))
        return self.bb.emit(self.relax.op.add(y, self.param((1, cout))))


def graph(name: str, dtype: str = "float32"):
    """The Relax IRModule of a model named by :func:`model_names`, every tensor in ``dtype``."""
    arch, layout = parse_model_name(name)
    g = GraphBuilder(dtype, layout)
    size = MODELS[arch].image
    image = (1, size, size, 3) if layout == "NHWC" else (1, 3, size, size)
    data = g.relax.Var("data", relax.tensor_type(image, dtype))
    with g.bb.function("main"):
        with g.bb.dataflow():
            output = g.bb.emit_output(MODELS[arch].body(g, data))
        g.bb.emit_func_output(output, [data] + g.params)
    return g.bb.get()


STAGE_WIDTHS = (64, 128, 256, 512)
CLASSES = 1000


def _resnet(depths, bottleneck, g: GraphBuilder, data):
    """A ResNet (torchvision's layout of stages and blocks), batch 1, 1000 classes."""
    y = g.max_pool(g.conv(data, 3, 64, 7, 2))
    channels = 64
    for stage, (blocks, width) in enumerate(zip(depths, STAGE_WIDTHS)):
        for index in range(blocks):
            stride = 2 if index == 0 and stage > 0 else 1
            y, channels = g.block(y, channels, width, stride, bottleneck)
    return g.dense(g.global_mean(y), channels, CLASSES)


model("resnet18")(lambda g, data: _resnet((2, 2, 2, 2), False, g, data))
model("resnet50")(lambda g, data: _resnet((3, 4, 6, 3), True, g, data))


@model("miniresnet", image=32)
def miniresnet(g, data):
    """ResNet's ops and data flow, small: a stem and a pool, an identity block and a downsampling
    block (its 1x1 shortcut), 10 classes."""
    y = g.max_pool(g.conv(data, 3, 8, 3, 1))
    y, channels = g.block(y, 8, 8, 1, False)
    y, channels = g.block(y, channels, 16, 2, False)
    return g.dense(g.global_mean(y), channels, 10)
