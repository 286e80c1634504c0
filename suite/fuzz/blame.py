"""A finding made small and attributed (issue 63): its trace delta-debugged (:func:`minimise`) while
it still fails the same way, then the lowering pass and the schedule primitive to blame
(:func:`attribute`): the pass of TVM's lowering whose removal makes the output right (where no
pass the build can do without does, the pass the pipeline run pass by pass shows changing what the
program computes: :mod:`suite.fuzz.bisection`), and the instruction of the minimised trace whose
removal does.

Every step is judged by a callback of the campaign's (``fails``, ``judge``), which builds and runs
the schedule with the campaign's worker children: the same TVM, the same environment and hooks as
the finding's own run, each attempt built to a kernel file of its own. Nothing here imports TVM.

A trace is MetaSchedule's JSON trace, ``[instructions, decisions]``: each instruction ``[kind,
inputs, attributes, outputs]``, each decision ``[instruction's position, value]``. An instruction
is only ever dropped with every later one that uses what it made (:func:`drop`), and the decisions
move with their instructions, so that every candidate is a trace TVM can replay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from suite.fuzz.bisection import Bisection
from suite.fuzz.outcome import Outcome

#: Instructions that look things up or sample: never the primitive a finding is blamed on.
NOT_PRIMITIVES = re.compile(r"^(Get\w*|Sample\w*|EnterPostproc)$")


def drop(trace: list, positions) -> list:
    """``trace`` without the instructions at ``positions`` and every later one that uses what a
    dropped one made (transitively); each decision kept with its instruction."""
    instructions, decisions = trace[0], {d[0]: d[1] for d in trace[1]}
    gone, dead = set(positions), set()
    for n, (_kind, inputs, _attrs, outputs) in enumerate(instructions):
        if n in gone or any(isinstance(i, str) and i in dead for i in flat_values(inputs)):
            gone.add(n)
            dead.update(o for o in outputs if isinstance(o, str))
    kept = [n for n in range(len(instructions)) if n not in gone]
    return [[instructions[n] for n in kept],
            [[new, decisions[old]] for new, old in enumerate(kept) if old in decisions]]


def replayable(func) -> Callable[[list], list | None]:
    """What makes a candidate trace one that replays on the PrimFunc ``func``: the candidate less
    each instruction TVM refuses there (with what depends on it), found by replaying prefixes, in
    milliseconds each, so that a candidate costs no build it cannot use (a ``GetLoops`` that finds
    fewer loops once a split is gone goes, with what uses its loops); None where nothing is left
    that replays."""
    from suite.compat import schedules

    def replays(trace: list) -> bool:
        try:
            schedules.apply_trace(trace, schedules.schedule(func))
        except Exception:  # any refusal of TVM's: TVMError, ScheduleError, ValueError
            return False
        return True

    def prefix(trace: list, size: int) -> list:
        return [trace[0][:size], [d for d in trace[1] if d[0] < size]]

    def repaired(trace: list) -> list | None:
        while not replays(trace):
            low, high = 0, len(trace[0])  # prefix(low) replays, prefix(high) does not
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if replays(prefix(trace, middle)) else (low, middle)
            if high == 0:
                return None
            trace = drop(trace, [high - 1])
        return trace

    return repaired


def flat_values(value):
    """Every leaf of a trace instruction's nested argument lists, in order."""
    if isinstance(value, list):
        for item in value:
            yield from flat_values(item)
    else:
        yield value


@dataclass(frozen=True)
class Minimised:
    """The smallest trace found that still fails as the finding did, and what it took."""

    trace: list
    original_instructions: int
    tries: int  #: builds made (each one a build and a run)
    complete: bool  #: whether it is 1-minimal (no single instruction can go), not cut short by the budget

    @property
    def instructions(self) -> int:
        return len(self.trace[0])


