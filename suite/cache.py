"""On-disk cache of workload catalogs, references, builds and measurements.

asv runs every benchmark (and every parameter combination) in a fresh process, so anything
expensive (fusing a model, compiling, running, the float64 reference) is done once and kept
here, keyed by what determines it: the TVM build for anything TVM produced, the op chain and
dtype for references. Every write is atomic (temporary file + rename), so a killed run never
leaves a half-written entry behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
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


def entry(kind: str, label: str, key) -> Path:
    """The directory of one cache entry: readable label plus the hash of its full key."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:120]
    return root() / kind / f"{safe}-{digest(key)}"


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_file(path: Path, write) -> None:
    """Make ``path`` atomically with ``write(tmp_path)``, for writers that want a file name (a
    temporary beside ``path``, with its suffix, renamed over it once complete)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_json(path: Path, value) -> None:
    _atomic_write(path, lambda h: h.write(json.dumps(value, indent=1, sort_keys=True).encode()))


def read_json(path: Path):
    """The JSON value at ``path``, or None when absent or unreadable (a stale entry is recomputed)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_array(path: Path, array: np.ndarray) -> None:
    _atomic_write(path, lambda h: np.save(h, array, allow_pickle=False))


def read_array(path: Path) -> np.ndarray | None:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


