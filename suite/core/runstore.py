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
- ``build.json``: what the commit's TVM was built with (its LLVM, see ``suite.compat.llvm_build``).

A complete run seals them (:func:`seal`) into the commit's bundle: a zip archive of those files and
``manifest.json`` (the sha256 of every other member, sealed itself), written atomically, the same
bytes for the same files (members sorted, no dates), after which the directory is removed. asv
may measure more of a commit later (``--skip-existing``): its new files are sealed with those of the
bundle into a new one. :func:`load` reads a commit's bundle whole and verified: a member missing,
damaged or not in the manifest, a file beside the bundle that is not in it, a damaged archive, or
side data without a seal is an error naming it, never a number. Side data sealed by older suites, a
directory of files with its ``manifest.json``, loads the same way; ``tvm-suite history --pack``
seals such a history into bundles.

asv benchmark processes find their run through ``TVM_SUITE_RUN_DIR`` and their machine through
``TVM_SUITE_MACHINE``, and their commit through asv's own ``ASV_COMMIT`` (else ``TVM_SUITE_COMMIT``,
which `run` gives: asv's existing environment gives none). `tvm-suite run`, `history` and `bisect`
hand them a :class:`RunContext` through asv's environment alone (:func:`suite.asv_plumbing.driver.asv`);
their own environment stays as it was.

How a run replaces a commit's data, and holds its directory meanwhile: :mod:`suite.core.run_journal`;
what gates found by timing suspects again, kept in ``runs/.gate/``: :mod:`suite.core.retimings`.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from suite import cache
from suite.core.combo import ENV as GRID_ENV
from suite.errors import UserError
from suite.targets import elf

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




# ----------------------------------------------------------------------------- what a run keeps


@dataclass(frozen=True)
class Timing:
    samples_s: tuple[float, ...]
    #: the kernel file that was timed, by its name in the cache (``measure/<entry>/<file>``, relative
    #: to the cache's root: a run directory names no path of its machine; older runs kept an absolute
    #: path), to time it again; the entry's name holds the digest of its build (suite.core.timing)
    kernel: str
    tvm: str  #: compat.build_id() of the TVM that timed it
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


def _json(data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("malformed JSON (nested too deep)") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"not JSON ({str(err).splitlines()[0]})") from None


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
    sealed = _sealed(place)
    if sealed is None:
        return SideData(commit, False, place.bundle)
    where, members = sealed
    parsed = {kind: {} for kind in ("timings", "values", "peers", "maps", "failures", "records", "code")}
    build = None
    for name, data in sorted(members.items()):
        try:
            if name == BUILD:
                build = _build(_json(data))
            else:
                kind, key, value = _parse_kept(name, data, where)
                parsed[kind][key] = value
        except (ValueError, OverflowError) as err:
            raise DamagedRunData(f"{where / name}: {err}") from None
    return SideData(commit, True, where, build=build, **parsed)


def _sealed(place: Place) -> tuple[Path, dict[str, bytes]] | None:
    """(where, every sealed member's bytes, verified against the manifest) of the commit's bundle,
    or of the directory an older suite sealed; None where the commit has no side data at all."""
    bundle, loose = place.bundle, place.dir
    if bundle.exists() or bundle.is_symlink():
        members = _bundle_members(bundle, place.commit)
        for name, data in _loose_files(loose).items():  # an interrupted seal leaves copies of its members
            if members.get(name) != data:
                raise DamagedRunData(f"{loose / name}: not a file the run of {place.commit[:12]} kept (beside its "
                                     f"sealed {bundle.name}, not in it): measure that commit again, or remove it")
        return bundle, members
    if not loose.exists():
        return None
    if not loose.is_dir():
        raise DamagedRunData(f"{loose}: not a directory (a run keeps its side data there)")
    manifest_path = loose / MANIFEST
    if not manifest_path.exists():
        raise DamagedRunData(f"{loose}: side data without its seal ({bundle.name} and {MANIFEST} missing: a run that "
                             "did not complete, or edited data); run that commit again, or remove the directory and "
                             "the commit's asv results")
    manifest = _manifest(cache.read_sealed_json(manifest_path), manifest_path)
    present = {p.relative_to(loose).as_posix() for p in loose.rglob("*")
               if p.is_file() and p.name != MANIFEST and not p.name.startswith(".")}
    for extra in sorted(present - set(manifest)):
        raise DamagedRunData(f"{loose / extra}: not a file the run of {place.commit[:12]} kept (not in its manifest)")
    return loose, {name: _checked(loose / name, _read_kept(loose / name, place.commit), manifest[name], place.commit)
                   for name in sorted(manifest)}


