"""Which TVM a commit is: a tagged apache-tvm release (wheel + its ffi) or a source build; a
clone's release tags, commits and commit times read once (:class:`Releases`, what `check` asks).

No TVM import here: this module runs in the asv environment before TVM is installed.

The ffi table: every apache-tvm wheel depends on ``apache-tvm-ffi>=X`` with no upper bound, so
pip pairs an old TVM with the newest ffi, and 0.25.0 then fails to import (undefined symbol in
``libtvm_runtime.so``). Each release is pinned to the ffi of its own time. How the table was
found (2026-11, see ``FFI_EVIDENCE``): the pin is each wheel's own ``Requires-Dist`` lower bound
(``apache-tvm-ffi>=0.1.12`` in 0.25.x, ``>=0.1.13.post2`` in 0.26.0, ``>=0.1.14.post0`` in 0.27.x),
the ffi the release was built against: each was the newest ffi on the index a few days before
its TVM release (0.1.13.post2 on 2026-08-04, 0.26.0 on 08-11; 0.1.14.post0 on 09-16, 0.27.0 on
09-25). An import + compile + run smoke test of each release in a throwaway venv with the ffi
releases 0.1.12, 0.1.13.post2/.post3, 0.1.14.post0 and 0.1.15.post2 passed for every pin and
showed 0.25.x working with 0.1.12 only; 0.1.15.post2 is avoided for 0.27 (seen to segfault in
``tvm.ir.save_json`` and MetaSchedule tuning).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from suite.errors import UserError
from suite.git import git


@dataclass(frozen=True)
class Release:
    version: str  #: apache-tvm version on the package index
    ffi: str  #: the apache-tvm-ffi release that goes with it
    requires_ffi: str  #: the wheel's own Requires-Dist lower bound
    published: str  #: when its first file reached the package index (pypi.org's upload_time, UTC)

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    def requirements(self) -> list[str]:
        """pip requirements that install this release."""
        return [f"apache-tvm=={self.version}", f"apache-tvm-ffi=={self.ffi}"]


#: apache-tvm releases on the package index and the ffi release each one is installed with.
RELEASES: dict[str, Release] = {
    r.version: r
    for r in (
        Release("0.25.0", ffi="0.1.12", requires_ffi="0.1.12", published="2026-06-19T19:03:32Z"),
        Release("0.25.0.post1", ffi="0.1.12", requires_ffi="0.1.12", published="2026-06-24T23:33:15Z"),
        Release("0.26.0", ffi="0.1.13.post2", requires_ffi="0.1.13.post2", published="2026-08-11T02:34:10Z"),
        Release("0.27.0", ffi="0.1.14.post0", requires_ffi="0.1.14.post0", published="2026-09-25T20:33:38Z"),
        Release("0.27.0.post1", ffi="0.1.14.post0", requires_ffi="0.1.14.post0", published="2026-09-29T21:06:11Z"),
    )
}

#: What the throwaway-venv smoke test (import TVM, build and run a TE kernel; 2026-11, Python
#: 3.11) gave per release and ffi: "ok" or the error. Kept so the table's evidence travels with it.
_UNDEFINED = "OSError: libtvm_runtime.so: undefined symbol tvm::ffi::json::Stringify"
_SHALLOW = "TypeError: __ffi_shallow_copy__ must be an ffi.Function"
FFI_EVIDENCE: dict[str, dict[str, str]] = {
    **{v: {"0.1.12": "ok", "0.1.13.post2": _UNDEFINED, "0.1.13.post3": _UNDEFINED,
           "0.1.14.post0": _UNDEFINED, "0.1.15.post2": _UNDEFINED} for v in ("0.25.0", "0.25.0.post1")},
    "0.26.0": {"0.1.12": _UNDEFINED, "0.1.13.post2": "ok", "0.1.13.post3": "ok", "0.1.14.post0": "ok",
               "0.1.15.post2": "ok"},
    # 0.1.15.post2 passes the smoke test but was seen to segfault in tvm.ir.save_json and in
    # MetaSchedule tuning with 0.27.x, so 0.27 stays on 0.1.14.post0.
    **{v: {"0.1.12": _UNDEFINED, "0.1.13.post2": _SHALLOW, "0.1.13.post3": _SHALLOW, "0.1.14.post0": "ok",
           "0.1.15.post2": "ok"} for v in ("0.27.0", "0.27.0.post1")},
}

_RELEASE_TAG = re.compile(r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$")


class UnknownRelease(UserError):
    pass


def release(version: str) -> Release:
    """The release of an apache-tvm version ("0.25.0" or "v0.25.0")."""
    name = version[1:] if version.startswith("v") else version
    try:
        return RELEASES[name]
    except KeyError:
        raise UnknownRelease(
            f"unknown apache-tvm release {version!r}; known: {', '.join(RELEASES)}") from None


def release_for_tag(tag: str) -> Release | None:
    """The release a git tag names (``v0.25.0`` -> 0.25.0); None for rc/dev/other tags."""
    tag = tag.removeprefix("refs/tags/")
    match = _RELEASE_TAG.match(tag)
    if match is None:
        return None
    return RELEASES.get(match.group(1))


# ----------------------------------------------------------------------------- git


def check_repo(repo: Path) -> Path:
    repo = Path(repo).expanduser()
    if not repo.is_dir() or not git(repo, "rev-parse", "--git-dir", check=False):
        raise UserError(f"--tvm-repo {repo} is not a git repository")
    return repo.resolve()


def tag_commit(repo: Path, tag: str) -> str | None:
    """The commit a tag points at (``refs/tags/`` spelled out: release branches share names)."""
    return git(repo, "rev-parse", "--verify", "-q", f"refs/tags/{tag}^{{commit}}", check=False) or None


def commit_of(repo: Path, name: str) -> str:
    """Full hash of a commit name, or UserError."""
    found = git(repo, "rev-parse", "--verify", "-q", f"{name}^{{commit}}", check=False)
    if not found:
        raise UserError(f"{repo} has no commit {name!r}")
    return found


def resolve_releases(repo: Path, versions: list[str]) -> list[tuple[Release, str]]:
    """(release, commit hash) of each version, from the tags ``v<version>`` of a TVM clone."""
    resolved = []
    for version in versions:
        rel = release(version.strip())
        commit = tag_commit(repo, rel.tag)
        if commit is None:
            raise UserError(
                f"{repo} has no tag {rel.tag} (apache-tvm {rel.version} is on the package index; "
                f"fetch the tag into the clone: git fetch origin tag {rel.tag})")
        resolved.append((rel, commit))
    return resolved


def resolve_range(repo: Path, spec: str) -> list[str]:
    """Hashes of ``A..B`` along B's first-parent line, oldest first (as asv walks a branch)."""
    if ".." not in spec or spec.count("..") != 1 or "..." in spec:
        raise UserError(f"--range {spec!r} is not of the form A..B")
    start, end = spec.split("..")
    if not start or not end:
        raise UserError(f"--range {spec!r} is not of the form A..B")
    a, b = commit_of(repo, start), commit_of(repo, end)
    hashes = git(repo, "rev-list", "--first-parent", "--reverse", f"{a}..{b}").split()
    if not hashes:
        raise UserError(f"--range {spec}: no commits between {start} and {end}")
    return hashes


