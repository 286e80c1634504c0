"""`tvm-suite gate`: 0 ready, 1 not ready, 2 data missing or no verdict, on real asv results (the
rules themselves on in-memory histories: test_gate_rules.py)."""

import json
import shutil
from pathlib import Path

import pytest

from asv_runs import VACUOUS, WORKLOAD, loosen, member, place, plant_file, plant_samples, two_commit_repo, two_commit_results
from conftest import read_only_copy
from suite.core import run_place

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
    assert result.stdout.rstrip().endswith(f"verdict: READY for v9.9.0 against {commits[0][:10]} -> exit 0")
    assert "latency vs " in result.stdout and "ulp_mean float16" in result.stdout
    assert "FAIL" not in result.stdout and "MISSING" not in result.stdout
    # tuned vs default on llvm is an IEEE reordering: compared, not marked.
    assert "divergence marks" in result.stdout and "2 combinations compared" in result.stdout
    # K = 2305 in float16: the rigorous bound does not exist; listed, never counted as passed.
    assert "probabilistic bound fraction (lambda 9.4)" in result.stdout
    rigorous = next(line for line in result.stdout.splitlines() if line.startswith("rigorous bound fraction"))
    assert "2 not checked" in rigorous and rigorous.rstrip().endswith("PASS")


def test_kernels_of_two_llvms_are_compared_and_the_two_builds_named(cli, runs, tmp_path):
    """Every commit's benchmark processes note the LLVM its TVM was built with; where the two
    sides differ (a wheel against a source build with Debian's LLVM), the gate names both: a
    change may be the compiler's. Kernels of the same code (these two commits') are compared all
    the same, and their latency steps are noise."""
    results, repo, commits = runs
    noted = json.loads(member(place(results.parent, commits[1]), "build.json"))
    assert noted["llvm"] == {"version": "22", "use_llvm": "ON", "installed_from": "wheel"}  # apache-tvm 0.27
    copy = tmp_path / "run"
    shutil.copytree(results.parent, copy, ignore=shutil.ignore_patterns("env*", "html"))
    # what a source build of a main commit with Debian's LLVM 22 notes (TVM 0.27 libinfo: USE_LLVM ON)
    source = {**noted, "llvm": {"version": "22", "use_llvm": "ON", "installed_from": "source"}}
    plant_file(copy, commits[1], "build.json", json.dumps(source))
    result = gate(cli, copy / "results", "--commit", commits[1][:10], "--tvm-repo", str(repo))
    assert result.returncode == 0, result.stdout + result.stderr
    latency = next(line for line in result.stdout.splitlines() if line.startswith("latency vs "))
    assert latency.rstrip().endswith("PASS") and "none slower" in latency, result.stdout
    assert ("note: TVM at v9.9.0 was built with LLVM 22 (source, USE_LLVM ON), at " in result.stdout
            and "with LLVM 22 (wheel, USE_LLVM ON): a change of a kernel whose code changed may be the compiler's"
            in result.stdout)
    assert "ulp_mean float16" in result.stdout  # accuracy is checked at each commit on its own


def test_stricter_thresholds_fail(cli, runs, tmp_path):
    results, repo, commits = runs
    strict = tmp_path / "strict.toml"
    strict.write_text("[accuracy.float16]\nulp_mean = 1.0\n")
    result = gate(cli, results, "--commit", "v9.9.0", "--tvm-repo", str(repo), "--thresholds", str(strict))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fail: ulp_mean float16" in result.stdout and "NOT READY" in result.stdout


def test_one_verdict_from_gate_report_and_run(cli, runs, tmp_path):
    """The report `run` wrote, `tvm-suite report` and `tvm-suite gate` give the same verdict line."""
    results, repo, commits = runs
    gated = gate(cli, results, "--commit", commits[1], "--tvm-repo", str(repo))
    line = gated.stdout.strip().splitlines()[-1]
    assert line.startswith("verdict: ") and gated.returncode == int(line.rsplit(" ", 1)[1])
    reported = cli("report", "--results", str(results), "--out", str(tmp_path / "r"), "--tvm-repo", str(repo))
    assert reported.returncode == 0 and reported.stdout.strip().splitlines()[-1] == line
    facts = json.loads((tmp_path / "r" / "report.json").read_text())
    assert facts["gate"]["line"] == line
    assert json.loads((results.parent / "report" / "report.json").read_text())["gate"]["line"] == line


