"""The thresholds of the gate and the report: ``reports/thresholds.toml``, typed and checked on load.

The documented defaults are read first; a user's file overrides any key of them. Every value is
checked for its type and for the range in which it means something (``0 < alpha < 1``, a ratio
limit from 1 to 10, an ULP limit up to an error as large as the value, a lambda below the one at
which the rounding bound reaches the value itself, ...): a value outside it is a one-line error
naming the key, the value, the range and the file, never a silent change of the verdict. No value
may switch a check off (docs/gate.md, Thresholds, says why each end is where it is): an ``alpha`` at or below
the smallest p-value the latency test can give on the suite's samples (:func:`smallest_p` of
``suite.core.timing.REPEATS`` a side) is refused, naming that floor. The result is immutable: the gate and the report read the
same :class:`Thresholds` object and cannot disagree about a rule.
"""

from __future__ import annotations

import copy
import math
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from suite import floats, tracked
from suite.asv_plumbing.config import REPORTS
from suite.core import bounds
from suite.core.workloads import FLOAT_DTYPES, INTEGER_DTYPES
from suite.errors import UserError

DEFAULT_PATH = REPORTS / "thresholds.toml"
ACCURACY_DTYPES = ("float16", "float32", "bfloat16")
#: The dtypes whose whole-model accuracy has limits here: every dtype a whole model runs in. An int8
#: model is judged besides by its exactness against the integer pipeline (no limit: gate_checks).
MODEL_DTYPES = (*FLOAT_DTYPES, *INTEGER_DTYPES)
ACCURACY_METRICS = ("ulp_mean", "ulp_p99", "ulp_max", "scaled_error")
#: Nesting deeper than this is no thresholds file (tomllib recurses per level).
MAX_DEPTH = 8


class ThresholdsError(UserError):
    pass


@dataclass(frozen=True)
class Latency:
    max_ratio: float  #: candidate median / baseline median above which a series is a suspect
    alpha: float  #: ... when the one-sided Mann-Whitney p is below this
    baseline: str  #: "previous", or a commit (hash prefix or tag)
    #: timed again, interleaved: slower when the median of the paired ratios is above this ...
    retimed_max_ratio: float
    retimed_alpha: float  #: ... and the one-sided signed-rank p of their logarithms below this
    #: confirmed only when that many re-timings in a row find it slower (one not slower: noise)
    retimed_times: int


@dataclass(frozen=True)
class Change:
    """``[change.<metric>]``: one metric against the baseline, in the metric's worse direction."""

    metric: str
    max_ratio: float | None  #: worse / better side, per combination (None: no ratio check)
    keep_nonzero: bool  #: a value above 0 at the baseline may not become 0

    @property
    def worse(self) -> str | None:
        return tracked.get(self.metric).worse


@dataclass(frozen=True)
class AccuracyLimit:
    dtype: str
    metric: str
    limit: float


@dataclass(frozen=True)
class ModelLimit:
    """``[model.<dtype>] <key>``: a whole model's metric at the candidate, per setting."""

    dtype: str
    key: str
    limit: float

    @property
    def metric(self) -> str:
        return MODEL_KEYS[self.key][0]

    @property
    def at_least(self) -> bool:
        """The limit is a floor (agreement), not a ceiling."""
        return MODEL_KEYS[self.key][1]


#: [model.<dtype>] key -> (the metric of suite.tracked it limits, whether the limit is a floor).
MODEL_KEYS = {"max_rmse": ("model_rmse", False),
              "max_rmse_ratio": ("model_rmse_ratio", False),
              "max_rmse_ratio_fp32": ("model_rmse_ratio_fp32", False),
              "max_tuned_rmse_ratio": ("model_tuned_rmse_ratio", False),
              "max_abs_error": ("model_max_abs_error", False),
              "min_top1_agreement": ("model_top1_agreement", True),
              "min_top5_agreement": ("model_top5_agreement", True)}


@dataclass(frozen=True)
class Bound:
    max_fraction: float
    max_nonfinite: float
    lam: float  #: lambda of the probabilistic bound (``lambda`` in the file)


@dataclass(frozen=True)
class Acceptance:
    workload: str
    dtype: str
    target: str
    order: str
    reason: str

    @property
    def ids(self) -> tuple[str, str, str, str]:
        return self.workload, self.dtype, self.target, self.order


