"""Faults users meet, beside the damage matrix (test_damage.py) and the interrupted phases of a run
(test_interrupt.py): paths from the environment, full and read-only file systems, oversized and
deeply nested files, a stopped helper, signals during MetaSchedule's search, a shared --out.

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together, so a new kind cannot be forgotten. The contract, in every
case: one line on stderr naming what is wrong (the path, the variable, the holder), the documented
exit status, no traceback, and the data as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from asv_runs import place, plant_file, two_commit_results
from conftest import (SUITE_BIN, check_fault_table, eventually, one_line, read_only_copy, run_cli, run_in_process,
                      small_filesystem)

pytestmark = pytest.mark.slow

MEAN = "resnet50.mean.7x7x2048"

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "environment paths": ["test_environment_paths_are_resolved_and_checked",
                          "test_a_relative_records_path_reaches_asvs_processes"],
    "full file system": ["test_a_full_file_system_is_one_line"],
    "read-only file system": ["test_a_read_only_place_is_one_line_before_any_work"],
    "oversized and deeply nested files": ["test_oversized_and_nested_files_are_malformed"],
    "stopped helper": ["test_a_stopped_helper_does_not_hang_run"],
    "signals during the search": ["test_a_signal_during_the_search_ends_tune_cleanly"],
    "a search process killed": ["test_a_search_that_dies_ends_its_workload_not_the_sweep"],
    "shared --out": ["test_one_out_one_run_at_a_time", "test_report_out_inside_the_results_is_refused"],
    "tune lock": ["test_two_tunings_of_one_record_meet_at_its_lock"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return two_commit_results(tmp_path_factory)


# ----------------------------------------------------------------------------- environment paths


def test_environment_paths_are_resolved_and_checked(tmp_path):
    afile = tmp_path / "a-file"
    afile.write_text("x")
    for name, value, words in (
            ("TVM_SUITE_TUNING_RECORDS", str(tmp_path / "typo"), "no such directory"),
            ("TVM_SUITE_TUNING_RECORDS", str(afile), "not a directory"),
            ("TVM_SUITE_CACHE", str(afile), "not a directory"),
            ("TVM_SUITE_QEMU_HEXAGON", str(tmp_path / "qemu"), "no such file"),
            ("TVM_SUITE_LLVM_CONFIG", str(afile), "not executable"),
            ("TVM_SUITE_GIT_MIRRORS", "", "set but empty")):
        one_line(run_in_process("list", "--model", "seed", env={name: value}), name, words)


def test_a_relative_records_path_reaches_asvs_processes(tmp_path):
    """`TVM_SUITE_TUNING_RECORDS=recs tvm-suite run ...` from the directory that holds recs/: asv's
    benchmark processes, which run elsewhere, read the same records (tuned measured, not skipped)."""
    from suite.core import tuning_records

    records = tmp_path / "recs" / "llvm" / "float16" / "traces"
    records.mkdir(parents=True)
    shutil.copy(tuning_records.trace_path("llvm", "float16", MEAN), records)
    done = run_in_process("run", "--quick", "--workloads", MEAN, "--dtypes", "float16", "--out", "asv",
                          env={"TVM_SUITE_TUNING_RECORDS": "recs", "HOME": str(tmp_path)}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [results] = [p for p in (tmp_path / "asv" / "results").glob("*/*.json") if p.name != "machine.json"]
    ulp = json.loads(results.read_text())["results"]["bench_accuracy.Accuracy.track_ulp_mean"]
    assert ulp[1][3] == ["'default'", "'tuned'"] and all(v is not None and v == v for v in ulp[0]), ulp


# ----------------------------------------------------------------------------- full and read-only file systems


def test_a_full_file_system_is_one_line(tmp_path):
    with small_filesystem(tmp_path / "full", "256k") as full:
        one_line(run_in_process("measure", "--workload", "seed.conv2d_nhwc_7x7s2", "--dtype", "float16",
                                env={"TVM_SUITE_CACHE": str(full)}), "cannot write", str(full))
    with small_filesystem(tmp_path / "full-out", "16k") as full:
        (full / "filler").write_bytes(b"\0" * (15 << 10))
        one_line(run_in_process("run", "--quick", "--workloads", MEAN, "--dtypes", "float16",
                                "--out", str(full / "asv")), str(full / "asv"))


def test_a_read_only_place_is_one_line_before_any_work(tmp_path, runs):
    results, _, _ = runs
    with read_only_copy(results.parent, tmp_path / "ro") as copy:
        started = time.monotonic()
        one_line(run_in_process("measure", "--workload", MEAN, "--dtype", "float16",
                                env={"TVM_SUITE_CACHE": str(copy)}), "TVM_SUITE_CACHE", "cannot be written")
        one_line(run_in_process("run", "--quick", "--workloads", MEAN, "--dtypes", "float16", "--out", str(copy)),
                 "--out", str(copy), "not a directory the suite can write to")
        one_line(run_cli("tune", "--dtype", "float16", "--workload", MEAN, "--trials", "2",
                         env={"TVM_SUITE_TUNING_RECORDS": str(copy)}), "TVM_SUITE_TUNING_RECORDS", "cannot be written")
        assert time.monotonic() - started < 60  # refused before any build or search


# ----------------------------------------------------------------------------- sizes no one meant


def test_oversized_and_nested_files_are_malformed(tmp_path, runs):
    from suite.reporting import results as res

    results, _, commits = runs

    def gate(run_dir):
        return run_in_process("gate", "--results", str(run_dir / "results"), "--commit", commits[1], "--no-remeasure")

    def copy(name):
        where = tmp_path / name
        shutil.copytree(results.parent, where, ignore=shutil.ignore_patterns("env*", "html"))
        return where

    target = copy("sparse")  # a results file of 2 GB (sparse: no disk used), refused by its size
    victim = next(p for p in (target / "results").glob("*/*.json") if p.name != "machine.json")
    with open(victim, "r+b") as handle:
        handle.truncate(2 << 30)
    one_line(gate(target), victim, "too large")
    assert res.MAX_FILE_BYTES < 2 << 30

    target = copy("nested")
    victim = next(p for p in (target / "results").glob("*/*.json") if p.name != "machine.json")
    victim.write_text("[" * 200_000 + "]" * 200_000)
    one_line(gate(target), victim, "nested too deep")

    target = copy("nested-side")  # a kept file nested deep and sealed as the run's own
    from suite.core import run_bundle

    kept = place(target, commits[1])
    timing = next(name for name in run_bundle.sealed_members(kept) if name.startswith("timings/"))
    plant_file(target, commits[1], timing, "[" * 200_000 + "]" * 200_000)
    one_line(gate(target), kept.bundle / timing, "nested too deep")

    toml = tmp_path / "deep.toml"
    toml.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line(run_in_process("gate", "--results", str(results), "--commit", commits[1], "--thresholds", str(toml)),
             toml, "nested")


# ----------------------------------------------------------------------------- a stopped helper


def test_a_stopped_helper_does_not_hang_run(tmp_path):
    """kill -STOP the helper that measures ahead: run takes its work back and completes."""
    args = [str(SUITE_BIN), "run", "--quick", "--workloads", f"{MEAN},resnet50.max_pool2d.112x112x64-k3s2",
            "--dtypes", "float16,float32", "--out", str(tmp_path / "asv")]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "TVM_SUITE_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)})
    helper = None
    deadline = time.monotonic() + 120
    while helper is None and time.monotonic() < deadline and process.poll() is None:
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if b"suite.core.ahead" in (proc / "cmdline").read_bytes() and \
                        f"TVM_SUITE_CACHE={tmp_path / 'cache'}".encode() in (proc / "environ").read_bytes():
                    helper = int(proc.name)
            except OSError:
                pass
        time.sleep(0.05)
    assert helper is not None, "no helper seen"
    os.kill(helper, signal.SIGSTOP)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, out[-2000:] + err[-2000:]
    assert f"the helper that measures ahead (pid {helper}) is stopped: ended; its work is measured here" in err
    assert out.strip().splitlines()[-1].startswith("verdict: ")


# ----------------------------------------------------------------------------- signals during the search


@pytest.mark.parametrize(("moment", "signum"), [("starting", signal.SIGTERM), ("searching", signal.SIGINT),
                                               ("measuring", signal.SIGTERM), ("measuring", signal.SIGINT)],
                         ids=["starting-SIGTERM", "searching-SIGINT", "measuring-SIGTERM", "measuring-SIGINT"])
def test_a_signal_during_the_search_ends_tune_cleanly(tmp_path, signum, moment):
    """Ctrl-C or SIGTERM at several moments of MetaSchedule's search (each moment, and each signal,
    at least once; both at the runner's, the moment with the most processes): the one documented
    line, the exit status of the signal, no crash, no temporary directory and no process left
    behind, and no record written."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    records = tmp_path / "records"
    # "starting": the search's process has just started (it imports the suite and TVM next); it says
    # so on tune's output, where the test waits for it, through a sitecustomize of the test's own
    # (Python imports it as every interpreter starts: tune's, and the search's).
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import sys\nif sys.orig_argv[1:3] == ['-m', 'suite.core.tuning']:\n"
        f"    print({SEARCH_STARTED!r}, flush=True)\n")
    path = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    args = [str(SUITE_BIN), "tune", "--dtype", "float32", "--workload", MEAN, "--trials", "2"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "TMPDIR": str(tmp), "TVM_SUITE_TUNING_RECORDS": str(records),
                                    "PYTHONPATH": path},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # "searching": MetaSchedule builds candidates; "measuring": its runner times them.
    marker, seen = {"starting": SEARCH_STARTED, "searching": "to builder", "measuring": "to runner"}[moment], []
    for line in process.stdout:
        seen.append(line)
        if marker in line:
            break
    else:  # tune ended first
        pytest.fail(f"the search never reached {marker!r}: tune ended, exit {process.wait()}: {''.join(seen)[-2000:]}")
    os.kill(process.pid, signum)
    rest = process.stdout.read()
    process.wait(timeout=120)
    expected = 130 if signum == signal.SIGINT else 143
    assert process.returncode == expected, rest[-2000:]
    last = rest.strip().splitlines()[-1]
    name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
    assert last == (f"tvm-suite: interrupted ({name}): {MEAN} was not tuned (its search ended, its temporary "
                    "directory removed); no record written"), rest[-2000:]
    assert "Segfault" not in rest and "Traceback" not in rest
    assert eventually(lambda: not list(tmp.glob("tvm-suite-tune-*"))), list(tmp.iterdir())
    assert not list(records.rglob("*.json"))
    assert not _search_processes(tmp)


