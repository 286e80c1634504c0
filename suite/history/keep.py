"""A kept history: the results of measured commits and their sealed side data, copied out of a
run directory into one that travels (``reports/tvm-main/``: committed, opened by `tvm-suite report`
and `check --baseline-from` with no build).

What is kept of a commit is its asv results file and its side data as its run sealed it, less the
difference maps (``maps/``: the largest part, and only pictures of divergences the values already
report), in one bundle (``runs/<machine>/<commit>.zip``, see :mod:`suite.core.runstore`): its
members were verified against the run's seal before they are sealed again. A commit is kept
when its side data loads verified, or when its TVM did not build: asv finished it with a null for
every benchmark and no side data, and what is kept is its results file and its build log
(``install-logs/<commit>.log``), so the gap in the series and its cause travel together. How each
commit's TVM was installed (``install-logs/<commit>.build.json``: wheel or source build, its LLVM,
seconds and ccache hits) is kept beside it. One kept already is left as it is when it is the same,
and refused when it differs (a commit measured twice is the user's to choose, never replaced
silently).
Each commit is copied into a staging directory and renamed into place: an interrupted keep leaves
whole commits only.

What a kept history holds beside its commits' side data is sealed too (``runs/.kept.json``, by
:func:`seal`): asv's machine and benchmark files and the build notes and logs. Readers check it
(:func:`verify`): a file edited, missing or added since is one line naming it. A keep checks it
before any work (an edit is never sealed again as kept) and seals what it leaves; a file removed
from the kept history on purpose is the one change a keep takes: it copies the run's file in its
place and seals it. A keep into the history of another machine (its machine file of the same name
another CPU) is refused before any work, naming both.

A kept history says what it is apart from its seal (:func:`signs`): the mark every keep leaves at
its top (``.tvm-suite-kept``), or asv's configuration of its pages (``asv.conf.json``, as
``reports/tvm-main`` has; a run directory's own is ``asv.installed.json`` or ``asv.history.json``).
So a kept history whose seal is missing is refused, never read as a run's own directory with
nothing beside its commits to verify.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from suite import cache
from suite.core import run_bundle, run_journal, run_place, runstore
from suite.errors import UserError

#: Side data a kept history leaves out.
LEFT_OUT = ("maps/",)
#: asv's files of a results directory that describe the run rather than one commit.
ASV_FILES = ("benchmarks.json",)
#: Where a run, and a kept history, hold the build log of each commit (install_tvm's --log-dir).
BUILD_LOGS = "install-logs"
#: The seal of what a kept history holds beside its commits' side data, in its runs/.
SEAL = ".kept.json"
#: The mark a keep leaves at the top of a kept history (written once, never replaced): it says what
#: the directory is where its seal is gone.
MARK = ".tvm-suite-kept"
#: What else at the top of a directory holding results/ says it is a kept history: asv's
#: configuration of its pages (reports/tvm-main and reports/tvm-main-hexagon, kept before the mark).
ASV_PAGES = "asv.conf.json"
#: The facts of asv's machine file that say which machine it is (``os``, the kernel's release, and
#: ``ram`` change on one machine).
MACHINE_FACTS = ("arch", "cpu", "num_cpu")


@dataclass(frozen=True)
class Kept:
    """What :func:`keep` did: the commits copied, those kept already (the same), those whose TVM did
    not build (kept: results and build log), those without sealed side data (not kept), and the
    bytes the kept history holds."""

    copied: tuple[str, ...]
    already: tuple[str, ...]
    unsealed: tuple[str, ...]
    size: int
    failed: tuple[str, ...] = ()

    def text(self, kept_dir: Path) -> str:
        lines = [f"kept in {kept_dir}: {len(self.copied)} commits copied, {len(self.already)} kept already; "
                 f"{self.size / 2**20:.1f} MiB in all"]
        if self.failed:
            lines.append(f"kept without data (TVM did not build; the build log in {BUILD_LOGS}/): "
                         f"{', '.join(c[:12] for c in self.failed)}")
        if self.unsealed:
            lines.append(f"not kept (no sealed side data: a run that did not finish): "
                         f"{', '.join(c[:12] for c in self.unsealed)}")
        return "\n".join(lines)


def check_apart(run_dir: Path, kept_dir: Path, machine: str) -> None:
    """A kept history is a directory of its own, made and writable: not the run's, not inside it,
    not around it, not a file or a link to nothing; and not the history of another machine filed
    under the name ``machine``."""
    given, run_dir, kept_dir = Path(kept_dir), Path(run_dir).resolve(), Path(kept_dir).resolve()
    if kept_dir == run_dir or run_dir in kept_dir.parents or kept_dir in run_dir.parents:
        raise UserError(f"--keep {kept_dir}: give a directory apart from the run's own ({run_dir})")
    if kept_dir.exists() and not kept_dir.is_dir():
        raise UserError(f"--keep {kept_dir}: not a directory")
    _check_same_machine(run_dir, kept_dir, run_place.check_machine(machine))
    cache.ensure_dir(given, "--keep")  # before hours of builds


def _check_same_machine(run_dir: Path, kept_dir: Path, machine: str) -> None:
    """UserError naming both machines where the kept history's machine file of ``machine`` says
    another CPU than this run's (or, before the run wrote one, than asv's description of this one):
    its latency would be filed as this machine's, and judged comparable with it."""
    kept_file = kept_dir / "results" / machine / "machine.json"
    if not kept_file.exists():
        return
    kept = cache.read_json(kept_file)
    if not isinstance(kept, dict):
        raise UserError(f"{kept_file}: damaged (not asv's machine file)")
    here = cache.read_json(run_dir / "results" / machine / "machine.json")
    if not isinstance(here, dict):
        from asv.machine import Machine

        here = Machine.get_defaults()
    if any(kept.get(fact) != here.get(fact) for fact in MACHINE_FACTS):
        raise UserError(f"--keep {kept_dir} holds the history of another machine named {machine} "
                        f"({_described(kept)}: {kept_file}); this machine {machine} is {_described(here)}: keep "
                        "into another directory, or name this machine otherwise (--machine)")


