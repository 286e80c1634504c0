"""The values the triage interpreter (:mod:`suite.triage.interp`) computes with, and the lanes they
range over.

- an integer is an ``int``, an :class:`Affine` over the lane axes (a loop variable that runs as
  lanes, and the indices made of it: strided views, no index arrays), or an int64 array;
- a float is an :class:`FV`: its exact value (float64), its magnitude ``m`` and its roundings ``d``,
  the companions of the rounding bound (see :mod:`suite.triage.interp`);
- a condition is a bool or a bool array over the lanes (:func:`both` combines masks).

:class:`Storage` holds a buffer's elements; :class:`Lanes` the lane axes a statement runs over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from suite.triage import ir


class Unevaluable(ValueError):
    """A program the interpreter cannot evaluate (a free variable, an unknown dtype...)."""


@dataclass(frozen=True)
class Affine:
    """An integer value ``const + sum(coef * lane)`` over lane axes (by axis id)."""

    const: int
    terms: tuple[tuple[int, int], ...]

    def plus(self, other) -> "Affine":
        if isinstance(other, int):
            return Affine(self.const + other, self.terms)
        coefs = dict(self.terms)
        for axis, coef in other.terms:
            coefs[axis] = coefs.get(axis, 0) + coef
        return Affine(self.const + other.const, tuple(sorted((a, c) for a, c in coefs.items() if c)))

    def times(self, k: int) -> "Affine":
        return Affine(self.const * k, tuple((a, c * k) for a, c in self.terms if c * k))


@dataclass
class FV:
    """A float value: its exact value ``v``, magnitude ``m`` (None: |v|, as for inputs and
    products of them) and roundings ``d``; each a scalar or an array over the lanes."""

    v: object
    m: object
    d: object

    def mag(self):
        return np.abs(self.v) if self.m is None else self.m


class Storage:
    """A buffer's elements (flat): values, and for written floats magnitudes and roundings; for
    buffers the program writes, which elements were written. A view's (:meth:`view`) are its
    base's arrays, from its offset on: writes through either are seen through both."""

    def __init__(self, buf: ir.Buf, initial: np.ndarray | None):
        self._shaped(buf)
        self.over = None  #: the base's storage, for a view
        dtype = {"f": np.float64, "i": np.int64, "u": np.int64, "b": np.bool_}[self.kind]
        if initial is not None:  # an input: every element defined, exact
            self.v = np.ascontiguousarray(initial, dtype=dtype).reshape(-1)
            self.m = self.d = self.written = None
        else:
            self.v = np.zeros(buf.size, dtype)
            self.m = np.zeros(buf.size) if self.kind == "f" else None
            self.d = np.zeros(buf.size, np.int32) if self.kind == "f" else None
            self.written = np.zeros(buf.size, np.bool_)

    def _shaped(self, buf: ir.Buf) -> None:
        self.buf, self.kind = buf, ir.kind_of(buf.dtype)
        self.strides = []
        running = 1
        for extent in reversed(buf.shape):
            self.strides.append(running)
            running *= extent
        self.strides.reverse()

    def view(self, buf: ir.Buf) -> Storage:
        """The storage of ``buf``, a view of this storage's buffer (``buf.base``), sharing its arrays."""
        made = Storage.__new__(Storage)
        made._shaped(buf)
        made.over = self
        part = slice(buf.offset, buf.offset + buf.size)
        made.v = self.v[part]
        made.m, made.d, made.written = (None if a is None else a[part] for a in (self.m, self.d, self.written))
        return made


def any_true(x) -> bool:
    return bool(np.any(x))


def scalar(x):
    """A 0-d value as a Python bool; arrays unchanged."""
    return bool(x) if np.ndim(x) == 0 else x


def both(a, b):
    a, b = scalar(a), scalar(b)
    if a is True:
        return b
    if b is True:
        return a
    if a is False or b is False:
        return False
    return np.logical_and(a, b)


class Lanes:
    """The lane axes a statement runs over (``extents``, by axis id; an array over the lanes has
    them in reverse order) and integer values made concrete over them: mixed into
    :class:`suite.triage.interp.Interpreter`."""

    extents: list[int]

    def lane_shape(self) -> tuple[int, ...]:
        return tuple(reversed(self.extents))

    def lanes(self) -> int:
        return math.prod(self.extents)

    def materialize(self, value):
        """An integer value (int, Affine, array) as an int64 array or int."""
        if isinstance(value, Affine):
            out = value.const
            for axis, coef in value.terms:
                out = out + (np.arange(self.extents[axis], dtype=np.int64) * coef).reshape(
                    (self.extents[axis],) + (1,) * axis)
            return out
        return value

    def _affine_range(self, value) -> tuple[int, int]:
        if isinstance(value, int):
            return value, value
        lo = hi = value.const
        for axis, coef in value.terms:
            span = coef * (self.extents[axis] - 1)
            lo, hi = lo + min(0, span), hi + max(0, span)
        return lo, hi
