"""One run per run directory, and a commit's data replaced only when complete.

`tvm-suite run` replaces a commit's results and side data only once the new ones are complete
(:func:`begin_run`): the side data is written into a staging directory, asv's results file of the
commit is copied first, and a journal (paths relative to the run directory) says how to undo.
Interrupted (Ctrl-C, SIGTERM) the run undoes itself at once; killed, the next command that reads
the run directory undoes it (:func:`recover`). While a run works in a directory it holds that
directory's lock (:class:`RunLock`, filelock's flock: it ends with its process, whatever its pid
becomes); another run is refused, and a reader is told that a run is in progress rather than shown
a half-written commit.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import filelock

from suite import cache
from suite.core.run_bundle import seal
from suite.core.run_place import COMMIT, MACHINE, RUNS, Place, check_commit, check_machine
from suite.errors import UserError


#: Run directories whose lock this process holds (it reads them itself: its verdict at the end).
_HELD: set[Path] = set()


#: How long a run or a reader waits for the lock: another reader's probe holds it for a moment, a run
#: for the whole run.
_PROBE_S = 1.0


class RunLock:
    """The lock of a run directory, held by the one `tvm-suite` command that writes it (filelock's
    FileLock of ``runs/.lock``, an flock: released when its process ends, however it ends). The
    holder's pid, host, commit and start time are written into the file for the message of the one
    refused."""

    def __init__(self, run_dir: Path, commit: str, command: str):
        self.run_dir, self.commit, self.command = Path(run_dir), commit, command
        self.path = self.run_dir / RUNS / ".lock"
        self._lock = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "commit": self.commit,
                           "command": self.command, "started": time.strftime("%Y-%m-%d %H:%M:%S")}).encode()
        lock = filelock.FileLock(self.path, timeout=_PROBE_S,
                                 on_acquired=lambda fd: (os.ftruncate(fd, 0), os.pwrite(fd, info, 0)))
        try:
            lock.acquire()
        except filelock.Timeout:
            raise UserError(f"{self.run_dir} is in use by another run: {holder(self.path)}; "
                            "wait for it to end, or give another --out") from None
        self._lock = lock
        _HELD.add(self.run_dir.resolve())
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            _HELD.discard(self.run_dir.resolve())
            self._lock.release()
            self._lock = None


def holder(lock_path: Path) -> str:
    """Who holds a run directory's lock, in words: "<command> of <commit> (pid N on HOST, since T)"."""
    try:
        info = json.loads(Path(lock_path).read_text())
        return (f"{info.get('command', 'tvm-suite')} of {str(info.get('commit'))[:12]} (pid {info.get('pid')} on "
                f"{info.get('host')}, since {info.get('started')})")
    except (OSError, ValueError, AttributeError, RecursionError):
        return "a run whose lock file cannot be read"


def check_idle(run_dir: Path) -> None:
    """UserError when another run is writing in ``run_dir`` now: its commit is half-written until
    it ends (this process's own run is no other)."""
    if Path(run_dir).resolve() in _HELD:
        return
    lock = Path(run_dir) / RUNS / ".lock"
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return
    except OSError as err:
        raise UserError(f"{lock}: cannot be read ({err.strerror or err})") from None
    try:  # taken for a moment, on a descriptor opened to read (a read-only copy is read as well)
        deadline = time.monotonic() + _PROBE_S
        while not filelock.lock_descriptor(fd, blocking=False):
            if time.monotonic() > deadline:
                raise UserError(f"a run is in progress in {run_dir}: {holder(lock)}; it is not judged half-written: "
                                "wait for it to end")
            time.sleep(0.05)
    finally:
        os.close(fd)  # releases it


# ----------------------------------------------------------------------------- replacing a commit's data


class PendingRun:
    """A run of one commit whose results and side data replace the previous ones only when complete."""

    def __init__(self, run_dir: Path, machine: str, commit: str):
        self.run_dir, self.machine, self.commit = Path(run_dir), check_machine(machine), check_commit(commit)
        self.staging = self.run_dir / _staging(commit)
        self.journal = _journal_path(self.run_dir, commit)

    @property
    def staged(self) -> Place:
        """Where the run keeps its side data until it is complete."""
        return Place(self.staging, self.machine, self.commit)

    def begin(self) -> PendingRun:
        recover(self.run_dir)
        shutil.rmtree(self.staging, ignore_errors=True)
        previous = {}
        for result in _results_files(self.run_dir, self.machine, self.commit):
            rel = result.relative_to(self.run_dir).as_posix()
            copy = f"{_staging(self.commit)}/previous-results/{rel}"
            (self.run_dir / copy).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(result, self.run_dir / copy)
            previous[rel] = copy
        self.staged.dir.mkdir(parents=True, exist_ok=True)
        cache.write_json(self.journal, {"pid": os.getpid(), "commit": self.commit, "machine": self.machine,
                                        "state": "running", "staging": _staging(self.commit), "previous": previous})
        return self

    def keep(self) -> None:
        """The run is complete (asv has written its results): put its side data in place, sealed."""
        cache.write_json(self.journal, {**_read_journal(self.run_dir, self.journal), "state": "swapping"})
        _swap_in(self.run_dir, self.machine, self.commit, self.staging)
        self.journal.unlink(missing_ok=True)
        shutil.rmtree(self.staging, ignore_errors=True)

    def drop(self) -> str:
        """Undo the run: the commit's previous results and side data stay; returns what was kept."""
        return _undo(self.run_dir, _read_journal(self.run_dir, self.journal))


