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
from suite.errors import UserError
from suite.history.driver import REPO_ROOT
from suite.reporting import results as res

DEFAULT_THRESHOLDS = REPO_ROOT / "reports" / "thresholds.toml"
ACCURACY_DTYPES = ("float16", "float32")
ACCURACY_METRICS = ("ulp_mean", "ulp_p99", "ulp_max", "scaled_error")


class ThresholdsError(UserError):
    pass


_SCHEMA = {
    "latency": {"max_ratio": float, "baseline": str},
    "accuracy": {dtype: {metric: float for metric in ACCURACY_METRICS} for dtype in ACCURACY_DTYPES},
    "bound": {"max_fraction": float, "max_nonfinite": float},
    "divergence": {"max_ulp_distance": float, "dtypes": list, "workloads": list, "targets": list,
                   "orders": list, "bound_targets": list, "required": bool},
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
    """Combinations the ULP-distance rule compares at ``commit`` (tuned vs default on Hexagon)."""
    div = thresholds["divergence"]
    return [s for s in history.series()
            if s.dtype in div["dtypes"] and match(s.workload, div["workloads"])
            and match(s.target, div["targets"]) and s.order in div["orders"]
            and res.finite(history.value("max_ulp_distance", s, commit))]


def find_marks(history: res.History, thresholds: dict) -> list[dict]:
    """Every (commit, combination) where the tuned fp16 conv2d diverges (see thresholds.toml)."""
    div, bound = thresholds["divergence"], thresholds["bound"]
    marks = []
    for commit in history.commits:
        for s in history.series():
            if s.dtype not in div["dtypes"] or not match(s.workload, div["workloads"]):
                continue
            base = {"commit": commit.hash, "label": commit.label, **s.as_dict()}
            distance = history.value("max_ulp_distance", s, commit.hash)
            if (match(s.target, div["targets"]) and s.order in div["orders"] and res.finite(distance)
                    and distance > div["max_ulp_distance"]):
                marks.append({**base, "rule": f"{s.order} vs default", "metric": "max_ulp_distance",
                              "value": distance, "threshold": div["max_ulp_distance"]})
            fraction = history.value("bound_fraction", s, commit.hash)
            if match(s.target, div["bound_targets"]) and res.finite(fraction) and fraction > bound["max_fraction"]:
                marks.append({**base, "rule": "rounding bound", "metric": "bound_fraction",
                              "value": fraction, "threshold": bound["max_fraction"]})
    return marks


def checked_commits(history: res.History, thresholds: dict) -> list[str]:
    """Commits with any value the marking rules look at."""
    div = thresholds["divergence"]
    checked = []
    for commit in history.commits:
        for s in history.series():
            if s.dtype in div["dtypes"] and match(s.workload, div["workloads"]) and (
                    res.finite(history.value("bound_fraction", s, commit.hash))
                    or res.finite(history.value("max_ulp_distance", s, commit.hash))):
                checked.append(commit.hash)
                break
    return checked
