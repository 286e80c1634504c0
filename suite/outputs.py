"""Where the suite may write what a user asked for: every output path of every command and
experiment (``--out``, ``--save-arrays``, ``--repro``, ``--keep``, ``--env-dir``, an experiment's
output) is checked here, and nowhere else, before anything is written there.

- **Never into a history.** A path that is, or lies inside, an asv results directory, the runs'
  sealed side data (``runs/`` beside ``results/``) or a kept history is refused in one line
  (UserError) before any work, links resolved: asv and the suite read every file there, and the next ``gate``
  would refuse the history. A kept history is a directory holding the seal ``history --keep``
  leaves (``runs/.kept.json``, or its mark where the seal is gone): it is only read, and travels whole. A run directory (``run``'s
  ``.asv``, ``history``'s ``reports/history``) takes its report and pages beside its results.
- **Never over a user's file.** The suite replaces only files it wrote itself: in an output
  directory, the files a command writes are its own once the directory holds its mark, a JSON file
  of the command's that says who wrote it (``generated_by``; :func:`marked`), written first. Where a
  file of those names, or a link, is there and the mark is not the command's, the directory is
  refused. An output that is one file (:func:`check_new`) must not exist yet.
"""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path

from suite import cache
from suite.core import run_place
from suite.errors import UserError
from suite.history import keep

#: The key of a mark that names the command that wrote it (as report.json has always said it).
GENERATED_BY = "generated_by"
#: Each kind of directory nothing is written into, in words, and why.
_WHY = {"results": ("the results directory", "asv and the suite read every file there"),
        "runs": ("the runs' sealed side data", "asv and the suite read every file there"),
        "kept": ("the kept history", "it is only read, and travels whole")}


def check_apart(path, option: str, reading=()) -> Path:
    """``path`` when it lies apart from every history (see the module's text); ``reading``: results
    directories the command reads, whatever their name (with their side data beside them)."""
    _refuse_inside(path, option, reading, kept_itself=False)
    return Path(path)


def check_keep(path, option: str) -> Path:
    """``path`` for ``history --keep``: a kept history itself, or a new one, apart from the rest."""
    _refuse_inside(path, option, (), kept_itself=True)
    return Path(path)


def check_new(path, option: str, reading=()) -> Path:
    """``path``, an output that is one file: apart from every history and not there yet (nor a link)."""
    check_apart(path, option, reading)
    if Path(path).exists() or Path(path).is_symlink():
        raise UserError(f"{option} {path} exists: it is never replaced (give a new path)")
    return Path(path)


def check_dir(path, option: str, writer: str, mark: str, names=(), reading=()) -> Path:
    """``path``, an output directory (made later, by the writes) where ``writer`` (``tvm-suite
    report``) writes its ``mark`` and files matching ``names`` (glob patterns, relative to it):
    apart from every history, not a file, and each of those files there, if any, the writer's own
    (its mark there). A link in place of one is refused, whoever wrote the mark."""
    check_apart(path, option, reading)
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{option} {path} is a file, not a directory")
    if not path.is_dir():
        return path
    found = [p for pattern in (mark, *names) for p in _matching(path, pattern)]
    for p in found:
        if p.is_symlink() or p.is_dir():
            what = "link" if p.is_symlink() else "directory"
            raise UserError(f"{option} {path}: {p.relative_to(path)} there is a {what}, where {writer} writes a file: "
                            "it never writes through or over one; move it away")
    if found and not owned(path / mark, writer):
        raise UserError(f"{option} {path} holds a {found[0].relative_to(path)} that {writer} did not write (no "
                        f"{mark} of its own there): it is never replaced; give another directory, or move it away")
    return path


def marked(value: dict, writer: str) -> dict:
    """``value`` as a mark of ``writer``: the JSON object it writes first into its output directory."""
    return {GENERATED_BY: writer, **value}


def owned(mark: Path, writer: str) -> bool:
    """Whether ``mark`` is a file ``writer`` wrote (:func:`marked`)."""
    if mark.is_symlink() or not mark.is_file():
        return False
    found = cache.read_json(mark)
    return isinstance(found, dict) and found.get(GENERATED_BY) == writer


def remove_made_dir(path: Path, bookkeeping=()) -> bool:
    """Remove ``path``, a directory the command made and then failed in, where it holds nothing of
    value: no file but empty ones and the command's ``bookkeeping`` (paths relative to it), no link.
    True if removed."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        return False
    for p in path.rglob("*"):
        if p.is_symlink() or (p.is_file() and p.relative_to(path).as_posix() not in bookkeeping and p.stat().st_size):
            return False
    shutil.rmtree(path)
    return True


def _matching(path: Path, pattern: str) -> list[Path]:
    """The entries of ``path`` matching ``pattern``, links to nothing included."""
    if not any(c in pattern for c in "*?["):
        return [path / pattern] if (path / pattern).exists() or (path / pattern).is_symlink() else []
    parent, _, name = pattern.rpartition("/")
    return [p for where in (path.glob(parent) if parent else [path]) if where.is_dir()
            for p in where.iterdir() if fnmatch.fnmatchcase(p.name, name)]


def _refuse_inside(path, option: str, reading, kept_itself: bool) -> None:
    target = Path(path).expanduser().resolve()
    read = {run_place.real_results(r): "results" for r in reading}
    read.update({(results.parent / run_place.RUNS).resolve(): "runs" for results in list(read)})
    for directory in (target, *target.parents):
        kind = read.get(directory) or _kind(directory)
        if kind and not (kind == "kept" and kept_itself and directory == target):
            shown = f"{path} (that is {target})" if Path(path) != target else f"{path}"
            words, why = _WHY[kind]
            raise UserError(f"{option} {shown} is inside {words} {directory}: {why}; write elsewhere (e.g. beside it)")


def _kind(directory: Path) -> str | None:
    """What ``directory`` is of a history: "results", "runs" (the side data), "kept", or None."""
    if (directory / "benchmarks.json").is_file() or (directory.name == "results"
                                                      and (directory.parent / run_place.RUNS).is_dir()):
        return "results"
    if directory.name == run_place.RUNS and (directory.parent / "results").is_dir():
        return "runs"
    if keep.is_kept(directory):  # its seal, or its mark where the seal is gone
        return "kept"
    return None
