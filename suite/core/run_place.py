"""Where a run keeps its side data (:mod:`suite.core.runstore`) and how a run names it: the run
directory's layout (``runs/<machine>/<commit>/``, its bundle beside it), the names a path may be made
of (checked before any path is made), the limits of what a run keeps, and the :class:`RunContext` a
run hands asv's benchmark processes through their environment."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from suite.core.combo import ENV as GRID_ENV
from suite.errors import UserError

RUN_DIR_ENV, COMMIT_ENV, MACHINE_ENV = "TVM_SUITE_RUN_DIR", "TVM_SUITE_COMMIT", "TVM_SUITE_MACHINE"
KINDS = {"timings": ".json", "values": ".json", "peers": ".json", "maps": ".npz", "failures": ".txt",
         "records": ".txt", "code": ".txt"}
RUNS, BUILD, MANIFEST, GATE = "runs", "build.json", "manifest.json", ".gate"
#: A git commit hash (SHA-1 or SHA-256), full or abbreviated: the only commit names paths are made of.
COMMIT = re.compile(r"[0-9a-f]{7,64}")
#: An asv machine name: one path component (it names a directory of asv's results and of the side
#: data), not starting with a dot (the suite's own entries of runs/ do).
MACHINE = re.compile(r"[A-Za-z0-9_][^/\\\x00]{0,99}")
#: A file a run keeps is small (timing samples, a few maps of mean differences); one beyond this is
#: no file of a run, and is refused before it is read.
MAX_FILE_BYTES = 64 << 20
#: A commit's bundle holds one file per combination and kind: thousands, not more.
MAX_MEMBERS = 100_000
#: All members of a bundle together, decompressed: a commit's side data is a few MiB.
MAX_BUNDLE_BYTES = 256 << 20
#: The arrays of one difference map: a few thousand numbers.
MAX_MAP_BYTES = 16 << 20
BUNDLE = ".zip"


class DamagedRunData(UserError):
    """A file a run kept that is damaged or missing (the message names it)."""


def check_commit(commit, where="") -> str:
    """``commit`` when it is a hex commit hash; DamagedRunData (naming ``where``) otherwise, before
    any path is made of it."""
    if not isinstance(commit, str) or not COMMIT.fullmatch(commit):
        raise DamagedRunData(f"{where}{': ' if where else ''}{commit!r:.80} is not a commit hash (hex digits)")
    return commit


def check_machine(machine, where="") -> str:
    """``machine`` when it can name a directory (an asv machine name); DamagedRunData otherwise."""
    if not isinstance(machine, str) or not MACHINE.fullmatch(machine) or machine in (".", ".."):
        raise DamagedRunData(f"{where}{': ' if where else ''}{machine!r:.80} is not a machine name")
    return machine


@dataclass(frozen=True)
class Place:
    """Where the side data of one commit, measured on one machine, lies in a run directory."""

    run_dir: Path
    machine: str
    commit: str

    @property
    def dir(self) -> Path:
        return Path(self.run_dir) / RUNS / check_machine(self.machine) / check_commit(self.commit)

    def file(self, relative_path: str) -> Path:
        return self.dir / relative_path

    @property
    def bundle(self) -> Path:
        """Where the commit's side data lies once sealed: one file beside its directory."""
        return self.dir.with_name(self.dir.name + BUNDLE)

    @property
    def sealed(self) -> bool:
        """The run of the commit sealed its side data (in its bundle, or as an older suite did)."""
        return self.bundle.exists() or self.bundle.is_symlink() or (self.dir / MANIFEST).exists()


@dataclass(frozen=True)
class RunContext:
    """What a run tells asv and the benchmark processes asv starts, through their environment only
    (the run's own stays as it was): :meth:`to_env` writes it (the parent, into its child's
    environment), :meth:`from_env` reads it back (a benchmark process, :func:`current`); the two
    alone name the variables (the grid's are combo.ENV's)."""

    run_dir: Path
    machine: str
    commit: str | None = None  #: None in a history: asv gives each benchmark process its ASV_COMMIT
    grid: dict = field(default_factory=dict)  #: the grid's variables (combo.Grid.to_env)
    #: git configuration of asv's own git commands, as git's GIT_CONFIG_* variables (a history's)
    git_config: dict = field(default_factory=dict)

    @property
    def place(self) -> Place | None:
        """Where the side data of the commit goes; None while no commit is known."""
        return Place(self.run_dir, self.machine, self.commit) if self.commit else None

    def to_env(self) -> dict[str, str]:
        """The variables to add to the child's environment. An absent commit is written empty, so
        that the child never takes one from the parent's environment."""
        return {**self.grid, **self.git_config, RUN_DIR_ENV: str(self.run_dir), MACHINE_ENV: self.machine,
                COMMIT_ENV: self.commit or ""}

    @classmethod
    def from_env(cls, environ) -> RunContext | None:
        """The context ``environ`` carries, its machine and commit checked; None outside a run."""
        run_dir, machine = environ.get(RUN_DIR_ENV), environ.get(MACHINE_ENV)
        if not (run_dir and machine):
            return None
        commit = environ.get("ASV_COMMIT") or environ.get(COMMIT_ENV) or None
        return cls(Path(run_dir), check_machine(machine, MACHINE_ENV),
                   commit and check_commit(commit, "ASV_COMMIT" if environ.get("ASV_COMMIT") else COMMIT_ENV),
                   {name: environ[name] for name in GRID_ENV.values() if name in environ},
                   {name: value for name, value in environ.items() if name.startswith("GIT_CONFIG_")})


def current() -> Place | None:
    """Where the asv benchmark process this runs in keeps its side data, or None outside a run."""
    context = RunContext.from_env(os.environ)
    return context.place if context is not None else None


def real_results(results_dir) -> Path:
    """The one real path of an asv results directory, links resolved once: the results, the side
    data beside them and every write guard follow it, so a results directory given through a
    symbolic link is the directory it points to."""
    return Path(results_dir).expanduser().resolve()


def of_results(results_dir: Path) -> Path:
    """The run directory of an asv results directory: the parent of its real path (the side data
    lies beside the results a link points to, not beside the link)."""
    return real_results(results_dir).parent


def relative(kind: str, ids) -> str:
    """Where a file of ``kind`` for the combination ``ids`` sits in its commit's directory."""
    return f"{kind}/{'.'.join(ids)}{KINDS[kind]}"


def values_relative(benchmark_class: str, ids) -> str:
    """Where the values one asv benchmark class reported for ``ids`` sit in the commit's directory."""
    return f"values/{'.'.join(ids)}/{benchmark_class}.json"
