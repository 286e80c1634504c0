"""experiments/fuzz_recall.py: fuzz campaigns on a clean compiler and under lowering bugs planted in
TVM's passes; its bad input refused before any work, and one real run on one bug."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_experiment

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "fuzz_recall.py"


@pytest.mark.parametrize("args, words", [
    (["--bugs", "no-such-bug"], "unknown lowering bug 'no-such-bug'"),
    (["--workloads", "resnet50.no-such"], "unknown workload 'resnet50.no-such'"),  # its model's catalog read
    (["--dtypes", "float32,int4"], "'int4': the dtypes are float32 and float16"),
    (["--traces", "0"], "--traces"),
    (["--minutes", "-1"], "--minutes"),
])
def test_bad_input_is_refused_before_any_work(tmp_path, args, words):
    done = run_experiment("fuzz_recall.py", "--out", tmp_path / "o", *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and words in done.stderr, done.stderr
    assert done.stdout == "" and not (tmp_path / "o").exists()


def test_a_bad_option_is_refused_without_tvm(tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT), "--out", str(tmp_path / "o"), "--bugs",
                           "no-such-bug"], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 2 and "unknown lowering bug" in done.stderr
    assert not [line for line in done.stderr.splitlines() if line.rstrip().endswith("| tvm")]  # TVM never imported


def test_an_out_holding_another_writers_result_is_refused_and_kept(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "fuzz_recall.json").write_text('{"mine": 1}')
    done = run_experiment("fuzz_recall.py", "--out", out)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "fuzz_recall.json" in done.stderr
    assert (out / "fuzz_recall.json").read_text() == '{"mine": 1}' and sorted(p.name for p in out.iterdir()) == [
        "fuzz_recall.json"]


@pytest.mark.slow
def test_a_lowering_bug_is_found_in_the_traces_it_affects_and_not_on_the_clean_compiler(tmp_path):
    out = tmp_path / "recall"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--bugs", "vector-lane-loads-neighbour",
                           "--workloads", "resnet50.matmul_add.2048-1000", "--dtypes", "float32", "--traces", "2",
                           "--json"], capture_output=True, text=True, cwd=ROOT, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)  # JSON alone on stdout
    assert found == {k: v for k, v in json.loads((out / "fuzz_recall.json").read_text()).items() if k != "generated_by"}
    clean, (bug,) = found["clean"], found["bugs"]
    # the named orders that apply to a matmul (default, tuned, seed-swap, reduction-outer) and 2 traces
    assert clean["judged_schedules"] == bug["compared"] >= 4 and clean["flagged"] == 0
    # every sampled trace vectorizes the 1000 outputs: the last lane reads its neighbour's column
    assert bug["affected"] >= 2 and bug["affected_ids"]
    assert bug["flagged_total"] + sum(bug["missed"].values()) == bug["affected"]
    assert bug["flagged_total"] >= 1 and set(bug["flagged"]) <= {"CHANGED", "UNDEFINED", "SHIFTED", "CRASH", "TIMEOUT"}
    assert bug["findings"] == bug["flagged_total"] + bug["flagged_unaffected"]
    assert 0 <= bug["reproduced"] <= bug["reproduced_wrong"] <= bug["minimised"] <= bug["findings"]
    assert sum(bug["replay_verdicts"].values()) == bug["minimised"]
    assert bug["guilty_pass"] == "tirx.VectorizeLoop"