def _described(machine_file: dict) -> str:
    return f"{machine_file.get('cpu')}, {machine_file.get('num_cpu')} CPUs, {machine_file.get('arch')}"


def keep(run_dir: Path, kept_dir: Path, machine: str) -> Kept:
    """Copy every commit of ``machine`` in ``run_dir`` whose side data is sealed into ``kept_dir``."""
    check_apart(run_dir, kept_dir, machine)
    run_dir, kept_dir = Path(run_dir).resolve(), Path(kept_dir).resolve()
    machine = run_place.check_machine(machine)
    # an edit since the last keep is refused, never sealed again as kept; a file removed is taken from the run
    removed = verify(kept_dir, taking=True)
    for name in removed:
        if not _takeable(run_dir / name):
            raise UserError(f"{kept_dir / name}: missing (sealed in {kept_dir / run_place.RUNS / SEAL}), and the run "
                            f"{run_dir} has no {name} to keep in its place: {_restore(kept_dir / name)}")
    source = run_dir / "results" / machine
    commits = sorted({_commit_of(p) for p in source.glob("*-*.json")})
    # A note kept that differs is refused before any commit is copied: a keep is never left half done.
    notes = {commit: _build_note(run_dir, kept_dir, commit) for commit in commits}
    try:
        _copy_missing([(run_dir / name, kept_dir / name) for name in removed])  # the run's, as the user chose
        copied, already, unsealed, failed = _keep_each(run_dir, kept_dir, machine, commits, notes)
        if copied or failed or already:  # also after a keep that stopped half way (damaged run data)
            _copy_if_changed(source / "machine.json", kept_dir / "results" / machine / "machine.json")
            for name in ASV_FILES:
                _copy_if_changed(run_dir / "results" / name, kept_dir / "results" / name)
    finally:  # what this keep wrote beside the commits is sealed, however far it got
        if _beside(kept_dir):
            seal(kept_dir)
    size = sum(p.stat().st_size for p in kept_dir.rglob("*") if p.is_file()) if kept_dir.exists() else 0
    return Kept(tuple(copied), tuple(already), tuple(unsealed), size, tuple(failed))


def _keep_each(run_dir: Path, kept_dir: Path, machine: str, commits: list[str], notes: dict) -> tuple[list, ...]:
    """Keep each commit: (copied, kept already, unsealed, whose TVM did not build)."""
    copied, already, unsealed, failed = [], [], [], []
    for commit in commits:
        place = run_place.Place(run_dir, machine, commit)
        if not place.sealed:
            if not place.dir.exists() and _build_failed(run_dir, machine, commit):
                _keep_failed(run_dir, kept_dir, machine, commit)
                failed.append(commit)
            else:
                unsealed.append(commit)
            continue
        runstore.load(place)  # verified whole before anything is copied (DamagedRunData names the file)
        if _keep_commit(run_dir, kept_dir, machine, commit):
            copied.append(commit)
        else:
            already.append(commit)
        _copy_missing(notes[commit])
    return copied, already, unsealed, failed


