"""The triage reference: a TensorIR program evaluated exactly, with numpy, and checked for
undefined behaviour.

Floats are computed in float64 and integers exactly (int64, each result checked against its
dtype's range), whatever dtype the program declares: the program's meaning, not one rounding of
it. Beside each float value the interpreter carries what the rounding-error bound of
:mod:`suite.core.bounds` needs (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
ch. 3): ``m``, the same computation on magnitudes (sum |x_i w_i| for a dot product), and ``d``, the
number of roundings the value went through (its accumulation length K). Inputs and constants
exact in their dtype have ``d = 0``; each rounded operation adds one; adding an exact zero (a
reduction's ``T.init``) rounds nothing, so a K-term dot product ends at ``d = K``, as
``reference.accumulation_length`` counts it. ``max``/``min`` round nothing and pass on the ``m``
and ``d`` of the operand they pick (of both where the two are within rounding error of each
other, since a computed result may pick the other), so a padding sentinel never inflates a bound.

Vectorization. A loop runs as one numpy operation over all its iterations (a *lane* axis) when
nothing one iteration writes is touched by another: every buffer written in its body is written
at one index, that index determines the loop variable (an affine term of it, the rest made of
variables bound outside the loop), and the body reads that buffer at that same index only. Such
a loop can be hoisted inside the loops it encloses, so a conv2d's output loops become lanes and
its reduction loops stay serial (147 numpy steps over 802,816 lanes for the seed conv2d). Other
loops run one iteration at a time. Accesses whose indices are affine in the lanes read and write
strided views of the buffers, without index arrays.

Undefined behaviour found on the way (:class:`Finding`, the first instance of each kind and
buffer, with the block, the index and the loop iteration): an out-of-bounds read or write, a read
of an element nothing wrote (a block's own buffers and the output start unwritten), an integer
shift by a negative amount or the type's width or more, an overflow of a 32- or 64-bit addition,
subtraction or multiplication (LLVM's ``nsw`` for signed, ``nuw`` for unsigned types), an integer
or float division by zero, the most negative integer divided by -1, a float converted to an
integer type it does not fit, an output element the program never writes.

Integer semantics are TVM's on llvm (src/target/llvm/codegen_llvm.cc, ``DEFINE_CODEGEN_BINARY_OP``):
int8, int16, uint8 and uint16 arithmetic wraps (plain ``add``/``sub``/``mul``), so an overflow
there is a value, not undefined behaviour; TVM's constant folding wraps alike
(src/arith/const_fold.h, ``GetFoldResultInt64Repr``). Division and remainder truncate (``Div``,
``Mod``, ``T.truncdiv``: LLVM's ``sdiv``/``srem``); ``floordiv`` and ``floormod`` round towards
minus infinity (the remainder takes the divisor's sign). Math intrinsics are evaluated in float64
as TVM lowers them (``_MATH``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from suite.core import bounds
from suite.triage import ir

#: Most lanes one vectorized statement evaluates at once (float64 temporaries of 16 MiB).
LANE_CAP = 1 << 21


class Unevaluable(ValueError):
    """A program the interpreter cannot evaluate (a free variable, an unknown dtype...)."""


# ----------------------------------------------------------------------------- values


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


@dataclass
class Result:
    """What the interpreter computed: the output (float64, or int64/bool), its magnitude and
    roundings (floats), the accumulation length ``k`` (the most roundings of any output
    element), and the undefined behaviour it found."""

    output: np.ndarray
    magnitude: np.ndarray | None
    roundings: np.ndarray | None
    findings: list[Finding]

    @property
    def k(self) -> int:
        return int(self.roundings.max()) if self.roundings is not None and self.roundings.size else 0


class _Storage:
    """A buffer's elements (flat): values, and for written floats magnitudes and roundings; for
    buffers the program writes, which elements were written."""

    def __init__(self, buf: ir.Buf, initial: np.ndarray | None):
        self.buf, self.kind = buf, ir.kind_of(buf.dtype)
        self.strides = []
        running = 1
        for extent in reversed(buf.shape):
            self.strides.append(running)
            running *= extent
        self.strides.reverse()
        dtype = {"f": np.float64, "i": np.int64, "u": np.int64, "b": np.bool_}[self.kind]
        if initial is not None:  # an input: every element defined, exact
            self.v = np.ascontiguousarray(initial, dtype=dtype).reshape(-1)
            self.m = self.d = self.written = None
        else:
            self.v = np.zeros(buf.size, dtype)
            self.m = np.zeros(buf.size) if self.kind == "f" else None
            self.d = np.zeros(buf.size, np.int32) if self.kind == "f" else None
            self.written = np.zeros(buf.size, np.bool_)


def _any(x) -> bool:
    return bool(np.any(x))


def _scalar(x):
    """A 0-d value as a Python bool; arrays unchanged."""
    return bool(x) if np.ndim(x) == 0 else x


def _and(a, b):
    a, b = _scalar(a), _scalar(b)
    if a is True:
        return b
    if b is True:
        return a
    if a is False or b is False:
        return False
    return np.logical_and(a, b)


# ----------------------------------------------------------------------------- the interpreter


class Interpreter:
    def __init__(self, program: ir.Program, inputs: dict, demand: dict | None = None):
        """``inputs``: arrays by parameter name for every parameter the program does not write.
        ``demand``: {buffer name: flat bool array} of elements whose computation to trace back
        to the inputs they read (see :func:`dependencies`); None for a plain evaluation."""
        self.program = program
        self.storage: dict[int, _Storage] = {}
        for buf in program.params:
            self.storage[id(buf)] = _Storage(buf, inputs.get(buf.name))
        self.env: dict[int, object] = {}
        self.extents: list[int] = []
        self.mask = True
        self.blocks: list[str] = []
        self.loops: list[ir.Var] = []
        self.findings: dict[tuple, Finding] = {}
        self.vector_ok: dict[int, bool] = {}
        self.gammas: dict[str, np.ndarray] = {}
        self.demand = demand
        self.trail: list | None = None  # loads recorded while evaluating one statement (demand mode)
        self.conditions: list = []     # loads of the enclosing conditions (demand mode)

    # -- running

    def run(self) -> Result:
        self.exec(self.program.body)
        out = self.program.written_params()[-1]
        st = self.storage[id(out)]
        unwritten = ~st.written
        if _any(unwritten):
            first = np.unravel_index(int(np.argmax(unwritten)), out.shape)
            self._note("output_not_written", f"never writes {out.name}{list(map(int, first))} "
                       f"({int(unwritten.sum()):,} of {out.size:,} elements)", out.name, first, count=int(unwritten.sum()))
        shape = out.shape
        magnitude = roundings = None
        if st.kind == "f":
            magnitude, roundings = st.m.reshape(shape), st.d.reshape(shape)
        return Result(st.v.reshape(shape), magnitude, roundings, list(self.findings.values()))

    def exec(self, stmt: ir.Stmt) -> None:
        kind = type(stmt)
        if kind is ir.Seq:
            for s in stmt.stmts:
                self.exec(s)
        elif kind is ir.For:
            self._for(stmt)
        elif kind is ir.Block:
            self._block(stmt)
        elif kind is ir.Store:
            self._store(stmt)
        elif kind is ir.If:
            self._if(stmt)
        elif kind is ir.LetStmt:
            self.env[id(stmt.var)] = self.eval(stmt.value)
            self.exec(stmt.body)
            del self.env[id(stmt.var)]
        elif kind is ir.Alloc:
            self.storage[id(stmt.buf)] = _Storage(stmt.buf, None)
            self.exec(stmt.body)
        elif kind is ir.Assert:
            self.exec(stmt.body)
        elif kind is ir.Nop:
            pass
        else:
            raise Unevaluable(f"statement {kind.__name__}")

    # -- lanes

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

    # -- statements

    def _for(self, loop: ir.For) -> None:
        start, extent = self.eval(loop.start), self.eval(loop.extent)
        key = id(loop.var)
        self.loops.append(loop.var)
        try:
            if isinstance(start, int) and isinstance(extent, int):
                if extent <= 0:
                    return
                if extent > 1 and self.lanes() * extent <= LANE_CAP and self._vectorizable(loop):
                    self._vectorized(loop, start, extent)
                    return
                for i in range(start, start + extent):
                    self.env[key] = i
                    self.exec(loop.body)
                return
            # bounds that differ between lanes: run the union, each lane within its own
            start, extent = self.materialize(start), self.materialize(extent)
            stop = np.asarray(start + extent)
            lo, hi = int(np.min(start)), int(np.max(stop))
            saved = self.mask
            for i in range(lo, hi):
                self.mask = _and(saved, (start <= i) & (i < stop))
                if _any(self.mask):
                    self.env[key] = i
                    self.exec(loop.body)
            self.mask = saved
        finally:
            self.loops.pop()
            self.env.pop(key, None)

    def _vectorized(self, loop: ir.For, start: int, extent: int) -> None:
        """``loop`` and the vectorizable loops nested directly in it (constant bounds), as lanes
        at once: their axes are laid out in loop order, so that the lanes of a canonical loop nest
        walk its buffers in memory order (contiguous views) where numpy is fastest."""
        chain, body, lanes = [(loop, start, extent)], loop.body, self.lanes() * extent
        while type(body) is ir.For and type(body.start) is ir.Const and type(body.extent) is ir.Const:
            inner_extent = int(body.extent.value)
            if inner_extent <= 1 or lanes * inner_extent > LANE_CAP or not self._vectorizable(body):
                break
            chain.append((body, int(body.start.value), inner_extent))
            lanes *= inner_extent
            body = body.body
        first = len(self.extents)  # new axes are prepended: the innermost loop gets the lowest id
        self.extents.extend(e for _, _, e in reversed(chain))
        for depth, (member, member_start, _) in enumerate(chain):
            self.env[id(member.var)] = Affine(member_start, ((first + len(chain) - 1 - depth, 1),))
            if member is not loop:
                self.loops.append(member.var)
        try:
            self.exec(body)
        finally:
            del self.extents[first:]
            for member, _, _ in chain[1:]:
                self.loops.pop()
                self.env.pop(id(member.var), None)

    def _block(self, block: ir.Block) -> None:
        values = [self.eval(b) for b in block.bindings]
        saved_mask, saved_conditions = self.mask, len(self.conditions)
        self.blocks.append(block.name)
        try:
            for it, value in zip(block.iters, values):
                self.env[id(it.var)] = value
            if block.predicate is not None:
                self.mask = _and(self.mask, self._condition(block.predicate))
            for buf in block.allocs:
                self.storage[id(buf)] = _Storage(buf, None)
            if block.init is not None:
                first = True
                for it, value in zip(block.iters, values):
                    if it.kind == "R":
                        first = _and(first, self._equal(value, self.eval(it.start)))
                if first is True or _any(first):
                    inner = self.mask
                    self.mask = _and(inner, first)
                    self.exec(block.init)
                    self.mask = inner
            self.exec(block.body)
        finally:
            self.blocks.pop()
            self.mask = saved_mask
            del self.conditions[saved_conditions:]
            for it in block.iters:
                self.env.pop(id(it.var), None)

    def _equal(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return self.materialize(a) == self.materialize(b)

    def _condition(self, expr):
        """A condition's value (bool or bool array); in demand mode its loads stay recorded for
        the statements it guards."""
        if self.demand is None:
            return self._bool(self.eval(expr))
        outer, self.trail = self.trail, []
        try:
            value = self._bool(self.eval(expr))
            self.conditions.extend(self.trail)
        finally:
            self.trail = outer
        return value

    @staticmethod
    def _bool(value):
        if isinstance(value, FV):
            value = value.v != 0
        return _scalar(value)

    def _if(self, stmt: ir.If) -> None:
        saved, saved_conditions = self.mask, len(self.conditions)
        cond = self._condition(stmt.cond)
        try:
            if isinstance(cond, bool):
                if cond:
                    self.exec(stmt.then)
                elif stmt.orelse is not None:
                    self.exec(stmt.orelse)
                return
            self.mask = _and(saved, cond)
            if _any(self.mask):
                self.exec(stmt.then)
            if stmt.orelse is not None:
                self.mask = _and(saved, ~cond)
                if _any(self.mask):
                    self.exec(stmt.orelse)
        finally:
            self.mask = saved
            del self.conditions[saved_conditions:]

    # -- vectorization

    def _vectorizable(self, loop: ir.For) -> bool:
        key = id(loop)
        if key not in self.vector_ok:
            self.vector_ok[key] = vectorizable(loop)
        return self.vector_ok[key]

    # -- memory

    def _indices(self, indices) -> list:
        return [self.eval(i) for i in indices]

    def _view(self, array: np.ndarray, st: _Storage, idx: list) -> np.ndarray:
        """A strided view of ``array`` (flat) over the lanes, for affine in-bounds indices."""
        n = len(self.extents)
        offset = 0
        strides = [0] * n
        for value, stride in zip(idx, st.strides):
            if isinstance(value, int):
                offset += value * stride
            else:
                offset += value.const * stride
                for axis, coef in value.terms:
                    strides[n - 1 - axis] += coef * stride
        itemsize = array.itemsize
        return np.lib.stride_tricks.as_strided(array[offset:], shape=self.lane_shape(),
                                               strides=tuple(s * itemsize for s in strides))

    def _in_bounds(self, st: _Storage, idx: list) -> bool:
        for value, extent in zip(idx, st.buf.shape):
            lo, hi = self._affine_range(value)
            if lo < 0 or hi >= extent:
                return False
        return True

    def _flat(self, st: _Storage, idx: list, write: bool):
        """Flat element numbers of an access over the lanes (an array broadcast to the lanes),
        out-of-bounds lanes (under the mask) reported and clipped; also returns the mask of
        lanes in bounds."""
        arrays = [np.asarray(self.materialize(v), dtype=np.int64) for v in idx]
        outside = False
        for value, extent in zip(arrays, st.buf.shape):
            bad = (value < 0) | (value >= extent)
            if _any(bad):
                outside = bad if outside is False else outside | bad
        inside = True
        if outside is not False:
            live = _and(self.mask, outside)
            if _any(live):
                kind = "out_of_bounds_write" if write else "out_of_bounds_read"
                self._note_lanes(kind, live, st, arrays)
            inside = ~outside
            arrays = [np.clip(v, 0, extent - 1) for v, extent in zip(arrays, st.buf.shape)]
        flat = 0
        for value, stride in zip(arrays, st.strides):
            flat = flat + value * stride
        return np.broadcast_to(flat, self.lane_shape()) if self.extents else np.asarray(flat), inside

    def load(self, expr: ir.Load):
        st = self.storage.get(id(expr.buf))
        if st is None:
            raise Unevaluable(f"buffer {expr.buf.name} is used outside the block that allocates it")
        idx = self._indices(expr.indices)
        if all(isinstance(i, (int, Affine)) for i in idx) and self._in_bounds(st, idx):
            views = [None if a is None else self._view(a, st, idx) for a in (st.v, st.m, st.d, st.written)]
            if self.trail is not None:
                self.trail.append((st, self._flat(st, idx, False)[0], self.mask))
            if views[3] is not None:
                self._check_written(views[3], st, idx, True)
            return self._value(st, *views[:3])
        flat, inside = self._flat(st, idx, False)
        if self.trail is not None:
            self.trail.append((st, flat, _and(self.mask, inside)))
        if st.written is not None:
            self._check_written(st.written[flat], st, idx, inside)
        return self._value(st, st.v[flat], None if st.m is None else st.m[flat], None if st.d is None else st.d[flat])

    def _value(self, st: _Storage, v, m, d):
        if st.kind == "f":
            return FV(v, m, 0 if d is None else d)
        return v

    def _check_written(self, written, st, idx, inside) -> None:
        if self.mask is True and inside is True:
            if written.all():
                return
            bad = ~written
        else:
            bad = _and(_and(self.mask, inside), ~written)
            if bad is False or not _any(bad):
                return
        self._note_lanes("uninitialized_read", bad, st, [self.materialize(v) for v in idx])

    def _store(self, stmt: ir.Store) -> None:
        st = self.storage.get(id(stmt.buf))
        if st is None:
            raise Unevaluable(f"buffer {stmt.buf.name} is written outside the block that allocates it")
        if self.demand is not None:
            self.trail = []
        value = self.eval(stmt.value)
        idx = self._indices(stmt.indices)
        if st.written is None:
            raise Unevaluable(f"{stmt.buf.name} is an input the program also writes")
        if all(isinstance(i, (int, Affine)) for i in idx) and self._in_bounds(st, idx):
            targets = [self._view(a, st, idx) for a in (st.v, st.m, st.d, st.written)
                       if a is not None]
            self._assign(st, targets, value, self.mask)
            if self.demand is not None:
                self._propagate(st, self._flat(st, idx, True)[0], self.mask)
            return
        flat, inside = self._flat(st, idx, True)
        where = _and(self.mask, inside)
        if where is False or not _any(where):
            return
        lanes = np.broadcast_to(where, flat.shape) if where is not True else np.ones(flat.shape, bool)
        positions = flat[lanes]
        parts = self._parts(st, value, flat.shape)
        st.v[positions] = parts[0][lanes]
        if st.kind == "f":
            st.m[positions] = parts[1][lanes]
            st.d[positions] = parts[2][lanes]
        st.written[positions] = True
        if self.demand is not None:
            self._propagate(st, flat, where)

    def _parts(self, st: _Storage, value, shape):
        if st.kind == "f":
            return [np.broadcast_to(np.asarray(p), shape) for p in (value.v, value.mag(), value.d)]
        return [np.broadcast_to(np.asarray(self.materialize(value)), shape)]

    def _assign(self, st: _Storage, targets, value, mask) -> None:
        if st.kind == "f":
            sources = [value.v, value.mag(), value.d, True]
        else:
            sources = [self.materialize(value), True]
        for target, source in zip(targets, sources):
            if mask is True:
                np.copyto(target, source, casting="unsafe")
            else:
                np.copyto(target, source, casting="unsafe", where=np.broadcast_to(mask, target.shape))

    # -- demand mode: which elements of the inputs an output element needs

    def _propagate(self, st: _Storage, flat, where) -> None:
        wanted = self.demand.get(id(st.buf))
        if wanted is None:
            self.trail = None
            return
        lanes = np.broadcast_to(where, np.shape(flat)) if where is not True else np.ones(np.shape(flat), bool)
        hit = lanes & wanted[flat]
        if _any(hit):
            for source, positions, mask in (self.trail or []) + self.conditions:
                live = hit if mask is True else hit & np.broadcast_to(mask, hit.shape)
                chosen = np.broadcast_to(positions, hit.shape)[live]
                self.demand.setdefault(id(source.buf), np.zeros(source.buf.size, bool))[chosen] = True
        self.trail = None

    # -- findings

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

    def _note_lanes(self, kind: str, bad, st: _Storage, index_arrays) -> None:
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
        live = _and(self.mask, bad)
        if live is False or not _any(live):
            return
        lane = self._first_lane(live) if not isinstance(live, bool) else None
        count = int(np.count_nonzero(np.broadcast_to(live, self.lane_shape()))) if self.extents and not isinstance(live, bool) else 1
        self._note(kind, message, None, None, lane=lane, count=count)

    # -- expressions

    def eval(self, expr: ir.Expr):
        kind = type(expr)
        if kind is ir.Const:
            if ir.kind_of(expr.dtype) == "f":
                return FV(expr.value, None, 0 if _representable(expr.value, expr.dtype) else 1)
            return expr.value
        if kind is ir.Var:
            try:
                return self.env[id(expr)]
            except KeyError:
                raise Unevaluable(f"variable {expr.name} has no value") from None
        if kind is ir.Load:
            return self.load(expr)
        if kind is ir.Binary:
            return self._binary(expr)
        if kind is ir.Unary:
            return self._unary(expr)
        if kind is ir.Cast:
            return self._cast(expr)
        if kind is ir.Select:
            return self._select(expr)
        if kind is ir.Let:
            self.env[id(expr.var)] = self.eval(expr.value)
            try:
                return self.eval(expr.body)
            finally:
                del self.env[id(expr.var)]
        raise Unevaluable(f"expression {kind.__name__}")

    def _select(self, expr: ir.Select):
        cond = self._bool(self.eval(expr.cond))
        if isinstance(cond, bool):
            if not expr.lazy:  # T.Select evaluates both sides: the other side's loads are checked too
                self.eval(expr.b if cond else expr.a)
            return self.eval(expr.a if cond else expr.b)
        saved = self.mask
        try:
            if expr.lazy:
                self.mask = _and(saved, cond)
                a = self.eval(expr.a) if _any(self.mask) else None
                self.mask = _and(saved, ~cond)
                b = self.eval(expr.b) if _any(self.mask) else None
            else:
                a, b = self.eval(expr.a), self.eval(expr.b)
        finally:
            self.mask = saved
        if a is None or b is None:
            return b if a is None else a
        if isinstance(a, FV):
            return FV(np.where(cond, a.v, b.v), np.where(cond, a.mag(), b.mag()), np.where(cond, a.d, b.d))
        return np.where(cond, self.materialize(a), self.materialize(b))

    def _binary(self, expr: ir.Binary):
        op = expr.op
        a, b = self.eval(expr.a), self.eval(expr.b)
        if isinstance(a, FV):
            if op in ir.COMPARISONS:
                return _compare(op, a.v, b.v)
            return self._float_binary(op, a, b, expr.dtype)
        if ir.kind_of(expr.a.dtype) == "b":
            a, b = self.materialize(a), self.materialize(b)
            return {"and": np.logical_and, "or": np.logical_or, "eq": np.equal, "ne": np.not_equal}[op](a, b) \
                if not (isinstance(a, bool) and isinstance(b, bool)) else \
                {"and": a and b, "or": a or b, "eq": a == b, "ne": a != b}[op]
        return self._int_binary(op, a, b, expr.a.dtype, expr.dtype)

    def _int_binary(self, op: str, a, b, operand_dtype: str, dtype: str):
        if op in ir.COMPARISONS:
            a, b = self.materialize(a), self.materialize(b)
            return _compare(op, a, b)
        affine = isinstance(a, (int, Affine)) and isinstance(b, (int, Affine))
        if affine and (op in ("add", "sub") or op == "mul" and (isinstance(a, int) or isinstance(b, int))):
            return self._fit(_affine_op(op, a, b), dtype, op)
        a, b = self.materialize(a), self.materialize(b)
        kind, bits = ir.kind_of(dtype), ir.bits_of(dtype)
        if op in ("add", "sub", "mul"):
            result = a + b if op == "add" else a - b if op == "sub" else a * b
            if bits == 64 and not (isinstance(result, int)):  # int64 arithmetic itself may wrap: estimate
                estimate = (np.asarray(a, np.float64) + b if op == "add" else np.asarray(a, np.float64) - b
                            if op == "sub" else np.asarray(a, np.float64) * b)
                self._check_wide(estimate, dtype, op)
            return self._fit(result, dtype, op)
        if op in ("div", "mod", "floordiv", "floormod"):
            zero = b == 0
            if _any(zero):
                self._note_value("division_by_zero", zero, f"divides by zero ({_OP_WORDS[op]} of {dtype})")
                b = np.where(zero, 1, b) if not isinstance(b, int) else 1
            if kind == "i":
                overflow = (a == -(1 << (bits - 1))) & (b == -1)
                if _any(overflow):
                    self._note_value("signed_overflow", overflow, f"{_OP_WORDS[op]} of the most negative {dtype} by -1")
            if op == "floordiv":
                return a // b
            if op == "floormod":
                return a % b
            quotient = _truncdiv(a, b)
            return quotient if op == "div" else a - b * quotient
        if op in ("min", "max"):
            return np.minimum(a, b) if op == "min" else np.maximum(a, b)
        if op in ("shl", "shr"):
            bad = (b < 0) | (b >= bits)
            if _any(bad):
                self._note_value("shift_out_of_range", bad, f"shifts {dtype} by {_first(b, bad)} "
                                 f"({'left' if op == 'shl' else 'right'}; {dtype} has {bits} bits)")
                b = np.where(bad, 0, b) if not isinstance(b, int) else 0
            if op == "shl":
                return _wrap(np.left_shift(a, b) if not (isinstance(a, int) and isinstance(b, int)) else a << b, dtype)
            return np.right_shift(a, b) if not (isinstance(a, int) and isinstance(b, int)) else a >> b
        if op in ("bitand", "bitor", "bitxor"):
            fn = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}[op]
            return _wrap(fn(a, b), dtype)
        raise Unevaluable(f"integer {op}")

    def _check_wide(self, estimate, dtype: str, op: str) -> None:
        """64-bit results, from their float64 estimate (numpy's int64 arithmetic wraps silently)."""
        if ir.kind_of(dtype) == "i":
            if _any(np.abs(estimate) >= 2.0 ** 62):
                self._note_value("signed_overflow", np.abs(estimate) >= 2.0 ** 63, f"{_OP_WORDS[op]} overflows {dtype}")
            return
        outside = (estimate < 0) | (estimate >= 2.0 ** 64)
        if _any(outside):
            self._note_value("unsigned_overflow", outside, f"{_OP_WORDS[op]} overflows {dtype} (LLVM's nuw)")
        elif _any(estimate >= 2.0 ** 62):
            raise Unevaluable(f"{dtype} values of 2^63 or more (the interpreter holds integers in int64)")

    def _fit(self, result, dtype: str, op: str):
        """``result`` of an addition, subtraction or multiplication in ``dtype``, as TVM's llvm
        code generation defines it (src/target/llvm/codegen_llvm.cc, DEFINE_CODEGEN_BINARY_OP):
        below 32 bits LLVM's plain add/sub/mul, which wrap; from 32 bits ``nsw`` (signed) and
        ``nuw`` (unsigned), whose overflow is poison: undefined behaviour, reported."""
        kind, bits = ir.kind_of(dtype), ir.bits_of(dtype)
        if bits < 32:
            return _wrap(self.materialize(result), dtype)
        if kind == "u":
            values = self.materialize(result)
            outside = (values < 0) | (values > (1 << bits) - 1)
            if _any(outside):
                self._note_value("unsigned_overflow", outside if not isinstance(values, int) else True,
                                 f"{_OP_WORDS[op]} overflows {dtype} (a value of {_first(values, outside)}; "
                                 "LLVM's nuw)")
                values = _wrap(values, dtype)
            return values
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if isinstance(result, (int, Affine)):
            low, high = self._affine_range(result)
            if low < lo or high > hi:
                values = self.materialize(result)
                self._note_value("signed_overflow", (values < lo) | (values > hi) if not isinstance(values, int) else True,
                                 f"{_OP_WORDS[op]} overflows {dtype} (a value of {high if high > hi else low})")
            return result
        if bits < 64:
            bad = (result < lo) | (result > hi)
            if _any(bad):
                self._note_value("signed_overflow", bad, f"{_OP_WORDS[op]} overflows {dtype} "
                                 f"(a value of {_first(result, bad)})")
        return result

    # float arithmetic: value, magnitude, roundings

    def _gamma(self, dtype: str, d):
        """gamma~_d(lambda) per element (suite.core.bounds), for telling near-ties apart."""
        table = self.gammas.get(dtype)
        top = int(np.max(d)) if np.size(d) else 0
        if table is None or top >= len(table):
            size = max(64, 2 * top + 1)
            try:
                table = np.array([bounds.gamma_tilde(k, dtype) for k in range(size)])
            except (TypeError, ValueError):
                table = np.array([bounds.gamma_tilde(k, "float32") for k in range(size)])
            self.gammas[dtype] = table
        return table[np.maximum(d, 0)]

    def _float_binary(self, op: str, a: FV, b: FV, dtype: str) -> FV:
        if op in ("add", "sub"):
            v = a.v + b.v if op == "add" else a.v - b.v
            m = a.mag() + b.mag()
            d = np.maximum(a.d, b.d) + 1
            za, zb = _exact_zero(a), _exact_zero(b)
            if za is not False:  # 0 + b is b, exactly
                bv = b.v if op == "add" else -b.v
                v, m, d = np.where(za, bv, v), np.where(za, b.mag(), m), np.where(za, b.d, d)
            if zb is not False:
                v, m, d = np.where(zb, a.v, v), np.where(zb, a.mag(), m), np.where(zb, a.d, d)
            return FV(v, m, d)
        if op == "mul":
            m = None if a.m is None and b.m is None else a.mag() * b.mag()
            return FV(a.v * b.v, m, np.maximum(a.d, b.d) + 1)
        if op == "div":
            zero = b.v == 0
            if _any(zero):
                self._note_value("division_by_zero", zero, f"divides by zero ({dtype})")
                bv = np.where(zero, 1.0, b.v)
            else:
                bv = b.v
            v = a.v / bv
            # b's own error counts where b was rounded; an exact divisor (a mean's count) adds none
            inexact = b.d != 0
            if np.ndim(inexact) == 0 and not inexact:
                m = None if a.m is None else a.mag() / np.abs(bv)
            else:
                m = (a.mag() + np.where(inexact, np.abs(v) * b.mag(), 0.0)) / np.abs(bv)
            return FV(v, m, np.maximum(a.d, b.d) + 1)
        if op in ("min", "max"):
            pick_a = a.v >= b.v if op == "max" else a.v <= b.v
            ma, mb = a.mag(), b.mag()
            tie = np.abs(a.v - b.v) <= self._gamma(dtype, a.d) * ma + self._gamma(dtype, b.d) * mb
            m = np.where(tie, np.maximum(ma, mb), np.where(pick_a, ma, mb))
            d = np.where(tie, np.maximum(a.d, b.d), np.where(pick_a, a.d, b.d))
            return FV(np.where(pick_a, a.v, b.v), m, d)
        if op == "pow":
            with np.errstate(all="ignore"):
                v = np.power(a.v, b.v)
                slope = np.abs(b.v * np.power(a.v, b.v - 1)) * a.mag() + np.abs(v * np.log(np.abs(a.v))) * b.mag()
            return FV(v, slope + np.abs(v), np.maximum(a.d, b.d) + 2)
        if op in ("atan2", "hypot", "copysign", "ldexp"):
            return _float_library(op, a, b if op != "ldexp" else self.materialize(b))
        raise Unevaluable(f"float {op}")

    def _unary(self, expr: ir.Unary):
        op = expr.op
        a = self.eval(expr.a)
        if op == "not":
            return (not a) if isinstance(a, bool) else np.logical_not(a)
        if op == "bitnot":
            return _wrap(np.invert(self.materialize(a)), expr.dtype)
        if op == "neg":
            if isinstance(a, FV):
                return FV(-a.v, a.m, a.d)
            return self._int_binary("sub", 0, a, expr.dtype, expr.dtype)
        if op == "abs":
            if isinstance(a, FV):
                return FV(np.abs(a.v), a.m, a.d)
            return self._fit(np.abs(self.materialize(a)), expr.dtype, "sub")
        if op in ("isnan", "isinf", "isfinite"):
            return getattr(np, op)(a.v)
        with np.errstate(all="ignore"):
            x = a.v
            if op in ("floor", "ceil", "round", "nearbyint", "trunc"):
                fn = {"round": np.rint, "nearbyint": np.rint}.get(op, getattr(np, op, None))
                v = fn(x)
                return FV(v, np.full(np.shape(v), np.nan) if np.ndim(v) else np.nan, a.d)
            if op not in _MATH:
                raise Unevaluable(f"T.{op}")
            math = _MATH[op]
            x = np.asarray(x, dtype=np.float64)
            v, slope = math.fn(x)
            if op in _MATH_DOMAIN and _any(_MATH_DOMAIN[op](x)):
                self._note_value("division_by_zero", _MATH_DOMAIN[op](x), f"T.{op} of a value outside its domain")
            own = np.abs(v) if math.scale is None else math.scale(x, v)
            return FV(v, np.abs(slope) * a.mag() + own, a.d + math.roundings)

    def _cast(self, expr: ir.Cast):
        a = self.eval(expr.a)
        source, target = expr.a.dtype, expr.dtype
        sk, tk = ir.kind_of(source), ir.kind_of(target)
        if sk == "f" and tk == "f":
            narrower = ir.bits_of(target) < ir.bits_of(source) or target.startswith("bfloat") != source.startswith("bfloat")
            return FV(a.v, a.m, a.d + 1 if narrower else a.d)
        if sk == "f":
            if tk == "b":
                return a.v != 0
            v = np.trunc(np.asarray(a.v, dtype=np.float64))
            bits = ir.bits_of(target)
            lo, hi = (0, 2.0 ** bits) if tk == "u" else (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1))
            bad = ~((v >= lo) & (v < hi))
            if _any(bad):
                self._note_value("conversion_overflow", bad, f"converts {_first(a.v, bad)} to {target}")
                v = np.where(bad, 0.0, v)
            out = v.astype(np.int64)
            return int(out) if np.ndim(out) == 0 else out
        if tk == "f":
            values = self.materialize(a)
            v = np.asarray(values, dtype=np.float64) if not isinstance(values, (int, bool)) else float(values)
            mantissa = 2.0 ** (np.finfo(_numpy_float(target)).nmant + 1)
            d = np.where(np.abs(v) > mantissa, 1, 0) if np.ndim(v) else int(abs(v) > mantissa)
            return FV(v, None, d)
        if tk == "b":
            values = self.materialize(a)
            return (values != 0) if not isinstance(values, (int, bool)) else bool(values)
        values = self.materialize(a)
        if sk == "b":
            return np.asarray(values, dtype=np.int64) if not isinstance(values, bool) else int(values)
        if isinstance(a, Affine) and ir.kind_of(target) == "i" and ir.bits_of(target) >= ir.bits_of(source):
            return a
        return _wrap(values, target)


