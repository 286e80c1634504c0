"""Faults users meet with `tvm-suite check`, beside those of every command (test_faults.py): a
check run again over damaged data, an empty name, a baseline newer than the candidate, a history
copied to another machine, a kept history as the baseline (``--baseline-from``).

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together. The contract, in every case: the documented exit status,
one line on stderr naming what is wrong where the command refuses (``tvm-suite: error: ...``), no
traceback, and the values the check gives. `check` never builds TVM here: its --out holds the
results of both commits already (test_check.py: ``check_copy``, ``history_stand_in``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from asv_runs import (
    loosen,
    member,
    place,
    plant_file,
    plant_samples,
    tamper,
    two_commit_repo,
)
from conftest import check_fault_table, one_line, run_cli, session_root
from test_check import (
    SEED_TUNED,
    candidate_out,
    check_copy,
    history_stand_in,
    kept_history,
    listing,
    run_check,
)

from suite.core import run_bundle, run_place

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "a check rerun on damaged data": ["test_a_rerun_over_a_damaged_file_is_one_line_before_any_work"],
    "an empty name": ["test_an_empty_name_is_an_error_never_the_default"],
    "a baseline newer than the candidate": ["test_a_baseline_newer_than_the_candidate_is_said"],
    "a history that travels": ["test_a_copied_history_rebuilds_a_kernel_gone_from_the_cache",
                               "test_a_copied_history_judges_on_the_kept_samples_where_it_cannot_rebuild",
                               "test_a_copied_history_times_a_kernel_of_the_same_code_where_its_own_is_gone",
                               "test_no_kept_file_names_a_path_of_the_machine"],
    "a kept history that is not there": ["test_a_missing_kept_history_is_one_line"],
    "a directory that is no kept history": ["test_a_directory_without_results_is_no_kept_history"],
    "a kept history without sealed side data": ["test_a_baseline_without_sealed_side_data_is_one_line"],
    "a damaged kept history": ["test_a_damaged_kept_history_is_one_line_before_any_work"],
    "a kept history through a symbolic link": ["test_a_kept_history_through_a_link_is_read_where_it_lies"],
    "options --baseline-from contradicts": ["test_an_out_inside_the_kept_history_is_refused"],
    "an empty --baseline-from": ["test_an_empty_baseline_from_is_an_error"],
    "a baseline outside the kept history or the clone": ["test_a_baseline_the_kept_history_or_the_clone_lacks"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from asv_runs import two_commit_results

    return two_commit_results(tmp_path_factory)


def _timing(run_dir: Path, commit: str, ids) -> dict:
    """The timing samples of ``ids`` the run of ``commit`` sealed."""
    return json.loads(member(place(run_dir, commit), run_place.relative("timings", ids)))


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
        name = run_place.relative("timings", SEED_TUNED)
        tamper(place(out, commits[1]), name, member(place(out, commits[1]), name)[:-20])
        words = (place(out, commits[1]).bundle / name, f"damaged (not the file the run of {commits[1][:12]} kept)")
    else:
        loosen(place(out, commits[0]))
        words = (place(out, commits[0]).dir, "side data without its seal")
    calls = history_stand_in(monkeypatch)
    one_line(run_check(cli, runs, out, "v9.9.0", commits[0][:10]), *words)
    assert calls == []  # refused before history is asked to measure anything
    assert not (out / "report").exists()


# ----------------------------------------------------------------------------- an empty name


def test_an_empty_name_is_an_error_never_the_default(tmp_path):
    """`check --baseline ''` picked the default baseline (the newest release before the candidate):
    an empty name is an error, one line, exit 2, before anything is written; so is an empty candidate."""
    from suite.errors import UserError
    from suite.jobs import check

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
        check.run(repo, commits[1], "", None, out)
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
    noisy suspect (the candidate's samples of SEED_TUNED three times the baseline's); the
    baseline's timing names its kernel as older runs did, by an absolute path of the first machine."""
    _, _, commits = runs
    out = check_copy(runs, tmp_path / "elsewhere" / "check", slower=SEED_TUNED)
    timing = _timing(out, commits[0], SEED_TUNED)
    assert not Path(timing["kernel"]).is_absolute() and timing["kernel"].startswith("measure/"), timing
    timing["kernel"] = f"/home/first-machine/.cache/tvm-suite/{timing['kernel']}"
    plant_file(out, commits[0], run_place.relative("timings", SEED_TUNED), json.dumps(timing))
    cache = tmp_path / "elsewhere" / "cache"
    cache.mkdir()
    return out, cache