def _commit_of(results_file: Path) -> str:
    """The commit of an asv results file (its name has the hash's first 8 characters only)."""
    try:
        return run_place.check_commit(json.loads(results_file.read_text()).get("commit_hash"), str(results_file))
    except (ValueError, AttributeError):
        raise UserError(f"{results_file}: damaged (not an asv results file)") from None


def _results_of(run_dir: Path, machine: str, commit: str) -> list[Path]:
    return sorted(p for p in (run_dir / "results" / machine).glob(f"{commit[:8]}-*.json") if _commit_of(p) == commit)


def _build_failed(run_dir: Path, machine: str, commit: str) -> bool:
    """asv's results of the commit hold a null for every benchmark: what asv records when the
    install command (TVM's build) fails. asv writes a commit's file once, after its last benchmark,
    so an interrupted commit has no such file."""
    results = _results_of(run_dir, machine, commit)
    return bool(results) and all(_all_null(json.loads(path.read_text()).get("results", {})) for path in results)


def _all_null(results: dict) -> bool:
    def null(value) -> bool:
        return value is None or (isinstance(value, list) and all(null(v) for v in value))
    return all(null(columns[0] if isinstance(columns, list) and columns else columns) for columns in results.values())


def _keep_failed(run_dir: Path, kept_dir: Path, machine: str, commit: str) -> None:
    """A commit whose TVM did not build: its results file (nulls) and its build log, each copied
    unless the same is there; a different one is the user's to choose, as for a measured commit."""
    log = _build_file(run_dir, f"{commit}.log")
    sources = [(log, kept_dir / BUILD_LOGS / log.name)] if log.is_file() else []
    sources += [(p, kept_dir / "results" / machine / p.name) for p in _results_of(run_dir, machine, commit)]
    _copy_unless_kept(sources)  # the results last: a failed commit is never kept without its log


def build_facts(history_dir: Path, commit: str) -> dict:
    """How the commit's TVM was installed, as install_tvm noted it in a run's or a kept history's
    ``install-logs/``; {} where there is no note. A link or a damaged note is a UserError."""
    path = _build_file(history_dir, f"{commit}.build.json")
    if not path.is_file():
        return {}
    try:
        facts = json.loads(path.read_text())
        if not isinstance(facts, dict):
            raise ValueError
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{path}: damaged (not the JSON object install_tvm writes)") from None
    return facts


def _build_note(run_dir: Path, kept_dir: Path, commit: str) -> list[tuple[Path, Path]]:
    """The run's note of the commit's build (checked) and where it is kept beside the commit. A kept
    note of another build is the user's to choose (UserError). The same build installed again since
    (install_tvm lists each later install under ``reinstalls``: asv installs the range's first
    commit again to find the benchmarks at every run) is the same build: the kept note stays."""
    run = build_facts(run_dir, commit)
    if not run:  # a note the run has no more is no loss
        return []
    kept = build_facts(kept_dir, commit)
    name = f"{commit}.build.json"
    source, target = run_dir / BUILD_LOGS / name, kept_dir / BUILD_LOGS / name
    if kept and _first_build(kept) != _first_build(run):
        raise UserError(f"{target} differs from the run's {source} (built again?): keep the one you want: remove it, "
                        "then keep again")
    return [(source, target)]


def _first_build(facts: dict) -> dict:
    return {key: value for key, value in facts.items() if key != "reinstalls"}


def _build_file(history_dir: Path, name: str) -> Path:
    path = Path(history_dir) / BUILD_LOGS / name
    if path.is_symlink():  # install_tvm writes files: a link would copy whatever it points at into the history
        raise UserError(f"{path}: a link, not the file install_tvm writes: remove it")
    return path


def _copy_unless_kept(sources: list[tuple[Path, Path]]) -> None:
    """Copy each (source, target) in order where the target is not there; a different target is the
    user's to choose (built again?), refused before anything is copied."""
    for source, target in sources:
        if target.exists() and cache.file_digest(target) != cache.file_digest(source):
            raise UserError(f"{target} differs from the run's {source} (built again?): keep the one you want: "
                            "remove it, then keep again")
    _copy_missing(sources)


