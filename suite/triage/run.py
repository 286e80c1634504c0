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
    funcs, facts = tvmscript.parse_file(request.before)
    name, before = tvmscript.pick(funcs, request.func, request.before)
    after = None if request.tune is not None else _after(request, name, before)
    program = _program(before, name, request.before)
    outputs, params = program.written_params(), program.inputs()
    if request.tune is not None and _several(program):
        raise UserError(f"{request.before}: --tune checks MetaSchedule's candidates on kernels of one output, their "
                        f"last parameter, and {name} has {_outputs_words(program)}: give the after program (AFTER, "
                        "--schedule or --trace)")
    if after is not None:
        _same_signature(before, after, request)
    inputs_mod.check(spec, params)
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
    if facts["dropped"]:
        report.notes.append(f"left out of {request.before}: the Relax function(s) {', '.join(facts['dropped'])}")
    if result.findings:
        return report
    expected = [verdict.Expected(e.value, e.magnitude if ir.kind_of(e.buf.dtype) == "f" else None, e.k, e.buf.name,
                                 e.buf.dtype) for e in result.outputs]
    with tempfile.TemporaryDirectory(prefix="tvm-suite-triage-") as work:
        for target_name in request.targets:
            target = targets.get(target_name)
            tuning = None
            after_here = after
            if request.tune is not None:
                if reason := _not_runnable(target):
                    report.outcomes.append(TargetOutcome(target.name, Status.SKIPPED, reason))
                    continue
                log(f"tuning {name} for {target.name}: {request.tune} trials")
                after_here, tuning = _tuned(before, name, target, request.tune, arrays, params, outputs[0],
                                            expected[0], thresholds, Path(work), request.trust_input)
            log(f"building and running both programs on {target.name}")
            outcome = _run_target(target, before, after_here, program, arrays, expected, Path(work), thresholds,
                                  request.trust_input)
            outcome.tuning = tuning
            report.outcomes.append(outcome)
        changed = [o for o in report.outcomes if o.judgement is not None and o.judgement.kind == verdict.CHANGED]
        if changed:
            first = changed[0]
            wrong = next(e for e in expected if first.outputs[e.name].kind == verdict.CHANGED)
            after_func = after if after is not None else first.after_func
            log("writing the reproducer")
            report.reproducer = repro.write(program, tvmscript.script(before, name), tvmscript.script(after_func, name),
                                            arrays, spec, wrong, tuple(first.outputs[wrong.name].first["index"]),
                                            request.repro, first.target, thresholds,
                                            confined=not request.trust_input)
    return report


def _several(program: ir.Program) -> bool:
    """Whether the program's outputs are other than one, its last parameter (the benchmarks' kernels)."""
    written = program.written_params()
    return len(written) > 1 or written[-1] is not program.params[-1]


def _outputs_words(program: ir.Program) -> str:
    written = program.written_params()
    if len(written) == 1:
        return f"its one output ({written[0].name}) elsewhere than last"
    return f"{len(written)} outputs ({', '.join(b.name for b in written)})"


def _program(before, name: str, path: Path) -> ir.Program:
    program = tvmscript.translate(before, name)
    written = program.written_params()
    if not written:
        raise UserError(f"{path}: {name} writes none of its parameters: it has no output to compare")
    for output in written:
        if ir.kind_of(output.dtype) == "f" and output.dtype not in ("float16", "float32", "float64"):
            raise UserError(f"{path}: its output {output.name} is {output.dtype}; triage judges float16, float32 and "
                            "float64 outputs (and integers)")
    return program


