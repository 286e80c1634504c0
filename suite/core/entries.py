"""The cache entries of measurements, and the records of measurements a cluster lost.

A combination's entry (:attr:`suite.core.combo.Combo.entry`) holds ``record.json`` (a
:class:`~suite.core.record.Record` and the name of its entry, sealed: an entry copied under another
key is absent) beside the files its ``parts`` name with their sha256:
the compiled kernel, ``output.npy`` and, on targets with an IEEE twin, ``ieee_twin.npy``. It is
assembled in a staging directory and published with one rename, so a missing or damaged part makes
the whole entry count as absent and be measured again, never a wrong number.
"""

from __future__ import annotations

import glob
import hashlib
import shutil
from pathlib import Path

import numpy as np

from suite import cache
from suite.core.combo import Combo
from suite.core.record import Record, Status

RECORD_FILE, OUTPUT_FILE, TWIN_FILE = "record.json", "output.npy", "ieee_twin.npy"
#: The field of a sealed ``record.json`` that names its entry (cache.entry_name: the digest of its key).
ENTRY_FIELD = "entry"


def cached(combo: Combo, verify=()) -> Record | None:
    """The record of a complete cache entry of the combination's key, or None (absent, another
    key's entry copied there, a part missing, or a part named in ``verify`` not the bytes the record
    vouches for). Looking a record up stats its parts; the parts a caller reads (``output.npy``, the
    kernel) are checked by their sha256 when read."""
    return _complete(combo.entry, combo.ids, verify, own_key=True)


def with_code(ids: tuple[str, ...], code: str, kernel_file: str) -> Path | None:
    """The kernel file of a complete entry of combination ``ids`` in this cache whose code identity
    is ``code`` (its bytes the ones its record vouches for), or None: the same machine code
    (suite.targets.elf.code_digest), whichever TVM build compiled it for whichever commit."""
    measured = cache.root() / "measure"
    for entry in sorted(measured.glob(f"{glob.escape('-'.join(ids))}-*")):
        record = _complete(entry, ids)
        # only the kernel of the code sought is read whole, to check its bytes
        if (record is not None and record.code == code and kernel_file in record.parts
                and _complete(entry, ids, (kernel_file,)) is not None):
            return entry / kernel_file
    return None


def _complete(entry: Path, ids: tuple[str, ...], verify=(), own_key: bool = False) -> Record | None:
    """The record of ``entry`` when complete; ``own_key``: only where the record names this entry
    (a stand-in of the same code, with_code, may be any key's)."""
    found = cache.read_sealed_json(entry / RECORD_FILE)
    if found is None:  # absent, or damaged
        return None
    if own_key and (not isinstance(found, dict) or found.get(ENTRY_FIELD) != cache.entry_name(entry)):
        return None  # another key's entry (another TVM build, other code) copied under this one
    try:
        record = Record.from_json(found)
    except ValueError:
        return None
    if record.ids != tuple(ids):
        return None
    for name, digest in record.parts.items():
        if not (entry / name).is_file():
            return None
        if name in verify and cache.file_digest(entry / name) != digest:
            return None
    return record


def publish(combo: Combo, record: Record, staged: Path, arrays: dict[str, np.ndarray | None]) -> None:
    """Publish the entry assembled in ``staged`` (the build's files) with ``arrays`` (file name ->
    an output, or None) and ``record``, which vouches for every file by its sha256 (``parts``). A
    record that is not ok keeps no files beside it."""
    with cache.writing(combo.entry):
        for name, array in arrays.items():
            if array is not None:
                cache.write_array(staged / name, array)
        if not record.ok:
            shutil.rmtree(staged)
            staged.mkdir()
        record.parts = {p.name: cache.file_digest(p) for p in sorted(staged.iterdir()) if p.is_file()}
        cache.write_sealed_json(staged / RECORD_FILE, {**record.to_json(), ENTRY_FIELD: cache.entry_name(combo.entry)})
        cache.publish_dir(staged, combo.entry)


# ----------------------------------------------------------------------------- measured on a cluster

#: The reason of a record whose measurement was lost with the cluster workers that ran it (they died
#: more often than the scheduler allows, see suite.core.cluster): a failure of the run that lost it,
#: not data about TVM, so the next run measures it again (forget_lost).
LOST = "lost on the cluster: "


def is_lost(record: Record | None) -> bool:
    return record is not None and record.status is Status.FAILED and record.reason.startswith(LOST)


def forget_lost(combo: Combo) -> bool:
    """Remove the entry of a combination whose measurement was lost on a cluster; True if removed.
    A lost record holds no measurement, so nothing measured is lost."""
    if not is_lost(cached(combo)):
        return False
    cache.remove_dir(combo.entry)
    return True


def publish_measured(combo: Combo, record: Record, files: dict[str, bytes]) -> Record:
    """Publish an entry measured elsewhere (a cluster worker): its record and the bytes of the
    files the record vouches for. An intact entry already here is kept as it is (and returned);
    files that are not the bytes the record names are refused (ValueError)."""
    if record.ids != combo.ids:
        raise ValueError(f"a record of {' '.join(record.ids)} is not one of {combo.label}")
    if set(files) != set(record.parts):
        raise ValueError(f"{combo.label}: files {sorted(files)} are not the parts {sorted(record.parts)}")
    for name, data in files.items():
        if Path(name).name != name or hashlib.sha256(data).hexdigest() != record.parts[name]:
            raise ValueError(f"{combo.label}: {name} is not the file its record names")
    if (kept := cached(combo)) is not None and not is_lost(kept):
        return kept
    staged = cache.staging_dir(combo.entry)
    try:
        with cache.writing(combo.entry):
            for name, data in files.items():
                (staged / name).write_bytes(data)
        publish(combo, record, staged, {})
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # gone already once published
    return record
