"""What a run keeps beside asv's ``results/`` that asv cannot, per commit, in ``runs/<commit>/``:
the timing samples of native combinations (``timings/``), the difference maps of divergent ones
(``maps/``), the ratio to the PyTorch peer (``peers/``), the reasons of failed ones
(``failures/``), for the ``tuned`` order the target whose tuning record was replayed
(``records/``), and what the commit's TVM was built with (``build.json``: its LLVM, see
``suite.compat.llvm_build``). A complete run seals them with ``manifest.json`` (the sha256 of every
file); a reader checks each file against it, so a damaged or missing one is an error naming it,
never a number.

asv benchmark processes find their run through ``TVM_SUITE_RUN_DIR`` (set by `tvm-suite run` and
`history`) and their commit through asv's own ``ASV_COMMIT`` (else ``TVM_SUITE_COMMIT``, which
`run` sets: asv's existing environment gives none). Report and gate read the same files through
the results directory they are given.

`tvm-suite run` replaces a commit's results and side data only once the new ones are complete
(:func:`begin_run`): the side data is written into a staging run directory, asv's results file of
the commit is copied first, and a journal says how to undo. Interrupted (Ctrl-C, SIGTERM) the run
undoes itself at once; killed, the next command that reads the run directory undoes it
(:func:`recover`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

from suite import cache
from suite.errors import UserError

RUN_DIR_ENV, COMMIT_ENV = "TVM_SUITE_RUN_DIR", "TVM_SUITE_COMMIT"
KINDS = {"timings": ".json", "peers": ".json", "maps": ".npz", "failures": ".txt", "records": ".txt"}
RUNS, BUILD, MANIFEST = "runs", "build.json", "manifest.json"


class DamagedRunData(UserError):
    """A file a run kept that is damaged or missing (the message names it)."""


def current() -> tuple[Path, str] | None:
    """(run directory, commit) of the asv benchmark process this runs in, or None."""
    run_dir, commit = os.environ.get(RUN_DIR_ENV), os.environ.get("ASV_COMMIT") or os.environ.get(COMMIT_ENV)
    return (Path(run_dir), commit) if run_dir and commit else None


def of_results(results_dir: Path) -> Path:
    """The run directory of an asv results directory (its parent)."""
    return Path(results_dir).parent


def commit_dir(run_dir: Path, commit: str) -> Path:
    return Path(run_dir) / RUNS / commit


def path(run_dir: Path, kind: str, commit: str, ids) -> Path:
    return commit_dir(run_dir, commit) / relative(kind, ids)


# ----------------------------------------------------------------------------- writing (inside a run)


def _note(kind: str, ids, text: str) -> None:
    """Keep ``text`` of ``kind`` for this combination, where this runs inside a run."""
    found = current()
    if found is not None:
        cache.write_text(path(found[0], kind, found[1], ids), text)


def note_failure(ids, reason: str) -> None:
    """Keep why a combination failed, for report and gate (asv keeps only a null)."""
    _note("failures", ids, reason)


def note_records(ids, records_target: str) -> None:
    """Keep whose tuning record a ``tuned`` combination replayed (e.g. hexagon-v68-qf or llvm)."""
    _note("records", ids, records_target)


def note_build(describe) -> None:
    """Keep what this commit's TVM was built with (``describe()``), once per run and commit: every
    benchmark process of a commit runs the same TVM, and ``describe`` (which imports TVM, seconds
    in every one of asv's thousands of processes) is called only by the first."""
    found = current()
    if found is not None:
        target = commit_dir(*found) / BUILD
        if not target.exists():
            cache.write_json(target, describe())


def seal(run_dir: Path, commit: str) -> None:
    """Write the manifest of what the run keeps for ``commit``: the sha256 of every file."""
    where = commit_dir(run_dir, commit)
    if not where.is_dir():
        return
    files = sorted(p for p in where.rglob("*") if p.is_file() and p.name != MANIFEST and not p.name.startswith("."))
    cache.write_sealed_json(where / MANIFEST, {p.relative_to(where).as_posix(): cache.file_digest(p) for p in files})


# ----------------------------------------------------------------------------- reading


def _manifest(run_dir: Path, commit: str) -> dict | None:
    """The sealed manifest of a commit's side data (None where the run wrote none: a history run
    that was interrupted, or results of a suite before manifests); DamagedRunData when it is
    there but damaged."""
    where = commit_dir(run_dir, commit) / MANIFEST
    if not where.exists():
        return None
    manifest = cache.read_sealed_json(where)
    if not isinstance(manifest, dict):
        raise DamagedRunData(f"{where}: damaged (not the manifest the run sealed); run that commit again")
    return manifest


def read_bytes(run_dir: Path, relative: str, commit: str) -> bytes | None:
    """The bytes of ``runs/<commit>/<relative>``; None when the run kept no such file;
    DamagedRunData when it is not the file the run kept (damaged, missing, replaced)."""
    where = commit_dir(run_dir, commit) / relative
    manifest = _manifest(run_dir, commit)
    listed = manifest.get(relative) if manifest is not None else None
    if manifest is not None and listed is None:
        if where.exists():
            raise DamagedRunData(f"{where}: not a file the run of {commit[:12]} kept (not in its manifest)")
        return None
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        if listed is not None:
            raise DamagedRunData(f"{where}: missing (the run of {commit[:12]} kept it)") from None
        return None
    except OSError as err:
        raise DamagedRunData(f"{where}: unreadable ({err.strerror or err})") from None
    if listed is not None and cache.bytes_digest(data) != listed:
        raise DamagedRunData(f"{where}: damaged (not the file the run of {commit[:12]} kept)")
    return data


def read_json(run_dir: Path, relative: str, commit: str, check):
    """A kept JSON file, verified (:func:`read_bytes`) and checked: ``check(value)`` says what is
    wrong with it, or None. None when absent; DamagedRunData naming the file otherwise."""
    data = read_bytes(run_dir, relative, commit)
    if data is None:
        return None
    where = commit_dir(run_dir, commit) / relative
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise DamagedRunData(f"{where}: not JSON ({str(err).splitlines()[0]})") from None
    if problem := check(value):
        raise DamagedRunData(f"{where}: {problem}")
    return value


def relative(kind: str, ids) -> str:
    """Where a file of ``kind`` for the combination ``ids`` sits in its commit's directory."""
    return f"{kind}/{'.'.join(ids)}{KINDS[kind]}"


def read_text(run_dir: Path, kind: str, commit: str, ids) -> str | None:
    data = read_bytes(run_dir, relative(kind, ids), commit)
    if data is None:
        return None
    try:
        return data.decode("utf-8").strip() or None
    except UnicodeDecodeError:
        raise DamagedRunData(f"{path(run_dir, kind, commit, ids)}: not UTF-8 text") from None


def failure(run_dir: Path, commit: str, ids) -> str | None:
    return read_text(run_dir, "failures", commit, ids)


def records(run_dir: Path, commit: str, ids) -> str | None:
    return read_text(run_dir, "records", commit, ids)


def _build_problem(value) -> str | None:
    if not isinstance(value, dict) or not isinstance(value.get("llvm", {}), dict):
        return "not a build note (an object with an 'llvm' object)"
    return None


def build(run_dir: Path, commit: str) -> dict | None:
    """What the TVM of ``commit`` was built with, where a benchmark process noted it."""
    return read_json(run_dir, BUILD, commit, _build_problem)


def positive_numbers(value, count=None) -> bool:
    return (isinstance(value, list) and bool(value) and (count is None or len(value) == count)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                    for v in value))


