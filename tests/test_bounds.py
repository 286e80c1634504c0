"""Rigorous and probabilistic rounding-error bounds (suite/bounds.py).

The Monte-Carlo tests run real float16 dot products (numpy float16 arithmetic
rounds every product and every partial sum to nearest) and a biased model
(every operation rounded toward +inf), a few hundred trials each, fixed seeds.
"""

import math

import numpy as np
import pytest

from suite.core.bounds import (
    DEFAULT_FALSE_ALARM,
    DEFAULT_LAMBDA,
    K_MAX,
    SWEEP_ELEMENTS,
    bound_fractions,
    failure_probability,
    gamma,
    gamma_tilde,
    lambda_for,
    unit_roundoff,
)

U16 = 2.0**-11
U32 = 2.0**-24
SUITE_KS = (16, 64, 147, 576, 1152, 2048, 2305, 2306, 4608, 4610)


def _round_up_fp16(v):
    """Round exact float64 values to float16 toward +inf."""
    h = v.astype(np.float16)
    below = h.astype(np.float64) < v
    h[below] = np.nextafter(h[below], np.float16(np.inf))
    return h


def _fl_dot_fp16(x, w, mode):
    """Sequential float16 sum over axis 0 of x*w; 'rn' nearest, 'ru' toward +inf."""
    if mode == "rn":
        p = x * w
        s = p[0].copy()
        for i in range(1, x.shape[0]):
            np.add(s, p[i], out=s)
        return s.astype(np.float64)
    # float16 products and sums of two float16 values are exact in float64
    p = _round_up_fp16(x.astype(np.float64) * w.astype(np.float64)).astype(np.float64)
    s = p[0]
    for i in range(1, x.shape[0]):
        s = _round_up_fp16(s + p[i]).astype(np.float64)
    return s


def _ratios(k, trials, data, mode, seed, lam=DEFAULT_LAMBDA):
    """Per-trial |fl(x.w) - x.w| / (gamma~_k(lam) * sum|x w|)."""
    rng = np.random.default_rng(seed)
    if data == "suite":  # the suite's inputs: x ~ U[0,1), w ~ N(0, 1/k)
        x = rng.random((k, trials)).astype(np.float16)
        w = (rng.standard_normal((k, trials)) / math.sqrt(k)).astype(np.float16)
    elif data == "signed":  # x, w ~ U[-1, 1)
        x = rng.uniform(-1, 1, (k, trials)).astype(np.float16)
        w = rng.uniform(-1, 1, (k, trials)).astype(np.float16)
    else:  # "positive": x, w ~ U[0, 1)
        x = rng.random((k, trials)).astype(np.float16)
        w = rng.random((k, trials)).astype(np.float16)
    prod = x.astype(np.float64) * w.astype(np.float64)  # exact
    exact, m = prod.sum(axis=0), np.abs(prod).sum(axis=0)
    return np.abs(_fl_dot_fp16(x, w, mode) - exact) / (gamma_tilde(k, np.float16, lam) * m)


def test_unit_roundoff():
    assert unit_roundoff(np.float16) == U16
    assert unit_roundoff(np.float32) == U32


def test_gamma_is_nan_where_vacuous():
    assert gamma(147, np.float16) == pytest.approx(147 * U16 / (1 - 147 * U16), rel=1e-15)
    assert gamma(147, np.float16) == pytest.approx(0.0773, abs=1e-4)
    assert gamma(0, np.float16) == 0.0
    assert gamma(2047, np.float16) == pytest.approx(2047.0, rel=1e-12)  # finite, useless
    for k in (2048, 2305, 4608, 4610):  # k*u >= 1: no rigorous bound
        assert math.isnan(gamma(k, np.float16))
    assert gamma(4610, np.float32) == pytest.approx(4610 * U32, rel=1e-3)
    with pytest.raises(ValueError):
        gamma(-1, np.float16)


@pytest.mark.parametrize("dtype, u", [(np.float16, U16), (np.float32, U32)])
def test_gamma_tilde_finite_and_about_lam_sqrt_k_u(dtype, u):
    for k in SUITE_KS:
        for lam in (1.0, 3.0, DEFAULT_LAMBDA):
            g = gamma_tilde(k, dtype, lam)
            first_order = lam * math.sqrt(k) * u
            assert math.isfinite(g)
            assert g == math.expm1(first_order + k * u * u / (1 - u))
            # exp(y) - 1 lies between y and y*exp(y), y = first order + k*u**2/(1-u)
            y = first_order + k * u * u / (1 - u)
            assert first_order <= g <= y * math.exp(y)
            # "about lam*sqrt(K)*u": within 18% for float16 up to K=4610, 1e-4 for float32
            assert g / first_order - 1 < (0.19 if dtype == np.float16 else 1e-4)
    assert gamma_tilde(4610, np.float16) == pytest.approx(0.3672, abs=1e-4)  # 9.4*sqrt(4610)*u = 0.3115
    assert gamma_tilde(147, np.float16) == pytest.approx(0.0573, abs=1e-4)  # < gamma_147 = 0.0773
    assert gamma_tilde(4610, np.float32) == pytest.approx(9.4 * math.sqrt(4610) * U32, rel=1e-4)
    assert gamma_tilde(0, np.float16) == 0.0


