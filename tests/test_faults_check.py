"""Faults users meet with `tvm-suite check`, beside those of every command (test_faults.py): a
check run again over damaged data, an empty name, a baseline newer than the candidate, a history
copied to another machine.

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together. The contract, in every case: the documented exit status,
one line on stderr naming what is wrong where the command refuses (``tvm-suite: error: ...``), no
traceback, and the values the check gives. `check` never builds TVM here: its --out holds the
results of both commits already (test_check.py: ``check_copy``, ``history_stand_in``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asv_runs import place, plant_samples, two_commit_repo
from conftest import check_fault_table, run_cli, session_root
from suite.core import runstore
from test_check import SEED_DEFAULT, check_copy, history_stand_in, run_check

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "a check rerun on damaged data": ["test_a_rerun_over_a_damaged_file_is_one_line_before_any_work"],
    "an empty name": ["test_an_empty_name_is_an_error_never_the_default"],
    "a baseline newer than the candidate": ["test_a_baseline_newer_than_the_candidate_is_said"],
    "a history that travels": ["test_a_copied_history_rebuilds_a_kernel_gone_from_the_cache",
                               "test_a_copied_history_judges_on_the_kept_samples_where_it_cannot_rebuild",
                               "test_no_kept_file_names_a_path_of_the_machine"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


def one_line(result, *words, status=2):
    assert result.returncode == status, (result.returncode, result.stdout[-1000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm-suite: error: "), result.stderr
    for word in words:
        assert str(word) in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from asv_runs import two_commit_results

    return two_commit_results(tmp_path_factory)


def _timing(run_dir: Path, commit: str, ids) -> Path:
    return place(run_dir, commit).file(runstore.relative("timings", ids))


# ----------------------------------------------------------------------------- a check rerun on damaged data


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated results", "damaged timing", "unsealed side data"])
def test_a_rerun_over_a_damaged_file_is_one_line_before_any_work(cli, runs, tmp_path, monkeypatch, damage):
    """The same check again over an --out whose kept files are damaged: one line naming the file,
    exit 2, before anything is measured (it was a traceback, exit 1: "NOT READY")."""
    _, _, commits = runs
    out = check_copy(runs, tmp_path / "check")
    if damage == "truncated results":
        victim = next((out / "results").glob(f"*/{commits[0][:8]}-*.json"))
        victim.write_bytes(victim.read_bytes()[:100])
        words = ("corrupt asv result file", victim)
    elif damage == "damaged timing":
        victim = _timing(out, commits[1], SEED_DEFAULT)
        victim.write_bytes(victim.read_bytes()[:-20])
        words = (victim, f"damaged (not the file the run of {commits[1][:12]} kept)")
    else:
        victim = place(out, commits[0]).dir / runstore.MANIFEST
        victim.unlink()
        words = (place(out, commits[0]).dir, "side data without its seal")
    calls = history_stand_in(monkeypatch)
    one_line(run_check(cli, runs, out, "v9.9.0", commits[0][:10]), *words)
    assert calls == []  # refused before history is asked to measure anything
    assert not (out / "report").exists()


# ----------------------------------------------------------------------------- an empty name


def test_an_empty_name_is_an_error_never_the_default(tmp_path):
    """`check --baseline ''` picked the default baseline (the newest release before the candidate):
    an empty name is an error, one line, exit 2, before anything is written; so is an empty candidate."""
    from suite import check
    from suite.errors import UserError

    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    out = tmp_path / "out"
    for args, option in (([commits[1], "--baseline", ""], "argument --baseline"),
                         ([commits[1], "--baseline", "  "], "argument --baseline"),
                         (["", "--baseline", commits[0]], "argument CANDIDATE")):
        line = one_line(run_cli("check", *args, "--tvm-repo", str(repo), "--out", str(out)), option)
        assert "names no commit" in line, line
    assert not out.exists()
    with pytest.raises(UserError, match="--baseline '' names no commit"):  # the library refuses it too
        check.run_check(repo, commits[1], "", None, out)
    assert not out.exists()


# ----------------------------------------------------------------------------- a baseline newer than the candidate


@pytest.mark.slow
def test_a_baseline_newer_than_the_candidate_is_said(cli, runs, tmp_path, monkeypatch):
    """The gate says when its baseline comes after the candidate; check said nothing. Now a line
    names both commits and their dates, in the plan before any work and above the verdict, and
    the report carries it."""
    _, _, commits = runs
    out = check_copy(runs, tmp_path / "check")
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, commits[0][:10], "v9.9.0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    note = (f"note: the baseline v9.9.0 ({commits[1][:10]}) of 2026-08-05 is newer than the candidate "
            f"{commits[0][:10]} of 2026-06-17: the check compares backwards in TVM's history")
    lines = done.stdout.splitlines()
    assert lines.count(note) == 2, done.stdout
    assert lines.index(note) < lines.index("history: every result kept (stand-in)")  # said before any work
    assert lines[-1] == f"verdict: READY for {commits[0][:10]} against v9.9.0 -> exit 0"
    facts = json.loads((out / "report" / "report.json").read_text())
    assert facts["gate"]["notes"] == [note.removeprefix("note: ")]
    # the other way round: nothing said
    again = run_check(cli, runs, out, "v9.9.0", commits[0][:10])
    assert again.returncode == 0, again.stdout + again.stderr
    assert "is newer than the candidate" not in again.stdout


# ----------------------------------------------------------------------------- a history that travels


def _travelled(runs, tmp_path: Path) -> tuple[Path, Path]:
    """The run directory copied elsewhere (another machine: another path, an empty cache), with a
    noisy suspect (the candidate's samples of SEED_DEFAULT three times the baseline's); the
    baseline's timing names its kernel as older runs did, by an absolute path of the first machine."""
    _, _, commits = runs
    out = check_copy(runs, tmp_path / "elsewhere" / "check", slower=SEED_DEFAULT)
    kept = _timing(out, commits[0], SEED_DEFAULT)
    timing = json.loads(kept.read_text())
    assert not Path(timing["kernel"]).is_absolute() and timing["kernel"].startswith("measure/"), timing
    timing["kernel"] = f"/home/first-machine/.cache/tvm-suite/{timing['kernel']}"
    kept.write_text(json.dumps(timing))
    runstore.seal(place(out, commits[0]))
    cache = tmp_path / "elsewhere" / "cache"
    cache.mkdir()
    return out, cache


