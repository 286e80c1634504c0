"""What a triage found, as ``tvm-suite triage`` prints it (the verdict first) and as ``--json``."""

from __future__ import annotations

from dataclasses import dataclass, field

from suite.core.record import Status
from suite.triage import verdict


@dataclass
class TargetOutcome:
    """One target: ``status`` ok (a judgement), skipped or failed (``reason``). ``outputs``: each
    output's judgement, by name in parameter order; ``judgement`` is the only one's, or for a
    program of several outputs the most serious (:func:`suite.triage.verdict.worst_output`)."""

    target: str
    status: Status
    reason: str = ""
    judgement: verdict.Judgement | None = None
    seconds: dict = field(default_factory=dict)
    tuning: dict | None = None
    after_script: str | None = field(default=None, repr=False)  # the after program judged, TVMScript (a tuned one differs per target)
    outputs: dict[str, verdict.Judgement] = field(default_factory=dict)

    def to_json(self) -> dict:
        found = {"target": self.target, "status": self.status.value, "seconds": self.seconds}
        if self.reason:
            found["reason"] = self.reason
        if self.judgement is not None:
            found.update(self.judgement.to_json())
        if self.outputs:
            found["outputs"] = [{"output": name, **j.to_json()} for name, j in self.outputs.items()]
        if self.tuning is not None:
            found["tuning"] = self.tuning
        return found


@dataclass
class Report:
    function: str
    before: str
    after: str
    output: str
    inputs: list[str]
    reference: dict
    findings: list = field(default_factory=list)
    outcomes: list[TargetOutcome] = field(default_factory=list)
    reproducer: dict | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str | None:
        if self.findings:
            return verdict.UNDEFINED
        kinds = [o.judgement.kind for o in self.outcomes if o.judgement is not None]
        return verdict.most_serious(kinds) if kinds else None

    @property
    def exit_status(self) -> int:
        found = self.verdict
        return int(verdict.EXIT_STATUS[found] if found else verdict.NOTHING_RAN)

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict, "exit_status": self.exit_status, "function": self.function,
            "before": self.before, "after": self.after, "output": self.output, "inputs": self.inputs,
            "reference": self.reference, "undefined": [f.to_json() for f in self.findings],
            "targets": [o.to_json() for o in self.outcomes], "reproducer": self.reproducer, "notes": self.notes,
        }

    def headline(self) -> str:
        found = self.verdict
        if found == verdict.UNDEFINED and self.findings:  # else the after program's runs: a target's
            first = self.findings[0]
            more = f" (and {len(self.findings) - 1} more kind(s) below)" if len(self.findings) > 1 else ""
            return f"UNDEFINED: the before program {first.message}{more}"
        if found is None:
            reasons = "; ".join(f"{o.target}: {o.reason}" for o in self.outcomes)
            return f"NO VERDICT: no target ran both programs ({reasons})"
        judged = [o for o in self.outcomes if o.judgement is not None and o.judgement.kind == found]
        names = ", ".join(o.target for o in judged)
        return f"{found} on {names}: {judged[0].judgement.summary}"

    def text(self) -> str:
        lines = [self.headline()]
        lines.append(f"before     {self.before}: {self.function}")
        lines.append(f"after      {self.after}")
        lines.append(f"inputs     {'; '.join(self.inputs) or 'none'}")
        ref = self.reference
        k_words = f", K = {ref['accumulation_length']}" if ref.get("accumulation_length") is not None else ""
        lines.append(f"reference  the suite's TIR interpreter, exact ({ref['arithmetic']}), {ref['seconds']:.2f} s"
                     f"{k_words}; output{'s' if ', ' in self.output else ''} {self.output}")
        for finding in self.findings:
            count = f" ({finding.count:,} times)" if finding.count > 1 else ""
            lines.append(f"undefined  {finding.kind}: {finding.message}{count}")
        if self.findings:
            lines.append("           not compiled: two correct compilations of an undefined program may differ "
                         "arbitrarily, so a difference is no evidence against the scheduler")
        for outcome in self.outcomes:
            lines.extend(_outcome_lines(outcome))
        if self.reproducer:
            lines.append(f"reproducer {self.reproducer['path']}: {self.reproducer['summary']}")
        for note in self.notes:
            lines.append(f"note       {note}")
        return "\n".join(lines)


def _outcome_lines(outcome: TargetOutcome) -> list[str]:
    name = f"{outcome.target:10s}"
    if outcome.tuning is not None:
        t = outcome.tuning
        lines = [f"{name} tuned: {t['trials']} trials, {t['measured']} measured, {t['checked']} outputs checked "
                 f"against the reference, {t['refused']} refused (CHANGED), {t['failed']} failed otherwise"]
    else:
        lines = []
    if outcome.judgement is None:
        return lines + [f"{name} {outcome.status.value}: {outcome.reason}"]
    j = outcome.judgement
    seconds = outcome.seconds
    timing = ""
    if seconds:
        timing = f" (built and run in {seconds.get('before', 0):.1f} s + {seconds.get('after', 0):.1f} s)"
    if len(outcome.outputs) > 1:  # the worst output's verdict, then each output's own
        each = ", ".join(f"{n} {o.kind}" for n, o in outcome.outputs.items())
        lines.append(f"{name} {j.kind}: outputs {each}{timing}")
        for output, judged in outcome.outputs.items():
            lines.extend(_judgement_lines(" " * 11 + f"{output} ", judged, " " * 13))
        return lines
    return lines + _judgement_lines(f"{name} ", j, " " * 11, timing)


def _judgement_lines(head: str, j: verdict.Judgement, indent: str, timing: str = "") -> list[str]:
    """A judgement's line (``head``, its kind and summary) and its figures and notes (``indent``)."""
    lines = [f"{head}{j.kind}: {j.summary}{timing}"]
    f = j.figures
    if j.kind == verdict.EQUIVALENT and "before_bound_fraction" in f:
        lines.append(indent + f"both use {f['before_bound_fraction']:.3g} of the rounding bound")
    if "after_bound_fraction" in f:
        bits = [f"bound fraction before {f['before_bound_fraction']:.3g}, after {f['after_bound_fraction']:.3g}"]
        if "twin_after_bound_fraction" in f:
            bits.append(f"IEEE twin before {f['twin_before_bound_fraction']:.3g}, after "
                        f"{f['twin_after_bound_fraction']:.3g}")
        if "error_ratio" in f and j.kind != verdict.EQUIVALENT:
            bits.append(f"error ratio {f['error_ratio']:.3f} (z {f['error_ratio_z']:.1f}), bias shift "
                        f"{f['bias_shift']:+.3f} (|z| {f['bias_shift_z']:.1f})")
        lines.append(indent + "; ".join(bits))
    for note in j.notes:
        lines.append(indent + f"note: {note}")
    return lines
