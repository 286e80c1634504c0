"""Faults of untrusted input to `tvm-suite triage`, which judges reports pasted from the internet:
Python hidden in TVMScript, a schedule's own exit, a schedule that applies nothing, a reproducer
written over a file, huge shapes, deep expressions, a .npy of strings.

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together. The contract, in every case: exit 2, one line on stderr
starting ``tvm-suite: error: `` that names what is wrong, no traceback, no verdict on stdout, and
nothing done that the input asked for (the side-effect file a payload would write is absent; the
file a reproducer would replace is unchanged). The many payloads of one kind are read here as
triage's confined reader reads them (:func:`read_refused`), each kind also through the command.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import check_fault_table, run_cli, run_in_process

from suite.errors import UserError
from suite.triage import budget, inputs, ir, repro, script_check, tvmscript

CASES = Path(__file__).parent / "data" / "triage"

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "untrusted code in TVMScript": ["test_python_in_tvmscript_is_refused_and_never_runs",
                                    "test_python_in_a_module_class_is_refused_and_never_runs",
                                    "test_the_after_program_is_checked_as_the_before_one",
                                    "test_tir_that_calls_code_by_name_is_refused",
                                    "test_code_around_the_definitions_is_never_run"],
    "a schedule's own exit": ["test_a_schedules_exit_or_crash_is_no_verdict"],
    "a schedule that applies nothing": ["test_a_schedule_that_applies_nothing_is_refused",
                                        "test_tvmscript_given_as_a_schedule_is_refused_unrun"],
    "a replaced file": ["test_repro_never_replaces_a_file", "test_the_default_reproducer_name_is_a_fresh_one"],
    "huge shapes": ["test_huge_shapes_are_refused_before_any_allocation",
                    "test_a_huge_constant_is_refused_before_the_parser_computes_it"],
    "deep expressions": ["test_deep_expressions_are_one_line"],
    "a string .npy": ["test_a_non_numeric_npy_is_one_line"],
    "a byte-order mark": ["test_a_byte_order_mark_is_read_past"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


def here(*args) -> subprocess.CompletedProcess:
    """`tvm-suite triage ARGS` in this process (TVM imported once for all the cases); a schedule's
    exit, whose status is the point, runs as a process of its own (run_cli)."""
    return run_in_process("triage", *args)


def read_refused(path: Path, *words) -> str:
    """The one line refusing ``path`` where triage's confined child reads it
    (:func:`suite.triage.tvmscript.parse_file`: checked before TVM's parser sees a line), read in
    this process: a payload the check let through would run here, and leave its file."""
    with pytest.raises(UserError) as refusal:
        tvmscript.parse_file(path)
    line = str(refusal.value)
    assert "\n" not in line, line
    for word in words:
        assert str(word) in line, (word, line)
    return line


def refused(result, *words) -> str:
    """The one error line of a refused triage (exit 2, nothing on stdout), holding ``words``."""
    assert result.returncode == 2, (result.returncode, result.stdout[-1000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr
    assert not result.stdout.strip(), result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm-suite: error: "), result.stderr
    for word in words:
        assert str(word) in lines[0], (word, lines[0])
    return lines[0]


# ----------------------------------------------------------------------------- untrusted code in TVMScript

PROGRAM = '''from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def scale(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)
'''

#: (case, the line of PROGRAM replaced, its replacement with SIDE for the file it would write, what the error says)
PAYLOADS = [
    ("exec in func_attr", '    T.func_attr({"tir.noalias": True})',
     '''    T.func_attr({"x": exec("import os; os.system('touch SIDE')")})''', "a call to exec(...)"),
    ("open().write in a decorator argument", "@T.prim_func(s_tir=True)",
     '@T.prim_func(private=open("SIDE", "w").write("x") > 0)', "a call to open(...).write(...)"),
    ("__import__ in an annotation", 'def scale(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):',
     'def scale(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), __import__("os").system("touch SIDE") or '
     '"float32")):', "a call to __import__(...).system(...)"),
    ("a lambda", "            B[vi] = A[vi] * T.float32(2)",
     '            B[vi] = A[vi] * (lambda: open("SIDE", "w").write("x"))()', "a lambda"),
    ("a dunder attribute", '    T.func_attr({"tir.noalias": True})',
     '    T.func_attr({"x": T.prim_func.__globals__["__builtins__"]["open"]("SIDE", "w").write("x")})',
     "the attribute __globals__"),
    ("an f-string", '    T.func_attr({"tir.noalias": True})',
     '''    T.func_attr({"x": f"{open('SIDE', 'w').write('x')}"})''', "an f-string"),
    ("a comprehension", '    T.func_attr({"tir.noalias": True})',
     '    T.func_attr({"x": [open("SIDE", "w").write("x") for _ in range(1)]})', "a list comprehension"),
    ("an import in the function", '    T.func_attr({"tir.noalias": True})',
     '    import os; os.system("touch SIDE")', "an import"),
    ("a name the function does not bind", "    for i in range(16):",
     '    for i in range(os.system("touch SIDE") + 16):', "a call to os.system(...)"),
    ("tvm itself", '    T.func_attr({"tir.noalias": True})',
     '    T.func_attr({"x": tvm.ffi.get_global_func("x"), "y": open("SIDE", "w").write("x")})',
     "a call to tvm.ffi.get_global_func(...)"),
    ("T.meta_var, which binds Python values", '    T.func_attr({"tir.noalias": True})',
     '    n = T.meta_var(open("SIDE", "w").write("x"))', "a call to T.meta_var(...)"),
    ("a decorator of its own", "@T.prim_func(s_tir=True)",
     '@(lambda f: open("SIDE", "w").write("x") and f)\n@T.prim_func(s_tir=True)', "the decorator @lambda"),
    ("a walrus", "            B[vi] = A[vi] * T.float32(2)",
     '            B[vi] = A[vi] * (x := open("SIDE", "w").write("x"))', "an assignment expression (:=)"),
]


def payload(tmp_path: Path, original: str, replacement: str) -> tuple[Path, Path, int]:
    """PROGRAM with ``original`` replaced (SIDE naming a file in tmp_path): (the program's path,
    the side-effect file, the line of the payload)."""
    side = tmp_path / "side_effect"
    assert PROGRAM.count(original + "\n") == 1
    text = PROGRAM.replace(original + "\n", replacement.replace("SIDE", str(side)) + "\n")
    line = text.splitlines().index(next(l for l in text.splitlines() if str(side) in l)) + 1
    path = tmp_path / "before.py"
    path.write_text(text)
    return path, side, line


@pytest.mark.parametrize("case, original, replacement, words", PAYLOADS, ids=[p[0] for p in PAYLOADS])
def test_python_in_tvmscript_is_refused_and_never_runs(tmp_path, case, original, replacement, words):
    path, side, line = payload(tmp_path, original, replacement)
    read_refused(path, f"{path}:{line}: {words}", "is not TVMScript", "runs none of it")
    assert not side.exists(), f"{case}: the payload ran"


MODULE = '''import tvm
from tvm.script import ir as I
from tvm.script import tirx as T


@I.ir_module
class Module:
    I.module_attrs({"note": "a module attribute is TVMScript"})
    x = open("SIDE", "w").write("x")

    @T.prim_func(s_tir=True)
    def scale(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.sblock("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] * T.float32(2)
'''


def test_python_in_a_module_class_is_refused_and_never_runs(tmp_path):
    side = tmp_path / "side_effect"
    path = tmp_path / "module.py"
    path.write_text(MODULE.replace("SIDE", str(side)))
    refused(here(path, CASES / "stencil_oob.py"), f"{path}:9: an assignment in an ir_module class is not TVMScript")
    assert not side.exists()


def test_the_after_program_is_checked_as_the_before_one(tmp_path):
    path, side, line = payload(tmp_path, *PAYLOADS[0][1:3])
    refused(here(CASES / "stencil_oob.py", path), f"{path}:{line}: a call to exec(...)")
    assert not side.exists()


@pytest.mark.parametrize("call", [
    'T.evaluate(T.call_extern("int32", "system", "touch SIDE"))',
    'T.evaluate(T.call_pure_extern("int32", "system", "touch SIDE"))',
    'T.evaluate(T.call_packed("runtime.SaveParams", "SIDE"))',
    'T.evaluate(T.call_intrin("int32", "tirx.call_extern", "system", "touch SIDE"))',
], ids=["call_extern", "call_pure_extern", "call_packed", "call_intrin"])
def test_tir_that_calls_code_by_name_is_refused(tmp_path, call):
    """TIR is data to the parser, but triage compiles and runs the after program: a call by name
    (a C function such as system(), a packed function, any op) would run when it does."""
    path, side, line = payload(tmp_path, "            B[vi] = A[vi] * T.float32(2)",
                               f"            B[vi] = A[vi] * T.float32(2)\n            {call}")
    name = call.split("(", 2)[1]
    read_refused(path, f"{path}:{line}: {name}(...) calls code by name when the program runs")
    assert not side.exists()


def test_code_around_the_definitions_is_never_run(tmp_path):
    """A report's harness around its TVMScript (imports, a call that builds and runs it) is left
    out: never parsed, never run. The before program is undefined, so nothing compiles."""
    side = tmp_path / "side_effect"
    path = tmp_path / "report.py"
    path.write_text(f"import os\nos.system('touch {side}')\n" + (CASES / "stencil_oob.py").read_text()
                    + f"\nmod = __import__('os').system('touch {side}')\n")
    done = here(path, path, "--json")
    assert done.returncode == 13 and json.loads(done.stdout)["verdict"] == "UNDEFINED", done.stderr
    assert not side.exists()


# ----------------------------------------------------------------------------- a schedule's own exit


@pytest.mark.parametrize("script, words", [
    pytest.param("import sys\nsys.exit(0)\n", ":2: the schedule exits (SystemExit(0))", id="sys.exit(0)"),
    pytest.param("b = sch.get_sblock('C')\nraise SystemExit(5)\n", ":2: the schedule exits (SystemExit(5))",
                 id="raise SystemExit(5)", marks=pytest.mark.slow),
    pytest.param("import os\nos._exit(0)\n", "the schedule ended its own process (exit status 0", id="os._exit(0)"),
    pytest.param("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
                 "the schedule's process crashed (SIGSEGV)", id="a crash", marks=pytest.mark.slow),
    pytest.param("def apply_trace(sch):\n    raise SystemExit(0)\n", ":2: the schedule exits (SystemExit(0))",
                 id="exit in apply_trace", marks=pytest.mark.slow),
])
def test_a_schedules_exit_or_crash_is_no_verdict(tmp_path, script, words):
    """The schedule (a trace printed as Python too) runs in a process of its own: its exit status
    never becomes triage's, whatever it is (0 would have read EQUIVALENT)."""
    schedule = tmp_path / "schedule.py"
    schedule.write_text(script)
    refused(run_cli("triage", str(CASES / "matmul.py"), "--schedule", str(schedule)), schedule, words)


# ----------------------------------------------------------------------------- a schedule that applies nothing


def test_a_schedule_that_applies_nothing_is_refused(tmp_path):
    for name, text, flag in (("looks.py", "b = sch.get_sblock('C')\ni, j, k = sch.get_loops(b)\n", "--schedule"),
                             ("empty.py", "", "--schedule"),
                             ("empty_trace.json", "[[], []]", "--trace")):
        path = tmp_path / name
        path.write_text(text)
        refused(here(CASES / "matmul.py", flag, path), f"{path}: the", "applies nothing")


def test_tvmscript_given_as_a_schedule_is_refused_unrun(tmp_path):
    """An after program given as --schedule: refused from its syntax tree, before anything runs."""
    path, side, _ = payload(tmp_path, *PAYLOADS[1][1:3])
    refused(here(CASES / "matmul.py", "--schedule", path),
            f"{path}:", "scale is TVMScript (@T.prim_func), not a schedule", "give the after program as AFTER")
    assert not side.exists()
    refused(here(CASES / "matmul.py", "--schedule", CASES / "matmul.py"),
            "matmul is TVMScript (@T.prim_func), not a schedule")


# ----------------------------------------------------------------------------- a replaced file


def test_repro_never_replaces_a_file(tmp_path):
    """--repro names a path that must not exist: an existing file, the before program itself
    included, is refused before any work, and stays as it was."""
    existing = tmp_path / "notes.py"
    existing.write_text("my notes\n")
    before = tmp_path / "before.py"
    before.write_text((CASES / "matmul.py").read_text())
    for target in (existing, before):
        kept = target.read_bytes()
        refused(here(before, CASES / "matmul_wrong_split.py", "--repro", target),
                f"--repro {target} exists", "never replaces a file")
        assert target.read_bytes() == kept
    link = tmp_path / "dangling.py"
    link.symlink_to(tmp_path / "nowhere.py")
    refused(here(before, before, "--repro", link), "exists")
    assert not (tmp_path / "nowhere.py").exists()


def test_the_default_reproducer_name_is_a_fresh_one(tmp_path):
    """The default name takes _2, _3... where the name exists, and claims it at once (O_EXCL), so
    a file made meanwhile is never replaced; an explicit path that exists is refused."""
    first = tmp_path / "triage_repro_f.py"
    first.write_text("someone's\n")
    assert repro.claim_fresh(first) == tmp_path / "triage_repro_f_2.py"
    assert repro.claim_fresh(first) == tmp_path / "triage_repro_f_3.py"
    assert first.read_text() == "someone's\n"
    with pytest.raises(UserError, match="never replaces a file"):
        repro.claim(first)
    assert first.read_text() == "someone's\n"


# ----------------------------------------------------------------------------- huge shapes


HUGE = '''from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def big(A: T.Buffer((100000, 100000), "float32"), B: T.Buffer((100000, 100000), "float32")):
    for i, j in T.grid(100000, 100000):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
'''

SCRATCH = '''from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def scratch(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    tmp = T.alloc_buffer((1048576, 65536), "float32")
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            tmp[vi, 0] = A[vi]
            B[vi] = tmp[vi, 0]
'''


def test_huge_shapes_are_refused_before_any_allocation(tmp_path):
    """Inputs, the reference and the outputs are added up before anything is allocated: beyond
    --max-memory (default 2 GiB) one line names the sizes (inputs of 100000 x 100000 float32,
    held twice: 74.5 GiB)."""
    huge, scratch = tmp_path / "huge.py", tmp_path / "scratch.py"
    huge.write_text(HUGE)
    scratch.write_text(SCRATCH)
    refused(here(huge, huge), f"{huge}: triage would hold about", "inputs 74.5 GiB",
            "over the limit of 2 GiB", "--max-memory")
    refused(here(scratch, scratch), "reference 1.31 TiB")
    refused(here(CASES / "matmul.py", CASES / "matmul.py", "--max-memory", "1K"), "over the limit of 1 KiB")
    refused(here(CASES / "matmul.py", CASES / "matmul.py", "--max-memory", "lots"),
            "--max-memory: 'lots' is not a size")
    assert budget.parse_size("2G") == budget.DEFAULT_MAX_MEMORY == 2 << 30
    assert budget.parse_size("512MiB") == 512 << 20 and budget.parse_size("100") == 100


def test_a_huge_constant_is_refused_before_the_parser_computes_it(tmp_path):
    """``9 ** 9 ** 9`` would be computed by TVM's parser in Python (minutes, gigabytes)."""
    path, _, line = payload(tmp_path, "            B[vi] = A[vi] * T.float32(2)",
                            "            B[vi] = A[vi] * T.float32(9 ** 9 ** 9)  # SIDE")
    read_refused(path, f"{path}:{line}: an integer constant of more than {script_check.MAX_CONSTANT_BITS} bits")


# ----------------------------------------------------------------------------- deep expressions


def deep(tmp_path: Path, name: str, expression: str) -> Path:
    path = tmp_path / name
    path.write_text(PROGRAM.replace("B[vi] = A[vi] * T.float32(2)", f"B[vi] = {expression}"))
    return path


def test_deep_expressions_are_one_line(tmp_path):
    """A sum of 20,000 terms (deeper than Python's own parser goes), of 300 (deeper than TVM's
    parser goes), 20,000 nested parentheses: one line each, never a RecursionError."""
    terms = deep(tmp_path, "terms.py", " + ".join(["A[vi]"] * 20_000))
    refused(here(terms, terms), f"{terms}: nested deeper than Python's own parser reads")
    some = deep(tmp_path, "some.py", " + ".join(["A[vi]"] * 300))
    read_refused(some, f"{some}:10: nested more than {script_check.MAX_DEPTH} levels")
    parens = deep(tmp_path, "parens.py", "(" * 20_000 + "A[vi]" + ")" * 20_000)
    read_refused(parens, f"{parens}:")
    fine = deep(tmp_path, "fine.py", " + ".join(["A[vi]"] * 100))  # read, evaluated; not compiled (no target runs)
    done = here(fine, fine, "--target", "hexagon-v68")
    assert done.returncode == 2 and done.stdout.startswith("NO VERDICT"), (done.stdout, done.stderr)


# ----------------------------------------------------------------------------- a string .npy


@pytest.mark.parametrize("values, words", [
    (np.array(["a"] * 16), "its values are <U1 (strings), not numbers"),
    (np.zeros(16, complex), "complex128 (complex numbers)"),
    (np.zeros(16, [("x", "f4"), ("y", "i4")]), "(records)"),
], ids=["strings", "complex", "records"])
def test_a_non_numeric_npy_is_one_line(tmp_path, values, words):
    """Refused where triage reads --inputs (each kind of values); strings through the command too."""
    path = tmp_path / "a.npy"
    np.save(path, values)
    with pytest.raises(inputs.BadInputs) as refusal:  # stencil_oob's A
        inputs.make(inputs.parse(f"A={path}"), [ir.Buf("A", (16,), "float32", param=True)])
    assert f"--inputs A={path}" in str(refusal.value) and words in str(refusal.value), refusal.value
    if values.dtype.kind == "U":
        refused(here(CASES / "stencil_oob.py", CASES / "stencil_oob.py", "--inputs", f"A={path}"),
                f"--inputs A={path}", words)


@pytest.mark.slow
def test_a_byte_order_mark_is_read_past(tmp_path):
    """A file an editor saved with a UTF-8 byte-order mark is the same program (it was "not even
    Python: invalid non-printable character U+FEFF")."""
    schedule = tmp_path / "schedule.py"
    schedule.write_bytes(b"\xef\xbb\xbf" + b"b = sch.get_sblock('C')\ni, j, k = sch.get_loops(b)\nsch.reorder(j, i)\n")
    done = here(CASES / "matmul.py", "--schedule", schedule, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["verdict"] == "EQUIVALENT", done.stderr[-1000:]
    trace = tmp_path / "trace.json"
    trace.write_bytes(b"\xef\xbb\xbf[[], []]")
    refused(here(CASES / "matmul.py", "--trace", trace), trace, "applies nothing")
