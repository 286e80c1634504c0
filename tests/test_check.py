"""`tvm-suite check`'s plan, said before any work: what each side installs and roughly how long,
the source build's cost read from what ccache holds (not guessed from earlier logs); a check on
kept results: its report renders the verdict after the re-measurement, and an interrupted check
says what it keeps (its faults: test_faults_check.py)."""

import json
import re
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

from suite.jobs import check
from suite.core.combo import Grid
from suite.asv_plumbing import releases, source_build


def _sides():
    return [check.Side("baseline", "a" * 40, "v0.26.0", releases.RELEASES["0.26.0"]),
            check.Side("candidate", "b" * 40, "b" * 10, None)]


def test_the_plan_says_what_each_side_installs_and_how_long(tmp_path, monkeypatch):
    grid = Grid.of(None, ["float32", "float16"], ["llvm"], ["default", "tuned"])  # reads the models' catalog
    monkeypatch.setattr(source_build, "ccache_objects", lambda: 24)  # a few objects: no earlier TVM build
    lines, cold = check.plan(_sides(), tmp_path / "out", grid)
    assert re.match(r"baseline +v0\.26\.0 \(aaaaaaaaaa\): +the wheel apache-tvm 0\.26\.0 with apache-tvm-ffi ", lines[0])
    assert lines[0].index("the wheel") == lines[1].index("a source build")  # a table: one column each
    assert "a source build (TVM's CMake with LLVM; ccache holds no earlier build: a cold one)" in lines[1]
    assert cold == check.WHEEL_S + check.SOURCE_COLD_S + 2 * check.BENCHMARK_S
    monkeypatch.setattr(source_build, "ccache_objects", lambda: 613)
    lines, cached = check.plan(_sides(), tmp_path / "out", grid)
    assert "ccache holds 613 objects of earlier builds" in lines[1]
    assert cached == check.WHEEL_S + check.SOURCE_CACHED_S + 2 * check.BENCHMARK_S


# ----------------------------------------------------------------------------- a check on kept results
#
# `check` measures with `history` (each commit's TVM installed by asv): never in a test. These tests
# give it an --out that holds the results of both commits already (two real `tvm-suite run`s of a
# repository standing in for TVM, asv_runs.py), and a stand-in for `history` that measures nothing,
# as `history` does when asv has every result (--skip-existing).

#: The suspect the gate times again below: the seed's tuned kernel, 8 ms a call (the default one takes
#: 250 ms, and a re-timing calls each side at least 15 times).
SEED_TUNED = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "tuned")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from asv_runs import two_commit_results

    return two_commit_results(tmp_path_factory)


def check_copy(runs, where: Path, slower: tuple | None = None, factor: float = 3.0) -> Path:
    """A copy of the two commits' run directory at ``where``: every timing of the candidate made
    the baseline's (no suspect by chance), but for ``slower``, whose candidate samples are ``factor``
    times the baseline's, and whose code identity is planted as changed (a suspect the gate times
    again, and calls noisy: both sides are one kernel)."""
    from asv_runs import place, plant_file, plant_samples
    from suite.core import run_bundle

    results, _, commits = runs
    # what an earlier gate or report found speaks for other samples: not copied
    shutil.copytree(results.parent, where, ignore=shutil.ignore_patterns("env*", "html", "report", ".gate"))
    baseline = run_bundle.sealed_members(place(where, commits[0]))
    for name in sorted(n for n in baseline if n.startswith("timings/")):
        ids = tuple(Path(name).stem.rsplit(".", 3))  # <workload>.<dtype>.<target>.<order>
        samples = json.loads(baseline[name])["samples_s"]
        plant_samples(where, commits[1], ids, [s * (factor if ids == slower else 1.0) for s in samples])
    code = f"code/{'.'.join(slower)}.txt" if slower else None
    if code and code in run_bundle.sealed_members(place(where, commits[1])):  # the same code is never timed again
        plant_file(where, commits[1], code, "v2:" + "f" * 64)  # the scheme of the kept identities
    return where