# ----------------------------------------------------------------------------- helpers

def _affine_op(op: str, a, b):
    """``a op b`` for ints and Affine values (``mul``: one of them an int)."""
    if op == "sub":
        op, b = "add", (b.times(-1) if isinstance(b, Affine) else -b)
    if op == "add":
        return a.plus(b) if isinstance(a, Affine) else b.plus(a) if isinstance(b, Affine) else a + b
    return a.times(b) if isinstance(a, Affine) else b.times(a) if isinstance(b, Affine) else a * b


_OP_WORDS = {"add": "an addition", "sub": "a subtraction", "mul": "a multiplication", "div": "a division",
             "mod": "a remainder", "floordiv": "a floor division", "floormod": "a floor remainder"}


def _compare(op: str, a, b):
    return {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}[op](a, b) if not (np.isscalar(a) and np.isscalar(b)) else \
        bool({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op])


def _first(values, bad):
    """The first of ``values`` where ``bad`` (both broadcast together)."""
    values, bad = np.broadcast_arrays(np.asarray(values), np.asarray(bad))
    chosen = values[bad]
    return (chosen[0] if chosen.size else values.reshape(-1)[0]).item()


def _truncdiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) >= 0) == (np.asarray(b) > 0), q, -q)


def _wrap(values, dtype: str):
    """Integer ``values`` reduced to ``dtype``'s width (two's complement; unsigned modulo)."""
    bits, kind = ir.bits_of(dtype), ir.kind_of(dtype)
    if kind == "b":
        return values != 0 if not isinstance(values, bool) else values
    if bits >= 64:
        return values
    modulus = 1 << bits
    if isinstance(values, int):
        values %= modulus
        return values - modulus if kind == "i" and values >= modulus >> 1 else values
    values = np.mod(values, modulus)
    return np.where(values >= modulus >> 1, values - modulus, values) if kind == "i" else values


