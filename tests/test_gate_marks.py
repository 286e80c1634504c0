"""The gate judges divergence marks against the baseline, with their cause, on real asv results of
the executed qfloat target and its IEEE twin (two `tvm-suite run`s of one TVM build). Every rule of
the judgement is tested on in-memory histories in test_gate_rules.py; here, what real results give."""

import shutil

import pytest

from asv_runs import QF_WORKLOAD, plant, qf_two_commit_results
from suite import targets

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    targets.get("hexagon-v68-qf").unavailable() is not None,
    reason=f"{targets.get('hexagon-v68-qf').unavailable()}")]

TUNED = (QF_WORKLOAD, "float16", "hexagon-v68-qf", "tuned")
ERROR_RATIO = "bench_divergence.DivergenceFromDefault.track_error_ratio"
TWIN_RATIO = "bench_ieee_twin.TwinDivergence.track_error_ratio"
TWIN_RATIO_Z = "bench_ieee_twin.TwinDivergence.track_error_ratio_z"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return qf_two_commit_results(tmp_path_factory)


@pytest.fixture
def copy(runs, tmp_path):
    """A copy of the two runs' results to plant changes in: (run dir, repo, commits)."""
    run_dir, repo, commits = runs
    shutil.copytree(run_dir, tmp_path / "asv", ignore=shutil.ignore_patterns("html", "env*"))
    return tmp_path / "asv", repo, commits


def gate(cli, run_dir, repo, commit, *args):
    return cli("gate", "--results", str(run_dir / "results"), "--commit", commit, "--tvm-repo", str(repo),
               "--no-remeasure", *args)


def test_an_inherited_arithmetic_mark_is_known_and_ready(cli, runs):
    run_dir, repo, commits = runs
    # Accuracy metrics of one build do not vary between runs: an A/A pair gives the same value.
    from suite.reporting import results

    history = results.load(run_dir / "results", repo)
    series = next(s for s in history.series() if s.ids == TUNED)
    before, after = (history.value("error_ratio", series, c) for c in commits)
    assert before == after and before > 1.25
    result = gate(cli, run_dir, repo, commits[1])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"known since {commits[0][:10]}: {' '.join(TUNED)}: error vs float64 grew" in result.stdout
    assert "cause arithmetic (qfloat): with IEEE rounding the same schedule is not marked" in result.stdout
    assert "verdict: READY" in result.stdout


def test_the_first_commit_is_judged_by_cause_alone(cli, runs):
    run_dir, repo, commits = runs
    result = gate(cli, run_dir, repo, commits[0])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "first commit with results: nothing to compare" in result.stdout
    assert f"first commit: {' '.join(TUNED)}" in result.stdout and "DATA MISSING" not in result.stdout


def test_acceptances_are_checked(cli, runs, tmp_path):
    run_dir, repo, commits = runs
    bad = tmp_path / "bad.toml"
    bad.write_text('[[divergence.accept]]\nworkload = "w"\ndtype = "float16"\ntarget = "t"\norder = "tuned"\n')
    result = gate(cli, run_dir, repo, commits[1], "--thresholds", str(bad))
    assert result.returncode == 2 and "divergence.accept[0] needs reason" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


PACKETS = "bench_codegen.HexagonCounts.track_packets"


def test_packets_of_an_aa_pair_are_identical_and_pass(cli, runs):
    run_dir, repo, commits = runs
    from suite.reporting import results

    history = results.load(run_dir / "results", repo)
    counted = [s for s in history.series() if s.target == "hexagon-v68-qf" and s in history.values["packets"]]
    assert {s.order for s in counted} >= {"default", "tuned"}
    for series in counted:          # two runs of one build: the same packets, a ratio of exactly 1
        before, after = (history.value("packets", series, c) for c in commits)
        assert before == after and before > 100_000, series
        assert history.value("hvx_efficiency", series, commits[1]) < 1
    result = gate(cli, run_dir, repo, commits[1])
    assert f"packets vs {commits[0][:10]}" in result.stdout
    assert "no native target in these results" in result.stdout      # emulated: no latency
    line = next(x for x in result.stdout.splitlines() if f"packets vs {commits[0][:10]}" in x)
    assert "PASS" in line.upper() and f"0 of {len(counted)}" in line, line


def test_ten_percent_more_packets_fails(cli, copy):
    run_dir, repo, commits = copy
    from suite.reporting import results

    history = results.load(run_dir / "results", repo)
    series = next(s for s in history.series() if s.ids == TUNED)
    before = history.value("packets", series, commits[0])
    plant(run_dir, commits[1], PACKETS, TUNED, round(before * 1.1))
    result = gate(cli, run_dir, repo, commits[1])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{' '.join(TUNED)}: {before:.4g} -> {round(before * 1.1):.4g} (1.10x)" in result.stdout
