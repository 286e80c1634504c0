"""Python child processes that end with the suite: asv, and the helper that measures ahead.

A child runs in a session of its own, so that a Ctrl-C at the terminal reaches the suite alone (it
decides what to keep, then ends the child with :func:`end`), and it dies with the suite even when
the suite is killed (Linux's PR_SET_PDEATHSIG, set by the child itself: a ``preexec_fn`` would
make Python run its at-fork hooks in the suite's process, and a Ctrl-C that lands in one of them
is dropped).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys

#: ``python -c`` this, then the parent's pid and the child's own arguments: PR_SET_PDEATHSIG (1)
#: with SIGKILL; then, where the parent is still the one that started it, Python again in the same
#: process with those arguments. A parent that died before the prctl (the suite killed as it
#: starts the child: the helper that measures ahead starts right after "measure: started") never
#: sends the signal, and the child, another process's by then, ends at once rather than live on.
_DIE_WITH_PARENT = ("import ctypes, os, signal, sys; ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL); "
                    "os.getppid() == int(sys.argv[1]) or os._exit(1); "
                    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])")


def start_python(args: list[str], **popen) -> subprocess.Popen:
    """``python ARGS`` as a child that ends with this process (``popen``: Popen's other arguments)."""
    return subprocess.Popen([sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *args],
                            start_new_session=True, **popen)


@functools.cache
def _libc():
    """The C library, loaded once: asv's benchmark server loads it before it forks the benchmarks."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """Make this process end (SIGKILL) when its parent does: asv's benchmark server and the
    benchmarks it forks call it, so that an asv that is interrupted or killed leaves none of them
    behind (they would go on measuring and hold the machine). Linux only; elsewhere nothing."""
    try:
        _libc().prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent was gone before the call: nothing would tell us
        os._exit(1)


def end(process: subprocess.Popen) -> None:
    """Stop the child and everything it started (its session), and reap it.

    Every process of the session, not only the child's process group: asv runs each install
    command in a process group of its own (to end it on a timeout), and a TVM source build there
    (pip, cmake, ninja, the compilers) would go on for up to an hour after asv is gone."""
    import psutil

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the child's own group at once: it forks no more
    for member in _session(process.pid):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            member.kill()
    process.wait()


def _session(sid: int) -> list:
    """The processes (psutil's) of session ``sid``."""
    import psutil

    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError):  # gone meanwhile
            if os.getsid(proc.pid) == sid:
                members.append(proc)
    return members


def session_members(sid: int) -> list[int]:
    """The pids of the processes of session ``sid``."""
    return [proc.pid for proc in _session(sid)]