def _after(request: Request, name: str, before):
    if request.after is not None:
        funcs, _ = tvmscript.parse_file(request.after)
        if request.func is not None or name in funcs:
            return tvmscript.pick(funcs, request.func or name, request.after)[1]
        return tvmscript.pick(funcs, None, request.after)[1]
    path = request.schedule or request.trace
    if request.trace is not None:  # JSON: data, applied here
        after = tvmscript.apply_trace(before, tvmscript.read_trace(request.trace), path)
    else:  # Python: run in a process of its own
        schedule_mod.refuse_tvmscript(path, tvmscript.read_text(path, "schedule"))
        after = _scheduled(request.before, name, path, confined=not request.trust_input)
    if tvmscript.same_program(before, after):
        what = "schedule" if request.schedule is not None else "trace"
        raise UserError(f"{path}: the {what} applies nothing: the program after it is the before program, and "
                        "judging a program against itself says nothing (a schedule calls primitives on `sch`)")
    return after


def _scheduled(before_path: Path, name: str, path: Path, confined: bool):
    """The PrimFunc a schedule script made, read back from its child process as TVMScript (data,
    checked like any TVMScript file)."""
    text = schedule_mod.apply(before_path, name, path, confined)
    with tempfile.TemporaryDirectory(prefix="tvm-suite-scheduled-") as work:
        scheduled = Path(work) / f"{Path(path).stem}_applied.py"
        scheduled.write_text(text, encoding="utf-8")
        try:
            funcs, _ = tvmscript.parse_file(scheduled)
        except UserError as err:
            raise UserError(f"{path}: the program the schedule made is not read back: {err}") from None
    return tvmscript.pick(funcs, name if name in funcs else None, scheduled)[1]


def _same_signature(before, after, request: Request) -> None:
    ours, theirs = tvmscript.signature(before), tvmscript.signature(after)
    plain = lambda sig: [(shape, dtype) for _, shape, dtype in sig]  # noqa: E731
    if plain(ours) != plain(theirs):
        show = lambda sig: ", ".join(f"{n} {'x'.join(map(str, s))} {d}" for n, s, d in sig)  # noqa: E731
        raise UserError(f"the after program's parameters ({show(theirs)}) are not the before program's "
                        f"({show(ours)}): {request.after_words()}")


def _not_runnable(target) -> str | None:
    if target.mode is Mode.COMPILE_ONLY:
        return f"{target.name} is compile-only here: nothing runs its code (try hexagon-v68-qf)"
    return target.unavailable()


def _run_target(target, before, after, program: ir.Program, arrays: dict, expected: list[verdict.Expected],
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
    sides = confined.build_and_run(target.name, {"before": tvmscript.script(before, program.name),
                                                 "after": tvmscript.script(after, program.name)},
                                   program.name, arguments, work / target.name, confined=not trusted)
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
                                           thresholds=thresholds)
    judgement = next(iter(judged.values())) if len(judged) == 1 else verdict.worst_output(judged)
    return TargetOutcome(target.name, Status.OK, judgement=judgement, seconds=seconds, after_func=after, outputs=judged)


def _tuned(before, name: str, target, trials: int, arrays: dict, params, output: ir.Buf,
           expected: verdict.Expected, thresholds: Thresholds, work: Path, trusted: bool):
    """The before program tuned by MetaSchedule for ``target`` in a confined child (unless
    ``trusted``), each candidate checked against the reference (:func:`suite.core.tuning.search`);
    (the best PrimFunc, what the search did)."""
    tuned = confined.tune(target.name, tvmscript.script(before, name), name, trials, [arrays[p.name] for p in params],
                          Output(output.shape, output.dtype), expected, thresholds.bound.lam,
                          thresholds.bound.max_fraction, work / f"{target.name}-tune", confined=not trusted)
    if tuned.failure is not None:
        raise UserError(f"MetaSchedule found no candidate for {name} on {target.name}: {tuned.failure}")
    with tempfile.TemporaryDirectory(prefix="tvm-suite-tuned-") as read:
        path = Path(read) / "tuned.py"
        path.write_text(tuned.script, encoding="utf-8")
        funcs, _ = tvmscript.parse_file(path)  # data from the child: checked like any TVMScript file
    return tvmscript.pick(funcs, name if name in funcs else None, path)[1], tuned.facts
