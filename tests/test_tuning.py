"""MetaSchedule tuning into the user's records (the repository's only with --into-checkout), and
replay of the records as the `tuned` order: the user's before the committed ones."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import made_once
from suite.core import measurement, schedules, timing, tuning_records, workloads
from suite.core.combo import Combo
from suite.core.record import Status
from suite.errors import OrderNotApplicable

MATMUL = "resnet50.matmul_add.2048-1000"
MEAN = "resnet50.mean.7x7x2048"


def committed_digests() -> dict:
    """Each committed record file (and every other file there) by its sha256."""
    root = tuning_records.RECORDS_DIR
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def tuned_into_home(tmp_path_factory) -> dict:
    """README's tour line, once per test session: `tvm-suite tune` of the mean (llvm, float32, 4
    trials), a process of its own (pytest's log capture and MetaSchedule's logging setup do not
    mix), without TVM_SUITE_TUNING_RECORDS and with a HOME of its own, so that the record goes to
    that user's records. Its returncode, stdout and stderr, its HOME, and the committed records'
    digests before it (test_faults_output checks that it leaves them as they were)."""
    def make(home: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in (tuning_records.RECORDS_ENV, "XDG_DATA_HOME")}
        env["HOME"] = str(home)
        before = committed_digests()
        done = subprocess.run([sys.executable, "-m", "suite.cli", "tune", "--dtype", "float32", "--workload", MEAN,
                               "--trials", "4"], capture_output=True, text=True, env=env, cwd=home)
        return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "home": str(home),
                "committed_before": before}

    return made_once(tmp_path_factory, "tune-into-home", make)


def users_records(home) -> Path:
    """The llvm float32 records directory of the user whose HOME is ``home``."""
    return Path(home) / ".local" / "share" / "tvm-suite" / "tuning_records" / "llvm" / "float32"


@pytest.fixture
def records(tmp_path, monkeypatch):
    """A scratch records directory holding a copy of the committed fp32 matmul record (and no
    records of the user's)."""
    committed = tuning_records.trace_path("llvm", "float32", MATMUL)
    monkeypatch.delenv(tuning_records.RECORDS_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(tuning_records, "RECORDS_DIR", tmp_path / "records")
    copy = tuning_records.trace_path("llvm", "float32", MATMUL)
    copy.parent.mkdir(parents=True)
    shutil.copyfile(committed, copy)
    return copy


def test_committed_trace_replays_and_is_faster_with_identical_sums():
    tuned = measurement.measure(Combo.resolve(MATMUL, "float32", "llvm", "tuned"))
    assert tuned.ok, tuned
    fast = timing.take(Combo.resolve(MATMUL, "float32", "llvm", "tuned")).median
    assert fast < timing.take(Combo.resolve(MATMUL, "float32", "llvm", "default")).median / 2
    assert tuned.metrics["bound_fraction"] < 1
    divergence = measurement.divergence(Combo.resolve(MATMUL, "float32", "llvm", "tuned"))
    assert set(divergence) == {"differ_fraction", "max_ulp_distance", "error_ratio", "error_ratio_z", "bias_shift",
                               "bias_shift_z", "exceeds_bound", "against"}
    assert divergence["exceeds_bound"] == 0.0
    # The tuned matmul sums each element in the same order: identical output, identical error.
    assert divergence["differ_fraction"] == 0.0 and divergence["error_ratio"] == 1.0


def test_missing_record_is_a_skip_with_the_command_to_make_it(records):
    func = workloads.prim_func(workloads.get(MATMUL), "float16")
    with pytest.raises(OrderNotApplicable, match="tvm-suite tune --target llvm --dtype float16"):
        schedules.apply(func, "tuned", MATMUL, "float16", "llvm")


def test_a_record_of_the_users_replays_in_place_of_the_committed_one(records, tmp_path):
    """The user's records (where `tune` writes) come first, per record; the committed one where
    the user has none; TVM_SUITE_TUNING_RECORDS in place of both."""
    assert tuning_records.record_roots() == (tmp_path / "data" / "tvm-suite" / "tuning_records", tmp_path / "records")
    assert tuning_records.trace_path("llvm", "float32", MATMUL) == records
    committed_key = Combo.resolve(MATMUL, "float32", "llvm", "tuned").key["schedule"]
    mine = tuning_records.record_path("llvm", "float32", MATMUL, tuning_records.user_records_root())
    mine.parent.mkdir(parents=True)
    slowest = json.loads((Path(__file__).parent / "data" / "llvm-float32-matmul_add.2048-1000.slowest-candidate.json")
                         .read_text())
    record = json.loads(records.read_text())
    record["trace"], record["trace_sha256"] = slowest["trace"], tuning_records.trace_digest(slowest["trace"])
    mine.write_text(json.dumps(record))
    assert tuning_records.trace_path("llvm", "float32", MATMUL) == mine
    assert tuning_records.records_target("llvm", "float32", MATMUL) == "llvm"
    assert Combo.resolve(MATMUL, "float32", "llvm", "tuned").key["schedule"] not in (None, committed_key)
    assert tuning_records.existing_measure("llvm", "float32", MATMUL) == "latency"
    assert tuning_records.existing_measure("llvm", "float16", MATMUL, tuning_records.RECORDS_DIR) is None


def test_into_checkout_is_refused_where_it_would_not_be_read(tmp_path):
    from conftest import run_cli

    done = run_cli("tune", "--dtype", "float32", "--workload", "resnet50.mean.7x7x2048", "--trials", "2",
                   "--into-checkout", env={tuning_records.RECORDS_ENV: str(tmp_path)})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"tvm-suite: error: --into-checkout writes {tuning_records.RECORDS_DIR}, but {tuning_records.RECORDS_ENV}={tmp_path} is read "
        "in its place: unset it, or tune without --into-checkout"]
    assert not list(tmp_path.iterdir())


def break_trace(path):
    """A committed trace that no longer replays: its block is renamed away (as a record tuned with
    another TVM might name it; its trace_sha256 is its own, not damage)."""
    record = json.loads(path.read_text())
    text = json.dumps(record["trace"]).replace('["matmul", "main"]', '["no_such_block", "main"]')
    assert text != json.dumps(record["trace"])
    record["trace"] = json.loads(text)
    record["trace_sha256"] = tuning_records.trace_digest(record["trace"])
    path.write_text(json.dumps(record))


def test_a_trace_that_no_longer_applies_is_a_failure_not_a_skip(records):
    """A record exists but this TVM cannot replay it: news about this TVM, recorded as failed."""
    break_trace(records)
    func = workloads.prim_func(workloads.get(MATMUL), "float32")
    with pytest.raises(tuning_records.TraceDoesNotApply, match="tuned trace does not apply"):
        schedules.apply(func, "tuned", MATMUL, "float32", "llvm")
    record = measurement.measure(Combo.resolve(MATMUL, "float32", "llvm", "tuned"))
    assert record.status is Status.FAILED
    assert record.reason.startswith("build failed: tuned trace does not apply")


@pytest.mark.slow
def test_tune_command_stores_the_trace_and_every_candidates_measure(tmp_path_factory):
    done = tuned_into_home(tmp_path_factory)  # shared with test_faults_output: one search
    assert done["returncode"] == 0, done["stdout"] + done["stderr"]
    written = users_records(done["home"])
    trace = json.loads((written / "traces" / f"{MEAN}.json").read_text())
    assert trace["trials"] == 4 and trace["trace"] and trace["best_measured_s"] > 0
    assert trace["candidates_measured"] == len(trace["candidates_s"]) >= 1
    assert trace["candidates_s"] == sorted(trace["candidates_s"]) and trace["candidates_s"][0] == trace["best_measured_s"]
    assert not (written / "database").exists()  # traces only


def test_a_record_another_process_is_tuning_is_left_to_it(cli, tmp_path, monkeypatch):
    """Two processes tuning one record would each write their best, and the last write wins, the
    worse schedule included: the second leaves it, says who holds it, and exits non-zero."""
    monkeypatch.setenv(tuning_records.RECORDS_ENV, str(tmp_path / "records"))
    with tuning_records.tuning_lock("llvm", "float32", "resnet50.mean.7x7x2048"):
        done = cli("tune", "--dtype", "float32", "--workload", "resnet50.mean.7x7x2048", "--trials", "4")
        with pytest.raises(tuning_records.TuningInProgress, match=f"being tuned by pid {os.getpid()} on "):
            with tuning_records.tuning_lock("llvm", "float32", "resnet50.mean.7x7x2048"):
                pass
    assert done.returncode == 2, done.stdout + done.stderr
    written = tmp_path / "records" / "llvm" / "float32" / "traces"
    assert f"records go to {written}/ ({tuning_records.RECORDS_ENV}: " in done.stdout  # the directory the variable names
    assert f"busy     resnet50.mean.7x7x2048 float32 llvm is being tuned by pid {os.getpid()} on " in done.stdout
    assert "not tuned, another process was tuning them: resnet50.mean.7x7x2048;" in done.stderr
    assert "Traceback" not in done.stderr
    assert not tuning_records.trace_path("llvm", "float32", "resnet50.mean.7x7x2048").exists()
    with tuning_records.tuning_lock("llvm", "float32", "resnet50.mean.7x7x2048"):  # released with its holder
        pass
