"""What a run keeps beside asv's ``results/`` that asv cannot: per commit, the timing samples of
native combinations (``timings/``), the difference maps of divergent ones (``maps/``), the
ratio to the PyTorch peer (``peers/``), the reasons of failed ones (``failures/``) and, for the
``tuned`` order, the target whose tuning record was replayed (``records/``), and what the commit's
TVM was built with (``builds/<commit>.json``: its LLVM, see ``suite.compat.llvm_build``).

asv benchmark processes find their run through ``TVM_SUITE_RUN_DIR`` (set by `tvm-suite run` and
`history`) and their commit through asv's own ``ASV_COMMIT`` (else ``TVM_SUITE_COMMIT``, which
`run` sets: asv's existing environment gives none). Report and gate read the same files through
the results directory they are given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from suite import cache

RUN_DIR_ENV, COMMIT_ENV = "TVM_SUITE_RUN_DIR", "TVM_SUITE_COMMIT"
KINDS = {"timings": ".json", "peers": ".json", "maps": ".npz", "failures": ".txt", "records": ".txt"}


def current() -> tuple[Path, str] | None:
    """(run directory, commit) of the asv benchmark process this runs in, or None."""
    run_dir, commit = os.environ.get(RUN_DIR_ENV), os.environ.get("ASV_COMMIT") or os.environ.get(COMMIT_ENV)
    return (Path(run_dir), commit) if run_dir and commit else None


def of_results(results_dir: Path) -> Path:
    """The run directory of an asv results directory (its parent)."""
    return Path(results_dir).parent


def path(run_dir: Path, kind: str, commit: str, ids) -> Path:
    return Path(run_dir) / kind / commit / f"{'.'.join(ids)}{KINDS[kind]}"


def clear(run_dir: Path, kind: str, commit: str) -> None:
    """Forget what a commit's earlier run kept of ``kind`` (results-archive keeps asv's old results)."""
    for old in (Path(run_dir) / kind / commit).glob(f"*{KINDS[kind]}"):
        old.unlink()


def _note(kind: str, ids, text: str) -> None:
    """Keep ``text`` of ``kind`` for this combination, where this runs inside a run."""
    found = current()
    if found is not None:
        cache.write_text(path(found[0], kind, found[1], ids), text)


def note_failure(ids, reason: str) -> None:
    """Keep why a combination failed, for report and gate (asv keeps only a null)."""
    _note("failures", ids, reason)


def failure(run_dir: Path, commit: str, ids) -> str | None:
    return _text(run_dir, "failures", commit, ids)


def note_records(ids, records_target: str) -> None:
    """Keep whose tuning record a ``tuned`` combination replayed (e.g. hexagon-v68-qf or llvm)."""
    _note("records", ids, records_target)


def records(run_dir: Path, commit: str, ids) -> str | None:
    return _text(run_dir, "records", commit, ids)


def note_build(describe) -> None:
    """Keep what this commit's TVM was built with (``describe()``), once per run and commit: every
    benchmark process of a commit runs the same TVM, and ``describe`` (which imports TVM, seconds
    in every one of asv's thousands of processes) is called only by the first."""
    found = current()
    if found is not None:
        target = Path(found[0]) / "builds" / f"{found[1]}.json"
        if not target.exists():
            cache.write_json(target, describe())


def build(run_dir: Path, commit: str) -> dict | None:
    """What the TVM of ``commit`` was built with, where a benchmark process noted it."""
    try:
        return json.loads((Path(run_dir) / "builds" / f"{commit}.json").read_text())
    except (OSError, ValueError):
        return None


def _text(run_dir: Path, kind: str, commit: str, ids) -> str | None:
    try:
        return path(run_dir, kind, commit, ids).read_text().strip() or None
    except OSError:
        return None
