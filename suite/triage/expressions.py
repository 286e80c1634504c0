"""Expressions evaluated by the triage interpreter (:mod:`suite.triage.interp`): integers exactly,
floats in float64 with their rounding-bound companions (``m``, ``d``: :class:`suite.triage.values.FV`).

Integer semantics are TVM's on llvm (src/target/llvm/codegen_llvm.cc, ``DEFINE_CODEGEN_BINARY_OP``):
int8, int16, uint8 and uint16 arithmetic wraps (plain ``add``/``sub``/``mul``), so an overflow
there is a value, not undefined behaviour; from 32 bits LLVM's ``nsw`` (signed) and ``nuw``
(unsigned) make an overflow poison: undefined behaviour, reported (:mod:`suite.triage.findings`).
TVM's constant folding wraps alike (src/arith/const_fold.h, ``GetFoldResultInt64Repr``). Division and remainder truncate (``Div``,
``Mod``, ``T.truncdiv``: LLVM's ``sdiv``/``srem``); ``floordiv`` and ``floormod`` round towards
minus infinity (the remainder takes the divisor's sign). Math intrinsics are evaluated in float64
as TVM lowers them (:data:`suite.triage.intrinsics.MATH`).
"""

from __future__ import annotations

import math

import numpy as np

from suite.core import bounds
from suite.triage import ir
from suite.triage.findings import Findings
from suite.triage.intrinsics import MATH, MATH_DOMAIN, float_library
from suite.triage.values import FV, Affine, Unevaluable, any_true, both, scalar


class Expressions(Findings):
    """Evaluating an expression where the interpreter is (variables in ``env``, lanes under
    ``mask``; loads by :meth:`load`): mixed into :class:`suite.triage.interp.Interpreter`."""

    gammas: dict
    storing: tuple | None

    def load(self, expr: ir.Load):
        """A buffer's elements where the indices say (:class:`suite.triage.interp.Interpreter`)."""
        raise NotImplementedError

    @staticmethod
    def _bool(value):
        if isinstance(value, FV):
            value = value.v != 0
        return scalar(value)

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
                self.mask = both(saved, cond)
                a = self.eval(expr.a) if any_true(self.mask) else None
                self.mask = both(saved, ~cond)
                b = self.eval(expr.b) if any_true(self.mask) else None
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
            if any_true(zero):
                self._note_value("division_by_zero", zero, f"divides by zero ({_OP_WORDS[op]} of {dtype})")
                b = np.where(zero, 1, b) if not isinstance(b, int) else 1
            if kind == "i":
                overflow = (a == -(1 << (bits - 1))) & (b == -1)
                if any_true(overflow):
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
            if any_true(bad):
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
            if any_true(np.abs(estimate) >= 2.0 ** 62):
                self._note_value("signed_overflow", np.abs(estimate) >= 2.0 ** 63, f"{_OP_WORDS[op]} overflows {dtype}")
            return
        outside = (estimate < 0) | (estimate >= 2.0 ** 64)
        if any_true(outside):
            self._note_value("unsigned_overflow", outside, f"{_OP_WORDS[op]} overflows {dtype} (LLVM's nuw)")
        elif any_true(estimate >= 2.0 ** 62):
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
            if any_true(outside):
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
                self._signed_overflow((values < lo) | (values > hi) if not isinstance(values, int) else True,
                                      values, dtype, op, high if high > hi else low)
            return result
        if bits < 64:
            bad = (result < lo) | (result > hi)
            if any_true(bad):
                self._signed_overflow(bad, result, dtype, op, _first(result, bad))
        return result

    def _signed_overflow(self, bad, values, dtype: str, op: str, first) -> None:
        """An addition, subtraction or multiplication overflowing ``dtype`` (int32): named as the
        accumulator it is where the statement stores it to a buffer of ``dtype``."""
        target = self.storing
        if target is not None and target[0].dtype == dtype == "int32":
            self._note_wrapped_accumulator(bad, values, dtype, f"{_OP_WORDS[op]} overflows {dtype}", target)
        else:
            self._note_value("signed_overflow", bad, f"{_OP_WORDS[op]} overflows {dtype} (a value of {first})")

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
            if any_true(zero):
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
            return float_library(op, a, b if op != "ldexp" else self.materialize(b))
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
            if op not in MATH:
                raise Unevaluable(f"T.{op}")
            math = MATH[op]
            x = np.asarray(x, dtype=np.float64)
            v, slope = math.fn(x)
            if op in MATH_DOMAIN and any_true(MATH_DOMAIN[op](x)):
                self._note_value("division_by_zero", MATH_DOMAIN[op](x), f"T.{op} of a value outside its domain")
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
            if any_true(bad):
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
