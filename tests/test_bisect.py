"""`tvm-suite bisect`: asv's own `asv find` over a repository standing in for TVM, whose commits
are real apache-tvm releases (wheels): Hexagon code of the seed's tuned conv2d grew from 0.25 to
0.26 (7108 -> 7156 code bytes for v68)."""

import pytest

from test_history_commits import pip_cache_dir
from test_releases import commit, git

pytestmark = pytest.mark.slow

COMBO = ("--workload", "seed.conv2d_nhwc_7x7s2", "--dtype", "float16", "--target", "hexagon-v68",
         "--order", "seed-tuned", "--metric", "code_bytes")


@pytest.fixture
def releases_on_main(tmp_path):
    """r - c25 (v0.25.0) - c25p1 (v0.25.0.post1) - c26 (v0.26.0)."""
    repo = tmp_path / "tvm"
    repo.mkdir()
    git(repo, "init", "-q")
    c = {"r": commit(repo, "root", "2026-06-01T00:00:00")}
    for name, tag, date in (("c25", "v0.25.0", "2026-06-17"), ("c25p1", "v0.25.0.post1", "2026-07-01"),
                            ("c26", "v0.26.0", "2026-08-05")):
        c[name] = commit(repo, name, f"{date}T00:00:00")
        git(repo, "tag", tag)
    return repo, c


@pytest.mark.longest
def test_bisect_names_the_first_bad_commit_and_says_when_nothing_worsened(cli, releases_on_main, tmp_path):
    import os

    repo, c = releases_on_main
    env = {"HOME": str(tmp_path), "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or pip_cache_dir()}
    run = lambda rng, out: cli("bisect", "--tvm-repo", str(repo), "--range", rng, *COMBO, "--out", str(tmp_path / out),
                               "--env-dir", str(tmp_path / "env"), env=env)
    found = run(f"{c['c25']}..{c['c26']}", "found")
    assert found.returncode == 0, found.stdout + found.stderr
    assert f"first bad commit: {c['c26']}" in found.stdout
    assert "code_bytes 7108 at" in found.stdout and "-> 7156" in found.stdout
    built = found.stdout.split("after building ")[1].split(" commit")[0]
    assert 2 <= int(built) <= 2 + 2  # ceil(log2(2 commits)) + 2

    nothing = run(f"{c['c25']}..{c['c25p1']}", "nothing")
    assert nothing.returncode == 3, nothing.stdout + nothing.stderr  # an answer of its own (docs/exit-codes.md)
    assert f"nothing worsened beyond the noise in {c['c25']}..{c['c25p1']}" in nothing.stdout


def test_bisect_bad_input(cli, releases_on_main, tmp_path):
    repo, c = releases_on_main
    done = cli("bisect", "--tvm-repo", str(repo), "--range", f"{c['c25']}..{c['c26']}", *COMBO[:-1], "no_such_metric")
    assert done.returncode == 2 and "unknown metric 'no_such_metric'" in done.stderr
    done = cli("bisect", "--tvm-repo", str(repo), "--range", f"{c['c25']}..{c['c26']}", "--workload", "nope", "--metric",
               "ulp_mean")
    assert done.returncode == 2 and "unknown workload" in done.stderr and "Traceback" not in done.stderr


def test_bisect_on_a_target_this_machine_cannot_run_is_no_verdict(cli, releases_on_main):
    from suite import targets

    if targets.get("cuda").unavailable() is None:
        pytest.skip("this machine has a GPU")
    repo, c = releases_on_main
    combo = ("--workload", "seed.conv2d_nhwc_7x7s2", "--target", "cuda", "--metric", "latency")
    done = cli("bisect", "--tvm-repo", str(repo), "--range", f"{c['c25']}..{c['c26']}", *combo)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().startswith("tvm-suite: error: cannot bisect on cuda here: ")


def test_a_verdict_needs_measured_commits(tmp_path_factory, tmp_path):
    """The named commit failed to build: said so, with the commits that were measured; nothing
    measured at all: no verdict (the reason each failed, where the run kept it)."""
    import shutil

    from asv_runs import WORKLOAD, place, plant, plant_file, two_commit_results
    from suite import tracked
    from suite.core import run_place
    from suite.history import bisect

    results, repo, commits = two_commit_results(tmp_path_factory)
    run_dir = tmp_path / "asv"
    shutil.copytree(results.parent, run_dir, ignore=shutil.ignore_patterns("env*", "html"))
    ids = (WORKLOAD, "float16", "llvm", "default")
    metric = tracked.get("ulp_mean")
    plant(run_dir, commits[1], metric.benchmark, ids, None)
    answer = bisect.judge(repo, run_dir, commits, commits[1], ids, metric, place(run_dir, commits[1]).machine)
    assert answer.culprit is None and not answer.measured_nothing and answer.undecided  # no verdict: exit 2
    assert f"asv find named {commits[1][:10]}, which has no ulp_mean" in answer.why
    assert f"measured: {commits[0][:10]}" in answer.why
    plant(run_dir, commits[0], metric.benchmark, ids, None)
    plant_file(run_dir, commits[0], run_place.relative("failures", ids), "build failed: planted")
    answer = bisect.judge(repo, run_dir, commits, commits[1], ids, metric, place(run_dir, commits[1]).machine)
    assert answer.measured_nothing and answer.why == "build failed: planted"
