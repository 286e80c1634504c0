"""On-disk cache of workload catalogs, references, builds and measurements, and the one atomic writer.

asv runs every benchmark (and every parameter combination) in a fresh process, so anything
expensive (fusing a model, compiling, running, the float64 reference) is done once and kept
here, keyed by what determines it: the TVM build for anything TVM produced, the op chain and
dtype for references. Every write is atomic (temporary file + rename), so a killed run never
leaves a half-written file behind; a directory of files that belong together is published with
one rename (:func:`publish_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

CACHE_ENV = "TVM_SUITE_CACHE"


def root() -> Path:
    """The cache directory: ``$TVM_SUITE_CACHE``, else ``$XDG_CACHE_HOME/tvm-suite``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tvm-suite"


def digest(value) -> str:
    """A short stable hash of any JSON-serializable value."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_digest(path: Path) -> str | None:
    """sha256 of a file's bytes, or None when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def entry(kind: str, label: str, key) -> Path:
    """The directory of one cache entry: readable label plus the hash of its full key."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:120]
    return root() / kind / f"{safe}-{digest(key)}"


def write_file(path: Path, write) -> None:
    """Make ``path`` atomically with ``write(tmp_path)``: a temporary beside ``path`` (with its
    suffix, which some writers insist on), renamed over it once complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    write_file(path, lambda tmp: Path(tmp).write_text(text))


def write_json(path: Path, value) -> None:
    write_text(path, json.dumps(value, indent=1, sort_keys=True))


def read_json(path: Path):
    """The JSON value at ``path``, or None when absent or unreadable (a stale entry is recomputed)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_array(path: Path, array: np.ndarray) -> None:
    write_file(path, lambda tmp: np.save(tmp, array, allow_pickle=False))


def read_array(path: Path) -> np.ndarray | None:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


def staging_dir(final: Path) -> Path:
    """An empty directory beside ``final`` to assemble an entry in, for :func:`publish_dir`."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.tmp-"))


def remove_dir(final: Path) -> None:
    """Remove the directory ``final`` with one rename first, so that readers see it whole or not at all."""
    if not final.exists():
        return
    gone = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old-"))
    try:
        os.rename(final, gone / "entry")
    except OSError:  # removed meanwhile
        pass
    shutil.rmtree(gone, ignore_errors=True)


def publish_dir(staged: Path, final: Path) -> None:
    """Put the complete directory ``staged`` in place of ``final`` with one rename, so that readers
    see the old entry or the new one, never a mixture."""
    old = None
    if final.exists():
        old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old-"))
        os.rename(final, old / "entry")
    try:
        os.rename(staged, final)
    except OSError:  # another process published the same entry meanwhile: keep theirs
        shutil.rmtree(staged, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
