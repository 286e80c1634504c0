"""A fuzz campaign's directory: the names of its files, the lock a campaign holds while it writes
it (:class:`CampaignLock`: ``.tvm-suite-fuzz.lock``), and every file of it the campaign reads or
writes kept its own regular file, never reached through a link: a link, a FIFO or another kind of
file there is refused in one line before any work (:func:`check_own_files`), a file is opened without
following a link or waiting on a FIFO (:func:`open_own`), and written whole (:func:`write_own`). Text
read from it (the lock's holder, a journal's labels) reaches a terminal as :func:`shown`."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import stat
import time
import unicodedata
from pathlib import Path
from typing import Self

import filelock

from suite import cache
from suite.errors import CannotWrite, UserError

JOURNAL, SUMMARY, FINDINGS_DIR = "journal.jsonl", "summary.json", "findings"
#: Marks an out directory a fuzz made: one without it that holds anything is the user's (fuzz would
#: append to its journal.jsonl, replace its summary.json and remove its work/), so it is refused.
OWN_MARK = ".tvm-suite-fuzz"
#: The lock a campaign holds in its directory while it works (:class:`CampaignLock`), left there.
LOCK = ".tvm-suite-fuzz.lock"
#: Where a campaign of a suite before :data:`LOCK` held its lock (the run store's ``runs/.lock``): a
#: directory of that layout is still a campaign's, continued, and that lock is taken as well.
OLD_LOCK_DIR, OLD_LOCK = "runs", ".lock"
#: The directory the worker children work in (removed at the end of every campaign).
WORK_DIR = "work"


def old_lock_dir(path: Path) -> bool:
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
        if not old_lock_dir(old.parent) or not old.exists():
            return
        fd = open_own(old, os.O_RDONLY, "lock")
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
        fd = open_own(path, os.O_RDONLY, "lock")
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


def open_own(path: Path, flags: int, what: str) -> int | None:
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

def touch_own(path: Path) -> None:
    """Make ``path`` (the campaign's mark) where it is not there: never through a link."""
    try:
        fd = open_own(path, os.O_WRONLY | os.O_CREAT, "mark")
    except OSError as err:
        raise CannotWrite(err.errno, err.strerror, str(path)) from None
    if fd is not None:
        os.close(fd)


def make_own_dir(path: Path) -> None:
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


def write_own(path: Path, content: str | bytes) -> None:
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

def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:150]

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
