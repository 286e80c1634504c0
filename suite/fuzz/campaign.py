"""A fuzz campaign: for each combination (workload x dtype x target), the suite's named orders and
N schedules sampled from MetaSchedule's design space (:mod:`suite.fuzz.sampling`), each built and
run by a worker child (:mod:`suite.fuzz.worker`; one per core here, or a Dask cluster's:
:mod:`suite.fuzz.pool`) and judged by triage's verdict (:func:`suite.triage.verdict.judge`, under
the thresholds given) against the float64 reference of the workload's op chain, the unscheduled
function's output as "before" (with the IEEE twin's on a qfloat target). Bugs planted in scheduled
TIR (:mod:`suite.fuzz.plant`) measure the oracle's recall; a plant whose output is the unplanted
program's, bit for bit, is not applicable. Unmodified schedules judged CHANGED are the oracle's
false alarms, unless named orders and sampled traces both go wrong: then the compiler or the
runtime is at fault (:attr:`Summary.compiler_fault`).

The out directory holds ``journal.jsonl`` (one JSON line per judged schedule, appended whole as
each completes: a rerun with the same seed skips those), ``findings/<id>/`` (each CHANGED,
UNDEFINED, crash or timeout: trace, minimised trace, TVMScript, report) and ``summary.json``. It is
locked while a campaign writes it (:class:`CampaignLock`: ``.tvm-suite-fuzz.lock``). Every file of it the
campaign reads or writes is its own regular file, never reached through a link: a link, a FIFO or
another kind of file there is refused in one line before any work (:func:`check_own_files`), and
the journal is opened without following a link or waiting on a FIFO (:func:`_open_own`).

What became of each schedule is a :class:`suite.fuzz.outcome.Outcome`; the worker's answer is read
once into an :class:`~suite.fuzz.outcome.Answer`, each schedule to judge is a :class:`Schedule`, and
each judged one a :class:`JournalLine`, written (:meth:`JournalLine.fields`) and read back
(:meth:`JournalLine.parse`) in one place each; the campaign's figures are a :class:`Summary`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import errno
import hashlib
import io
import itertools
import json
import math
import os
import re
import shlex
import shutil
import socket
import stat
import subprocess
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import filelock
import numpy as np

from suite import cache, children, compat, floats, sandbox, targets
from suite.core import quantized, reference, schedules, workloads
from suite.core.bounds import Expected
from suite.core.combo import select_workloads
from suite.errors import CannotWrite, ExitCode, UserError, raise_if_signalled
from suite.fuzz import EMULATED_TIMEOUT_S, NATIVE_TIMEOUT_S, plant, sampling
from suite.fuzz import pool as pools
from suite.fuzz import blame, shrink
from suite.fuzz.outcome import FINDINGS, Answer, Outcome
from suite.fuzz.worker import LOG
from suite.reporting import thresholds as thresholds_file
from suite.targets.base import Mode, NotTunable
from suite.triage import verdict

#: Every outcome, in the order of the table's columns.
OUTCOMES = tuple(Outcome)
#: The exit status of each kind of finding (suite.fuzz.outcome.FINDINGS: the first found's is the campaign's).
EXIT_STATUS = {Outcome.CHANGED: ExitCode.CHANGED, Outcome.UNDEFINED: ExitCode.UNDEFINED,
               Outcome.SHIFTED: ExitCode.SHIFTED, Outcome.CRASH: ExitCode.CRASHED, Outcome.TIMEOUT: ExitCode.CRASHED}
JOURNAL, SUMMARY, FINDINGS_DIR = "journal.jsonl", "summary.json", "findings"
#: Marks an out directory a fuzz made: one without it that holds anything is the user's (fuzz would
#: append to its journal.jsonl, replace its summary.json and remove its work/), so it is refused.
OWN_MARK = ".tvm-suite-fuzz"
#: The lock a campaign holds in its directory while it works (:class:`CampaignLock`), left there.
LOCK = ".tvm-suite-fuzz.lock"
#: Where a campaign of a suite before :data:`LOCK` held its lock (the run store's ``runs/.lock``): a
#: directory of that layout is still a campaign's, continued, and that lock is taken as well.
OLD_LOCK_DIR, OLD_LOCK = "runs", ".lock"
#: The least time the unscheduled function (the before program) gets to build and run.
BEFORE_TIMEOUT_S = 300.0
#: Why a plant that applied is not counted: its program computes what the unplanted one does.
NO_EFFECT = "the edit changes nothing here: the planted program's output is the unplanted one's, bit for bit"


@dataclass
class Options:
    workloads: list[str]
    dtypes: list[str]
    targets: list[str]
    traces: int
    seed: int
    minutes: float
    out: Path
    plant: int = 0
    timeout_s: float | None = None  #: None: NATIVE_TIMEOUT_S or EMULATED_TIMEOUT_S, by target
    minimise_tries: int = 60  #: builds the trace's delta debugging may make, per finding
    #: small programs the finding's workload is shrunk to and judged (two builds each), per finding
    shrink_tries: int = 20
    cluster: str | None = None  #: a Dask scheduler's address: schedules built and run on its workers
    thresholds: Path | None = None  #: the thresholds file ([bound], [divergence]); None: the defaults
    jobs: int | None = None  #: worker children here; None: one per core


@dataclass
class Combination:
    workload: object
    dtype: str
    target: object
    expected: Expected = None
    before: np.ndarray | None = None
    before_twin: np.ndarray | None = None

    @property
    def label(self) -> str:
        return f"{self.workload.id} {self.dtype} {self.target.name}"


def timeout_of(options: Options, target) -> float:
    """The seconds one schedule of ``target`` may take to build and run (--trace-timeout)."""
    if options.timeout_s is not None:
        return options.timeout_s
    return EMULATED_TIMEOUT_S if target.mode is Mode.EMULATED else NATIVE_TIMEOUT_S


def check(options: Options) -> list[Combination]:
    """Every option checked before any work (one-line UserErrors); the combinations."""
    out = options.out
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory: give a directory for the campaign")
    cache.ensure_dir(out, "--out")  # made and writable (a link to nothing, a read-only disk: one line)
    # the lock is the campaign's (a campaign in use is said by the lock, naming its holder), and so
    # is the runs/ that held it before (runs/.lock alone)
    theirs = sorted(p.name for p in out.iterdir() if p.name != LOCK and not _old_lock_dir(p))
    if theirs and not (out / OWN_MARK).exists():
        raise UserError(f"--out {out} holds files a fuzz did not make ({', '.join(theirs[:3])}"
                        f"{', ...' if len(theirs) > 3 else ''}): give a new or empty directory, or a campaign's own")
    check_own_files(out)
    for dtype in options.dtypes:
        workloads.check_dtype(dtype, workloads.MEASURED_DTYPES)
    found_targets = []
    for name in options.targets:
        target = targets.get(name)
        for dtype in options.dtypes:  # first: a dtype the target never runs, on any machine
            if reason := target.dtype_unavailable(dtype):
                raise UserError(f"--targets {name}: {reason}")
        reason = target.mode.value if target.mode is Mode.COMPILE_ONLY else target.unavailable()
        if reason:
            raise UserError(f"--targets {name}: nothing runs its code here ({reason})")
        try:  # the schedules are sampled from the space MetaSchedule tunes this target in
            target.tuning_target()
        except NotTunable as err:
            raise UserError(f"--targets {name}: fuzz samples MetaSchedule's design space of a target, and {err}") \
                from None
        found_targets.append(target)
    ids = select_workloads(options.workloads)
    return [Combination(workloads.get(w), d, t) for t in found_targets for d in options.dtypes for w in ids]


#: The directory the worker children work in (removed at the end of every campaign).
WORK_DIR = "work"


def _old_lock_dir(path: Path) -> bool:
    """Whether ``path`` is the runs/ a campaign of an older suite held its lock in: a directory (no
    link) of nothing but ``.lock``."""
    try:
        return (path.name == OLD_LOCK_DIR and not path.is_symlink() and path.is_dir()
                and {p.name for p in path.iterdir()} <= {OLD_LOCK})
    except OSError:
        return False


#: How long a campaign tries for its directory's lock before it says who holds it.
_LOCK_PROBE_S = 1.0


class CampaignLock:
    """The lock of a campaign's directory, held by the one campaign that writes it: filelock's
    FileLock of ``OUT/.tvm-suite-fuzz.lock`` (an flock, released when its process ends, however it
    ends; opened never through a link), the holder's pid, host, seed and start time written in it
    for the message of the campaign refused. A directory a campaign of an older suite made keeps
    its lock in ``runs/.lock`` (the run store's): where that file is, it is taken too (opened to
    read, never made, written or removed), so a campaign of either suite refuses one of the other."""

    def __init__(self, out: Path, seed: int):
        self.out, self.seed = Path(out), seed
        self._lock = None
        self._old_fd = None

    def __enter__(self) -> Self:
        info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "seed": self.seed,
                           "started": time.strftime("%Y-%m-%d %H:%M:%S")}).encode()
        lock = filelock.FileLock(self.out / LOCK, timeout=_LOCK_PROBE_S,
                                 on_acquired=lambda fd: (os.ftruncate(fd, 0), os.pwrite(fd, info, 0)))
        try:
            lock.acquire()
        except filelock.Timeout:
            raise self._in_use(self.out / LOCK, "seed") from None
        except OSError as err:
            raise CannotWrite(err.errno, err.strerror, str(self.out / LOCK)) from None
        self._lock = lock
        try:
            self._take_old()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _take_old(self) -> None:
        old = self.out / OLD_LOCK_DIR / OLD_LOCK
        if not _old_lock_dir(old.parent) or not old.exists():
            return
        fd = _open_own(old, os.O_RDONLY, "lock")
        if fd is None:
            return
        deadline = time.monotonic() + _LOCK_PROBE_S
        while not filelock.lock_descriptor(fd, blocking=False):
            if time.monotonic() > deadline:
                os.close(fd)
                raise self._in_use(old, "commit")
            time.sleep(0.05)
        self._old_fd = fd

    def _in_use(self, path: Path, named: str) -> UserError:
        return UserError(f"{self.out} is in use by another fuzz campaign ({holder(path, named)}): wait for it to "
                         "end, or give another --out")

    def __exit__(self, *exc) -> None:
        if self._old_fd is not None:
            os.close(self._old_fd)  # closing the descriptor releases its flock
            self._old_fd = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def holder(path: Path, named: str = "seed") -> str:
    """Who holds a campaign's lock ``path``, in words: "seed S, pid N on HOST, started T" (a lock
    of an older suite names the TVM version it ran, ``named`` "commit", instead of the seed)."""
    try:
        fd = _open_own(path, os.O_RDONLY, "lock")
        with os.fdopen(fd, "rb") as file:
            info = json.loads(file.read(4096))
        what = f"seed {info['seed']}" if named == "seed" else f"an older suite's, TVM {str(info['commit'])[:20]}"
        return shown(f"{what}, pid {info['pid']} on {info['host']}, started {info['started']}")
    except (OSError, TypeError, ValueError, KeyError, RecursionError, UserError):
        return "its lock file cannot be read"


def _kind_of(mode: int) -> str:
    return {stat.S_IFLNK: "link", stat.S_IFIFO: "FIFO", stat.S_IFSOCK: "socket", stat.S_IFCHR: "device",
            stat.S_IFBLK: "device", stat.S_IFDIR: "directory"}.get(stat.S_IFMT(mode), "special file")


def _not_own(path: Path, what: str) -> UserError:
    left = " (what it points to is left as it is)" if what == "link" else ""
    return UserError(f"{path}: a {what}, where a campaign keeps a file of its own: it never reads or writes through "
                     f"or over one{left}; move it away, or give another --out")


def check_own_files(out: Path) -> None:
    """Every file of the campaign directory ``out`` a campaign reads or writes (its mark, journal and
    summary, everything under findings/; work/, the workers' scratch, itself) is a regular file or
    directory of its own, not a link, a FIFO, a device or a socket; a journal has one name (not a
    hard link to a file elsewhere). UserError naming the first that is not, before any work."""
    for name in (OWN_MARK, JOURNAL, SUMMARY, LOCK):
        try:
            info = os.lstat(out / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise _not_own(out / name, _kind_of(info.st_mode))
        if name == JOURNAL and info.st_nlink > 1:
            raise _not_own(out / name, f"file of {info.st_nlink} names (hard links)")
    for name in (FINDINGS_DIR, WORK_DIR):
        top = out / name
        try:
            info = os.lstat(top)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise _not_own(top, _kind_of(info.st_mode))
        if name == WORK_DIR:  # what the workers leave there is read back as data (sandbox.read_back)
            continue
        for where, dirs, files in os.walk(top):  # links are listed, never followed
            for entry in sorted(dirs + files):
                mode = os.lstat(Path(where) / entry).st_mode
                if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                    raise _not_own(Path(where) / entry, _kind_of(mode))


def _open_own(path: Path, flags: int, what: str) -> int | None:
    """A descriptor of ``path``, a regular file of the campaign's own with one name, opened with
    ``flags`` never through a link (O_NOFOLLOW) and never waiting on a FIFO (O_NONBLOCK); None when
    it is not there (and ``flags`` do not make it). UserError where it is a link or no regular file;
    OSError otherwise."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link; a FIFO or socket; a directory
            info = os.lstat(path)
            raise _not_own(path, _kind_of(info.st_mode)) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        raise _not_own(path, _kind_of(info.st_mode) if not stat.S_ISREG(info.st_mode)
                       else f"file of {info.st_nlink} names (hard links), the {what}")
    return fd


#: Characters that do something on a terminal, or hide or reorder text, rather than show.
_UNSHOWN = ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")


def shown(text) -> str:
    """``text`` as it may reach a terminal: each control or formatting character (escape sequences,
    carriage returns, bidirectional overrides) written as its escape, ``\\x1b``, ``\\u202e``."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c == " " or unicodedata.category(c) not in _UNSHOWN
                   else (f"\\x{ord(c):02x}" if ord(c) <= 0xff else f"\\u{ord(c):04x}" if ord(c) <= 0xffff
                         else f"\\U{ord(c):08x}") for c in text)


#: The kinds of schedule a journal line judges: a named order, a sampled trace, a planted bug.
SCHEDULE_KINDS = ("order", "trace", "plant")


@dataclass(frozen=True)
class Finding:
    """Where a finding's directory is, and the key it is deduplicated by."""

    dir: str
    key: str


def _text(value) -> bool:
    return isinstance(value, str)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


#: The words of the outcomes, as a line holds them.
_OUTCOME_WORDS = frozenset(o.value for o in Outcome)

#: Every field a journal line may hold: whether it must, and what it must be.
_LINE_FIELDS = {
    "id": (True, _text), "seed": (True, _whole), "judged_by": (True, _text), "workload": (True, _text),
    "dtype": (True, _text), "target": (True, _text), "kind": (True, lambda v: v in SCHEDULE_KINDS),
    "name": (True, _text), "outcome": (True, lambda v: _text(v) and v in _OUTCOME_WORDS), "message": (True, _text),
    "seconds": (True, _seconds), "summary": (False, _text),
    "first_wrong": (False, lambda v: v is None or isinstance(v, dict)),
    "trace": (False, lambda v: v is None or isinstance(v, list)), "resampled": (False, _whole),
    "trace_index": (False, lambda v: v is None or _whole(v)), "planted": (False, _text),
    "expected": (False, _text), "planted_in": (False, _text),
    "finding": (False, lambda v: isinstance(v, dict) and set(v) == {"dir", "key"} and all(map(_text, v.values()))),
}


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """One schedule of a combination to judge: its id in the journal, and what the worker builds
    and runs (:meth:`request`): a named order, a sampled trace, or a bug planted in either."""

    id: str
    seed: int
    judged_by: str  #: :func:`judged_by`: what its verdict depends on besides the schedule
    workload: str
    dtype: str
    target: str
    kind: str  #: one of SCHEDULE_KINDS
    name: str  #: the order's name, the trace's index, or the plant's ``kind#number``
    #: The sampled trace; None for a named order, or a plant moved to the unscheduled function.
    trace: list | None = None
    #: Samples the postprocessors rejected before ``trace``; None where nothing was sampled (then
    #: the line holds no trace fields).
    resampled: int | None = None
    trace_index: int | None = None
    planted: str | None = None  #: a plant's kind
    expected: str | None = None  #: what a plant should be judged
    planted_in: str | None = None  #: "default": the sampled trace had nothing of the plant's kind

    @property
    def label(self) -> str:
        return f"{self.workload} {self.dtype} {self.target}"

    def request(self) -> dict:
        """What the worker is asked to build and run: the named order, or the sampled trace (a
        plant without one: the unscheduled function), the bug planted where there is one."""
        asked = {"trace": self.trace} if self.trace is not None else \
            {"order": self.name if self.kind == "order" else "default"}
        return {**asked, "plant": self.planted} if self.planted else asked


@dataclass(frozen=True, kw_only=True)
class JournalLine(Schedule):
    """One judged schedule as the journal holds it: the schedule, its outcome and, where it got a
    verdict, the verdict's words. Written by :meth:`fields` and read back by :meth:`parse`, every
    field checked: the campaign's table, findings, recall and exit status come from these alone."""

    outcome: Outcome
    message: str  #: a failure's first line (a skip's, a plant's reason); "" for a verdict
    seconds: float
    #: The verdict's summary; None where there is none (a failure: then the line holds neither it
    #: nor ``first_wrong``).
    summary: str | None = None
    first_wrong: dict | None = None
    finding: Finding | None = None

    @classmethod
    def judged(cls, schedule: Schedule, judged: Judged, seconds: float) -> JournalLine:
        return cls(**{f.name: getattr(schedule, f.name) for f in dataclasses.fields(Schedule)},
                   outcome=judged.outcome, message=judged.message, seconds=seconds, summary=judged.summary,
                   first_wrong=judged.first_wrong)

    def fields(self) -> dict:
        """The line as the journal holds it, less its seal: those of a kind of schedule this is not
        (a named order's trace, an unplanted schedule's plant) and a failure's verdict left out."""
        written = {"id": self.id, "seed": self.seed, "judged_by": self.judged_by, "workload": self.workload,
                   "dtype": self.dtype, "target": self.target, "kind": self.kind, "name": self.name,
                   "outcome": self.outcome.value, "message": self.message, "seconds": self.seconds}
        if self.summary is not None:
            written.update(summary=self.summary, first_wrong=self.first_wrong)
        if self.resampled is not None:
            written.update(trace=self.trace, resampled=self.resampled, trace_index=self.trace_index)
        for name, value in (("planted", self.planted), ("expected", self.expected), ("planted_in", self.planted_in)):
            if value is not None:
                written[name] = value
        if self.finding is not None:
            written["finding"] = {"dir": self.finding.dir, "key": self.finding.key}
        return written

    @classmethod
    def parse(cls, fields) -> JournalLine:
        """The line of the JSON object ``fields``; ValueError saying what is wrong (a field missing,
        unknown or of another type, an outcome or kind the campaign does not have)."""
        if not isinstance(fields, dict):
            raise ValueError("not a JSON object")
        unknown = sorted(set(fields) - set(_LINE_FIELDS))
        if unknown:
            raise ValueError(f"a field no campaign writes ({unknown[0]!r:.40})")
        for name, (needed, ok) in _LINE_FIELDS.items():
            if name not in fields:
                if needed or (name == "planted" and fields.get("kind") == "plant"):
                    raise ValueError(f"no {name!r}")
            elif not ok(fields[name]):
                raise ValueError(f"{name!r} is {fields[name]!r:.60}, not what a campaign writes there")
        values = {**fields, "outcome": Outcome(fields["outcome"])}
        if "finding" in values:
            if not values["outcome"].is_finding:
                raise ValueError(f"a finding of {values['outcome']}, which is no finding")
            values["finding"] = Finding(**values["finding"])
        if values.get("planted") is not None:
            values.setdefault("expected", plant.EXPECTED)
        return cls(**values)


@dataclass(frozen=True)
class Judged:
    """What one build and run of a schedule came to: its outcome, with the verdict's summary and
    first wrong element where it got a verdict (None: a failure, ``message`` its first line)."""

    outcome: Outcome
    message: str
    dir: Path  #: the request's directory (the output, after.py): removed by whoever asked
    summary: str | None = None
    first_wrong: dict | None = None


def _chained(previous: str, fields: dict) -> str:
    """The seal of a line: the sha256 of the seal of the line before it and the line's canonical JSON."""
    return hashlib.sha256((previous + json.dumps(fields, sort_keys=True, separators=(",", ":"))).encode()).hexdigest()


class Journal:
    """``journal.jsonl``: one judged schedule a line, each appended with one write and synced, so
    that an interruption leaves every line before it whole. Each line carries ``seal``, chained
    with the line before it (:func:`_chained`): a line edited, damaged, removed or moved, or of a
    shape no campaign writes, is refused naming the file and the line, never read in part. A torn
    last line (an append cut short, without its newline) is cut off: its schedule is judged again.

    The seal is a checksum anyone can compute, not a signature: it catches damage and edits by hand,
    not a forger who seals the lines again (docs/fuzz.md). What a line leads the campaign to show is
    held to the campaign all the same: a finding's directory is its own under ``findings/``.

    The file is the campaign's own: opened never through a link and never waiting on a FIFO, a
    regular file with one name (:func:`_open_own`), and cut through the descriptor checked."""

    def __init__(self, path: Path):
        self.path = path
        self._last = ""  #: the seal of the last line

    def load(self) -> dict[str, JournalLine]:
        """The verified lines, by schedule id (a later line of an id replaces an earlier one)."""
        try:
            fd = _open_own(self.path, os.O_RDONLY, "journal")
            if fd is None:
                return {}
            try:
                with os.fdopen(os.dup(fd), "rb") as file:
                    data = file.read()
                read = os.fstat(fd)
            finally:
                os.close(fd)
        except OSError as err:
            raise UserError(f"{self.path}: unreadable ({err.strerror or err})") from None
        *lines, torn = data.split(b"\n")
        done = {}
        for number, line in enumerate(lines, 1):
            found = self._verified(line, number)
            done[found.id] = found
        if torn:
            self._cut(len(data) - len(torn), read)
        return done

    @contextlib.contextmanager
    def _written(self, flags: int):
        """A descriptor of the journal to write through (:func:`_open_own`), closed after; gone
        (removed meanwhile, or its directory) is FileNotFoundError."""
        fd = _open_own(self.path, flags, "journal")
        if fd is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(self.path))
        try:
            yield fd
        finally:
            os.close(fd)

    def _cut(self, size: int, read: os.stat_result) -> None:
        """Cut the journal to ``size`` bytes, through a descriptor of the very file read (``read``)."""
        try:
            with self._written(os.O_WRONLY) as fd:
                now = os.fstat(fd)
                if (now.st_dev, now.st_ino) != (read.st_dev, read.st_ino):
                    raise UserError(f"{self.path}: replaced while the campaign read it: run again")
                os.ftruncate(fd, size)
                os.fsync(fd)
        except OSError as err:
            raise CannotWrite(err.errno, err.strerror, str(self.path)) from None

    def _placed(self, line: JournalLine) -> JournalLine:
        """``line`` with its finding's directory as this campaign's: the one the campaign makes for
        the schedule, ``findings/<id>`` inside this out directory. A line naming any other place
        (``/etc``, another directory) is refused (ValueError): a journal moves with its directory, so
        the place is written relative to it (a line written before that, whole, names the same
        directory)."""
        if line.finding is None:
            return line
        own = Path(FINDINGS_DIR) / _safe(line.id)
        given = Path(line.finding.dir)
        if given != own:
            try:
                same = given.resolve() == (self.path.parent / own).resolve()
            except (OSError, RuntimeError, ValueError):
                same = False
            if not same:
                raise ValueError(f"its finding's directory {line.finding.dir!r:.80} is not the campaign's own "
                                 f"{own} (inside {self.path.parent / FINDINGS_DIR})")
        return dataclasses.replace(line, finding=Finding(str(self.path.parent / own), line.finding.key))

    def _verified(self, line: bytes, number: int) -> JournalLine:
        where = f"{self.path}, line {number}"
        again = f": give a new --out, or remove the journal from line {number} on to judge those schedules again"
        try:
            fields = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise UserError(f"{where}: damaged (not a line of JSON){again}") from None
        if not isinstance(fields, dict) or not isinstance(fields.get("seal"), str):
            raise UserError(f"{where}: not sealed (a journal of an older suite, or an edited one){again}")
        seal = fields.pop("seal")
        if seal != _chained(self._last, fields):
            raise UserError(f"{where}: not the line the campaign wrote there (its seal does not match: edited, "
                            f"damaged, or lines removed before it){again}")
        try:
            found = self._placed(JournalLine.parse(fields))
        except ValueError as err:
            raise UserError(f"{where}: {err}{again}") from None
        self._last = seal
        return found

    def append(self, line: JournalLine | dict) -> JournalLine:
        """Seal ``line`` (or a line's fields, checked as a line read back is), chained with the last
        line, and append it; the line as it reads back."""
        fields = (line if isinstance(line, JournalLine) else JournalLine.parse(line)).fields()
        read = self._placed(JournalLine.parse(fields))  # the suite never writes a line it would refuse
        seal = _chained(self._last, fields)
        data = (json.dumps({**fields, "seal": seal}, sort_keys=True) + "\n").encode()
        try:
            with self._written(os.O_WRONLY | os.O_APPEND | os.O_CREAT) as fd:
                os.write(fd, data)
                os.fsync(fd)
        except OSError as err:
            raise CannotWrite(err.errno, err.strerror, str(self.path)) from None
        self._last = seal
        return read


