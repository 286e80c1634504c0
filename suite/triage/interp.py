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

This module runs the statements (loops, blocks, stores, conditions) and reads and writes the
buffers; the rest is in its own module:

- :mod:`suite.triage.values`: the values (integers as ``int``, :class:`~suite.triage.values.Affine`
  over the lanes or arrays; floats with their companions), buffers' storage, the lanes;
- :mod:`suite.triage.vectorize`: which loops run as lanes, all their iterations at once;
- :mod:`suite.triage.expressions`: expressions, by TVM's integer semantics on llvm;
- :mod:`suite.triage.intrinsics`: the math intrinsics as TVM lowers them, with their bound terms;
- :mod:`suite.triage.findings`: the undefined behaviour found on the way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suite.triage import ir
from suite.triage.expressions import Expressions
from suite.triage.findings import Finding
from suite.triage.values import FV, Affine, Storage, Unevaluable, any_true, both
from suite.triage.vectorize import LANE_CAP, vectorizable


@dataclass
class Exact:
    """One output as the interpreter computed it: its values (float64, or int64/bool), their
    magnitudes and roundings (floats), and its accumulation length ``k`` (the most roundings of
    any of its elements)."""

    buf: ir.Buf
    value: np.ndarray
    magnitude: np.ndarray | None
    roundings: np.ndarray | None

    @property
    def k(self) -> int:
        return int(self.roundings.max()) if self.roundings is not None and self.roundings.size else 0


@dataclass
class Result:
    """What the interpreter computed: every output (the parameters the program writes, in
    parameter order), and the undefined behaviour it found. ``output``, ``magnitude`` and
    ``roundings`` are the last output's (a program's only one, mostly); ``k`` is the most
    roundings of any output element."""

    outputs: list[Exact]
    findings: list[Finding]

    @property
    def output(self) -> np.ndarray:
        return self.outputs[-1].value

    @property
    def magnitude(self) -> np.ndarray | None:
        return self.outputs[-1].magnitude

    @property
    def roundings(self) -> np.ndarray | None:
        return self.outputs[-1].roundings

    @property
    def k(self) -> int:
        return max(o.k for o in self.outputs)


