"""The rules of the report and the gate: the thresholds file, and when a commit is marked.

``reports/thresholds.toml`` holds the documented defaults; a user's file overrides any key of it.
Report and gate both read thresholds and marks from here, so they can never disagree.
"""

from __future__ import annotations

import copy
import fnmatch
import math
import tomllib
from pathlib import Path

from suite import tracked
from suite.core import bounds
from suite.errors import UserError
from suite.asvconf import REPO_ROOT
from suite.reporting import results as res

DEFAULT_THRESHOLDS = REPO_ROOT / "reports" / "thresholds.toml"
ACCURACY_DTYPES = ("float16", "float32")
ACCURACY_METRICS = ("ulp_mean", "ulp_p99", "ulp_max", "scaled_error")


class ThresholdsError(UserError):
    pass


_SCHEMA = {
    "latency": {"max_ratio": float, "alpha": float, "baseline": str},
    "change": {m.name: {"max_ratio": float, "keep_nonzero": bool} for m in tracked.METRICS},
    "accuracy": {dtype: {metric: float for metric in ACCURACY_METRICS} for dtype in ACCURACY_DTYPES},
    "bound": {"max_fraction": float, "max_nonfinite": float, "lambda": float},
    "divergence": {"max_error_ratio": float, "max_bias_shift": float, "min_z": float, "dtypes": list,
                   "workloads": list, "targets": list, "orders": list, "bound_targets": list, "required": bool},
    "regressions": {"threshold": float, "metrics": list},
}


