"""The undefined behaviour the triage interpreter (:mod:`suite.triage.interp`) finds on the way.

Each :class:`Finding` is the first instance of one kind (and buffer), with the block, the index and
the loop iteration, and how many times it happened: an out-of-bounds read or write, a read of an
element nothing wrote (a block's own buffers and the outputs start unwritten), an integer shift by
a negative amount or the type's width or more, an overflow of a 32- or 64-bit addition,
subtraction or multiplication (LLVM's ``nsw`` for signed, ``nuw`` for unsigned types), an integer
or float division by zero, the most negative integer divided by -1, a float converted to an
integer type it does not fit, an output element the program never writes. An int32 overflow in a
value stored to an int32 buffer (a quantized kernel's accumulator) names that buffer's element:
a wrapped accumulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from suite.triage.values import Affine, Lanes, Storage, any_true, both


@dataclass
class Finding:
    """One kind of undefined behaviour, where it first happened."""

    kind: str
    message: str
    buffer: str | None = None
    index: tuple | None = None
    block: str | None = None
    iteration: dict = field(default_factory=dict)
    count: int = 1

    def to_json(self) -> dict:
        return {"kind": self.kind, "message": self.message, "buffer": self.buffer,
                "index": list(self.index) if self.index is not None else None, "block": self.block,
                "iteration": self.iteration, "count": self.count}


class Findings(Lanes):
    """Noting findings where the interpreter is (``findings`` by kind and buffer; the enclosing
    ``blocks`` and ``loops``, their values in ``env``, the lanes under ``mask``): mixed into
    :class:`suite.triage.interp.Interpreter`."""

    findings: dict[tuple, Finding]
    blocks: list[str]
    loops: list
    env: dict
    mask: object

    def _context(self, lane: tuple | None) -> dict:
        found = {}
        for var in self.loops:
            value = self.env.get(id(var))
            if isinstance(value, int):
                found[var.name] = value
            elif isinstance(value, Affine) and lane is not None:
                n = len(self.extents)
                found[var.name] = value.const + sum(c * lane[n - 1 - a] for a, c in value.terms)
        return found

    def _first_lane(self, bad) -> tuple | None:
        if not self.extents:
            return None
        full = np.broadcast_to(bad, self.lane_shape())
        return tuple(int(i) for i in np.unravel_index(int(np.argmax(full)), full.shape))

    def _note_lanes(self, kind: str, bad, st: Storage, index_arrays) -> None:
        key = (kind, st.buf.name)
        count = int(np.count_nonzero(np.broadcast_to(bad, self.lane_shape()))) if self.extents else 1
        if key in self.findings:
            self.findings[key].count += count
            return
        lane = self._first_lane(bad)
        index = tuple(int(np.broadcast_to(np.asarray(a), self.lane_shape())[lane]) if lane is not None
                      else int(np.asarray(a).reshape(-1)[0]) for a in index_arrays)
        shape = "x".join(map(str, st.buf.shape))
        words = {
            "out_of_bounds_read": f"reads {st.buf.name}{list(index)} out of bounds ({st.buf.name}'s shape is {shape})",
            "out_of_bounds_write": f"writes {st.buf.name}{list(index)} out of bounds ({st.buf.name}'s shape is {shape})",
            "uninitialized_read": f"reads {st.buf.name}{list(index)}, which nothing wrote before",
        }[kind]
        self._note(kind, words, st.buf.name, index, lane=lane, count=count)

    def _note(self, kind: str, message: str, buffer=None, index=None, lane=None, count: int = 1) -> None:
        key = (kind, buffer)
        if key in self.findings:
            self.findings[key].count += count
            return
        block = self.blocks[-1] if self.blocks else None
        iteration = self._context(lane)
        where = f" in block {block!r}" if block else ""
        at = (" at " + ", ".join(f"{k}={v}" for k, v in iteration.items())) if iteration else ""
        self.findings[key] = Finding(kind, f"{message}{where}{at}", buffer,
                                     tuple(int(i) for i in index) if index is not None else None, block, iteration,
                                     count)

    def _note_value(self, kind: str, bad, message: str) -> None:
        """A finding about values (overflow, shift, division) under the lanes ``bad``."""
        live = both(self.mask, bad)
        if live is False or not any_true(live):
            return
        lane = self._first_lane(live) if not isinstance(live, bool) else None
        count = int(np.count_nonzero(np.broadcast_to(live, self.lane_shape()))) if self.extents and not isinstance(live, bool) else 1
        self._note(kind, message, None, None, lane=lane, count=count)

    def _note_wrapped_accumulator(self, bad, values, dtype: str, words: str, target) -> None:
        """A signed overflow of ``values`` (``dtype``, 32 bits or more) stored to ``target`` (the
        buffer, of ``dtype``, and its indices): the finding names the element of that accumulator
        that wraps, its exact value and the two's-complement value it would wrap to."""
        live = both(self.mask, bad)
        if live is False or not any_true(live):
            return
        buf, indices = target
        lane = self._first_lane(live) if not isinstance(live, bool) and self.extents else None
        shape = self.lane_shape()

        def at_lane(value) -> int:
            value = np.asarray(self.materialize(value))
            return int(np.broadcast_to(value, shape)[lane] if lane is not None else value.reshape(-1)[0])

        count = int(np.count_nonzero(np.broadcast_to(live, shape))) if lane is not None else 1
        index, exact = tuple(at_lane(i) for i in indices), at_lane(values)
        bits = int(dtype.removeprefix("int"))
        wrapped = (exact + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        self._note("signed_overflow", f"wraps the {dtype} accumulator {buf.name}{list(index)}: {words} (a value "
                   f"of {exact}, {wrapped} in two's complement; TVM's {dtype} arithmetic is LLVM's nsw, so the "
                   "wrap is undefined, not a value)", buf.name, index, lane=lane, count=count)