class Interpreter(Expressions):
    """The before program run on its inputs: statements here, expressions
    (:class:`suite.triage.expressions.Expressions`) and findings (:class:`suite.triage.findings.Findings`)
    mixed in."""

    def __init__(self, program: ir.Program, inputs: dict, demand: dict | None = None):
        """``inputs``: arrays by parameter name for every parameter the program does not write.
        ``demand``: {buffer name: flat bool array} of elements whose computation to trace back
        to the inputs they read (see :func:`dependencies`); None for a plain evaluation."""
        self.program = program
        self.storage: dict[int, Storage] = {}
        for buf in program.params:
            self.storage[id(buf)] = Storage(buf, inputs.get(buf.name))
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
        self.storing: tuple | None = None  # (buffer, indices) of the store being evaluated

    # -- running

    def run(self) -> Result:
        self.exec(self.program.body)
        outputs = []
        for out in self.program.written_params():
            st = self.storage[id(out)]
            unwritten = ~st.written
            if any_true(unwritten):
                first = np.unravel_index(int(np.argmax(unwritten)), out.shape)
                self._note("output_not_written", f"never writes {out.name}{list(map(int, first))} "
                           f"({int(unwritten.sum()):,} of {out.size:,} elements)", out.name, first,
                           count=int(unwritten.sum()))
            shape = out.shape
            magnitude = roundings = None
            if st.kind == "f":
                magnitude, roundings = st.m.reshape(shape), st.d.reshape(shape)
            outputs.append(Exact(out, st.v.reshape(shape), magnitude, roundings))
        return Result(outputs, list(self.findings.values()))

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
            self.storage[id(stmt.buf)] = Storage(stmt.buf, None)
            self.exec(stmt.body)
        elif kind is ir.Assert:
            self.exec(stmt.body)
        elif kind is ir.Nop:
            pass
        else:
            raise Unevaluable(f"statement {kind.__name__}")

    # -- statements

    def _for(self, loop: ir.For) -> None:
        start, extent = self.eval(loop.start), self.eval(loop.extent)
        key = id(loop.var)
        self.loops.append(loop.var)
        try:
            if isinstance(start, int) and isinstance(extent, int):
                if extent <= 0:
                    return
                if extent > 1 and self.lanes() * extent <= LANE_CAP and (loop.kind == "lanes" or self._vectorizable(loop)):
                    self._vectorized(loop, start, extent)  # a vector store's lanes: at once, as the instruction
                    return
                if loop.kind == "lanes" and not self._vectorizable(loop):
                    raise Unevaluable(f"a vector store of {extent} lanes inside {self.lanes():,} lanes, more than "
                                      f"{LANE_CAP:,} at once, whose lanes read what others write")
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
                self.mask = both(saved, (start <= i) & (i < stop))
                if any_true(self.mask):
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
                self.mask = both(self.mask, self._condition(block.predicate))
            for buf in block.allocs:
                self.storage[id(buf)] = Storage(buf, None)
            if block.init is not None:
                first = True
                for it, value in zip(block.iters, values):
                    if it.kind == "R":
                        first = both(first, self._equal(value, self.eval(it.start)))
                if first is True or any_true(first):
                    inner = self.mask
                    self.mask = both(inner, first)
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
            self.mask = both(saved, cond)
            if any_true(self.mask):
                self.exec(stmt.then)
            if stmt.orelse is not None:
                self.mask = both(saved, ~cond)
                if any_true(self.mask):
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

    def _view(self, array: np.ndarray, st: Storage, idx: list) -> np.ndarray:
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
        itemsize = array.itemsize  # ndarray over the flat array's memory: as_strided's work, less its checks' cost
        return np.ndarray(self.lane_shape(), array.dtype, array, offset * itemsize,
                          tuple(s * itemsize for s in strides))

    def _in_bounds(self, st: Storage, idx: list) -> bool:
        for value, extent in zip(idx, st.buf.shape):
            lo, hi = self._affine_range(value)
            if lo < 0 or hi >= extent:
                return False
        return True

    def _flat(self, st: Storage, idx: list, write: bool):
        """Flat element numbers of an access over the lanes (an array broadcast to the lanes),
        out-of-bounds lanes (under the mask) reported and clipped; also returns the mask of
        lanes in bounds."""
        arrays = [np.asarray(self.materialize(v), dtype=np.int64) for v in idx]
        outside = False
        for value, extent in zip(arrays, st.buf.shape):
            bad = (value < 0) | (value >= extent)
            if any_true(bad):
                outside = bad if outside is False else outside | bad
        inside = True
        if outside is not False:
            live = both(self.mask, outside)
            if any_true(live):
                kind = "out_of_bounds_write" if write else "out_of_bounds_read"
                self._note_lanes(kind, live, st, arrays)
            inside = ~outside
            arrays = [np.clip(v, 0, extent - 1) for v, extent in zip(arrays, st.buf.shape)]
        flat = 0
        for value, stride in zip(arrays, st.strides):
            flat = flat + value * stride
        return np.broadcast_to(flat, self.lane_shape()) if self.extents else np.asarray(flat), inside

    def _storage(self, buf: ir.Buf) -> Storage | None:
        """The storage of ``buf`` where it is: a view's made (again, after its base's allocation
        is made again) over its base's."""
        st = self.storage.get(id(buf))
        if buf.base is None:
            return st
        base = self.storage.get(id(buf.base))
        if base is None:
            return None
        if st is None or st.over is not base:
            st = self.storage[id(buf)] = base.view(buf)
        return st

    def load(self, expr: ir.Load):
        st = self._storage(expr.buf)
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
            self.trail.append((st, flat, both(self.mask, inside)))
        if st.written is not None:
            self._check_written(st.written[flat], st, idx, inside)
        return self._value(st, st.v[flat], None if st.m is None else st.m[flat], None if st.d is None else st.d[flat])

    def _value(self, st: Storage, v, m, d):
        if st.kind == "f":
            return FV(v, m, 0 if d is None else d)
        return v

    def _check_written(self, written, st, idx, inside) -> None:
        if self.mask is True and inside is True:
            if written.all():
                return
            bad = ~written
        else:
            bad = both(both(self.mask, inside), ~written)
            if bad is False or not any_true(bad):
                return
        self._note_lanes("uninitialized_read", bad, st, [self.materialize(v) for v in idx])

    def _store(self, stmt: ir.Store) -> None:
        st = self._storage(stmt.buf)
        if st is None:
            raise Unevaluable(f"buffer {stmt.buf.name} is written outside the block that allocates it")
        if self.demand is not None:
            self.trail = []
        idx = self._indices(stmt.indices)
        self.storing = (stmt.buf, idx)  # an int32 overflow in the value names this element (an accumulator)
        value = self.eval(stmt.value)
        self.storing = None
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
        where = both(self.mask, inside)
        if where is False or not any_true(where):
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

    def _parts(self, st: Storage, value, shape):
        if st.kind == "f":
            return [np.broadcast_to(np.asarray(p), shape) for p in (value.v, value.mag(), value.d)]
        return [np.broadcast_to(np.asarray(self.materialize(value)), shape)]

    def _assign(self, st: Storage, targets, value, mask) -> None:
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

    def _propagate(self, st: Storage, flat, where) -> None:
        wanted = self.demand.get(id(st.buf.root))  # a view's elements are its base's, from its offset on
        if wanted is None:
            self.trail = None
            return
        lanes = np.broadcast_to(where, np.shape(flat)) if where is not True else np.ones(np.shape(flat), bool)
        hit = lanes & wanted[flat + st.buf.offset]
        if any_true(hit):
            for source, positions, mask in (self.trail or []) + self.conditions:
                live = hit if mask is True else hit & np.broadcast_to(mask, hit.shape)
                chosen = np.broadcast_to(positions, hit.shape)[live] + source.buf.offset
                root = source.buf.root
                self.demand.setdefault(id(root), np.zeros(root.size, bool))[chosen] = True
        self.trail = None


# ----------------------------------------------------------------------------- entry points


def evaluate(program: ir.Program, inputs: dict) -> Result:
    """Run ``program`` on ``inputs`` (arrays by parameter name, for the parameters it reads
    only): its outputs, exactly, with the rounding-bound companions and the undefined
    behaviour found."""
    return Interpreter(program, inputs).run()


def dependencies(program: ir.Program, inputs: dict, output_index: tuple, output: str | None = None) -> dict:
    """Which input elements the element ``output_index`` of the output named ``output`` (default:
    the last) is computed from: {input name: bool array of its shape}. The program runs forward,
    each store of a demanded element marks every element its value, indices and guarding
    conditions read as demanded, until a run adds nothing (a sequence of loop nests needs one run
    per nest it passes through)."""
    written = program.written_params()
    out = written[-1] if output is None else next(b for b in written if b.name == output)
    demand = {id(out): np.zeros(out.size, bool)}
    demand[id(out)][int(np.ravel_multi_index(output_index, out.shape))] = True
    while True:
        before = {k: int(v.sum()) for k, v in demand.items()}
        Interpreter(program, inputs, demand).run()
        if {k: int(v.sum()) for k, v in demand.items()} == before:
            break
    return {b.name: demand.get(id(b), np.zeros(b.size, bool)).reshape(b.shape) for b in program.inputs()}
