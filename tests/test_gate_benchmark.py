"""experiments/gate_benchmark.py: compiler changes built, measured and scored the same way for every
detector; its bad input, its journal and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import eventually, run_experiment

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "gate_benchmark.py"
#: The smallest real run: one tuned combination, A/A and vectorisation off, four commits.
SMALL = ["--combos", "1", "--hexagon-combos", "0", "--commits", "4", "--rounds", "5", "--changes", "same,vectorize-off"]
#: The smallest Hexagon run: the seed conv2d tuned for Hexagon, A/A and a packet more per 8.
SMALL_HEXAGON = ["--combos", "0", "--hexagon-combos", "1", "--commits", "4", "--changes", "same,extra-packet-per-8"]


def experiment(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          timeout=900, **kwargs)


def refused_here(*args) -> subprocess.CompletedProcess:
    """The experiment's main in this process (imported once), for input it refuses before any work."""
    return run_experiment("gate_benchmark.py", *args)


def one_line(done, *words) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    for w in words:
        assert w in lines[0], lines[0]
    assert done.stdout == ""
    return lines[0]


def journal_keys(out: Path) -> list[str]:
    return [json.loads(line)["key"] for line in (out / "measured.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-benchmark") / "out"
    done = experiment("--out", out, *SMALL)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


@pytest.mark.slow
def test_a_small_run_builds_measures_and_scores_every_detector_alike(small_run):
    out, done = small_run
    found = json.loads((out / "gate_benchmark.json").read_text())
    # every pair of every series is judged: 2 histories x 1 combination x 3 pairs, for latency and ULP
    assert sum(found["pairs_by_truth"]["latency"].values()) == 6
    assert sum(found["pairs_by_truth"]["ulp_mean"].values()) == 6
    # the A/A history and the pairs of one kernel on both sides are "same code": 5 of the 6
    assert found["pairs_by_truth"]["latency"]["same code"] == 5
    detectors = [row["detector"] for row in found["tables"]["latency"]]
    assert detectors[0] == "gate" and "code identity alone" in detectors
    assert any(d.startswith("asv (best") for d in detectors) and "LNT (defaults)" in detectors
    for row in found["tables"]["latency"]:  # every detector scored on the same pairs
        assert row["positives"] + row["negatives"] == found["tables"]["latency"][0]["positives"] + \
            found["tables"]["latency"][0]["negatives"]
    # vectorisation off changed the kernel's code, and its step was measured by interleaved rounds
    (step,) = found["steps"]
    assert step["change"] == "vectorize-off" and step["low"] <= step["ratio"] <= step["high"]
    assert found["machine"]["cores_allowed"] >= 1 and found["machine"]["tvm"]
    kernels = sorted(p.relative_to(out).as_posix() for p in (out / "kernels").rglob("*.so"))
    assert [k.split("/")[1] for k in kernels] == ["same", "vectorize-off"]
    # the gate never flags the A/A history: the same code at every commit, its samples alone
    gate_lines = [json.loads(line) for line in (out / "measured.jsonl").read_text().splitlines()
                  if json.loads(line)["key"].startswith("gate|") and json.loads(line)["key"].split("|")[2] == "same"]
    assert len(gate_lines) == 3 and all(line["flags"] == [] for line in gate_lines)
    assert "| gate |" in done.stdout and "measured steps" in done.stdout
    # the report, rendered from each series as `run` leaves it, says of every pair what the gate said
    assert found["report_disagreements"] == [] and "report and gate: 6 of 6 pairs said alike" in done.stdout
    assert sorted(Path(p).parent.name for p in found["reports"].values()) == ["same", "vectorize-off"]
    assert all(Path(p).is_file() for p in found["reports"].values())


@pytest.mark.slow
def test_a_rerun_measures_nothing_again(small_run):
    out, _ = small_run
    before = (out / "measured.jsonl").read_bytes()
    done = experiment("--out", out, *SMALL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "measured.jsonl").read_bytes() == before


@pytest.mark.slow
def test_other_options_over_the_same_journal_are_refused(small_run):
    out, _ = small_run
    one_line(experiment("--out", out, *SMALL[:-1], "same,parallel-off"), "measured.jsonl",
             "other options", "changes")


@pytest.mark.slow
def test_ctrl_c_keeps_every_measurement_and_a_rerun_continues(tmp_path):
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, str(SCRIPT), "--out", str(out), *SMALL], cwd=ROOT, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    eventually(lambda: (out / "measured.jsonl").is_file() and any(k.startswith("timing|") for k in journal_keys(out)),
               timeout_s=600)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 130, err[-2000:]
    assert "interrupted: every measurement made is kept" in err and "Traceback" not in err
    kept = journal_keys(out)
    assert any(k.startswith("timing|") for k in kept)
    done = experiment("--out", out, *SMALL)
    assert done.returncode == 0, done.stderr[-2000:]
    again = journal_keys(out)
    assert again[:len(kept)] == kept and len(again) == len(set(again))  # nothing measured twice


