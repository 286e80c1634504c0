"""A schedule script applied in a process of its own.

A schedule (``--schedule FILE``, or a MetaSchedule trace printed as Python) is Python by nature:
triage runs it as its author would, with ``sch`` and ``mod`` given. It runs in a child process so
that nothing it does can become triage's answer: its ``sys.exit(0)``, ``raise SystemExit(5)``,
``os._exit(0)`` or a crash is one line and exit 2, never a verdict, and it cannot touch the
state of the triage itself. What the child hands back is read as data: the scheduled PrimFunc as
TVMScript, checked like any TVMScript file (:mod:`suite.triage.script_check`) before it is parsed.

A schedule that holds TVMScript rather than schedule calls (the after program given as
``--schedule``) is refused before it runs; one that leaves the program as it was is refused after
(:func:`suite.triage.pipeline.triage`), since judging a program against itself says nothing.

The child is confined (:mod:`suite.sandbox`: no network, nothing writable but its scratch
directory, limits on memory, CPU time and processes), so a schedule from a report is as safe as
a JSON trace; ``--trust-input`` runs it unconfined.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from suite import children, sandbox
from suite.errors import UserError, first_line

#: The child's program: this suite first on the path (``-m`` would put the working directory
#: first, where another ``suite`` package may be), then :func:`main` with the child's arguments.
_CHILD = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
          "from suite.triage.schedule import main; sys.exit(main(sys.argv[1:]))")
#: How long a schedule may run (TVM's primitives take milliseconds; a loop that never ends must not hang triage).
TIMEOUT_S = 300


def refuse_tvmscript(path: Path, text: str) -> None:
    """A schedule file that defines TVMScript (an after program given as ``--schedule``): one line.
    Read as a syntax tree only; nothing of it runs."""
    from suite.triage import tvmscript
    from suite.triage import script_check

    tree = tvmscript.python_tree(text, path, "a schedule script")
    for node in tree.body:
        if script_check.is_prim_func(node) or script_check.is_module(node):
            kind = "@T.prim_func" if script_check.is_prim_func(node) else "@I.ir_module"
            raise UserError(f"{path}:{node.lineno}: {node.name} is TVMScript ({kind}), not a schedule: give the "
                            "after program as AFTER (tvm-suite triage BEFORE AFTER); a schedule calls primitives "
                            "on `sch`")


def apply(before: Path, func: str | None, path: Path, confined: bool = True) -> str:
    """The TVMScript of PrimFunc ``func`` (None: the file's only one) of the file ``before`` after the schedule at ``path``,
    run in a child process, confined unless told otherwise (one-line UserErrors for all that can
    go wrong there)."""
    with tempfile.TemporaryDirectory(prefix="tvm-suite-schedule-") as work:
        status_path, out_path = Path(work) / "status.json", Path(work) / "after.py"
        # What it prints is not shown: standard output is the report's (--json), and how it went is in status.json.
        process = sandbox.start_python(
            ["-c", _CHILD, str(before), func or "", str(path), str(status_path), str(out_path)], Path(work),
            sandbox.TRIAGE,
            confined=confined, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            returncode = process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise UserError(f"{path}: the schedule ran past {TIMEOUT_S} s; triage gives no verdict on it") from None
        finally:
            children.end(process)  # whatever it started goes with it
        status = _status(status_path) if returncode == 0 else None
        if status is None:
            raise UserError(f"{path}: {_ended(returncode, confined)}; triage gives no verdict on it")
        if status.get("status") != "ok":
            raise UserError(_failure(path, status))
        try:
            return sandbox.read_back(out_path).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            raise UserError(f"{path}: the schedule's process left no readable program") from None


def _status(path: Path) -> dict | None:
    try:
        value = json.loads(sandbox.read_back(path))
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _ended(returncode: int, confined: bool) -> str:
    """How the child ended without saying how the schedule went: a signal, an exit of its own."""
    if sandbox.signal_of(returncode, confined) is not None:
        return f"the schedule's process {sandbox.ended_words(returncode, confined)}"
    return (f"the schedule ended its own process (exit status {returncode}, os._exit?) before it had scheduled "
            "the program")


def _one_line(value) -> str:
    return " ".join(str(value).split())[:1000]


def _failure(path: Path, status: dict) -> str:
    if status.get("status") == "before":
        return _one_line(status.get("message", "the before program is not read"))
    line = status.get("line")
    where = f"{path}:{line}" if isinstance(line, int) else str(path)
    if status.get("status") == "exit":
        return (f"{where}: the schedule exits (SystemExit({_one_line(status.get('code'))})) instead of scheduling; "
                "a schedule's exit is no verdict")
    return f"{where}: the schedule fails: {_one_line(status.get('message', 'no reason given'))}"


# ----------------------------------------------------------------------------- the child


def _child(before: Path, func: str, path: Path, status_path: Path, out_path: Path) -> None:
    """In the child: read BEFORE, run the schedule, write the scheduled PrimFunc's TVMScript and
    how it went (``status.json``: ok, error with message and line, or exit with code and line)."""
    from suite.triage import traces, tvmscript

    funcs, facts = tvmscript.parse_file(before)
    name, program = tvmscript.pick(funcs, func, before)
    try:
        scheduled = traces.schedule_here(program, name, path, facts["modules"])
    except traces.ScheduleFailed as err:
        status = {"status": "error", "message": err.message, "line": err.line}
    except SystemExit as err:
        status = {"status": "exit", "code": repr(err.code), "line": traces.script_line(err, str(path))}
    else:
        out_path.write_text(tvmscript.script(scheduled, name), encoding="utf-8")
        status = {"status": "ok"}
    status_path.write_text(json.dumps(status), encoding="utf-8")


def main(argv: list[str]) -> int:
    before, func, path, status_path, out_path = argv
    try:
        _child(Path(before), func or None, Path(path), Path(status_path), Path(out_path))
    except UserError as err:  # BEFORE itself: its own error, which names it (read here first, never by the parent)
        Path(status_path).write_text(json.dumps({"status": "before", "message": first_line(err)}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