@dataclass(frozen=True)
class Divergence:
    max_error_ratio: float
    max_bias_shift: float
    min_z: float
    dtypes: tuple[str, ...]
    workloads: tuple[str, ...]
    targets: tuple[str, ...]
    orders: tuple[str, ...]
    bound_targets: tuple[str, ...]
    required: bool
    worse_factor: float
    accept: tuple[Acceptance, ...]


@dataclass(frozen=True)
class Thresholds:
    latency: Latency
    change: tuple[Change, ...]
    accuracy: tuple[AccuracyLimit, ...]
    model: tuple[ModelLimit, ...]
    bound: Bound
    divergence: Divergence
    source: str  #: the file the user gave, or the defaults' path

    def as_dict(self) -> dict:
        """What report.json and the report's text show of the thresholds."""
        return {
            "latency": vars(self.latency),
            "change": {c.metric: {"max_ratio": c.max_ratio, "keep_nonzero": c.keep_nonzero} for c in self.change},
            "accuracy": {d: {a.metric: a.limit for a in self.accuracy if a.dtype == d}
                         for d in dict.fromkeys(a.dtype for a in self.accuracy)},
            "model": {d: {m.key: m.limit for m in self.model if m.dtype == d}
                      for d in dict.fromkeys(m.dtype for m in self.model)},
            "bound": {"max_fraction": self.bound.max_fraction, "max_nonfinite": self.bound.max_nonfinite,
                      "lambda": self.bound.lam},
            "divergence": {**{k: v for k, v in vars(self.divergence).items() if k != "accept"},
                           "accept": [vars(a) for a in self.divergence.accept]},
            "source": self.source,
        }


# ----------------------------------------------------------------------------- the schema

#: The largest limit on a ratio (and a worse factor): a value ten times its baseline. Above it a
#: tenfold worsening passes, and the check is as good as off.
MAX_RATIO = 10.0
#: The largest min_z: a z-score above 10 has a chance below 1e-23 without any change; asking for
#: more only hides real shifts.
MAX_Z = 10.0
#: The largest max_nonfinite: the smallest output the suite measures (miniresnet's classifier) has
#: 10 elements, and a limit of 10 would pass it with none finite.
MAX_NONFINITE = 9
#: The largest max_abs_error (and max_rmse) of a model's logits: the suite's models are calibrated to
#: logits of standard deviation about 1 (docs/model.md), so an error ten times that leaves no logit
#: meaning anything.
MAX_LOGIT_ERROR = 10.0
#: The largest max_rmse_ratio_fp32 (a model's RMSE over float32's on the same model and inputs):
#: float32's error is 2^-24 of the logits times how much the model amplifies a rounding (at least 1),
#: so 2^23 times it is at least half the logits' spread: no logit meaning anything.
MAX_FP32_RATIO = 2 ** 23

#: A number's meaningful range: (test, words). The words complete "must be ...".
_ABOVE_0 = (lambda v: v > 0, "above 0")
_RATIO = (lambda v: 1 <= v <= MAX_RATIO, f"at least 1 (a ratio below 1 would fail an unchanged value) and at most "
                                         f"{MAX_RATIO:g} (above, a {MAX_RATIO:g}-fold worsening would pass)")
_PROBABILITY = (lambda v: 0 < v < 1, "between 0 and 1, both excluded")
#: each re-timing of a kernel costs seconds: more than a few in a row would only stall the gate
_RETIMINGS = (lambda v: v == int(v) and 1 <= v <= 5, "a whole number from 1 to 5")


def _ulps(dtype: str) -> tuple:
    """An accuracy limit in ULPs: an error of 2^nmant ULPs is as large as the value itself (the
    spacing at |r| is 2^(floor(log2 |r|) - nmant)): no correct bit, so no limit may admit more."""
    nmant = floats.float_format(dtype).nmant
    most = 2 ** nmant
    return (lambda v: 0 < v <= most,
            f"above 0 and at most {most} (2^{nmant}: an error of that many {dtype} ULPs is as "
            "large as the value itself)")


_AGREEMENT = (lambda v: 0 < v <= 1, "above 0 and at most 1 (a fraction of the inputs; 0 would switch the check off)")
_CHANGE = {"max_ratio": _RATIO, "keep_nonzero": bool}
_LOGIT_ERROR = (lambda v: 0 < v <= MAX_LOGIT_ERROR,
                f"above 0 and at most {MAX_LOGIT_ERROR:g} (ten times the logits' standard deviation)")
