"""The gate judges divergence marks against the baseline, with their cause, on real asv results of
the executed qfloat target and its IEEE twin (two `tvm-suite run`s of one TVM build; each case
plants its change into a copy of those results)."""

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


def test_a_new_mark_fails(cli, copy):
    run_dir, repo, commits = copy
    plant(run_dir, commits[0], ERROR_RATIO, TUNED, 1.0)         # the baseline was not marked
    result = gate(cli, run_dir, repo, commits[1])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"fail: divergence marks vs {commits[0][:10]}" in result.stdout
    assert f"new: {' '.join(TUNED)}: error vs float64 grew" in result.stdout


def test_a_worse_known_mark_fails(cli, copy):
    run_dir, repo, commits = copy
    plant(run_dir, commits[1], ERROR_RATIO, TUNED, 2.0)         # 1.67 -> 2.0: 1.2x, above 1.1
    result = gate(cli, run_dir, repo, commits[1])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"worse since {commits[0][:10]}: {' '.join(TUNED)}" in result.stdout and "(baseline 1.67" in result.stdout


def test_a_mark_that_disappears_is_fixed(cli, copy):
    run_dir, repo, commits = copy
    plant(run_dir, commits[1], ERROR_RATIO, TUNED, 1.01)
    result = gate(cli, run_dir, repo, commits[1])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"fixed: {' '.join(TUNED)}: error_ratio 1.67" in result.stdout and "1.01 now" in result.stdout


def test_a_schedule_mark_fails_even_inherited_unless_accepted(cli, copy, tmp_path):
    run_dir, repo, commits = copy
    for commit in commits:  # the IEEE twin is marked too: the schedule itself changed the numbers
        plant(run_dir, commit, TWIN_RATIO, TUNED, 1.6)
        plant(run_dir, commit, TWIN_RATIO_Z, TUNED, 80.0)
    result = gate(cli, run_dir, repo, commits[1])
    assert result.returncode == 1, result.stdout + result.stderr
    assert (f"known since {commits[0][:10]}: {' '.join(TUNED)}" in result.stdout
            and "cause schedule: marked with IEEE rounding too; IEEE twin: error ratio 1.6" in result.stdout)

    accept = tmp_path / "accept.toml"
    entry = '[[divergence.accept]]\nworkload = "{}"\ndtype = "float16"\ntarget = "hexagon-v68-qf"\norder = "{}"\nreason = "{}"\n'
    accept.write_text(entry.format(QF_WORKLOAD, "tuned", "reviewed: the tiling sums in another order"))
    result = gate(cli, run_dir, repo, commits[1], "--thresholds", str(accept))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "accepted: reviewed: the tiling sums in another order" in result.stdout
    assert "stale acceptance" not in result.stdout

    # An acceptance for a mark that does not occur is reported, so the file gets cleaned up.
    accept.write_text(accept.read_text() + entry.format("seed.conv2d_nhwc_7x7s2", "seed-tuned", "old review"))
    result = gate(cli, run_dir, repo, commits[1], "--thresholds", str(accept))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (f"stale acceptance in {accept.resolve()}: seed.conv2d_nhwc_7x7s2 float16 hexagon-v68-qf seed-tuned "
            "is not marked here: remove it") in result.stdout


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
    counted = [s for s in history.series() if s.target == "hexagon-v68-qf"]
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