def test_a_damaged_journal_line_is_refused_and_one_cut_short_by_a_kill_is_dropped(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    import gate_benchmark

    path = tmp_path / "measured.jsonl"
    options = {"combos": 1}
    journal = gate_benchmark.Journal(path, options)
    journal.add("timing|x", samples=[1.0])
    journal.close()
    path.write_bytes(path.read_bytes() + b'{"key": "timing|y", "sampl')  # a kill mid-line
    found = gate_benchmark.Journal(path, options)
    assert found.get("timing|x")["samples"] == [1.0] and found.get("timing|y") is None
    found.close()
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0], b"not json", *lines[1:]]))
    with pytest.raises(gate_benchmark.UserError, match="line 2 is damaged"):
        gate_benchmark.Journal(path, options)


@pytest.mark.parametrize("args, words", [
    ([], "--out"),
    (["--out", ""], "--out: an empty path"),
    (["--out", "README.md"], "is a file"),
    (["--out", "{tmp}/o", "--combos", "65"], "--combos: 65 is not between 0"),
    (["--out", "{tmp}/o", "--combos", "0", "--hexagon-combos", "0"], "nothing to measure"),
    (["--out", "{tmp}/o", "--hexagon-combos", "-1"], "--hexagon-combos"),
    (["--out", "{tmp}/o", "--commits", "2"], "--commits: 2 is not between 3"),
    (["--out", "{tmp}/o", "--rounds", "1"], "--rounds: 1 is not between 5"),
    (["--out", "{tmp}/o", "--changes", "same,no-such"], "unknown change 'no-such'"),
    (["--out", "{tmp}/o", "--changes", "vectorize-off"], "must include 'same'"),
    (["--out", "{tmp}/o", "--changes", ""], "no change named"),
    (["--out", "{tmp}/o", "--peers", "otava"], "give detector=PYTHON"),
    (["--out", "{tmp}/o", "--peers", "lnt=/usr/bin/python3"], "the detectors otava, edivisive"),
    (["--out", "{tmp}/o", "--peers", "otava=/nonexistent/python"], "is not an executable file"),
    (["--out", "{tmp}/o", "--thresholds", "/nonexistent.toml"], "thresholds file /nonexistent.toml does not exist"),
    (["--out", "{tmp}/o", "--thresholds", "README.md"], "not a readable TOML file"),
])
def test_bad_input_is_one_line_before_any_work(tmp_path, args, words):
    done = refused_here(*(a.format(tmp=tmp_path) for a in args))
    assert done.returncode == 2 and "Traceback" not in done.stderr and words in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()


def test_an_out_that_is_a_link_to_nothing_is_refused_and_left(tmp_path):
    (tmp_path / "o").symlink_to(tmp_path / "gone")
    one_line(refused_here("--out", tmp_path / "o", *SMALL), "a link to nothing")
    assert (tmp_path / "o").is_symlink() and not (tmp_path / "gone").exists()


def test_a_directory_holding_files_it_did_not_write_is_refused(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "gate_benchmark.json").write_text("the user's")
    one_line(refused_here("--out", out, *SMALL), "never replaced")
    assert (out / "gate_benchmark.json").read_text() == "the user's" and sorted(os.listdir(out)) == ["gate_benchmark.json"]


def test_scoring_counts_regressions_only_and_undecided_apart():
    sys.path.insert(0, str(SCRIPT.parent))
    import gate_benchmark as gb

    ids = ("w", "float32", "llvm", "tuned")
    pairs = [gb.Pair("c", ids, "latency", 1, "same code", None), gb.Pair("c", ids, "latency", 2, "regression", 1.2),
             gb.Pair("c", ids, "latency", 3, "improvement", 0.8), gb.Pair("c", ids, "latency", 4, "no effect", 1.0),
             gb.Pair("c", ids, "latency", 5, "regression", 1.06)]
    flags = {("c", ids, "latency", 2): "flagged", ("c", ids, "latency", 3): "flagged",  # an improvement: neither
             ("c", ids, "latency", 4): "undecided", ("c", ids, "latency", 5): "undecided"}
    s = gb.score("d", "latency", pairs, flags)
    assert (s.positives, s.caught, s.undecided_positive, s.missed) == (2, 1, 1, 0)
    assert (s.negatives, s.false_alarms, s.undecided_negative) == (2, 0, 1)
    assert s.recall == 0.5 and s.recall_undecided_caught == 1.0 and s.precision == 1.0
    low, high = gb.wilson(0, 73)
    assert low == 0.0 and 0.049 < high < 0.051  # 0 of 73: the upper bound first under 5%
    assert gb.Step(1.10, 1.05, 1.15, 30).kind == "regression"
    assert gb.Step(1.04, 0.99, 1.08, 30).kind == "too close to call"  # its interval reaches 1
    assert gb.Step(1.01, 0.97, 1.05, 30).kind == "no effect"
    assert gb.Step(0.95, 0.9, 0.99, 30).kind == "improvement"


