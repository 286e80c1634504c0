"""The sandbox untrusted programs run in (suite/sandbox.py), and the four ways a hostile report ran
a command through triage before it: a string that TVM links as native code (a loop annotation, a
``T.attr``, a trace's ``Annotate``), a reproducer whose quoting a block name closed, and a
``--trace`` file of Python.

Each payload writes a file where it must not (``PWNED`` in the test's directory): the contract is
that the file is absent afterwards. Where the payload does run (inside the sandbox), it also
leaves a mark in its scratch directory, so that the test shows it ran and was contained, not
that it never ran.
"""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import check_fault_table, run_cli

from suite import sandbox

CASES = Path(__file__).parent / "data" / "triage"

FAULTS = {
    "code run inside the sandbox": ["test_native_code_inside_the_sandbox_writes_only_its_scratch",
                                    "test_a_schedule_from_a_report_writes_nothing_outside"],
    "the sandbox's walls": ["test_no_network_inside", "test_processes_memory_and_files_are_limited"],
    "a string that becomes native code": ["test_pragma_import_llvm_is_refused_with_its_line"],
    "Python that TVM's parser evaluates": ["test_nothing_of_a_program_is_evaluated_in_the_suite",
                                           "test_a_schedule_cannot_hand_the_suite_a_program_to_evaluate",
                                           "test_what_a_confined_child_printed_is_checked_before_use"],
    "a trace that crashes TVM": ["test_a_trace_that_crashes_tvm_is_one_line"],
    "a child's trap in the scratch": ["test_a_fifo_left_for_the_suite_does_not_hang_it"],
    "a reproducer's quoting closed": ["test_a_block_name_cannot_close_the_reproducers_quoting"],
    "a trace of Python": ["test_a_trace_that_is_not_json_is_refused"],
    "no sandbox here": ["test_without_bubblewrap_triage_refuses", "test_without_bubblewrap_a_trusted_triage_runs_unconfined"],
    "an allow-list that refuses the suite's own programs": ["test_the_suites_own_programs_pass_the_allow_list"],
}

pytestmark = pytest.mark.skipif(sandbox.unavailable() is not None,
                                reason=f"no sandbox on this machine: {sandbox.unavailable()}")


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


#: LLVM IR defining ``erff`` as a call of system(): what ``pragma_import_llvm`` links into a kernel
#: that calls T.erf (TVM's LLVM code generator, src/target/llvm/codegen_cpu.cc).
def _erff_ir(command: str) -> str:
    data = command.encode() + b"\0"
    text = "".join(f"\\{b:02X}" for b in data)
    return (f"declare i32 @system(ptr)\n@.cmd = private constant [{len(data)} x i8] c\"{text}\"\n"
            "define float @erff(float %x) {\n  %r = call i32 @system(ptr @.cmd)\n  ret float %x\n}\n")


BEFORE_ERF = '''from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.sblock("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = T.erf(A[vi])
'''


def _one_line_refusal(result, *words) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-1500:])
    assert "Traceback" not in result.stderr and not result.stdout.strip()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm-suite: error: "), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_native_code_inside_the_sandbox_writes_only_its_scratch(tmp_path):
    """The pragma_import_llvm payload built and run by TVM itself, inside the sandbox (as if the
    allow-list had a gap): system() runs, its write outside fails, its mark in the scratch is there."""
    scratch, outside = tmp_path / "scratch", tmp_path / "PWNED"
    scratch.mkdir()
    command = f"touch {outside}; touch {scratch}/ran"
    script = scratch / "build.py"
    script.write_text(textwrap.dedent(f'''
        import numpy as np, tvm
        from tvm.script import tirx as T
        source = {BEFORE_ERF.split(chr(10), 1)[1].replace("for i in range(16):", "for i in T.serial(16, annotations=ANN):")!r}
        func = tvm.script.from_source(source, extra_vars={{"T": T, "ANN": {{"pragma_import_llvm": {_erff_ir(command)!r}}}}})
        module = tvm.tirx.build(tvm.IRModule({{"main": func}}), target="llvm")
        a = tvm.runtime.tensor(np.ones(16, "float32")); b = tvm.runtime.tensor(np.zeros(16, "float32"))
        module["main"](a, b)
        print("ran", b.numpy()[0])
    '''))
    process = sandbox.start_python([str(script)], scratch, sandbox.TRIAGE, stdout=open(scratch / "out.txt", "w"),
                                   stderr=open(scratch / "err.txt", "w"))
    assert process.wait(timeout=300) == 0, (scratch / "err.txt").read_text()[-2000:]
    assert (scratch / "out.txt").read_text().strip() == "ran 1.0"  # erff replaced: the payload's code ran
    assert (scratch / "ran").exists() and not outside.exists()


