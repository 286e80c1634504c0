"""`tvm-suite history`: a real asv run over commits of a repository standing in for TVM.

Offline except for the package index: the stand-in's tagged commits map to real apache-tvm
releases, so asv installs the real wheels (with their ffi pins) into a real virtualenv and
stores results per commit. One tiny workload keeps it to a few minutes on 2 cores; pip's
cache makes the ~90 MB wheels a one-time download.
"""

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from test_releases import commit, git, start_stand_in

pytestmark = pytest.mark.slow

SUBSET = ("--workloads", "resnet50.mean.7x7x2048", "--dtypes", "float32", "--orders", "default")
METRICS = ("bench_accuracy.Accuracy.track_ulp_mean", "bench_latency.Throughput.track_latency_median")


def pip_cache_dir():
    out = subprocess.run(["python3", "-m", "pip", "cache", "dir"], capture_output=True, text=True).stdout.strip()
    return out or str(Path.home() / ".cache" / "pip")


@pytest.fixture
def stand_in(tmp_path):
    """main: m1 - m2 (untagged: a source build) - m3 (tag v0.26.0); v0.25.0 on its own branch."""
    repo, c = start_stand_in(tmp_path)
    c["m2"] = commit(repo, "m2", "2026-07-01T00:00:00")
    c["m3"] = commit(repo, "m3", "2026-08-05T00:00:00")
    git(repo, "tag", "v0.26.0")
    return repo, c


def results_by_commit(out):
    found = {}
    for path in (out / "results").glob("*/*.json"):
        if path.name != "machine.json":
            data = json.loads(path.read_text())
            found[data["commit_hash"]] = data
    return found


@pytest.mark.longest
def test_history_installs_real_releases_and_publishes(cli, stand_in, tmp_path):
    repo, c = stand_in
    out = tmp_path / "history"
    env = {"HOME": str(tmp_path), "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or pip_cache_dir()}
    run = lambda *args: cli("history", "--tvm-repo", str(repo), *args, *SUBSET, "--out", str(out),
                            "--env-dir", str(tmp_path / "env"), env=env)

    # A range along main: m2 is no release and has no pyproject (its source build fails and
    # asv records it as failed), m3 is tag v0.26.0 (its wheel installs): the run goes on.
    ranged = run("--range", f"{c['m1']}..main")
    assert ranged.returncode == 1, ranged.stdout + ranged.stderr
    assert "install failed" in ranged.stdout

    # Releases: 0.25.0 (on a branch of its own) is measured; 0.26.0, whose results the range left,
    # is not run again.
    released = run("--releases", "0.25.0,0.26.0")
    assert released.returncode == 0, released.stdout + released.stderr
    kept = [line for line in released.stdout.splitlines() if "kept from an earlier run" in line]
    assert len(kept) == 1 and kept[0].startswith(c["m3"][:12]), released.stdout

    log = (out / "asv.log").read_text() + "".join(p.read_text() for p in (out / "install-logs").glob("*.log"))
    assert "is apache-tvm 0.25.0: installing the wheel with apache-tvm-ffi 0.1.12" in log
    assert "is apache-tvm 0.26.0: installing the wheel with apache-tvm-ffi 0.1.13.post2" in log
    assert "tvm 0.25.0 ok" in log and "tvm 0.26.0 ok" in log
    assert f"install_tvm: {c['m2'][:12]}: no pyproject.toml in the checkout" in log
    # the suite goes into the one environment once: every later install finds it there
    from suite.asv_plumbing import config

    said = [line for line in log.splitlines() if line.startswith("install_suite: ")]
    assert [line for line in said if "not again" not in line] == [
        f"install_suite: pip install -e {config.CHECKOUT}: exit 0"], said
    assert len(said) >= 4, said  # each install of both runs: m2, m3, 0.25.0, and asv's own to find the benchmarks

    results = results_by_commit(out)
    assert set(results) == {c["r25"], c["m2"], c["m3"]}
    for release_commit in (c["r25"], c["m3"]):
        for name in METRICS:
            values = results[release_commit]["results"][name][0]
            assert len(values) == 1 and values[0] is not None and math.isfinite(values[0]), name
    assert results[c["m2"]]["results"][METRICS[0]][0] is None  # failed, not skipped

    # Published: both releases are points of main's graphs (the 0.25.0 tag is not on main).
    index = json.loads((out / "html" / "index.json").read_text())
    assert {c["r25"], c["m3"]} <= set(index["revision_to_hash"].values())
    graphs = list((out / "html" / "graphs").glob(f"**/branch-main/**/{METRICS[0]}.json"))
    assert graphs
    points = [p for g in graphs for p in json.loads(g.read_text()) if p[1] is not None]
    assert len(points) >= 2