@pytest.mark.slow
def test_a_copied_history_rebuilds_a_kernel_gone_from_the_cache(cli, runs, tmp_path, monkeypatch):
    """On a machine whose cache never held the kernels (the same TVM and suite installed), a
    suspect is timed again on kernels rebuilt from the kept build facts, and the verdict says so
    (it was "kernel ... gone from the cache": NO VERDICT)."""
    from suite.compat import release

    _, _, commits = runs
    out, cache = _travelled(runs, tmp_path)
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10], env={"TVM_SUITE_CACHE": str(cache)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    noisy = next(line for line in done.stdout.splitlines()
                 if "seed.conv2d_nhwc_7x7s2 float16 llvm tuned:" in line)
    assert noisy.strip().startswith("noisy: seed.conv2d_nhwc_7x7s2 float16 llvm tuned: 3.00x, p 0.004; re-measured ")
    assert noisy.endswith(f"(the baseline's and the candidate's kernels were gone from the cache: rebuilt from the "
                          f"kept build facts (TVM {release.build_id()}))"), noisy
    assert done.stdout.rstrip().endswith(f"verdict: READY for v9.9.0 against {commits[0][:10]} -> exit 0")
    name = _timing(out, commits[1], SEED_TUNED)["kernel"]
    assert (cache / name).is_file()  # rebuilt into this machine's cache, by the name the timing keeps
    kept = json.loads((out / "runs" / ".gate" / f"{commits[0]}-{commits[1]}.json").read_text())["value"]
    assert [(e["verdict"], e["runtime"]) for e in kept] == [("noisy", noisy[noisy.index("(the baseline") + 1:-1])]


@pytest.mark.slow
def test_a_copied_history_judges_on_the_kept_samples_where_it_cannot_rebuild(cli, runs, tmp_path, monkeypatch):
    """Kernels another TVM built (a release's wheel), gone from the cache: this machine cannot
    rebuild them, so the suspect is judged on its kept samples, and the line says so: slower by the
    rule there, NOT READY (not NO VERDICT); nothing is kept as a re-measurement."""
    from suite.compat import release

    _, _, commits = runs
    out, cache = _travelled(runs, tmp_path)
    for commit in commits:
        samples = _timing(out, commit, SEED_TUNED)["samples_s"]
        plant_samples(out, commit, SEED_TUNED, samples, tvm="0.26.0-0000000000")
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10], env={"TVM_SUITE_CACHE": str(cache)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    judged = (f"  confirmed: seed.conv2d_nhwc_7x7s2 float16 llvm tuned: 3.00x, p 0.004 (judged on the kept "
              f"samples: the baseline's and the candidate's kernels are gone from the cache and cannot be rebuilt "
              f"here: built by TVM 0.26.0-0000000000, the installed TVM is {release.build_id()})")
    assert judged in done.stdout.splitlines(), done.stdout
    latency = next(line for line in done.stdout.splitlines() if line.startswith("latency vs "))
    assert latency.rstrip().endswith("FAIL") and "1 slower" in latency, latency
    assert done.stdout.rstrip().endswith(f"verdict: NOT READY (a check failed) for v9.9.0 against {commits[0][:10]} "
                                         "-> exit 1")
    assert not (out / "runs" / ".gate").exists()
    assert not (cache / "measure").exists()  # nothing was built


@pytest.mark.slow
def test_a_copied_history_times_a_kernel_of_the_same_code_where_its_own_is_gone(cli, runs, tmp_path, monkeypatch,
                                                                              suite_cache):
    """Kernels another TVM built, gone from the cache and not to be rebuilt here, where this
    machine's cache holds a kernel of the same combination whose code identity is the one both
    commits kept (another build of the same code: on TVM's main branch most commits generate every
    kernel alike): that kernel is timed for both sides, and the line says so."""
    from suite import cache as suite_cache_module
    from suite.compat import release

    _, _, commits = runs
    out, cache = _travelled(runs, tmp_path)
    for commit in commits:
        samples = _timing(out, commit, SEED_TUNED)["samples_s"]
        plant_samples(out, commit, SEED_TUNED, samples, tvm="0.26.0-0000000000")
    name = Path(_timing(out, commits[1], SEED_TUNED)["kernel"])
    built = suite_cache / name.parent  # where the runs built it
    assert (built / name.name).is_file(), built
    # other entries of that code: the kernel as built (the baseline's code), and the candidate's,
    # whose code identity check_copy planted as changed (its record says so)
    stand_ins = [cache / "measure" / f"{built.name[:-16]}{digit * 16}" for digit in "01"]
    for entry in stand_ins:
        shutil.copytree(built, entry)
    record = suite_cache_module.read_sealed_json(stand_ins[1] / "record.json")
    suite_cache_module.write_sealed_json(stand_ins[1] / "record.json", {**record, "code": "v2:" + "f" * 64})
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10], env={"TVM_SUITE_CACHE": str(cache)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    noisy = next(line for line in done.stdout.splitlines() if "seed.conv2d_nhwc_7x7s2 float16 llvm tuned:" in line)
    assert noisy.strip().startswith("noisy: seed.conv2d_nhwc_7x7s2 float16 llvm tuned: 3.00x, p 0.004; re-measured ")
    assert noisy.endswith("(the baseline's and the candidate's kernels were gone from the cache: a kernel of the same "
                          "code (its code identity) in this cache timed instead; kernels of 0.26.0-0000000000 re-timed "
                          f"in the runtime of {release.build_id()})"), noisy
    assert sorted((cache / "measure").iterdir()) == stand_ins  # none built


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
            # a commit's bundle is read member by member: its deflated bytes hide text
            sealed = {f"/{name}": data for name, data in (run_bundle.sealed_members(
                run_place.Place(run_dir, path.parent.name, path.stem)).items())} if path.suffix == ".zip" else \
                {"": path.read_bytes()}
            for name, data in sealed.items():
                # the one path a kept file may name: the report's bisect commands, to be pasted on this
                # machine, name the TVM clone the user gave (--tvm-repo)
                data = data.replace(f"--tvm-repo {repo} ".encode(), b"")
                found += [f"{path.relative_to(run_dir)}{name}: {p}" for p in paths if p.encode() in data]
        return found

    kept = sorted(p.relative_to(results.parent).as_posix() for p in results.parent.rglob("*") if p.is_file())
    assert "asv.installed.json" in kept and "asv.log" in kept and any(k.startswith("runs/") for k in kept)
    assert any(k.startswith("runs/") and k.endswith(f"/{commits[1]}.zip") for k in kept)
    assert scan(results.parent, machine_paths) == []
    timing = _timing(results.parent, commits[1], SEED_TUNED)
    assert timing["kernel"].startswith("measure/seed.conv2d_nhwc_7x7s2-float16-llvm-tuned-"), timing
    conf = json.loads((results.parent / "asv.installed.json").read_text())
    assert conf["repo"] == "../tvm" and not Path(conf["benchmark_dir"]).is_absolute(), conf
    # a check of the copy adds its report and re-measurements: no path of this machine in them either
    out = check_copy(runs, tmp_path / "check", slower=SEED_TUNED)
    history_stand_in(monkeypatch)
    done = run_check(cli, runs, out, "v9.9.0", commits[0][:10])
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "runs" / ".gate").is_dir() and (out / "report" / "report.json").is_file()
    assert scan(out, machine_paths | {str(tmp_path)}) == []



