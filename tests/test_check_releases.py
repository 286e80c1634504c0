"""The releases object `check` asks (issue 43): the release tags of a TVM clone, their commits and
commit times read from git once, then which release a commit is, the newest release before a
candidate and which of two commits comes first, answered from what was read."""

import pytest

from suite.jobs import check
from suite.asv_plumbing import releases
from suite.errors import UserError
from test_releases import fake_tvm, git  # noqa: F401 (fake_tvm: a fixture)


def test_it_answers_checks_questions(fake_tvm):
    repo, c = fake_tvm
    git(repo, "tag", "-a", "v0.25.0.post1", "-m", "an annotated tag", c["r25"])
    tvm = releases.Releases.of(repo)
    assert tvm.commit("v0.26.0") == c["r26"]  # the tag, not the release branch of the same name
    assert tvm.release(c["r25"]).version == "0.25.0.post1"  # the newest release tagged there, annotated
    assert tvm.release(c["m2"]) is None  # a .dev0 tag is no release
    assert tvm.commit(c["m3"][:10]) == c["m3"] and tvm.day(c["m3"]) == "2026-08-20"
    assert tvm.newest_release_before(c["m3"]) == c["r26"]
    assert tvm.newest_release_before(c["r26"]) == c["r25"]  # never the candidate itself
    with pytest.raises(UserError, match="no apache-tvm release older than"):
        tvm.newest_release_before(tvm.commit(c["m1"]))
    assert tvm.newer(c["m3"], c["m2"]) and not tvm.newer(c["m2"], c["m3"])  # a descendant
    assert tvm.newer(c["r26"], c["m2"]) and not tvm.newer(c["m2"], c["r26"])  # branches apart: by time
    with pytest.raises(UserError, match="has no commit 'nosuch'"):
        tvm.commit("nosuch")


def test_tags_and_times_are_read_once(fake_tvm, monkeypatch):
    """Check's questions cost git commands only for what it names: the clone's release tags and
    their times are read together, every answer after that comes from them."""
    repo, c = fake_tvm
    ran = []

    def counted(where, *args, **kwargs):
        ran.append(args[0])
        return git_command(where, *args, **kwargs)

    git_command = releases.git
    monkeypatch.setattr(releases, "git", counted)
    tvm = releases.Releases.of(repo)
    assert ran == ["rev-parse", "for-each-ref", "show"]  # the clone checked, its tags, their times
    ran.clear()
    candidate, baseline = tvm.commit(c["m3"]), tvm.commit("v0.26.0")
    assert ran == ["rev-parse", "show", "rev-parse"]  # a tagged commit's time is known already
    ran.clear()
    assert tvm.newest_release_before(candidate) == baseline and tvm.release(baseline).version == "0.26.0"
    assert ran == []
    sides = [check.Side("baseline", baseline, "v0.26.0", tvm.release(baseline)),
             check.Side("candidate", candidate, "m3", None)]
    assert check.newer_baseline(tvm, *sides) == ""
    assert check.newer_baseline(tvm, *sides[::-1]) == (
        f"the baseline m3 ({c['m3'][:10]}) of 2026-08-20 is newer than the candidate v0.26.0 ({c['r26'][:10]}) of "
        "2026-08-05: the check compares backwards in TVM's history")
    assert ran == ["merge-base", "merge-base"]
