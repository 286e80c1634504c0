"""`tvm-suite run`: a real asv run on the installed TVM, results kept and published."""

import json
import math
import os

import pytest

pytestmark = pytest.mark.slow


def result_files(out):
    return [p for p in (out / "results").glob("*/*.json") if p.name != "machine.json"]


def test_run_stores_asv_results_for_the_installed_tvm_and_publishes(cli, tmp_path):
    out = tmp_path / "asv"
    env = {"HOME": str(tmp_path)}  # asv writes its machine file to ~/.asv-machine.json
    args = ("run", "--quick", "--workloads", "resnet50.mean.7x7x2048", "--dtypes", "float32",
            "--orders", "default", "--out", str(out))
    result = cli(*args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "combinations: 1 ok, 0 skipped, 0 failed" in result.stdout

    files = result_files(out)
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    commit = data["commit_hash"]
    # The versions repository has a commit tagged with the installed TVM version.
    tags = os.popen(f"git -C {out / 'tvm-versions'} tag --points-at {commit}").read().split()
    assert tags and tags[0].startswith("v0.")
    results = data["results"]
    for name in ("bench_accuracy.Accuracy.track_ulp_mean", "bench_accuracy.Accuracy.track_bound_fraction",
                 "bench_latency.Throughput.track_latency_median"):
        values = results[name][0]
        assert len(values) == 1 and values[0] is not None and math.isfinite(values[0]), name
    assert 0 < results["bench_accuracy.Accuracy.track_bound_fraction"][0][0] < 1
    assert (out / "html" / "index.html").exists()
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["newest"]["hash"] == commit

    # A second run on the same TVM keeps a copy of the results it updates.
    again = cli(*args, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    archived = list((out / "results-archive").glob("*/*.json"))
    assert len(archived) == 1
    assert json.loads(archived[0].read_text())["commit_hash"] == commit
    assert len(result_files(out)) == 1
