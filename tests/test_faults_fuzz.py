"""Faults of `tvm-suite fuzz`: each row a kind of fault and the tests that show it is handled."""

import json

import pytest

from conftest import check_fault_table
from suite.core import runstore

FAULTS = {
    "unknown workload, target or dtype: one line, exit 2": [
        "test_unknown_workload", "test_unknown_target", "test_unknown_dtype", "test_hexagon_is_not_fuzzed_yet"],
    "--traces 0 or absurd, --minutes <= 0 or absurd: one line, exit 2": [
        "test_traces_zero_or_absurd", "test_minutes_zero_negative_or_absurd"],
    "an out dir another fuzz is using: refused naming the holder": ["test_out_dir_in_use"],
    "an out dir that is a file: one line, exit 2": ["test_out_dir_is_a_file"],
    "an out dir that is a link to nothing: one line, exit 2": ["test_out_dir_is_a_link_to_nothing"],
    "an out dir holding the user's files: refused, nothing replaced": ["test_out_dir_of_the_users_files_is_refused"],
    "a trace that hangs: a TIMEOUT finding, the campaign goes on": ["test_a_hang_is_a_timeout_finding"],
    "an interrupted campaign: a rerun continues from the journal": ["test_rerun_continues_from_the_journal"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


def _one_line_exit_2(done):
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_unknown_workload(cli, tmp_path):
    assert "nosuch.conv" in _one_line_exit_2(cli("fuzz", "--workloads", "nosuch.conv", "--out", tmp_path / "o"))


def test_unknown_target(cli, tmp_path):
    assert "vulkan9" in _one_line_exit_2(cli("fuzz", "--targets", "vulkan9", "--out", tmp_path / "o"))


def test_unknown_dtype(cli, tmp_path):
    assert "bfloat7" in _one_line_exit_2(cli("fuzz", "--dtypes", "bfloat7", "--out", tmp_path / "o"))


def test_hexagon_is_not_fuzzed_yet(cli, tmp_path):
    assert "Hexagon" in _one_line_exit_2(cli("fuzz", "--targets", "hexagon-v68-qf", "--out", tmp_path / "o"))


def test_traces_zero_or_absurd(cli, tmp_path):
    for value in ("0", "100001", "-3", "many"):
        _one_line_exit_2(cli("fuzz", "--traces", value, "--out", tmp_path / "o"))


def test_minutes_zero_negative_or_absurd(cli, tmp_path):
    for value in ("0", "-1", "nan", "1e9"):
        _one_line_exit_2(cli("fuzz", "--minutes", value, "--out", tmp_path / "o"))


def test_out_dir_in_use(cli, tmp_path):
    with runstore.RunLock(tmp_path / "o", "0.27.0", "fuzz"):
        stderr = _one_line_exit_2(cli("fuzz", "--out", tmp_path / "o"))
    assert "in use" in stderr and "fuzz of 0.27.0" in stderr


def test_out_dir_is_a_file(cli, tmp_path):
    (tmp_path / "o").write_text("not a directory")
    assert "is a file" in _one_line_exit_2(cli("fuzz", "--out", tmp_path / "o"))


def test_out_dir_is_a_link_to_nothing(cli, tmp_path):
    (tmp_path / "o").symlink_to(tmp_path / "gone")
    assert "a link to nothing" in _one_line_exit_2(cli("fuzz", "--out", tmp_path / "o"))
    assert not (tmp_path / "gone").exists()


def test_out_dir_of_the_users_files_is_refused(cli, tmp_path):
    out = tmp_path / "o"
    (out / "work").mkdir(parents=True)
    (out / "work" / "notes.txt").write_text("mine")
    (out / "summary.json").write_text("mine too")
    stderr = _one_line_exit_2(cli("fuzz", "--out", out))
    assert "holds files a fuzz did not make (summary.json, work)" in stderr
    assert (out / "work" / "notes.txt").read_text() == "mine" and (out / "summary.json").read_text() == "mine too"


@pytest.mark.slow
def test_a_hang_is_a_timeout_finding(cli, tmp_path):
    """Slow (the design space, then a worker started again after each timeout): a trace timeout too
    short for any build makes every schedule a TIMEOUT finding, with its report, and exit 14."""
    done = cli("fuzz", "--traces", "1", "--trace-timeout", "0.01", "--out", tmp_path / "o", "--json")
    summary = json.loads(done.stdout)
    assert done.returncode == 14 and summary["exit_status"] == 14
    assert summary["findings"] and all(f["outcome"] == "TIMEOUT" for f in summary["findings"])
    assert list((tmp_path / "o" / "findings").glob("*/report.md"))


@pytest.mark.slow
def test_rerun_continues_from_the_journal(cli, tmp_path):
    """Slow: a campaign stopped by its --minutes (as by Ctrl-C: the journal has what was judged)
    continues on a rerun with the same seed, judging only what is left."""
    first = cli("fuzz", "--traces", "1", "--minutes", "0.001", "--out", tmp_path / "o", "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["stopped"] == "time"
    journal = tmp_path / "o" / "journal.jsonl"
    judged = len(journal.read_text().splitlines()) if journal.exists() else 0
    second = cli("fuzz", "--traces", "1", "--out", tmp_path / "o", "--json")
    summary = json.loads(second.stdout)
    assert second.returncode == 0 and summary["judged_this_run"] == 7 - judged
    assert len((tmp_path / "o" / "journal.jsonl").read_text().splitlines()) == 7