def test_a_search_that_dies_ends_its_workload_not_the_sweep(tmp_path):
    """A search process killed under it (a runner's child died under load, the OOM killer): that
    workload is failed and said so, the next one is still tuned, and the end names what is missing
    (exit 1). Here every search is killed as it starts: no tuning is paid for."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    second = "resnet50.max_pool2d.112x112x64-k3s2"
    args = [str(SUITE_BIN), "tune", "--dtype", "float32", "--workloads", f"{MEAN},{second}", "--trials", "2"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "TMPDIR": str(tmp), "TVM_SUITE_TUNING_RECORDS": str(tmp_path / "r")})
    killed: set[str] = set()
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        for proc in _search_processes(tmp):
            if _mentions(proc, "cmdline", "suite.core.tuning") and proc.name not in killed:
                killed.add(proc.name)
                try:
                    os.kill(int(proc.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)
    out = process.stdout.read()
    process.wait(timeout=60)
    assert process.returncode == 1, out[-3000:]
    assert len(killed) == 2, out[-3000:]
    for wid in (MEAN, second):
        assert f"failed   the MetaSchedule search of {wid} float32 llvm ended (signal 9) without a record" in out
    assert out.strip().splitlines()[-1] == (
        f"tvm-suite: error: not tuned, their search ended without a record: {MEAN}, {second} (each one's output "
        "above says how); `--skip-existing` tunes only these again"), out[-3000:]
    assert "Traceback" not in out and not list((tmp_path / "r").rglob("*.json"))


#: What the search's process says as it starts, in test_a_signal_during_the_search_ends_tune_cleanly.
SEARCH_STARTED = "test: the search's process started"


def _search_processes(tmp: Path) -> list[Path]:
    """This tuning's search process and the workers it started: the processes whose TMPDIR is the
    directory tune made in this test's (others may be tuning beside it)."""
    return [p for p in Path("/proc").glob("[0-9]*") if _mentions(p, "environ", f"TMPDIR={tmp}/")]


