"""What a run keeps beside asv's ``results/`` that asv cannot, per machine and commit: written into
``runs/<machine>/<commit>/`` while the commit is measured, one small file per combination, and
sealed into one file, ``runs/<machine>/<commit>.zip`` (asv files results per machine too: results of
several machines, or output directories, merge without a clash).

- ``timings/``: the time_evaluator samples of native combinations (asv's latency is their median);
- ``values/``: every value each asv benchmark class reported for a combination, as it reported
  it (a reader checks asv's stored value against it);
- ``peers/``: the ratios to the PyTorch peer; ``maps/``: the difference maps of divergent ones;
- ``failures/``: the reasons of failed combinations (asv keeps only a null);
- ``records/``: for the ``tuned`` order, the target whose tuning record was replayed;
- ``code/``: each combination's code identity (``suite.targets.elf.code_digest`` of its kernel):
  between two commits a kernel's code is the same or changed;
- ``build.json``: what the commit's TVM was built with (its LLVM, see ``suite.compat.release.llvm_build``).

A complete run seals them (:func:`suite.core.run_bundle.seal`) into the commit's bundle: a zip
archive of ``manifest.json`` (the sha256 of every file, sealed itself) and one tar of those files,
written atomically, the same bytes for the same files (members sorted, no dates), after which the
directory is removed. asv may measure more of a commit later (``--skip-existing``): its new files
are sealed with those of the bundle into a new one. :func:`load` reads a commit's bundle whole and
verified: a member missing, damaged or not in the manifest, a file beside the bundle that is not in
it, a damaged archive, or side data without a seal is an error naming it, never a number. Side data
sealed by older suites, a directory of files with its ``manifest.json`` or a zip member per file,
loads the same way; ``tvm-suite history --pack`` seals such a history into today's bundles.

asv benchmark processes find their run through ``TVM_SUITE_RUN_DIR`` and their machine through
``TVM_SUITE_MACHINE``, and their commit through asv's own ``ASV_COMMIT`` (else ``TVM_SUITE_COMMIT``,
which `run` gives: asv's existing environment gives none). `tvm-suite run`, `history` and `bisect`
hand them a :class:`suite.core.run_place.RunContext` through asv's environment alone
(:func:`suite.asv_plumbing.driver.asv`); their own environment stays as it was.

How a run replaces a commit's data, and holds its directory meanwhile: :mod:`suite.core.run_journal`;
what gates found by timing suspects again, kept in ``runs/.gate/``: :mod:`suite.core.retimings`.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from suite import cache
from suite.core.run_bundle import check_regular, parse_json, read_member, sealed_files
from suite.core.run_place import (
    BUILD,
    KINDS,
    MAX_MAP_BYTES,
    DamagedRunData,
    Place,
    current,
    relative,
    values_relative,
)
from suite.targets import elf

# ----------------------------------------------------------------------------- what a run keeps


@dataclass(frozen=True)
class Timing:
    samples_s: tuple[float, ...]
    #: the kernel file that was timed, by its name in the cache (``measure/<entry>/<file>``, relative
    #: to the cache's root: a run directory names no path of its machine; older runs kept an absolute
    #: path), to time it again; the entry's name holds the digest of its build (suite.core.timing)
    kernel: str
    tvm: str  #: suite.compat.release.build_id() of the TVM that timed it
    #: the kernel's code identity, where the side data kept one (in ``code/``, not in the timing's
    #: file): a kernel of the same code may stand in for this one when it is gone (suite.core.timing)
    code: str | None = None

    @property
    def median(self) -> float:
        return float(np.median(self.samples_s))

    def to_json(self) -> dict:
        return {"samples_s": list(self.samples_s), "kernel": self.kernel, "tvm": self.tvm}


def positive_numbers(value, count=None) -> bool:
    return (isinstance(value, list) and bool(value) and (count is None or len(value) == count)
            and all(_finite_number(v) and v > 0 for v in value))


def _finite_number(v) -> bool:
    """A JSON number a float holds, finite (an integer of 400 digits is none)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _timing(value) -> Timing:
    if (not isinstance(value, dict) or set(value) != {"samples_s", "kernel", "tvm"}
            or not positive_numbers(value["samples_s"]) or not isinstance(value["kernel"], str)
            or not isinstance(value["tvm"], str)):
        raise ValueError("not timing samples (samples_s: positive seconds, kernel and tvm: text)")
    return Timing(tuple(float(v) for v in value["samples_s"]), value["kernel"], value["tvm"])