# ----------------------------------------------------------------------------- a kept history as the baseline
#
# `check --baseline-from DIR`: each fault is one line, exit 2, before anything is measured (the
# stand-in of `history` is never called) and with the kept history left as it was.


def check_from(cli, repo: Path, kept, out: Path, *args, candidate="v9.9.0"):
    return cli("check", candidate, "--baseline-from", str(kept), "--tvm-repo", str(repo), "--out", str(out), *args)


def test_a_missing_kept_history_is_one_line(cli, tmp_path, monkeypatch):
    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    calls = history_stand_in(monkeypatch)
    for kept, words in ((tmp_path / "reports" / "tvm-main", "no such directory"),
                        (repo / ".git" / "HEAD", "not a directory")):
        one_line(check_from(cli, repo, kept, tmp_path / "out", candidate=commits[1]),
                 f"--baseline-from {kept}: {words}")
    assert calls == [] and not (tmp_path / "out").exists()


def test_a_directory_without_results_is_no_kept_history(cli, tmp_path, monkeypatch):
    """An empty directory, or the results/ of a history instead of the history itself."""
    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    calls = history_stand_in(monkeypatch)
    for kept in (tmp_path / "empty", tmp_path / "history" / "results"):
        kept.mkdir(parents=True)
        one_line(check_from(cli, repo, kept, tmp_path / "out", candidate=commits[1]),
                 f"--baseline-from {kept} is not a kept history: it has no results/")
    assert calls == [] and not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("lacking", ["runs/ not copied", "the named baseline's side data", "unsealed side data"])