def _exact_zero(x: FV):
    """Where ``x`` is an exact zero (a constant or input 0, no rounding behind it)."""
    if np.ndim(x.d) == 0:
        if x.d != 0:
            return False
        zero = x.v == 0
        return zero if np.ndim(zero) else (True if zero else False)
    if x.d.min() > 0:  # a reduction's accumulator after its first step: nothing exact left
        return False
    return (x.d == 0) & (x.v == 0)


def _numpy_float(dtype: str):
    if dtype == "bfloat16":
        return np.float32  # the interpreter does not round; only the mantissa width matters here
    return np.dtype(dtype).type


def _representable(value: float, dtype: str) -> bool:
    if not math.isfinite(value):
        return True
    if dtype == "float64":
        return True
    if dtype == "bfloat16":
        bits = np.float32(value).view(np.uint32)
        return float(np.float32(value)) == value and int(bits) & 0xFFFF == 0
    try:
        with np.errstate(over="ignore"):
            return float(np.dtype(dtype).type(value)) == value
    except TypeError:
        return False


@dataclass(frozen=True)
class _Math:
    """A math intrinsic as TVM's llvm lowering computes it, for the value and its rounding bound:
    ``fn`` gives the exact function and its derivative (the argument's own error, ``m``, carried
    through it), ``roundings`` the roundings of the computation (a libm call or LLVM intrinsic:
    one; a formula TVM legalizes it to: one per operation on the longest path), ``scale`` the
    magnitude those roundings scale with, given (x, f(x)) (default |f(x)|; a formula that
    cancels, such as TVM's tanh, has errors of the size of its terms, not of its result)."""

    fn: Callable
    roundings: int = 1
    scale: Callable | None = None