def release_for_commit(repo: Path, commit: str) -> Release | None:
    """The newest known release whose tag points at ``commit``, if any."""
    found = [rel for tag in git(repo, "tag", "--points-at", commit, check=False).split()
             if (rel := release_for_tag(tag)) is not None]
    return max(found, key=lambda r: list(RELEASES).index(r.version)) if found else None


class Releases:
    """The apache-tvm releases a TVM clone tags, and the commits a command names there, each
    resolved in git once: which commit a name is, which release a commit is, when each was
    committed, and which of two comes after the other in TVM's history (what `check` asks)."""

    def __init__(self, repo: Path, tagged: dict[str, Release], times: dict[str, tuple[int, str]]):
        self.repo = repo
        self._tagged = tagged  #: commit -> the newest known release tagged there
        self._times = times  #: commit -> (commit time, its day YYYY-MM-DD)

    @classmethod
    def of(cls, tvm_repo: Path) -> Releases:
        """The release tags of the clone ``tvm_repo`` (``refs/tags/v<version>`` of a known release,
        peeled to their commits) and those commits' times."""
        repo = check_repo(tvm_repo)
        tagged: dict[str, Release] = {}
        for line in git(repo, "for-each-ref", "refs/tags/v*",
                        "--format=%(refname) %(objecttype) %(objectname) %(*objecttype) %(*objectname)").splitlines():
            tag, *objects = line.split()
            commits = [name for kind, name in zip(objects[::2], objects[1::2]) if kind == "commit"]
            rel = release_for_tag(tag)
            if rel is None or not commits:
                continue
            known = tagged.get(commits[0])
            if known is None or list(RELEASES).index(rel.version) > list(RELEASES).index(known.version):
                tagged[commits[0]] = rel
        return cls(repo, tagged, _commit_times(repo, list(tagged)))

    def commit(self, name: str) -> str:
        """The full hash of a tag or commit of the clone (UserError where it has none), its time
        read with it."""
        found = commit_of(self.repo, name)
        if found not in self._times:
            self._times.update(_commit_times(self.repo, [found]))
        return found

    def release(self, commit: str) -> Release | None:
        """The newest known release whose tag points at ``commit``, if any."""
        return self._tagged.get(commit)

    def day(self, commit: str) -> str:
        """The day ``commit`` was committed (YYYY-MM-DD)."""
        return self._times[commit][1]

    def newest_release_before(self, candidate: str) -> str:
        """The newest known release whose tagged commit was committed before ``candidate`` (and is
        not it)."""
        when = self._times[candidate][0]
        older = [(self._times[commit][0], commit) for commit in self._tagged
                 if commit != candidate and self._times[commit][0] < when]
        if not older:
            raise UserError(f"no apache-tvm release older than {candidate[:12]} in {self.repo}: name one with "
                            "--baseline")
        return max(older)[1]

    def newer(self, commit: str, than: str) -> bool:
        """Whether ``commit`` comes after ``than`` in TVM's history: a descendant of it, else (on
        branches apart) committed later."""
        base = git(self.repo, "merge-base", commit, than, check=False)
        return base == than or (base != commit and self._times[commit][0] > self._times[than][0])


def _commit_times(repo: Path, commits: list[str]) -> dict[str, tuple[int, str]]:
    """commit -> (commit time, its day YYYY-MM-DD) of full hashes, in one git command."""
    if not commits:
        return {}
    times = {}
    for line in git(repo, "show", "-s", "--format=%H %ct %cs", *commits).splitlines():
        commit, stamp, day = line.split()
        times[commit] = (int(stamp), day)
    return times


def submodule_names(repo: Path, commits: list[str]) -> list[str]:
    """Names of the submodules any of ``commits`` declares in its .gitmodules."""
    names: set[str] = set()
    for commit in commits:
        text = git(repo, "show", f"{commit}:.gitmodules", check=False)
        names.update(re.findall(r'^\s*\[submodule "([^"]+)"\]', text, flags=re.M))
    return sorted(names)
