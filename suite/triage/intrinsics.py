"""The math intrinsics of TIR as TVM's llvm lowering computes them, for the triage interpreter
(:mod:`suite.triage.interp`): each evaluated in float64, with the terms of its rounding bound.

LLVM intrinsics and libm calls round once (src/target/llvm/intrin_rule_llvm.cc,
src/target/intrin_rule.cc); an intrinsic TVM legalizes to a formula (tanh, tan, exp10, atanh,
rsqrt, sigmoid) rounds once per operation on the formula's longest path, and where the formula
cancels its errors are of the size of its terms, not of its result (:data:`MATH`). Arguments
outside an intrinsic's domain are :data:`MATH_DOMAIN`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from suite.triage.values import FV


@dataclass(frozen=True)
class Intrinsic:
    """A math intrinsic as TVM's llvm lowering computes it, for the value and its rounding bound:
    ``fn`` gives the exact function and its derivative (the argument's own error, ``m``, carried
    through it), ``roundings`` the roundings of the computation (a libm call or LLVM intrinsic:
    one; a formula TVM legalizes it to: one per operation on the longest path), ``scale`` the
    magnitude those roundings scale with, given (x, f(x)) (default |f(x)|; a formula that
    cancels, such as TVM's tanh, has errors of the size of its terms, not of its result)."""

    fn: Callable
    roundings: int = 1
    scale: Callable | None = None


def float_library(op: str, a: FV, b) -> FV:
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
MATH = {
    # LLVM intrinsics and libm calls: one rounding each (intrin_rule_llvm.cc, intrin_rule.cc)
    "exp": Intrinsic(lambda x: (np.exp(x), np.exp(x))),
    "exp2": Intrinsic(lambda x: (np.exp2(x), math.log(2) * np.exp2(x))),
    "log": Intrinsic(lambda x: (np.log(x), 1 / x)),
    "log2": Intrinsic(lambda x: (np.log2(x), 1 / (x * math.log(2)))),
    "log10": Intrinsic(lambda x: (np.log10(x), 1 / (x * _LN10))),
    "log1p": Intrinsic(lambda x: (np.log1p(x), 1 / (1 + x))),
    "sqrt": Intrinsic(lambda x: (np.sqrt(x), 0.5 / np.sqrt(x))),
    "erf": Intrinsic(_erf),
    "sin": Intrinsic(lambda x: (np.sin(x), np.cos(x))),
    "cos": Intrinsic(lambda x: (np.cos(x), -np.sin(x))),
    "asin": Intrinsic(lambda x: (np.arcsin(x), 1 / np.sqrt(1 - x * x))),
    "acos": Intrinsic(lambda x: (np.arccos(x), -1 / np.sqrt(1 - x * x))),
    "atan": Intrinsic(lambda x: (np.arctan(x), 1 / (1 + x * x))),
    "sinh": Intrinsic(lambda x: (np.sinh(x), np.cosh(x))),
    "cosh": Intrinsic(lambda x: (np.cosh(x), np.sinh(x))),
    "asinh": Intrinsic(lambda x: (np.arcsinh(x), 1 / np.sqrt(x * x + 1))),
    "acosh": Intrinsic(lambda x: (np.arccosh(x), 1 / np.sqrt(x * x - 1))),
    # formulas TVM legalizes to (intrin_rule.cc, intrin_rule_llvm.cc)
    "rsqrt": Intrinsic(lambda x: (1 / np.sqrt(x), -0.5 * x ** -1.5), roundings=2),  # 1 / sqrt(x)
    "sigmoid": Intrinsic(_sigmoid, roundings=3),  # 1 / (1 + exp(-x))
    "tan": Intrinsic(lambda x: (np.tan(x), 1 / np.cos(x) ** 2), roundings=2),  # sin(x) / cos(x)
    "exp10": Intrinsic(lambda x: (np.power(10.0, x), _LN10 * np.power(10.0, x)), roundings=3,  # exp(x * ln10)
                   scale=lambda x, v: np.abs(v) * (1 + np.abs(x) * _LN10)),
    "atanh": Intrinsic(lambda x: (np.arctanh(x), 1 / (1 - x * x)), roundings=3, scale=_atanh_terms),
    # (1 - exp(-2x)) / (1 + exp(-2x)) for x >= 0, its mirror below: errors of the size of 1, however small tanh(x)
    "tanh": Intrinsic(lambda x: (np.tanh(x), 1 - np.tanh(x) ** 2), roundings=3,
                  scale=lambda x, v: np.maximum(np.abs(v), 1.0)),
}
MATH_DOMAIN = {
    "log": lambda x: x <= 0, "log2": lambda x: x <= 0, "log10": lambda x: x <= 0, "log1p": lambda x: x <= -1,
    "sqrt": lambda x: x < 0, "rsqrt": lambda x: x <= 0, "asin": lambda x: np.abs(x) > 1,
    "acos": lambda x: np.abs(x) > 1, "acosh": lambda x: x < 1, "atanh": lambda x: np.abs(x) >= 1,
}