def minimise(trace: list, fails: Callable[[list], bool], tries: int,
             repaired: Callable[[list], list | None] = lambda trace: trace) -> Minimised:
    """Zeller's ddmin over ``trace``'s primitives (its instructions less the lookups and samples,
    :data:`NOT_PRIMITIVES`), split into chunks: the candidate that keeps one chunk alone, then the
    one that drops one chunk (each with what depends on what it drops), is kept where
    ``fails(candidate)`` says it still fails as the finding did; the chunks are made finer until
    no single primitive can go (one is always kept), or ``tries`` builds are spent. Each candidate
    is first made one that replays (``repaired``: :func:`replayable`; None: none does), then the
    lookups and samples nothing uses any more are dropped from it (they change no schedule: the
    decisions are in the trace), so the trace kept is one ``fails`` judged (or ``trace`` itself);
    one the same as the trace or one tried before is not built."""
    current, spent, seen = trace, 0, set()
    chunks = 2
    while True:
        units = primitive_positions(current)
        if not units:
            break
        chunks = min(chunks, len(units))
        bounds = [(len(units) * k) // chunks for k in range(chunks + 1)]
        parts = [units[bounds[k]:bounds[k + 1]] for k in range(chunks)]
        alone = [[u for u in units if u not in part] for part in parts] if chunks > 2 else []
        found = None
        for kept_alone, dropped in [(True, d) for d in alone] + [(False, d) for d in parts]:
            candidate = repaired(drop(current, dropped))
            # the trace judged is the trace kept: lookups and samples left unused go before the build
            candidate = None if candidate is None else unused_lookups_dropped(candidate)
            key = repr(candidate)
            # a trace of no primitive schedules nothing: triage refuses it, so no reproducer is one
            if candidate is None or key in seen or len(candidate[0]) == len(current[0]) \
                    or not primitive_positions(candidate):
                continue
            seen.add(key)
            if spent >= tries:
                return Minimised(current, len(trace[0]), spent, False)
            spent += 1
            if fails(candidate):
                found = (candidate, kept_alone)
                break
        if found is not None:
            current = found[0]
            chunks = 2 if found[1] else max(chunks - 1, 2)
            continue
        if chunks >= len(units):
            break
        chunks = min(len(units), chunks * 2)
    return Minimised(current, len(trace[0]), spent, True)


def primitive_positions(trace: list) -> list[int]:
    return [n for n, instruction in enumerate(trace[0]) if not NOT_PRIMITIVES.match(instruction[0])]


def unused_lookups_dropped(trace: list) -> list:
    """``trace`` without the lookups and samples whose outputs no later instruction uses (repeated:
    a lookup only a dropped one used goes too)."""
    while True:
        used = {i for instruction in trace[0] for i in flat_values(instruction[1]) if isinstance(i, str)}
        unused = [n for n, (kind, _inputs, _attrs, outputs) in enumerate(trace[0])
                  if NOT_PRIMITIVES.match(kind) and kind != "EnterPostproc" and not any(o in used for o in outputs)]
        if not unused:
            return trace
        trace = drop(trace, unused)


@dataclass(frozen=True)
class Tried:
    """One rebuild of the finding: what was taken out, and the outcome."""

    what: str  #: a pass's name, or an instruction's ``kind #position``
    how: str  #: "left out" (disabled_pass), "switched off" (its pass option), "dropped" (from the trace)
    outcome: Outcome
    message: str = ""


@dataclass(frozen=True)
class Blame:
    """The pass and primitive a finding is blamed on (None where no single one makes the output
    right), with every rebuild that says so."""

    verdict: Outcome
    guilty_pass: str | None
    guilty_primitive: str | None  #: the instruction's kind ("Vectorize")
    primitive_block: str | None  #: the block it acts on, where it names one
    passes_run: list[str]
    tried: list[Tried]
    #: the pipeline run pass by pass, where no pass taken out made the output right (None: not run)
    bisection: Bisection | None = None

    @property
    def found_by(self) -> str | None:
        """How the guilty pass was found: "left out" (its removal makes the output right),
        "bisected" (:mod:`suite.fuzz.bisection`), or None where none was."""
        if self.guilty_pass is None:
            return None
        return "bisected" if self.bisection is not None and self.bisection.guilty_pass == self.guilty_pass \
            else "left out"

    @property
    def key(self) -> str:
        """What two findings share when they are one bug: (pass, primitive, verdict)."""
        primitive = self.guilty_primitive or "no single primitive"
        return f"{self.verdict}: pass {self.guilty_pass or 'none alone'}, primitive {primitive}"

    def to_json(self) -> dict:
        return {"verdict": self.verdict.value, "guilty_pass": self.guilty_pass,
                "guilty_primitive": self.guilty_primitive, "primitive_block": self.primitive_block,
                "found_by": self.found_by, "passes_run": self.passes_run,
                "tried": [{"what": t.what, "how": t.how, "outcome": t.outcome.value, "message": t.message}
                          for t in self.tried],
                "bisection": None if self.bisection is None else self.bisection.to_json()}

    def words(self) -> str:
        """The blame in a sentence for the report."""
        if self.found_by == "left out":
            named = f"the output is right with TVM's pass {self.guilty_pass} taken out"
        else:
            named = "no single lowering pass taken out makes the output right"
            if self.bisection is not None:
                named += "; " + self.bisection.words()
        primitive = (f"and with the trace's {self.guilty_primitive}"
                     + (f" on block {self.primitive_block}" if self.primitive_block else "") + " dropped"
                     if self.guilty_primitive else "and no single primitive of the trace dropped makes it right")
        return f"{named}, {primitive}."


def failure_signature(message: str) -> str:
    """A crash's or a hang's message as one bug: its first line, each number read as ``N`` (a
    failed check of TVM's names the sizes of the schedule it failed on: "Cannot broadcast lanes=64
    ... to 256" and, on the program made small, "lanes=16 ... to 32" are one bug)."""
    return re.sub(r"[0-9]+", "N", message.partition("\n")[0])


def same_failure(outcome: Outcome, message: str, again: Outcome, again_message: str) -> bool:
    """Whether a rebuild (``again``) fails as the finding did: the same verdict; for a crash or a
    hang, the same outcome and the same :func:`failure_signature` (another crash is another bug)."""
    if outcome in (Outcome.CRASH, Outcome.TIMEOUT):
        return again is outcome and failure_signature(again_message) == failure_signature(message)
    return again is outcome


def right(outcome: Outcome) -> bool:
    """Whether a rebuild's outcome says its output is right: a verdict, and no wrong one."""
    return outcome.is_verdict and not outcome.is_wrong


#: A rebuild judged: (the request's additions: ``disabled_pass``, ``switched_off`` or a ``trace``)
#: -> (its outcome, a failure's message).
Judge = Callable[[dict], "tuple[Outcome, str]"]


def attribute(verdict: Outcome, trace: list | None, passes: list[str], judge: Judge,
              switches: dict, bisect: Callable[[], Bisection] | None = None) -> Blame:
    """Which lowering pass, and which primitive of ``trace`` (the minimised one), the finding of
    ``verdict`` is to blame on. Each pass of ``passes`` (those TVM ran for it, in order) is taken
    out in turn (``disabled_pass``); one the build needs (the build fails without it) and that
    ``switches`` names (:data:`suite.compat.build.build.PASS_SWITCHES`) is run again with its option that
    makes it do no work. The guilty pass is the last whose removal makes the output right (one
    before it may only have made the faulty pass's input: a loop it vectorizes). Where none does
    (a pass the build cannot run without), ``bisect`` (the finding's lowering run pass by pass:
    :func:`suite.fuzz.bisection.bisect`) names the pass whose output computes something else than
    its input, or none. Then each
    primitive of the trace is dropped in turn, the last first (with what depends on it), until one
    whose removal makes the output right."""
    tried, guilty = [], None
    for name in passes:
        outcome, message = judge({"disabled_pass": [name]})
        tried.append(Tried(name, "left out", outcome, message))
        if not outcome.is_verdict and name in switches:
            outcome, message = judge({"switched_off": [name]})
            tried.append(Tried(name, "switched off", outcome, message))
        if right(outcome):
            guilty = name  # the last such: an earlier one may only make the faulty pass's input
    bisection = bisect() if guilty is None and bisect is not None else None
    if bisection is not None:
        guilty = bisection.guilty_pass
    primitive = block = None
    if trace is not None:
        blocks = {}
        for n, (kind, inputs, attrs, outputs) in enumerate(trace[0]):
            if kind in ("GetSBlock", "GetBlock") and outputs:
                blocks[outputs[0]] = attrs[0]
        for n in reversed(range(len(trace[0]))):
            kind, inputs = trace[0][n][0], trace[0][n][1]
            if NOT_PRIMITIVES.match(kind):
                continue
            outcome, message = judge({"trace": drop(trace, [n])})
            tried.append(Tried(f"{kind} #{n}", "dropped", outcome, message))
            if right(outcome):
                primitive = kind
                block = next((blocks[i] for i in flat_values(inputs) if isinstance(i, str) and i in blocks), None)
                break
    return Blame(verdict, guilty, primitive, block, list(passes), tried, bisection)


def report_words(verdict: Outcome, reduced: Minimised | None, blamed: Blame | None) -> str:
    """The lines of a finding's report.md on its minimisation and its blame ("" where neither was made)."""
    lines = []
    if reduced is not None:
        lines += [f"Minimised: {reduced.instructions} of the trace's {reduced.original_instructions} instructions kept "
                  f"(minimised.json; after.py is the program it schedules), in {reduced.tries} builds, each judged "
                  f"{verdict} again by the campaign's worker; for a wrong result, the trace kept is one the command "
                  "above judged so too, wherever it judges the sampled trace so " + ("(no single instruction more can go)." if reduced.complete
                                            else "(cut short by the budget)."), ""]
    if blamed is not None:
        lines += [f"Blame: {blamed.words()} Every rebuild is in blame.json.", ""]
    return "\n".join(lines)
