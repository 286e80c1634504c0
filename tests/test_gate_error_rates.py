"""experiments/gate_error_rates.py: planted steps in kept histories, caught or missed by the gate
and the peers, scored as one series over several histories; run as a user runs it, on histories
filed by tests/histories.py (llvm on one machine, Hexagon on the emulator under another)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from histories import A, B, C, QF_TUNED, SEED, TUNED, Builder

ROOT = Path(__file__).parents[1]
D = "d" * 40
#: A tuned kernel's error against its default order's: the same, no shift (no divergence mark).
NO_MARK = {"error_ratio": 1.0, "error_ratio_z": 0.0, "bias_shift": 0.0, "bias_shift_z": 0.0}


def rates(*args):
    return subprocess.run([sys.executable, "experiments/gate_error_rates.py", *args], capture_output=True,
                          text=True, cwd=ROOT)


def llvm_history(tmp_path: Path) -> Path:
    """Four commits of two fp16 conv2d kernels on llvm, their code and accuracy the same throughout."""
    history = Builder(commits=(A, B, C, D), machine="box")
    for commit in (A, B, C, D):
        for ids in (SEED, TUNED):
            history.accurate(ids, commit).timing(ids, commit).code(ids, commit, "e" * 64)
        history.values_at(TUNED, commit, **NO_MARK)  # tuned against default
    return history.write(tmp_path / "llvm")


def hexagon_history(tmp_path: Path) -> Path:
    """The same commits on the emulator: packets, exact, the same code throughout."""
    history = Builder(commits=(A, B, C, D), machine="emu")
    for commit in (A, B, C, D):
        history.accurate(QF_TUNED, commit).code(QF_TUNED, commit, "9" * 64)
        history.values_at(QF_TUNED, commit, packets=2_903_870.0, **NO_MARK)
    return history.write(tmp_path / "hexagon")


def test_plants_spread_over_the_histories_packets_only_where_hexagon_ran_and_one_table(tmp_path):
    llvm, hexagon = llvm_history(tmp_path), hexagon_history(tmp_path)
    done = rates("--results", str(llvm), "--results", str(hexagon), "--plants", "8", "--seed", "1",
                 "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "out" / "gate_error_rates.json").read_text())
    assert found["histories"] == [str(llvm), str(hexagon)]
    plants = found["plants"]
    assert len(plants) == 8
    assert {p["history"] for p in plants} == {str(llvm), str(hexagon)}
    packets = [p for p in plants if p["kind"] == "packets+1%"]
    assert packets and all(p["history"] == str(hexagon) and p["ids"] == list(QF_TUNED) for p in packets)
    # deterministic steps on kernels whose code changed with them: the gate names each one's commit
    for p in plants:
        if p["kind"] in ("packets+1%", "ulp_mean+1", "mark"):
            assert "gate" in p["caught_by"], p
    gate = next(row for row in found["table"] if row["detector"] == "gate")
    assert gate["planted"] == 8 and gate["false_alarms"] == 0
    assert gate["caught"] == sum("gate" in p["caught_by"] for p in plants)
    # both histories' pairs judged, each against its own commit before: 3 + 3, all READY unplanted
    assert [(p["history"], p["candidate"]) for p in found["pairs"]] == [
        (str(h), c[:10]) for h in (llvm, hexagon) for c in (B, C, D)]
    assert {p["verdict"] for p in found["pairs"]} == {"READY"}
    assert "[hexagon]" in done.stdout and "detector" in done.stdout


def test_on_the_emulator_the_kinds_without_latency_are_planted_and_the_gate_fails_each(tmp_path):
    """A Hexagon history has no latency: packets, ULP and a new mark are planted, each caught with
    its commit (a new mark fails whatever its cause, qfloat's rounding included)."""
    hexagon = hexagon_history(tmp_path)
    done = rates("--results", str(hexagon), "--plants", "3", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    plants = json.loads((tmp_path / "gate_error_rates.json").read_text())["plants"]
    assert [p["kind"] for p in plants] == ["packets+1%", "ulp_mean+1", "mark"]  # no latency on the emulator
    assert all("gate" in p["caught_by"] for p in plants), plants


def test_a_mark_is_planted_only_where_the_commit_before_had_none(tmp_path):
    """A step onto a mark the baseline has already is not new (known, unless 1.1x worse): every
    tuned fp16 conv2d on hexagon-v68-qf is marked (qfloat's rounding), so no mark is planted there."""
    history = Builder(commits=(A, B, C, D), machine="emu")
    for commit in (A, B, C, D):
        history.accurate(QF_TUNED, commit).code(QF_TUNED, commit, "9" * 64)
        history.values_at(QF_TUNED, commit, packets=2_903_870.0, error_ratio=1.54, error_ratio_z=282.0,
                          bias_shift=-0.19, bias_shift_z=63.0)
    done = rates("--results", str(history.write(tmp_path / "marked")), "--plants", "3", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    plants = json.loads((tmp_path / "gate_error_rates.json").read_text())["plants"]
    assert [p["kind"] for p in plants] == ["packets+1%", "ulp_mean+1"]  # one combination: each metric once


def test_a_single_history_without_packets_plants_none_of_them(tmp_path):
    llvm = llvm_history(tmp_path)
    done = rates("--results", str(llvm), "--plants", "5", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    plants = json.loads((tmp_path / "gate_error_rates.json").read_text())["plants"]
    assert len(plants) == 5 and "packets+1%" not in {p["kind"] for p in plants}
    assert {p["history"] for p in plants} == {str(llvm)}


@pytest.mark.parametrize("twice", ["same", "through a link", "one with one commit"])
def test_the_same_history_twice_or_one_with_nothing_to_compare_is_one_line(tmp_path, twice):
    llvm = llvm_history(tmp_path)
    if twice in ("same", "through a link"):
        other = llvm
        if twice == "through a link":
            (tmp_path / "link").symlink_to(llvm.parent)
            other = tmp_path / "link" / "results"
        done, words = rates("--results", str(llvm), "--results", str(other)), "the same directory given twice"
    else:
        lone = Builder(commits=(A,), machine="emu").accurate(QF_TUNED, A).write(tmp_path / "lone")
        done, words = rates("--results", str(llvm), "--results", str(lone)), "1 commit(s) with results"
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""


def test_a_peer_that_fails_a_damaged_results_file_and_ctrl_c_are_one_line_and_write_nothing(tmp_path):
    llvm = llvm_history(tmp_path)
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named otava' >&2\nexit 1\n")
    failing.chmod(0o755)
    out = tmp_path / "out"
    done = rates("--results", str(llvm), "--plants", "2", "--peers", f"otava={failing}", "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"--peers otava: {failing} failed: ModuleNotFoundError: No module named otava" in done.stderr
    assert not (out / "gate_error_rates.json").exists()
    damaged = next((llvm / "box").glob("aaaaaaaa-*.json"))
    damaged.write_text("{half")
    done = rates("--results", str(llvm), "--out", str(out))
    assert done.returncode == 2 and damaged.name in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (out / "gate_error_rates.json").exists()


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_ctrl_c_says_so_in_one_line_and_writes_nothing(tmp_path, inherited):
    """Also where the parent started the script with SIGINT ignored (a background job, as
    pytest-xdist's workers do): Python then installs no Ctrl-C of its own, and the script ran on to
    its end, exit 0."""
    import signal

    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if inherited == "ignored" else None
    run = subprocess.Popen([sys.executable, "experiments/gate_error_rates.py", "--results", "reports/tvm-main/results",
                            "--results", "reports/tvm-main-hexagon/results", "--out", str(tmp_path)], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ignore)
    started = run.stderr.readline()  # said once its options are checked: the judging takes seconds more
    assert started == "gate_error_rates.py: reading 2 kept histories\n", started
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 130 and "interrupted: nothing written" in stderr and "Traceback" not in stderr, stderr
    assert list(tmp_path.iterdir()) == []


def test_each_gate_gets_the_kth_real_re_timing_of_a_pair_the_same_for_every_plant():
    """A gate asks a second time only where the first found a kernel slower (retimed_times): the
    k-th question of every plant's gate about one pair of kernels is the same question, timed once;
    a second question is timed anew, never answered with the first's samples."""
    sys.path.insert(0, str(ROOT / "experiments"))
    try:
        import gate_error_rates
    finally:
        sys.path.remove(str(ROOT / "experiments"))

    timed = []

    def remeasure(series, timings):
        timed.append(series)
        return [[1.0], [float(len(timed))]], None

    class Kept:
        def __init__(self, kernel):
            self.kernel = kernel

    maker, pair = gate_error_rates.memoized(remeasure), [Kept("a.so"), Kept("b.so")]
    first = maker()
    assert [first("s", pair)[0][1] for _ in range(2)] == [[1.0], [2.0]]  # two questions, two timings
    second = maker()
    assert [second("s", pair)[0][1] for _ in range(3)] == [[1.0], [2.0], [3.0]] and len(timed) == 3
    assert second("other", pair)[0][1] == [4.0]
    assert gate_error_rates.memoized(None)() is None


def test_a_planted_step_is_timed_again_on_the_real_kernels_code(tmp_path):
    """A plant gives its combination a code identity of its own (a step comes with a code change);
    its re-timing asks for the kernels by the code their commits kept, so that where they are gone
    from the cache a kernel of that real code stands in, and scales the candidate's samples by the
    step."""
    sys.path.insert(0, str(ROOT / "experiments"))
    try:
        import gate_error_rates
    finally:
        sys.path.remove(str(ROOT / "experiments"))
    from suite.reporting import results

    history = results.load(llvm_history(tmp_path))
    commits = gate_error_rates.commits_with_data(history)
    series = next(s for s in history.series() if s.ids == SEED)
    plant = gate_error_rates.Plant("latency+10%", "latency", series, 2, 0)
    stepped = gate_error_rates.planted(history, commits, plant)
    asked = []

    def remeasure(s, timings):
        asked.append([t.code for t in timings])
        return [[1.0, 2.0], [1.0, 2.0]], None

    again = gate_error_rates.planted_remeasure(remeasure, plant, history, commits)
    timings = [stepped.kept(c.hash, series.machine).timings[SEED] for c in commits[1:3]]
    planted_codes = [stepped.kept(c.hash, series.machine).code[SEED] for c in commits[1:3]]
    assert planted_codes[1] != "e" * 64  # the plant changed the candidate's code identity
    samples, _ = again(series, [dataclasses.replace(t, code=c) for t, c in zip(timings, planted_codes)])
    assert asked == [["e" * 64, "e" * 64]] and samples == [[1.0, 2.0], [1.1, 2.2]]