# ----------------------------------------------------------------------------- replacing a commit's data


class PendingRun:
    """A run of one commit whose results and side data replace the previous ones only when complete."""

    def __init__(self, run_dir: Path, commit: str):
        self.run_dir, self.commit = Path(run_dir), commit
        self.staging = self.run_dir / RUNS / f".staging-{commit}"
        self.journal = _journal_path(self.run_dir, commit)

    def begin(self) -> PendingRun:
        recover(self.run_dir)
        shutil.rmtree(self.staging, ignore_errors=True)
        kept = self.staging / "previous-results"
        previous = {}
        for result in _results_files(self.run_dir, self.commit):
            copy = kept / result.parent.name / result.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(result, copy)
            previous[str(result)] = str(copy)
        commit_dir(self.staging, self.commit).mkdir(parents=True, exist_ok=True)
        cache.write_json(self.journal, {"pid": os.getpid(), "commit": self.commit, "state": "running",
                                        "staging": str(self.staging), "previous": previous})
        return self

    def keep(self) -> None:
        """The run is complete (asv has written its results): put its side data in place, sealed."""
        cache.write_json(self.journal, {**_read_journal(self.journal), "state": "swapping"})
        _swap_in(self.run_dir, self.commit, self.staging)
        self.journal.unlink(missing_ok=True)
        shutil.rmtree(self.staging, ignore_errors=True)

    def drop(self) -> str:
        """Undo the run: the commit's previous results and side data stay; returns what was kept."""
        return _undo(self.run_dir, _read_journal(self.journal))


