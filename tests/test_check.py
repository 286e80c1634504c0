"""`tvm-suite check`'s plan, said before any work: what each side installs and roughly how long,
the source build's cost read from what ccache holds (not guessed from earlier logs); a check on
kept results: its report renders the verdict after the re-measurement, and an interrupted check
says what it keeps (its faults: test_faults_check.py)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from suite import check
from suite.core.combo import Grid
from suite.asv_plumbing import releases, source_build

GRID = Grid.of(None, ["float32", "float16"], ["llvm"], ["default", "tuned"])


def _sides():
    return [check.Side("baseline", "a" * 40, "v0.26.0", releases.RELEASES["0.26.0"]),
            check.Side("candidate", "b" * 40, "b" * 10, None)]


def test_the_plan_says_what_each_side_installs_and_how_long(tmp_path, monkeypatch):
    monkeypatch.setattr(source_build, "ccache_objects", lambda: 24)  # a few objects: no earlier TVM build
    lines, cold = check.plan(_sides(), tmp_path / "out", GRID)
    assert re.match(r"baseline +v0\.26\.0 \(aaaaaaaaaa\): +the wheel apache-tvm 0\.26\.0 with apache-tvm-ffi ", lines[0])
    assert lines[0].index("the wheel") == lines[1].index("a source build")  # a table: one column each
    assert "a source build (TVM's CMake with LLVM; ccache holds no earlier build: a cold one)" in lines[1]
    assert cold == check.WHEEL_S + check.SOURCE_COLD_S + 2 * check.BENCHMARK_S
    monkeypatch.setattr(source_build, "ccache_objects", lambda: 613)
    lines, cached = check.plan(_sides(), tmp_path / "out", GRID)
    assert "ccache holds 613 objects of earlier builds" in lines[1]
    assert cached == check.WHEEL_S + check.SOURCE_CACHED_S + 2 * check.BENCHMARK_S


# ----------------------------------------------------------------------------- a check on kept results
#
# `check` measures with `history` (each commit's TVM installed by asv): never in a test. These tests
# give it an --out that holds the results of both commits already (two real `tvm-suite run`s of a
# repository standing in for TVM, asv_runs.py), and a stand-in for `history` that measures nothing,
# as `history` does when asv has every result (--skip-existing).

SEED_DEFAULT = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "default")


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

    results, _, commits = runs
    # what an earlier gate or report found speaks for other samples: not copied
    shutil.copytree(results.parent, where, ignore=shutil.ignore_patterns("env*", "html", "report", ".gate"))
    for kept in sorted(place(where, commits[0]).dir.glob("timings/*.json")):
        ids = tuple(kept.stem.rsplit(".", 3))  # <workload>.<dtype>.<target>.<order>
        samples = json.loads(kept.read_text())["samples_s"]
        plant_samples(where, commits[1], ids, [s * (factor if ids == slower else 1.0) for s in samples])
    code = f"code/{'.'.join(slower)}.txt" if slower else None
    if code and place(where, commits[1]).file(code).is_file():  # the same code is never timed again
        plant_file(where, commits[1], code, "f" * 64)
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
    out = check_copy(runs, tmp_path / "check", slower=SEED_DEFAULT)
    calls = history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10])
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls == [[commits[0], commits[1]]]
    assert "Traceback" not in done.stderr
    noisy = next(line for line in done.stdout.splitlines()
                 if "noisy: seed.conv2d_nhwc_7x7s2 float16 llvm default" in line)
    assert re.search(r": 3\.00x, p 0\.004; re-measured \d\.\d\dx, p ", noisy), noisy
    assert done.stdout.rstrip().endswith(f"verdict: READY for v9.9.0 against {commits[0][:10]} -> exit 0")
    facts = json.loads((out / "report" / "report.json").read_text())
    latency = [r for r in facts["regressions"] if r["metric"] == "latency"]
    assert [(r["workload"], r["order"], r["verdict"]) for r in latency] == [(SEED_DEFAULT[0], "default", "noisy")]
    assert facts["gate"]["line"] == done.stdout.rstrip().splitlines()[-1]
    page = (out / "report" / "index.html").read_text()
    row = f'<tr class="noisy"><td class="l">noisy</td><td class="l">latency</td><td class="l">{SEED_DEFAULT[0]}</td>'
    assert row in page
    assert '<td class="l">suspect</td>' not in page and "--metric latency" not in page  # no red row, no bisect
    kept = json.loads((out / "runs" / ".gate" / f"{commits[0]}-{commits[1]}.json").read_text())["value"]
    assert [(e["ids"], e["verdict"]) for e in kept] == [(list(SEED_DEFAULT), "noisy")]


@pytest.mark.slow
def test_an_interrupted_check_says_what_it_keeps(cli, runs, tmp_path, monkeypatch):
    """Ctrl-C while the candidate is measured, the baseline's results complete: the line says that
    the baseline's results are kept and that the same check measures only the candidate; what asv
    completed is sealed, so the next command reads it."""
    from asv_runs import place

    _, _, commits = runs
    out = check_copy(runs, tmp_path / "check")
    for path in (out / "results").glob(f"*/{commits[1][:8]}-*.json"):
        path.unlink()  # the candidate: not measured yet
    shutil.rmtree(place(out, commits[1]).dir)
    # the baseline: its benchmarks have written their side data; asv has not written its results yet
    (place(out, commits[0]).dir / "manifest.json").unlink()
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
    assert (place(out, commits[0]).dir / "manifest.json").is_file()
    gate = cli("gate", "--results", str(out / "results"), "--commit", commits[0][:10], "--no-remeasure")
    assert gate.returncode == 0, gate.stdout + gate.stderr  # the kept results read whole: no unsealed side data
