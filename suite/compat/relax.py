"""Relax across TVM releases: a tensor's type and a struct's shape, a Relax function told apart,
an attribute read as a Python value."""

from __future__ import annotations

from suite.compat.release import relax


def tensor_type(shape, dtype: str):
    """The Relax annotation of a tensor: ``TensorType`` (0.27) or ``TensorStructInfo``.

    0.25 and 0.26 have both names, but their ``TensorType`` is the old ``DynTensorType``
    (ndim, dtype): ``TensorStructInfo`` comes first wherever it exists.
    """
    rx = relax()
    make = getattr(rx, "TensorStructInfo", None) or rx.TensorType
    return make(shape, dtype)


def struct_shape(expr) -> list[int]:
    """The static shape of a Relax expression or variable as Python ints."""
    info = getattr(expr, "struct_info", None)
    if info is None:
        info = expr.ty
    return [int(dim) for dim in info.shape]


def is_relax_function(func) -> bool:
    return isinstance(func, relax().Function)


def attr_to_python(value):
    """Convert a TVM attribute value (Array, IntImm, String, ...) to plain Python."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "value"):  # IntImm / FloatImm
        return value.value
    try:
        return [attr_to_python(item) for item in value]
    except TypeError:
        return str(value)