def _float_library(op: str, a: FV, b) -> FV:
    """atan2(y=a, x=b) and hypot (a libm call each: one rounding, the arguments' errors carried
    through the partial derivatives); copysign and ldexp (``b`` an integer), which round nothing."""
    if op == "copysign":
        return FV(np.copysign(a.v, b.v), a.m, a.d)
    if op == "ldexp":
        scale = np.ldexp(1.0, b)
        return FV(a.v * scale, None if a.m is None else a.m * scale, a.d)
    with np.errstate(all="ignore"):
        if op == "atan2":
            v, r2 = np.arctan2(a.v, b.v), a.v * a.v + b.v * b.v
            terms = np.where(r2 > 0, (np.abs(b.v) * a.mag() + np.abs(a.v) * b.mag()) / np.where(r2 > 0, r2, 1), 0.0)
        else:
            v = np.hypot(a.v, b.v)
            terms = np.where(v > 0, (np.abs(a.v) * a.mag() + np.abs(b.v) * b.mag()) / np.where(v > 0, v, 1),
                             a.mag() + b.mag())
    return FV(v, terms + np.abs(v), np.maximum(a.d, b.d) + 1)


def _sigmoid(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return s, s * (1 - s)


def _erf(x):
    from scipy.special import erf

    return erf(x), 2 / math.sqrt(math.pi) * np.exp(-x * x)


def _atanh_terms(x, v):
    """TVM legalizes atanh on llvm to (log(1 + x) - log(1 - x)) * 0.5: each log carries the
    rounding of its argument (1 + |x| in size) divided by that argument, and the subtraction
    cancels (intrin_rule_llvm.cc, tirx.atanh)."""
    return 0.5 * (np.abs(np.log1p(x)) + np.abs(np.log1p(-x)) + (1 + np.abs(x)) / np.abs(1 + x)
                  + (1 + np.abs(x)) / np.abs(1 - x))


_LN10 = math.log(10)
_MATH = {
    # LLVM intrinsics and libm calls: one rounding each (intrin_rule_llvm.cc, intrin_rule.cc)
    "exp": _Math(lambda x: (np.exp(x), np.exp(x))),
    "exp2": _Math(lambda x: (np.exp2(x), math.log(2) * np.exp2(x))),
    "log": _Math(lambda x: (np.log(x), 1 / x)),
    "log2": _Math(lambda x: (np.log2(x), 1 / (x * math.log(2)))),
    "log10": _Math(lambda x: (np.log10(x), 1 / (x * _LN10))),
    "log1p": _Math(lambda x: (np.log1p(x), 1 / (1 + x))),
    "sqrt": _Math(lambda x: (np.sqrt(x), 0.5 / np.sqrt(x))),
    "erf": _Math(_erf),
    "sin": _Math(lambda x: (np.sin(x), np.cos(x))),
    "cos": _Math(lambda x: (np.cos(x), -np.sin(x))),
    "asin": _Math(lambda x: (np.arcsin(x), 1 / np.sqrt(1 - x * x))),
    "acos": _Math(lambda x: (np.arccos(x), -1 / np.sqrt(1 - x * x))),
    "atan": _Math(lambda x: (np.arctan(x), 1 / (1 + x * x))),
    "sinh": _Math(lambda x: (np.sinh(x), np.cosh(x))),
    "cosh": _Math(lambda x: (np.cosh(x), np.sinh(x))),
    "asinh": _Math(lambda x: (np.arcsinh(x), 1 / np.sqrt(x * x + 1))),
    "acosh": _Math(lambda x: (np.arccosh(x), 1 / np.sqrt(x * x - 1))),
    # formulas TVM legalizes to (intrin_rule.cc, intrin_rule_llvm.cc)
    "rsqrt": _Math(lambda x: (1 / np.sqrt(x), -0.5 * x ** -1.5), roundings=2),  # 1 / sqrt(x)
    "sigmoid": _Math(_sigmoid, roundings=3),  # 1 / (1 + exp(-x))
    "tan": _Math(lambda x: (np.tan(x), 1 / np.cos(x) ** 2), roundings=2),  # sin(x) / cos(x)
    "exp10": _Math(lambda x: (np.power(10.0, x), _LN10 * np.power(10.0, x)), roundings=3,  # exp(x * ln10)
                   scale=lambda x, v: np.abs(v) * (1 + np.abs(x) * _LN10)),
    "atanh": _Math(lambda x: (np.arctanh(x), 1 / (1 - x * x)), roundings=3, scale=_atanh_terms),
    # (1 - exp(-2x)) / (1 + exp(-2x)) for x >= 0, its mirror below: errors of the size of 1, however small tanh(x)
    "tanh": _Math(lambda x: (np.tanh(x), 1 - np.tanh(x) ** 2), roundings=3,
                  scale=lambda x, v: np.maximum(np.abs(v), 1.0)),
}
_MATH_DOMAIN = {
    "log": lambda x: x <= 0, "log2": lambda x: x <= 0, "log10": lambda x: x <= 0, "log1p": lambda x: x <= -1,
    "sqrt": lambda x: x < 0, "rsqrt": lambda x: x <= 0, "asin": lambda x: np.abs(x) > 1,
    "acos": lambda x: np.abs(x) > 1, "acosh": lambda x: x < 1, "atanh": lambda x: np.abs(x) >= 1,
}


# ----------------------------------------------------------------------------- vectorizability


def vectorizable(loop: ir.For) -> bool:
    """Whether ``loop``'s iterations may run at once (see the module docstring): its body allocates
    nothing, and each buffer it writes is written at one index that determines the loop variable
    (given the variables bound outside the loop) and read at that index only."""
    body = loop.body
    inner, substitution = set(), {}
    for node in ir.walk(body):
        if isinstance(node, (ir.Alloc,)) or (isinstance(node, ir.Block) and node.allocs):
            return False
        if isinstance(node, ir.For):
            inner.add(id(node.var))
        elif isinstance(node, ir.LetStmt):
            inner.add(id(node.var))
            substitution[id(node.var)] = node.value
        elif isinstance(node, ir.Block):
            for it, binding in zip(node.iters, node.bindings):
                inner.add(id(it.var))
                substitution[id(it.var)] = binding
    stores_at: dict[int, list] = {}
    loads_at: dict[int, list] = {}
    for node in ir.walk(body):
        if isinstance(node, ir.Store):
            stores_at.setdefault(id(node.buf), []).append(tuple(_substitute(i, substitution) for i in node.indices))
        for expr in ir.statement_expressions(node):
            for sub in ir.subexpressions(expr):
                if isinstance(sub, ir.Let):
                    return False
                if isinstance(sub, ir.Load):
                    loads_at.setdefault(id(sub.buf), []).append(
                        tuple(_substitute(i, substitution) for i in sub.indices))
    for buf, indices in stores_at.items():
        first = indices[0]
        if any(not _same_tuple(first, other) for other in indices[1:]):
            return False
        if not any(_determines(component, loop.var, inner) for component in first):
            return False
        if any(not _same_tuple(first, other) for other in loads_at.get(buf, [])):
            return False
    return True


def _substitute(expr: ir.Expr, mapping: dict, depth: int = 0) -> ir.Expr:
    if depth > 64:
        raise Unevaluable("block bindings refer to each other in a cycle")
    if isinstance(expr, ir.Var):
        replacement = mapping.get(id(expr))
        return expr if replacement is None else _substitute(replacement, mapping, depth + 1)
    if isinstance(expr, ir.Binary):
        return ir.Binary(expr.op, _substitute(expr.a, mapping, depth), _substitute(expr.b, mapping, depth), expr.dtype)
    if isinstance(expr, ir.Unary):
        return ir.Unary(expr.op, _substitute(expr.a, mapping, depth), expr.dtype)
    if isinstance(expr, ir.Cast):
        return ir.Cast(expr.dtype, _substitute(expr.a, mapping, depth))
    if isinstance(expr, ir.Select):
        return ir.Select(*(_substitute(e, mapping, depth) for e in (expr.cond, expr.a, expr.b)), expr.dtype, expr.lazy)
    if isinstance(expr, ir.Load):
        return ir.Load(expr.buf, tuple(_substitute(i, mapping, depth) for i in expr.indices))
    return expr


def _same(a: ir.Expr, b: ir.Expr) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.Const):
        return a.value == b.value and a.dtype == b.dtype
    if isinstance(a, ir.Var):
        return False
    if isinstance(a, ir.Binary):
        return a.op == b.op and _same(a.a, b.a) and _same(a.b, b.b)
    if isinstance(a, ir.Unary):
        return a.op == b.op and _same(a.a, b.a)
    if isinstance(a, ir.Cast):
        return a.dtype == b.dtype and _same(a.a, b.a)
    if isinstance(a, ir.Select):
        return a.lazy == b.lazy and _same(a.cond, b.cond) and _same(a.a, b.a) and _same(a.b, b.b)
    if isinstance(a, ir.Load):
        return a.buf is b.buf and _same_tuple(a.indices, b.indices)
    return False


