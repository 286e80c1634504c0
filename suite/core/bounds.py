"""Rigorous and probabilistic rounding-error bounds for one output element.

An output element of a kernel is a chain of K rounded operations applied to
its terms (conv2d: kh*kw*cin products and their sum, then the bias add and a
residual add; dense: 2048 products and sum; see
``reference.accumulation_length``). With ``m`` the same chain evaluated on
|inputs| (sum |x_i w_i| + |bias| + ...), the computed y and the exact r obey

* rigorously (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
  Lemma 3.1 and section 3.1):  |y - r| <= gamma_K * m,
  gamma_K = K*u / (1 - K*u), valid only while K*u < 1;
* probabilistically (Higham & Mary, "A new approach to probabilistic rounding
  error analysis", SIAM J. Sci. Comput. 41(5):A2815-A2835, 2019, Theorem 2.4
  for a product of K factors (1 + delta_i) and Theorem 3.1 for inner
  products):  |y - r| <= gamma~_K(lam) * m with
  gamma~_K(lam) = exp(lam*sqrt(K)*u + K*u**2/(1-u)) - 1  (~ lam*sqrt(K)*u),
  holding with probability at least 1 - K * 2*exp(-lam**2*(1-u)**2/2)
  when the rounding errors delta_i are independent with mean zero.

u is the unit roundoff of round-to-nearest: 2**-11 (float16), 2**-24 (float32), 2**-8
(bfloat16).

Where the constants come from (the paper was not at hand; this is the proof
re-derived and the statement cross-checked with two public restatements):
for one term, log(1 + theta) = sum_i log(1 + delta_i); each summand lies in
[log(1-u), log(1+u)], an interval of width <= 2u/(1-u), and has
|E log(1 + delta_i)| <= u**2/(1-u) since E delta_i = 0. Hoeffding's inequality
with t = lam*sqrt(K)*u gives P(|sum - E sum| >= t) <= 2 exp(-2 t**2 / (K (2u/(1-u))**2))
= 2 exp(-lam**2 (1-u)**2 / 2), hence |theta| <= gamma~_K(lam) outside that
event. The inner product needs this for each of its (at most K) terms; a union
bound gives the factor K in the failure probability. The bound holds for any
summation order (tiling, split or vectorized accumulators, FMA) because no term
passes through more than K roundings.

Monte-Carlo check (2026-11, numpy float16 with every product and partial sum
rounded, sequential summation, 5e4-1e5 trials per K; ``tests/test_bounds.py``
repeats a small version of it): lam_eff = |y - r| / (sqrt(K) u m) is the lambda a
trial needed, "of bound" is max |y - r| / (gamma~_K(9.4) m).

* x ~ U[0,1), w ~ N(0, 1/K) (the suite's inputs), K = 16 ... 4608, 5e4-1e5
  trials per K, also with the bias and residual adds: max lam_eff 0.86 (K=16)
  falling to 0.053 (K=4608), i.e. 0.09 to 0.005 of the default bound; no trial
  exceeds lam = 1. x, w ~ U[-1,1): the same. float32, K up to 65536: <= 0.15.
* The theorem's own model (delta_i iid U[-u,u]): P(|theta| > gamma~(lam)) is
  6.5e-4 at lam = 2 against the bound 0.27 - the constants hold, loosely.
* x, w ~ U[0,1) (all positive): round-to-nearest is *not* mean-zero here
  (addends below half an ulp of the growing sum are swamped; mean signed
  error -0.039*K*u*m at K=4608) and lam_eff grows with K: max 1.2 for
  K <= 576, 1.9 at 2048, 3.3 at 4608 (0.30 of the default bound); at K=16384
  every trial needs lam ~ 8, where the theorem promises a failure rate of
  4e-10. Equal positive terms are worse: 4610 ones sum to 2048 in float16,
  1.5x the default bound from a correctly rounded kernel. The bound is for
  random mean-zero-weight inputs only.
* Biased rounding: every op toward +inf on all-positive data exceeds the
  default bound from K ~ 500 (1.2x at 576, 2.8x at 2048, 9.1x at 4608);
  toward zero, 1.2x at K >= 2048. On the suite's mean-zero inputs the partial
  sums are ~ m / sqrt(K), and biased rounding stays inside (<= 0.45 of the
  bound for K <= 4608); it shows only at K = 16384 (3.7x). The bound cannot
  detect biased accumulation with the suite's inputs at ResNet-50 sizes.

``DEFAULT_LAMBDA`` = 9.4 keeps the probability of a false alarm anywhere in a
whole sweep below 1e-6: ``lambda_for(1e-6, SWEEP_ELEMENTS, K_MAX, float16)``
= 9.350 with SWEEP_ELEMENTS = 1e9 output elements (ResNet-50 at batch 1: 31
fused workloads + the seed conv2d = 8.2e6 output elements per dtype, order
and target; x 2 dtypes x 5 loop orders x 3 targets = 2.4e8, x4 margin) and
K_MAX = 4608 + 2. It covers any sweep of up to 1.59e9 elements.

:class:`Bound` judges a whole output (:class:`Expected`: exact value, m, K) against the bound, its
lambda and limit given as numbers: ``tvm-suite triage``'s verdicts (``suite.triage.verdict``) and
tuning's check of every candidate (``suite.core.output_check.OutputCheck``) use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from suite import floats

#: Probability of one or more false alarms in a whole sweep that the default keeps below.
DEFAULT_FALSE_ALARM = 1e-6
#: Output elements of a sweep, bounded generously (see the module docstring).
SWEEP_ELEMENTS = 1e9
#: Longest accumulation in ResNet-50: 3x3x512 conv2d plus bias and residual adds.
K_MAX = 4608 + 2
#: lambda_for(DEFAULT_FALSE_ALARM, SWEEP_ELEMENTS, K_MAX, float16) = 9.350, rounded up.
DEFAULT_LAMBDA = 9.4


def unit_roundoff(dtype) -> float:
    """Unit roundoff u = 2**-p of round-to-nearest: 2**-11 float16, 2**-24 float32, 2**-8 bfloat16."""
    return floats.float_format(dtype).unit_roundoff


def _u(dtype_or_u) -> float:
    if isinstance(dtype_or_u, (float, int)) and not isinstance(dtype_or_u, bool):
        u = float(dtype_or_u)
        if not 0 < u < 1:
            raise ValueError(f"unit roundoff must be in (0, 1), got {u}")
        return u
    return unit_roundoff(dtype_or_u)


def _check_k(k) -> int:
    if k < 0 or int(k) != k:
        raise ValueError(f"accumulation length must be an integer >= 0, got {k}")
    return int(k)


def gamma(k: int, dtype) -> float:
    """Rigorous gamma_k = k*u / (1 - k*u) (Higham 2002, Lemma 3.1).

    ``math.nan`` once k*u >= 1 (float16: k >= 2048): no rigorous bound of this
    form exists there, and nan keeps a ratio against it from reading as 0.
    """
    k = _check_k(k)
    ku = k * unit_roundoff(dtype)
    return math.nan if ku >= 1 else ku / (1 - ku)


def gamma_tilde(k: int, dtype, lam: float = DEFAULT_LAMBDA) -> float:
    """Probabilistic gamma~_k(lam) = exp(lam*sqrt(k)*u + k*u**2/(1-u)) - 1.

    Higham & Mary 2019, Theorem 2.4: |theta_k| <= gamma~_k(lam) for a product
    of k factors (1 + delta_i), |delta_i| <= u independent of mean zero, with
    probability >= 1 - 2 exp(-lam**2 (1-u)**2 / 2). gamma~_k(lam) >=
    lam*sqrt(k)*u and equals it to first order. ``math.nan`` where it would exceed
    the largest float (lam*sqrt(k)*u > 709): never an OverflowError, and never an
    infinite bound, against which every error would read as 0.
    """
    k = _check_k(k)
    if not lam >= 0:  # a nan lambda too
        raise ValueError(f"lambda must be >= 0, got {lam}")
    u = unit_roundoff(dtype)
    try:
        value = math.expm1(lam * math.sqrt(k) * u + k * u * u / (1 - u))
    except OverflowError:  # beyond the largest float: no bound of this form, as with gamma's nan
        return math.nan
    return value if math.isfinite(value) else math.nan


def vacuous_lambda(k: int, dtype) -> float:
    """The lambda at which gamma~_k(lambda) = 1: the bound gamma~_k * m reaches m, the magnitude of
    the value itself, and admits an error as large as the value (no correct digit). Solves
    lambda*sqrt(k)*u + k*u**2/(1-u) = ln 2. ``reports/thresholds.toml`` [bound] keeps lambda (times
    its limit) below it at the suite's longest accumulation in float16 (``MAX_LAMBDA``)."""
    k = _check_k(k)
    if k == 0:
        return math.inf
    u = unit_roundoff(dtype)
    return (math.log(2) - k * u * u / (1 - u)) / (math.sqrt(k) * u)


