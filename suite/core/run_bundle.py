"""The seal of a run's side data: a commit's bundle (``runs/<machine>/<commit>.zip``: its sealed
``manifest.json`` and one deflated ``members.tar`` holding every file) written atomically, the same
bytes for the same files (:func:`seal`, :func:`write_bundle`), and read back verified member by
member, or the layouts an older suite sealed (one zip member per file; a directory of files and its
manifest) (:func:`sealed_files`); anything else is DamagedRunData naming it. A bundle's tar is
parsed here, never extracted: only regular files of a run's names, at most the sizes a run keeps."""

from __future__ import annotations

import io
import json
import shutil
import stat
import tarfile
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
            tarred = sorted(names) == [MANIFEST, TAR]
            for info in infos:
                if not info.filename.strip("/"):
                    raise DamagedRunData(f"{bundle}: damaged (a member without a name)")
                if info.filename.endswith("/"):
                    raise DamagedRunData(f"{bundle / info.filename.rstrip('/')}: a directory entry, not a file a run "
                                         "keeps")
                if info.file_size > MAX_FILE_BYTES and not (tarred and info.filename == TAR):
                    raise DamagedRunData(f"{bundle / info.filename}: not a file a run keeps "
                                         f"(at most {MAX_FILE_BYTES >> 20} MiB)")
            # a tar's headers are its own: checked again, without them, as it is read (a bomb declares its size)
            if sum(info.file_size for info in infos) > MAX_BUNDLE_BYTES + (_TAR_HEADERS if tarred else 0):
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
    if tarred and set(manifest) != {TAR}:  # an older suite's bundle of one file named so is one zip member
        members = _tar_members(members[TAR], bundle)
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
    """Write ``members`` (name -> bytes) as one zip archive, atomically: their sealed manifest and
    one tar of them all (each member deflated alone, its header and name outweighed the data), the
    same members giving the same bytes (sorted, no dates, one mode, no owner)."""
    manifest = {name: cache.bytes_digest(data) for name, data in sorted(members.items())}
    _manifest(manifest, target)

    def write(tmp):
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in [(MANIFEST, cache.sealed_text(manifest).encode()), (TAR, tar_of(members))]:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
                archive.writestr(info, data)

    target.parent.mkdir(parents=True, exist_ok=True)
    cache.write_file(target, write)