def _manifest(value, where: Path) -> dict[str, str]:
    if (not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
            or MANIFEST in value):
        raise DamagedRunData(f"{where}: damaged (not the manifest the run sealed); run that commit again")
    for name in value:
        if not name or ".." in name.split("/") or name.startswith("/") or "\\" in name or "\0" in name:
            raise DamagedRunData(f"{where}: names {name!r}, outside the commit's side data")
    return value


def _checked(where: Path, data: bytes, digest: str, commit: str) -> bytes:
    if cache.bytes_digest(data) != digest:
        raise DamagedRunData(f"{where}: damaged (not the file the run of {commit[:12]} kept)")
    return data


def _bundle_members(bundle: Path, commit: str) -> dict[str, bytes]:
    """The members of a commit's bundle, each verified against its manifest (DamagedRunData naming
    the bundle or the member otherwise)."""
    if bundle.is_symlink():
        raise DamagedRunData(f"{bundle}: a link, where the run of {commit[:12]} sealed its side data in a file")
    _regular(bundle, f"where the run of {commit[:12]} sealed a file")
    try:
        with zipfile.ZipFile(bundle) as archive:
            infos = archive.infolist()
            names = [info.filename for info in infos]
            if len(infos) > MAX_MEMBERS or len(set(names)) != len(names):
                raise DamagedRunData(f"{bundle}: damaged ({len(infos)} members, not the bundle a run seals)")
            for info in infos:
                if not info.filename.strip("/"):
                    raise DamagedRunData(f"{bundle}: damaged (a member without a name)")
                if info.filename.endswith("/"):
                    raise DamagedRunData(f"{bundle / info.filename.rstrip('/')}: a directory entry, not a file a run "
                                         "keeps")
                if info.file_size > MAX_FILE_BYTES:
                    raise DamagedRunData(f"{bundle / info.filename}: not a file a run keeps "
                                         f"(at most {MAX_FILE_BYTES >> 20} MiB)")
            if sum(info.file_size for info in infos) > MAX_BUNDLE_BYTES:
                raise DamagedRunData(f"{bundle}: damaged (its members hold more than {MAX_BUNDLE_BYTES >> 20} MiB, "
                                     "not the side data of a run)")
            members = {info.filename: archive.read(info) for info in infos}
    except DamagedRunData:
        raise
    except FileNotFoundError:
        raise DamagedRunData(f"{bundle}: missing (the run of {commit[:12]} sealed it)") from None
    except OSError as err:
        raise DamagedRunData(f"{bundle}: unreadable ({err.strerror or err})") from None
    except Exception as err:  # noqa: BLE001  zipfile fails on hostile bytes in many ways (IndexError, LZMAError...)
        raise DamagedRunData(f"{bundle}: damaged (not the bundle the run of {commit[:12]} sealed: "
                             f"{type(err).__name__}: {str(err)[:200]})") from None
    try:
        manifest = _manifest(cache.unseal(_json(members.pop(MANIFEST, b""))), bundle / MANIFEST)
    except ValueError:
        raise DamagedRunData(f"{bundle / MANIFEST}: damaged or missing (the bundle's seal); run that commit "
                             "again") from None
    for extra in sorted(set(members) - set(manifest)):
        raise DamagedRunData(f"{bundle / extra}: not a file the run of {commit[:12]} kept (not in its manifest)")
    for name, digest in manifest.items():
        if name not in members:
            raise DamagedRunData(f"{bundle / name}: missing (the run of {commit[:12]} kept it)")
        _checked(bundle / name, members[name], digest, commit)
    return members