def _same_tuple(a, b) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def _linear(expr: ir.Expr, var: ir.Var):
    """(coefficient of ``var``, ids of the other variables) of an affine integer expression in
    ``var``; None where ``var`` enters otherwise, or a load does."""
    if isinstance(expr, ir.Const):
        return 0, set()
    if isinstance(expr, ir.Var):
        return (1, set()) if expr is var else (0, {id(expr)})
    if isinstance(expr, ir.Cast) and ir.kind_of(expr.dtype) in "iu":
        return _linear(expr.a, var)
    if isinstance(expr, ir.Binary) and expr.op in ("add", "sub"):
        left, right = _linear(expr.a, var), _linear(expr.b, var)
        if left is None or right is None:
            return None
        sign = 1 if expr.op == "add" else -1
        return left[0] + sign * right[0], left[1] | right[1]
    if isinstance(expr, ir.Binary) and expr.op == "mul":
        for const, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(const, ir.Const):
                found = _linear(other, var)
                return None if found is None else (found[0] * int(const.value), found[1])
    names, loads = set(), False
    for sub in ir.subexpressions(expr):
        if sub is var:
            return None
        if isinstance(sub, ir.Var):
            names.add(id(sub))
        loads |= isinstance(sub, ir.Load)
    return None if loads else (0, names)


