"""`tvm-suite run`: a real asv run on the installed TVM, results kept and published."""

import json
import math
import os
from pathlib import Path

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


@pytest.mark.parametrize("kept", ["tvm-main", "tvm-main-hexagon"])
def test_the_kept_historys_asv_configuration_is_the_roots_but_for_its_paths(kept):
    """`asv publish --config reports/<kept>/asv.conf.json` reads the kept results as asv wrote them:
    the same matrix (asv names the results' environment after it), plugins and benchmarks as at the
    root; only the paths differ, each resolved from the file's own directory to the same places."""
    from suite.asv_plumbing.config import CHECKOUT, read_conf

    root = read_conf(CHECKOUT / "asv.conf.json")
    kept_path = CHECKOUT / "reports" / kept / "asv.conf.json"
    conf = read_conf(kept_path)
    paths = {"repo", "results_dir", "html_dir", "env_dir", "benchmark_dir"}
    assert {k: v for k, v in conf.items() if k not in paths} == {k: v for k, v in root.items() if k not in paths}

    def place(base: Path, relative: str) -> str:
        return os.path.normpath(base / relative)
    for same in ("repo", "benchmark_dir"):
        assert place(kept_path.parent, conf[same]) == place(CHECKOUT, root[same])
    assert place(kept_path.parent, conf["results_dir"]) == str(kept_path.parent / "results")
    assert place(kept_path.parent, conf["html_dir"]) == str(CHECKOUT / ".asv" / kept / "html")
    assert place(kept_path.parent, conf["env_dir"]) == str(CHECKOUT / ".asv" / kept / "env")