def _regular(path: Path, what: str) -> None:
    """DamagedRunData where ``path`` is there but no regular file (a FIFO, a device, a directory):
    opening one to read could wait for ever."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise DamagedRunData(f"{path}: unreadable ({err.strerror or err})") from None
    if not stat.S_ISREG(mode):
        raise DamagedRunData(f"{path}: {'a directory' if stat.S_ISDIR(mode) else 'not a regular file'} {what}")


def _loose_files(directory: Path) -> dict[str, bytes]:
    """The files a run wrote into ``directory`` (a commit's, before its seal), by relative name."""
    if not directory.is_dir():
        return {}
    return {p.relative_to(directory).as_posix(): _read_kept(p, "") for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != MANIFEST and not p.name.startswith(".")}


def _read_kept(target: Path, commit: str) -> bytes:
    try:
        if target.is_symlink():
            raise DamagedRunData(f"{target}: a link, not a file a run keeps")
        _regular(target, "where a run keeps a file")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise DamagedRunData(f"{target}: {target.stat().st_size} bytes, not a file a run keeps "
                                 f"(at most {MAX_FILE_BYTES >> 20} MiB)")
        return target.read_bytes()
    except FileNotFoundError:
        raise DamagedRunData(f"{target}: missing (the run{f' of {commit[:12]}' if commit else ''} kept it)") from None
    except IsADirectoryError:
        raise DamagedRunData(f"{target}: a directory where the run{f' of {commit[:12]}' if commit else ''} kept a "
                             "file") from None
    except OSError as err:
        raise DamagedRunData(f"{target}: unreadable ({err.strerror or err})") from None


_PARSE = {"timings": lambda d: _timing(_json(d)), "peers": lambda d: _ratios(_json(d)), "maps": _maps,
          "failures": _text, "records": _text, "code": lambda d: _code(_text(d))}


def _parse_kept(name: str, data: bytes, where: Path) -> tuple[str, tuple, object]:
    """(kind, key, value) of one kept file other than the build note (ValueError: what is wrong)."""
    kind, _, rest = name.partition("/")
    if kind == "values":
        stem, _, cls = rest.rpartition("/")
        if not stem or "/" in stem or not cls.endswith(".json"):
            raise ValueError("not named values/<combination>/<benchmark class>.json")
        return kind, (_ids(stem, where, name), cls.removesuffix(".json")), _values(_json(data))
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
    _regular(place.bundle, "where the run sealed a file")
    try:
        with zipfile.ZipFile(place.bundle) as archive:
            return archive.read(relative_path) if relative_path in archive.namelist() else None
    except Exception as err:  # noqa: BLE001  zipfile fails on hostile bytes in many ways
        raise DamagedRunData(f"{place.bundle}: damaged ({type(err).__name__}: {str(err)[:200]})") from None


def own_timing(place: Place, ids) -> Timing | None:
    return read_own(place, relative("timings", ids), lambda d: _timing(_json(d)))


def own_ratios(place: Place, ids) -> dict | None:
    return read_own(place, relative("peers", ids), lambda d: _ratios(_json(d)))


def seal(place: Place) -> None:
    """Seal what the run kept for a commit into its bundle: the files of its directory, over those
    of a bundle sealed before (verified first), then remove the directory. Nothing to seal where the
    run kept nothing."""
    if not place.dir.is_dir():
        return
    loose = _loose_files(place.dir)
    before = _bundle_members(place.bundle, place.commit) if place.bundle.exists() else {}
    write_bundle(place.bundle, {**before, **loose})
    shutil.rmtree(place.dir)


def write_bundle(target: Path, members: dict[str, bytes]) -> None:
    """Write ``members`` (name -> bytes) and their sealed manifest as one zip archive, atomically:
    the same members give the same bytes (sorted, no dates, one mode)."""
    manifest = {name: cache.bytes_digest(data) for name, data in sorted(members.items())}
    _manifest(manifest, target)

    def write(tmp):
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in [(MANIFEST, cache.sealed_text(manifest).encode()), *sorted(members.items())]:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
                archive.writestr(info, data)

    target.parent.mkdir(parents=True, exist_ok=True)
    cache.write_file(target, write)


def sealed_members(place: Place) -> dict[str, bytes] | None:
    """Every file the run of a commit sealed, verified (DamagedRunData otherwise); None where it
    sealed nothing."""
    sealed = _sealed(place)
    return None if sealed is None else sealed[1]
