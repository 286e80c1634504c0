"""The guilty pass found by running TVM's lowering pass by pass (issue 63, item 2), for a finding
whose output no pass TVM lets the build leave out makes right (``s_tir.LowerOpaqueBlock``: the
build cannot run without it).

The real build records the program before and after each pass that changed it
(:func:`recording`: a pass instrument, so the passes are those TVM runs for the target, in its
order). Each program is then evaluated by the triage interpreter (:mod:`suite.triage.interp`:
exact, in float64, with no code of TVM's compiler) on its inputs, and the pipeline is bisected
(:func:`bisect`): the pass named is one whose input computes what the scheduled program computes
and whose output computes something else. The campaign bisects the finding's reproducer (its
program made small: :mod:`suite.fuzz.shrink`) where it has one, else its schedule. The
interpreter reads the program through the device-side lowering: flattened buffers declared over
others' data, vector stores, loads and registers (``tirx.VectorizeLoop``, ``tirx.StorageRewrite``),
unrolled loops, ``tirx.RemoveNoOp``'s output, up to ``tirx.MakePackedAPI``, whose function takes
handles, not buffers. Passes after the last program it evaluates are never named, and the words
say where it stopped.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np

#: Passes that wrap others (the pipeline's own module pass, a Sequential): never one to blame.
WRAPPERS = frozenset({"_pipeline", "sequential", "Sequential"})
#: How far two evaluations' values may be apart and still compute the same: a reordered sum in
#: float64 is some K * 1e-16 of its magnitudes apart; a planted or real miscompilation, far more.
RELATIVE = 1e-6
#: The seconds a worker may take to build and bisect one program: a reproducer's programs are
#: interpreted in milliseconds; a full-size one's in seconds to minutes each, where scalar loops
#: (a reduction) leave the interpreter nothing to run as lanes: past this, no pass is named. The
#: unrolled `tuned` order of a ResNet-50 matmul took 59 s at load 8 and ran past 120 s at load 11:
#: a builder's 300 s, so that the load does not decide whether a pass is named.
TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Stage:
    """One pass that changed the program: its name, the PrimFunc it was given and the one it made."""

    name: str
    before: object
    after: object


@contextlib.contextmanager
def recording(stages: list, function: str = "main"):
    """The builds inside, each pass that changed the PrimFunc ``function`` appended to ``stages``
    (:class:`Stage`) in the order TVM ran them; every other setting of the current pass context kept."""
    from suite.compat import release
    from suite.triage import tvmscript

    tvm = release.tvm()
    given = []  # a stack: passes nest (the pipeline's own module pass runs the others)

    def found(mod):
        for gv, func in mod.functions.items():
            if str(gv.name_hint) == function:
                return func
        return None

    @tvm.instrument.pass_instrument
    class Recorder:
        def run_before_pass(self, mod, _info):
            given.append(found(mod))

        def run_after_pass(self, mod, info):
            before, after = given.pop(), found(mod)
            if info.name in WRAPPERS or before is None or after is None or before.same_as(after):
                return
            if not tvmscript.same_program(before, after):
                stages.append(Stage(info.name, before, after))

    current = tvm.transform.PassContext.current()
    with tvm.transform.PassContext(opt_level=current.opt_level, required_pass=list(current.required_pass),
                                   disabled_pass=list(current.disabled_pass),
                                   instruments=[*current.instruments, Recorder()], config=dict(current.config)):
        yield stages


@dataclass(frozen=True)
class Evaluated:
    """One program of the pipeline evaluated: the pass that made it ("" for the scheduled program),
    what it computed against the scheduled program's result ("same", "differs", or why the
    interpreter could not evaluate it), and the seconds it took."""

    after: str
    result: str
    seconds: float


@dataclass(frozen=True)
class Bisection:
    """The pass whose output first computes something else than its input (None where no single
    pass evaluated does), with every evaluation made and where the interpreter stopped."""

    guilty_pass: str | None
    passes: int  #: passes that changed the program
    evaluable: int  #: of them, those (from the first) whose output the interpreter reads
    stopped: str  #: why it reads no further ("" where it read the whole pipeline)
    difference: str  #: the first element the guilty pass changes, in words ("" where none)
    evaluated: list
    on: str = "the program"  #: the program lowered, in words ("the finding's reproducer")

    def words(self) -> str:
        """How the pass was found (or not), in words for the report."""
        reach = (f"the interpreter read the first {self.evaluable} of the {self.passes} passes that changed the "
                 f"program; {self.stopped}" if self.stopped
                 else f"the interpreter read all {self.passes} passes that changed the program")
        how = (f"the lowering of {self.on} run pass by pass, each program evaluated by the triage interpreter on "
               "its inputs")
        if not self.evaluated:
            return f"the lowering of {self.on} was not bisected ({self.stopped})"
        if self.guilty_pass is None:
            return f"with {how}, no pass's output computes something else than its input ({reach})"
        return (f"with {how}, TVM's pass {self.guilty_pass} is the one whose output computes something else than "
                f"its input ({self.difference}; {reach})")

    def to_json(self) -> dict:
        return {"guilty_pass": self.guilty_pass, "passes": self.passes, "evaluable": self.evaluable,
                "stopped": self.stopped, "difference": self.difference, "on": self.on,
                "evaluated": [{"after": e.after, "result": e.result, "seconds": e.seconds} for e in self.evaluated]}

    @classmethod
    def from_json(cls, data) -> Bisection:
        """The bisection a worker child wrote (ValueError where it is not one: a confined child's file)."""
        try:
            evaluated = [Evaluated(_text(e["after"]), _text(e["result"]), float(e["seconds"]))
                         for e in data["evaluated"]]
            guilty = data["guilty_pass"]
            found = cls(None if guilty is None else _text(guilty), _count(data["passes"]), _count(data["evaluable"]),
                        _text(data["stopped"]), _text(data["difference"]), evaluated, _text(data["on"]))
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a bisection: {err}") from None
        return found


def _text(value) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r:.40} where text belongs")
    return value