#: vacuous_lambda(K_MAX, float16) = 20.87: [bound] lambda must stay below it.
MAX_LAMBDA = vacuous_lambda(K_MAX, "float16")


def failure_probability(k: int, lam: float, u) -> float:
    """Bound on P(|y - r| > gamma~_k(lam) * m) for one output element.

    min(1, k * 2 exp(-lam**2 (1-u)**2 / 2)): Higham & Mary 2019, Theorem 3.1
    (inner product of length k: Q(lam, k) = 1 - k (1 - P(lam))). ``u`` is the
    unit roundoff or a dtype. Only meaningful where rounding errors are
    mean-zero; see the module docstring for when they are not.
    """
    k = _check_k(k)
    u = _u(u)
    return min(1.0, k * 2.0 * math.exp(-lam * lam * (1 - u) ** 2 / 2))


def lambda_for(false_alarm: float, elements_total: float, k_max: int, dtype) -> float:
    """Smallest lam with elements_total * failure_probability(k_max, lam, u) <= false_alarm.

    Union bound over every output element of a sweep (no independence needed;
    elements with k < k_max fail less often):
    lam = sqrt(2 ln(2 k_max elements_total / false_alarm)) / (1 - u).
    """
    if not 0 < false_alarm < 1:
        raise ValueError(f"false alarm probability must be in (0, 1), got {false_alarm}")
    if elements_total < 1:
        raise ValueError(f"elements_total must be >= 1, got {elements_total}")
    k_max = _check_k(k_max)
    if k_max == 0:
        return 0.0
    u = unit_roundoff(dtype)
    log_ratio = math.log(2.0 * k_max * elements_total / false_alarm)
    lam = math.sqrt(2.0 * log_ratio) / (1 - u)
    # Guard the last bit: the closed form must satisfy the inequality it solves.
    while elements_total * failure_probability(k_max, lam, u) > false_alarm:
        lam = math.nextafter(lam, math.inf)
    return lam