def test_a_baseline_without_sealed_side_data_is_one_line(cli, runs, tmp_path, monkeypatch, lacking):
    """A kept history whose baseline has asv's results but not the side data the gate judges on
    (a results/ copied without its runs/, a commit's directory gone, one without its seal): one
    line naming what is missing and how to get it, never a verdict on asv's results alone."""
    from suite.reporting import gate_checks

    _, repo, commits = runs
    kept = kept_history(runs, tmp_path / "tvm-main")
    out = candidate_out(runs, tmp_path / "check")
    args = []
    if lacking == "runs/ not copied":
        shutil.rmtree(kept / "runs")
        words = (f"the kept history {kept} has results but no sealed side data of any commit other than the "
                 f"candidate {commits[1][:10]}", gate_checks.HOW_TO_KEEP)
    elif lacking == "the named baseline's side data":
        place(kept, commits[0]).bundle.unlink()
        args = ["--baseline", commits[0][:10]]
        words = (f"has results but no sealed side data of the baseline {commits[0][:10]} (runs/ beside results/ in "
                 f"{kept})",)
    else:
        loosen(place(kept, commits[0]))
        words = (place(kept, commits[0]).dir, "side data without its seal")
    calls = history_stand_in(monkeypatch)
    before = listing(kept)
    one_line(check_from(cli, repo, kept, out, *args), *words)
    assert calls == [] and listing(kept) == before and not (out / "report").exists()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated results", "damaged timing"])
def test_a_damaged_kept_history_is_one_line_before_any_work(cli, runs, tmp_path, monkeypatch, damage):
    """A kept history is read as the gate reads any, every file against its seal: a damaged one is
    one line naming it, before the candidate is measured."""
    _, repo, commits = runs
    kept = kept_history(runs, tmp_path / "tvm-main")
    out = candidate_out(runs, tmp_path / "check")
    if damage == "truncated results":
        victim = next((kept / "results").glob(f"*/{commits[0][:8]}-*.json"))
        victim.write_bytes(victim.read_bytes()[:100])
        words = (victim, "unreadable asv results file")
    else:
        name = run_place.relative("timings", SEED_TUNED)
        tamper(place(kept, commits[0]), name, member(place(kept, commits[0]), name)[:-20])
        words = (place(kept, commits[0]).bundle / name, f"damaged (not the file the run of {commits[0][:12]} kept)")
    calls = history_stand_in(monkeypatch)
    one_line(check_from(cli, repo, kept, out), *words)
    assert calls == [] and not (out / "report").exists()