def begin_run(run_dir: Path, machine: str, commit: str) -> PendingRun:
    """Start replacing ``commit``'s data of ``machine`` in ``run_dir`` (after undoing any interrupted
    run there)."""
    return PendingRun(run_dir, machine, commit).begin()


def recover(run_dir: Path) -> list[str]:
    """Finish or undo every run of ``run_dir`` that was interrupted without undoing itself: one line
    per commit saying what was done. A run still in progress there is a UserError (its commit is
    half-written); a directory that cannot be written to is one too, naming what is left to undo."""
    journals = sorted((Path(run_dir) / RUNS).glob(".journal-*.json"))
    if not journals:
        return []
    check_idle(run_dir)
    done = []
    for journal in journals:
        state = _read_journal(run_dir, journal)
        try:
            if state["state"] == "swapping":  # its results were complete: finish putting it in place
                _swap_in(Path(run_dir), state["machine"], state["commit"], Path(run_dir) / state["staging"])
                journal.unlink(missing_ok=True)
                shutil.rmtree(Path(run_dir) / state["staging"], ignore_errors=True)
                done.append(f"completed the interrupted run of {state['commit'][:12]} (its results were complete)")
            else:
                done.append(_undo(Path(run_dir), state))
        except OSError as err:
            raise UserError(f"{journal}: a killed run of {state['commit'][:12]} left its data half-replaced, and it "
                            f"cannot be undone here ({err.strerror or err}: {err.filename or run_dir}); run "
                            "`tvm-suite report` where the directory can be written") from None
    return done


def _staging(commit: str) -> str:
    return f"{RUNS}/.staging-{commit}"


def _journal_path(run_dir: Path, commit: str) -> Path:
    return Path(run_dir) / RUNS / f".journal-{check_commit(commit)}.json"


def _inside(run_dir: Path, relative_path) -> bool:
    """A path a journal names: relative, without '..', so inside the run directory wherever it is."""
    return (isinstance(relative_path, str) and bool(relative_path) and not Path(relative_path).is_absolute()
            and ".." not in Path(relative_path).parts)


def _read_journal(run_dir: Path, journal: Path) -> dict:
    data = cache.read_json(journal)
    commit = data.get("commit") if isinstance(data, dict) else None
    machine = data.get("machine") if isinstance(data, dict) else None
    damaged = (not isinstance(data, dict) or not isinstance(commit, str) or not COMMIT.fullmatch(commit)
               or not isinstance(machine, str) or not MACHINE.fullmatch(machine) or machine in (".", "..")
               or journal.name != f".journal-{commit}.json" or data.get("state") not in ("running", "swapping")
               or data.get("staging") != _staging(commit) or not isinstance(data.get("previous"), dict)
               or not all(_inside(run_dir, k) and k.startswith("results/") and _inside(run_dir, v)
                          and v.startswith(f"{_staging(commit)}/") for k, v in data["previous"].items()))
    if damaged:
        raise UserError(f"{journal}: a damaged journal of an interrupted run; compare the results of its commit "
                        "with results-archive/ and remove the journal")
    return data


def _results_files(run_dir: Path, machine: str, commit: str) -> list[Path]:
    return sorted(p for p in (Path(run_dir) / "results" / check_machine(machine)).glob(f"{check_commit(commit)[:8]}-*.json")
                  if p.is_file())


def _undo(run_dir: Path, state: dict) -> str:
    """Put back the commit's results files as they were before the run; drop its staging."""
    commit = state["commit"]
    previous = {Path(run_dir) / k: Path(run_dir) / v for k, v in state["previous"].items()}
    set_aside = []
    for result in _results_files(run_dir, state["machine"], commit):
        if result not in previous:  # asv wrote a file the commit did not have: the new run's
            set_aside.append(_set_aside(Path(run_dir), result))
    for result, copy in previous.items():
        cache.write_file(result, lambda tmp, copy=copy: shutil.copyfile(copy, tmp))
    shutil.rmtree(Path(run_dir) / state["staging"], ignore_errors=True)
    _journal_path(run_dir, commit).unlink(missing_ok=True)
    kept = "its previous results and side data are kept" if previous else "it had no results before: none kept"
    if set_aside:
        kept += f"; the results file it left is in {set_aside[0].parent}"
    return f"the run of {commit[:12]} did not complete: nothing of it was filed; {kept}"


def archive_path(run_dir: Path, result: Path, why: str = "") -> Path:
    """Where a copy of the asv results file ``result`` is kept in ``run_dir``'s results-archive/
    (``why``: a word in its name, e.g. "undone"), its directory made."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = Path(run_dir) / "results-archive" / result.parent.name / f"{result.stem}.{why + '-' if why else ''}{stamp}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _set_aside(run_dir: Path, result: Path) -> Path:
    """Move a results file that an undone run leaves into results-archive/: never deleted, since
    a journal may be wrong about what was there before."""
    target = archive_path(run_dir, result, "undone")
    os.replace(result, target)
    return target


def _swap_in(run_dir: Path, machine: str, commit: str, staging: Path) -> None:
    """Replace the commit's bundle by the staged one, sealed; the commit's files of a run that did
    not seal them, or of an older suite's layout, go with the bundle they were in (each step can be
    repeated after a kill)."""
    new, final = Place(staging, machine, commit), Place(run_dir, machine, commit)
    old = final.dir.with_name(f".old-{commit}")
    seal(new)
    if new.bundle.is_file():
        final.dir.parent.mkdir(parents=True, exist_ok=True)
        if final.dir.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.rename(final.dir, old)
        os.replace(new.bundle, final.bundle)
    shutil.rmtree(old, ignore_errors=True)
