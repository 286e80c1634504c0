"""Fuzz findings a TVM developer can act on (issue 63): a wrong index that a long float16 sum's
rounding bound would admit is no reordering (defect 2); a build TVM fails with an InternalError is a
crash finding kept with its traceback, and the campaign exits with the crash status (defect 4); an
output that differs between runs on the same inputs and the same output bytes is said to be so, not
blamed on the output array (defect 5); a finding's report quotes what its reproduce command prints
(defect 6); and wrong results on unmodified schedules of both kinds are called a compiler or runtime
fault, not the oracle's false alarms (item 3)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_fuzz import SEED_PROGRAM

from suite import targets
from suite.core import execution
from suite.core.bounds import Expected
from suite.fuzz import worker
from suite.fuzz.journal import JournalLine
from suite.fuzz.outcome import Outcome
from suite.fuzz.summary import summarize
from suite.reporting import thresholds
from suite.targets.base import Output
from suite.triage import filled, verdict

#: A TVM with a planted fault in its build (tests/data/fuzz/faulty_tvm/sitecustomize.py).
FAULTY_TVM = Path(__file__).parent / "data" / "fuzz" / "faulty_tvm"
SMALL_MATMUL = "miniresnet.matmul_add.16-10"


def _float16_matmul(k: int = 2048, n: int = 1000):
    """A float16 matmul_add 1 x k x n as TVM's unscheduled kernel computes it (one float16 sum over
    k per output, in order), its exact value and magnitude, and its inputs."""
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, k).astype(np.float16)
    w = rng.normal(0, np.sqrt(1 / k), (k, n)).astype(np.float16)
    bias = rng.uniform(-0.1, 0.1, n).astype(np.float16)
    exact = a.astype(np.float64) @ w.astype(np.float64) + bias
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(w.astype(np.float64)) + np.abs(bias)

    def summed(blocks: int) -> np.ndarray:  # sums of `blocks` consecutive terms, then their sum
        total = np.zeros(n, np.float16)
        for start in range(0, k, blocks):
            part = np.zeros(n, np.float16)
            for i in range(start, start + blocks):
                part = (part + a[i] * w[i]).astype(np.float16)
            total = (total + part).astype(np.float16)
        return (total + bias).astype(np.float16)

    return Expected(exact, magnitude, k + 1, "output", "float16"), summed(k), summed(64)


def test_a_wrong_index_in_a_long_float16_sum_is_no_reordering():
    """Defect 2: in a float16 matmul of K = 2049 the rounding bound is about 4.2, ten times the
    median output, so one vector lane of 64 storing its neighbour's value (1.6% of the elements,
    errors up to 2) stayed within it and passed as REORDERED. Its errors are 100 times the largest
    the unscheduled kernel's rounding makes: SHIFTED, naming the element. Summing in blocks of 64
    (a reordering) stays REORDERED."""
    expected, before, blocked = _float16_matmul()
    lanes = np.arange(15, 1000, 64)
    wrong = before.copy()
    wrong[lanes] = before[lanes - 1]

    judged = verdict.judge(expected, before, wrong)
    assert judged.kind == verdict.SHIFTED, judged.summary
    bound = verdict.Bound(expected, thresholds.load())
    assert not bound.beyond(wrong).any() and bound.of((0,)) > 4  # within the bound, which is that loose
    assert judged.first["index"][0] in lanes
    assert judged.figures["element_ratio"] > 50 and 10 <= judged.figures["elements_beyond"] <= len(lanes)
    assert judged.summary.startswith(f"output[{judged.first['index'][0]}]: after ")
    assert f"of 1,000 elements beyond {verdict.ELEMENT_FACTOR:g}x" in judged.summary

    reordered = verdict.judge(expected, before, blocked)
    assert reordered.kind == verdict.REORDERED, reordered.summary
    assert reordered.figures["elements_beyond"] == 0 and reordered.figures["element_ratio"] < 1


#: A kernel that keeps a running sum in a buffer TVM allocates from its workspace and never
#: initialises: each run adds the inputs to what the last run left there.
STALE_WORKSPACE = """\
@T.prim_func(s_tir=True)
def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    W = T.alloc_buffer((1024,), "float32")
    for i in range(1024):
        with T.sblock("w"):
            v = T.axis.spatial(1024, i)
            W[v] = W[v] + A[v]
    for i in range(1024):
        with T.sblock("b"):
            v = T.axis.spatial(1024, i)
            B[v] = W[v]