def bound_fractions(y, r, m, k: int, dtype, lam: float = DEFAULT_LAMBDA) -> dict[str, float]:
    """max |y - r| / (gamma_k m) and max |y - r| / (gamma~_k(lam) m) over the elements.

    ``bound_fraction`` is nan where gamma_k is vacuous (k*u >= 1), never 0.
    ``prob_bound_fraction`` > 1 flags the output (false-alarm probability per
    element <= ``failure_probability(k, lam, u)`` if rounding is mean-zero).
    An exact element counts 0, even against a zero bound.
    """
    y = np.asarray(y)
    r = np.asarray(r, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if not y.shape == r.shape == m.shape:
        raise ValueError(f"shapes differ: y {y.shape}, r {r.shape}, m {m.shape}")
    if y.size == 0:
        raise ValueError("bound fractions of an empty output are undefined")
    with np.errstate(invalid="ignore", over="ignore"):
        abs_error = np.abs(y.astype(np.float64) - r)

    def fraction(g: float) -> float:
        if math.isnan(g):
            return math.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = abs_error / (g * m)
        return float(np.max(np.where(abs_error == 0, 0.0, ratio)))

    return {
        "bound_fraction": fraction(gamma(k, dtype)),
        "prob_bound_fraction": fraction(gamma_tilde(k, dtype, lam)),
        "lambda": float(lam),
        "element_failure_probability": failure_probability(k, lam, unit_roundoff(dtype)),
    }


@dataclass
class Expected:
    """The exact output (float64, or int64/bool), its magnitude ``m`` and accumulation length
    ``k`` (floats), and the output's name and dtype."""

    value: np.ndarray
    magnitude: np.ndarray | None
    k: int
    name: str
    dtype: str


class Bound:
    """The rounding bound of one output: per element ``limit`` x gamma~_K(lam) * m, beyond which no
    summation order explains an error. ``lam`` and ``limit`` are plain numbers (``reports/thresholds.toml``
    [bound] ``lambda`` and ``max_fraction``, which the caller loaded)."""

    def __init__(self, expected: Expected, lam: float, limit: float):
        self.expected = expected
        self.lam = float(lam)
        self.limit = float(limit)
        self.gamma = gamma_tilde(expected.k, expected.dtype, self.lam)

    def fraction(self, y) -> float:
        e = self.expected
        return bound_fractions(y, e.value, e.magnitude, e.k, e.dtype, self.lam)["prob_bound_fraction"]

    def beyond(self, y) -> np.ndarray:
        """Elements beyond the bound. An element is within only where that is shown: a finite ``y``
        whose error from a finite exact value compares as at most the bound; ``y`` the exact value
        itself (its inf, or a nan where it is nan); a finite ``y`` where the exact value is finite
        but has no bound (after a floor or round). A nan in the comparison (the error, the bound)
        never passes as within."""
        e = self.expected
        with np.errstate(invalid="ignore", over="ignore"):
            y = np.asarray(y).astype(np.float64)
            finite = np.isfinite(y) & np.isfinite(e.value)
            within = finite & (np.abs(y - e.value) <= self.limit * self.gamma * e.magnitude)
            exact = (y == e.value) | (np.isnan(y) & np.isnan(e.value))
            unbounded = self._unbounded() & np.isfinite(y)
            return ~(within | exact | unbounded)

    def _unbounded(self) -> np.ndarray:
        return np.isnan(self.expected.magnitude) & np.isfinite(self.expected.value)

    def unbounded(self) -> int:
        """Output elements without a rounding bound (computed through floor, ceil, round...)."""
        return int(np.count_nonzero(self._unbounded()))

    def of(self, index) -> float:
        return float(self.limit * self.gamma * self.expected.magnitude[index])