def _expected(combination: Combination) -> Expected:
    """The exact output: the float64 reference with its magnitude; in int8, the integer oracle's
    uint8 output, which a schedule's must equal (no magnitude: :func:`verdict.judge` judges it exactly)."""
    chain = combination.workload.chain
    inputs = workloads.make_inputs(combination.workload, combination.dtype)
    if combination.dtype in workloads.INTEGER_DTYPES:
        return Expected(quantized.evaluate(chain, inputs).output.astype(np.int64), None,
                        reference.accumulation_length(chain), "output", workloads.output_dtype(combination.dtype))
    return Expected(reference.evaluate(chain, inputs), reference.evaluate_magnitude(chain, inputs),
                    reference.accumulation_length(chain), "output", combination.dtype)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:150]


#: The worker's check that a schedule's output is a function of its inputs
#: (:func:`suite.triage.filled.undefined`), run on native targets: lines judged without it are judged again.
UNDEFINED_CHECK = "output filled with two patterns"


def judged_by(thresholds, target=None) -> str:
    """What a verdict depends on besides the schedule: the rounding bound's and the divergence
    rules' parameters, and on a native target the check for UNDEFINED. A journal line judged by
    others is judged again, not reused."""
    native = target is not None and target.mode is Mode.NATIVE
    what = (thresholds.bound, thresholds.divergence, ("element factor", verdict.ELEMENT_FACTOR)) + (
        (UNDEFINED_CHECK,) if native else ())
    return hashlib.sha256(repr(what).encode()).hexdigest()[:16]


