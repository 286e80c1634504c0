"""The release resolver: tag -> apache-tvm release, the ffi pin, the source-build fallback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from suite.asv_plumbing import install_tvm, releases
from suite.history import commits
from suite.errors import UserError

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def git(repo, *args, date=None):
    env = {**os.environ}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo, message, date):
    git(repo, "commit", "-q", "--allow-empty", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD")


def start_stand_in(tmp_path):
    """A repository standing in for TVM: main's first commit m1, and the 0.25.0 release cut
    from it on its own branch (tag v0.25.0, as in apache/tvm); left on main."""
    repo = tmp_path / "tvm"
    repo.mkdir()
    git(repo, "init", "-q")
    c = {"m1": commit(repo, "m1", "2026-06-01T00:00:00")}
    git(repo, "checkout", "-q", "-b", "v0.25.0")
    c["r25"] = commit(repo, "release 0.25.0", "2026-06-17T00:00:00")
    git(repo, "tag", "v0.25.0")
    git(repo, "checkout", "-q", "main")
    return repo, c


@pytest.fixture
def fake_tvm(tmp_path):
    """main: m1 - m2 - m3; release branches cut from it, tags on the branches (as in apache/tvm)."""
    repo, c = start_stand_in(tmp_path)
    git(repo, "tag", "v0.25.0.rc1", c["r25"])
    c["m2"] = commit(repo, "m2", "2026-07-01T00:00:00")
    git(repo, "tag", "v0.26.dev0")
    git(repo, "checkout", "-q", "-b", "v0.26.0")
    c["r26"] = commit(repo, "release 0.26.0", "2026-08-05T00:00:00")
    git(repo, "tag", "v0.26.0")
    git(repo, "checkout", "-q", "main")
    c["m3"] = commit(repo, "m3", "2026-08-20T00:00:00")
    return repo, c


def test_tags_name_releases():
    assert releases.release_for_tag("v0.25.0").version == "0.25.0"
    assert releases.release_for_tag("refs/tags/v0.25.0.post1").version == "0.25.0.post1"
    assert releases.release_for_tag("v0.27.0.post1").version == "0.27.0.post1"
    for tag in ("v0.25.0.rc1", "v0.27.dev0", "v0.24.0", "0.25.0", "nightly"):
        assert releases.release_for_tag(tag) is None, tag
    assert releases.release("v0.26.0") is releases.RELEASES["0.26.0"]
    with pytest.raises(UserError, match="unknown apache-tvm release '0.24.0'"):
        releases.release("0.24.0")


def test_ffi_pins():
    pins = {v: r.ffi for v, r in releases.RELEASES.items()}
    assert pins == {"0.25.0": "0.1.12", "0.25.0.post1": "0.1.12", "0.26.0": "0.1.13.post2",
                    "0.27.0": "0.1.14.post0", "0.27.0.post1": "0.1.14.post0"}
    for rel in releases.RELEASES.values():
        assert Version(rel.ffi) >= Version(rel.requires_ffi)  # the wheel's own Requires-Dist holds
        assert rel.requirements() == [f"apache-tvm=={rel.version}", f"apache-tvm-ffi=={rel.ffi}"]
        assert releases.FFI_EVIDENCE[rel.version][rel.ffi] == "ok"  # the pin passed the smoke test
    assert [f for f, r in releases.FFI_EVIDENCE["0.25.0"].items() if r == "ok"] == ["0.1.12"]
    # The newest ffi breaks 0.25 (undefined symbol); never pin it.
    assert all(Version(r.ffi) < Version("0.1.15") for r in releases.RELEASES.values())
    # The suite's own default TVM uses the same pin as the table.
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert f'"apache-tvm-ffi=={releases.RELEASES["0.27.0.post1"].ffi}"' in pyproject


def test_resolves_release_tags_not_same_named_branches(fake_tvm):
    repo, c = fake_tvm
    resolved = releases.resolve_releases(repo, ["0.26.0", "0.25.0"])
    assert [(r.version, h) for r, h in resolved] == [("0.26.0", c["r26"]), ("0.25.0", c["r25"])]
    with pytest.raises(UserError, match="has no tag v0.27.0"):
        releases.resolve_releases(repo, ["0.27.0"])
    assert releases.release_for_commit(repo, c["r25"]).version == "0.25.0"  # not the rc tag
    assert releases.release_for_commit(repo, c["m2"]) is None  # a .dev0 tag is no release


def test_history_commits_are_sorted_by_date(fake_tvm):
    repo, c = fake_tvm
    found = commits.history_commits(repo, ["0.26.0", "0.25.0"], None)
    assert [(x.label, x.commit, x.release) for x in found] == [
        ("0.25.0", c["r25"], "0.25.0"), ("0.26.0", c["r26"], "0.26.0")]
    ranged = commits.history_commits(repo, None, f"{c['m1']}..main")
    assert [x.commit for x in ranged] == [c["m2"], c["m3"]] and all(x.release is None for x in ranged)
    with pytest.raises(UserError, match="not of the form A..B"):
        commits.history_commits(repo, None, "main")
    with pytest.raises(UserError, match="no commit 'nosuch'"):
        commits.history_commits(repo, None, "nosuch..main")
    with pytest.raises(UserError, match="no commits between"):
        commits.history_commits(repo, None, "main..main")
    with pytest.raises(UserError, match="not a git repository"):
        commits.history_commits(repo / "missing", ["0.25.0"], None)


def test_install_tvm_picks_wheel_or_source(fake_tvm, tmp_path):
    repo, c = fake_tvm
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({c["m3"]: "0.26.0"}))
    assert install_tvm.release_of(c["m3"], tmp_path / "none", mapping).version == "0.26.0"
    assert install_tvm.release_of(c["r25"], repo, None).version == "0.25.0"  # from the checkout's tags
    assert install_tvm.release_of(c["m2"], repo, mapping) is None


def test_install_tvm_failure_is_one_line_and_nonzero(fake_tvm, tmp_path):
    repo, c = fake_tvm
    result = subprocess.run([sys.executable, "-m", "suite.asv_plumbing.install_tvm", "--commit", c["m3"], "--checkout",
                             str(repo), "--build-root", str(tmp_path / "b")], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"install_tvm: {c['m3'][:12]}: no pyproject.toml in the checkout {repo}: TVM's Python build needs one"]


def test_submodules_are_listed_for_the_checkout_switch(fake_tvm):
    repo, c = fake_tvm
    git(repo, "checkout", "-q", "main")
    (repo / ".gitmodules").write_text('[submodule "3rdparty/tvm-ffi"]\n\tpath = 3rdparty/tvm-ffi\n'
                                      '\turl = https://github.com/apache/tvm-ffi\n')
    git(repo, "add", ".gitmodules")
    head = commit(repo, "modules", "2026-09-01T00:00:00")
    assert releases.submodule_names(repo, [c["m1"], head]) == ["3rdparty/tvm-ffi"]
    env = commits.no_submodules_env(repo, [head])
    assert env == {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "submodule.3rdparty/tvm-ffi.update",
                   "GIT_CONFIG_VALUE_0": "none"}


def test_cli_bad_input_is_one_line(cli, fake_tvm, tmp_path):
    repo, c = fake_tvm
    cases = [
        (["--releases", "0.24.0"], "unknown apache-tvm release '0.24.0'"),
        (["--releases", "0.27.0"], "has no tag v0.27.0"),
        (["--range", "nosuch..main"], "has no commit 'nosuch'"),
    ]
    for extra, message in cases:
        result = cli("history", "--tvm-repo", str(repo), *extra, "--out", str(tmp_path / "o"))
        assert result.returncode == 2 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], result.stderr
    result = cli("history", "--tvm-repo", str(tmp_path), "--releases", "0.25.0")
    assert result.returncode == 2 and "is not a git repository" in result.stderr


def test_corrupt_results_are_refused(cli, fake_tvm, tmp_path):
    repo, c = fake_tvm
    bad = tmp_path / "o" / "results" / "vm" / "0123abcd-env.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"commit_hash": "0123abcd", "results": {')
    result = cli("history", "--tvm-repo", str(repo), "--releases", "0.25.0", "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"corrupt asv result file {bad}" in lines[0]


def test_the_first_note_of_a_commits_build_stays_and_reinstalls_are_listed(tmp_path):
    """asv installs a run's first commit again to find the benchmarks: the note of the build that
    was measured is not replaced by the seconds of a ccache rebuild."""
    note = tmp_path / "c0ffee.build.json"
    install_tvm.note_build(note, {"kind": "source", "build_s": 5507.0})
    install_tvm.note_build(note, {"kind": "source", "build_s": 23.2})
    install_tvm.note_build(note, {"kind": "source", "build_s": 21.0})
    assert json.loads(note.read_text()) == {"kind": "source", "build_s": 5507.0, "reinstalls": [
        {"kind": "source", "build_s": 23.2}, {"kind": "source", "build_s": 21.0}]}
    note.write_text("[not a note]")
    install_tvm.note_build(note, {"kind": "wheel", "build_s": 7.0})
    assert json.loads(note.read_text()) == {"kind": "wheel", "build_s": 7.0}
