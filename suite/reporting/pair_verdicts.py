"""The gate on each pair of commits of a history, as the report shows it: the verdict of each commit
against the one before it (:func:`series_verdicts`, :func:`pair_verdict`), in the gate's words and
with its culprits (:class:`PairVerdict`), each failing line with the `tvm-suite bisect` command that
finds its commit and each undecided one with the gate that decides it (:func:`pair_facts`)."""

from __future__ import annotations

from dataclasses import dataclass

from suite import tracked
from suite.errors import ExitCode
from suite.reporting import results as res
from suite.reporting import code_identity, gate
from suite.reporting.gate_result import Culprit, GateResult, Status, Verdict
from suite.reporting.thresholds import Thresholds


@dataclass(frozen=True)
class Blamed:
    """One line the gate gives against a pair of commits that fails it, or that its verdict waits
    on, word for word, with the combination and metric the line is about."""

    check: str  #: the gate's check, by its name
    status: Status  #: FAIL, or UNDECIDED: a latency suspect the gate would time again
    words: str  #: the gate's line
    culprit: Culprit

    def as_dict(self) -> dict:
        return {"check": self.check, "status": self.status.value, "words": self.words, **self.culprit.as_dict()}


@dataclass(frozen=True)
class PairVerdict:
    """What the report says of ``candidate`` against ``baseline``: the gate's own verdict on the
    pair (:func:`suite.reporting.gate.evaluate`), in the gate's words: its verdict, the lines that
    fail it or leave it undecided with their combinations (in the gate's order), the checks that
    miss data and those that had nothing to check."""

    baseline: res.Commit
    candidate: res.Commit
    #: None where the gate gives no verdict at all (a deterministic metric that moved under the
    #: same code: the suite's own bug, which ``line`` says)
    verdict: Verdict | None
    line: str  #: the gate's verdict line (:meth:`GateResult.line`), or its one-line error
    blamed: tuple[Blamed, ...]
    missing: tuple[str, ...] = ()  #: "check: what is missing", of each DATA MISSING check
    not_checked: tuple[str, ...] = ()  #: "check: why", of each NOT CHECKED check

    @property
    def words(self) -> str:
        return self.verdict.words if self.verdict is not None else self.line

    def as_dict(self) -> dict:
        return {"baseline": self.baseline.as_dict(), "candidate": self.candidate.as_dict(),
                "verdict": self.verdict.name if self.verdict is not None else None,
                "exit_status": int(self.verdict.exit_code if self.verdict is not None else ExitCode.NO_VERDICT),
                "words": self.words, "line": self.line, "blamed": [b.as_dict() for b in self.blamed],
                "missing": list(self.missing), "not_checked": list(self.not_checked)}


def said_of(result: GateResult) -> PairVerdict:
    """The report's words of a gate result: the gate's verdict, line and failing or undecided lines
    (each check's first ``failing`` details, with its culprits), nothing of its own."""
    blamed = tuple(Blamed(c.name, Status.UNDECIDED if culprit.undecided else Status.FAIL, words, culprit)
                   for c in result.checks if c.status in (Status.FAIL, Status.UNDECIDED)
                   for words, culprit in zip(c.details[:c.failing], c.culprits))
    return PairVerdict(result.baseline, result.candidate, result.verdict, result.line(), blamed,
                       tuple(f"{c.name}: {c.worst}" for c in result.checks if c.status is Status.MISSING),
                       tuple(f"{c.name}: {c.worst}" for c in result.checks if c.status is Status.NOT_CHECKED))


def pair_verdict(history: res.History, baseline: res.Commit, candidate: res.Commit,
                 thresholds: Thresholds) -> PairVerdict:
    """What the report says of ``candidate`` against ``baseline``: :func:`said_of` the gate's
    :func:`~suite.reporting.gate.evaluate` of the pair, as ``tvm-suite gate --commit CANDIDATE
    --baseline BASELINE --no-remeasure`` gives it. Nothing is timed: a suspect an earlier gate timed
    again and kept (``runs/.gate/``, :func:`suite.reporting.gate.with_remeasured`) is judged as that
    gate judged it; one no gate timed again is said as the gate says it, UNDECIDED (NO VERDICT), and
    ``tvm-suite gate`` decides it. Where the gate gives no verdict (a deterministic metric that moved
    under the same code) the line is its error."""
    return _pair(history, baseline, candidate, thresholds, gate.baseline_of(history, candidate, baseline.hash)[1])


def _pair(history, baseline, candidate, thresholds, note: str) -> PairVerdict:
    try:
        return said_of(gate.evaluate(history, candidate, baseline, thresholds, None, note))
    except code_identity.NotDeterministic as err:
        return PairVerdict(baseline, candidate, None, f"no verdict: {err}", ())


def series_verdicts(history: res.History, thresholds: Thresholds, result: GateResult | None = None
                    ) -> list[PairVerdict]:
    """The gate's verdict on each commit against the one before it with data (``[latency] baseline
    = "previous"``: a commit whose build failed is passed over, as the gate passes it over), oldest
    first. ``result``: a verdict the gate gave on one of these pairs, re-timings included (`run`,
    `check`): that pair is said as it was given, never judged again."""
    pairs = []
    for candidate in history.commits:
        baseline, note = gate.baseline_of(history, candidate, "previous")
        if baseline is None:
            continue
        if result is not None and result.baseline is not None and (result.baseline.hash, result.candidate.hash) == (
                baseline.hash, candidate.hash):
            pairs.append(said_of(result))
        else:
            pairs.append(_pair(history, baseline, candidate, thresholds, note))
    return pairs


def bisect_command(tvm_repo, last_good: str, first_bad: str, series: res.Series, metric: str) -> str:
    """The command that finds the commit between two commits where ``metric`` of ``series`` worsened."""
    workload, dtype, target, order = series.ids
    return (f"tvm-suite bisect --tvm-repo {tvm_repo or 'CLONE'} --range {last_good[:12]}..{first_bad[:12]} "
            f"--workload {workload} --dtype {dtype} --target {target} --order {order} --metric {metric}")


def bisectable(metric: str | None) -> bool:
    """Whether `tvm-suite bisect` searches ``metric``: asv's lower-is-better benchmarks only."""
    if metric is None:
        return False
    found = tracked.get(metric)
    return found.worse is not None and found.in_asv


def pair_facts(history: res.History, pair: PairVerdict) -> dict:
    """A pair as report.json keeps it and the page shows it: :meth:`PairVerdict.as_dict`, each
    failing line with the command that finds its commit (``bisect``), each undecided one with the
    gate that decides it (``decide``), and whose tuning records the tuned order replayed."""
    facts = pair.as_dict()
    base, now = pair.baseline, pair.candidate
    for entry, b in zip(facts["blamed"], pair.blamed):
        s = b.culprit.series
        entry["bisect"] = (bisect_command(history.repo, base.hash, now.hash, s, b.culprit.metric)
                           if b.status is Status.FAIL and bisectable(b.culprit.metric) else None)
        entry["decide"] = (f"tvm-suite gate --results {history.results_dir} --commit {now.short} "
                           f"--baseline {base.short}" if b.status is Status.UNDECIDED else None)
        records = [history.kept(c.hash, s.machine).records.get(s.ids) for c in (base, now)]
        entry["records"] = records if s.order == "tuned" and any(records) else None
    return facts