def _ratios(value) -> dict:
    if (not isinstance(value, dict) or set(value) != {"ratio", "eager_ratio"}
            or not positive_numbers([value["ratio"], value["eager_ratio"]])):
        raise ValueError("not PyTorch ratios (ratio and eager_ratio: positive numbers)")
    return {k: float(v) for k, v in value.items()}


def _values(value) -> dict:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
            and (isinstance(v, float) or _finite_number(v)) for k, v in value.items()):
        raise ValueError("not benchmark values (names and numbers)")
    return {k: float(v) for k, v in value.items()}


def _build(value) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("llvm", {}), dict):
        raise ValueError("not a build note (an object with an 'llvm' object)")
    return value


def _maps(data: bytes) -> dict:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:  # np.savez's: an .npy per array
            found = {info.filename.removesuffix(".npy"): _map_array(archive, info) for info in archive.infolist()}
    except Exception as err:  # noqa: BLE001  hostile bytes fail zipfile and numpy in many ways
        said = str(err)[:200]
        raise ValueError(said if said.startswith("not difference maps") else
                         f"not difference maps ({type(err).__name__}: {said})") from None
    channels, hw = found.get("channels"), found.get("hw")
    if (set(found) - {"channels", "hw"} or channels is None or channels.ndim != 1 or not channels.size
            or not np.all(np.isfinite(channels)) or (hw is not None and (hw.ndim != 2 or not np.all(np.isfinite(hw))))):
        raise ValueError("not difference maps (channels: 1-d, hw: 2-d, finite)")
    return found


