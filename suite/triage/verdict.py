"""One verdict on two outputs of a program, against its exact value: the kinds, their exit
statuses, and the rules, which are the suite's own (nothing here is a second copy of them):

- the rounding bound: ``suite.core.bounds`` (gamma~_K(lambda) * m, Higham & Mary's probabilistic
  bound, lambda and the limit from ``reports/thresholds.toml`` [bound], ``suite.reporting.thresholds``);
- how two outputs' errors compare: ``suite.core.metrics`` (``error_shift``: error ratio and bias
  shift; ``divergence``: differing elements, ULP distance);
- when such a change is a mark, and whether the arithmetic or the schedule caused it:
  ``suite.reporting.rules`` (``shift_rules``, ``cause``: the IEEE twin's judgement), [divergence].

Kinds, from the least to the most serious (a triage over several targets reports the most
serious one, naming the targets; a program of several outputs is judged output by output, and
its verdict on a target is the most serious of its outputs', :func:`worst_output`):

- EQUIVALENT: the after program's output is the before program's, bit for bit.
- REORDERED: they differ, and both lie within the rounding bound of the exact value for their
  accumulation length: what another order of the same sums does.
- ARITHMETIC: on a target with an IEEE twin (qfloat), the pair is marked by the divergence rules
  (or the after output leaves the bound), and the same pair computed with IEEE rounding is not.
- SHIFTED: both within the rounding bound, but the error's size or sign balance moved beyond the
  divergence rules (the IEEE twin's too, on a qfloat target): more than any reordering of IEEE sums
  the suite measured; or some element's error is more than :data:`ELEMENT_FACTOR` times the largest
  before's rounding makes for an element of its magnitude (:func:`element_ratio`), where the bound
  is too loose to tell (a long float16 sum: a wrong index in one vector lane). A long fp16 reduction's bound admits errors no reordering makes, so a slightly
  wrong computation (a term counted twice, a constant off by 0.1%) can hide below it; so can an
  order that rounds far worse. Suspect, not proven: the figures are shown.
- CHANGED: the after program computes something else: an integer output differs, or a float
  output (the IEEE twin's, on a qfloat target) lies beyond any summation order's rounding error.
- UNDEFINED: the before program itself is undefined (:mod:`suite.triage.interp`'s findings), or
  the after program's output is not a function of its inputs: its runs on output arrays filled
  with set bytes differ (:mod:`suite.triage.filled`; :func:`judge`'s ``undefined``). The fuzz
  campaign and triage judge both through :func:`judge`, on the same runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from suite.core import bounds, metrics
from suite.core.bounds import Expected
from suite.errors import ExitCode
from suite.reporting import rules
from suite.reporting import thresholds as thresholds_file

EQUIVALENT, REORDERED, ARITHMETIC, SHIFTED, CHANGED, UNDEFINED = (
    "EQUIVALENT", "REORDERED", "ARITHMETIC", "SHIFTED", "CHANGED", "UNDEFINED")
#: Least serious first.
KINDS = (EQUIVALENT, REORDERED, ARITHMETIC, SHIFTED, CHANGED, UNDEFINED)
#: ``tvm-suite triage``'s exit status per verdict (``suite.errors.ExitCode``); no target built and
#: ran both programs: NO_VERDICT (2), as every command's no verdict, and as bad input; interrupted: 130/143.
EXIT_STATUS = {EQUIVALENT: ExitCode.OK, REORDERED: ExitCode.REORDERED, ARITHMETIC: ExitCode.ARITHMETIC,
               SHIFTED: ExitCode.SHIFTED, CHANGED: ExitCode.CHANGED, UNDEFINED: ExitCode.UNDEFINED}
NOTHING_RAN = ExitCode.NO_VERDICT


#: How many times the largest error before's rounding makes (for an element's magnitude) an element
#: of after's may have, and be a reordering's. A reordering moves each element's error within the
#: spread before's show (the worst of clean schedules measured: 1.03x, docs/fuzz.md); a wrong index
#: or a term lost in a few elements moves theirs by the size of a value (30-70x in long float16 sums).
ELEMENT_FACTOR = 8.0


def most_serious(kinds) -> str:
    return max(kinds, key=KINDS.index)


@dataclass
class Judgement:
    kind: str
    summary: str
    first: dict | None = None
    figures: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"verdict": self.kind, "summary": self.summary, "first_wrong": self.first,
                "figures": {k: _plain(v) for k, v in self.figures.items()}, "notes": self.notes}


def worst_output(judged: dict[str, Judgement]) -> Judgement:
    """The judgement of a program of several outputs on one target, from each output's (by name,
    in parameter order): the most serious kind, and of the outputs judged so the first, whose
    first wrong element (named by its output), figures and notes it carries; its summary names
    every output with its own verdict."""
    kind = most_serious(j.kind for j in judged.values())
    name, worst = next((n, j) for n, j in judged.items() if j.kind == kind)
    each = ", ".join(f"{n} {j.kind}" for n, j in judged.items())
    if all(j.kind == EQUIVALENT for j in judged.values()):
        summary = f"outputs {each}: each is before's, bit for bit"
    else:
        summary = f"outputs {each}; {name}: {worst.summary}"
    first = None if worst.first is None else {"output": name, **worst.first}
    return Judgement(kind, summary, first, dict(worst.figures), list(worst.notes))


def _plain(value):
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _index(flat: int, shape) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _element(name: str, index) -> str:
    return f"{name}[{', '.join(map(str, index))}]"


def _number(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.6g}"


class Bound(bounds.Bound):
    """The rounding bound of one output (:class:`suite.core.bounds.Bound`, the judge), with the
    thresholds' [bound] lambda and limit."""

    def __init__(self, expected: Expected, thresholds: thresholds_file.Thresholds):
        super().__init__(expected, thresholds.bound.lam, thresholds.bound.max_fraction)