#: The most seconds the triage of a finding (its report's reproduce command, run once) may take.
TRIAGE_TIMEOUT_S = 900.0


@dataclass
class Campaign:
    options: Options
    log: object = print
    thresholds: object = None
    records: dict = field(default_factory=dict)
    judged_now: int = 0
    stopping: bool = False  #: set on an interruption: an answer that comes after it is not journaled
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> Summary:
        self.thresholds = self.thresholds or thresholds_file.load(self.options.thresholds)  # refused before any work
        combinations = check(self.options)
        out = self.options.out
        out.mkdir(parents=True, exist_ok=True)
        with CampaignLock(out, self.options.seed):
            check_own_files(out)  # again, under the lock: nothing is read or written through a link
            _touch_own(out / OWN_MARK)
            journal = Journal(out / JOURNAL)
            self.records = journal.load()  # every line verified (one line naming a bad one, exit 2)
            resumed = sum(1 for line in self.records.values() if self._reusable(line))
            if resumed:
                self.log(f"continuing: {resumed} schedules already judged in {out / JOURNAL}")
            started = time.monotonic()
            deadline = started + self.options.minutes * 60
            raise_if_signalled()  # a Ctrl-C that landed where it was dropped: no worker is started
            local = pools.LocalPool(out / WORK_DIR, self.options.jobs)
            pool = local
            stopped = threads = None
            try:
                if self.options.cluster:
                    pool = pools.ClusterPool(self.options.cluster, local)
                self.log(f"building and running on {pool.where}")
                # One set of threads for the whole campaign: a worker child dies with the thread that
                # started it (Linux's parent-death signal is the thread's), so the threads outlive
                # every child they start
                threads = concurrent.futures.ThreadPoolExecutor(pool.size, thread_name_prefix="fuzz")
                for n, combination in enumerate(combinations):
                    stopped = self._combination(combination, n, len(combinations), pool, threads, journal, deadline)
                    if stopped:
                        break
            finally:
                self.stopping = True  # whatever answers now (a child ended below) is no verdict
                pool.close()
                if threads is not None:
                    threads.shutdown(wait=True, cancel_futures=True)
                shutil.rmtree(out / WORK_DIR, ignore_errors=True)
            # an interruption whose exception was dropped where it landed (suite.errors.on_signal)
            # ends the campaign all the same: 130, and no summary of a campaign that seems complete
            raise_if_signalled()
            summary = dataclasses.replace(
                self.summary(combinations, time.monotonic() - started, stopped), where=pool.where,
                thresholds={"source": self.thresholds.source, "lambda": self.thresholds.bound.lam,
                            "max_fraction": self.thresholds.bound.max_fraction})
            _write_own(out / SUMMARY, json.dumps(summary.to_json(), indent=1, sort_keys=True))
        return summary

    def _reusable(self, line: JournalLine | None) -> bool:
        return (line is not None and line.seed == self.options.seed and line.target in targets.names()
                and line.judged_by == judged_by(self.thresholds, targets.get(line.target)))

    def summary(self, combinations: list[Combination], elapsed_s: float, stopped: str | None) -> Summary:
        mine = [line for line in self.records.values() if self._reusable(line)]
        return summarize(mine, combinations, elapsed_s, self.judged_now, stopped)

    # ------------------------------------------------------------------ one combination

    def _combination(self, combination: Combination, position: int, count: int, pool, threads, journal: Journal,
                     deadline: float) -> str | None:
        opts = self.options
        base = f"{combination.workload.id}|{combination.dtype}|{combination.target.name}|seed{opts.seed}"
        items = [("order", name, None) for name in schedules.ORDERS]
        items += [("trace", str(i), None) for i in range(opts.traces)]
        kinds = list(plant.KINDS)  # plant p goes to combination p mod count, of kind p mod the kinds
        items += [("plant", f"{kinds[p % len(kinds)]}#{p}", p) for p in range(opts.plant) if p % count == position]
        todo = [item for item in items if not self._reusable(self.records.get(f"{base}|{item[0]}:{item[1]}"))]
        if not todo:
            return None
        self.log(f"{combination.label}: {len(todo)} of {len(items)} schedules to judge")
        combination.expected = _expected(combination)
        # the PrimFunc made here, before any thread asks for it: Relax's BlockBuilder, which makes a
        # model's, is not thread-safe (a finding's thread and the design space made it at once)
        workloads.prim_func(combination.workload, combination.dtype)
        # the unscheduled function is the reference run, not a schedule under test: the timeout that
        # makes a slow schedule a finding does not apply to it
        timeout = timeout_of(opts, combination.target)
        # Ctrl-C is looked for at each phase's end (raise_if_signalled), besides where it lands: a
        # signal that lands in a callback which drops the exception (suite.errors.on_signal; once
        # during design-space generation) is only recorded
        raise_if_signalled()  # before the first worker child starts
        try:
            before = self._ask(pool, combination, {"order": "default"}, base, "before", max(timeout, BEFORE_TIMEOUT_S))
        except pools.Lost as err:
            self.log(f"{combination.label}: the unscheduled function was {err}; nothing of it is judged this time")
            return None
        if before.failure is not None:
            self.log(shown(f"{combination.label}: the unscheduled function does not build and run here "
                           f"({before.failure.message}); nothing of it is judged"))
            return None
        combination.before = _load(before.dir / "output.npy")
        if (before.dir / "twin.npy").exists():
            combination.before_twin = _load(before.dir / "twin.npy")
        shutil.rmtree(before.dir, ignore_errors=True)
        spaces = None
        # Sampled here, one ahead of the pool's places, while the pool builds and runs: each
        # schedule is journaled by the thread that judged it, as it completes.
        running: set = set()
        finishing = False
        try:
            for kind, name, plant_number in todo:
                raise_if_signalled()  # between schedules (and after the unscheduled function's run)
                if time.monotonic() > deadline:
                    finishing = True
                    return "time"
                schedule = Schedule(id=f"{base}|{kind}:{name}", seed=opts.seed,
                                    judged_by=judged_by(self.thresholds, combination.target),
                                    workload=combination.workload.id, dtype=combination.dtype,
                                    target=combination.target.name, kind=kind, name=name)
                if kind != "order":
                    if spaces is None and opts.traces:
                        made = time.perf_counter()
                        spaces = sampling.design_space(combination.workload, combination.dtype, combination.target)
                        raise_if_signalled()  # after design-space generation
                        self.log(f"{combination.label}: {len(spaces)} design spaces in "
                                 f"{time.perf_counter() - made:.1f} s")
                    index = int(name) if kind == "trace" else (plant_number % opts.traces if opts.traces else None)
                    if index is not None:  # else a plant in the unscheduled function
                        trace, resampled = sampling.sample(combination.workload, combination.dtype,
                                                           combination.target, spaces, opts.seed, index)
                        raise_if_signalled()  # after sampling: before its schedule goes to a worker
                        schedule = dataclasses.replace(schedule, trace=trace, resampled=resampled, trace_index=index)
                    if kind == "plant":
                        schedule = dataclasses.replace(schedule, planted=name.split("#")[0], expected=plant.EXPECTED)
                running.add(threads.submit(self._one, pool, combination, journal, schedule))
                while len(running) > pool.size:
                    done, running = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                    for future in done:
                        future.result()
            finishing = True
        finally:
            # at the end or at --minutes, the schedules begun are finished and journaled; on an
            # interruption (or an error) they are dropped: those not begun never begin, the pool
            # starts no child again, and the children running are ended now (their threads are
            # told Stopping at once)
            if not finishing:
                self.stopping = True
                for future in running:
                    future.cancel()
                pool.close()
            for future in concurrent.futures.as_completed(running):
                if finishing:
                    future.result()
        return None

    def _one(self, pool, combination: Combination, journal: Journal, schedule: Schedule) -> None:
        """Judge one schedule and journal it (in a thread of the campaign)."""
        started = time.perf_counter()
        try:
            judged = self._judge(pool, combination, schedule.request(), schedule.id)
            planted = schedule.kind == "plant"
            if planted and judged.outcome is Outcome.NOT_APPLICABLE and schedule.trace is not None:
                shutil.rmtree(judged.dir, ignore_errors=True)
                # the sampled schedule has nothing of that kind: the unscheduled one may
                schedule = dataclasses.replace(schedule, trace=None, trace_index=None, planted_in="default")
                judged = self._judge(pool, combination, schedule.request(), schedule.id)
            if planted and judged.outcome.is_verdict and judged.outcome is not Outcome.UNDEFINED \
                    and self._no_effect(pool, combination, schedule, judged):
                judged = dataclasses.replace(judged, outcome=Outcome.NOT_APPLICABLE, message=NO_EFFECT, summary="",
                                             first_wrong=None)
            line = JournalLine.judged(schedule, judged, round(time.perf_counter() - started, 3))
            if not planted and line.outcome.is_finding and not self.stopping:
                line = dataclasses.replace(line, finding=self._keep_finding(pool, combination, line))
                _keep_log(judged.dir, self.options.out / line.finding.dir)
            shutil.rmtree(judged.dir, ignore_errors=True)
        except pools.Stopping:  # the campaign is stopping: not judged, the rerun judges it
            return
        except pools.Lost as err:  # not judged: the rerun judges it
            if not self.stopping:
                self.log(f"{combination.label} {schedule.kind} {schedule.name}: {err}; not judged, a rerun judges it")
            return
        with self._lock:
            if self.stopping:  # the child was ended under it: no verdict
                if line.finding is not None:  # kept whole as the campaign stopped: not left unjournaled
                    shutil.rmtree(self.options.out / line.finding.dir, ignore_errors=True)
                return
            self.records[line.id] = journal.append(line)
            self.judged_now += 1
        self.log(shown(f"{combination.label} {line.kind} {line.name}: {line.outcome}"
                       + (f" ({line.message})" if line.message else "")))

    def _no_effect(self, pool, combination: Combination, schedule: Schedule, judged: Judged) -> bool:
        """Whether a planted program's output is the unplanted program's, bit for bit: the edit
        landed where it changes nothing (a stride on an index that is always even, a loop whose
        last iteration writes what an earlier one did), so it measures nothing of the oracle."""
        planted = _load(judged.dir / "output.npy")
        if schedule.trace is None:
            return verdict.same_bits(planted, combination.before)
        unplanted = self._ask(pool, combination, {"trace": schedule.trace}, "", f"{schedule.id}|unplanted")
        try:
            return unplanted.failure is None and verdict.same_bits(planted, _load(unplanted.dir / "output.npy"))
        finally:
            shutil.rmtree(unplanted.dir, ignore_errors=True)

    def _ask(self, pool, combination: Combination, request: dict, base: str, name: str,
             timeout_s: float | None = None) -> Answer:
        """The worker's answer to ``request``, read (:meth:`Answer.parse`): the suite's own refusal
        there, not the schedule's, is a UserError."""
        where = self.options.out / WORK_DIR / "requests" / _safe(f"{base}|{name}")
        answer = pool.ask({"workload": combination.workload.id, "dtype": combination.dtype,
                           "target": combination.target.name, "dir": str(where), **request},
                          timeout_s or timeout_of(self.options, combination.target))
        return Answer.parse(answer, where)

    def _judge(self, pool, combination: Combination, request: dict, name: str) -> Judged:
        """The outcome of one schedule: a verdict (with its summary and first wrong element), or
        why there is none (the worker's failure: BUILD_FAILED, RUN_FAILED, CRASH, TIMEOUT, SKIPPED,
        NOT_APPLICABLE)."""
        answer = self._ask(pool, combination, request, "", name)
        if answer.failure is not None:
            return Judged(answer.failure.outcome, answer.failure.message, answer.dir)
        after = _load(answer.dir / "output.npy")
        twin = answer.dir / "twin.npy"
        twin_after = _load(twin) if twin.exists() and combination.before_twin is not None else None
        judgement = verdict.judge(combination.expected, combination.before, after,
                                  combination.before_twin if twin_after is not None else None, twin_after,
                                  thresholds=self.thresholds, undefined=answer.undefined)
        return Judged(Outcome(judgement.kind), "", answer.dir, summary=judgement.summary,
                      first_wrong=judgement.first)

    # ------------------------------------------------------------------ findings

    def _keep_finding(self, pool, combination: Combination, line: JournalLine) -> Finding:
        """The finding of the judged schedule ``line`` (no plant): its directory (its place in the
        journal: relative to the out directory, which travels whole) with the trace, minimised
        trace (:func:`suite.fuzz.blame.minimise`), TVMScript before and after, the blame
        (``blame.json``: :func:`suite.fuzz.blame.attribute`) and report, and its key. Every attempt
        is built by the campaign's workers (its compiler, environment and hooks), each in a directory
        and to a kernel file of its own. Interrupted (the campaign stopping), the directory is
        removed: a finding is either journaled whole or not there, and the rerun judges it again."""
        own = f"{FINDINGS_DIR}/{_safe(line.id)}"
        where = self.options.out / own
        _make_own_dir(where)
        try:
            return self._finding_in(pool, combination, line, own, where)
        except BaseException:
            shutil.rmtree(where, ignore_errors=True)
            raise

    def _finding_in(self, pool, combination: Combination, line: JournalLine, own: str, where: Path) -> Finding:
        kept = line.request()
        attempts = itertools.count()

        def judge(extra: dict) -> tuple[Outcome, str]:  # each attempt in a directory of its own
            if self.stopping:
                raise pools.Stopping(pools.STOPPING)
            again = self._judge(pool, combination, {**kept, **extra}, f"{line.id}|attempt-{next(attempts)}")
            shutil.rmtree(again.dir, ignore_errors=True)
            return again.outcome, again.message

        func = workloads.prim_func(combination.workload, combination.dtype)
        _write_own(where / "before.py", _script(func))
        argv = self._reproduce_argv(combination, where, line.trace is not None)
        minimised = reduced = printed = None
        if line.trace is not None:
            _write_own(where / "trace.json", json.dumps(line.trace))
            check = _ReproducerCheck(line, argv, where, lambda: self.stopping)
            reduced = check.minimised(lambda trace: blame.same_failure(line.outcome, line.message,
                                                                       *judge({"trace": trace})),
                                      self.options.minimise_tries, blame.replayable(func))
            minimised = reduced.trace
            _write_own(where / "minimised.json", json.dumps(minimised))
            printed = check.printed.get(repr(minimised))
            kept = {"trace": minimised}
        last = self._ask(pool, combination, {**kept, "passes": True}, "", f"{line.id}|finding")
        passes = None
        after, ran = last.dir / "after.py", last.dir / "passes.json"
        try:  # the worker's files, read as data: never through a link
            if after.exists() or after.is_symlink():
                _write_own(where / "after.py", sandbox.read_back(after))
            if ran.exists() or ran.is_symlink():
                passes = json.loads(sandbox.read_back(ran))
        except (OSError, ValueError) as err:
            raise UserError(f"{last.dir}: not the files the campaign's worker writes ({err}); no finding of it") from None
        finally:
            shutil.rmtree(last.dir, ignore_errors=True)
        blamed = None
        if line.outcome.is_wrong and isinstance(passes, list) and all(isinstance(p, str) for p in passes):
            blamed = blame.attribute(line.outcome, minimised, passes, judge, compat.PASS_SWITCHES)
            _write_own(where / "blame.json", json.dumps(
                {**blamed.to_json(), "original_instructions": len(line.trace[0]) if line.trace else None,
                 "minimised_instructions": reduced.instructions if reduced else None,
                 "minimising_builds": reduced.tries if reduced else 0,
                 "one_minimal": reduced.complete if reduced else None,
                 "reproduce_checks": check.runs if reduced else 0}, indent=1))
        shrunk = self._shrunk(pool, combination, line, minimised, where) if minimised is not None else None
        key = dedup_key(line.outcome, line.name, line.message, blamed)
        if printed is None and line.outcome.is_wrong:  # a crash or a hang would only crash or hang again
            printed = _printed(argv, where, lambda: self.stopping)
            if printed is None:
                raise pools.Stopping(pools.STOPPING)
        _write_own(where / "report.md", _report(combination, line, key, Reproduce(argv, printed))
                   + blame.report_words(line.outcome, reduced, blamed) + shrink.report_words(shrunk))
        return Finding(own, key)

    def _shrunk(self, pool, combination: Combination, line: JournalLine, trace: list,
                where: Path) -> shrink.Reproducer | None:
        """The finding's program made small (:func:`suite.fuzz.shrink.shrink`), each smaller one
        built and judged as the campaign judges (its before program and the scheduled one by the
        campaign's workers, triage's verdict against the small chain's reference), kept in
        ``where`` as ``reproducer_before.py`` and ``reproducer_after.py`` with ``reproducer.json``;
        for a wrong result, the triage command on the two files run once (on triage's own inputs,
        else on the small workload's, kept in ``reproducer_inputs/``). None for a crash or a hang
        (their report has the worker's log, and a hang would wait out the timeout at each size)."""
        if not line.outcome.is_wrong:
            return None
        attempts, builds = itertools.count(), [0]
        timeout = timeout_of(self.options, combination.target)

        def small(chain: dict) -> Combination:
            made = Combination(shrink.workload(combination.workload, chain), combination.dtype, combination.target)
            made.expected = _expected(made)
            return made

        def judge(chain: dict, candidate: list) -> tuple[Outcome, str]:
            if self.stopping:
                raise pools.Stopping(pools.STOPPING)
            name, made = f"{line.id}|shrink-{next(attempts)}", small(chain)
            before = self._ask(pool, made, {"order": "default", "chain": chain}, "", f"{name}-before",
                               max(timeout, BEFORE_TIMEOUT_S))
            builds[0] += 1
            try:
                if before.failure is not None:  # no before program of this size: none to judge against
                    return before.failure.outcome, before.failure.message
                made.before = _load(before.dir / "output.npy")
                if (before.dir / "twin.npy").exists():
                    made.before_twin = _load(before.dir / "twin.npy")
            finally:
                shutil.rmtree(before.dir, ignore_errors=True)
            again = self._judge(pool, made, {"trace": candidate, "chain": chain}, name)
            builds[0] += 1
            shutil.rmtree(again.dir, ignore_errors=True)
            return again.outcome, again.message

        found = shrink.shrink(combination.workload, combination.dtype, trace, line.outcome, line.message, judge,
                              self.options.shrink_tries)
        _write_own(where / "reproducer_before.py", found.before)
        _write_own(where / "reproducer_after.py", found.after)
        argv = ["triage", "reproducer_before.py", "reproducer_after.py", "--target", combination.target.name]
        if self.options.thresholds is not None:
            argv += ["--thresholds", str(self.options.thresholds.absolute())]
        started = time.monotonic()
        printed = _printed(argv, where, lambda: self.stopping)
        if printed is not None and printed.split(" ")[0] not in {o.value for o in Outcome if o.is_wrong}:
            made = shrink.workload(combination.workload, found.chain)  # triage's own inputs do not show it
            func = shrink.prim_func(made, combination.dtype)
            _make_own_dir(where / "reproducer_inputs")
            given = []
            for name, array in zip(compat.param_names(func), workloads.make_inputs(made, combination.dtype)):
                data = io.BytesIO()  # bfloat16 as float32, as the finding's own inputs/ are kept
                np.save(data, array.astype(np.float32) if array.dtype == floats.bfloat16_type() else array,
                        allow_pickle=False)
                _write_own(where / "reproducer_inputs" / f"{_safe(name)}.npy", data.getvalue())
                given.append(f"{name}=reproducer_inputs/{_safe(name)}.npy")
            argv += ["--inputs", ",".join(given)]
            printed = _printed(argv, where, lambda: self.stopping)
        if printed is None:
            raise pools.Stopping(pools.STOPPING)
        reproducer = shrink.Reproducer(found, builds[0], Reproduce(argv, printed).command, printed,
                                       time.monotonic() - started)
        _write_own(where / "reproducer.json", json.dumps(reproducer.to_json(), indent=1))
        return reproducer

    def _reproduce_argv(self, combination: Combination, where: Path, has_trace: bool) -> list[str]:
        """The triage command (after ``tvm-suite``) that reproduces the finding in ``where``: its
        before program and minimised trace or after program, on the workload's inputs (written
        to ``where/inputs`` here), under the campaign's thresholds."""
        inputs = []
        names = compat.param_names(workloads.prim_func(combination.workload, combination.dtype))
        arrays = workloads.make_inputs(combination.workload, combination.dtype)
        _make_own_dir(where / "inputs")
        for name, array in zip(names, arrays):
            data = io.BytesIO()  # bfloat16 as float32 (the same values): np.save keeps it as raw records
            np.save(data, array.astype(np.float32) if array.dtype == floats.bfloat16_type() else array,
                    allow_pickle=False)
            _write_own(where / "inputs" / f"{_safe(name)}.npy", data.getvalue())
            inputs.append(f"{name}=inputs/{_safe(name)}.npy")
        after = ["--trace", "minimised.json"] if has_trace else ["after.py"]
        argv = ["triage", "before.py", *after, "--target", combination.target.name, "--inputs", ",".join(inputs)]
        if self.options.thresholds is not None:
            argv += ["--thresholds", str(self.options.thresholds.absolute())]
        return argv


