"""What a fuzz campaign's journal says: the verdict counts of each combination, the findings after
deduplication, the planted bugs' recall and the false alarms (:class:`Summary`, :func:`summarize`)."""

from __future__ import annotations

from dataclasses import dataclass

from suite.errors import ExitCode
from suite.fuzz.directory import shown
from suite.fuzz.journal import JournalLine
from suite.fuzz.outcome import FINDINGS, Outcome

#: Every outcome, in the order of the table's columns.
OUTCOMES = tuple(Outcome)
#: The exit status of each kind of finding (suite.fuzz.outcome.FINDINGS: the first found's is the campaign's).
EXIT_STATUS = {Outcome.CHANGED: ExitCode.CHANGED, Outcome.UNDEFINED: ExitCode.UNDEFINED,
               Outcome.SHIFTED: ExitCode.SHIFTED, Outcome.CRASH: ExitCode.CRASHED, Outcome.TIMEOUT: ExitCode.CRASHED}
#: Why a plant that applied is not counted: its program computes what the unplanted one does.
NO_EFFECT = "the edit changes nothing here: the planted program's output is the unplanted one's, bit for bit"

def upper_bound_95(found: int, trials: int) -> float | None:
    """The exact (Clopper-Pearson) 95% upper bound of a rate seen ``found`` times in ``trials``."""
    if trials == 0:
        return None
    from scipy.stats import binomtest

    return float(binomtest(found, trials).proportion_ci(0.95).high)


@dataclass(frozen=True)
class Found:
    """One finding after deduplication: its key, outcome, how many schedules share it, the first's directory."""

    key: str
    outcome: Outcome
    count: int
    first: str


@dataclass(frozen=True)
class PlantedKind:
    """The plants of one kind: what they should be judged, and how many were judged what (in the
    order first seen)."""

    expected: str
    verdicts: dict[Outcome, int]


@dataclass(frozen=True)
class Recall:
    """The planted bugs: how many applied and changed the output (``planted``), how many of those
    were judged wrong (``caught``), by kind; not applicable, of which the edit changed nothing."""

    planted: int
    caught: int
    kinds: dict[str, PlantedKind]
    not_applicable: int
    no_effect: int

    @property
    def recall(self) -> float | None:
        return self.caught / self.planted if self.planted else None


@dataclass(frozen=True)
class Summary:
    """What a campaign's journal says (:func:`summarize`): the verdict counts of each combination,
    the findings, the recall and the false alarms, with the run's figures. :meth:`to_json` is
    ``summary.json`` and ``--json``'s document, :meth:`text` the table for people."""

    table: dict[str, dict[Outcome, int]]  #: by combination's label, every outcome's count
    findings: list[Found]  #: the most serious first
    plant: Recall
    unmodified_judged: int
    false_changed: int
    unmodified_shifted: int
    false_changed_upper_95: float | None
    judged_this_run: int
    seconds: float
    judged_per_hour: float | None
    stopped: str | None  #: "time": stopped at --minutes
    exit_status: ExitCode
    thresholds: dict | None = None  #: the thresholds' source, lambda and limit, once the campaign ran
    where: str | None = None  #: where the schedules were built and run, once the campaign ran
    #: Unmodified schedules judged CHANGED, UNDEFINED or SHIFTED: named orders, sampled traces.
    wrong_orders: int = 0
    wrong_traces: int = 0
    #: Sampled traces whose design space offered a dot-product intrinsic (int8), and of those the
    #: ones that tensorized with it.
    traces_offered_intrinsic: int = 0
    traces_tensorized: int = 0

    @property
    def compiler_fault(self) -> bool:
        """Whether named orders and sampled traces both came out wrong: the compiler or the runtime
        is at fault, not the oracle (its false alarms are counted on a sound compiler)."""
        return self.wrong_orders > 0 and self.wrong_traces > 0

    def to_json(self) -> dict:
        found = {
            "table": {label: {o.value: n for o, n in row.items()} for label, row in self.table.items()},
            "findings": [{"key": f.key, "outcome": f.outcome.value, "count": f.count, "first": f.first}
                         for f in self.findings],
            "plant": {"planted": self.plant.planted, "caught": self.plant.caught, "recall": self.plant.recall,
                      "kinds": {kind: {"expected": entry.expected,
                                       "verdicts": {o.value: n for o, n in entry.verdicts.items()}}
                                for kind, entry in self.plant.kinds.items()},
                      "not_applicable": self.plant.not_applicable, "no_effect": self.plant.no_effect},
            "unmodified_judged": self.unmodified_judged, "false_changed": self.false_changed,
            "unmodified_shifted": self.unmodified_shifted, "false_changed_upper_95": self.false_changed_upper_95,
            "judged_this_run": self.judged_this_run, "seconds": self.seconds,
            "judged_per_hour": self.judged_per_hour, "stopped": self.stopped, "exit_status": int(self.exit_status),
            "unmodified_wrong": {"orders": self.wrong_orders, "traces": self.wrong_traces},
            "compiler_fault": self.compiler_fault,
            "tensorized": {"traces_offered_intrinsic": self.traces_offered_intrinsic,
                           "traces_tensorized": self.traces_tensorized},
        }
        if self.thresholds is not None:
            found["thresholds"] = self.thresholds
        if self.where is not None:
            found["where"] = self.where
        return found

    def text(self) -> str:
        """The summary for people: verdict counts per combination, findings, recall, false alarms.
        Text read from the journal (labels, keys, places) is :func:`shown`: no character of it acts
        on the terminal."""
        columns = [o for o in OUTCOMES if any(row[o] for row in self.table.values())]
        labels = {label: shown(label) for label in self.table}
        width = max([len(label) for label in labels.values()] + [12])
        lines = [f"{'combination':<{width}}  " + "  ".join(f"{o:>10}" for o in columns)]
        for label, row in self.table.items():
            lines.append(f"{labels[label]:<{width}}  " + "  ".join(f"{row[o]:>10}" for o in columns))
        lines.append("")
        if self.findings:
            lines.append(f"findings ({len(self.findings)} after deduplication):")
            lines += [f"  {f.count:>3} x {shown(f.key)}  ({shown(f.first)})" for f in self.findings]
        else:
            lines.append("findings: none")
        planted = self.plant
        if planted.planted:
            lines.append(f"planted bugs: {planted.caught} of {planted.planted} judged CHANGED, SHIFTED or UNDEFINED "
                         f"(recall {planted.recall:.0%}); not applicable: {planted.not_applicable}, of which "
                         f"{planted.no_effect} changed nothing (output bit for bit the unplanted program's)")
            for kind, entry in planted.kinds.items():
                verdicts = ", ".join(f"{k} {v}" for k, v in entry.verdicts.items())
                lines.append(f"  {shown(kind):<24} should be {shown(entry.expected)}: {verdicts}")
        bound = self.false_changed_upper_95
        if self.compiler_fault:
            lines.append(f"the default and sampled schedules both differ from the reference: a compiler or runtime "
                         f"fault, not the oracle's (CHANGED, UNDEFINED or SHIFTED: {self.wrong_orders} named orders and "
                         f"{self.wrong_traces} sampled traces of {self.unmodified_judged} unmodified schedules)")
        else:
            lines.append(f"false CHANGED on unmodified schedules: {self.false_changed} of {self.unmodified_judged}"
                         + (f" (95% upper bound {bound:.3f})" if bound is not None else "")
                         + f"; SHIFTED (suspect, kept as findings): {self.unmodified_shifted}")
        if self.traces_offered_intrinsic:
            lines.append(f"sampled traces tensorized: {self.traces_tensorized} of {self.traces_offered_intrinsic} "
                         "sampled from a design space offering a dot-product intrinsic (int8)")
        rate = self.judged_per_hour
        lines.append(f"{self.judged_this_run} judged in {self.seconds:.0f} s"
                     + (f" ({rate:.0f} per hour)" if rate else "")
                     + ("; stopped at --minutes: rerun with the same --seed and --out to continue"
                        if self.stopped == "time" else ""))
        return "\n".join(lines)


