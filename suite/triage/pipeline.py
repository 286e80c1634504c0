"""A triage from the files a report pastes to a verdict: read, evaluate exactly, compile and run
on each target, judge, and with CHANGED write a reproducer."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from suite import sandbox, targets
from suite.core import execution
from suite.core.record import Status
from suite.errors import UserError
from suite.reporting import thresholds as limits
from suite.reporting.thresholds import Thresholds
from suite.targets.base import Mode, Output
from suite.triage import budget, confined, interp, ir, repro, script_check, tvmscript, values, verdict
from suite.triage import inputs as inputs_mod
from suite.triage import schedule as schedule_mod
from suite.triage.report import Report, TargetOutcome


@dataclass
class Request:
    """What ``tvm-suite triage`` was asked (paths already absolute)."""

    before: Path
    after: Path | None = None
    schedule: Path | None = None
    trace: Path | None = None
    tune: int | None = None
    targets: list[str] = field(default_factory=lambda: ["llvm"])
    inputs: str | None = None
    func: str | None = None
    repro: Path | None = None
    max_memory: int = budget.DEFAULT_MAX_MEMORY
    #: build and run the programs unconfined (``--trust-input``); else only in the sandbox
    trust_input: bool = False
    #: the [bound] and [divergence] rules the verdicts apply (None: reports/thresholds.toml), loaded
    #: once by the command, as `gate` loads its own
    thresholds: Thresholds | None = None

    def check(self) -> None:
        """Everything that can be checked before any work (one-line UserErrors)."""
        given = [name for name, value in (("AFTER", self.after), ("--schedule", self.schedule),
                                           ("--trace", self.trace), ("--tune", self.tune)) if value is not None]
        if not given:
            raise UserError("give the after program: AFTER (a TVMScript file), --schedule FILE, --trace FILE "
                            "or --tune N")
        if len(given) > 1:
            raise UserError(f"give one after program, not {' and '.join(given)}")
        for path, what in ((self.before, "before program"), (self.after, "after program"),
                           (self.schedule, "schedule"), (self.trace, "trace")):
            if path is not None and not path.is_file():
                raise UserError(f"{what} {path} {'is not a file' if path.exists() else 'does not exist'}")
        if not self.targets:
            raise UserError("--target names no target")
        for name in self.targets:
            targets.get(name)  # UnknownTarget lists the valid ones
        if self.tune is not None and self.tune < 1:
            raise UserError(f"--tune {self.tune}: give at least 1 trial")
        if self.repro is not None and (self.repro.is_dir() or not self.repro.parent.is_dir()):
            raise UserError(f"--repro {self.repro}: {'a directory' if self.repro.is_dir() else 'its directory does not exist'}"
                            "; give the path of the script to write")
        if self.repro is not None and (self.repro.exists() or self.repro.is_symlink()):
            raise UserError(f"--repro {self.repro} exists: triage never replaces a file (give a new path)")
        self.targets = list(dict.fromkeys(self.targets))
        inputs_mod.parse(self.inputs)
        if not self.trust_input:
            sandbox.require("triage's input (a program from a report)")

    def after_words(self) -> str:
        if self.after is not None:
            return str(self.after)
        if self.schedule is not None:
            return f"the before program after the schedule {self.schedule}"
        if self.trace is not None:
            return f"the before program after the trace {self.trace}"
        return f"the before program tuned by MetaSchedule ({self.tune} trials per target)"


def triage(request: Request, log=lambda line: None) -> Report:
    request.check()
    try:
        return _triage(request, log)
    except RecursionError:  # a backstop: script_check bounds the nesting of what is read
        raise UserError(f"a program nested too deeply for triage ({request.before}, {request.after_words()}); "
                        f"triage reads programs nested at most {script_check.MAX_DEPTH} levels") from None


def _triage(request: Request, log) -> Report:
    thresholds = request.thresholds or limits.load()  # loaded once: every verdict and the reproducer use it
    spec = inputs_mod.parse(request.inputs)
    with tempfile.TemporaryDirectory(prefix="tvm-suite-triage-") as work:
        return _triage_in(request, log, thresholds, spec, Path(work))


def _triage_in(request: Request, log, thresholds: Thresholds, spec, work: Path) -> Report:
    """The triage, its children's scratch directories in ``work``. Nothing of the programs is
    parsed here: TVM's parser evaluates Python, so a confined child reads them
    (:func:`suite.triage.confined.read`) and hands back their translation and TVMScript."""
    read = _read(request, work)
    name, program = read.name, read.program
    _check_outputs(program, name, request.before)
    outputs, params = program.written_params(), program.inputs()
    if request.tune is not None and _several(program):
        raise UserError(f"{request.before}: --tune checks MetaSchedule's candidates on kernels of one output, their "
                        f"last parameter, and {name} has {_outputs_words(program)}: give the after program (AFTER, "
                        "--schedule or --trace)")
    if read.after_signature is not None:
        _same_signature(read.before_signature, read.after_signature, request)
    inputs_mod.check(spec, params)
    inputs_mod.check_dtypes(program.params, str(request.before))  # int4, float8: one line, before any build
    budget.check(program, request.max_memory, str(request.before))
    arrays = inputs_mod.make(spec, params)
    started = time.perf_counter()
    try:
        result = interp.evaluate(program, arrays)
    except values.Unevaluable as err:
        raise UserError(f"the interpreter cannot evaluate {request.before}: {err}") from None
    floats = [ir.kind_of(o.dtype) == "f" for o in outputs]
    report = Report(
        function=name, before=str(request.before), after=request.after_words(),
        output=", ".join(f"{o.name} {'x'.join(map(str, o.shape))} {o.dtype}" for o in outputs),
        inputs=[spec.describe(p) for p in params],
        reference={"seconds": time.perf_counter() - started,
                   "arithmetic": ("float64" if all(floats) else "float64 and integers") if any(floats) else "integers",
                   "accumulation_length": max(e.k for e, f in zip(result.outputs, floats) if f) if any(floats)
                   else None},
        findings=result.findings)
    if request.trust_input:
        report.notes.append("built and run unconfined (--trust-input): no sandbox stood between these programs and "
                            "this machine")
    if read.dropped:
        report.notes.append(f"left out of {request.before}: the Relax function(s) {', '.join(read.dropped)}")
    if result.findings:
        return report
    expected = [verdict.Expected(e.value, e.magnitude if ir.kind_of(e.buf.dtype) == "f" else None, e.k, e.buf.name,
                                 e.buf.dtype) for e in result.outputs]
    for target_name in request.targets:
        target = targets.get(target_name)
        tuning = None
        after_here = read.after_script
        if request.tune is not None:
            if reason := _not_runnable(target):
                report.outcomes.append(TargetOutcome(target.name, Status.SKIPPED, reason))
                continue
            log(f"tuning {name} for {target.name}: {request.tune} trials")
            after_here, tuning = _tuned(read.before_script, name, target, request.tune, arrays, params, outputs[0],
                                        expected[0], thresholds, work, request.trust_input)
        log(f"building and running both programs on {target.name}")
        outcome = _run_target(target, read.before_script, after_here, program, arrays, expected, work, thresholds,
                              request.trust_input)
        outcome.tuning = tuning
        report.outcomes.append(outcome)
    changed = [o for o in report.outcomes if o.judgement is not None and o.judgement.kind == verdict.CHANGED]
    if changed:
        first = changed[0]
        wrong = next(e for e in expected if first.outputs[e.name].kind == verdict.CHANGED)
        log("writing the reproducer")
        report.reproducer = repro.write(program, read.before_script, first.after_script, arrays, spec, wrong,
                                        tuple(first.outputs[wrong.name].first["index"]), request.repro, first.target,
                                        thresholds, confined=not request.trust_input)
    return report


def _read(request: Request, work: Path) -> confined.Read:
    """BEFORE and the after program, read by a confined child; a schedule first run in its own
    (its program read back with BEFORE). The after program must differ from BEFORE."""
    after, kind, shown = request.after, "file", None
    if request.trace is not None:
        after, kind = request.trace, "trace"
    elif request.schedule is not None:
        schedule_mod.refuse_tvmscript(request.schedule, tvmscript.read_text(request.schedule, "schedule"))
        made = work / f"{request.schedule.stem}_applied.py"
        made.write_text(schedule_mod.apply(request.before, request.func, request.schedule,
                                           confined=not request.trust_input), encoding="utf-8")
        after, kind, shown = made, "scheduled", request.schedule
    read = confined.read(request.before, request.func, after, kind if after else None, shown, work / "read",
                         confined=not request.trust_input)
    if read.same and kind != "file":  # an AFTER file may be BEFORE itself (an UNDEFINED check)
        what = "schedule" if request.schedule is not None else "trace"
        raise UserError(f"{request.schedule or request.trace}: the {what} applies nothing: the program after it is the "
                        "before program, and judging a program against itself says nothing (a schedule calls "
                        "primitives on `sch`)")
    return read


def _several(program: ir.Program) -> bool:
    """Whether the program's outputs are other than one, its last parameter (the benchmarks' kernels)."""
    written = program.written_params()
    return len(written) > 1 or written[-1] is not program.params[-1]


def _outputs_words(program: ir.Program) -> str:
    written = program.written_params()
    if len(written) == 1:
        return f"its one output ({written[0].name}) elsewhere than last"
    return f"{len(written)} outputs ({', '.join(b.name for b in written)})"


def _check_outputs(program: ir.Program, name: str, path: Path) -> None:
    written = program.written_params()
    if not written:
        raise UserError(f"{path}: {name} writes none of its parameters: it has no output to compare")
    for output in written:
        if ir.kind_of(output.dtype) == "f" and output.dtype not in ("float16", "float32", "float64"):
            raise UserError(f"{path}: its output {output.name} is {output.dtype}; triage judges float16, float32 and "
                            "float64 outputs (and integers)")


def _same_signature(ours: list, theirs: list, request: Request) -> None:
    plain = lambda sig: [(shape, dtype) for _, shape, dtype in sig]  # noqa: E731
    if plain(ours) != plain(theirs):
        show = lambda sig: ", ".join(f"{n} {'x'.join(map(str, s))} {d}" for n, s, d in sig)  # noqa: E731
        raise UserError(f"the after program's parameters ({show(theirs)}) are not the before program's "
                        f"({show(ours)}): {request.after_words()}")


def _not_runnable(target) -> str | None:
    if target.mode is Mode.COMPILE_ONLY:
        return f"{target.name} is compile-only here: nothing runs its code (try hexagon-v68-qf)"
    return target.unavailable()


def _run_target(target, before: str, after: str, program: ir.Program, arrays: dict, expected: list[verdict.Expected],
                work: Path, thresholds: Thresholds, trusted: bool) -> TargetOutcome:
    """Both programs built and run on ``target`` by the one kernel path (:mod:`suite.core.execution`:
    its arguments in parameter order, each output allocated) in a confined child (unless
    ``trusted``: :mod:`suite.triage.confined`), each output judged (``expected``: the exact
    outputs, in parameter order). A program of several outputs, or of one elsewhere than
    last, runs where the target runs such kernels (else skipped, with the reason)."""
    if reason := _not_runnable(target):
        return TargetOutcome(target.name, Status.SKIPPED, reason)
    several = _several(program)
    if several and (reason := target.several_outputs_unavailable()):
        return TargetOutcome(target.name, Status.SKIPPED, f"{reason} ({program.name} has {_outputs_words(program)})")
    written = {id(b) for b in program.written_params()}
    arguments = [Output(b.shape, b.dtype) if id(b) in written else arrays[b.name] for b in program.params]
    # the after program also runs on filled output arrays, as the fuzz campaign's worker runs each
    # schedule: a finding's UNDEFINED is its report's triage command's too
    sides = confined.build_and_run(target.name, {"before": before, "after": after},
                                   program.name, arguments, work / target.name, confined=not trusted,
                                   filled=("after",))
    outputs, twins, seconds = {}, {}, {}
    for side, done in sides.items():
        if done.failure is not None:
            if done.failure.status is Status.SKIPPED:
                return TargetOutcome(target.name, Status.SKIPPED, done.failure.message)
            verb = "build" if done.failure.stage is execution.Stage.BUILD else "run"
            return TargetOutcome(target.name, Status.FAILED, f"the {side} program does not {verb}: {done.failure.message}")
        outputs[side] = done.outputs
        if done.twins is not None:
            twins[side] = done.twins
        seconds[side] = done.seconds
    judged = {}
    for n, exact in enumerate(expected):
        twin = [twins[side][n] if side in twins else None for side in ("before", "after")]
        judged[exact.name] = verdict.judge(exact, outputs["before"][n], outputs["after"][n], *twin,
                                           thresholds=thresholds, undefined=sides["after"].undefined)
    judgement = next(iter(judged.values())) if len(judged) == 1 else verdict.worst_output(judged)
    return TargetOutcome(target.name, Status.OK, judgement=judgement, seconds=seconds, after_script=after, outputs=judged)


def _tuned(before: str, name: str, target, trials: int, arrays: dict, params, output: ir.Buf,
           expected: verdict.Expected, thresholds: Thresholds, work: Path, trusted: bool) -> tuple[str, dict]:
    """The before program (TVMScript) tuned by MetaSchedule for ``target`` in a confined child
    (unless ``trusted``), each candidate checked against the reference
    (:func:`suite.core.tuning.search`); (the best candidate's TVMScript, what the search did)."""
    tuned = confined.tune(target.name, before, name, trials, [arrays[p.name] for p in params],
                          Output(output.shape, output.dtype), expected, thresholds.bound.lam,
                          thresholds.bound.max_fraction, work / f"{target.name}-tune", confined=not trusted)
    if tuned.failure is not None:
        raise UserError(f"MetaSchedule found no candidate for {name} on {target.name}: {tuned.failure}")
    return tuned.script, tuned.facts