class _ReproducerCheck:
    """A finding's trace minimised to one its report's own reproduce command reproduces (issue 63):
    the command run as a user runs it (a ``tvm-suite triage`` process of its own in the finding's
    directory, its programs built and run in triage's sandboxed child) on the trace as
    ``minimised.json`` prints the finding's verdict. The campaign's worker judges each candidate
    (:func:`suite.fuzz.blame.minimise`), and the command is run on the trace kept: once, where the
    two agree. Where they do not (a worker process's earlier state, a trace triage refuses as one
    that "applies nothing"), minimisation starts again from the sampled trace, and each candidate
    the worker keeps is kept only where the command gives the verdict too. Where the command does
    not give it on the sampled trace either (checked once, at the first candidate it refuses), no
    candidate can: minimisation goes on by the worker's judgement alone, and the report quotes
    what the command printed. A crash or a hang (no verdict of triage's) is the worker's alone."""

    def __init__(self, line: JournalLine, argv: list[str], where: Path, stopping):
        self.line, self.argv, self.where, self.stopping = line, argv, where, stopping
        self.printed: dict[str, str] = {}  #: repr(trace) -> the first line the command printed on it
        self.runs = 0  #: the command's runs
        self._sampled_reproduces: bool | None = None

    def minimised(self, worker_fails, tries: int, repaired) -> blame.Minimised:
        trace = self.line.trace
        reduced = blame.minimise(trace, worker_fails, tries, repaired)
        if not self.line.outcome.is_wrong or self._reproduces(reduced.trace):
            return reduced
        if reduced.trace == trace:  # the command does not give the verdict on the sampled trace
            return reduced
        again = blame.minimise(trace, lambda candidate: self._fails(candidate, worker_fails), tries, repaired)
        return dataclasses.replace(again, tries=reduced.tries + again.tries)

    def _fails(self, trace: list, worker_fails) -> bool:
        if not worker_fails(trace):
            return False
        if self._sampled_reproduces is False or self._reproduces(trace):
            return True
        if self._sampled_reproduces is None:
            self._sampled_reproduces = self._reproduces(self.line.trace)
        return not self._sampled_reproduces

    def _reproduces(self, trace: list) -> bool:
        _write_own(self.where / "minimised.json", json.dumps(trace))
        self.runs += 1
        said = _printed(self.argv, self.where, self.stopping)
        if said is None:
            raise pools.Stopping(pools.STOPPING)
        self.printed[repr(trace)] = said
        return said.startswith(f"{self.line.outcome} ")