def _copy_missing(sources: list[tuple[Path, Path]]) -> None:
    for source, target in sources:
        if not target.exists():
            cache.write_file(target, lambda tmp, s=source: shutil.copyfile(s, tmp))


def _keep_commit(run_dir: Path, kept_dir: Path, machine: str, commit: str) -> bool:
    """Copy one commit: its results, then its side data sealed in one bundle (less LEFT_OUT); False
    when it is kept already, the same."""
    members = {name: data for name, data in run_bundle.sealed_members(run_place.Place(run_dir, machine, commit)).items()
               if not name.startswith(LEFT_OUT)}
    results = _results_of(run_dir, machine, commit)
    target = run_place.Place(kept_dir, machine, commit)
    if target.sealed or target.dir.exists():
        same_results = all(cache.file_digest(r) == cache.file_digest(kept_dir / "results" / machine / r.name)
                           for r in results if (kept_dir / "results" / machine / r.name).exists())
        if same_results and run_bundle.sealed_members(target) == members:
            return False
        raise UserError(f"{target.bundle} holds other data of commit {commit[:12]} (measured again?): keep the one "
                        f"you want: remove it and {kept_dir / 'results' / machine}/{commit[:8]}-*.json, then keep "
                        "again")
    for result in results:  # results first: a commit's side data without its results is never kept alone
        cache.write_file(kept_dir / "results" / machine / result.name,
                         lambda tmp, r=result: shutil.copyfile(r, tmp))
    run_bundle.write_bundle(target.bundle, members)
    return True


def _copy_if_changed(source: Path, target: Path) -> None:
    if not source.exists():
        return
    if target.exists() and target.read_bytes() == source.read_bytes():
        return
    json.loads(source.read_text())  # asv's own JSON: a damaged one is not copied on
    cache.write_file(target, lambda tmp: shutil.copyfile(source, tmp))


# ----------------------------------------------------------------------------- the seal of what lies beside the commits


#: What a kept history holds beside its commits' side data, relative to it: asv's machine and
#: benchmark files, the build notes and logs.
_BESIDE = (*(f"results/{name}" for name in ASV_FILES), "results/*/machine.json", f"{BUILD_LOGS}/*")


def _beside(history_dir: Path) -> set[str]:
    """The files of ``history_dir`` of _BESIDE (a link among them too), relative to it."""
    found = (p for pattern in _BESIDE for p in Path(history_dir).glob(pattern))
    return {p.relative_to(history_dir).as_posix() for p in found if p.is_file() or p.is_symlink()}


def _sealable(name: str) -> bool:
    """A name a seal may hold: one of _BESIDE, inside the history."""
    return ".." not in name.split("/") and any(fnmatch.fnmatchcase(name, pattern) for pattern in _BESIDE)


def seal(kept_dir: Path) -> None:
    """Seal what ``kept_dir`` holds beside its commits' side data: the sha256 of each file; then
    leave the kept history's mark at its top where it has none (after the seal: an interrupted keep
    never leaves a mark without a seal)."""
    kept_dir = Path(kept_dir)
    cache.write_sealed_json(kept_dir / run_place.RUNS / SEAL,
                            {name: cache.file_digest(kept_dir / name) for name in sorted(_beside(kept_dir))})
    mark = kept_dir / MARK
    if not mark.exists() and not mark.is_symlink():
        cache.write_json(mark, {"generated_by": "tvm-suite history --keep",
                                "what": "a kept history: read it, never edit it; what lies beside its commits' "
                                        f"side data is sealed in {run_place.RUNS}/{SEAL}, each commit's side data in "
                                        f"its bundle, {run_place.RUNS}/<machine>/<commit>{run_place.BUNDLE}"})


def signs(history_dir: Path) -> list[str]:
    """What at the top of ``history_dir`` says it is a kept history, besides its seal: its mark, or
    asv's configuration of its pages beside its results/ (a run directory has neither)."""
    history_dir = Path(history_dir)
    found = [MARK] if (history_dir / MARK).exists() or (history_dir / MARK).is_symlink() else []
    if (history_dir / ASV_PAGES).is_file() and (history_dir / "results").is_dir():
        found.append(ASV_PAGES)
    return found


def is_kept(directory: Path) -> bool:
    """Whether ``directory`` is a kept history: its seal there (a link too), or a sign of one (:func:`signs`)."""
    seal_file = Path(directory) / run_place.RUNS / SEAL
    return seal_file.exists() or seal_file.is_symlink() or bool(signs(directory))