def judge(expected: Expected, before: np.ndarray, after: np.ndarray, twin_before: np.ndarray | None = None,
          twin_after: np.ndarray | None = None, thresholds: thresholds_file.Thresholds | None = None,
          undefined: str | None = None) -> Judgement:
    """The verdict on ``after`` against ``before`` (the two programs' outputs on one target),
    with the IEEE twin's outputs of the same builds where the target has one; ``undefined``: what
    the after program's runs on filled output arrays showed (:func:`suite.triage.filled.undefined`),
    which makes it UNDEFINED whatever its values."""
    if undefined:  # the output is not a function of the inputs: no verdict on its values
        return Judgement(UNDEFINED, undefined)
    thresholds = thresholds or thresholds_file.load()  # callers of the library; triage hands its own down
    if same_bits(before, after):
        figures = {}
        if expected.magnitude is not None:  # how close the shared output is to the exact value
            figures = {"accumulation_length": expected.k,
                       "before_bound_fraction": Bound(expected, thresholds).fraction(before)}
        judgement = Judgement(EQUIVALENT, f"after's output is before's, bit for bit ({after.size:,} elements)", None,
                              figures)
        if expected.magnitude is None:  # integers: the exact value is the only right one
            judgement.figures = _exactness(expected, after)
            if judgement.figures["exact_fraction"] < 1:
                judgement.notes.append(_not_exact_note(expected, before, "both programs' output differs"))
        return judgement
    if expected.magnitude is None:
        return _judge_exact(expected, before, after)
    return _judge_float(expected, before, after, twin_before, twin_after, thresholds)


def _judge_exact(expected: Expected, before, after) -> Judgement:
    differs = before != after
    flat = int(np.argmax(differs))
    index = _index(flat, after.shape)
    first = {"index": list(index), "before": _plain(before[index].item()), "after": _plain(after[index].item()),
             "exact": _plain(expected.value[index].item()), "bound": 0}
    wrong = after != expected.value
    if _any_at(wrong):
        flat = int(np.argmax(wrong))
        index = _index(flat, after.shape)
        first.update(index=list(index), before=_plain(before[index].item()), after=_plain(after[index].item()),
                     exact=_plain(expected.value[index].item()))
    count = int(np.count_nonzero(differs))
    figures = {"differ_fraction": count / after.size, **_exactness(expected, after)}
    steps = f"; largest difference from the exact value {figures['max_step_error']:,}" if _any_at(wrong) else ""
    judgement = Judgement(CHANGED, f"{_element(expected.name, index)}: after {_number(first['after'])}, before "
                                   f"{_number(first['before'])}, exact {_number(first['exact'])} "
                                   f"({count:,} of {after.size:,} elements differ{steps}; {expected.dtype} results "
                                   "must match exactly, never within a bound)", first, figures)
    if wraps := _wrapped_width(expected, after):
        judgement.notes.append(f"every inexact element of after's is the exact value wrapped to int{wraps} "
                               f"(they differ by multiples of 2^{wraps}): after accumulates in int{wraps}, which "
                               "wraps")
    if _any_at(before != expected.value):
        judgement.notes.append(_not_exact_note(expected, before, "the before program's own output differs too"))
    return judgement