def history_stand_in(monkeypatch, effect=None):
    """`history` as it is when asv has every result: nothing measured (``effect``: what it does
    instead, e.g. raise an interruption). Returns the calls it got."""
    from suite.asv_plumbing import driver
    from suite.history import commits

    calls = []

    def stand_in(repo, found, *args, **kwargs):
        calls.append([c.commit for c in found])
        if effect is not None:
            effect()
        return driver.RunSummary("history: every result kept (stand-in)", 0)

    monkeypatch.setattr(commits, "run_history", stand_in)
    return calls


def run_check(cli, runs, out: Path, candidate: str, baseline: str, *args, env=None):
    _, repo, _ = runs
    return cli("check", candidate, "--baseline", baseline, "--tvm-repo", str(repo), "--out", str(out), *args, env=env)


@pytest.mark.slow
def test_the_report_renders_the_verdict_after_the_re_measurement(cli, runs, tmp_path, monkeypatch):
    """A noisy suspect: timed again, the gate says noisy and PASS; the report written by the same
    check lists that row as noisy (grey, no bisect command), never as a suspect in red."""
    _, _, commits = runs
    out = check_copy(runs, tmp_path / "check", slower=SEED_TUNED)
    calls = history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10])
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls == [[commits[0], commits[1]]]
    assert "Traceback" not in done.stderr
    noisy = next(line for line in done.stdout.splitlines()
                 if "noisy: seed.conv2d_nhwc_7x7s2 float16 llvm tuned" in line)
    assert re.search(r": 3\.00x, p 0\.004; re-measured \d\.\d\dx, p ", noisy), noisy
    assert done.stdout.rstrip().endswith(f"verdict: READY for v9.9.0 against {commits[0][:10]} -> exit 0")
    facts = json.loads((out / "report" / "report.json").read_text())
    assert facts["regressions"] == [] and facts["pairs"][-1]["verdict"] == "READY"  # noisy is no regression
    assert facts["gate"]["line"] == done.stdout.rstrip().splitlines()[-1]
    page = (out / "report" / "index.html").read_text()
    assert str(escape(noisy.strip())) in page  # the gate's own line, under its latency check
    assert '<td class="l">suspect</td>' not in page and "--metric latency" not in page  # no red row, no bisect
    kept = json.loads((out / "runs" / ".gate" / f"{commits[0]}-{commits[1]}.json").read_text())["value"]
    assert [(e["ids"], e["verdict"]) for e in kept] == [(list(SEED_TUNED), "noisy")]


@pytest.mark.slow
def test_an_interrupted_check_says_what_it_keeps(cli, runs, tmp_path, monkeypatch):
    """Ctrl-C while the candidate is measured, the baseline's results complete: the line says that
    the baseline's results are kept and that the same check measures only the candidate; what asv
    completed is sealed, so the next command reads it."""
    from asv_runs import loosen, place

    _, _, commits = runs
    out = check_copy(runs, tmp_path / "check")
    for path in (out / "results").glob(f"*/{commits[1][:8]}-*.json"):
        path.unlink()  # the candidate: not measured yet
    place(out, commits[1]).bundle.unlink()
    # the baseline: its benchmarks have written their side data; asv has not written its results yet
    loosen(place(out, commits[0]))
    baseline_results = next((out / "results").glob(f"*/{commits[0][:8]}-*.json"))
    written = baseline_results.read_text()
    baseline_results.unlink()

    def ctrl_c_in_the_candidate():
        baseline_results.write_text(written)  # asv completed the baseline; the candidate is being installed
        raise KeyboardInterrupt

    history_stand_in(monkeypatch, ctrl_c_in_the_candidate)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10])
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"tvm-suite: interrupted (SIGINT): the check stopped while measuring: the results of the baseline "
        f"{commits[0][:10]} are kept in {out}; the same check again measures only the candidate v9.9.0 "
        f"({commits[1][:10]})")
    assert place(out, commits[0]).bundle.is_file() and not place(out, commits[0]).dir.exists()
    gate = cli("gate", "--results", str(out / "results"), "--commit", commits[0][:10], "--no-remeasure")
    assert gate.returncode == 0, gate.stdout + gate.stderr  # the kept results read whole: no unsealed side data


# ----------------------------------------------------------------------------- against a kept history
#
# `check --baseline-from DIR`: DIR is a copy of the two commits' run directory (as `history` keeps
# one), the candidate's results alone are in --out, and `history` (the stand-in) is asked to measure
# the candidate only.

ERROR_RATIO = "bench_divergence.DivergenceFromDefault.track_error_ratio"