def _count(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{value!r:.40} where a count belongs")
    return value


class _Unevaluable(Exception):
    pass


@dataclass
class _Run:
    """One program's evaluation: each output's values, magnitudes and written elements, and the
    kinds of undefined behaviour found."""

    outputs: list
    findings: set


def bisect(stages: list[Stage], arrays: list[np.ndarray], on: str = "the program") -> Bisection:
    """The pass of ``stages`` (:func:`recording`: the lowering of ``on``, in words) whose input
    computes, on ``arrays`` (the function's input parameters' values, in parameter order), what
    the scheduled program (the first stage's input) computes, and whose output computes something
    else: values apart by more than :data:`RELATIVE` of their magnitudes, other elements written,
    or undefined behaviour the input had not. The programs are bisected (the interpreter takes
    seconds to a minute on a full-size workload's program, milliseconds on a reproducer's), within
    the passes whose output the interpreter reads."""
    from suite.triage import tvmscript

    programs = [("", stages[0].before)] + [(s.name, s.after) for s in stages] if stages else []
    translated, stopped = [], ""
    for after, func in programs:  # translating is cheap: the interpreter's reach, before any run
        try:
            translated.append(tvmscript.translate(func, "main"))
        except tvmscript.Unsupported as err:
            stopped = f"it stops at {after}'s output: {err}" if after else f"it reads no program: {err}"
            break
    runs: dict[int, _Run | str] = {}
    evaluated = []

    def run(n: int):
        if n not in runs:
            started = time.perf_counter()
            try:
                runs[n] = _evaluate(translated[n], arrays)
            except _Unevaluable as err:
                runs[n] = str(err)
            result = runs[n] if isinstance(runs[n], str) else "same" if n == 0 or _same(runs[0], runs[n]) is None \
                else "differs"
            evaluated.append(Evaluated(programs[n][0], result, round(time.perf_counter() - started, 3)))
        return runs[n]

    def found(reach: int, why: str, guilty=None, difference=""):
        return Bisection(guilty, len(stages), reach, why, difference, evaluated, on)

    if not translated or isinstance(run(0), str):
        return found(0, stopped or f"it stops at the scheduled program: {runs.get(0)}")
    low, high = 0, len(translated) - 1
    while high > 0 and isinstance(run(high), str):  # an error only a run finds: read no further
        stopped, high = f"it stops at {programs[high][0]}'s output: {runs[high]}", high - 1
    reach = high
    if high == 0 or _same(runs[0], runs[high]) is None:
        return found(reach, stopped)
    while high - low > 1:  # programs[low] computes as the scheduled one, programs[high] does not
        middle = (low + high) // 2
        if isinstance(run(middle), str):
            return found(middle - 1, f"it stops at {programs[middle][0]}'s output: {runs[middle]}")
        low, high = (middle, high) if _same(runs[0], runs[middle]) is None else (low, middle)
    return found(reach, stopped, programs[high][0], _same(runs[low], runs[high]))


def _evaluate(program, arrays: list[np.ndarray]) -> _Run:
    from suite.triage import interp
    from suite.triage.values import Unevaluable

    inputs = {buf.name: array for buf, array in zip(program.params, arrays)}
    interpreter = interp.Interpreter(program, inputs)
    try:
        result = interpreter.run()
    except (Unevaluable, ValueError, TypeError, IndexError) as err:
        raise _Unevaluable(f"the interpreter cannot evaluate it: {err}") from None
    outputs = []
    for exact in result.outputs:
        written = interpreter.storage[id(exact.buf)].written
        outputs.append((exact.buf.name, exact.buf.shape, exact.value.reshape(-1),
                        None if exact.magnitude is None else exact.magnitude.reshape(-1), written))
    return _Run(outputs, {f.kind for f in result.findings})


def _same(first: _Run, second: _Run) -> str | None:
    """None where ``second`` computes what ``first`` does; else the first difference, in words."""
    if len(first.outputs) != len(second.outputs):
        return f"{len(first.outputs)} outputs written before, {len(second.outputs)} after"
    for (name, shape, value, magnitude, written), (_n, _s, value2, magnitude2, written2) in \
            zip(first.outputs, second.outputs):
        if value.size != value2.size:
            return f"{name} has {value.size:,} elements before, {value2.size:,} after"
        apart = written != written2
        both = written & written2
        if magnitude is not None and magnitude2 is not None:
            bound = RELATIVE * (magnitude + magnitude2)
            apart |= both & ~(np.abs(value - value2) <= bound)
        else:
            apart |= both & (value != value2)
        if apart.any():
            n = int(np.argmax(apart))
            where = f"{name}{list(map(int, np.unravel_index(n, shape)))}"
            count = f"{int(apart.sum()):,} of {value.size:,} elements"
            if written[n] != written2[n]:
                return (f"{where} {'written' if written[n] else 'never written'} by its input, "
                        f"{'written' if written2[n] else 'never written'} by its output: {count} differ")
            return f"{where} {value[n]:.6g} in its input, {value2[n]:.6g} in its output: {count} differ"
    new = second.findings - first.findings
    if new:
        return f"undefined behaviour its input had not: {', '.join(sorted(new))}"
    return None