def _determines(component: ir.Expr, var: ir.Var, inner: set) -> bool:
    found = _linear(component, var)
    return found is not None and found[0] != 0 and not (found[1] & inner)


# ----------------------------------------------------------------------------- entry points


def evaluate(program: ir.Program, inputs: dict) -> Result:
    """Run ``program`` on ``inputs`` (arrays by parameter name, for the parameters it reads
    only): its one output, exactly, with the rounding-bound companions and the undefined
    behaviour found."""
    return Interpreter(program, inputs).run()


def dependencies(program: ir.Program, inputs: dict, output_index: tuple) -> dict:
    """Which input elements the output element ``output_index`` is computed from: {parameter
    name: bool array of its shape}. The program runs forward, each store of a demanded element
    marks every element its value, indices and guarding conditions read as demanded, until a
    run adds nothing (a sequence of loop nests needs one run per nest it passes through)."""
    out = program.written_params()[-1]
    demand = {id(out): np.zeros(out.size, bool)}
    demand[id(out)][int(np.ravel_multi_index(output_index, out.shape))] = True
    while True:
        before = {k: int(v.sum()) for k, v in demand.items()}
        Interpreter(program, inputs, demand).run()
        if {k: int(v.sum()) for k, v in demand.items()} == before:
            break
    return {b.name: demand.get(id(b), np.zeros(b.size, bool)).reshape(b.shape)
            for b in program.params if b is not out}