@pytest.mark.slow
def test_a_copied_history_rebuilds_a_kernel_gone_from_the_cache(cli, runs, tmp_path, monkeypatch):
    """On a machine whose cache never held the kernels (the same TVM and suite installed), a
    suspect is timed again on kernels rebuilt from the kept build facts, and the verdict says so
    (it was "kernel ... gone from the cache": NO VERDICT)."""
    from suite import compat

    _, _, commits = runs
    out, cache = _travelled(runs, tmp_path)
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10], env={"TVM_SUITE_CACHE": str(cache)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    noisy = next(line for line in done.stdout.splitlines()
                 if "seed.conv2d_nhwc_7x7s2 float16 llvm default:" in line)
    assert noisy.strip().startswith("noisy: seed.conv2d_nhwc_7x7s2 float16 llvm default: 3.00x, p 0.004; re-measured ")
    assert noisy.endswith(f"(the baseline's and the candidate's kernels were gone from the cache: rebuilt from the "
                          f"kept build facts (TVM {compat.build_id()}))"), noisy
    assert done.stdout.rstrip().endswith(f"verdict: READY for v9.9.0 against {commits[0][:10]} -> exit 0")
    name = json.loads(_timing(out, commits[1], SEED_DEFAULT).read_text())["kernel"]
    assert (cache / name).is_file()  # rebuilt into this machine's cache, by the name the timing keeps
    kept = json.loads((out / "runs" / ".gate" / f"{commits[0]}-{commits[1]}.json").read_text())["value"]
    assert [(e["verdict"], e["runtime"]) for e in kept] == [("noisy", noisy[noisy.index("(the baseline") + 1:-1])]


@pytest.mark.slow
def test_a_copied_history_judges_on_the_kept_samples_where_it_cannot_rebuild(cli, runs, tmp_path, monkeypatch):
    """Kernels another TVM built (a release's wheel), gone from the cache: this machine cannot
    rebuild them, so the suspect is judged on its kept samples, and the line says so: slower by the
    rule there, NOT READY (not NO VERDICT); nothing is kept as a re-measurement."""
    from suite import compat

    _, _, commits = runs
    out, cache = _travelled(runs, tmp_path)
    for commit in commits:
        samples = json.loads(_timing(out, commit, SEED_DEFAULT).read_text())["samples_s"]
        plant_samples(out, commit, SEED_DEFAULT, samples, tvm="0.26.0-0000000000")
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10], env={"TVM_SUITE_CACHE": str(cache)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    judged = (f"  confirmed: seed.conv2d_nhwc_7x7s2 float16 llvm default: 3.00x, p 0.004 (judged on the kept "
              f"samples: the baseline's and the candidate's kernels are gone from the cache and cannot be rebuilt "
              f"here: built by TVM 0.26.0-0000000000, the installed TVM is {compat.build_id()})")
    assert judged in done.stdout.splitlines(), done.stdout
    latency = next(line for line in done.stdout.splitlines() if line.startswith("latency vs "))
    assert latency.rstrip().endswith("FAIL") and "1 slower" in latency, latency
    assert done.stdout.rstrip().endswith(f"verdict: NOT READY (a check failed) for v9.9.0 against {commits[0][:10]} "
                                         "-> exit 1")
    assert not (out / "runs" / ".gate").exists()
    assert not (cache / "measure").exists()  # nothing was built


@pytest.mark.slow
def test_no_kept_file_names_a_path_of_the_machine(cli, runs, tmp_path, monkeypatch, tmp_path_factory):
    """docs/run.md: an output directory can be moved or copied, nothing in it names a path of this
    machine: every file two runs kept (timings, runs/, asv.installed.json, manifests, logs, asv's
    results and HTML, the report), and what a check adds, holds neither the test's temporary
    directory nor the cache's."""
    from suite import cache as suite_cache

    results, repo, commits = runs
    machine_paths = {str(session_root(tmp_path_factory)), str(suite_cache.root())}
    assert results.is_relative_to(session_root(tmp_path_factory))

    def scan(run_dir: Path, paths) -> list[str]:
        found = []
        for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
            # the one path a kept file may name: the report's bisect commands, to be pasted on this
            # machine, name the TVM clone the user gave (--tvm-repo)
            data = path.read_bytes().replace(f"--tvm-repo {repo} ".encode(), b"")
            found += [f"{path.relative_to(run_dir)}: {p}" for p in paths if p.encode() in data]
        return found

    kept = sorted(p.relative_to(results.parent).as_posix() for p in results.parent.rglob("*") if p.is_file())
    assert "asv.installed.json" in kept and "asv.log" in kept and any(k.startswith("runs/") for k in kept)
    assert any("/timings/" in k for k in kept) and any(k.endswith("/manifest.json") for k in kept)
    assert scan(results.parent, machine_paths) == []
    timing = json.loads(_timing(results.parent, commits[1], SEED_DEFAULT).read_text())
    assert timing["kernel"].startswith("measure/seed.conv2d_nhwc_7x7s2-float16-llvm-default-"), timing
    conf = json.loads((results.parent / "asv.installed.json").read_text())
    assert conf["repo"] == "../tvm" and not Path(conf["benchmark_dir"]).is_absolute(), conf
    # a check of the copy adds its report and re-measurements: no path of this machine in them either
    out = check_copy(runs, tmp_path / "check", slower=SEED_DEFAULT)
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10])
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "runs" / ".gate").is_dir() and (out / "report" / "report.json").is_file()
    assert scan(out, machine_paths | {str(tmp_path)}) == []

