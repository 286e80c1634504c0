"""Accuracy metrics of a float16/float32 output against a float64 reference."""

from __future__ import annotations

import math

import numpy as np

# Integer type with the same width as each supported float, for bit views.
_BITS_AS_INT = {np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32}


def unit_roundoff(dtype) -> float:
    """Unit roundoff u = 2**-p of round-to-nearest in ``dtype``."""
    return float(np.finfo(dtype).eps) / 2


def ulp(r, dtype) -> np.ndarray:
    """Spacing of ``dtype`` at the float64 values ``r``.

    2**(max(floor(log2|r|), emin) - (p - 1)): the gap above |r| among
    ``dtype`` numbers, with zero and subnormals getting the subnormal spacing.
    Non-finite ``r`` gives nan.
    """
    finfo = np.finfo(dtype)
    magnitude = np.abs(np.asarray(r, dtype=np.float64))
    _, exponent = np.frexp(magnitude)  # |r| = f * 2**exponent, f in [0.5, 1)
    # frexp(0) has exponent 0, which would read as 2**-1; zero belongs to emin.
    floor_log2 = np.where(magnitude == 0, finfo.minexp, exponent - 1)
    spacing = np.ldexp(1.0, np.maximum(floor_log2, finfo.minexp) - finfo.nmant)
    return np.where(np.isfinite(magnitude), spacing, np.nan)


def ulp_error(y, r, dtype) -> np.ndarray:
    """Per-element |y - r| in units of the ``dtype`` spacing at ``r``."""
    return _abs_error(y, r) / ulp(r, dtype)


def gamma(k: int, dtype) -> float:
    """Higham's gamma_k = k*u / (1 - k*u); inf once the bound is vacuous."""
    if k < 0:
        raise ValueError(f"accumulation length must be >= 0, got {k}")
    ku = k * unit_roundoff(dtype)
    return math.inf if ku >= 1 else ku / (1 - ku)


def accuracy_metrics(y, r, m, k: int, dtype) -> dict[str, float]:
    """Error statistics of output ``y`` against reference ``r``.

    ``m`` is the magnitude chain (see ``reference.evaluate_magnitude``) and
    ``k`` the accumulation length. Non-finite outputs are kept, so the error
    metrics become inf/nan rather than hiding them.
    """
    y = np.asarray(y)
    r = np.asarray(r, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if not y.shape == r.shape == m.shape:
        raise ValueError(f"shapes differ: y {y.shape}, r {r.shape}, m {m.shape}")
    if y.size == 0:
        raise ValueError("accuracy metrics of an empty output are undefined")

    abs_error = _abs_error(y, r)
    errors_ulp = abs_error / ulp(r, dtype)
    g = gamma(k, dtype)
    bound = np.full_like(m, np.inf) if math.isinf(g) else g * m
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = abs_error / bound
    # An exact element meets any bound, including a zero one (0/0).
    ratio = np.where(abs_error == 0, 0.0, ratio)

    return {
        "ulp_max": float(np.max(errors_ulp)),
        "ulp_mean": float(np.mean(errors_ulp)),
        # "higher" picks an observed value; interpolating would turn inf into nan.
        "ulp_p99": float(np.percentile(errors_ulp, 99, method="higher")),
        # Per-element ULP explodes near zero after cancellation, so also
        # measure the worst error against the spacing at the output's scale.
        "scaled_error": float(np.max(abs_error) / ulp(np.max(np.abs(r)), dtype)),
        "bound_fraction": float(np.max(ratio)),
        "max_abs_error": float(np.max(abs_error)),
        "mean_abs_error": float(np.mean(abs_error)),
        "nonfinite": float(np.count_nonzero(~np.isfinite(y))),
    }


def ulp_distance(a, b) -> np.ndarray:
    """Number of representable values between same-dtype float16/32 arrays.

    -0.0 and +0.0 are 0 apart; np.nextafter neighbours are 1 apart.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        raise ValueError(f"dtypes differ: {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    return np.abs(_ordered_int(a) - _ordered_int(b))


def divergence(a, b) -> dict[str, float]:
    """How far two outputs of one workload (e.g. two schedules) disagree.

    A position where exactly one side is nan counts as infinitely far; nan
    against nan counts as equal.
    """
    a, b = np.asarray(a), np.asarray(b)
    distance = ulp_distance(a, b)
    if distance.size == 0:
        raise ValueError("divergence of empty outputs is undefined")
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    comparable = ~(nan_a | nan_b)
    differs = (comparable & (distance != 0)) | (nan_a != nan_b)
    max_distance = math.inf if np.any(nan_a != nan_b) else float(np.max(distance, where=comparable, initial=0))
    return {
        "differ_fraction": float(np.mean(differs)),
        "max_ulp_distance": max_distance,
    }


def _abs_error(y, r) -> np.ndarray:
    return np.abs(np.asarray(y, dtype=np.float64) - np.asarray(r, dtype=np.float64))


def _ordered_int(x: np.ndarray) -> np.ndarray:
    """Map float bits to int64 so that integer order equals float order."""
    try:
        int_type = _BITS_AS_INT[x.dtype]
    except KeyError:
        raise ValueError(f"ulp distance needs float16 or float32, got {x.dtype}") from None
    bits = x.view(int_type).astype(np.int64)
    # Sign-magnitude to two's complement: negative floats have their
    # magnitude bits counted downwards from zero, so -0.0 maps to 0.
    return np.where(bits < 0, np.iinfo(int_type).min - bits, bits)