def _map_array(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One array of a difference map, its header read first: a float array of at most
    MAX_MAP_BYTES, never allocated from a size it only declares."""
    if info.file_size > MAX_MAP_BYTES:
        raise ValueError(f"not difference maps ({info.filename}: more than {MAX_MAP_BYTES >> 20} MiB)")
    with archive.open(info) as handle:
        header = {(1, 0): np.lib.format.read_array_header_1_0,
                  (2, 0): np.lib.format.read_array_header_2_0}.get(np.lib.format.read_magic(handle))
        if header is None:
            raise ValueError(f"not difference maps ({info.filename}: not an .npy file numpy writes)")
        shape, fortran, dtype = header(handle)
        if dtype.kind != "f" or fortran or math.prod(shape) * dtype.itemsize > info.file_size:
            raise ValueError(f"not difference maps ({info.filename}: {dtype} {shape}, not floats it holds)")
    return np.load(io.BytesIO(archive.read(info)), allow_pickle=False)


def _code(text: str) -> str:
    if elf.scheme_of(text) is None:
        raise ValueError("not a code identity (v2: and a sha256 digest, or a sha256 digest alone)")
    return text


def _text(data: bytes) -> str:
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    if not text:
        raise ValueError("empty")
    return text


@dataclass(frozen=True)
class SideData:
    """What a run kept for one commit, verified against its seal; ``kept`` is False where the
    commit has no side data at all (results of plain asv, without `tvm-suite`)."""

    commit: str
    kept: bool
    where: Path
    timings: dict = field(default_factory=dict)  #: ids -> Timing
    values: dict = field(default_factory=dict)  #: (ids, benchmark class) -> {metric: value}
    peers: dict = field(default_factory=dict)  #: ids -> {"ratio", "eager_ratio"}
    maps: dict = field(default_factory=dict)  #: ids -> {"channels", "hw"} arrays
    failures: dict = field(default_factory=dict)  #: ids -> reason
    records: dict = field(default_factory=dict)  #: ids -> target whose tuning record replayed
    code: dict = field(default_factory=dict)  #: ids -> the kernel's code identity (suite.targets.elf.scheme_of)
    build: dict | None = None

    def file(self, relative_path: str) -> Path:
        return self.where / relative_path


def _ids(stem: str, where: Path, name: str) -> tuple[str, ...]:
    ids = tuple(stem.split("."))
    # a workload id has dots itself (resnet50.conv2d_add.7x7x512-k1s1-2048): dtype, target and order do not
    if len(ids) < 4:
        raise DamagedRunData(f"{where / name}: not named <workload>.<dtype>.<target>.<order>")
    return (".".join(ids[:-3]), *ids[-3:])


def load(place: Place) -> SideData:
    """Everything the run of a commit kept, each member checked against the sealed manifest and
    parsed; DamagedRunData naming it otherwise. No side data at all gives ``kept`` False."""
    commit = place.commit
    sealed = sealed_files(place)
    if sealed is None:
        return SideData(commit, False, place.bundle)
    where, members = sealed
    parsed = {kind: {} for kind in ("timings", "values", "peers", "maps", "failures", "records", "code")}
    build = None
    for name, data in sorted(members.items()):
        try:
            if name == BUILD:
                build = _build(parse_json(data))
            else:
                kind, key, value = _parse_kept(name, data, where)
                parsed[kind][key] = value
        except (ValueError, OverflowError) as err:
            raise DamagedRunData(f"{where / name}: {err}") from None
    return SideData(commit, True, where, build=build, **parsed)


_PARSE = {"timings": lambda d: _timing(parse_json(d)), "peers": lambda d: _ratios(parse_json(d)), "maps": _maps,
          "failures": _text, "records": _text, "code": lambda d: _code(_text(d))}


def _parse_kept(name: str, data: bytes, where: Path) -> tuple[str, tuple, object]:
    """(kind, key, value) of one kept file other than the build note (ValueError: what is wrong)."""
    kind, _, rest = name.partition("/")
    if kind == "values":
        stem, _, cls = rest.rpartition("/")
        if not stem or "/" in stem or not cls.endswith(".json"):
            raise ValueError("not named values/<combination>/<benchmark class>.json")
        return kind, (_ids(stem, where, name), cls.removesuffix(".json")), _values(parse_json(data))
    if kind not in _PARSE or not rest.endswith(KINDS[kind]) or "/" in rest:
        raise ValueError("not a kind of file a run keeps")
    return kind, _ids(rest.removesuffix(KINDS[kind]), where, name), _PARSE[kind](data)


# ----------------------------------------------------------------------------- writing (inside a run)


def _note(relative_path: str, text: str) -> None:
    """Keep ``text`` at ``relative_path`` of this run's commit, where this runs inside a run."""
    found = current()
    if found is not None:
        path = found.file(relative_path)
        try:
            if path.read_text() == text:  # every benchmark class of a combination keeps its notes: once is enough
                return
        except (OSError, UnicodeDecodeError):
            pass
        cache.write_text(path, text)


def note_failure(ids, reason: str) -> None:
    """Keep why a combination failed, for report and gate (asv keeps only a null)."""
    _note(relative("failures", ids), reason)


def note_records(ids, records_target: str) -> None:
    """Keep whose tuning record a ``tuned`` combination replayed (e.g. hexagon-v68-qf or llvm)."""
    _note(relative("records", ids), records_target)


def note_code(ids, digest: str) -> None:
    """Keep the combination's code identity: the gate tells a kernel whose code is the same from
    one whose code changed."""
    _note(relative("code", ids), digest)


def note_values(benchmark_class: str, ids, values: dict) -> None:
    """Keep the values an asv benchmark class reports for ``ids`` (each of its ``track_*``
    methods returns one of them), so that a reader can check asv's stored value against them."""
    _note(values_relative(benchmark_class, ids), json.dumps(values, sort_keys=True))


def note_build(describe, place: Place | None = None) -> None:
    """Keep what this commit's TVM was built with (``describe()``) at ``place`` (by default, the run
    this benchmark process is in), once per run and commit: every benchmark process of a commit runs
    the same TVM, and ``describe`` (which imports TVM, seconds in every one of asv's thousands of
    processes) is called only by the first."""
    found = place or current()
    if found is not None and _own(found, BUILD) is None:
        cache.write_json(found.file(BUILD), describe())


def read_own(place: Place, relative_path: str, parse):
    """Inside a run: a file this run kept already (timing samples, peer ratios), parsed by
    ``parse``; None when absent. Its seal, if any, is checked by readers after the run."""
    data = _own(place, relative_path)
    try:
        return None if data is None else parse(data)
    except ValueError as err:
        raise DamagedRunData(f"{place.file(relative_path)}: {err}") from None


def _own(place: Place, relative_path: str) -> bytes | None:
    """The bytes this run kept at ``relative_path``: written since the commit's seal, or sealed in
    its bundle (asv measures more of a sealed commit with --skip-existing); None when neither."""
    target = place.file(relative_path)
    try:
        return target.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as err:
        raise DamagedRunData(f"{target}: unreadable ({err.strerror or err})") from None
    if not place.bundle.exists():
        return None
    check_regular(place.bundle, "where the run sealed a file")
    try:
        return read_member(place.bundle, relative_path)
    except DamagedRunData:
        raise
    except Exception as err:  # noqa: BLE001  zipfile fails on hostile bytes in many ways
        raise DamagedRunData(f"{place.bundle}: damaged ({type(err).__name__}: {str(err)[:200]})") from None


def own_timing(place: Place, ids) -> Timing | None:
    return read_own(place, relative("timings", ids), lambda d: _timing(parse_json(d)))


def own_ratios(place: Place, ids) -> dict | None:
    return read_own(place, relative("peers", ids), lambda d: _ratios(parse_json(d)))