"""


def test_an_output_that_changes_from_run_to_run_is_not_blamed_on_the_output_array(tmp_path):
    """Defect 5: a kernel reading stale state of TVM's workspace gave outputs apart between the runs
    on output arrays of 0x55 and of 0xAA, and the verdict said its output array was read before it
    was written. Two runs on the same bytes differ as well: it says that, and names the workspace
    as a place it may read unwritten memory."""
    from suite.triage import tvmscript

    script = tmp_path / "stale.py"
    script.write_text(STALE_WORKSPACE)
    funcs, _ = tvmscript.parse_file(script)
    func = tvmscript.pick(funcs, "main", script)[1]
    llvm = targets.get("llvm")
    built = execution.build(llvm, func, tmp_path / "stale.so")
    assert built.failure is None, built.failure
    said = filled.undefined(llvm, built.path, [np.ones(1024, np.float32), Output((1024,), "float32")])
    assert said is not None
    assert re.fullmatch(r"its output is not a function of its inputs: [\d,]+ of 1,024 elements differ between two "
                        r"runs on the same inputs, its output array filled with bytes 0x55 before each \(first at "
                        r"\[\d+\]\): nondeterministic, or it reads memory it did not write \(TVM's workspace, or its "
                        r"output array\)", said), said
    assert "output array held" not in said


#: A reduction with its init: dropped (suite.fuzz.plant's ``dropped_init``), it reads its output before writing it.
REDUCTION = "from tvm.script import tir as T\n\n" + SEED_PROGRAM  # the fuzz tests' 4x4 matmul


def test_triage_runs_the_after_program_on_filled_output_arrays_as_the_campaign_does(tmp_path, cli):
    """Issue 63: a finding the campaign judged UNDEFINED (its kernel's output apart between runs on
    output arrays of bytes 0x55 and 0xAA) came back CHANGED or REORDERED from its report's triage
    command, which judged the values of one run alone. Triage makes the worker's runs
    (suite.triage.filled) and judges through the same verdict: UNDEFINED, in the campaign's words."""
    from suite.fuzz import plant

    (tmp_path / "before.py").write_text(REDUCTION)
    (tmp_path / "after.py").write_text(plant.mutate(REDUCTION, "dropped_init", "float32"))
    done = cli("triage", "before.py", "after.py", "--target", "llvm", cwd=tmp_path)
    assert done.returncode == 13, done.stderr
    assert done.stdout.splitlines()[0] == (
        "UNDEFINED on llvm: its output depends on what its output array held before it ran: 16 of 16 elements differ "
        "between a run on an array of bytes 0x55 and one of 0xAA, and not between two runs on 0x55 (first at [0, 0]): "
        "read before written")


def test_wrong_results_on_named_orders_and_sampled_traces_are_a_compiler_fault():
    """Item 3: when the suite's own orders and the sampled traces both come out wrong, the summary
    says the compiler or the runtime is at fault, not that the oracle raised false CHANGED; wrong
    traces alone, or none, keep the false-alarm count."""
    def line(kind, name, outcome):
        return JournalLine(id=f"w|float32|llvm|seed0|{kind}:{name}", seed=0, judged_by="x", workload="w",
                                    dtype="float32", target="llvm", kind=kind, name=name, outcome=outcome,
                                    message="", seconds=1.0, summary="")

    faulty = [line("order", "default", Outcome.EQUIVALENT), line("order", "tuned", Outcome.CHANGED),
              line("trace", "0", Outcome.CHANGED), line("trace", "1", Outcome.UNDEFINED),
              line("trace", "2", Outcome.REORDERED)]
    summary = summarize(faulty, [], 10.0, 5, None)
    text = summary.text()
    assert ("the default and sampled schedules both differ from the reference: a compiler or runtime fault, not the "
            "oracle's (CHANGED, UNDEFINED or SHIFTED: 1 named orders and 2 sampled traces of 5 unmodified "
            "schedules)") in text
    assert "false CHANGED" not in text
    assert summary.compiler_fault and summary.to_json()["compiler_fault"] is True
    assert summary.to_json()["unmodified_wrong"] == {"orders": 1, "traces": 2}

    sound = summarize(faulty[:1] + faulty[2:], [], 10.0, 4, None)
    assert not sound.compiler_fault
    assert "false CHANGED on unmodified schedules: 1 of 4" in sound.text()