@pytest.mark.parametrize("edit", ["latency x100", "ulp_mean swapped", "samples halved, manifest deleted",
                                  "samples halved, sealed again", "commit hash a path"])
def test_data_that_vouches_for_itself_is_refused(cli, runs, tmp_path, edit):
    """asv's values are checked against the side data the run sealed, the samples against asv's
    latency, and a commit hash is a hash before any path is made of it: exit 2, both files named."""
    results, repo, commits = runs
    copy = tmp_path / "asv"
    shutil.copytree(results.parent, copy, ignore=shutil.ignore_patterns("env*", "html"))
    path = next(p for p in (copy / "results").glob("*/*.json")
                if p.name != "machine.json" and json.loads(p.read_text())["commit_hash"] == commits[1])
    data = json.loads(path.read_text())
    ids = (WORKLOAD, "float16", "llvm", "default")
    timings = run_place.relative("timings", ids)
    named = [path]
    if edit == "latency x100":
        data["results"]["bench_latency.Throughput.track_latency_median"][0][0] *= 100
    elif edit == "ulp_mean swapped":
        values = data["results"]["bench_accuracy.Accuracy.track_ulp_mean"][0]
        values[0], values[1] = values[1], values[0]
    elif edit == "commit hash a path":
        data["commit_hash"] = "../../../../x"
    else:
        kept = json.loads(member(place(copy, commits[1]), timings))
        kept["samples_s"] = [s / 2 for s in kept["samples_s"]]
        if edit.endswith("manifest deleted"):
            loosen(place(copy, commits[1]))
            place(copy, commits[1]).file(timings).write_text(json.dumps(kept))
            named = [place(copy, commits[1]).dir]
        else:
            plant_file(copy, commits[1], timings, json.dumps(kept))
            named = [path, place(copy, commits[1]).bundle / timings]
    path.write_text(json.dumps(data))
    result = gate(cli, copy / "results", "--commit", commits[1][:10])
    one_line(result, *named)
    assert not list(Path("/").glob("-*.json"))


