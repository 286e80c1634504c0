"""A program's schedule applied, as triage's ``--schedule`` and ``--trace`` give it: a schedule script
run in the child process of :mod:`suite.triage.schedule` (:func:`schedule_here`), or a MetaSchedule
trace in JSON (:func:`read_trace`, :func:`apply_trace`), its annotations checked against the keys
:mod:`suite.triage.script_check` allows. Part of the compat layer's half that reads programs
(:mod:`suite.triage.tvmscript`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from suite.compat import release, schedules
from suite.errors import UserError, first_line
from suite.triage import script_check
from suite.triage.spelling import modernize_schedule, spelling_rules
from suite.triage.tvmscript import NotTVMScript, python_tree, read_text, script


class ScheduleFailed(Exception):
    """A schedule script that raised: its message (one line) and its line in the script."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.message, self.line = message, line


def schedule_here(func, name: str, path: Path, module_names=()) -> object:
    """``func`` after a schedule script, run in this process: only the child process of
    :mod:`suite.triage.schedule` calls this (a schedule is Python, and its exit must not be
    triage's). The script is Python calling schedule primitives on ``sch`` (a ``Schedule`` of a
    module holding ``func`` under ``name``), as reports write it: it may create ``sch`` itself
    from ``mod`` (``sch = tvm.tir.Schedule(mod)``), or define ``apply_trace(sch)`` (the form
    MetaSchedule prints its traces in). Returns the PrimFunc; ScheduleFailed where it raises."""
    text = modernize_schedule(read_text(path, "schedule"), spelling_rules())
    try:
        code = compile(text, str(path), "exec")
    except SyntaxError as err:
        raise ScheduleFailed(f"not Python: {err.msg}", err.lineno) from None
    tvm = release.tvm()
    named = re.findall(r"func_name\s*=\s*[\"']([^\"']+)[\"']", text)
    key = "main" if named and all(n == "main" for n in named) else name
    module = tvm.IRModule({key: func})
    sch = release.schedule_namespace().Schedule(module)
    if hasattr(sch, "work_on"):  # get_sblock("name") without func_name finds it
        sch.work_on(key)
    namespace = {"__name__": "__triage_schedule__", "tvm": tvm, "mod": module, "sch": sch,
                 "T": tvm.script.parser.tirx, "tir": release.tir(), "s_tir": release.schedule_namespace(),
                 **{module_name: module for module_name in module_names}}
    schedule_class = release.schedule_namespace().Schedule
    try:
        exec(code, namespace)  # the user's own schedule, as they would run it (in the child process)
        made = namespace.get("sch")
        if not isinstance(made, schedule_class):
            made = next((v for v in namespace.values() if isinstance(v, schedule_class)), sch)
        if made is sch and callable(namespace.get("apply_trace")):
            namespace["apply_trace"](sch)
    except Exception as err:
        raise ScheduleFailed(first_line(err), script_line(err, str(path))) from None
    return _function_of(made.mod, key)


def script_line(err: BaseException, filename: str) -> int | None:
    """The last line of the script ``filename`` in ``err``'s traceback."""
    tb, line = err.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line



def _function_of(module, key: str):
    tir = release.tir()
    funcs = [(gv.name_hint, f) for gv, f in module.functions.items() if isinstance(f, tir.PrimFunc)]
    for name, func in funcs:
        if name == key:
            return func
    return funcs[0][1]


def read_trace(path: Path):
    """A MetaSchedule trace in JSON: the trace itself (``[instructions, decisions]``), a suite
    tuning record (``{"trace": ...}``) or a line of MetaSchedule's database
    (``[workload, [trace, run_secs, ...]]``). JSON only: a trace printed as Python is Python, and
    runs only as a schedule (``--schedule``, in the sandbox)."""
    text = read_text(path, "trace")
    try:
        value = json.loads(text)
    except RecursionError:
        raise NotTVMScript(f"{path}: JSON nested deeper than Python's json reads: not a trace") from None
    except ValueError:
        first = text.strip().splitlines()[0] if text.strip() else ""
        try:
            value = json.loads(first)  # a database file: one record per line
        except (ValueError, RecursionError):
            raise NotTVMScript(f"{path}: not JSON: --trace reads a MetaSchedule trace in JSON only; a trace printed "
                               "as Python is Python: give it as --schedule FILE (it runs in the sandbox)") from None
    if isinstance(value, dict) and isinstance(value.get("trace"), list):
        return value["trace"]
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], int) and isinstance(value[1], list)
            and value[1] and isinstance(value[1][0], list)):
        return value[1][0]
    if isinstance(value, list) and len(value) == 2 and all(isinstance(part, list) for part in value):
        return value
    raise NotTVMScript(f"{path}: JSON, but not a MetaSchedule trace ([instructions, decisions]), a database "
                       "record or a suite tuning record")


def apply_trace(func, trace, path: Path):
    """``func`` after a JSON trace (its ``get_sblock`` names the function ``main``). Its
    annotations are checked against the allowed keys (:func:`suite.triage.script_check.key_allowed`)
    before it applies, and the program it made after."""
    _check_trace_keys(trace, path)
    sch = schedules.schedule(func)
    try:
        schedules.apply_trace(trace, sch)
    except Exception as err:
        raise UserError(f"{path}: the trace does not apply to the before program: {first_line(err)}") from None
    after = sch.mod["main"]
    script_check.check_keys(python_tree(script(after, "main"), path, "TVMScript"), path)
    return after


def _check_trace_keys(trace, path: Path) -> None:
    """Every ``Annotate`` of a JSON trace names an allowed key (one line naming the instruction)."""
    instructions = trace[0] if isinstance(trace, list) and trace and isinstance(trace[0], list) else []
    for number, instruction in enumerate(instructions, 1):
        if not (isinstance(instruction, list) and instruction and instruction[0] in ("Annotate", "Unannotate")):
            continue
        attrs = instruction[2] if len(instruction) > 2 and isinstance(instruction[2], list) else []
        key = attrs[0] if attrs else None
        if not isinstance(key, str):
            raise UserError(f"{path}: instruction {number} ({instruction[0]}) names no key: not a trace triage reads")
        if not script_check.key_allowed(key):
            raise script_check.Refused(f"{path}: instruction {number} ({instruction[0]}): "
                                       f"{script_check.key_words(key)}; triage refuses it")