def _exactness(expected: Expected, after) -> dict:
    """An integer output's exactness: the fraction of elements equal to the exact value, and the
    largest difference from it (in the output's steps), as int8 records have them (docs/int8.md)."""
    error = np.abs(np.asarray(after, np.int64) - np.asarray(expected.value, np.int64))
    return {"exact_fraction": float(np.mean(error == 0)) if error.size else 1.0,
            "max_step_error": int(error.max()) if error.size else 0}


def _not_exact_note(expected: Expected, output, words: str) -> str:
    at = _index(int(np.argmax(output != expected.value)), output.shape)
    return (f"{words} from the exact value, at {_element(expected.name, at)} ({_number(output[at].item())} for "
            f"{_number(expected.value[at].item())}): this target does not compute the before program exactly")


def _wrapped_width(expected: Expected, after) -> int | None:
    """The narrower width (8 or 16 bits) the inexact elements of an integer output wider than it
    are the exact value wrapped to, if they all are; None otherwise."""
    if np.dtype(expected.dtype).itemsize <= 2:
        return None
    wrong = after != expected.value
    values = np.asarray(after, np.int64)[wrong]
    error = values - np.asarray(expected.value, np.int64)[wrong]
    return next((bits for bits in (8, 16) if error.size and not np.any(error % (1 << bits))
                 and np.all(np.abs(values) <= 1 << (bits - 1))), None)


def _any_at(mask) -> bool:
    return bool(np.any(mask))


def _shift(y, y_base, exact) -> dict:
    """The error shift over the elements whose exact value is finite ({} where none is): an element
    whose exact value is inf or nan is judged by the bound alone (within only where the output is it)."""
    finite = np.isfinite(exact)
    return metrics.error_shift(y[finite], y_base[finite], exact[finite]) if finite.any() else {}


def _crossed(figures: dict, thresholds, prefix: str = "") -> list[str]:
    """The divergence rules the error shift crosses; one whose figures are nan (an output inf or nan
    where the exact value is finite) counts as crossed: a nan is a difference, never within a rule."""
    crossed = rules.shift_rules(figures, thresholds, prefix)
    unmeasured = [m for m in ("error_ratio", "bias_shift") if m not in crossed
                  and any(math.isnan(figures[f"{prefix}{m}{z}"]) for z in ("", "_z"))]
    return crossed + unmeasured


def _divergence(a, b) -> dict:
    try:
        return metrics.divergence(a, b)
    except ValueError:  # float64 outputs: no ULP distance table in suite.core.metrics
        differs = a != b
        return {"differ_fraction": float(np.mean(differs)), "max_ulp_distance": math.nan}