def _restore(path: Path) -> str:
    """How to put back a file of a kept history as it was kept."""
    return (f"restore it as it was kept (`git checkout -- {path}` where the history is committed, or from the copy "
            "it came from)")


def _takeable(path: Path) -> bool:
    """A run's file a keep may copy in place of one removed from the kept history: a regular file."""
    return path.is_file() and not path.is_symlink()


def verify(history_dir: Path, taking: bool = False) -> set[str]:
    """Every file the seal of the kept history ``history_dir`` names is the one it sealed, and no
    other lies beside them; DamagedRunData naming the file otherwise. A directory without a seal
    and without a sign of a kept history (a run's own: asv and install_tvm write these files at
    every run) has nothing to verify; a kept history without its seal is refused. With ``taking``
    (a keep), the sealed files removed are not refused but returned (names relative to it): the
    keep takes the run's in their place."""
    history_dir = Path(history_dir)
    seal_file = history_dir / run_place.RUNS / SEAL
    if not seal_file.exists() and not seal_file.is_symlink():
        found = signs(history_dir)
        if found:
            raise run_place.DamagedRunData(
                f"{seal_file}: missing, and {history_dir} is a kept history (it holds {found[0]}): without its seal "
                f"nothing beside its commits can be verified; {_restore(seal_file)}, or keep its run into a new "
                "directory (tvm-suite history ... --keep NEWDIR)")
        return set()
    sealed = cache.read_sealed_json(seal_file) if not seal_file.is_symlink() else None
    if not isinstance(sealed, dict) or not all(_sealable(k) and isinstance(v, str) for k, v in sealed.items()):
        raise run_place.DamagedRunData(f"{seal_file}: damaged (not the seal `history --keep` wrote): "
                                      f"{_restore(seal_file)}, or keep its run into a new directory "
                                      "(tvm-suite history ... --keep NEWDIR)")
    # a keep refuses what it finds changed: taking the run's file instead is a choice, said how
    keep_again = f"keep again from the run (tvm-suite history ... --keep {history_dir}), which copies the run's"
    for name in sorted(_beside(history_dir) - set(sealed)):
        raise run_place.DamagedRunData(f"{history_dir / name}: not a file the kept history holds (added since it was "
                                      f"kept; not in {seal_file}): remove it")
    removed = set()
    for name, digest in sorted(sealed.items()):
        target = history_dir / name
        if target.is_symlink():
            raise run_place.DamagedRunData(f"{target}: a link, not the file the kept history sealed in {seal_file}: "
                                          f"{_restore(target)}")
        found = cache.file_digest(target) if target.is_file() else None
        if found is None and taking and not target.exists():
            removed.add(name)
            continue
        if found is None:
            raise run_place.DamagedRunData(f"{target}: missing (the kept history sealed it in {seal_file}): "
                                          f"{_restore(target)}; or {keep_again} in its place and seals it")
        if found != digest:
            raise run_place.DamagedRunData(f"{target}: edited or damaged since it was kept (not the file sealed in "
                                          f"{seal_file}): {_restore(target)}; or, to take the run's instead, remove "
                                          f"it (only it) and {keep_again} and seals it")
    return removed


@dataclass(frozen=True)
class Packed:
    """What :func:`pack` did: the commits sealed into bundles (from directories, or from bundles of
    one zip member per file), and those left as they were (side data without a seal: a run that did
    not finish; a link; a bundle found damaged, with what is wrong)."""

    packed: tuple[str, ...]
    unsealed: tuple[str, ...]
    files_before: int
    files_after: int
    linked: tuple[str, ...] = ()
    repacked: tuple[str, ...] = ()
    damaged: tuple[str, ...] = ()

    def text(self, history_dir: Path) -> str:
        lines = [f"packed {history_dir}: {len(self.packed)} commits sealed into one file each; "
                 f"{len(self.repacked)} bundles of one member per file into one tar each; "
                 f"{self.files_before} files before, {self.files_after} now"]
        lines += [f"left as it was (damaged): {line}" for line in self.damaged]
        if self.unsealed:
            lines.append(f"left as they were (side data without a seal: a run that did not finish): "
                         f"{', '.join(c[:12] for c in self.unsealed)}")
        if self.linked:
            lines.append(f"left as they were (a link where a commit's directory lies: pack what it points to, or "
                         f"copy it in): {', '.join(c[:12] for c in self.linked)}")
        return "\n".join(lines)


