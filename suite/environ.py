"""The paths the suite takes from the environment: each resolved once, checked, and handed on absolute.

A relative path in the environment means something else in every process that reads it (asv runs
its benchmark processes in directories of its own), and a mistyped one used to read as "nothing
there" (every ``tuned`` skipped for want of a record). `tvm-suite` calls :func:`resolve` before any
work: every variable below that is set is made absolute against the caller's working directory,
checked (a directory that exists; a program that runs; the cache made if missing, and writable),
and written back into the environment, which every child process inherits.
"""

from __future__ import annotations

import enum
import os
import tempfile
from pathlib import Path

from suite.errors import UserError


class Kind(enum.Enum):
    DIRECTORY = "an existing directory"
    WRITABLE = "a directory the suite can write to (made when first written)"
    PROGRAM = "an executable file"


#: Every path the suite reads from the environment, and what it must be.
PATHS = {
    "TVM_SUITE_CACHE": (Kind.WRITABLE, "the cache of builds, outputs and references"),
    "TVM_SUITE_TUNING_RECORDS": (Kind.DIRECTORY, "tuning records in place of the committed ones"),
    "TVM_SUITE_GIT_MIRRORS": (Kind.DIRECTORY, "mirrors of TVM's submodules for source builds"),
    "TVM_SUITE_LLVM_CONFIG": (Kind.PROGRAM, "the llvm-config of source builds"),
    "TVM_SUITE_QEMU_HEXAGON": (Kind.PROGRAM, "a qemu-hexagon that executes HVX floating point"),
    "TVM_SUITE_ASV_ASSETS": (Kind.DIRECTORY, "npm tarballs of the libraries asv's pages load"),
}


#: Directories a command writes into: made if missing, and checked writable before any work.
WRITTEN_BY = {"tune": ("TVM_SUITE_TUNING_RECORDS",)}


def resolve(command: str | None = None, environ=None) -> None:
    """Make every path of :data:`PATHS` set in ``environ`` (default: this process's) absolute and
    check it, for ``command`` (the directories it writes must be writable); a UserError naming the
    variable and what it must be otherwise."""
    environ = os.environ if environ is None else environ
    for name, (kind, what) in PATHS.items():
        if name in WRITTEN_BY.get(command, ()):
            kind = Kind.WRITABLE
        value = environ.get(name)
        if value is None:
            continue
        if not value.strip():
            raise UserError(f"{name} is set but empty ({what}): unset it or name a path")
        path = Path(value).expanduser().absolute()
        problem = _problem(path, kind)
        if problem:
            raise UserError(f"{name}={value}: {problem}; it must be {kind.value} ({what})")
        environ[name] = str(path)


def _problem(path: Path, kind: Kind) -> str | None:
    if kind is Kind.PROGRAM:
        if not path.is_file():
            return "no such file" if not path.exists() else "not a file"
        return None if os.access(path, os.X_OK) else "not executable"
    if path.exists() and not path.is_dir():
        return "not a directory"
    if kind is Kind.DIRECTORY:
        return None if path.is_dir() else "no such directory"
    # Writable: the directory, or the nearest one above it that exists (where it would be made),
    # takes a file; nothing is made here, before the command has checked the rest of its input.
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        return f"{existing} is not a directory"
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".tvm-suite-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return f"cannot be written ({err.strerror or err})"
    return None
