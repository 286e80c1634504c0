"""The seal of a run's side data: a commit's bundle (``runs/<machine>/<commit>.zip``, its sealed
``manifest.json`` inside) written atomically, the same bytes for the same files (:func:`seal`,
:func:`write_bundle`), and read back verified member by member, or the directory of files an older
suite sealed (:func:`sealed_files`); anything else is DamagedRunData naming it."""

from __future__ import annotations

import json
import shutil
import stat
import zipfile
from pathlib import Path

from suite import cache
from suite.core.run_place import (MANIFEST, MAX_BUNDLE_BYTES, MAX_FILE_BYTES, MAX_MEMBERS, DamagedRunData, Place)

def parse_json(data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("malformed JSON (nested too deep)") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"not JSON ({str(err).splitlines()[0]})") from None



def sealed_files(place: Place) -> tuple[Path, dict[str, bytes]] | None:
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
    check_regular(bundle, f"where the run of {commit[:12]} sealed a file")
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
        manifest = _manifest(cache.unseal(parse_json(members.pop(MANIFEST, b""))), bundle / MANIFEST)
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


def check_regular(path: Path, what: str) -> None:
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
        check_regular(target, "where a run keeps a file")
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
    sealed = sealed_files(place)
    return None if sealed is None else sealed[1]
