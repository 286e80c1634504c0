"""`tvm-suite gate`: 0 ready, 1 not ready, 2 data missing, on real asv results."""

import shutil

import pytest

from asv_runs import VACUOUS, two_commit_results

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return two_commit_results(tmp_path_factory)


def gate(cli, results, *args):
    return cli("gate", "--results", str(results), *args)


def test_ready_with_default_thresholds(cli, runs):
    results, repo, commits = runs
    result = gate(cli, results, "--commit", commits[1][:10], "--tvm-repo", str(repo))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: READY -> exit 0" in result.stdout
    assert "latency vs " in result.stdout and "ulp_mean float16" in result.stdout
    assert "FAIL" not in result.stdout and "MISSING" not in result.stdout
    # tuned vs default on llvm is an IEEE reordering: compared, not marked.
    assert "divergence marks" in result.stdout and "2 combinations compared" in result.stdout
    # K = 2305 in float16: the rigorous bound does not exist; listed, never counted as passed.
    assert "probabilistic bound fraction (lambda 9.4)" in result.stdout
    rigorous = next(line for line in result.stdout.splitlines() if line.startswith("rigorous bound fraction"))
    assert "2 not checked" in rigorous and rigorous.rstrip().endswith("PASS")


def test_stricter_thresholds_fail(cli, runs, tmp_path):
    results, repo, commits = runs
    strict = tmp_path / "strict.toml"
    strict.write_text("[accuracy.float16]\nulp_mean = 1.0\n[latency]\nmax_ratio = 0.5\n")
    result = gate(cli, results, "--commit", "v9.9.0", "--tvm-repo", str(repo), "--thresholds", str(strict))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fail: ulp_mean float16" in result.stdout and "fail: latency vs" in result.stdout
    assert "NOT READY" in result.stdout


def test_divergence_marks_fail_the_gate(cli, runs, tmp_path):
    results, _, commits = runs
    t = tmp_path / "t.toml"
    t.write_text("[divergence]\nmax_bias_shift = 0.0\nmin_z = 0.0\n")  # any shift at all marks
    result = gate(cli, results, "--commit", commits[1], "--thresholds", str(t))
    assert result.returncode == 1
    assert "fail: divergence marks" in result.stdout and "error drifted to one side" in result.stdout


def test_unchecked_bounds_are_listed_with_the_reason(cli, runs, tmp_path):
    results, _, commits = runs
    t = tmp_path / "t.toml"
    t.write_text("[bound]\nmax_fraction = 0.0\n")  # every checkable bound fraction fails
    result = gate(cli, results, "--commit", commits[1], "--thresholds", str(t))
    assert result.returncode == 1
    text = result.stdout
    assert f"not checked: {VACUOUS} float16 llvm default: no rigorous bound for K = 2305 in float16" in text
    assert "fail: rigorous bound fraction" in text and "fail: probabilistic bound fraction" in text


def test_missing_data_is_never_ready(cli, runs, tmp_path):
    results, repo, commits = runs
    # The first commit has no baseline to compare latency with.
    result = gate(cli, results, "--commit", commits[0], "--tvm-repo", str(repo))
    assert result.returncode == 2 and "MISSING" in result.stdout
    # The divergence rules can be required: no Hexagon results is then missing data.
    t = tmp_path / "t.toml"
    t.write_text('[divergence]\nrequired = true\ntargets = ["hexagon*"]\n')
    result = gate(cli, results, "--commit", commits[1], "--thresholds", str(t))
    assert result.returncode == 2 and "DATA MISSING" in result.stdout


def one_line(result, *words):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert str(word) in lines[0]


def test_bad_input(cli, runs, tmp_path):
    results, _, commits = runs
    one_line(gate(cli, results, "--commit", "deadbeef00"), "deadbeef00")
    bad = tmp_path / "bad.toml"
    bad.write_text("[accuracy.float16]\nulp_meen = 3\n")
    one_line(gate(cli, results, "--commit", commits[1], "--thresholds", str(bad)), "accuracy.float16.ulp_meen", bad)
    bad.write_text("[latency\n")
    one_line(gate(cli, results, "--commit", commits[1], "--thresholds", str(bad)), bad)
    one_line(gate(cli, tmp_path / "none", "--commit", commits[1]), tmp_path / "none")
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    victim = next(p for p in copy.glob("*/*.json") if p.name != "machine.json")
    victim.write_text(victim.read_text()[:-40])
    one_line(gate(cli, copy, "--commit", commits[1]), victim)