_FP32_RATIO = (lambda v: 1 <= v <= MAX_FP32_RATIO,
               f"at least 1 (float32's own ratio) and at most {MAX_FP32_RATIO} (2^23: an error that many times "
               "float32's is at least half the logits' spread)")
_MODEL = {"max_rmse": _LOGIT_ERROR, "max_rmse_ratio": _RATIO, "max_rmse_ratio_fp32": _FP32_RATIO,
          "max_tuned_rmse_ratio": _RATIO,
          "max_abs_error": _LOGIT_ERROR,
          "min_top1_agreement": _AGREEMENT, "min_top5_agreement": _AGREEMENT}
_SCHEMA = {
    "latency": {"max_ratio": _RATIO, "alpha": _PROBABILITY, "baseline": str, "retimed_max_ratio": _RATIO,
                "retimed_alpha": _PROBABILITY, "retimed_times": _RETIMINGS},
    "change": {m.name: _CHANGE for m in tracked.METRICS},
    "accuracy": {dtype: {metric: _ulps(dtype) for metric in ACCURACY_METRICS} for dtype in ACCURACY_DTYPES},
    "model": {dtype: _MODEL for dtype in MODEL_DTYPES},
    # max_fraction's upper limit depends on lambda: _bound checks the two together
    "bound": {"max_fraction": _ABOVE_0,
              "max_nonfinite": (lambda v: v == int(v) and 0 <= v <= MAX_NONFINITE,
                                f"a whole number from 0 to {MAX_NONFINITE} (the smallest output the suite measures "
                                f"has {MAX_NONFINITE + 1} elements)"),
              "lambda": (lambda v: 0 < v < bounds.MAX_LAMBDA,
                         f"above 0 and below {bounds.MAX_LAMBDA:.4g}, where gamma~_K(lambda) reaches 1 at the "
                         f"suite's longest accumulation in float16 (K = {bounds.K_MAX}): beyond, the bound admits an "
                         "error as large as the value itself")},
    "divergence": {"max_error_ratio": _RATIO,
                   "max_bias_shift": (lambda v: 0 <= v <= MAX_RATIO,
                                      f"at least 0 and at most {MAX_RATIO:g} (|bias shift| is at most the error ratio "
                                      f"+ 1: above {MAX_RATIO:g} only an error grown {MAX_RATIO - 1:g}-fold could "
                                      "cross it)"),
                   "min_z": (lambda v: 0 <= v <= MAX_Z,
                             f"at least 0 and at most {MAX_Z:g} (a z above {MAX_Z:g} has a chance below 1e-23 without "
                             "any change)"),
                   "dtypes": list, "workloads": list, "targets": list, "orders": list, "bound_targets": list,
                   "required": bool,
                   "worse_factor": (lambda v: 1 <= v <= MAX_RATIO,
                                    f"at least 1 (below 1 an unchanged mark would be worse) and at most {MAX_RATIO:g} "
                                    f"(above, a mark grown {MAX_RATIO:g}-fold would not be)"),
                   "accept": [{"workload": str, "dtype": str, "target": str, "order": str, "reason": str}]},
}
#: Sections every rule needs with every key (the defaults file provides them).
_COMPLETE = ("latency", "bound", "divergence")


def _check(data: dict, schema: dict, path: Path, prefix: str = "") -> dict:
    checked = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key not in schema:
            valid = ", ".join(f"{prefix}{k}" for k in schema)
            raise ThresholdsError(f"{path}: unknown key {name!r} (valid here: {valid})")
        kind = schema[key]
        if isinstance(kind, tuple):  # a number with its meaningful range
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ThresholdsError(f"{path}: {name} must be a finite number, not {value!r}")
            test, words = kind
            try:
                number = float(value)
            except OverflowError:  # an integer beyond the largest float: beyond every range
                raise ThresholdsError(f"{path}: {name} = {_shown(value)} is out of range: it must be {words}") from None
            if not math.isfinite(number):
                raise ThresholdsError(f"{path}: {name} must be a finite number, not {value!r}")
            if not test(value):
                raise ThresholdsError(f"{path}: {name} = {_shown(value)} is out of range: it must be {words}")
            checked[key] = number
        elif isinstance(kind, dict):
            if not isinstance(value, dict):
                raise ThresholdsError(f"{path}: {name!r} must be a table")
            checked[key] = _check(value, kind, path, f"{name}.")
        elif kind is list:
            if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
                raise ThresholdsError(f"{path}: {name} must be a non-empty list of strings, not {value!r}")
            checked[key] = tuple(value)
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
            raise ThresholdsError(f"{path}: {name} must be a {kind.__name__}, not {value!r}")
        else:
            checked[key] = value
    return checked


