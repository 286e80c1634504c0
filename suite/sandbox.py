"""Untrusted programs built and run in a child process that the kernel confines.

TVM turns data into code (a ``pragma_import_llvm`` annotation is LLVM IR linked into the kernel),
so no check of a program's text makes building it safe. Every build and run of a program from
outside (triage's BEFORE and AFTER, schedules, traces, reproducers, fuzz candidates) happens in
a child that bubblewrap (Debian's ``bubblewrap``, the sandbox Flatpak uses) puts in namespaces of
its own:

- no network (a network namespace with no interface but loopback);
- the file system read-only, but for one scratch directory (its home and ``TMPDIR`` too) that
  the suite reads back as data, never following a link there;
- no new privileges (``PR_SET_NO_NEW_PRIVS``, every capability dropped);
- its own process and IPC namespaces; it dies with the suite;
- limits (:class:`Limits`): address space and CPU seconds (``setrlimit``), and processes: the
  ``pids`` cgroup where this machine lets the suite make one, else ``RLIMIT_NPROC`` (which Linux
  does not apply to root: :func:`limits_in_force` says which holds).

Why bubblewrap and not our own: it is small, maintained, packaged by Debian, and does exactly
the namespace and mount work that is easy to get subtly wrong; Landlock and seccomp bindings
would confine writes and calls but not the network namespace or the process tree as simply.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from suite import children
from suite.cache import CACHE_ENV
from suite.errors import UserError

#: The program that confines: Debian's bubblewrap, or the one this variable names.
BWRAP_ENV = "TVM_SUITE_BWRAP"
#: Where a cgroup v1 or v2 hierarchy with the pids controller may be mounted.
_PIDS_HIERARCHIES = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))


@dataclass(frozen=True)
class Limits:
    """What one confined child may use."""

    memory_bytes: int
    cpu_seconds: int
    processes: int
    #: the largest file it may write (no more is read back from it)
    file_bytes: int = 1 << 31

    def words(self) -> str:
        return (f"{self.memory_bytes >> 30} GiB of address space, {self.cpu_seconds:,} CPU seconds, "
                f"{self.processes} processes and threads, files of {self.file_bytes >> 30} GiB")


#: One triage's builds and runs on one target (TVM and LLVM reserve a few GiB of address space).
TRIAGE = Limits(memory_bytes=16 << 30, cpu_seconds=1800, processes=256)
#: A fuzz worker, which builds and runs one schedule after another for a whole campaign.
FUZZ_WORKER = Limits(memory_bytes=16 << 30, cpu_seconds=6 * 3600, processes=256)


class Unavailable(UserError):
    """No sandbox starts here, and the input is not trusted."""


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why no sandbox can start on this machine (None: one can). Tried once per process: a
    confined ``true`` must run."""
    if shutil.which(_bwrap()) is None:
        return f"bubblewrap ({_bwrap()}) is not installed"
    try:
        done = subprocess.run([*_bwrap_args(Path("/")), "--", "true"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap does not start ({err})"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"bubblewrap cannot confine a process here ({lines[-1] if lines else f'exit {done.returncode}'})"
    return None


def require(what: str) -> None:
    """A one-line refusal where no sandbox starts: ``what`` runs only confined, unless trusted."""
    if (reason := unavailable()) is not None:
        raise Unavailable(f"{what} is built and run only in a sandbox, and none starts here: {reason}. Install "
                          "bubblewrap (Debian: apt-get install bubblewrap), or pass --trust-input to run it "
                          "unconfined if you trust where it came from")


def limits_in_force(limits: Limits) -> str:
    """The limits a confined child gets on this machine, in words (for reports and docs)."""
    processes = ("a pids cgroup" if _pids_cgroup(limits.processes) is not None else
                 "RLIMIT_NPROC" if os.geteuid() != 0 else "no limit (root, and no pids cgroup to be had)")
    return f"{limits.words()} (processes: {processes})"


def start_python(args: list[str], scratch: Path, limits: Limits, *, confined: bool = True,
                 **popen) -> subprocess.Popen:
    """``python ARGS`` as a child that ends with this process (:func:`suite.children.start_python`),
    confined to write ``scratch`` alone where ``confined`` (the caller has checked :func:`require`),
    with ``limits`` either way; its home and temporary directory are in ``scratch``, and so is
    its cache where confined."""
    scratch = Path(scratch).resolve()
    home = scratch / ".home"
    home.mkdir(parents=True, exist_ok=True)
    # a cache of its own: what a confined child computes (a tuning log, an emulated run) never
    # reaches the suite's cache, where the next measurement would trust it
    env = {**(popen.pop("env", None) or os.environ), "HOME": str(home), "TMPDIR": str(home)}
    if confined:
        env[CACHE_ENV] = str(home / "cache")
    cgroup = _pids_cgroup(limits.processes)
    # RLIMIT_NPROC counts every process of the user, so only where no cgroup counts the child's own
    limit_args = json.dumps({"as": limits.memory_bytes, "cpu": limits.cpu_seconds, "fsize": limits.file_bytes,
                             "nproc": None if cgroup else limits.processes, "cgroup": str(cgroup) if cgroup else None})
    inner = [sys.executable, *args]
    command = [*_bwrap_args(scratch), "--", *inner] if confined else inner
    return children.start_python(["-c", _LIMITED, limit_args, *command], env=env, **popen)


#: ``python -c`` this, then the limits (JSON) and the command: the limits set and the cgroup
#: joined by this process, which then becomes the command (bubblewrap, or Python unconfined), so
#: that everything the command starts inherits them before any of its code runs.
_LIMITED = ("import json, os, resource, sys; limits = json.loads(sys.argv[1]); "
            "[resource.setrlimit(kind, (value, value)) for kind, value in ((resource.RLIMIT_AS, limits['as']), "
            "(resource.RLIMIT_CPU, limits['cpu']), (resource.RLIMIT_FSIZE, limits['fsize']), "
            "(resource.RLIMIT_NPROC, limits['nproc']), "
            "(resource.RLIMIT_CORE, 0)) if value is not None]; "
            "limits['cgroup'] and open(os.path.join(limits['cgroup'], 'cgroup.procs'), 'w').write(str(os.getpid())); "
            "os.execvp(sys.argv[2], sys.argv[2:])")


def _bwrap() -> str:
    return os.environ.get(BWRAP_ENV) or "bwrap"


def _bwrap_args(scratch: Path) -> list[str]:
    """bubblewrap's options: everything read-only (``/tmp`` too: the suite or its input may live
    there), ``scratch`` writable, /dev, /dev/shm and /proc of its own, every namespace new (network included), no capability, death with the parent."""
    args = [_bwrap(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if scratch != Path("/"):
        args += ["--bind", str(scratch), str(scratch)]
    return args


def signal_of(returncode: int, confined: bool) -> int | None:
    """The signal that ended a child started by :func:`start_python`, or None where it exited:
    bubblewrap exits 128 + N when the program it ran died of signal N."""
    if returncode < 0:
        return -returncode
    if confined and returncode > 128:
        return returncode - 128
    return None


def ended_words(returncode: int, confined: bool) -> str:
    """How a child ended, in words: ``crashed (SIGSEGV)`` or ``exit 3``."""
    number = signal_of(returncode, confined)
    if number is None:
        return f"exit {returncode}"
    try:
        return f"crashed ({signal.Signals(number).name})"
    except ValueError:
        return f"crashed (signal {number})"


#: The largest file read back from a scratch directory (an output array, a result).
MAX_READ_BYTES = 1 << 31


def read_back(path: Path) -> bytes:
    """A file a confined child left in its scratch directory, as bytes: a regular file of at most
    :data:`MAX_READ_BYTES`, never read through a link (the child may have left one to a file of
    the user's). OSError otherwise."""
    # O_NONBLOCK: a FIFO left there must not hang the open (it is then refused as no regular file)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            raise OSError(f"{Path(path).name} is not a regular file of at most {MAX_READ_BYTES >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read()
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=None)
def _pids_cgroup(processes: int) -> Path | None:
    """A pids cgroup of this process's own holding at most ``processes`` tasks, made once and
    removed at exit (and those of suites gone without removing theirs); None where no hierarchy
    lets the suite make one with a pids limit."""
    for hierarchy in _PIDS_HIERARCHIES:
        if not (hierarchy / "cgroup.procs").is_file():
            continue
        _remove_stale(hierarchy)
        group = hierarchy / f"{_GROUP_PREFIX}{os.getpid()}-{processes}"
        try:
            group.mkdir(exist_ok=True)
            (group / "pids.max").write_text(str(processes))
        except OSError:  # not ours to write, or no pids controller in this hierarchy
            _remove_group(group)
            continue
        atexit.register(_remove_group, group)
        return group
    return None


_GROUP_PREFIX = "tvm-suite-sandbox-"


def _remove_stale(hierarchy: Path) -> None:
    with contextlib.suppress(OSError):
        for group in hierarchy.glob(f"{_GROUP_PREFIX}*"):
            pid = group.name[len(_GROUP_PREFIX):].split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                _remove_group(group)


def _remove_group(group: Path) -> None:
    with contextlib.suppress(OSError):  # still holding a process (it ends with us): the kernel keeps it
        group.rmdir()