def summarize(lines: list[JournalLine], combinations: list, elapsed_s: float, judged_now: int,
              stopped: str | None) -> Summary:
    """The summary of a campaign's journal ``lines``; each of its ``combinations`` (the campaign's
    :class:`suite.fuzz.combinations.Combination`) has a row of the table, judged or not."""
    table = {}
    for c in combinations:
        table[c.label] = dict.fromkeys(OUTCOMES, 0)
    for line in lines:
        if line.kind != "plant":
            table.setdefault(line.label, dict.fromkeys(OUTCOMES, 0))[line.outcome] += 1
    counts, first = {}, {}
    for line in lines:
        if line.finding:
            found = line.finding.key
            counts[found] = counts.get(found, 0) + 1
            first.setdefault(found, (line.outcome, line.finding.dir))
    findings = sorted((Found(key, first[key][0], count, first[key][1]) for key, count in counts.items()),
                      key=lambda f: FINDINGS.index(f.outcome))
    plants = [line for line in lines if line.kind == "plant"]
    planted = [line for line in plants if line.outcome is not Outcome.NOT_APPLICABLE]
    kinds = {}
    for line in plants:
        entry = kinds.setdefault(line.planted, PlantedKind(line.expected, {}))
        entry.verdicts[line.outcome] = entry.verdicts.get(line.outcome, 0) + 1
    unmodified = [line for line in lines if line.kind != "plant" and line.outcome.is_verdict]
    false_changed = sum(1 for line in unmodified if line.outcome is Outcome.CHANGED)
    status = next((EXIT_STATUS[kind] for kind in FINDINGS if any(f.outcome is kind for f in findings)), ExitCode.OK)
    return Summary(
        table=table, findings=findings,
        plant=Recall(planted=len(planted), caught=sum(1 for line in planted if line.outcome.is_wrong), kinds=kinds,
                     not_applicable=len(plants) - len(planted),
                     no_effect=sum(1 for line in plants if line.message == NO_EFFECT)),
        unmodified_judged=len(unmodified), false_changed=false_changed,
        unmodified_shifted=sum(1 for line in unmodified if line.outcome is Outcome.SHIFTED),
        false_changed_upper_95=upper_bound_95(false_changed, len(unmodified)),
        judged_this_run=judged_now, seconds=round(elapsed_s, 1),
        judged_per_hour=round(judged_now * 3600 / elapsed_s, 1) if elapsed_s > 0 and judged_now else None,
        stopped=stopped, exit_status=status,
        wrong_orders=sum(1 for line in unmodified if line.kind == "order" and line.outcome.is_wrong),
        wrong_traces=sum(1 for line in unmodified if line.kind == "trace" and line.outcome.is_wrong),
        traces_offered_intrinsic=sum(1 for line in lines if line.kind == "trace" and line.tensorized is not None),
        traces_tensorized=sum(1 for line in lines if line.kind == "trace" and line.tensorized))