def begin_run(run_dir: Path, commit: str) -> PendingRun:
    """Start replacing ``commit``'s data in ``run_dir`` (after undoing any interrupted run there)."""
    return PendingRun(run_dir, commit).begin()


def recover(run_dir: Path) -> list[str]:
    """Finish or undo every run of ``run_dir`` that was interrupted without undoing itself (its
    process is gone): one line per commit saying what was done."""
    done = []
    for journal in sorted((Path(run_dir) / RUNS).glob(".journal-*.json")):
        state = _read_journal(journal)
        if state.get("pid") and _alive(state["pid"]) and state["pid"] != os.getpid():
            continue  # a run in progress
        if state.get("state") == "swapping":  # its results were complete: finish putting it in place
            _swap_in(Path(run_dir), state["commit"], Path(state["staging"]))
            journal.unlink(missing_ok=True)
            shutil.rmtree(state["staging"], ignore_errors=True)
            done.append(f"completed the interrupted run of {state['commit'][:12]} (its results were complete)")
        else:
            done.append(_undo(Path(run_dir), state))
    return done


def _journal_path(run_dir: Path, commit: str) -> Path:
    return Path(run_dir) / RUNS / f".journal-{commit}.json"


def _read_journal(journal: Path) -> dict:
    data = cache.read_json(journal)
    if not isinstance(data, dict) or not isinstance(data.get("commit"), str) or not isinstance(
            data.get("previous"), dict):
        raise UserError(f"{journal}: a damaged journal of an interrupted run; compare the results of its commit "
                        "with results-archive/ and remove the journal")
    return data


def _results_files(run_dir: Path, commit: str) -> list[Path]:
    return sorted(p for p in (Path(run_dir) / "results").glob(f"*/{commit[:8]}-*.json") if p.is_file())


def _undo(run_dir: Path, state: dict) -> str:
    """Put back the commit's results files as they were before the run; drop its staging."""
    commit = state["commit"]
    previous = {Path(k): Path(v) for k, v in state["previous"].items()}
    for result in _results_files(run_dir, commit):
        if result not in previous:  # asv wrote a file the commit did not have: the new run's
            result.unlink()
    for result, copy in previous.items():
        cache.write_file(result, lambda tmp, copy=copy: shutil.copyfile(copy, tmp))
    shutil.rmtree(state["staging"], ignore_errors=True)
    _journal_path(run_dir, commit).unlink(missing_ok=True)
    kept = "its previous results and side data are kept" if previous else "it had no results before: none kept"
    return f"the run of {commit[:12]} did not complete: nothing of it was filed; {kept}"


def _swap_in(run_dir: Path, commit: str, staging: Path) -> None:
    """Replace ``runs/<commit>`` by the staged one, sealed (each step can be repeated after a kill)."""
    new, final = commit_dir(staging, commit), commit_dir(run_dir, commit)
    old = final.with_name(f".old-{commit}")
    if new.is_dir():
        seal(staging, commit)
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.rename(final, old)
        os.rename(new, final)
    shutil.rmtree(old, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError):
        return True
    return True