def _touch_own(path: Path) -> None:
    """Make ``path`` (the campaign's mark) where it is not there: never through a link."""
    try:
        fd = _open_own(path, os.O_WRONLY | os.O_CREAT, "mark")
    except OSError as err:
        raise CannotWrite(err.errno, err.strerror, str(path)) from None
    if fd is not None:
        os.close(fd)


def _make_own_dir(path: Path) -> None:
    """``path`` and the directories above it up to the out directory, made where missing: each a
    directory of its own, not a link to one (UserError)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CannotWrite(err.errno, err.strerror, str(path)) from None
    for where in (path.parent, path):
        mode = os.lstat(where).st_mode
        if not stat.S_ISDIR(mode):
            raise _not_own(where, _kind_of(mode))


def _write_own(path: Path, content: str | bytes) -> None:
    """``content`` as the campaign's file ``path``, written whole and renamed into place (a link or
    another kind of file there is refused, never written through or replaced)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise _not_own(path, _kind_of(mode))
    data = content.encode() if isinstance(content, str) else content
    cache.write_file(path, lambda tmp: Path(tmp).write_bytes(data))


def _script(func) -> str:
    from suite.triage import tvmscript

    return tvmscript.script(func, "main")


def dedup_key(outcome: Outcome, name: str, message: str, blamed: blame.Blame | None) -> str:
    """What two findings share when they are one bug: a wrong result's (guilty pass, guilty
    primitive, verdict) (:attr:`suite.fuzz.blame.Blame.key`; the order ``name`` where it has no
    blame); a crash's or a hang's first line of its ``message``."""
    if outcome in (Outcome.CRASH, Outcome.TIMEOUT):
        return f"{outcome}: {message.splitlines()[0] if message else ''}"
    if blamed is None:
        return f"{outcome}: order {name}"
    return blamed.key


