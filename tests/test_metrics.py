"""Tests of the ULP and error-bound metrics."""

import math

import numpy as np
import pytest
from numpy.testing._private.utils import nulp_diff  # not re-exported by numpy.testing

from suite.core.metrics import (
    accuracy_metrics,
    divergence,
    ulp,
    ulp_distance,
    ulp_error,
)

RNG = np.random.default_rng(99)
DTYPES = [np.float16, np.float32]


def interesting_values(dtype):
    """Normals, powers of two, subnormals, both zeros, both signs."""
    finfo = np.finfo(dtype)
    tiny, smallest = finfo.smallest_normal, finfo.smallest_subnormal
    values = [0.0, -0.0, 1.0, 1.5, 2.0, 3.0, 1000.0, 0.1, tiny, tiny * 3, smallest, smallest * 7, tiny / 2]
    values = np.array(values, dtype=dtype)
    return np.concatenate([values, -values, RNG.standard_normal(50).astype(dtype)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_nextafter_neighbours_are_one_ulp_apart(dtype):
    values = interesting_values(dtype)
    up = np.nextafter(values, dtype(np.inf))
    down = np.nextafter(values, dtype(-np.inf))
    np.testing.assert_array_equal(ulp_distance(values, up), 1)
    np.testing.assert_array_equal(ulp_distance(down, values), 1)
    # The smallest subnormals straddle zero: -s, 0, +s are 1 apart each.
    s = np.array([np.finfo(dtype).smallest_subnormal], dtype=dtype)
    np.testing.assert_array_equal(ulp_distance(-s, s), 2)
    np.testing.assert_array_equal(ulp_distance(np.array([-0.0], dtype), np.array([0.0], dtype)), 0)

    # ulp_error measures the upward neighbour as exactly 1 ULP away from r
    # (ulp is the gap above |r|, so measure away from zero).
    r = np.abs(values).astype(np.float64)
    away = np.nextafter(np.abs(values), dtype(np.inf))
    np.testing.assert_array_equal(ulp_error(away, r, dtype), 1.0)
    np.testing.assert_array_equal(ulp_error(-away, -r, dtype), 1.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ulp_distance_matches_numpy_nulp_diff(dtype):
    finfo = np.finfo(dtype)
    a = (RNG.standard_normal(2000) * 10.0 ** RNG.integers(-3, 3, 2000)).astype(dtype)
    # Nearby pairs keep numpy's result exact: nulp_diff returns its integer
    # difference in ``dtype``, which float16 holds exactly only up to 2048.
    b = (a * (1 + finfo.eps * RNG.integers(-300, 300, 2000))).astype(dtype)
    # Pairs across zero in the subnormal range.
    sub_a = (RNG.integers(-500, 500, 500) * finfo.smallest_subnormal).astype(dtype)
    sub_b = (RNG.integers(-500, 500, 500) * finfo.smallest_subnormal).astype(dtype)
    a, b = np.concatenate([a, sub_a]), np.concatenate([b, sub_b])

    expected = nulp_diff(a, b).reshape(-1)
    assert np.all(expected < 2048)
    np.testing.assert_array_equal(ulp_distance(a, b), expected.astype(np.int64))
    assert np.count_nonzero(expected) > 1000


def test_float16_ulp_distance_equals_rank_difference():
    # Rank every finite float16 value by sorting; equal values share a rank.
    values = np.arange(2**16, dtype=np.uint16).view(np.float16)
    values = values[np.isfinite(values)]
    ranks = np.searchsorted(np.unique(values.astype(np.float64)), values.astype(np.float64))
    i, j = RNG.integers(0, values.size, (2, 5000))
    np.testing.assert_array_equal(ulp_distance(values[i], values[j]), np.abs(ranks[i] - ranks[j]))


def test_ulp_distance_rejects_bad_dtypes():
    with pytest.raises(ValueError, match="differ"):
        ulp_distance(np.zeros(2, np.float16), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="float64"):
        ulp_distance(np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_ulp_agrees_with_numpy_spacing(dtype):
    values = interesting_values(dtype)
    expected = np.spacing(np.abs(values)).astype(np.float64)
    np.testing.assert_array_equal(ulp(values.astype(np.float64), dtype), expected)
    assert ulp(0.0, dtype) == np.finfo(dtype).smallest_subnormal
    assert ulp(1.0, np.float16) == 2.0**-10
    assert ulp(1.0, np.float32) == 2.0**-23


def test_ulp_between_representable_values():
    # 1 < r < 2 has the spacing of 1; r just below 1 has half of it.
    np.testing.assert_array_equal(ulp([1.3, 0.99, -1.7], np.float16), [2.0**-10, 2.0**-11, 2.0**-10])
    assert np.isnan(ulp(np.inf, np.float32))


def test_accuracy_metrics_of_exact_output_are_zero():
    r = RNG.standard_normal((3, 4)).astype(np.float16)
    metrics = accuracy_metrics(r, r.astype(np.float64), np.abs(r), 10, np.float16)
    assert metrics == {
        "ulp_max": 0.0,
        "ulp_mean": 0.0,
        "ulp_p99": 0.0,
        "scaled_error": 0.0,
        "bound_fraction": 0.0,
        "prob_bound_fraction": 0.0,
        "max_abs_error": 0.0,
        "mean_abs_error": 0.0,
        "mean_signed_error": 0.0,
        "nonfinite": 0.0,
    }
    assert all(type(value) is float for value in metrics.values())


def test_accuracy_metrics_hand_made_case():
    dtype = np.float16
    u = 2.0**-11
    r = np.array([1.0, 2.0, 0.0, 4.0])
    y = np.array([1.0 + 2 * 2.0**-10, 2.0, 0.0, 4.0], dtype=dtype)  # 2 ULP off in the first element
    m = np.array([3.0, 5.0, 0.0, 4.0])  # m == 0 with zero error: 0/0 counts as 0
    k = 4
    metrics = accuracy_metrics(y, r, m, k, dtype)

    error = 2 * 2.0**-10
    assert metrics["max_abs_error"] == error
    assert metrics["mean_abs_error"] == error / 4
    assert metrics["ulp_max"] == 2.0
    assert metrics["ulp_mean"] == 0.5
    assert metrics["ulp_p99"] == 2.0
    assert metrics["scaled_error"] == error / 2.0**-8  # spacing at max|r| = 4
    assert metrics["bound_fraction"] == pytest.approx(error / (k * u / (1 - k * u) * 3.0), rel=1e-15)
    # gamma~_4(9.4) = exp(9.4 * 2 * u + 4 u^2 / (1 - u)) - 1
    gamma_tilde = math.expm1(9.4 * 2 * u + 4 * u * u / (1 - u))
    assert metrics["prob_bound_fraction"] == pytest.approx(error / (gamma_tilde * 3.0), rel=1e-12)
    assert metrics["mean_signed_error"] == error / 4
    assert metrics["nonfinite"] == 0.0


def test_bound_fraction_edge_cases():
    dtype = np.float32
    r = np.array([0.0, 1.0])
    y = np.array([2.0**-30, 1.0], dtype=dtype)
    # Nonzero error where the bound is zero cannot be explained: inf.
    assert accuracy_metrics(y, r, np.array([0.0, 1.0]), 3, dtype)["bound_fraction"] == math.inf
    # Where the rigorous bound does not exist (k*u >= 1) its fraction is NaN, never 0 ("perfect");
    # the probabilistic bound still exists there.
    vacuous = accuracy_metrics(y, r, np.array([0.0, 1.0]), 2**24, dtype)
    assert math.isnan(vacuous["bound_fraction"]) and vacuous["prob_bound_fraction"] == math.inf


def test_nonfinite_outputs_are_counted_not_dropped():
    r = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, np.inf, 3.0], dtype=np.float16)
    metrics = accuracy_metrics(y, r, r, 5, np.float16)
    assert metrics["nonfinite"] == 1.0
    assert metrics["ulp_max"] == math.inf
    assert metrics["ulp_p99"] == math.inf
    assert metrics["max_abs_error"] == math.inf
    assert metrics["bound_fraction"] == math.inf

    y_nan = np.array([np.nan, 2.0, 3.0], dtype=np.float32)
    metrics = accuracy_metrics(y_nan, r, r, 5, np.float32)
    assert metrics["nonfinite"] == 1.0
    assert math.isnan(metrics["ulp_max"]) and math.isnan(metrics["mean_abs_error"])


def test_divergence():
    a = np.array([1.0, 0.0, -2.0, 5.0], dtype=np.float16)
    b = np.array([1.0, -0.0, -2.0, 5.0], dtype=np.float16)
    b[3] = np.nextafter(np.nextafter(b[3], np.float16(9)), np.float16(9))
    assert divergence(a, b) == {"differ_fraction": 0.25, "max_ulp_distance": 2.0}
    assert divergence(a, a) == {"differ_fraction": 0.0, "max_ulp_distance": 0.0}

    nan_a = np.array([np.nan, 1.0], dtype=np.float32)
    assert divergence(nan_a, nan_a) == {"differ_fraction": 0.0, "max_ulp_distance": 0.0}
    one_nan = divergence(nan_a, np.array([1.0, 1.0], dtype=np.float32))
    assert one_nan == {"differ_fraction": 0.5, "max_ulp_distance": math.inf}