def kept_history(runs, where: Path, machine: str | None = None, cpu: str | None = None) -> Path:
    """A kept history at ``where``: a copy of the two commits' run directory, filed under the asv
    machine ``machine`` where given, with ``cpu`` in its machine file where given (measured
    elsewhere). The seals hold: they name files inside a commit's directory."""
    from asv_runs import place

    results, _, commits = runs
    shutil.copytree(results.parent, where, ignore=shutil.ignore_patterns("env*", "html", "report", ".gate"))
    here = place(where, commits[0]).machine
    facts = json.loads((where / "results" / here / "machine.json").read_text())
    facts.update({"machine": machine or here, **({"cpu": cpu} if cpu else {})})
    (where / "results" / here / "machine.json").write_text(json.dumps(facts))
    if machine:
        for path in (where / "results" / here).glob("*-*.json"):
            data = json.loads(path.read_text())
            data["params"]["machine"] = machine
            path.write_text(json.dumps(data))
        (where / "results" / here).rename(where / "results" / machine)
        (where / "runs" / here).rename(where / "runs" / machine)
    return where


def candidate_out(runs, where: Path) -> Path:
    """An --out holding the candidate's results alone, measured on this machine (its samples the
    baseline's: no suspect by chance)."""
    from asv_runs import place

    _, _, commits = runs
    out = check_copy(runs, where)
    for path in (out / "results").glob(f"*/{commits[0][:8]}-*.json"):
        path.unlink()
    place(out, commits[0]).bundle.unlink()
    return out


def plant_mark(run_dir: Path, commit: str, ratio: float) -> None:
    """A divergence mark of SEED_TUNED at ``commit``: its error ``ratio`` times default's, far
    beyond a reordering's noise (z 50), as a run would have filed it."""
    from asv_runs import member, place, plant, plant_file
    from suite.core import run_place

    plant(run_dir, commit, ERROR_RATIO, SEED_TUNED, ratio)
    relative = run_place.values_relative("bench_divergence.DivergenceFromDefault", SEED_TUNED)
    reported = json.loads(member(place(run_dir, commit), relative))
    plant_file(run_dir, commit, relative, json.dumps({**reported, "error_ratio_z": 50.0}))