#: A hardware loop of TVM's v68 assembly as LLVM prints it (shortened): a qf16 partial sum (v4)
#: added to in a loop of 9 packets, another (v7) read beside its add, so never rounded.
LOOP = """\
\t{
\t\tloop0(.LBB4_3,#8)
\t\tr3 = extractu(r1,#11,#0)
\t}
\t.p2align\t4
.LBB4_3:
\t{
\t\tv10.qf16 = vmpy(v10.hf,v11.hf)
\t\tr6 = memw(r29+#40)
\t}
\t{
\t\tv4.qf16 = vadd(v4.qf16,v2.qf16)
\t\tv9 = vmem(r10+#1)
\t}
\t{
\t\tv7.qf16 = vadd(v10.qf16,v7.qf16)
\t\tv1:0 = vcombine(v7,v7)
\t}
""" + "\t{\n\t\tnop\n\t}\n" * 5 + """\
\t{
\t\tnop
\t\tv1.hf = v10.qf16
\t} :endloop0
\t{
\t\tv2.hf = v4.qf16
\t}
"""


def _packets(text: str) -> int:
    return sum(line.strip() == "{" for line in text.splitlines())


def test_hexagon_assembly_edits_change_the_innermost_loop_alone():
    sys.path.insert(0, str(SCRIPT.parent))
    import compiler_changes as cc

    per_8 = cc.CHANGES["extra-packet-per-8"].assembly(LOOP)
    # 9 packets in the loop: one nop packet after the 8th, none after the loop's last, none outside
    assert _packets(per_8) == _packets(LOOP) + 1
    assert per_8.index("\t{\n\t\tnop\n\t}\n\t{\n\t\tnop\n\t\tv1.hf") > 0
    with pytest.raises(cc.NotApplicable, match="no hardware loop of more than 32 packets"):
        cc.CHANGES["extra-packet-per-32"].assembly(LOOP)
    rounded = cc.CHANGES["accumulator-rounded"].assembly(LOOP)
    # v4 (nothing else in its packet reads it) is rounded to half in a packet before its add, which
    # then adds the half; v7, read by the vcombine beside its add, is left as it was
    assert "\t{\n\t\tv4.hf = v4.qf16\n\t}\n\t{\n\t\tv4.qf16 = vadd(v2.qf16,v4.hf)" in rounded
    assert "v7.qf16 = vadd(v10.qf16,v7.qf16)" in rounded and "v7.hf = v7.qf16" not in rounded
    assert _packets(rounded) == _packets(LOOP) + 1
    assert rounded.endswith("\tv2.hf = v4.qf16\n\t}\n")  # after the loop: as it was
    with pytest.raises(cc.NotApplicable, match="no qf16 partial sum"):
        cc.CHANGES["accumulator-rounded"].assembly(LOOP.replace("vadd(v4.qf16,v2.qf16)", "vadd(v3.qf16,v2.qf16)")
                                                   .replace("vadd(v10.qf16,v7.qf16)", "vadd(v10.qf16,v6.qf16)"))


@pytest.mark.slow
@pytest.mark.longest  # the seed's default order, scalar, emulated: its divergence's baseline
def test_a_hexagon_series_is_scored_on_exact_packets(tmp_path):
    from suite import targets

    if why := targets.get("hexagon-v68-qf").unavailable():
        pytest.skip(why)
    out = tmp_path / "out"
    done = experiment("--out", out, *SMALL_HEXAGON)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((out / "gate_benchmark.json").read_text())
    assert "latency" not in found["pairs_by_truth"] and set(found["tables"]) == {"packets", "ulp_mean"}
    (step,) = found["hexagon_steps"]
    assert step["change"] == "extra-packet-per-8" and step["ids"][0] == "seed.conv2d_nhwc_7x7s2"
    # the divergence values the marks read are measured against the default order, for A and B
    assert all(len(step[m]) == 2 for m in ("error_ratio", "bias_shift")) and step["error_ratio"][0] > 0
    gate = next(row for row in found["tables"]["packets"] if row["detector"] == "gate")
    # exact counts: the gate flags packets that grew, and nothing else
    assert gate["false_alarms"] == 0 and gate["caught"] == gate["positives"] == (step["packets"] > 1)
    assert found["report_disagreements"] == []