#: Integers of more digits than this are said by their number of digits (a line of hundreds of nines
#: names nothing more).
_SHOWN_DIGITS = 20


def _shown(value) -> str:
    """``value`` as a message names it: an integer of many digits by how many."""
    if isinstance(value, int) and abs(value) >= 10 ** _SHOWN_DIGITS:
        return f"{'a negative' if value < 0 else 'an'} integer of {_digits(abs(value))} digits"
    return repr(value)


def _digits(value: int) -> int:
    """The decimal digits of ``value`` (>= 1), also past Python's limit on converting an int to a string."""
    digits = max(1, int(value.bit_length() * math.log10(2)))  # at most one short
    return digits + (value >= 10 ** digits)


#: A key given an integer, and a table's header, in a TOML file's text
_INTEGER = re.compile(r"^[ \t]*([\w.-]+)[ \t]*=[ \t]*[+-]?([0-9_]+)", re.MULTILINE)
_TABLE = re.compile(r"^[ \t]*\[\[?[ \t]*([\w.-]+)[ \t]*\]", re.MULTILINE)


def _too_long(path: Path, text: str) -> str:
    """The line that says ``text`` holds an integer of more digits than Python reads (tomllib
    failed on it): the key and its range, where the key is found."""
    limit = sys.get_int_max_str_digits()
    for found in _INTEGER.finditer(text):
        digits = len(found.group(2).replace("_", ""))
        if limit and digits > limit:
            tables = [t.group(1) for t in _TABLE.finditer(text, 0, found.start())]
            name = ".".join([*tables[-1:], found.group(1)])
            kind = _SCHEMA
            for part in name.split("."):
                kind = kind.get(part) if isinstance(kind, dict) else None
            line = text.count("\n", 0, found.start()) + 1
            words = f"it must be {kind[1]}" if isinstance(kind, tuple) else "no threshold takes it"
            return f"{path}, line {line}: {name} = an integer of {digits} digits is out of range: {words}"
    return f"{path}: an integer of more than {limit} digits: no threshold takes it"


def _depth(value, limit: int) -> int:
    """How deep tables and arrays nest in ``value`` (stops counting past ``limit``)."""
    if limit < 0 or not isinstance(value, (dict, list)):
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in items), default=0)


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ThresholdsError(f"thresholds file {path} does not exist") from None
    except IsADirectoryError:
        raise ThresholdsError(f"thresholds file {path} is a directory") from None
    except RecursionError:
        raise ThresholdsError(f"{path}: malformed thresholds file (nested too deep)") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ThresholdsError(f"{path}: not a readable TOML file ({str(err).splitlines()[0]})") from None
    except ValueError:  # tomllib's int() of more digits than Python reads (4300: a guard against slow parsing)
        raise ThresholdsError(_too_long(path, Path(path).read_text(errors="replace"))) from None
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise ThresholdsError(f"{path}: malformed thresholds file (nested more than {MAX_DEPTH} deep)")
    return _check(data, _SCHEMA, path)


def _merge(base: dict, extra: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict):
            merged[key] = _merge(merged.get(key, {}), value)
        else:
            merged[key] = value
    return merged


def smallest_p(n_before: int, n_after: int) -> float:
    """The smallest p-value the gate's latency test (an exact one-sided Mann-Whitney U test) can
    give on ``n_before`` and ``n_after`` samples: every sample of one side above every sample of
    the other, 1 / C(n_before + n_after, n_before). An alpha at or below it can never be reached."""
    return 1 / math.comb(n_before + n_after, n_before)