@dataclass(frozen=True)
class Reproduce:
    """A finding's reproduce command (``tvm-suite`` and ``argv``, run in the finding's directory)
    and the first line it printed when the campaign ran it (None: not run, a crash or a hang)."""

    argv: list[str]
    printed: str | None

    @property
    def command(self) -> str:
        return shlex.join(["tvm-suite", *self.argv])


def _printed(argv: list[str], where: Path, stopping) -> str | None:
    """The first line ``tvm-suite ARGV`` prints run in ``where`` (its verdict), or why it printed
    none; None where the campaign is ``stopping()`` meanwhile (the child is ended at once)."""
    process = children.start_python(["-c", "import sys; from suite.cli import main; sys.exit(main())", *argv],
                                    cwd=where, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + TRIAGE_TIMEOUT_S
    while True:
        try:
            out, err = process.communicate(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            if stopping() or time.monotonic() > deadline:
                children.end(process)
                process.communicate()
                return None if stopping() else f"(no verdict in {TRIAGE_TIMEOUT_S:g} s: ended)"
    lines = [line for line in out.decode(errors="replace").splitlines() if line.strip()]
    if lines:
        return lines[0]
    said = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
    return f"(exit {process.returncode}: {said[-1] if said else 'nothing printed'})"


def _keep_log(request_dir: Path, finding_dir: Path) -> None:
    """The worker's log of a crash or hang, or TVM's internal error with its traceback, that the
    request's directory holds (``worker.log``), kept in the finding's directory."""
    log = request_dir / LOG
    if log.exists() and not log.is_symlink():
        try:
            _write_own(finding_dir / LOG, sandbox.read_back(log))
        except OSError:
            pass  # the message in the journal has its last line


def _report(combination: Combination, line: JournalLine, key: str, reproduce: Reproduce) -> str:
    """A report for TVM's issue tracker: what, the minimal program, how to reproduce, the verdict:
    the campaign's, and what the reproduce command printed when it was run, word for word."""
    what = {Outcome.CHANGED: "computes a different result", Outcome.UNDEFINED: "is undefined",
            Outcome.SHIFTED: "moves the error beyond any reordering (within the rounding bound: suspect)",
            Outcome.CRASH: "crashes TVM", Outcome.TIMEOUT: "hangs"}[line.outcome]
    has_trace = "--trace" in reproduce.argv
    schedule = "a MetaSchedule trace (minimised: minimised.json)" if has_trace else f"the loop order {line.name}"
    after = "after.py" if has_trace or line.outcome.is_wrong else "(none)"
    title = (f"# {combination.workload.id} ({combination.dtype}, {combination.target.name}) scheduled by {schedule} "
             f"{what}")
    found_by = f"TVM {compat.installed_version()}. Found by `tvm-suite fuzz` (seed {line.seed}), filed under: {key}."
    programs = (f"The function before scheduling is before.py; after the schedule, {after}. The inputs, the "
                "workload's, are in inputs/.")
    lines = [title, "", found_by, "", programs, "",
             "Reproduce (the suite's triage judges both programs against the exact value):", "", "```sh",
             reproduce.command, "```", ""]
    if line.outcome.is_wrong:
        lines += [f"The campaign's verdict on the schedule it sampled: {line.outcome}: {line.summary or ''}", ""]
        if reproduce.printed is not None:
            differs = "" if reproduce.printed.startswith(f"{line.outcome} ") else (
                f" (not {line.outcome}: the command does not give the campaign's verdict on this program"
                + (", nor on the trace the campaign sampled: it was minimised by the campaign's judgement alone)"
                   if has_trace else ")"))
            lines += [f"What the command above printed, run here when the finding was kept{differs}:", "", "```",
                      reproduce.printed, "```", ""]
    else:
        lines += [f"What happened: {line.message}", "",
                  (f"What the worker wrote (its last words, or TVM's error with its traceback): {LOG}, where it "
                   "left one."), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------- the summary


def upper_bound_95(found: int, trials: int) -> float | None:
    """The exact (Clopper-Pearson) 95% upper bound of a rate seen ``found`` times in ``trials``."""
    if trials == 0:
        return None
    from scipy.stats import binomtest

    return float(binomtest(found, trials).proportion_ci(0.95).high)


@dataclass(frozen=True)
class Found:
    """One finding after deduplication: its key, outcome, how many schedules share it, the first's directory."""

    key: str
    outcome: Outcome
    count: int
    first: str


@dataclass(frozen=True)
class PlantedKind:
    """The plants of one kind: what they should be judged, and how many were judged what (in the
    order first seen)."""

    expected: str
    verdicts: dict[Outcome, int]


@dataclass(frozen=True)
class Recall:
    """The planted bugs: how many applied and changed the output (``planted``), how many of those
    were judged wrong (``caught``), by kind; not applicable, of which the edit changed nothing."""

    planted: int
    caught: int
    kinds: dict[str, PlantedKind]
    not_applicable: int
    no_effect: int

    @property
    def recall(self) -> float | None:
        return self.caught / self.planted if self.planted else None


@dataclass(frozen=True)
class Summary:
    """What a campaign's journal says (:func:`summarize`): the verdict counts of each combination,
    the findings, the recall and the false alarms, with the run's figures. :meth:`to_json` is
    ``summary.json`` and ``--json``'s document, :meth:`text` the table for people."""

    table: dict[str, dict[Outcome, int]]  #: by combination's label, every outcome's count
    findings: list[Found]  #: the most serious first
    plant: Recall
    unmodified_judged: int
    false_changed: int
    unmodified_shifted: int
    false_changed_upper_95: float | None
    judged_this_run: int
    seconds: float
    judged_per_hour: float | None
    stopped: str | None  #: "time": stopped at --minutes
    exit_status: ExitCode
    thresholds: dict | None = None  #: the thresholds' source, lambda and limit, once the campaign ran
    where: str | None = None  #: where the schedules were built and run, once the campaign ran
    #: Unmodified schedules judged CHANGED, UNDEFINED or SHIFTED: named orders, sampled traces.
    wrong_orders: int = 0
    wrong_traces: int = 0

    @property
    def compiler_fault(self) -> bool:
        """Whether named orders and sampled traces both came out wrong: the compiler or the runtime
        is at fault, not the oracle (its false alarms are counted on a sound compiler)."""
        return self.wrong_orders > 0 and self.wrong_traces > 0

    def to_json(self) -> dict:
        found = {
            "table": {label: {o.value: n for o, n in row.items()} for label, row in self.table.items()},
            "findings": [{"key": f.key, "outcome": f.outcome.value, "count": f.count, "first": f.first}
                         for f in self.findings],
            "plant": {"planted": self.plant.planted, "caught": self.plant.caught, "recall": self.plant.recall,
                      "kinds": {kind: {"expected": entry.expected,
                                       "verdicts": {o.value: n for o, n in entry.verdicts.items()}}
                                for kind, entry in self.plant.kinds.items()},
                      "not_applicable": self.plant.not_applicable, "no_effect": self.plant.no_effect},
            "unmodified_judged": self.unmodified_judged, "false_changed": self.false_changed,
            "unmodified_shifted": self.unmodified_shifted, "false_changed_upper_95": self.false_changed_upper_95,
            "judged_this_run": self.judged_this_run, "seconds": self.seconds,
            "judged_per_hour": self.judged_per_hour, "stopped": self.stopped, "exit_status": int(self.exit_status),
            "unmodified_wrong": {"orders": self.wrong_orders, "traces": self.wrong_traces},
            "compiler_fault": self.compiler_fault,
        }
        if self.thresholds is not None:
            found["thresholds"] = self.thresholds
        if self.where is not None:
            found["where"] = self.where
        return found

    def text(self) -> str:
        """The summary for people: verdict counts per combination, findings, recall, false alarms.
        Text read from the journal (labels, keys, places) is :func:`shown`: no character of it acts
        on the terminal."""
        columns = [o for o in OUTCOMES if any(row[o] for row in self.table.values())]
        labels = {label: shown(label) for label in self.table}
        width = max([len(label) for label in labels.values()] + [12])
        lines = [f"{'combination':<{width}}  " + "  ".join(f"{o:>10}" for o in columns)]
        for label, row in self.table.items():
            lines.append(f"{labels[label]:<{width}}  " + "  ".join(f"{row[o]:>10}" for o in columns))
        lines.append("")
        if self.findings:
            lines.append(f"findings ({len(self.findings)} after deduplication):")
            lines += [f"  {f.count:>3} x {shown(f.key)}  ({shown(f.first)})" for f in self.findings]
        else:
            lines.append("findings: none")
        planted = self.plant
        if planted.planted:
            lines.append(f"planted bugs: {planted.caught} of {planted.planted} judged CHANGED, SHIFTED or UNDEFINED "
                         f"(recall {planted.recall:.0%}); not applicable: {planted.not_applicable}, of which "
                         f"{planted.no_effect} changed nothing (output bit for bit the unplanted program's)")
            for kind, entry in planted.kinds.items():
                verdicts = ", ".join(f"{k} {v}" for k, v in entry.verdicts.items())
                lines.append(f"  {shown(kind):<24} should be {shown(entry.expected)}: {verdicts}")
        bound = self.false_changed_upper_95
        if self.compiler_fault:
            lines.append(f"the default and sampled schedules both differ from the reference: a compiler or runtime "
                         f"fault, not the oracle's (CHANGED, UNDEFINED or SHIFTED: {self.wrong_orders} named orders and "
                         f"{self.wrong_traces} sampled traces of {self.unmodified_judged} unmodified schedules)")
        else:
            lines.append(f"false CHANGED on unmodified schedules: {self.false_changed} of {self.unmodified_judged}"
                         + (f" (95% upper bound {bound:.3f})" if bound is not None else "")
                         + f"; SHIFTED (suspect, kept as findings): {self.unmodified_shifted}")
        rate = self.judged_per_hour
        lines.append(f"{self.judged_this_run} judged in {self.seconds:.0f} s"
                     + (f" ({rate:.0f} per hour)" if rate else "")
                     + ("; stopped at --minutes: rerun with the same --seed and --out to continue"
                        if self.stopped == "time" else ""))
        return "\n".join(lines)


def summarize(lines: list[JournalLine], combinations: list[Combination], elapsed_s: float, judged_now: int,
              stopped: str | None) -> Summary:
    table = {}
    for c in combinations:
        table[c.label] = dict.fromkeys(OUTCOMES, 0)
    for line in lines:
        if line.kind != "plant":
            table.setdefault(line.label, dict.fromkeys(OUTCOMES, 0))[line.outcome] += 1
    counts, first = {}, {}
    for line in lines:
        if line.finding:
            found = line.finding.key
            counts[found] = counts.get(found, 0) + 1
            first.setdefault(found, (line.outcome, line.finding.dir))
    findings = sorted((Found(key, first[key][0], count, first[key][1]) for key, count in counts.items()),
                      key=lambda f: FINDINGS.index(f.outcome))
    plants = [line for line in lines if line.kind == "plant"]
    planted = [line for line in plants if line.outcome is not Outcome.NOT_APPLICABLE]
    kinds = {}
    for line in plants:
        entry = kinds.setdefault(line.planted, PlantedKind(line.expected, {}))
        entry.verdicts[line.outcome] = entry.verdicts.get(line.outcome, 0) + 1
    unmodified = [line for line in lines if line.kind != "plant" and line.outcome.is_verdict]
    false_changed = sum(1 for line in unmodified if line.outcome is Outcome.CHANGED)
    status = next((EXIT_STATUS[kind] for kind in FINDINGS if any(f.outcome is kind for f in findings)), ExitCode.OK)
    return Summary(
        table=table, findings=findings,
        plant=Recall(planted=len(planted), caught=sum(1 for line in planted if line.outcome.is_wrong), kinds=kinds,
                     not_applicable=len(plants) - len(planted),
                     no_effect=sum(1 for line in plants if line.message == NO_EFFECT)),
        unmodified_judged=len(unmodified), false_changed=false_changed,
        unmodified_shifted=sum(1 for line in unmodified if line.outcome is Outcome.SHIFTED),
        false_changed_upper_95=upper_bound_95(false_changed, len(unmodified)),
        judged_this_run=judged_now, seconds=round(elapsed_s, 1),
        judged_per_hour=round(judged_now * 3600 / elapsed_s, 1) if elapsed_s > 0 and judged_now else None,
        stopped=stopped, exit_status=status,
        wrong_orders=sum(1 for line in unmodified if line.kind == "order" and line.outcome.is_wrong),
        wrong_traces=sum(1 for line in unmodified if line.kind == "trace" and line.outcome.is_wrong))


def _load(path: Path) -> np.ndarray:
    """An output a worker (confined) left in its request's directory: read as data, never through a
    link, never a pickle. One that is none is refused in one line: the worker is the suite's own, and
    what it left is no verdict."""
    try:
        # np.save keeps a bfloat16 output as raw two-byte records: viewed as bfloat16 again
        return floats.as_saved(np.load(io.BytesIO(sandbox.read_back(path)), allow_pickle=False), floats.BFLOAT16)
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: not an array the campaign's worker writes ({err}); no verdict on it") from None