def tar_of(members: dict[str, bytes]) -> bytes:
    """``members`` as one uncompressed POSIX tar: sorted, regular files only, mode 0644, mtime 0,
    no owner (a name longer than 100 bytes goes in a PAX ``path`` record that extends it)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode, info.uname, info.gname = len(data), 0, 0o644, "", ""
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


#: The tar of a bundle's members, in today's layout.
TAR = "members.tar"
#: The most a tar adds to its members' bytes (a PAX record, two headers and padding each, its end).
_TAR_HEADERS = MAX_MEMBERS * 4 * tarfile.BLOCKSIZE + tarfile.RECORDSIZE
_TAR_KINDS = {tarfile.SYMTYPE: "a link", tarfile.LNKTYPE: "a hard link", tarfile.DIRTYPE: "a directory entry",
              tarfile.CHRTYPE: "a device", tarfile.BLKTYPE: "a device", tarfile.FIFOTYPE: "a FIFO",
              tarfile.XGLTYPE: "a PAX global header (it renames what follows)"}


def _tar_members(data: bytes, bundle: Path) -> dict[str, bytes]:
    """The files of a bundle's tar by name, parsed block by block (never extracted): regular files
    of a run's names only, each at most MAX_FILE_BYTES, in all at most MAX_BUNDLE_BYTES and
    MAX_MEMBERS; a PAX header may only extend the name of the file it precedes. Its files are
    named as the bundle's members (``bundle/name``), what is wrong with the tar as ``bundle/members.tar``."""
    where = bundle / TAR
    members, at, total, long_name = {}, 0, 0, None
    while True:
        header = data[at:at + tarfile.BLOCKSIZE]
        if len(header) < tarfile.BLOCKSIZE:
            raise DamagedRunData(f"{where}: damaged (truncated: it ends before the end of the archive)")
        if header == tarfile.NUL * tarfile.BLOCKSIZE:
            if long_name is not None or data[at:].strip(tarfile.NUL) or len(data) - at < 2 * tarfile.BLOCKSIZE:
                raise DamagedRunData(f"{where}: damaged (truncated: it ends before the end of the archive)")
            return members
        try:
            checksum, size = int(header[148:156].strip(b"\0 ") or b"x", 8), int(header[124:136].strip(b"\0 "), 8)
        except ValueError:
            raise DamagedRunData(f"{where}: damaged (a tar header at byte {at} that is not one)") from None
        if checksum not in tarfile.calc_chksums(header):
            raise DamagedRunData(f"{where}: damaged (a tar header at byte {at} that is not one: its checksum)")
        kind, field = header[156:157], header[:100].split(b"\0", 1)[0]
        if header[345:500].strip(b"\0"):
            field = header[345:500].split(b"\0", 1)[0] + b"/" + field
        pax, field = kind == tarfile.XHDTYPE and long_name is None, field.decode("utf-8", "replace")
        name = long_name if long_name is not None else field
        if not pax:
            if long_name is not None and not long_name.startswith(field):
                raise DamagedRunData(f"{bundle / field}: a PAX header that renames it ({long_name!r}), not what a "
                                     "seal writes")
            if not name or ".." in name.split("/") or name.startswith("/") or "\\" in name or "\0" in name:
                raise DamagedRunData(f"{where}: names {name!r}, outside the commit's side data")
        if size > MAX_FILE_BYTES:
            raise DamagedRunData(f"{where if pax else bundle / name}: not a file a run keeps "
                                 f"(at most {MAX_FILE_BYTES >> 20} MiB)")
        total += size
        if total > MAX_BUNDLE_BYTES:
            raise DamagedRunData(f"{where}: damaged (its members hold more than {MAX_BUNDLE_BYTES >> 20} MiB, "
                                 "not the side data of a run)")
        body = data[at + tarfile.BLOCKSIZE:at + tarfile.BLOCKSIZE + size]
        if len(body) < size:
            raise DamagedRunData(f"{where}: damaged (truncated: the archive ends inside {name!r})")
        at += tarfile.BLOCKSIZE + -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
        if pax:
            long_name = _pax_path(body, where)
            continue
        long_name = None
        if kind not in (tarfile.REGTYPE, tarfile.AREGTYPE):
            raise DamagedRunData(f"{bundle / name}: {_TAR_KINDS.get(kind, f'a tar entry of type {kind!r}')}, "
                                 "not a file a run keeps")
        if name in members:
            raise DamagedRunData(f"{bundle / name}: in the archive twice, not the bundle a run seals")
        if len(members) >= MAX_MEMBERS:
            raise DamagedRunData(f"{where}: damaged (over {MAX_MEMBERS} members, not the bundle a run seals)")
        members[name] = body


def _pax_path(body: bytes, where: Path) -> str:
    """The name a PAX header gives the file after it: its only record, ``path``."""
    records, at = {}, 0
    try:
        while at < len(body):
            length = int(body[at:body.index(b" ", at)])
            key, _, value = body[body.index(b" ", at) + 1:at + length - 1].partition(b"=")
            records[key.decode()], at = value.decode(), at + length
    except (ValueError, UnicodeDecodeError):
        raise DamagedRunData(f"{where}: damaged (a PAX header that is not one)") from None
    if set(records) != {"path"}:
        raise DamagedRunData(f"{where}: a PAX header of {', '.join(sorted(records)) or 'nothing'}, not what a seal "
                             "writes (it names a file's path only)")
    return records["path"]


def tarred(bundle: Path) -> bool:
    """Whether ``bundle`` is of today's layout (its manifest and one tar), not verified: False for
    bytes that are no zip archive (its readers name what is wrong)."""
    try:
        with zipfile.ZipFile(bundle) as archive:
            return sorted(archive.namelist()) == [MANIFEST, TAR]
    except Exception:  # noqa: BLE001  zipfile fails on hostile bytes in many ways
        return False


def read_member(bundle: Path, name: str) -> bytes | None:
    """Inside a run: the bytes of one member of a bundle, not verified (its readers verify it
    whole after the run); None where it holds none of that name."""
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        if sorted(names) == [MANIFEST, TAR] and name != TAR:
            return _tar_members(archive.read(TAR), bundle).get(name)
        return archive.read(name) if name in names else None


def sealed_members(place: Place) -> dict[str, bytes] | None:
    """Every file the run of a commit sealed, verified (DamagedRunData otherwise); None where it
    sealed nothing."""
    sealed = sealed_files(place)
    return None if sealed is None else sealed[1]