def element_ratio(expected: Expected, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Each element's error in ``after`` against the exact value, in units of the largest error
    before's rounding makes for that element's magnitude: |after - exact| / max(w * m, ulp), where
    w is the largest |before - exact| / m over the elements (m, the magnitude, the sum of the
    terms' absolute values, which any order's rounding error is proportional to), and ulp the
    spacing of the output's type at the exact value (an output rounds to it, whatever the order).
    0 where the exact value or its magnitude is not finite or the magnitude is 0: the bound alone
    judges those."""
    exact = np.asarray(expected.value, dtype=np.float64)
    magnitude = np.asarray(expected.magnitude, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        before_error = np.abs(np.asarray(before, dtype=np.float64) - exact)
        judged = np.isfinite(exact) & np.isfinite(magnitude) & (magnitude > 0) & np.isfinite(before_error)
        if not judged.any():
            return np.zeros(exact.shape)
        worst = float(np.max(before_error[judged] / magnitude[judged]))
        ulp = np.spacing(np.abs(exact).astype(expected.dtype)).astype(np.float64)
        scale = np.maximum(worst * magnitude, ulp)
        ratio = np.abs(np.asarray(after, dtype=np.float64) - exact) / scale
    return np.where(judged & np.isfinite(ratio), ratio, 0.0)


def _outliers(expected: Expected, before, after, bound: Bound, name_before: str, name_after: str,
              figures: dict, prefix: str = "") -> tuple[str, dict] | None:
    """Words and first element where some element of ``after`` is more than :data:`ELEMENT_FACTOR`
    times before's largest error for its magnitude (:func:`element_ratio`); None where none is. The
    figures (``element_ratio``, ``elements_beyond``) are added to ``figures``."""
    ratio = element_ratio(expected, before, after)
    beyond = ratio > ELEMENT_FACTOR
    figures[f"{prefix}element_ratio"] = float(ratio.max()) if ratio.size else 0.0
    figures[f"{prefix}elements_beyond"] = int(beyond.sum())
    if not beyond.any():
        return None
    index = _index(int(np.argmax(ratio)), after.shape)
    exact = float(expected.value[index])
    first = {"index": list(index), "before": _plain(before[index].item()), "after": _plain(after[index].item()),
             "exact": _plain(exact), "bound": _plain(bound.of(index)),
             "magnitude": _plain(float(expected.magnitude[index]))}
    words = (f"{_element(expected.name, index)}: {name_after} {_number(after[index])}, {name_before} "
             f"{_number(before[index])}, exact {_number(exact)}: an error of {abs(float(after[index]) - exact):.4g}, "
             f"{float(ratio[index]):.1f}x the largest before's rounding makes for its magnitude "
             f"({int(beyond.sum()):,} of {after.size:,} elements beyond {ELEMENT_FACTOR:g}x), within the rounding "
             f"bound {bound.of(index):.4g} (K = {expected.k}, {expected.dtype}) only because that bound is loose: "
             "no reordering moves a few elements' error so far beyond the rest; a wrong index or a lost term in "
             "those elements")
    return words, first


def _judge_float(expected, before, after, twin_before, twin_after, thresholds) -> Judgement:
    bound = Bound(expected, thresholds)
    figures = {"accumulation_length": expected.k, "lambda": bound.lam,
               "before_bound_fraction": bound.fraction(before), "after_bound_fraction": bound.fraction(after),
               **_divergence(after, before), **_shift(after, before, expected.value)}
    notes = []
    if unbounded := bound.unbounded():
        notes.append(f"{unbounded:,} of {after.size:,} elements have no rounding bound (the program rounds to "
                     "integers on the way: floor, ceil, round): the verdict is the other elements'")
    before_beyond = bound.beyond(before)
    if before_beyond.any():
        at = _index(int(np.argmax(before_beyond)), before.shape)
        notes.append(f"the before program's own output is beyond the rounding bound at {_element(expected.name, at)} "
                     f"({_number(before[at])} for exact {_number(expected.value[at])}): this target does not "
                     "compute the before program within rounding (or the inputs break the bound's assumption of "
                     "mean-zero rounding errors: try --inputs with ranges around zero)")
    has_twin = twin_before is not None and twin_after is not None
    if has_twin:
        figures.update({f"twin_{k}": v for k, v in _shift(twin_after, twin_before, expected.value).items()})
        figures["twin_before_bound_fraction"] = bound.fraction(twin_before)
        figures["twin_after_bound_fraction"] = bound.fraction(twin_after)
        figures["twin_prob_bound_fraction"] = figures["twin_after_bound_fraction"]
    checked = twin_after if has_twin else after
    beyond = bound.beyond(checked)
    if beyond.any():
        index = _index(int(np.argmax(beyond)), after.shape)
        first = {"index": list(index), "before": _plain(before[index].item()), "after": _plain(after[index].item()),
                 "exact": _plain(float(expected.value[index])), "bound": _plain(bound.of(index)),
                 "magnitude": _plain(float(expected.magnitude[index]))}
        twin_words = ""
        if has_twin:
            first.update(twin_before=_plain(twin_before[index].item()), twin_after=_plain(twin_after[index].item()))
            twin_words = (f" (with IEEE rounding, the twin: after {_number(twin_after[index])}, before "
                          f"{_number(twin_before[index])})")
        summary = (f"{_element(expected.name, index)}: after {_number(after[index])}, before {_number(before[index])}, "
                   f"exact {_number(expected.value[index])}{twin_words}; "
                   f"{_beyond_words(float(checked[index]), expected, bound, index)}; "
                   f"{int(beyond.sum()):,} of {after.size:,} elements beyond it")
        return Judgement(CHANGED, summary, first, figures, notes)
    if "error_ratio" not in figures:
        return Judgement(REORDERED, "every exact value is inf or nan, and after's output is it throughout: the "
                                    "two differ only in the bits of a nan", None, figures, notes)
    crossed = _crossed(figures, thresholds)
    words = (f"after's error is {figures['error_ratio']:.3f}x before's, bias shift {figures['bias_shift']:+.3f}; "
             f"{figures['differ_fraction']:.1%} of elements differ")
    if has_twin:
        marks = crossed + (["prob_bound_fraction"] if bound.beyond(after).any() else [])
        causes = {mark: rules.cause(mark, figures, thresholds) for mark in marks}
        twin_words = (f"with IEEE rounding (the twin) {figures['twin_error_ratio']:.3f}x, bias shift "
                      f"{figures['twin_bias_shift']:+.3f}")
        if found := _outliers(expected, twin_before, twin_after, bound, "before (twin)", "after (twin)", figures,
                              "twin_"):
            return Judgement(SHIFTED, f"with IEEE rounding (the twin), {found[0]}", found[1], figures, notes)
        if marks and all(c is rules.Cause.ARITHMETIC for c in causes.values()):
            why = ", ".join("beyond the rounding bound" if m == "prob_bound_fraction" else m for m in marks)
            return Judgement(ARITHMETIC, f"qfloat: {words} (marked: {why}); {twin_words}, not marked: the "
                                         "arithmetic, not the schedule", None, figures, notes)
        twin_crossed = _crossed(figures, thresholds, "twin_")
        if twin_crossed:
            return Judgement(SHIFTED, f"both within the rounding bound (K = {expected.k}, {expected.dtype}), but {words}; "
                                      f"{twin_words}, beyond {_rule_words(twin_crossed, thresholds)} as well: "
                                      f"{_SHIFTED_MEANS}", None, figures, notes)
        if marks:
            notes.append(f"marked ({', '.join(marks)}), within the rounding bound; the IEEE twin's error ratio and "
                         "bias shift are within the divergence rules")
        return Judgement(REORDERED, f"both within the rounding bound (K = {expected.k}, {expected.dtype}): {words}; "
                                    f"{twin_words}", None, figures, notes)
    if found := _outliers(expected, before, after, bound, "before", "after", figures):
        return Judgement(SHIFTED, found[0], found[1], figures, notes)
    if crossed:
        return Judgement(SHIFTED, f"both within the rounding bound (K = {expected.k}, {expected.dtype}), but {words}, "
                                  f"beyond {_rule_words(crossed, thresholds)}: {_SHIFTED_MEANS}", None, figures, notes)
    return Judgement(REORDERED, f"both within the rounding bound (K = {expected.k}, {expected.dtype}): {words}",
                     None, figures, notes)


def _beyond_words(y: float, expected: Expected, bound: Bound, index) -> str:
    """Why the element at ``index`` (``y``, the output judged) is beyond the bound, in words."""
    exact = float(expected.value[index])
    if not math.isfinite(exact):
        return f"the exact value is {exact:g}, which only {exact:g} matches"
    return (f"|after - exact| = {abs(y - exact):.4g} > bound {bound.of(index):.4g} (gamma~_{expected.k}"
            f"(lambda={bound.lam:g}) x {float(expected.magnitude[index]):.4g}, {expected.dtype})")


_SHIFTED_MEANS = ("no reordering of IEEE sums the suite measured moves the error so far; a slightly wrong computation "
                  "(a term counted twice, a constant a little off) or an order that rounds far worse")


def _rule_words(crossed: list[str], thresholds) -> str:
    """The divergence rules crossed, with their limits: the numbers a reader checks the verdict by."""
    div = thresholds.divergence
    limits = {"error_ratio": f"error ratio {div.max_error_ratio:g}", "bias_shift": f"bias shift {div.max_bias_shift:g}"}
    return f"the divergence rules ({' and '.join(limits[c] for c in crossed)}, z > {div.min_z:g})"