def _check(data: dict, schema: dict, path: Path, prefix: str = "") -> dict:
    checked = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key not in schema:
            valid = ", ".join(f"{prefix}{k}" for k in schema)
            raise ThresholdsError(f"{path}: unknown key {name!r} (valid here: {valid})")
        kind = schema[key]
        if isinstance(kind, dict):
            if not isinstance(value, dict):
                raise ThresholdsError(f"{path}: {name!r} must be a table")
            checked[key] = _check(value, kind, path, f"{name}.")
        elif kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ThresholdsError(f"{path}: {name!r} must be a non-negative number, not {value!r}")
            checked[key] = float(value)
        elif kind is list:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ThresholdsError(f"{path}: {name!r} must be a list of strings, not {value!r}")
            checked[key] = value
        elif not isinstance(value, kind):
            raise ThresholdsError(f"{path}: {name!r} must be a {kind.__name__}, not {value!r}")
        else:
            checked[key] = value
    return checked


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ThresholdsError(f"thresholds file {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ThresholdsError(f"{path}: not a readable TOML file ({err})") from None
    checked = _check(data, _SCHEMA, path)
    unknown = [m for m in checked.get("regressions", {}).get("metrics", []) if m not in tracked.BY_NAME]
    if unknown:
        raise ThresholdsError(f"{path}: unknown metric(s) in regressions.metrics: {', '.join(unknown)} "
                              f"(known: {', '.join(tracked.BY_NAME)})")
    return checked


def _merge(base: dict, extra: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict):
            merged[key] = _merge(merged.get(key, {}), value)
        else:
            merged[key] = value
    return merged


def load_thresholds(path=None) -> dict:
    """The default thresholds, overridden by those in ``path``; each key checked."""
    thresholds = _read_toml(DEFAULT_THRESHOLDS)
    if path is not None:
        thresholds = _merge(thresholds, _read_toml(Path(path)))
    thresholds["source"] = str(Path(path).resolve() if path else DEFAULT_THRESHOLDS)
    return thresholds


# ----------------------------------------------------------------------------- marks


def match(value: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


# ----------------------------------------------------------------------------- marks


def divergence_series(history: res.History, thresholds: dict, commit: str) -> list[res.Series]:
    """Combinations the error-shift rules compare with ``default`` at ``commit``."""
    div = thresholds["divergence"]
    return [s for s in history.series()
            if s.dtype in div["dtypes"] and match(s.workload, div["workloads"])
            and match(s.target, div["targets"]) and s.order in div["orders"]
            and res.finite(history.value("error_ratio", s, commit))]


def find_marks(history: res.History, thresholds: dict) -> list[dict]:
    """Every (commit, combination) whose error changed beyond what a reordering of IEEE sums
    does, or beyond what any unbiased rounding explains (see thresholds.toml, [divergence])."""
    div, bound = thresholds["divergence"], thresholds["bound"]
    marks = []
    for commit in history.commits:
        for s in history.series():
            if s.dtype not in div["dtypes"] or not match(s.workload, div["workloads"]):
                continue
            base = {"commit": commit.hash, "label": commit.label, **s.as_dict()}

            def value(metric):
                return history.value(metric, s, commit.hash)

            if match(s.target, div["targets"]) and s.order in div["orders"]:
                ratio, z = value("error_ratio"), value("error_ratio_z")
                if res.finite(ratio) and res.finite(z) and ratio > div["max_error_ratio"] and z > div["min_z"]:
                    marks.append({**base, "rule": f"error vs float64 grew ({s.order} vs default)",
                                  "metric": "error_ratio", "value": ratio, "threshold": div["max_error_ratio"],
                                  "z": z})
                shift, z = value("bias_shift"), value("bias_shift_z")
                if (res.finite(shift) and res.finite(z) and abs(shift) > div["max_bias_shift"]
                        and z > div["min_z"]):
                    marks.append({**base, "rule": f"error drifted to one side ({s.order} vs default)",
                                  "metric": "bias_shift", "value": shift, "threshold": div["max_bias_shift"],
                                  "z": z})
            fraction = prob_bound_value(history, s, commit.hash, thresholds)
            if match(s.target, div["bound_targets"]) and res.finite(fraction) and fraction > bound["max_fraction"]:
                marks.append({**base, "rule": "beyond what any unbiased rounding explains",
                              "metric": "prob_bound_fraction", "value": fraction,
                              "threshold": bound["max_fraction"], "z": None})
    return marks


def checked_commits(history: res.History, thresholds: dict) -> list[str]:
    """Commits with any value the marking rules look at."""
    div = thresholds["divergence"]
    checked = []
    for commit in history.commits:
        for s in history.series():
            if s.dtype in div["dtypes"] and match(s.workload, div["workloads"]) and (
                    res.finite(history.value("prob_bound_fraction", s, commit.hash))
                    or res.finite(history.value("error_ratio", s, commit.hash))):
                checked.append(commit.hash)
                break
    return checked


# ----------------------------------------------------------------------------- bounds


def prob_bound_value(history: res.History, series: res.Series, commit: str, thresholds: dict) -> float | None:
    """``prob_bound_fraction`` at the thresholds' lambda. asv records it at
    ``bounds.DEFAULT_LAMBDA``; every element of an output shares K, so the fraction scales exactly
    with gamma~_K(default) / gamma~_K(lambda)."""
    value = history.value("prob_bound_fraction", series, commit)
    lam = thresholds["bound"]["lambda"]
    if not res.finite(value) or lam == bounds.DEFAULT_LAMBDA:
        return value
    k = history.value("accumulation_length", series, commit)
    if not res.finite(k):
        return None
    return value * (bounds.gamma_tilde(int(k), series.dtype, bounds.DEFAULT_LAMBDA)
                    / bounds.gamma_tilde(int(k), series.dtype, lam))


def no_rigorous_bound(history: res.History, series: res.Series, commit: str) -> str | None:
    """Why a measured combination has no rigorous bound fraction: derived from K*u >= 1."""
    k = history.value("accumulation_length", series, commit)
    if not res.finite(k) or res.finite(history.value("bound_fraction", series, commit)):
        return None
    if math.isnan(bounds.gamma(int(k), series.dtype)):
        return f"no rigorous bound for K = {int(k)} in {series.dtype}"
    return None