def test_failure_probability():
    u = U16
    assert failure_probability(4610, 9.4, u) == pytest.approx(2 * 4610 * math.exp(-(9.4**2) * (1 - u) ** 2 / 2))
    assert failure_probability(4610, 9.4, u) == pytest.approx(6.26e-16, rel=1e-2)
    assert failure_probability(4610, 9.4, np.float16) == failure_probability(4610, 9.4, u)
    assert failure_probability(147, 1.0, u) == 1.0  # capped: vacuous for small lambda
    assert failure_probability(4610, 9.4, U32) < failure_probability(4610, 9.4, U16)


def test_lambda_for_gives_the_documented_default():
    lam = lambda_for(DEFAULT_FALSE_ALARM, SWEEP_ELEMENTS, K_MAX, np.float16)
    assert lam == pytest.approx(math.sqrt(2 * math.log(2 * 4610 * 1e9 / 1e-6)) / (1 - U16), rel=1e-14)
    assert lam == pytest.approx(9.350, abs=1e-3)
    assert math.ceil(lam * 10) / 10 == DEFAULT_LAMBDA == 9.4
    # smallest: the union bound holds at lam and fails just below it
    assert SWEEP_ELEMENTS * failure_probability(K_MAX, lam, U16) <= 1e-6
    assert SWEEP_ELEMENTS * failure_probability(K_MAX, lam * (1 - 1e-9), U16) > 1e-6
    # the default covers up to 1.59e9 elements; the bare ResNet-50 sweep needs 9.2
    assert 1.59e9 * failure_probability(K_MAX, DEFAULT_LAMBDA, U16) < 1e-6
    assert lambda_for(1e-6, 8.2e6 * 2 * 5 * 3, K_MAX, np.float16) == pytest.approx(9.20, abs=0.01)
    assert lambda_for(1e-6, 1e9, K_MAX, np.float32) < lam


def test_bound_fractions_vacuous_is_nan_not_zero():
    r = np.array([1.0, -2.0, 0.5])
    y = (r + np.array([1e-3, 0.0, -2e-3])).astype(np.float16)
    m = np.array([10.0, 10.0, 10.0])
    f = bound_fractions(y, r, m, 4610, np.float16)
    assert math.isnan(f["bound_fraction"])
    err = np.abs(y.astype(np.float64) - r).max()
    assert f["prob_bound_fraction"] == pytest.approx(err / (gamma_tilde(4610, np.float16) * 10.0))
    assert f["lambda"] == DEFAULT_LAMBDA
    f147 = bound_fractions(y, r, m, 147, np.float16)
    assert f147["bound_fraction"] == pytest.approx(err / (gamma(147, np.float16) * 10.0))
    exact = bound_fractions(r, r, np.zeros(3), 147, np.float16)
    assert exact["bound_fraction"] == exact["prob_bound_fraction"] == 0.0


@pytest.mark.parametrize("k", [147, 2305, 4608])
@pytest.mark.parametrize("data", ["suite", "signed"])
def test_round_to_nearest_mean_zero_data_within_gamma_tilde(k, data):
    ratio = _ratios(k, 400, data, "rn", seed=k)
    # Needs lam_eff <= 0.4 at K=147, <= 0.06 at K=4608 (REPORT.md): far inside lam = 9.4.
    assert ratio.max() < 0.05
    assert np.all(_ratios(k, 400, data, "rn", seed=k, lam=1.0) < 1)


def test_biased_rounding_exceeds_at_large_k():
    # All-positive data, every op rounded up: error ~ K*u*m/2, lam_eff ~ 44 at K=4608.
    ratio = _ratios(4608, 100, "positive", "ru", seed=1)
    assert ratio.min() > 4
    # Short chains stay inside: K*u/2 < 9.4*sqrt(K)*u for K < ~350.
    assert _ratios(16, 100, "positive", "ru", seed=2).max() < 0.3
    # Round to nearest on the same positive data: inside the bound, but not
    # mean-zero (swamping), so it needs lam ~3 where mean-zero data need 0.05.
    rn = _ratios(4608, 100, "positive", "rn", seed=1)
    assert 0.2 < rn.max() < 0.45


def test_biased_rounding_of_mean_zero_data_is_not_detected():
    # A limitation, kept visible: on the suite's mean-zero inputs the partial
    # sums are ~ m/sqrt(K), so even rounding every op toward +inf stays near
    # lam_eff ~ 1-4 at every K, inside the default bound.
    ratio = _ratios(4608, 100, "suite", "ru", seed=3)
    assert ratio.max() < 1
    assert ratio.max() > 5 * _ratios(4608, 100, "suite", "rn", seed=3).max()


def test_round_to_nearest_equal_positive_terms_can_exceed():
    # Not a bug in the kernel: 4610 float16 ones sum to 2048 (stagnation), a
    # relative error of 0.556 against gamma~ = 0.367. Constant or all-positive
    # test inputs void the mean-zero hypothesis.
    s = np.float16(0)
    for _ in range(K_MAX):
        s = s + np.float16(1)
    assert s == 2048
    fractions = bound_fractions(np.array([s]), np.array([float(K_MAX)]), np.array([float(K_MAX)]), K_MAX, np.float16)
    assert math.isnan(fractions["bound_fraction"])
    assert fractions["prob_bound_fraction"] == pytest.approx(1.51, abs=0.01)


def test_thresholds_lambda_is_the_default_asv_records():
    from suite.reporting import thresholds

    assert thresholds.load().bound.lam == DEFAULT_LAMBDA