def pack(history_dir: Path) -> Packed:
    """Seal the side data of every commit of ``history_dir`` (a kept history, or a run directory)
    that an older suite kept as a directory of files and its manifest, or as a bundle of one zip
    member per file, into one bundle per commit of today's layout, each verified before and replaced
    atomically; a kept history is verified first (an edit is never sealed again)."""
    history_dir = Path(history_dir)
    if not (history_dir / run_place.RUNS).is_dir():
        raise UserError(f"--pack {history_dir}: no {run_place.RUNS}/ there (not a run directory or a kept history)")
    run_journal.check_idle(history_dir)
    import fcntl

    fd = os.open(history_dir / run_place.RUNS, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:  # one pack at a time: released when fd is closed, however this process ends
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"--pack {history_dir}: another pack of it is under way; wait for it to end") from None
        return _pack(history_dir)
    finally:
        os.close(fd)


def _pack(history_dir: Path) -> Packed:
    verify(history_dir)
    before = _count_files(history_dir)
    packed, unsealed, repacked, damaged = [], [], [], []
    linked = [p.name for m in (history_dir / run_place.RUNS).iterdir() if m.is_dir() and not m.is_symlink()
              for p in m.iterdir() if p.is_symlink() and run_place.COMMIT.fullmatch(p.name)]
    for machine_dir in sorted(p for p in (history_dir / run_place.RUNS).iterdir()
                              if p.is_dir() and not p.is_symlink() and run_place.MACHINE.fullmatch(p.name)):
        for commit_dir in sorted(p for p in machine_dir.iterdir() if p.is_dir() and not p.is_symlink()
                                 and run_place.COMMIT.fullmatch(p.name)):
            place = run_place.Place(history_dir, machine_dir.name, commit_dir.name)
            if place.bundle.exists() and not (commit_dir / run_place.MANIFEST).exists():
                run_bundle.sealed_members(place)  # what an interrupted seal left: copies of members, verified
                shutil.rmtree(commit_dir)
                continue
            if not (commit_dir / run_place.MANIFEST).exists():
                unsealed.append(commit_dir.name)
                continue
            members = run_bundle.sealed_members(place)
            # the directory is removed once packed: nothing in it but what its manifest seals
            others = sorted(p for p in commit_dir.rglob("*") if not p.is_dir() or p.is_symlink()
                            if p.relative_to(commit_dir).as_posix() not in {*members, run_place.MANIFEST})
            if others:
                raise UserError(f"{others[0]}: not a file the run of {commit_dir.name[:12]} sealed (not in its "
                                f"{run_place.MANIFEST}), and packing removes the directory: move it elsewhere, then "
                                "pack again")
            run_bundle.write_bundle(place.bundle, members)
            shutil.rmtree(commit_dir)
            packed.append(commit_dir.name)
        repacked += _repack(machine_dir, damaged, linked)
    return Packed(tuple(packed), tuple(unsealed), before, _count_files(history_dir), tuple(sorted(linked)),
                  tuple(repacked), tuple(damaged))


def _repack(machine_dir: Path, damaged: list, linked: list) -> list[str]:
    """Seal again each bundle of ``machine_dir`` an older suite wrote (one zip member per file) in
    today's layout, verified first: a damaged one is left as it was and said (in ``damaged``), a
    link too (in ``linked``); a bundle of today's layout, and every other file, is not touched."""
    repacked = []
    for bundle in sorted(machine_dir.glob(f"*{run_place.BUNDLE}")):
        commit = bundle.name[:-len(run_place.BUNDLE)]
        if not run_place.COMMIT.fullmatch(commit):
            continue
        if bundle.is_symlink():
            linked.append(commit)
            continue
        place = run_place.Place(machine_dir.parent.parent, machine_dir.name, commit)
        try:
            if run_bundle.tarred(bundle) or place.dir.exists():
                continue  # today's layout; or a directory beside it, left as it was (unsealed) by the loop above
            members = run_bundle.sealed_members(place)
        except run_place.DamagedRunData as err:
            damaged.append(str(err))
            continue
        run_bundle.write_bundle(bundle, members)
        repacked.append(commit)
    return repacked


def _count_files(directory: Path) -> int:
    return sum(1 for p in Path(directory).rglob("*") if p.is_file())