def test_the_gate_on_a_closed_pipe_or_a_full_disk_keeps_its_verdict(runs, tmp_path):
    import subprocess
    import sys

    results, repo, commits = runs
    gate_cmd = [str(Path(sys.executable).parent / "tvm-suite"), "gate", "--results", str(results), "--commit",
                commits[1], "--tvm-repo", str(repo)]
    full = subprocess.run(gate_cmd, stdout=open("/dev/full", "w"), stderr=subprocess.PIPE, text=True)
    piped = subprocess.run(" ".join(gate_cmd) + " | head -1; exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                           capture_output=True, text=True)
    expected = gate(run_cli_module(), results, "--commit", commits[1], "--tvm-repo", str(repo)).returncode
    for done in (full, piped):
        assert done.returncode == expected, done.stderr
        assert "Traceback" not in done.stderr
    assert f"the output could not be written (No space left on device); exit {expected} stands" in full.stderr
    # a read-only copy: the same verdict
    with read_only_copy(results.parent, tmp_path / "ro") as copy:
        ro = gate(run_cli_module(), copy / "results", "--commit", commits[1], "--tvm-repo", str(repo))
        assert ro.returncode == expected and "Traceback" not in ro.stderr, ro.stderr


def run_cli_module():
    from conftest import run_cli

    return run_cli


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
    t.write_text("[bound]\nmax_fraction = 1e-9\n")  # every checkable bound fraction fails
    result = gate(cli, results, "--commit", commits[1], "--thresholds", str(t))
    assert result.returncode == 1
    text = result.stdout
    assert f"not checked: {VACUOUS} float16 llvm default: no rigorous bound for K = 2305 in float16" in text
    assert "fail: rigorous bound fraction" in text and "fail: probabilistic bound fraction" in text


def test_a_first_run_is_not_missing_data(cli, runs):
    """The first commit with results has nothing to compare with: the checks against a baseline are
    not checked, the absolute checks decide, and the verdict says so."""
    results, repo, commits = runs
    result = gate(cli, results, "--commit", commits[0], "--tvm-repo", str(repo))
    assert result.returncode == 0, result.stdout + result.stderr
    latency = next(line for line in result.stdout.splitlines() if line.startswith("latency vs "))
    assert "first commit with results: nothing to compare" in latency and latency.rstrip().endswith("NOT CHECKED")
    assert "the checks against a baseline are not checked; the absolute checks decide" in result.stdout
    assert f"verdict: READY for {commits[0][:10]} (first commit with results) -> exit 0" in result.stdout


def test_missing_data_is_never_ready(cli, runs, tmp_path):
    results, repo, commits = runs
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


def test_a_failed_build_is_not_ready(cli, tmp_path):
    """A committed tuning record that no longer replays: asv stores null, `run` exits non-zero and
    names it, the gate says NOT READY (exit 1) with the reason."""
    import json as _json

    from suite.core import tuning_records
    from test_tuning import MATMUL, break_trace

    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    records = tmp_path / "records"
    shutil.copytree(tuning_records.RECORDS_DIR / "llvm" / "float32" / "traces",
                    records / "llvm" / "float32" / "traces", ignore=shutil.ignore_patterns("seed*", "resnet50.c*",
                                                                                          "resnet50.max*"))
    out = tmp_path / "asv"
    args = ("run", "--quick", "--workloads", MATMUL, "--dtypes", "float32", "--out", str(out), "--tvm-repo", str(repo))
    env = {"HOME": str(tmp_path), "TVM_SUITE_TUNING_RECORDS": str(records)}
    good = cli(*args, "--tvm-commit", commits[0], env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    break_trace(records / "llvm" / "float32" / "traces" / f"{MATMUL}.json")
    bad = cli(*args, "--tvm-commit", commits[1], env=env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"{MATMUL} float32 llvm tuned: build failed: tuned trace does not apply" in bad.stdout
    files = [p for p in (out / "results").glob("*/*.json") if p.name != "machine.json"]
    latest = next(_json.loads(p.read_text()) for p in files if _json.loads(p.read_text())["commit_hash"] == commits[1])
    ulp = latest["results"]["bench_accuracy.Accuracy.track_ulp_mean"]
    assert ulp[1][3] == ["'default'", "'tuned'"]
    assert ulp[0][0] > 0 and ulp[0][1] is None  # tuned failed: null (a failure), not NaN (a skip)
    result = gate(cli, out / "results", "--commit", commits[1], "--tvm-repo", str(repo), "--no-remeasure")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "combinations completed" in result.stdout and "NOT READY" in result.stdout
    assert f"{MATMUL} float32 llvm tuned: {MATMUL} float32 llvm tuned failed: build failed: tuned trace does not apply" \
        in result.stdout


def slower_trace(path):
    """Replace the committed fp32 matmul trace by a genuinely slower candidate: the slowest its
    tuning measured (6.7x the best), kept in tests/data."""
    import json as _json

    from suite.core import tuning_records

    slowest = _json.loads((Path(__file__).parent / "data" / "llvm-float32-matmul_add.2048-1000.slowest-candidate.json").read_text())
    record = _json.loads(path.read_text())
    assert record["workload"] == slowest["workload"] and slowest["measured_s"] > 3 * record["best_measured_s"]
    record["trace"] = slowest["trace"]
    record["trace_sha256"] = tuning_records.trace_digest(record["trace"])
    path.write_text(_json.dumps(record))


def test_remeasurement_confirms_a_real_slowdown_and_calls_noise_noisy(cli, tmp_path):
    """Candidate B replays a slower (real) tuned schedule of the matmul; its default kernel is the
    same build as A's but its recorded samples are made 3x A's, as a burst of load would. The gate
    times both pairs again, interleaved: the first is confirmed, the second is noisy."""
    import json as _json

    from suite.core import tuning_records
    from test_tuning import MATMUL

    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    records = tmp_path / "records" / "llvm" / "float32"
    shutil.copytree(tuning_records.RECORDS_DIR / "llvm" / "float32", records,
                    ignore=lambda d, names: [n for n in names if n.startswith(("seed", "resnet50.c", "resnet50.max"))])
    out = tmp_path / "asv"
    args = ("run", "--quick", "--workloads", MATMUL, "--dtypes", "float32", "--out", str(out), "--tvm-repo", str(repo))
    env = {"HOME": str(tmp_path), "TVM_SUITE_TUNING_RECORDS": str(tmp_path / "records")}
    assert cli(*args, "--tvm-commit", commits[0], env=env).returncode == 0
    slower_trace(records / "traces" / f"{MATMUL}.json")
    ran = cli(*args, "--tvm-commit", commits[1], env=env)
    # run gives the gate's verdict on what it ran, the slower schedule timed again and confirmed
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stdout.strip().splitlines()[-1].startswith(f"verdict: NOT READY (a check failed) for {commits[1][:10]}")
    ids = (MATMUL, "float32", "llvm", "default")
    samples_a = _json.loads(member(place(out, commits[0]), run_place.relative("timings", ids)))["samples_s"]
    plant_samples(out, commits[1], ids, [3 * s for s in samples_a])
    # A latency step of a kernel whose code is the same is noise by construction, never timed again
    # (tests/test_code_identity.py): here the default kernel's code changed too, so that its step is
    # a suspect the gate must time again.
    plant_file(out, commits[1], run_place.relative("code", ids), "f" * 64)

    without = gate(cli, out / "results", "--commit", commits[1], "--tvm-repo", str(repo), "--no-remeasure")
    assert without.returncode == 1, without.stdout + without.stderr
    assert f"confirmed: {MATMUL} float32 llvm tuned:" in without.stdout  # run's re-measurement, kept
    assert f"suspect: {MATMUL} float32 llvm default:" in without.stdout and "(not timed again)" in without.stdout
    # The report without a re-measurement of the new suspect gives that same verdict.
    report = cli("report", "--results", str(out / "results"), "--out", str(tmp_path / "report"), "--tvm-repo", str(repo))
    assert report.returncode == 1 and report.stdout.strip().splitlines()[-1] == without.stdout.strip().splitlines()[-1]
    result = gate(cli, out / "results", "--commit", commits[1], "--tvm-repo", str(repo))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"confirmed: {MATMUL} float32 llvm tuned:" in result.stdout
    assert f"noisy: {MATMUL} float32 llvm default:" in result.stdout, result.stdout
    # The report shows the gate's re-measured verdicts, and its verdict.
    report = cli("report", "--results", str(out / "results"), "--out", str(tmp_path / "report"), "--tvm-repo", str(repo))
    assert report.returncode == 1, report.stderr  # the report exits with its verdict: NOT READY
    facts = _json.loads((tmp_path / "report" / "report.json").read_text())
    verdicts = {(r["order"], r["metric"]): r["words"].split(":")[0] for r in facts["regressions"]}
    assert verdicts == {("tuned", "latency"): "confirmed"}  # the gate's failing line; noisy is no regression
    assert facts["gate"]["line"] == result.stdout.strip().splitlines()[-1]
    # An earlier re-measurement speaks only for the samples it judged: once the candidate's samples
    # change, "noisy" is not carried over to them.
    plant_samples(out, commits[1], ids, [3.3 * s for s in samples_a])
    again = gate(cli, out / "results", "--commit", commits[1], "--tvm-repo", str(repo), "--no-remeasure")
    assert f"suspect: {MATMUL} float32 llvm default:" in again.stdout and "noisy" not in again.stdout
    # A release history: each side's kernel was compiled by another TVM than the installed one. They
    # are re-timed in the installed runtime all the same, and the verdict says whose kernels they were.
    for commit in commits:
        kept = _json.loads(member(place(out, commit), run_place.relative("timings", ids)))["samples_s"]
        plant_samples(out, commit, ids, kept, tvm=f"0.26.0-{commit[:10]}")
    release = gate(cli, out / "results", "--commit", commits[1], "--tvm-repo", str(repo))
    assert f"noisy: {MATMUL} float32 llvm default:" in release.stdout, release.stdout
    builds = ", ".join(sorted(f"0.26.0-{commit[:10]}" for commit in commits))
    assert f"(kernels of {builds} re-timed in the runtime of 0." in release.stdout