@pytest.mark.slow
def test_a_kept_history_through_a_link_is_read_where_it_lies(cli, runs, tmp_path, monkeypatch):
    """DIR given through a symbolic link is the directory it points to, resolved once: its results
    and the side data beside them (not beside the link) are read, and that directory is named."""
    _, repo, commits = runs
    kept = kept_history(runs, tmp_path / "real" / "tvm-main")
    link = tmp_path / "reports" / "tvm-main"
    link.parent.mkdir()
    link.symlink_to(kept)
    (link.parent / "runs").mkdir()  # side data beside the link: not read
    out = candidate_out(runs, tmp_path / "check")
    calls = history_stand_in(monkeypatch)
    done = check_from(cli, repo, link, out, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and calls == [[commits[1]]]
    facts = json.loads(done.stdout)
    assert facts["baseline_from"]["history"] == str(kept) and facts["baseline"]["hash"] == commits[0]
    assert f"kept in {kept} (machine " in done.stderr


def test_an_out_inside_the_kept_history_is_refused(cli, tmp_path, monkeypatch):
    """--out is where the check measures the candidate; a kept history is only read: an --out that
    is the kept history, lies inside it, or is it through a link, is one line before any work; so
    is a --baseline that names the candidate."""
    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    kept = tmp_path / "tvm-main"
    (kept / "results").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(kept)
    calls = history_stand_in(monkeypatch)
    for out in (kept, kept / "check", link, link / "check"):
        one_line(check_from(cli, repo, kept, out, candidate=commits[1]),
                 f"--out {out} is inside the kept history --baseline-from {kept} ({kept})", "give another --out")
    one_line(check_from(cli, repo, kept, tmp_path / "out", "--baseline", commits[1][:10], candidate=commits[1]),
             f"the baseline {commits[1][:10]} is the candidate {commits[1]}")
    assert calls == [] and sorted(p.name for p in kept.rglob("*")) == ["results"]


def test_an_empty_baseline_from_is_an_error(cli, tmp_path, monkeypatch):
    """An empty path never means the working directory: one line, exit 2, before anything runs."""
    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    calls = history_stand_in(monkeypatch)
    for empty in ("", "  "):
        one_line(check_from(cli, repo, empty, tmp_path / "out", candidate=commits[1]),
                 "argument --baseline-from: an empty path")
    assert calls == [] and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_baseline_the_kept_history_or_the_clone_lacks(cli, runs, tmp_path, monkeypatch):
    """--baseline naming a commit the kept history has no results of; a kept history of the
    candidate alone; a kept baseline that is not in --tvm-repo (a clone older than the history):
    one line each, naming what is missing."""
    from asv_runs import _git

    _, repo, commits = runs
    kept = kept_history(runs, tmp_path / "tvm-main")
    out = candidate_out(runs, tmp_path / "check")
    calls = history_stand_in(monkeypatch)
    only_candidate = kept_history(runs, tmp_path / "candidate-only")
    for path in (only_candidate / "results").glob(f"*/{commits[0][:8]}-*.json"):
        path.unlink()
    place(only_candidate, commits[0]).bundle.unlink()
    one_line(check_from(cli, repo, only_candidate, out),
             f"the kept history {only_candidate} has no results of any commit other than the candidate "
             f"{commits[1][:10]}: it holds v9.9.0")
    one_line(check_from(cli, repo, only_candidate, out, "--baseline", commits[0][:10]),
             f"the kept history {only_candidate} has no results of the baseline {commits[0][:10]}: it holds v9.9.0")
    other = tmp_path / "other-tvm"
    other.mkdir()
    _git(other, "init", "-q", "-b", "main")
    _git(other, "commit", "-q", "--allow-empty", "-m", "another history", date="2026-09-01T12:00:00+00:00")
    _git(other, "tag", "v9.9.0")
    one_line(check_from(cli, other, kept, out),
             f"the baseline {commits[1][:10]} of the kept history {kept} is not in --tvm-repo {other}")
    assert calls == []
