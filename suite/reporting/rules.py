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
                   "workloads": list, "targets": list, "orders": list, "bound_targets": list, "required": bool,
                   "worse_factor": float,
                   "accept": [{"workload": str, "dtype": str, "target": str, "order": str, "reason": str}]},
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
        elif isinstance(kind, list):  # an array of tables, every key of each required
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise ThresholdsError(f"{path}: {name!r} must be an array of tables ([[{name}]])")
            checked[key] = []
            for i, table in enumerate(value):
                entry = _check(table, kind[0], path, f"{name}[{i}].")
                lacking = [k for k in kind[0] if not str(entry.get(k, "")).strip()]
                if lacking:
                    raise ThresholdsError(f"{path}: {name}[{i}] needs {', '.join(lacking)} "
                                          f"(each of {', '.join(kind[0])}, not empty)")
                checked[key].append(entry)
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
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ThresholdsError(f"{path}: not a readable TOML file ({str(err).splitlines()[0]})") from None
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


#: Sections every rule needs, each with every key of its schema (the defaults file provides them).
_COMPLETE = ("latency", "bound", "divergence", "regressions")


def load_thresholds(path=None) -> dict:
    """The default thresholds, overridden by those in ``path``; each key checked."""
    thresholds = _read_toml(DEFAULT_THRESHOLDS)
    lacking = [f"{section}.{key}" for section in _COMPLETE for key in _SCHEMA[section]
               if key != "accept" and key not in thresholds.get(section, {})]
    if lacking:
        raise ThresholdsError(f"{DEFAULT_THRESHOLDS}: the defaults lack {', '.join(lacking)} (restore the file)")
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


SHIFT_METRICS = ("error_ratio", "error_ratio_z", "bias_shift", "bias_shift_z")
TWIN_METRICS = tuple(f"twin_{m}" for m in SHIFT_METRICS) + ("twin_prob_bound_fraction",)
#: Why a mark: the IEEE twin (suite.targets.ieee_twin) runs the same program with IEEE rounding.
ARITHMETIC, SCHEDULE, UNATTRIBUTED = "arithmetic", "schedule", "unattributed"


def shift_rules(values: dict, div: dict, prefix: str = "") -> list[str]:
    """The error-shift rules that ``values`` (error_ratio, error_ratio_z, bias_shift, bias_shift_z,
    each under ``prefix``) cross: "error_ratio" and/or "bias_shift"."""
    ratio, ratio_z, shift, shift_z = (values.get(prefix + m) for m in SHIFT_METRICS)
    crossed = []
    if res.finite(ratio) and res.finite(ratio_z) and ratio > div["max_error_ratio"] and ratio_z > div["min_z"]:
        crossed.append("error_ratio")
    if res.finite(shift) and res.finite(shift_z) and abs(shift) > div["max_bias_shift"] and shift_z > div["min_z"]:
        crossed.append("bias_shift")
    return crossed


def cause(metric: str, twin: dict, thresholds: dict) -> str:
    """Why a mark of ``metric`` is there, from the IEEE twin's values (``twin_*``) of the same pair:
    *arithmetic* when the same schedule with IEEE rounding stays inside the rule (qfloat's rounding
    made the difference), *schedule* when the twin crosses it too (the transformation itself
    changed the numbers beyond what a reordering of IEEE sums does), *unattributed* without a twin."""
    if metric == "prob_bound_fraction":
        fraction = twin.get("twin_prob_bound_fraction")
        if not res.finite(fraction):
            return UNATTRIBUTED
        return SCHEDULE if fraction > thresholds["bound"]["max_fraction"] else ARITHMETIC
    if not all(res.finite(twin.get(f"twin_{m}")) for m in SHIFT_METRICS):
        return UNATTRIBUTED
    return SCHEDULE if shift_rules(twin, thresholds["divergence"], "twin_") else ARITHMETIC


def cause_words(mark: dict) -> str:
    """The cause of a mark in words, with the IEEE twin's figures behind it."""
    twin = mark.get("twin") or {}
    if mark["cause"] == UNATTRIBUTED:
        return f"unattributed: {mark['target']} has no IEEE twin"
    if mark["metric"] == "prob_bound_fraction":
        figures = f"IEEE twin's bound fraction {twin['twin_prob_bound_fraction']:.3g}"
    else:
        figures = (f"IEEE twin: error ratio {twin['twin_error_ratio']:.3g} (z {twin['twin_error_ratio_z']:.3g}), "
                   f"bias shift {twin['twin_bias_shift']:+.3g} (|z| {twin['twin_bias_shift_z']:.3g})")
    if mark["cause"] == ARITHMETIC:
        return f"arithmetic (qfloat): with IEEE rounding the same schedule is not marked; {figures}"
    return f"schedule: marked with IEEE rounding too; {figures}"


def attribute(values: dict, target: str, thresholds: dict) -> dict:
    """The error-shift rules one pair's divergence values (``measure --against``) cross, and the
    cause of the mark they make (None when they cross none)."""
    crossed = shift_rules(values, thresholds["divergence"])
    if not crossed:
        return {"marked": [], "cause": None}
    twin = {m: values[m] for m in TWIN_METRICS if res.finite(values.get(m))}
    mark = {"metric": crossed[0], "target": target, "twin": twin, "cause": cause(crossed[0], twin, thresholds)}
    return {"marked": crossed, "cause": mark["cause"], "cause_words": cause_words(mark)}


