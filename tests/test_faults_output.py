"""Output contracts, beside the faults of test_faults.py: what a command prints where, and what it
leaves of a user's files.

- pure JSON per command: with ``--json``, stdout is one JSON document (``json.loads`` reads it
  whole) and everything for people (the plan, progress, tables) is on stderr; an expected failure
  is ``{"error", "exit_status"}`` there, beside its one line on stderr;
- a replaced file: ``run --out`` over an ``html/`` the suite did not publish is refused (one line
  naming it, exit 2) and the user's files are left as they were, while a rerun replaces what a run
  published; ``tune`` without ``--into-checkout`` leaves the committed records byte for byte;
- report's exit: ``report`` exits with the verdict its last line prints;
- asv at the root: a missing ``./tvm`` or a commit it lacks is one line (exit 2), ``asv publish``
  gives pages that work offline, and root asv and ``tvm-suite run`` keep apart their results and
  pages.

Each kind is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases`` keeps
the table and the tests together. Real runs are one tiny workload (the 7x7x2048 mean, float32,
orders default and tuned) on a repository standing in for TVM, made once per session.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from asv_runs import member, place, plant, plant_file, plant_samples, two_commit_repo
from conftest import check_fault_table, made_once, run_cli, run_in_process
from test_tuning import committed_digests, tuned_into_home, users_records

MEAN = "resnet50.mean.7x7x2048"
IDS = (MEAN, "float32", "llvm", "default")
TUNED = (MEAN, "float32", "llvm", "tuned")
TINY = ("--quick", "--workloads", MEAN, "--dtypes", "float32")  # orders default and tuned

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "pure JSON per command": ["test_list_and_measure_json_is_pure", "test_run_json_is_pure",
                              "test_gate_json_is_pure", "test_check_json_is_pure", "test_bisect_json_is_pure",
                              "test_triage_json_is_pure", "test_an_expected_failure_under_json_is_json",
                              "test_every_command_with_json_is_covered",
                              "test_what_children_and_c_code_write_goes_to_stderr_too"],
    "a replaced file": ["test_run_refuses_an_html_it_did_not_publish_and_replaces_its_own",
                        "test_tune_leaves_the_committed_records_byte_identical"],
    "report's exit": ["test_report_exits_with_the_verdict_it_prints"],
    "asv at the root": ["test_root_asv_says_a_missing_clone_and_an_unknown_commit_in_one_line",
                        "test_root_asv_publishes_offline_apart_from_run"],
}

#: the commands whose --json each case above covers
COVERED = {"list", "measure", "run", "gate", "check", "bisect", "triage", "fuzz", "model"}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


def pure_json(result, status=0):
    """The one JSON document on stdout of ``result``, checked: the exit status, no traceback."""
    assert result.returncode == status, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return json.loads(result.stdout)  # the whole of it: one document, nothing before or after


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(run dir, repo, [old, new], the second run's CompletedProcess): two real `tvm-suite run`s of
    the 7x7x2048 mean on two commits of a stand-in repository, the second with --json; then the
    second's timing samples made the first's (the same kernel), so no gate finds a suspect by chance."""

    def make(base):
        repo = base / "tvm"
        commits = two_commit_repo(repo)
        out = base / "asv"
        done = []
        for commit, extra in zip(commits, ([], ["--json"])):
            result = run_cli("run", *TINY, "--out", str(out), "--tvm-repo", str(repo), "--tvm-commit", commit, *extra,
                             env={"HOME": str(base)})
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            done.append({"returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr})
        # the same kernel at both commits: the newer one's samples made the older one's, so that no
        # latency suspect (noise of a busy machine) turns a later gate into no verdict
        from suite.core import run_place

        for ids in (IDS, TUNED):
            kept = member(place(out, commits[0]), run_place.relative("timings", ids))
            plant_samples(out, commits[1], ids, json.loads(kept)["samples_s"])
        return [str(out), str(repo), commits, done[1]]

    out, repo, commits, second = made_once(tmp_path_factory, "output-contract-runs", make)
    return Path(out), Path(repo), commits, subprocess.CompletedProcess(["tvm-suite", "run"], **second)


def copy_of(tiny, where):
    out, _, _, _ = tiny
    shutil.copytree(out, where, ignore=shutil.ignore_patterns("env*"))
    return where


# ----------------------------------------------------------------------------- pure JSON per command


def test_list_and_measure_json_is_pure():
    listed = pure_json(run_cli("list", "--model", "seed", "--json"))
    assert [w["id"] for w in listed] == ["seed.conv2d_nhwc_7x7s2"]
    record = pure_json(run_cli("measure", "--workload", MEAN, "--dtype", "float32", "--json"))
    assert record["status"] == "ok" and record["latency"]["median_s"] > 0


@pytest.mark.slow
def test_run_json_is_pure(tiny):
    """A process of its own (what it and its children write to file descriptor 1 included)."""
    _, _, commits, second = tiny
    facts = pure_json(second)
    assert facts["commit"] == commits[1] and facts["verdict"] == "READY" and facts["exit_status"] == 0
    assert facts["combinations"] == {"ok": 2, "skipped": 0, "failed": 0}
    # what the run says for people: on stderr, all of it, the table and the verdict's line included
    assert "measuring 1 workloads" in second.stderr and "asv's own HTML: " in second.stderr
    assert second.stderr.rstrip().endswith(facts["line"])  # the verdict's line ends what people read


@pytest.mark.slow
def test_gate_json_is_pure(tiny):
    out, repo, commits, _ = tiny
    facts = pure_json(run_cli("gate", "--results", str(out / "results"), "--commit", commits[1], "--tvm-repo",
                              str(repo), "--json"))
    assert facts["verdict"] == "READY" and facts["exit_status"] == 0 and facts["candidate"]["hash"] == commits[1]


@pytest.mark.slow
def test_check_json_is_pure(cli, tiny, tmp_path, monkeypatch):
    """`check` on kept results (history measures nothing, as with every result there: the stand-in
    prints as it would): the plan, history's words, the table: stderr; the verdict: stdout."""
    from suite.asv_plumbing import driver
    from suite.history import commits as history

    _, repo, commits, _ = tiny
    out = copy_of(tiny, tmp_path / "check")

    def stand_in(*args, **kwargs):
        print("history: every result kept (stand-in)")
        return driver.RunSummary("history: every result kept (stand-in)", 0)

    monkeypatch.setattr(history, "run_history", stand_in)
    done = cli("check", commits[1], "--baseline", commits[0], "--tvm-repo", str(repo), "--out", str(out), "--json")
    facts = pure_json(done)
    assert facts["verdict"] == "READY" and facts["exit_status"] == 0 and facts["plan"]
    assert "release readiness check of" in done.stderr and "history: every result kept" in done.stderr


def test_bisect_json_is_pure(cli, tmp_path, monkeypatch):
    """asv find, its install and its judge stood in for (test_bisect.py runs the real one): what
    bisect prints on the way goes to stderr; the answer alone, with its exit status, to stdout, for
    each of its three answers."""
    from suite.asv_plumbing import driver
    from suite.history import bisect, commits as history
    from suite.core import run_bundle

    repo = tmp_path / "tvm"
    c0, c1 = two_commit_repo(repo)
    log = tmp_path / "find.log"
    log.write_text("")
    monkeypatch.setattr(history, "prepare", lambda *a, **k: type("Ready", (), {
        "config": tmp_path / "asv.json", "log": log, "machine_args": [], "machine": "m", "context": None})())

    def asv_find(config, *args, log, phase=None, context=None):
        with log.open("a") as handle:
            handle.write(f"For tvm commit {c1[:8]}:\nGreatest regression found: {c1[:8]}\n")
        print("asv: stand-in output")
        return 0

    monkeypatch.setattr(driver, "asv", asv_find)
    monkeypatch.setattr(run_bundle, "seal", lambda place: None)
    args = ("bisect", "--tvm-repo", str(repo), "--range", f"{c0}..{c1}", "--workload", MEAN, "--dtype", "float32",
            "--metric", "ulp_mean", "--out", str(tmp_path / "out"), "--json")
    for answer, status, verdict in ((bisect.Answer(c1, c0, 1.0, 2.0, "2x", []), 0, "first bad commit"),
                                    (bisect.Answer(None, c0, 1.0, 1.0, "1x: not worse", []), 3, "nothing worsened"),
                                    (bisect.Answer(None, None, None, None, "no value there", [], undecided=True), 2,
                                     "no verdict")):
        monkeypatch.setattr(bisect, "judge", lambda *a, answer=answer, **k: answer)
        done = cli(*args)
        facts = pure_json(done, status)
        assert facts["verdict"] == verdict and facts["exit_status"] == status and facts["first_bad"] == answer.culprit
        assert "bisecting ulp_mean" in done.stderr and "asv find named" in done.stderr


def test_triage_json_is_pure():
    from test_triage import CASES

    done = run_cli("triage", str(CASES / "stencil_oob.py"), str(CASES / "stencil_oob.py"), "--json")
    report = pure_json(done, 13)
    assert report["verdict"] == "UNDEFINED"


def test_an_expected_failure_under_json_is_json(tmp_path):
    """One line on stderr, as ever, and on stdout the document a script reads instead of a verdict."""
    for args in (("gate", "--results", str(tmp_path / "none"), "--commit", "v0", "--json"),
                 ("list", "--model", "vgg16", "--json"),
                 ("model", "--model", "vgg16", "--json"),
                 ("fuzz", "--workloads", "nosuch", "--json"),
                 ("run", *TINY, "--out", str(tmp_path / "afile"), "--json")):
        (tmp_path / "afile").write_text("x")
        done = run_in_process(*args)  # each refused before any work
        facts = pure_json(done, 2)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0] == f"tvm-suite: error: {facts['error']}", done.stderr
        assert facts["exit_status"] == 2


def test_every_command_with_json_is_covered():
    from suite import cli

    with_json = {name for name in cli.COMMANDS
                 if any("--json" in a.option_strings for a in cli.command_parser(name)._actions)}
    assert with_json == COVERED


def test_what_children_and_c_code_write_goes_to_stderr_too():
    """While a --json command works, file descriptor 1 is stderr (a child process, TVM's C++ logs),
    and stdout is back for the document."""
    script = ("import os, subprocess, sys\n"
              "from suite.commands import base\n"
              "print('before', flush=True)\n"
              "with base.for_people_on_stderr():\n"
              "    os.write(1, b'fd 1\\n')\n"
              "    subprocess.run(['echo', 'a child'], check=True)\n"
              "    print('python')\n"
              "    base.say_json({'a': 1}, 0)\n"
              "for text, status in base.json_document:\n"
              "    base.say(text, status)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == 'before\n{\n "a": 1\n}\n'
    assert done.stderr.splitlines() == ["fd 1", "a child", "python"]


# ----------------------------------------------------------------------------- a replaced file


@pytest.mark.slow
def test_run_refuses_an_html_it_did_not_publish_and_replaces_its_own(tiny, tmp_path):
    from suite.asv_plumbing import dashboard

    out = copy_of(tiny, tmp_path / "asv")
    _, repo, commits, _ = tiny
    assert (out / "html" / dashboard.MARKER).is_file()  # the run's own: a rerun replaces it
    rerun = run_cli("run", *TINY, "--out", str(out), "--tvm-repo", str(repo), "--tvm-commit", commits[1],
                    env={"HOME": str(tmp_path)})
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert (out / "html" / "index.html").is_file() and (out / "html" / dashboard.MARKER).is_file()

    mine = tmp_path / "mine"
    (mine / "html").mkdir(parents=True)
    (mine / "html" / "index.html").write_text("<p>my own page</p>")
    refused = run_cli("run", *TINY, "--out", str(mine), env={"HOME": str(tmp_path)})
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"tvm-suite: error: --out: {mine / 'html'} holds files tvm-suite did not publish (no {dashboard.MARKER}), "
        "and asv publish would replace it whole: move it away, or give another --out"]
    assert (mine / "html" / "index.html").read_text() == "<p>my own page</p>"
    assert sorted(p.name for p in mine.iterdir()) == ["html"]  # refused before any work


def _tree_digest(root):
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.longest
@pytest.mark.slow
def test_tune_leaves_the_committed_records_byte_identical(tmp_path_factory):
    """README's tour line, tune without --into-checkout: the record goes to the user's directory,
    which the tuned order then replays; the checkout's records are as they were, byte for byte.
    (The tuning is test_tuning's, made once per session.)"""
    from suite.core import tuning_records

    done = tuned_into_home(tmp_path_factory)
    assert done["returncode"] == 0, done["stdout"][-3000:] + done["stderr"][-3000:]
    mine = users_records(done["home"]) / "traces"
    assert f"records go to {mine}/ (yours: the `tuned` order replays them in place of the committed ones" \
        in done["stdout"]
    assert f"1 record(s) written to {mine}/" in done["stdout"]
    record = json.loads((mine / f"{MEAN}.json").read_text())
    assert record["trials"] == 4 and record["workload"] == MEAN
    assert committed_digests() == done["committed_before"]
    # the user's record is the one that replays now
    env = {k: v for k, v in os.environ.items() if k not in (tuning_records.RECORDS_ENV, "XDG_DATA_HOME")}
    env["HOME"] = done["home"]
    found = subprocess.run([sys.executable, "-c", "from suite.core import tuning_records; "
                            f"print(tuning_records.trace_path('llvm', 'float32', {MEAN!r}))"],
                           capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert found == str(mine / f"{MEAN}.json")


# ----------------------------------------------------------------------------- report's exit


@pytest.mark.slow
def test_report_exits_with_the_verdict_it_prints(tiny, tmp_path):
    _, repo, commits, _ = tiny
    out = copy_of(tiny, tmp_path / "asv")
    ready = run_cli("report", "--results", str(out / "results"), "--out", str(tmp_path / "r0"), "--tvm-repo", str(repo))
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert ready.stdout.strip().splitlines()[-1].endswith("-> exit 0")
    from suite.core import run_place

    # tuned failed to build (its reason kept): NOT READY; default's value gone too: DATA MISSING
    plant_file(out, commits[1], run_place.relative("failures", TUNED), "build failed: planted")
    for ids, status, words in ((TUNED, 1, "NOT READY"), (IDS, 2, "DATA MISSING")):
        plant(out, commits[1], "bench_accuracy.Accuracy.track_ulp_mean", ids, None)
        done = run_cli("report", "--results", str(out / "results"), "--out", str(tmp_path / f"r{status}"),
                       "--tvm-repo", str(repo))
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith(f"verdict: {words}") and last.endswith(f"-> exit {status}"), done.stdout
        assert done.returncode == status and (tmp_path / f"r{status}" / "index.html").is_file(), done.stderr


# ----------------------------------------------------------------------------- asv at the root


def _asv(config_dir, *args, env=None):
    return subprocess.run([sys.executable, "-m", "asv", *args], capture_output=True, text=True, cwd=config_dir,
                          env={**os.environ, **(env or {})})


def test_root_asv_says_a_missing_clone_and_an_unknown_commit_in_one_line(tmp_path):
    """asv with the suite's plugin (as at the root, and in every run's configuration): no traceback,
    the suite's one line, exit 2; a publish refused before asv removes its html_dir."""
    from suite.asv_plumbing import driver

    repo = tmp_path / "tvm"
    commits = two_commit_repo(repo)
    for name, where in (("gone", tmp_path / "gone"), ("here", repo)):
        driver.write_conf(tmp_path, f"asv.{name}.json", where, plugins=[".suite.asv_plumbing.plugin"])
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "keep.txt").write_text("x")
    # asv needs this machine described in HOME (asv machine --yes), which a fresh HOME lacks
    env = {"HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    assert _asv(tmp_path, "--config", str(tmp_path / "asv.here.json"), "machine", "--yes", env=env).returncode == 0
    fix = ("name a hash, branch or tag of that clone (a release tag as refs/tags/vX.Y.Z; a clone made before the "
           "release: git -C tvm fetch --tags)")
    for config, args, line in (
            ("asv.gone.json", ["publish"], "there is no ./gone: asv measures the commits of the TVM clone its "
                                           "configuration names as repo; clone TVM there (git clone "
                                           "https://github.com/apache/tvm gone) or link a clone of yours (ln -s "
                                           "~/src/tvm gone); see docs/asv.md"),
            ("asv.here.json", ["run", "-E", "tvm-suite:same", "--set-commit-hash", "nosuch"],
             f"./tvm has no commit 'nosuch': {fix}"),
            ("asv.here.json", ["continuous", commits[0], "nosuch"], f"./tvm has no commit 'nosuch': {fix}"),
            ("asv.here.json", ["find", f"nosuch..{commits[1]}", "track_ulp_mean"],
             f"./tvm cannot read the range 'nosuch..{commits[1]}' (an end of it is no commit there): {fix}")):
        done = _asv(tmp_path, "--config", str(tmp_path / config), *args, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
        assert done.stderr.strip().splitlines() == [f"tvm-suite: error: {line}"], done.stderr
    assert (tmp_path / "html" / "keep.txt").read_text() == "x"


@pytest.mark.slow
def test_root_asv_publishes_offline_apart_from_run(tiny, tmp_path):
    """README's asv at the root, in a copy of the repository whose ./tvm links to the stand-in clone:
    `tvm-suite run` at its default --out first, then `asv run -E tvm-suite:same` and `asv publish`
    at the root; asv's pages work offline, and neither wrote over the other's results or pages."""
    from suite.asv_plumbing import dashboard, npm_assets
    from test_docs import repository_copy

    _, repo, commits, _ = tiny
    copy = repository_copy(tmp_path / "repo")
    (copy / "tvm").symlink_to(repo)
    env = {"HOME": str(tmp_path)}
    ran = run_cli("run", *TINY, "--out", str(copy / ".asv"), "--tvm-repo", str(repo), "--tvm-commit", commits[1],
                  env=env)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    runs = {name: _tree_digest(copy / ".asv" / name) for name in ("results", "html")}
    grid = {"TVM_SUITE_WORKLOADS": MEAN, "TVM_SUITE_DTYPES": "float32", "TVM_SUITE_ORDERS": "default", **env}
    assert _asv(copy, "machine", "--yes", env=grid).returncode == 0
    done = _asv(copy, "run", "-E", "tvm-suite:same", "--set-commit-hash", commits[0], "-a", "repeat=3", "-a",
                "rounds=1", "-a", "warmup_time=0", env=grid)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    published = _asv(copy, "publish", env=grid)
    said = published.stdout + published.stderr
    assert published.returncode == 0 and "Traceback" not in said and "Couldn't find" not in said, said[-3000:]
    root = copy / ".asv" / "root"
    assert [p.name[:8] for p in (root / "results").glob("*/*.json") if p.name != "machine.json"] == [commits[0][:8]]
    assert {name: _tree_digest(copy / ".asv" / name) for name in ("results", "html")} == runs
    _, problem = npm_assets.obtain(npm_assets.PACKAGES, network=False)
    if problem:  # the session has no libraries at hand (no network is used): said in one line
        assert "tvm-suite: .asv/root/html/index.html needs a network: " in said, said[-3000:]
        pytest.skip(f"asv's dashboard libraries are not here ({problem})")
    assert "tvm-suite: .asv/root/html/index.html (works offline: its 10 scripts and styles come from vendor/" in said
    assert dashboard.check(root / "html") == []
    assert "cdn" not in (root / "html" / "index.html").read_text()
