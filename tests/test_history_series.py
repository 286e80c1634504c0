"""experiments/history_series.py: a kept history as one table (build facts, kernels whose code
changed, the gate's verdict per pair), run as a user runs it, on a history filed by
tests/histories.py: A built from source, B's TVM did not build, C a wheel whose seed kernel's code
changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_experiment
from histories import A, B, C, SEED, Builder

ROOT = Path(__file__).parents[1]
OTHER = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "tuned")


def series_script(*args):
    """The script as a user runs it: a process of its own (the faults below run in this process)."""
    return subprocess.run([sys.executable, "experiments/history_series.py", *args], capture_output=True,
                          text=True, cwd=ROOT)


def kept_history(tmp_path: Path) -> Path:
    history = Builder(commits=(A, B, C))
    for commit, seed_code in ((A, "a" * 64), (C, "c" * 64)):
        history.accurate(SEED, commit).timing(SEED, commit).code(SEED, commit, seed_code)
        history.accurate(OTHER, commit).code(OTHER, commit, "f" * 64)
    history.failed(SEED, B, "the build of TVM failed", metrics=("ulp_mean", "latency")).unkept(B)
    run_dir = tmp_path / "kept"
    history.write(run_dir)
    logs = run_dir / "install-logs"
    logs.mkdir()
    (logs / f"{A}.build.json").write_text(json.dumps(
        {"kind": "source", "build_s": 237.9, "ccache": {"direct_hits": 447, "preprocessed_hits": 161, "misses": 5}}))
    (logs / f"{B}.log").write_text("ninja: build stopped: subcommand failed.\n")
    (logs / f"{C}.build.json").write_text(json.dumps({"kind": "wheel", "release": "0.26.0", "ffi": "0.1.13.post2"}))
    return run_dir / "results"


def test_each_commit_with_its_build_the_kernels_that_changed_and_the_gate_against_the_last_with_data(tmp_path):
    results = kept_history(tmp_path)
    done = series_script("--results", str(results), "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["hash"]: r for r in json.loads(done.stdout)}
    assert [rows[c]["installed"] for c in (A, B, C)] == ["source", "did not build", "wheel"]
    assert rows[A]["build"] == "238 s (ccache 608 hits, 5 compiled)" and rows[C]["build"] == "apache-tvm 0.26.0, apache-tvm-ffi 0.1.13.post2"
    assert rows[A]["verdict"] is None and rows[B]["verdict"] is None  # first with data; no data
    assert rows[C]["baseline"] == A[:10] and rows[C]["verdict"] == "READY"
    assert rows[C]["kernels_changed"] == ["seed.conv2d_nhwc_7x7s2 float16 llvm default"]
    assert rows[C]["kernels_same"] == 1
    text = series_script("--results", str(results))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.replace("|  |", "| |").splitlines()
    assert (f"| {C[:10]} | {rows[C]['date'][:10]} | | wheel | apache-tvm 0.26.0, apache-tvm-ffi 0.1.13.post2 | 1 of 2: seed.conv2d_nhwc_7x7s2 float16 llvm "
            f"default | READY vs {A[:10]} |") in lines
    assert f"| {B[:10]} | {rows[B]['date'][:10]} | | did not build | log: install-logs/ | - | - |" in lines


def test_a_damaged_or_linked_build_note_a_missing_history_or_clone_is_one_line(tmp_path):
    results = kept_history(tmp_path)
    (results.parent / "install-logs" / f"{A}.build.json").write_text("[1, 2]")
    (results.parent / "install-logs" / f"{C}.build.json").unlink()
    (results.parent / "install-logs" / f"{C}.build.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    for args, words in (([str(results)], f"{A}.build.json: damaged"),
                        ([str(tmp_path / "none")], "does not exist"),
                        ([str(results), "--tvm-repo", str(tmp_path)], "not a git repository")):
        done = run_experiment("history_series.py", "--results", *args)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert done.stdout == ""
    (results.parent / "install-logs" / f"{A}.build.json").unlink()
    done = run_experiment("history_series.py", "--results", results)
    assert done.returncode == 2 and f"{C}.build.json: a link, not the file install_tvm writes" in done.stderr, done.stderr
