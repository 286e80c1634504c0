"""Between two commits, is each kernel's code the same or changed? (Its code identity, kept by every
run in the sealed side data: ``runs/<machine>/<commit>/code/``, see :mod:`suite.targets.elf`.)
Identities of two schemes (:func:`suite.targets.elf.scheme_of`: one kept by an older suite) cover
different parts of the code and say nothing of each other: neither same nor changed, but not
comparable, which every reader treats as it treats a kernel without an identity.

Two consequences, both pure functions of a verified history:

- a latency step of a kernel whose code is the same is noise by construction: the gate never fails
  it and spends no re-measurement on it (:func:`same_code`);
- where code and inputs are the same, every deterministic metric (accuracy, code size, packets,
  instructions) must repeat exactly; one that does not is the suite's own bug, and no verdict is
  given on it (:func:`check_determinism`, :class:`NotDeterministic`, exit 2).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from suite import tracked
from suite.errors import UserError
from suite.reporting import results as res
from suite.targets import elf

#: Metrics that compare a combination with its ``default`` order: they repeat only when the default
#: kernel's code is the same too.
AGAINST_DEFAULT = {"differ_fraction", "max_ulp_distance", "exceeds_bound", "error_ratio", "error_ratio_z",
                   "bias_shift", "bias_shift_z", "twin_error_ratio", "twin_error_ratio_z", "twin_bias_shift",
                   "twin_bias_shift_z"}
#: What a kernel's code and inputs fix, bit for bit: every metric but the timed ones (and GFLOP/s,
#: computed from latency).
DETERMINISTIC = tuple(m.name for m in tracked.METRICS if m.name not in tracked.TIMED and m.name != "gflops")


class Code(str, enum.Enum):
    SAME = "same"
    CHANGED = "changed"
    UNKNOWN = "unknown"  #: a side kept no code identity (results of an older suite, a failed build)
    #: the two sides' identities are of two schemes (suite.targets.elf.SCHEME): one was kept by an
    #: older suite, which digested less of the code; neither same nor changed
    NOT_COMPARABLE = "not comparable"


class NotDeterministic(UserError):
    """The same code on the same inputs gave two values of a deterministic metric: a bug of the
    suite's own (a metric that reads something else than the kernel's output), never TVM's."""


def code_of(history: res.History, series: res.Series, commit_hash: str) -> str | None:
    return history.kept(commit_hash, series.machine).code.get(series.ids)


def compare(history: res.History, series: res.Series, baseline: str, candidate: str) -> Code:
    before, now = code_of(history, series, baseline), code_of(history, series, candidate)
    if before is None or now is None:
        return Code.UNKNOWN
    if elf.scheme_of(before) != elf.scheme_of(now):
        return Code.NOT_COMPARABLE
    return Code.SAME if before == now else Code.CHANGED


def same_code(history: res.History, series: res.Series, baseline: str, candidate: str) -> bool:
    return compare(history, series, baseline, candidate) is Code.SAME


@dataclass(frozen=True)
class CodeChanges:
    """The kernels of one commit against the one before it."""

    commit: res.Commit
    baseline: res.Commit | None
    changed: tuple[res.Series, ...]
    same: int
    unknown: int
    not_comparable: int = 0  #: kernels whose identities at the two commits are of two schemes

    @property
    def compared(self) -> int:
        return len(self.changed) + self.same

    def words(self) -> str:
        """How many changed of those compared, how many were not comparable and how many unknown."""
        parts = [f"{len(self.changed)} of {self.compared} changed"] if self.compared else []
        parts += [f"{self.not_comparable} {NOT_COMPARABLE}"] if self.not_comparable else []
        parts += [f"{self.unknown} unknown"] if self.unknown else []
        return "; ".join(parts)


#: A kernel whose identities at two commits are of two schemes, as every reader says it.
NOT_COMPARABLE = "not comparable (identities of two schemes)"


def changes(history: res.History, baseline: res.Commit | None, candidate: res.Commit) -> CodeChanges:
    changed, same, unknown, not_comparable = [], 0, 0, 0
    for series in history.series():
        if baseline is None or code_of(history, series, candidate.hash) is None:
            continue
        kind = compare(history, series, baseline.hash, candidate.hash)
        if kind is Code.CHANGED:
            changed.append(series)
        elif kind is Code.SAME:
            same += 1
        elif kind is Code.NOT_COMPARABLE:
            not_comparable += 1
        else:
            unknown += 1
    return CodeChanges(candidate, baseline, tuple(changed), same, unknown, not_comparable)


def per_commit(history: res.History) -> list[CodeChanges]:
    """Each commit's kernels against the previous commit with results, in history order."""
    found, before = [], None
    for commit in history.commits:
        if not any(history.kept(commit.hash, m).code for m in history.machines):
            continue
        found.append(changes(history, before, commit))
        before = commit
    return found


def check_determinism(history: res.History, baseline: res.Commit, candidate: res.Commit) -> None:
    """Raise :class:`NotDeterministic` naming both values where a kernel whose code (and, for the
    metrics against ``default``, whose default's code) is the same at both commits gave another
    value of a deterministic metric."""
    for series in history.series():
        if not same_code(history, series, baseline.hash, candidate.hash):
            continue
        default = res.Series(series.workload, series.dtype, series.target, "default", machine=series.machine)
        default_same = same_code(history, default, baseline.hash, candidate.hash)
        for metric in DETERMINISTIC:
            if metric in AGAINST_DEFAULT and not default_same:
                continue
            before = history.value(metric, series, baseline.hash)
            now = history.value(metric, series, candidate.hash)
            if res.finite(before) and res.finite(now) and before != now:
                raise NotDeterministic(
                    f"{metric} of {' '.join(series.ids)} is {before!r} at {baseline.label} and {now!r} at "
                    f"{candidate.label}, with the same code ({code_of(history, series, candidate.hash)[:12]}) "
                    "and inputs: a deterministic metric that does not repeat is the suite's own bug; "
                    "no verdict is given on it")