def test_a_schedule_from_a_report_writes_nothing_outside(cli, tmp_path):
    outside = tmp_path / "PWNED"
    schedule = tmp_path / "schedule.py"
    schedule.write_text(f"import os\nos.system('touch {outside}')\nopen({str(outside)!r}, 'w').write('x')\n")
    line = _one_line_refusal(cli("triage", str(CASES / "matmul.py"), "--schedule", str(schedule)),
                             f"{schedule}:3: the schedule fails")
    assert "Read-only file system" in line
    assert not outside.exists()


def test_no_network_inside(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = tmp_path / "probe.py"
    probe.write_text(f"import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
                     "except OSError as err:\n    sys.exit(type(err).__name__ == 'ConnectionRefusedError' and 7)\n"
                     "sys.exit(1)\n")
    try:
        assert sandbox.start_python([str(probe)], tmp_path, sandbox.TRIAGE).wait(timeout=60) == 7
        assert sandbox.start_python([str(probe)], tmp_path, sandbox.TRIAGE, confined=False).wait(timeout=60) == 1
    finally:
        server.close()


def test_processes_memory_and_files_are_limited(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent('''
        import json, os, sys, time
        forks = 0
        try:
            for _ in range(2000):
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                forks += 1
        except OSError:
            pass
        try:
            memory = len(bytearray(20 << 30))
        except MemoryError:
            memory = 0
        try:
            written = open(sys.argv[1] + ".big", "wb").write(bytes(4 << 20))
        except OSError:
            written = 0
        open(sys.argv[1], "w").write(json.dumps({"forks": forks, "memory": memory, "written": written}))
        os._exit(0)
    '''))
    limits = sandbox.Limits(memory_bytes=4 << 30, cpu_seconds=60, processes=64, file_bytes=1 << 20)
    process = sandbox.start_python([str(probe), str(tmp_path / "got.json")], tmp_path, limits)
    assert process.wait(timeout=120) == 0
    got = json.loads((tmp_path / "got.json").read_text())
    assert got["memory"] == 0 and got["written"] == 0
    if "no limit" in sandbox.limits_in_force(limits):
        pytest.skip(f"processes are not limited here: {sandbox.limits_in_force(limits)}")
    assert 0 < got["forks"] < 64


@pytest.mark.parametrize("how", ["annotations", "T.attr", "T.attr by keyword", "trace"])
def test_pragma_import_llvm_is_refused_with_its_line(cli, tmp_path, how):
    outside = tmp_path / "PWNED"
    before = tmp_path / "before.py"
    before.write_text(BEFORE_ERF)
    ir = _erff_ir(f"touch {outside}")
    if how == "trace":
        after = tmp_path / "trace.json"
        after.write_text(json.dumps([[["GetSBlock", [], ["B", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1"]],
                                      ["Annotate", ["l1", json.dumps(ir)], ["pragma_import_llvm"], []]], []]))
        args, where = ["--trace", str(after)], f"{after}: instruction 3 (Annotate)"
    else:
        after = tmp_path / "after.py"
        if how == "annotations":
            after.write_text(BEFORE_ERF.replace("for i in range(16):",
                                                f"for i in T.serial(16, annotations={{'pragma_import_llvm': {ir!r}}}):"))
            where = f"{after}:6"
        else:
            key = 'attr_key="pragma_import_llvm", value=' if how.endswith("keyword") else '"pragma_import_llvm", '
            after.write_text(BEFORE_ERF.replace('        with T.sblock("B"):',
                                                f'        with T.attr(0, {key}{ir!r}):\n'
                                                '          with T.sblock("B"):'))
            where = f"{after}:7"
        args = [str(after)]
    # the allow-list holds with or without the sandbox (unconfined: a program's and a trace's, once each)
    for trust in ([], ["--trust-input"]) if how in ("annotations", "trace") else ([],):
        _one_line_refusal(cli("triage", str(before), *args, *trust), where, "'pragma_import_llvm'",
                          "TVM links its value into the kernel as code")
    assert not outside.exists()


def test_a_block_name_cannot_close_the_reproducers_quoting(cli, tmp_path):
    outside = tmp_path / "PWNED"
    name = f"B''' + str(__import__('os').system('touch {outside}')) + r'''"
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text((CASES / "matmul.py").read_text().replace('T.sblock("C")', f'T.sblock("{name}")'))
    after.write_text((CASES / "matmul_wrong_split.py").read_text().replace('T.sblock("C")', f'T.sblock("{name}")'))
    repro = tmp_path / "repro.py"
    result = cli("triage", str(before), str(after), "--repro", str(repro), "--json")
    assert result.returncode == 12, result.stderr[-2000:]  # CHANGED
    assert json.loads(result.stdout)["reproducer"]["shows"] is True
    assert not outside.exists()
    tree = ast.parse(repro.read_text())  # read, never run: the name sits inside its literal, whole
    literals = {node.targets[0].id: node.value for node in tree.body if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name)}
    assert any(name in line for line in ast.literal_eval(literals["BEFORE_LINES"]))


def test_a_trace_that_is_not_json_is_refused(cli, tmp_path):
    outside = tmp_path / "PWNED"
    trace = tmp_path / "trace.py"
    trace.write_text(f"import os\nos.system('touch {outside}')\n")
    _one_line_refusal(cli("triage", str(CASES / "matmul.py"), "--trace", str(trace)),
                      f"{trace}: not JSON", "give it as --schedule FILE")
    assert not outside.exists()


def test_without_bubblewrap_triage_refuses(tmp_path):
    # a process of its own: whether a sandbox starts is found once per process
    env = {sandbox.BWRAP_ENV: str(tmp_path / "bwrap")}  # a bubblewrap that is not there
    _one_line_refusal(run_cli("triage", str(CASES / "rowsum.py"), str(CASES / "rowsum_last_twice.py"), env=env),
                      f"bubblewrap ({tmp_path / 'bwrap'}) is not installed", "apt-get install bubblewrap",
                      "--trust-input")


@pytest.mark.slow  # a whole triage, both programs built and run
def test_without_bubblewrap_a_trusted_triage_runs_unconfined(tmp_path):
    env = {sandbox.BWRAP_ENV: str(tmp_path / "bwrap")}  # a bubblewrap that is not there
    trusted = run_cli("triage", str(CASES / "rowsum.py"), str(CASES / "rowsum_last_twice.py"), "--trust-input",
                      "--json", env=env)
    assert trusted.returncode == 15, trusted.stderr[-2000:]  # SHIFTED, as in the sandbox
    assert any("unconfined (--trust-input)" in note for note in json.loads(trusted.stdout)["notes"])


ROWSUM = (CASES / "rowsum.py").read_text()


@pytest.mark.parametrize("how", ["a string in a buffer's shape", "a name the body binds later",
                                 "a name used in the body before the body binds it"])
def test_nothing_of_a_program_is_evaluated_in_the_suite(cli, tmp_path, how):
    """TVM's parser evaluates a string in a T.Buffer shape, and calls an annotation: both ran in
    the suite's own process, before any sandbox (the file was written, as root)."""
    outside = tmp_path / "PWNED"
    program = tmp_path / "before.py"
    if how.startswith("a string"):
        program.write_text(ROWSUM.replace("T.Buffer((64, 1024)", f'T.Buffer(("tvm.os.system(\'touch {outside}\') + 64", 1024)'))
        words = "in a parameter's annotation (only a dtype, a scope or a name)"
    elif how.endswith("binds later"):
        program.write_text(ROWSUM.replace('S: T.Buffer((64,), "float16")):', 'S: T.Buffer((64,), "float16"), Z: tvm.sys.exit):\n'
                                          "    tvm = T.int32(0)"))
        words = "tvm.sys.exit (an attribute of an attribute of tvm)"  # tvm is the parser's module there
    else:  # the parser looks names up as it reaches them: before the binding, tvm is its module
        program.write_text(ROWSUM.replace("    for i, k in T.grid(64, 1024):",
                                          f"    Z = tvm.libinfo.tvm_ffi_libinfo.ctypes.cdll['{outside}.so'] == 0\n"
                                          "    tvm = T.int32(0)\n"
                                          "    for i, k in T.grid(64, 1024):"))
        words = "(an attribute of an attribute of tvm)"  # and binding tvm is refused too
    _one_line_refusal(cli("triage", str(program), str(CASES / "rowsum.py")), f"{program}:", words)
    assert not outside.exists()


def test_a_schedule_cannot_hand_the_suite_a_program_to_evaluate(cli, tmp_path):
    """A schedule (confined) that returns a program whose shape string runs a command: the program is
    read back, and parsed, in a confined child only."""
    outside = tmp_path / "PWNED"
    hostile = ROWSUM.replace("T.Buffer((64, 1024)", f'T.Buffer(("tvm.os.system(\'touch {outside}\') + 64", 1024)')
    schedule = tmp_path / "schedule.py"
    schedule.write_text(f"import sys\nHOSTILE = {hostile!r}\n"
                        "sys.modules['suite.triage.tvmscript'].script = lambda func, name: HOSTILE\n")
    _one_line_refusal(cli("triage", str(CASES / "rowsum.py"), "--schedule", str(schedule)),
                      f"{schedule}: the program the schedule made is not read back")
    assert not outside.exists()


def test_a_trace_that_crashes_tvm_is_one_line():
    """A JSON trace whose layout map is a TVM node graph holding itself: TVM's JSON loader crashed the
    suite (SIGSEGV, exit 139); it is read in a confined child now."""
    trace = CASES / "trace_cycle.json"  # a process of its own: read here, the crash would end pytest's
    _one_line_refusal(run_cli("triage", str(CASES / "rowsum.py"), "--trace", str(trace)),
                      f"{trace}: reading them ended the confined reader (crashed (SIGSEGV)", "no verdict")


def test_a_fifo_left_for_the_suite_does_not_hang_it(tmp_path):
    schedule = tmp_path / "schedule.py"
    schedule.write_text("import os, sys\nos.mkfifo(sys.argv[4] + '.fifo')\nos.replace(sys.argv[4] + '.fifo', sys.argv[4])\n"
                        "os._exit(0)\n")
    result = subprocess.run([sys.executable, "-m", "suite.cli", "triage", str(CASES / "rowsum.py"), "--schedule",
                             str(schedule)], capture_output=True, text=True, timeout=300)
    _one_line_refusal(result, f"{schedule}: the schedule ended its own process")


def test_what_a_confined_child_printed_is_checked_before_use():
    """The programs a confined child hands back (read, tuned) go into builds and into the reproducer
    a user runs unconfined: one definition that passes the allow-list, and nothing else."""
    from suite.triage import script_check, tvmscript

    printed = "\n".join(line for line in ROWSUM.splitlines() if not line.startswith("from "))
    assert tvmscript.check_printed(printed, "rowsum") == printed
    with pytest.raises(script_check.Refused, match="more than one @T.prim_func definition"):
        tvmscript.check_printed("PWN = __import__('os').system('touch x')\n" + printed, "rowsum")
    body = "    for i, k in T.grid(64, 1024):"
    for gadget, words in (('Z = T.Add.is_.func_globals["ctypes"].cdll["x.so"] == 0', "of a computed value"),
                          ("Z = T.Add.is_.func_globals == 0", "T.Add.is_.func_globals (not a TVMScript name)"),
                          ('Z = A.same_as.func_globals["os"] == 0', "an attribute of an attribute of A"),
                          ("Z = TypeVar.mro == 0\n    TypeVar = T.int32(0)", "binding the name 'TypeVar'")):
        with pytest.raises(script_check.Refused, match=re.escape(words)):  # each reached ctypes or os.environ
            tvmscript.check_printed(printed.replace(body, f"    {gadget}\n{body}"), "rowsum")
    with pytest.raises(script_check.Refused, match="'pragma_import_llvm'"):
        tvmscript.check_printed(printed.replace("for i, k in T.grid(64, 1024):",
                                                "for i, k in T.grid(64, 1024, annotations={'pragma_import_llvm': 'x'}):"),
                                "rowsum")


@pytest.mark.slow
@pytest.mark.parametrize("workload_id", ["resnet50.mean.7x7x2048", "resnet50.max_pool2d.112x112x64-k3s2"])
def test_the_suites_own_programs_pass_the_allow_list(workload_id):
    """Relax marks pooling and mean with ``op_pattern``: the printed program of such a workload (what
    fuzz plants and triage reads back) passes the allow-list rather than ending a campaign."""
    from suite.core import workloads
    from suite.triage import tvmscript

    printed = tvmscript.script(workloads.prim_func(workloads.get(workload_id), "float32"), "main")
    assert '"op_pattern": 4' in printed
    assert tvmscript.check_printed(printed, workload_id) == printed