def cannot_fail(alpha: float, n_before: int, n_after: int) -> str | None:
    """Why the latency test at ``alpha`` can never fail on ``n_before`` and ``n_after`` samples
    (its smallest p-value is not below alpha), in words; None when it can."""
    floor = smallest_p(n_before, n_after)
    if alpha > floor:
        return None
    sides = f"{n_before} samples a side" if n_before == n_after else f"{n_before} and {n_after} samples"
    return (f"latency.alpha = {alpha:g} is {'below' if alpha < floor else 'equal to'} "
            f"1/{math.comb(n_before + n_after, n_before)} = {floor:.3g}, the smallest p-value of a one-sided "
            f"Mann-Whitney test with {sides}: the check could never fail")


def _latency(raw: dict, path: Path) -> Latency:
    """[latency], its alpha reachable with the samples every run takes (and a re-measurement)."""
    from suite.core.timing import REPEATS, RETIME_REPEATS

    found = Latency(**{**raw, "retimed_times": int(raw["retimed_times"])})
    if why := cannot_fail(found.alpha, REPEATS, REPEATS):
        raise ThresholdsError(f"{path}: {why}")
    floor = 0.5 ** RETIME_REPEATS  # every one of the paired ratios above 1
    if found.retimed_alpha <= floor:
        raise ThresholdsError(f"{path}: latency.retimed_alpha = {found.retimed_alpha:g} is not above "
                              f"1/2^{RETIME_REPEATS} = {floor:.3g}, the smallest p-value of the signed-rank test "
                              f"with {RETIME_REPEATS} pairs: the re-timing could never find a kernel slower")
    return found


def _bound(raw: dict, path: Path) -> Bound:
    """[bound], its limit on the bound below the value itself: max_fraction x gamma~_K(lambda) < 1
    at the suite's longest accumulation in float16 (lambda's own range keeps gamma~ below 1)."""
    found = Bound(raw["max_fraction"], raw["max_nonfinite"], raw["lambda"])
    most = 1 / bounds.gamma_tilde(bounds.K_MAX, "float16", found.lam)
    if not found.max_fraction < most:
        raise ThresholdsError(f"{path}: bound.max_fraction = {found.max_fraction:g} is out of range: with lambda = "
                              f"{found.lam:g} it must be above 0 and below {most:.4g} (1 / gamma~_{bounds.K_MAX}"
                              f"({found.lam:g}) in float16): beyond, the bound admits an error as large as the value "
                              "itself")
    return found


def _changes(raw: dict, path: Path) -> tuple[Change, ...]:
    found = []
    for metric, rule in sorted(raw.items()):
        if metric == "latency":
            raise ThresholdsError(f"{path}: [change.latency] is not a check: latency is judged by [latency] "
                                  "(its timing samples and their re-measurement)")
        if not rule:
            raise ThresholdsError(f"{path}: [change.{metric}] needs max_ratio or keep_nonzero")
        if "max_ratio" in rule and tracked.get(metric).worse is None:
            raise ThresholdsError(f"{path}: change.{metric}.max_ratio: {metric} has no worse direction "
                                  "(suite/tracked.py), so a change of it cannot be judged by a ratio")
        found.append(Change(metric, rule.get("max_ratio"), bool(rule.get("keep_nonzero", False))))
    return tuple(found)


def load(path=None) -> Thresholds:
    """The default thresholds, overridden by those in ``path``; each key and value checked."""
    raw = _read_toml(DEFAULT_PATH)
    lacking = [f"{section}.{key}" for section in _COMPLETE for key in _SCHEMA[section]
               if key != "accept" and key not in raw.get(section, {})]
    if lacking:
        raise ThresholdsError(f"{DEFAULT_PATH}: the defaults lack {', '.join(lacking)} (restore the file)")
    source = DEFAULT_PATH
    if path is not None:
        source = Path(path).resolve()
        raw = _merge(raw, _read_toml(Path(path)))
    div = raw["divergence"]
    return Thresholds(
        latency=_latency(raw["latency"], source),
        change=_changes(raw.get("change", {}), source),
        accuracy=tuple(AccuracyLimit(dtype, metric, limit) for dtype, limits in sorted(raw.get("accuracy", {}).items())
                       for metric, limit in sorted(limits.items())),
        model=tuple(ModelLimit(dtype, key, limit) for dtype, limits in sorted(raw.get("model", {}).items())
                    for key, limit in sorted(limits.items())),
        bound=_bound(raw["bound"], source),
        divergence=Divergence(**{k: v for k, v in div.items() if k != "accept"},
                              accept=tuple(Acceptance(**a) for a in div.get("accept", []))),
        source=str(source),
    )
