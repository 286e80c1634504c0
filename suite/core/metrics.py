"""Accuracy metrics of a float16/float32/bfloat16 output against a float64 reference."""

from __future__ import annotations

import math

import numpy as np

from suite import floats
from suite.core import bounds

# Integer type with the same width as each supported float, for bit views.
_INT_OF_BITS = {16: np.int16, 32: np.int32}


def ulp(r, dtype) -> np.ndarray:
    """Spacing of ``dtype`` at the float64 values ``r``.

    2**(max(floor(log2|r|), emin) - (p - 1)): the gap above |r| among
    ``dtype`` numbers, with zero and subnormals getting the subnormal spacing.
    Non-finite ``r`` gives nan.
    """
    finfo = floats.float_format(dtype)
    magnitude = np.abs(np.asarray(r, dtype=np.float64))
    _, exponent = np.frexp(magnitude)  # |r| = f * 2**exponent, f in [0.5, 1)
    # frexp(0) has exponent 0, which would read as 2**-1; zero belongs to emin.
    floor_log2 = np.where(magnitude == 0, finfo.minexp, exponent - 1)
    spacing = np.ldexp(1.0, np.maximum(floor_log2, finfo.minexp) - finfo.nmant)
    return np.where(np.isfinite(magnitude), spacing, np.nan)


def ulp_error(y, r, dtype) -> np.ndarray:
    """Per-element |y - r| in units of the ``dtype`` spacing at ``r``."""
    return _abs_error(y, r) / ulp(r, dtype)


def accuracy_metrics(y, r, m, k: int, dtype, lam: float = bounds.DEFAULT_LAMBDA) -> dict[str, float]:
    """Error statistics of output ``y`` against reference ``r``.

    ``m`` is the magnitude chain (see ``reference.evaluate_magnitude``) and ``k`` the accumulation
    length. ``bound_fraction`` uses the rigorous gamma_k and is NaN where that bound does not
    exist (k*u >= 1); ``prob_bound_fraction`` uses the probabilistic gamma~_k(lam), finite for
    every k (see :mod:`suite.core.bounds`). Non-finite outputs are kept, so the error metrics
    become inf/nan rather than hiding them.
    """
    y = np.asarray(y)
    r = np.asarray(r, dtype=np.float64)
    if y.shape != r.shape:
        raise ValueError(f"shapes differ: y {y.shape}, r {r.shape}")
    if y.size == 0:
        raise ValueError("accuracy metrics of an empty output are undefined")
    fractions = bounds.bound_fractions(y, r, m, k, dtype, lam)
    with np.errstate(invalid="ignore", over="ignore"):
        signed_error = np.asarray(y, dtype=np.float64) - r
    abs_error = np.abs(signed_error)
    errors_ulp = abs_error / ulp(r, dtype)
    return {
        "ulp_max": float(np.max(errors_ulp)),
        "ulp_mean": float(np.mean(errors_ulp)),
        # "higher" picks an observed value; interpolating would turn inf into nan.
        "ulp_p99": float(np.percentile(errors_ulp, 99, method="higher")),
        # Per-element ULP explodes near zero after cancellation, so also
        # measure the worst error against the spacing at the output's scale.
        "scaled_error": float(np.max(abs_error) / ulp(np.max(np.abs(r)), dtype)),
        "bound_fraction": fractions["bound_fraction"],
        "prob_bound_fraction": fractions["prob_bound_fraction"],
        "max_abs_error": float(np.max(abs_error)),
        "mean_abs_error": float(np.mean(abs_error)),
        "mean_signed_error": float(np.mean(signed_error)),
        "nonfinite": float(np.count_nonzero(~np.isfinite(y))),
    }


def ulp_distance(a, b) -> np.ndarray:
    """Number of representable values between same-dtype float16/32 or bfloat16 arrays.

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


def error_shift(y, y_base, r) -> dict[str, float]:
    """How the error of output ``y`` against the float64 reference ``r`` differs from that of
    ``y_base`` (the same workload, another loop order), over the elements.

    A reordering of IEEE sums moves the errors around but leaves their size and sign balance
    alike; arithmetic that rounds differently (biased, or coarser) changes them. So:

    - ``error_ratio`` = mean|y - r| / mean|y_base - r|, with ``error_ratio_z`` the z-score of
      the paired differences |y - r| - |y_base - r| (one-sided: larger is worse);
    - ``bias_shift`` = (mean(y - r) - mean(y_base - r)) / mean|y_base - r|, the drift of the
      whole output to one side in units of the base's typical error, with ``bias_shift_z`` the
      z-score of the paired differences (y - r) - (y_base - r) = y - y_base.

    z-scores treat the elements as independent samples (elements sharing inputs are not, so
    they overstate significance); the effect sizes carry the rules, the z-scores only keep
    small outputs from being judged on noise.
    """
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # an inf or nan output: NaN figures, said by the caller
        e = np.asarray(y, dtype=np.float64).ravel() - r.ravel()
        e_base = np.asarray(y_base, dtype=np.float64).ravel() - r.ravel()
        scale = float(np.mean(np.abs(e_base)))
        return {
            "error_ratio": _ratio(float(np.mean(np.abs(e))), scale),
            "error_ratio_z": _z(np.abs(e) - np.abs(e_base)),
            "bias_shift": _ratio(float(np.mean(e) - np.mean(e_base)), scale),
            "bias_shift_z": abs(_z(e - e_base)),
        }


def _ratio(value: float, scale: float) -> float:
    if scale == 0:
        return 0.0 if value == 0 else math.copysign(math.inf, value)
    return value / scale


def _z(differences: np.ndarray) -> float:
    """z-score of the mean of paired differences (0 when they are all equal)."""
    n = differences.size
    std = float(np.std(differences))
    mean = float(np.mean(differences))
    if std == 0:
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return mean / (std / math.sqrt(n))


def difference_maps(a, b, layout: str) -> dict[str, np.ndarray]:
    """Where two outputs differ: mean |a - b| per output channel, and over H x W (averaged over
    batch and channels) for 4-d outputs of ``layout`` NHWC or NCHW."""
    diff = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    if diff.ndim != 4:
        return {"channels": diff.reshape(-1, diff.shape[-1]).mean(axis=0)}
    if layout == "NCHW":
        diff = diff.transpose(0, 2, 3, 1)
    return {"channels": diff.mean(axis=(0, 1, 2)), "hw": diff.mean(axis=(0, 3))}


def _abs_error(y, r) -> np.ndarray:
    return np.abs(np.asarray(y, dtype=np.float64) - np.asarray(r, dtype=np.float64))


def _ordered_int(x: np.ndarray) -> np.ndarray:
    """Map float bits to int64 so that integer order equals float order."""
    try:
        int_type = _INT_OF_BITS[floats.float_format(x.dtype).bits]
    except (KeyError, ValueError):
        raise ValueError(f"ulp distance needs float16, float32 or bfloat16, got {x.dtype}") from None
    bits = x.view(int_type).astype(np.int64)
    # Sign-magnitude to two's complement: negative floats have their
    # magnitude bits counted downwards from zero, so -0.0 maps to 0.
    return np.where(bits < 0, np.iinfo(int_type).min - bits, bits)