def listing(where: Path) -> dict:
    """Every file under ``where`` and its content's digest: what a reader must leave as it was."""
    import hashlib

    return {p.relative_to(where).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(where.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_kept_history_is_the_baseline_never_measured_again(cli, runs, tmp_path, monkeypatch):
    """The baseline is the kept history's newest commit with data but the candidate; `history` is
    asked for the candidate alone, the kept history is read and left as it was, and with both
    commits measured on this machine latency is judged as by `gate`."""
    from asv_runs import place

    _, repo, commits = runs
    kept = kept_history(runs, tmp_path / "tvm-main")
    before = listing(kept)
    out = candidate_out(runs, tmp_path / "check")
    calls = history_stand_in(monkeypatch)
    done = cli("check", "v9.9.0", "--baseline-from", str(kept), "--tvm-repo", str(repo), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "latency not judged" not in done.stdout + done.stderr
    assert calls == [[commits[1]]]  # the candidate alone: the baseline is neither built nor measured
    assert listing(kept) == before
    plan = next(line for line in done.stdout.splitlines() if line.startswith("baseline "))
    assert plan.endswith(f"kept in {kept} (machine {place(kept, commits[0]).machine}): neither built nor measured "
                         "again"), plan
    latency = next(line for line in done.stdout.splitlines() if line.startswith(f"latency vs {commits[0][:10]}"))
    assert latency.rstrip().endswith("PASS"), latency
    assert done.stdout.rstrip().endswith(f"verdict: READY for v9.9.0 against {commits[0][:10]} -> exit 0")
    facts = json.loads((out / "report" / "report.json").read_text())
    assert [c["hash"] for c in facts["commits"]] == commits


@pytest.mark.slow
@pytest.mark.parametrize("elsewhere", ["another machine", "another cpu"])
def test_a_kept_history_of_another_machine_judges_all_but_latency(cli, runs, tmp_path, monkeypatch, elsewhere):
    """A kept history measured on another machine (another asv machine name, or this name on other
    hardware): the deterministic metrics are judged against it by the same gate (here a divergence
    mark grown since the kept baseline: NOT READY), latency is not, and the check says why in one
    line on stderr, in its table, in report.json and in --json (stdout that document alone)."""
    from asv_runs import place

    _, repo, commits = runs
    kept = kept_history(runs, tmp_path / "tvm-main", **({"machine": "elsewhere"} if elsewhere == "another machine"
                                                        else {"cpu": "Another CPU @ 1.00GHz"}))
    out = candidate_out(runs, tmp_path / "check")
    plant_mark(kept, commits[0], 2.0)
    plant_mark(out, commits[1], 3.0)
    calls = history_stand_in(monkeypatch)
    done = cli("check", "v9.9.0", "--baseline-from", str(kept), "--tvm-repo", str(repo), "--out", str(out), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and calls == [[commits[1]]]
    here = place(out, commits[1]).machine
    if elsewhere == "another machine":
        why = f"the baseline's latency was measured on machine elsewhere; this is machine {here}"
    else:
        cpu = json.loads((out / "results" / here / "machine.json").read_text())["cpu"]
        why = (f"the baseline's latency was measured on machine {here} (cpu Another CPU @ 1.00GHz); this is machine "
               f"{here} (cpu {cpu})")
    assert f"tvm-suite: note: latency not judged: {why}" in done.stderr.splitlines()
    facts = json.loads(done.stdout)  # stdout is the JSON document alone
    assert facts["baseline_from"] == {"history": str(kept), "commit": commits[0],
                                      "machine": "elsewhere" if elsewhere == "another machine" else here,
                                      "latency_judged": False, "latency_not_judged": why}
    checks = {c["name"]: c for c in facts["checks"]}
    latency = checks[f"latency vs {commits[0][:10]}"]
    assert (latency["status"], latency["details"]) == ("NOT CHECKED", [why])
    divergence = checks[f"divergence marks vs {commits[0][:10]}"]
    assert divergence["status"] == "FAIL" and len(divergence["details"]) == 1, divergence
    assert divergence["details"][0].startswith(f"worse since {commits[0][:10]}: {' '.join(SEED_TUNED)}: ")
    assert "error_ratio 3 vs 1.25 (baseline 2)" in divergence["details"][0]
    assert f"latency not judged: {why}" in facts["notes"]
    report = json.loads((out / "report" / "report.json").read_text())
    assert f"latency not judged: {why}" in report["gate"]["notes"]
    assert f"note: latency not judged: {why}" in done.stderr.splitlines()  # the table, for people: on stderr


@pytest.mark.slow
def test_a_kept_emulated_history_has_no_latency_to_set_apart(cli, tmp_path_factory, tmp_path, monkeypatch):
    """A kept history of an emulator (a Hexagon run filed under machine qemu-hexagon-v68) holds no
    latency, and neither does a candidate measured on the emulator: there is nothing to set apart,
    so the check does not say that latency was not judged for the machines' sake; its latency check
    says why there is none, and every deterministic metric is judged against the kept baseline."""
    from asv_runs import qf_two_commit_results

    run_dir, repo, commits = qf_two_commit_results(tmp_path_factory)
    runs = (run_dir / "results", repo, commits)
    kept = kept_history(runs, tmp_path / "tvm-main-hexagon", machine="qemu-hexagon-v68")
    out = candidate_out(runs, tmp_path / "check")
    calls = history_stand_in(monkeypatch)
    done = cli("check", commits[1][:10], "--baseline-from", str(kept), "--tvm-repo", str(repo), "--out", str(out),
               "--targets", "hexagon-v68-qf", "--dtypes", "float16", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and calls == [[commits[1]]]
    assert "latency not judged" not in done.stderr
    facts = json.loads(done.stdout)
    assert facts["baseline_from"] == {"history": str(kept), "commit": commits[0], "machine": "qemu-hexagon-v68",
                                      "latency_judged": False, "latency_not_judged": None}
    checks = {c["name"]: c for c in facts["checks"]}
    latency = checks[f"latency vs {commits[0][:10]}"]
    assert (latency["status"], latency["worst"]) == ("NOT CHECKED", "no native target in these results: no latency "
                                                     "at any commit")
    assert checks[f"packets vs {commits[0][:10]}"]["status"] == "PASS", checks