def find_marks(history: res.History, thresholds: dict) -> list[dict]:
    """Every (commit, combination) whose error changed beyond what a reordering of IEEE sums
    does, or beyond what any unbiased rounding explains (see thresholds.toml, [divergence]); each
    with its cause (:func:`cause`) and the IEEE twin's values it was judged on."""
    div, bound = thresholds["divergence"], thresholds["bound"]
    marks = []
    for commit in history.commits:
        for s in history.series():
            if s.dtype not in div["dtypes"] or not match(s.workload, div["workloads"]):
                continue
            base = {"commit": commit.hash, "label": commit.label, **s.as_dict()}
            values = {m: history.value(m, s, commit.hash) for m in SHIFT_METRICS + TWIN_METRICS}
            twin = {m: values[m] for m in TWIN_METRICS if res.finite(values[m])}
            found = []
            if match(s.target, div["targets"]) and s.order in div["orders"]:
                for metric in shift_rules(values, div):
                    if metric == "error_ratio":
                        found.append({"rule": f"error vs float64 grew ({s.order} vs default)",
                                      "threshold": div["max_error_ratio"]})
                    else:
                        found.append({"rule": f"error drifted to one side ({s.order} vs default)",
                                      "threshold": div["max_bias_shift"]})
                    found[-1].update(metric=metric, value=values[metric], z=values[f"{metric}_z"])
            fraction = prob_bound_value(history, s, commit.hash, thresholds)
            if match(s.target, div["bound_targets"]) and res.finite(fraction) and fraction > bound["max_fraction"]:
                found.append({"rule": "beyond what any unbiased rounding explains", "metric": "prob_bound_fraction",
                              "value": fraction, "threshold": bound["max_fraction"], "z": None})
            for mark in found:
                marks.append({**base, **mark, "cause": cause(mark["metric"], twin, thresholds), "twin": twin})
    return marks


# ----------------------------------------------------------------------------- marks against a baseline

NEW, WORSE, KNOWN, FIRST = "new", "worse", "known", "first"


def mark_key(mark: dict) -> tuple:
    return mark["workload"], mark["dtype"], mark["target"], mark["order"], mark["machine"], mark["metric"]


def _accepted(mark: dict, accepts: list[dict]) -> dict | None:
    return next((a for a in accepts if (a["workload"], a["dtype"], a["target"], a["order"])
                 == (mark["workload"], mark["dtype"], mark["target"], mark["order"])), None)


def judge_marks(history: res.History, thresholds: dict, candidate: res.Commit, baseline: res.Commit | None,
                marks: list[dict] | None = None) -> dict:
    """The marks at ``candidate`` judged against ``baseline``, as the gate and the report show them.

    Each mark at the candidate gets ``status``: *new* (not marked at the baseline), *worse* (its
    value grew by more than [divergence] worse_factor since the baseline), *known* (inherited, with
    ``since``: the commit from which it has been marked without a break), or *first* (no baseline:
    the first commit with results); and ``fails``: new and worse marks fail, known and first ones
    fail when their cause is not arithmetic; a mark accepted by name in [[divergence.accept]]
    (``accepted``: the reason) fails only when worse. Marks of the baseline not at the candidate,
    whose combination the candidate measured, are ``fixed``; acceptances that match no mark at the
    candidate are ``stale``.
    """
    div = thresholds["divergence"]
    accepts = div.get("accept", [])
    marks = find_marks(history, thresholds) if marks is None else marks
    by_commit: dict[str, dict[tuple, dict]] = {}
    for m in marks:
        by_commit.setdefault(m["commit"], {})[mark_key(m)] = m
    now = by_commit.get(candidate.hash, {})
    before = by_commit.get(baseline.hash, {}) if baseline is not None else {}
    judged = []
    for key, mark in sorted(now.items()):
        mark = {**mark, "accepted": (_accepted(mark, accepts) or {}).get("reason")}
        if baseline is None:
            mark["status"] = FIRST
        elif key not in before:
            mark["status"] = NEW
        else:
            mark["baseline_value"] = before[key]["value"]
            grew = abs(mark["value"]) > div["worse_factor"] * abs(before[key]["value"])
            mark["status"] = WORSE if grew else KNOWN
        if mark["status"] in (KNOWN, WORSE):
            mark["since"] = _marked_since(history, by_commit, key, candidate)
        mark["fails"] = (mark["status"] == WORSE or (mark["status"] == NEW and not mark["accepted"])
                         or (mark["status"] in (KNOWN, FIRST) and mark["cause"] != ARITHMETIC
                             and not mark["accepted"]))
        judged.append(mark)
    fixed = []
    for key, mark in sorted(before.items()):
        series = res.Series(*key[:5])
        if key not in now and res.finite(history.value(mark["metric"], series, candidate.hash)):
            fixed.append({**mark, "value_now": history.value(mark["metric"], series, candidate.hash)})
    stale = [a for a in accepts if not any(_accepted(m, [a]) for m in judged)]
    return {"baseline": baseline, "marks": judged, "fixed": fixed, "stale": stale}


def _marked_since(history: res.History, by_commit: dict, key: tuple, candidate: res.Commit) -> dict:
    """The commit from which ``key`` has been marked at every commit that measured it, up to the
    candidate."""
    since = candidate
    series = res.Series(*key[:5])
    for commit in reversed(history.commits[:history.index(candidate.hash)]):
        if key in by_commit.get(commit.hash, {}):
            since = commit
        elif res.finite(history.value(key[5], series, commit.hash)):
            break  # measured there and not marked
    return since.as_dict()


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