def _mentions(proc: Path, name: str, text: str) -> bool:
    try:
        return text.encode() in (proc / name).read_bytes()
    except OSError:
        return False


# ----------------------------------------------------------------------------- shared --out, tune lock


def test_one_out_one_run_at_a_time(tmp_path):
    from suite.core import run_journal

    out = tmp_path / "asv"
    with run_journal.RunLock(out, "a" * 40, "tvm-suite run"):
        one_line(run_cli("run", "--quick", "--workloads", MEAN, "--dtypes", "float16", "--out", str(out)),
                 f"{out} is in use by another run: tvm-suite run of aaaaaaaaaaaa (pid {os.getpid()} on ")
        (out / "results").mkdir()
        one_line(run_cli("gate", "--results", str(out / "results"), "--commit", "v0"),
                 f"a run is in progress in {out}: tvm-suite run of aaaaaaaaaaaa (pid {os.getpid()}")


def test_report_out_inside_the_results_is_refused(tmp_path, runs):
    results, _, _ = runs
    for inside in (results, results / "report", results / "vm"):
        one_line(run_in_process("report", "--results", str(results), "--out", str(inside)),
                 "inside the results directory")
    assert not (results / "report").exists()


def test_two_tunings_of_one_record_meet_at_its_lock(tmp_path, monkeypatch):
    """Two `tune`s of one record, with different caches and two spellings of the records path,
    cannot both write: the lock lies beside the record."""
    from suite.core import tuning_records

    records = tmp_path / "records"
    (tmp_path / "other").symlink_to(records)
    monkeypatch.setenv(tuning_records.RECORDS_ENV, str(records))
    with tuning_records.tuning_lock("llvm", "float32", MEAN):
        done = run_cli("tune", "--dtype", "float32", "--workload", MEAN, "--trials", "2",
                       env={tuning_records.RECORDS_ENV: str(tmp_path / "other"), "TVM_SUITE_CACHE": str(tmp_path / "cache2")})
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"busy     {MEAN} float32 llvm is being tuned by pid {os.getpid()} on " in done.stdout
    assert not (records / "llvm" / "float32" / "traces" / f"{MEAN}.json").exists()