def _faulty_env(monkeypatch, fault: str) -> None:
    """This process's children (the workers, triage's) build with a TVM whose builds of parallel
    loops go wrong (tests/data/fuzz/faulty_tvm)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAULTY_TVM), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("TVM_SUITE_TEST_FAULT", fault)


@pytest.mark.slow
def test_a_build_tvm_fails_inside_is_a_crash_finding_kept_with_its_traceback(tmp_path, cli, monkeypatch):
    """Slow (a design space, then builds): defect 4. A TVM whose build of any parallel loop fails
    one of its checks (InternalError) on schedules the postprocessors accepted: each sampled trace
    is a CRASH finding, kept with its trace and TVM's traceback (worker.log), and the campaign
    exits 14, where it used to count BUILD_FAILED and exit 0."""
    _faulty_env(monkeypatch, "internal-error")
    done = cli("fuzz", "--workloads", SMALL_MATMUL, "--traces", "1", "--out", tmp_path / "o", "--json")
    summary = json.loads(done.stdout)
    assert done.returncode == 14 and summary["exit_status"] == 14, done.stderr
    row = summary["table"][f"{SMALL_MATMUL} float32 llvm"]
    assert row["CRASH"] == 1 and row["BUILD_FAILED"] == 0
    (found,) = summary["findings"]
    assert found["outcome"] == "CRASH" and "InternalError" in found["key"] and "planted" in found["key"]
    kept = Path(found["first"])
    assert json.loads((kept / "trace.json").read_text())
    log = (kept / "worker.log").read_text()
    assert "Traceback" in log and log.rstrip().endswith(
        "tvm.error.InternalError: Check failed: (planted) is false: a fault planted in this TVM's build")
    assert "worker.log" in (kept / "report.md").read_text()


def test_a_worker_that_dies_keeps_its_log_with_the_request(tmp_path):
    """Defect 4: a worker child that died took what it wrote with it (the campaign removes its work
    directory), so nothing said where it crashed. A child that dies of a segfault in a build
    (tests/data/fuzz/faulty_tvm) answers CRASH, and its words, the Python stack of the segfault
    among them, are kept as worker.log in the request's directory (a finding keeps that file)."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(FAULTY_TVM), os.environ.get("PYTHONPATH")])),
           "TVM_SUITE_TEST_FAULT": "segfault"}
    dying = worker.Worker(tmp_path / "work", env=env, scratch=tmp_path)
    try:
        request = {"workload": SMALL_MATMUL, "dtype": "float32", "target": "llvm", "order": "default",
                   "dir": str(tmp_path / "request")}
        answer = dying.ask(request, 300)
    finally:
        dying.close()
    assert answer["failure"]["outcome"] == "CRASH", answer
    log = (tmp_path / "request" / "worker.log").read_text()
    assert "Segmentation fault" in log and "faulty_build" in log, log[-2000:]


@pytest.mark.slow
def test_a_findings_report_quotes_what_its_reproduce_command_prints(tmp_path, cli, monkeypatch):
    """Slow (a design space, builds, then triage once per finding): defect 6. The report gave the
    campaign's verdict as "what triage's verdict says", and triage as the report said gave another.
    With a TVM whose parallel reductions start from 1, the report's command (on the workload's inputs,
    kept with the finding) is run when the finding is kept, and the report quotes its first line;
    run again, the command prints that line, and the verdict is the campaign's. Issue 63: the
    campaign's run of the command leaves no triage_repro_*.py in the finding."""
    _faulty_env(monkeypatch, "init-one")
    done = cli("fuzz", "--workloads", SMALL_MATMUL, "--traces", "1", "--out", tmp_path / "o", "--json")
    summary = json.loads(done.stdout)
    assert done.returncode == 12, done.stderr
    (found,) = summary["findings"]
    kept = Path(found["first"])
    report = (kept / "report.md").read_text()
    command = re.search(r"```sh\n(tvm-suite triage [^\n]+)\n```", report).group(1)
    quoted = re.search(r"What the command above printed[^\n]*:\n\n```\n([^\n]+)\n```", report).group(1)
    assert "--inputs lv20=inputs/lv20.npy,p12=inputs/p12.npy,p13=inputs/p13.npy" in command
    assert quoted.startswith("CHANGED on llvm: ")
    assert "The campaign's verdict on the schedule it sampled: CHANGED: " in report
    # triage's standalone reproducer of a CHANGED verdict (the whole inputs written into it: 41 MB
    # for a ResNet-50 matmul) is not left in the finding by the campaign's runs of the command
    assert not [p.name for p in kept.iterdir() if p.name.startswith("triage_repro")]
    # its small program (issue 63), as the report quotes it, judged wrong by its own triage command
    small = json.loads((kept / "reproducer.json").read_text())
    assert small["printed"].startswith("CHANGED on llvm: ") and small["command"] in report
    assert "T.reads(" not in (kept / "reproducer_after.py").read_text()
    argv = command.split()[1:]
    again = subprocess.run([sys.executable, "-c", "import sys; from suite.cli import main; sys.exit(main())", *argv],
                           cwd=kept, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 12, again.stderr
    assert again.stdout.splitlines()[0] == quoted
