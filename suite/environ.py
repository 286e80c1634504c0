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
from pathlib import Path

from suite.errors import UserError


class Kind(enum.Enum):
    DIRECTORY = "an existing directory"
    WRITABLE = "a directory the suite can write to (made if missing)"
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


def resolve(environ=None) -> None:
    """Make every path of :data:`PATHS` set in ``environ`` (default: this process's) absolute and
    check it; a UserError naming the variable and what it must be otherwise."""
    environ = os.environ if environ is None else environ
    for name, (kind, what) in PATHS.items():
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
    if kind is Kind.DIRECTORY:
        if not path.is_dir():
            return "no such directory" if not path.exists() else "not a directory"
        return None
    from suite import cache

    try:
        cache.ensure_dir(path, "")
    except UserError as err:
        return str(err).split(": ", 1)[-1]
    return None
