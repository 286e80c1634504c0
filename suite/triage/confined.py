"""Triage's programs built and run in a confined child (:mod:`suite.sandbox`), read back as data.

The parent hands the child a job in a scratch directory: each program as the TVMScript the
installed TVM printed (checked again by :mod:`suite.triage.script_check` before the child's parser
sees it), the input arrays as ``.npy`` and the output shapes. The child builds and runs each
program on one target through :mod:`suite.core.execution`, the one kernel path, and writes each
output as ``.npy`` and how each stage went as ``result.json``. Whatever the child did, the parent
reads back only those files, as data: never through a link, each checked for its shape and type.
With ``--trust-input`` the same child runs unconfined.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from suite import children, sandbox
from suite.core import execution
from suite.core.record import Status
from suite.errors import UserError
from suite.targets.base import Output
from suite.triage import ir, tvmscript

#: How long one target's builds and runs may take (qfloat emulation of a large kernel included).
TIMEOUT_S = 3600
#: The names of a job's files in the scratch directory.
JOB, RESULT, LOG = "job.json", "result.json", "child.log"


@dataclass(frozen=True)
class SideResult:
    """One program built and run on the target: its outputs (and IEEE twin's) in parameter order,
    or the failure that left none; the seconds it took in the child; where its runs on filled
    output arrays were asked for, what they showed (:func:`suite.triage.filled.undefined`)."""

    outputs: list[np.ndarray] | None
    twins: list[np.ndarray] | None
    failure: execution.Failure | None
    seconds: float
    undefined: str | None = None


def build_and_run(target_name: str, programs: dict[str, str], func_name: str, arguments: list, scratch: Path,
                  confined: bool, filled: tuple[str, ...] = ()) -> dict[str, SideResult]:
    """Each of ``programs`` (side -> TVMScript text of PrimFunc ``func_name``) built and run on the
    target in one child process (confined unless told otherwise), on ``arguments`` (input arrays
    and :class:`Output` specs in parameter order); the sides ``filled`` names run again on filled
    output arrays (:func:`suite.triage.filled.undefined`), as the fuzz campaign's worker runs each
    schedule."""
    scratch.mkdir(parents=True, exist_ok=True)
    specs = []
    for n, argument in enumerate(arguments):
        if isinstance(argument, Output):
            specs.append({"output": [list(argument.shape), argument.dtype]})
        else:
            name = f"input{n}.npy"
            np.save(scratch / name, np.asarray(argument), allow_pickle=False)
            specs.append({"input": name})
    for side, text in programs.items():
        (scratch / f"{side}.py").write_text(text, encoding="utf-8")
    job = {"target": target_name, "func": func_name, "sides": list(programs), "arguments": specs,
           "filled": list(filled)}
    (scratch / JOB).write_text(json.dumps(job), encoding="utf-8")
    returncode = _start(scratch, confined)
    if returncode is None:
        return _all_failed(programs, f"the build and run ran past {TIMEOUT_S} s")
    expected = [s["output"] for s in specs if "output" in s]
    return _accounts(scratch, list(programs), expected, returncode)


@dataclass(frozen=True)
class Read:
    """The programs of a triage as a confined child read them: the before program's name and its
    translation for the interpreter, both programs as the installed TVM prints them (what the
    builds and the reproducer take), whether the after program is the before one, each one's
    parameters (name, shape, dtype), and the Relax functions left out of BEFORE."""

    name: str
    program: ir.Program
    before_script: str
    after_script: str | None
    same: bool
    before_signature: list
    after_signature: list | None
    dropped: list[str]


#: What the after program is, for a read: a TVMScript file, a JSON trace applied to BEFORE, or the
#: TVMScript a schedule's child made (shown to the user as the schedule's path).
AFTER_KINDS = ("file", "trace", "scheduled")


def read(before: Path, func: str | None, after: Path | None, after_kind: str | None, shown_after: Path | None,
         scratch: Path, confined: bool) -> Read:
    """BEFORE and the after program read, checked (:mod:`suite.triage.script_check`) and parsed by
    TVM in a confined child (TVM's parser evaluates Python, and a trace's JSON is a graph of TVM
    objects), never in this process; what it read handed back as data. One-line UserErrors for
    what the child refused, and for a child that died reading."""
    scratch.mkdir(parents=True, exist_ok=True)
    job = {"kind": "read", "before": str(before), "func": func, "after": str(after) if after else None,
           "after_kind": after_kind, "shown_after": str(shown_after or after) if after else None}
    (scratch / JOB).write_text(json.dumps(job), encoding="utf-8")
    returncode = _start(scratch, confined)
    try:
        result = json.loads(sandbox.read_back(scratch / RESULT))
    except (OSError, ValueError, RecursionError):
        result = None
    if isinstance(result, dict) and isinstance(result.get("error"), str):
        raise UserError(" ".join(result["error"].split())[:2000])
    what = f"{before}" + (f" and {shown_after or after}" if after else "")
    if not isinstance(result, dict):
        raise UserError(f"{what}: reading them ended the confined reader ({_ended(returncode)}: "
                        f"{_last_line(scratch / LOG)}); TVM cannot read them, and triage gives no verdict")
    try:
        return Read(_text(result["name"]), ir.from_json(result["program"]),
                    tvmscript.check_printed(_text(result["before_script"]), f"{before}, as read"),
                    None if result["after_script"] is None else
                    tvmscript.check_printed(_text(result["after_script"]), f"{shown_after or after}, as read"),
                    result["same"] is True, _signature(result["before_signature"]),
                    None if result["after_signature"] is None else _signature(result["after_signature"]),
                    [_text(name) for name in result["dropped"]])
    except (KeyError, TypeError, ValueError) as err:
        raise UserError(f"{what}: the confined reader's account is not one the suite writes ({err})") from None


def _text(value) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r:.40} is no text")
    return value


def _signature(value) -> list[tuple[str, tuple[int, ...], str]]:
    return [(_text(name), tuple(int(d) for d in shape), _text(dtype)) for name, shape, dtype in value]


@dataclass(frozen=True)
class Tuned:
    """MetaSchedule's best candidate for the before program (TVMScript, read back as data and
    checked like any file) and what the search did; or why there is none."""

    script: str | None
    facts: dict | None
    failure: str | None


def tune(target_name: str, before_script: str, func_name: str, trials: int, inputs: list, output: Output,
         expected, lam: float, limit: float, scratch: Path, confined: bool) -> Tuned:
    """The before program tuned by MetaSchedule for the target in one child (confined unless told
    otherwise), each candidate checked against ``expected`` (:class:`suite.triage.verdict.Expected`);
    the best candidate comes back as TVMScript text, parsed again only in a confined child."""
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "before.py").write_text(before_script, encoding="utf-8")
    for n, array in enumerate(inputs):
        np.save(scratch / f"input{n}.npy", np.asarray(array), allow_pickle=False)
    np.save(scratch / "expected.npy", expected.value, allow_pickle=False)
    if expected.magnitude is not None:
        np.save(scratch / "magnitude.npy", expected.magnitude, allow_pickle=False)
    job = {"kind": "tune", "target": target_name, "func": func_name, "trials": trials, "inputs": len(inputs),
           "output": [list(output.shape), output.dtype], "k": expected.k, "lam": lam, "limit": limit,
           "magnitude": expected.magnitude is not None}
    (scratch / JOB).write_text(json.dumps(job), encoding="utf-8")
    returncode = _start(scratch, confined)
    try:
        result = json.loads(sandbox.read_back(scratch / RESULT))
        text = sandbox.read_back(scratch / "tuned.py").decode("utf-8")
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return Tuned(None, None, f"tuning ended ({_ended(returncode)}) with no result: {_last_line(scratch / LOG)}")
    if not isinstance(result, dict):
        return Tuned(None, None, f"tuning ended ({_ended(returncode)}) with no result: {_last_line(scratch / LOG)}")
    return Tuned(tvmscript.check_printed(text, f"{func_name} as MetaSchedule tuned it"), result, None)


def _start(scratch: Path, confined: bool) -> int | None:
    """The child started on the job in ``scratch`` and waited for; its exit status (None: it ran
    past :data:`TIMEOUT_S` and was ended)."""
    with open(scratch / LOG, "wb") as log:
        process = sandbox.start_python(["-m", "suite.triage.confined", str(scratch)], scratch, sandbox.TRIAGE,
                                       confined=confined, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        return process.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None
    finally:
        children.end(process)


def _all_failed(programs, message: str) -> dict[str, SideResult]:
    failure = execution.Failure(Status.FAILED, execution.Stage.BUILD, message)
    return {side: SideResult(None, None, failure, 0.0) for side in programs}


def _accounts(scratch: Path, sides: list[str], expected: list, returncode: int) -> dict[str, SideResult]:
    """What the child left, read as data; a side it left no account of failed with the child's
    last words."""
    try:
        result = json.loads(sandbox.read_back(scratch / RESULT))
    except (OSError, ValueError, RecursionError):
        result = None
    if not isinstance(result, dict):
        return _all_failed(sides, f"the confined build ended ({_ended(returncode)}) with no result: "
                                  f"{_last_line(scratch / LOG)}")
    read = {}
    for side in sides:
        account = result.get(side)
        read[side] = _side(scratch, side, account, expected) if isinstance(account, dict) else \
            _all_failed([side], f"the confined build ended ({_ended(returncode)}) before this program: "
                                f"{_last_line(scratch / LOG)}")[side]
    return read


def _side(scratch: Path, side: str, account: dict, expected: list) -> SideResult:
    seconds = account.get("seconds") if isinstance(account.get("seconds"), (int, float)) else 0.0
    failure = account.get("failure")
    if isinstance(failure, dict):
        try:
            status, stage = Status(failure.get("status")), execution.Stage(failure.get("stage"))
        except ValueError:
            status, stage = Status.FAILED, execution.Stage.BUILD
        return SideResult(None, None, execution.Failure(status, stage, " ".join(str(failure.get("message"))
                                                                                 .split())[:500]), seconds)
    try:
        outputs = [_array(scratch / f"{side}.output{n}.npy", shape, dtype) for n, (shape, dtype) in enumerate(expected)]
        twins = ([_array(scratch / f"{side}.twin{n}.npy", shape, dtype) for n, (shape, dtype) in enumerate(expected)]
                 if account.get("twins") else None)
    except ValueError as err:
        return SideResult(None, None, execution.Failure(Status.FAILED, execution.Stage.RUN, str(err)), seconds)
    undefined = account.get("undefined")
    return SideResult(outputs, twins, None, seconds, " ".join(undefined.split())[:2000]
                      if isinstance(undefined, str) and undefined.strip() else None)


def _array(path: Path, shape, dtype: str) -> np.ndarray:
    import io

    try:
        array = np.load(io.BytesIO(sandbox.read_back(path)), allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"the confined run left no readable output {path.name} ({err})") from None
    if array.shape != tuple(shape) or array.dtype != np.dtype(dtype):
        raise ValueError(f"the confined run left {path.name} of {array.dtype} {array.shape}, not {dtype} {tuple(shape)}")
    return array


def _ended(returncode: int | None) -> str:
    if returncode is None:
        return f"ended after {TIMEOUT_S} s"
    return sandbox.ended_words(returncode, confined=True)


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in sandbox.read_back(path).decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return " ".join(lines[-1].split())[:300] if lines else "no output"


# ----------------------------------------------------------------------------- the child


def _child(scratch: Path, job: dict) -> None:
    """In the child: every side of the job built and run, each output saved, ``result.json``
    written after each side (a crash on the next leaves the account of those before)."""
    from suite import targets
    from suite.triage import filled, tvmscript

    target = targets.get(job["target"])
    arguments = [Output(tuple(a["output"][0]), a["output"][1]) if "output" in a else
                 np.load(scratch / a["input"], allow_pickle=False) for a in job["arguments"]]
    result = {}
    for side in job["sides"]:
        started = time.perf_counter()
        funcs, _ = tvmscript.parse_file(scratch / f"{side}.py")
        func = tvmscript.pick(funcs, job["func"], scratch / f"{side}.py")[1]
        path = scratch / side / target.KERNEL_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        built = execution.build(target, func, path, target.order_as_written(func))
        ran = execution.run(built, arguments) if built.failure is None else None
        failure = built.failure or ran.failure
        account = {"seconds": time.perf_counter() - started}
        if failure is not None:
            account["failure"] = {"status": failure.status.value, "stage": failure.stage.value,
                                  "message": failure.message}
        else:
            for n, output in enumerate(ran.outputs):
                np.save(scratch / f"{side}.output{n}.npy", output, allow_pickle=False)
            for n, twin in enumerate(ran.twins or []):
                np.save(scratch / f"{side}.twin{n}.npy", twin, allow_pickle=False)
            account["twins"] = ran.twins is not None
            if side in job.get("filled", ()):
                account["undefined"] = filled.undefined(target, built.path, arguments)
        result[side] = account
        (scratch / RESULT).write_text(json.dumps(result), encoding="utf-8")


def _child_read(scratch: Path, job: dict) -> None:
    """In the child: BEFORE and the after program read and parsed (script_check first), the after
    program applied or picked, the before program translated; ``result.json`` holds what
    :func:`read` takes, or the one-line error."""
    from suite.triage import script_check, tvmscript

    try:
        before_path = Path(job["before"])
        funcs, facts = tvmscript.parse_file(before_path)
        name, before = tvmscript.pick(funcs, job["func"], before_path)
        after = _after(job, name, before) if job["after"] else None
        result = {"name": name, "program": ir.to_json(tvmscript.translate(before, name)),
                  "before_script": tvmscript.script(before, name),
                  "after_script": tvmscript.script(after, name) if after is not None else None,
                  "same": after is not None and tvmscript.same_program(before, after),
                  "before_signature": tvmscript.signature(before),
                  "after_signature": tvmscript.signature(after) if after is not None else None,
                  "dropped": facts["dropped"]}
    except UserError as err:
        result = {"error": str(err)}
    except RecursionError:
        result = {"error": f"a program nested too deeply for triage ({job['before']}, {job['shown_after']}); triage "
                           f"reads programs nested at most {script_check.MAX_DEPTH} levels"}
    (scratch / RESULT).write_text(json.dumps(result), encoding="utf-8")


def _after(job: dict, name: str, before):
    """The after program of a read job: the PrimFunc of the same name (or the one named, or the
    only one) of a file, BEFORE after a JSON trace, or what a schedule made."""
    from suite.triage import traces, tvmscript

    path, shown = Path(job["after"]), Path(job["shown_after"])
    if job["after_kind"] == "trace":
        return traces.apply_trace(before, traces.read_trace(path), path)
    try:
        funcs, _ = tvmscript.parse_file(path)
    except UserError as err:
        if job["after_kind"] != "scheduled":
            raise
        raise UserError(f"{shown}: the program the schedule made is not read back: {err}") from None
    if job["after_kind"] == "scheduled":
        return tvmscript.pick(funcs, name if name in funcs else None, path)[1]
    if job["func"] is not None or name in funcs:
        return tvmscript.pick(funcs, job["func"] or name, path)[1]
    return tvmscript.pick(funcs, None, path)[1]


def _child_tune(scratch: Path, job: dict) -> None:
    """In the child: MetaSchedule's search for the before program, its best candidate written as
    TVMScript (``tuned.py``) and what it did (``result.json``)."""
    from suite import targets
    from suite.core import output_check, tuning
    from suite.triage import tvmscript

    target = targets.get(job["target"])
    funcs, _ = tvmscript.parse_file(scratch / "before.py")
    before = tvmscript.pick(funcs, job["func"], scratch / "before.py")[1]
    inputs = [np.load(scratch / f"input{n}.npy", allow_pickle=False) for n in range(job["inputs"])]
    magnitude = np.load(scratch / "magnitude.npy", allow_pickle=False) if job["magnitude"] else None
    shape, dtype = job["output"]
    check = output_check.OutputCheck.of(np.load(scratch / "expected.npy", allow_pickle=False), magnitude, job["k"],
                                        dtype, gross=target.ieee_twin, lam=job["lam"], limit=job["limit"])
    try:
        found = tuning.search(before, target, job["trials"], inputs, tuple(shape), dtype, check,
                              f"triage-{target.name}-{dtype}")
        first_refusal = check.first_refusal
    finally:
        check.remove()
    (scratch / "tuned.py").write_text(tvmscript.script(found.func, job["func"]), encoding="utf-8")
    facts = {"trials": job["trials"], "measured": len(found.measured), "checked": found.checked,
             "refused": found.refused, "failed": found.failed - found.refused, "best": found.best,
             "first_refusal": first_refusal, "logs": str(found.logs)}
    (scratch / RESULT).write_text(json.dumps(facts), encoding="utf-8")


def main(argv: list[str]) -> int:
    from suite.errors import UserError, first_line

    try:
        scratch = Path(argv[0])
        job = json.loads((scratch / JOB).read_text(encoding="utf-8"))
        {"tune": _child_tune, "read": _child_read}.get(job.get("kind"), _child)(scratch, job)
    except UserError as err:  # the suite's own refusal (a tool missing): the log's last line says it
        print(first_line(err), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
