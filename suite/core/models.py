"""ResNet-18 and ResNet-50 (batch 1, 224x224x3) written as Relax graphs, with no downloads.

Only the graph's structure matters to the suite (weights are inputs of the fused kernels,
filled from fixed seeds later), so every weight is a function parameter.
Each convolution is conv2d + bias add (+ residual add) + relu, as in the torchvision models.
"""

from __future__ import annotations

from dataclasses import dataclass

from suite import compat
from suite.errors import UserError

#: model name -> (blocks per stage, bottleneck?)
ARCHITECTURES = {
    "resnet18": ((2, 2, 2, 2), False),
    "resnet50": ((3, 4, 6, 3), True),
}
LAYOUTS = ("NHWC", "NCHW")
STAGE_WIDTHS = (64, 128, 256, 512)
IMAGE = 224
CLASSES = 1000


def model_names() -> list[str]:
    """``resnet50`` (NHWC) and ``resnet50-nchw`` style names for every architecture and layout."""
    names = []
    for arch in ARCHITECTURES:
        names += [arch, f"{arch}-nchw"]
    return names


def parse_model_name(name: str) -> tuple[str, str]:
    """``resnet50-nchw`` -> (``resnet50``, ``NCHW``); raises ValueError listing valid names."""
    arch, _, layout = name.partition("-")
    layout = (layout or "nhwc").upper()
    if arch not in ARCHITECTURES or layout not in LAYOUTS:
        raise UnknownModel(f"unknown model {name!r}; valid models: {', '.join(model_names())}")
    return arch, layout


class UnknownModel(UserError, ValueError):
    pass


@dataclass
class _GraphBuilder:
    """Emits ResNet layers into a Relax BlockBuilder; weights become parameters."""

    dtype: str
    layout: str

    def __post_init__(self):
        self.relax = compat.relax()
        self.bb = self.relax.BlockBuilder()
        self.params = []

    def param(self, shape):
        var = self.relax.Var(f"p{len(self.params)}", compat.tensor_type(shape, self.dtype))
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


def resnet(name: str, dtype: str = "float32"):
    """The Relax IRModule of a ResNet named by :func:`model_names`, every tensor in ``dtype``."""
    arch, layout = parse_model_name(name)
    depths, bottleneck = ARCHITECTURES[arch]
    g = _GraphBuilder(dtype, layout)
    op = g.relax.op
    image = (1, IMAGE, IMAGE, 3) if layout == "NHWC" else (1, 3, IMAGE, IMAGE)
    data = g.relax.Var("data", compat.tensor_type(image, dtype))
    spatial_axes = [1, 2] if layout == "NHWC" else [2, 3]
    with g.bb.function("main"):
        with g.bb.dataflow():
            y = g.conv(data, 3, 64, 7, 2)
            y = g.bb.emit(op.nn.max_pool2d(y, 3, 2, 1, layout=layout))
            channels = 64
            for stage, (blocks, width) in enumerate(zip(depths, STAGE_WIDTHS)):
                for index in range(blocks):
                    stride = 2 if index == 0 and stage > 0 else 1
                    y, channels = g.block(y, channels, width, stride, bottleneck)
            y = g.bb.emit(op.mean(y, axis=spatial_axes))
            y = g.bb.emit(op.matmul(y, g.param((channels, CLASSES))))
            y = g.bb.emit(op.add(y, g.param((1, CLASSES))))
            output = g.bb.emit_output(y)
        g.bb.emit_func_output(output, [data] + g.params)
    return g.bb.get()
