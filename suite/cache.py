"""On-disk cache of workload catalogs, references, builds and measurements, and the one atomic writer.

asv runs every benchmark (and every parameter combination) in a fresh process, so anything
expensive (fusing a model, compiling, running, the float64 reference) is done once and kept
here, keyed by what determines it: the TVM build for anything TVM produced, the op chain and
dtype for references. Every write is atomic (temporary file + rename), so a killed run never
leaves a half-written file behind; a directory of files that belong together is published with
one rename (:func:`publish_dir`).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

CACHE_ENV = "TVM_SUITE_CACHE"


def root() -> Path:
    """The cache directory: ``$TVM_SUITE_CACHE``, else ``$XDG_CACHE_HOME/tvm-suite``; a
    :class:`suite.errors.UserError` when it is a file or cannot be made."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        where, named = Path(explicit).expanduser().absolute(), f"{CACHE_ENV}={explicit}"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        where, named = Path(base) / "tvm-suite", "the cache directory"
    if not where.is_dir():
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            from suite.errors import UserError

            raise UserError(f"{named}: {where} is not a directory the suite can use "
                            f"({err.strerror or err})") from None
    return where


def ensure_dir(path: Path, option: str) -> Path:
    """The directory ``path`` of a command's ``option``, made if missing; a UserError when it is a file,
    cannot be made or cannot be written to (a read-only file system: a file is made there and
    removed to know), checked before any work starts."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".tvm-suite-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        from suite.errors import UserError

        if path.is_symlink() and not path.exists():
            why = f"it is a link to nothing ({os.readlink(path)})"
        elif path.exists() and not path.is_dir():
            why = "it is a file"
        else:
            why = err.strerror or str(err)
        raise UserError(f"{option} {path} is not a directory the suite can write to: {why}".lstrip()) from None
    return path


def digest(value) -> str:
    """A short stable hash of any JSON-serializable value."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_digest(path: Path) -> str | None:
    """sha256 of a file's bytes, or None when it cannot be read."""
    try:
        return bytes_digest(Path(path).read_bytes())
    except OSError:
        return None


def bytes_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_digest(path: Path) -> str | None:
    """sha256 of what a source file of the suite means, the one digest of its code in every cache
    key: for Python its syntax tree without docstrings (comments are not in it); for C its text
    spliced at backslash-newlines, without comments, every run of blanks outside string and
    character literals one space, and without empty lines (C's own translation phases 2-3; the
    preprocessor still sees the same lines); any other file's bytes. So a change of a comment or a
    docstring keeps every cache entry, and a change of code measures again. None when the file
    cannot be read.

    Parsing the suite's code takes a good part of a second, and every asv benchmark process looks
    its record up by a key that holds it: the digests of Python and C files are kept in the cache
    (``source-digests/digests.json``, sealed) with each file's size, mtime and inode, and used
    while those are unchanged, as git's index does; only for a file last changed over two seconds
    before (within one timestamp tick an edit of the same size would keep all three)."""
    path = Path(path).absolute()
    try:
        stat = path.stat()
    except OSError:
        return None
    if path.suffix not in _MEANINGS:
        return file_digest(path)
    stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    kept = _kept_digests().get(str(path))
    if isinstance(kept, dict) and kept.get("stamp") == stamp and isinstance(kept.get("digest"), str):
        return kept["digest"]
    try:
        meaning = bytes_digest(_MEANINGS[path.suffix](path.read_bytes().decode("utf-8")).encode())
    except OSError:
        return None
    except (SyntaxError, ValueError):  # not valid source (UnicodeDecodeError is a ValueError): its bytes
        return file_digest(path)
    if time.time_ns() - stat.st_mtime_ns > 2_000_000_000:
        _keep_digest(str(path), {"stamp": stamp, "digest": meaning})
    return meaning


#: The digests kept in this process: {path: {"stamp": [size, mtime_ns, inode], "digest": sha256}}.
_KEPT: dict | None = None


def _kept_path() -> Path:
    return root() / "source-digests" / "digests.json"


def _kept_digests() -> dict:
    global _KEPT
    if _KEPT is None:
        found = read_sealed_json(_kept_path())
        _KEPT = found["files"] if isinstance(found, dict) and found.get("version") == _MEANING_VERSION \
            and isinstance(found.get("files"), dict) else {}
    return _KEPT


def _keep_digest(path: str, kept: dict) -> None:
    """Add one digest to the file, with those other processes kept meanwhile (a lost update only
    costs a parse)."""
    found = read_sealed_json(_kept_path())
    files = found["files"] if isinstance(found, dict) and found.get("version") == _MEANING_VERSION \
        and isinstance(found.get("files"), dict) else {}
    files[path] = _kept_digests()[path] = kept
    try:
        write_sealed_json(_kept_path(), {"version": _MEANING_VERSION, "files": files})
    except OSError:  # a cache that cannot be written: parsed again next time
        pass


def _python_meaning(text: str) -> str:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:]
    return ast.dump(tree)


#: C source split into what _c_meaning keeps or drops: string and character literals (kept as
#: they are), comments (a block comment is one space, a line comment nothing), runs of blanks.
_C_PIECES = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*|[ \t\f\v]+', re.S)


def _c_meaning(text: str) -> str:
    def piece(m: re.Match) -> str:
        found = m.group(0)
        if found.startswith("//"):
            return ""
        if found.startswith("/*") or not found.startswith(("\"", "\'")):
            return " "
        return found

    code = _C_PIECES.sub(piece, text.replace("\\\n", ""))
    return "\n".join(line.strip() for line in code.splitlines() if line.strip())


#: How each kind of source file's meaning is read; bump the version when one of them changes.
_MEANINGS = {".py": _python_meaning, ".c": _c_meaning, ".h": _c_meaning}
_MEANING_VERSION = 1


def entry(kind: str, label: str, key) -> Path:
    """The directory of one cache entry: readable label plus the hash of its full key."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:120]
    return root() / kind / f"{safe}-{digest(key)}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: What the user's umask allows (a temporary file is 0600, whatever the umask).
UMASK = _umask()


def write_file(path: Path, write) -> None:
    """Make ``path`` atomically with ``write(tmp_path)``: a temporary beside ``path`` (with its
    suffix, which some writers insist on), renamed over it once complete, with the mode the umask
    gives. A file system that is full or read-only is :class:`suite.errors.CannotWrite` naming
    ``path`` (nothing is left behind). The file gets the mode the umask gives, executable where the
    writer made it so (a linked ELF)."""
    from suite.errors import CannotWrite

    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
        os.close(fd)
        write(tmp)
        executable = os.stat(tmp).st_mode & 0o111
        os.chmod(tmp, (0o777 if executable else 0o666) & ~UMASK)
        os.replace(tmp, path)
    except CannotWrite:
        raise
    except OSError as err:  # numpy's short write has no errno: say what it means
        raise CannotWrite(err.errno or 28, err.strerror or f"{err} (the file system is full?)", str(path)) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    write_file(path, lambda tmp: Path(tmp).write_text(text))


def write_json(path: Path, value) -> None:
    write_text(path, json.dumps(value, indent=1, sort_keys=True))


def read_json(path: Path):
    """The JSON value at ``path``, or None when absent or unreadable (a stale entry is recomputed)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested deeper than json can read
        return None


def write_array(path: Path, array: np.ndarray) -> None:
    write_file(path, lambda tmp: np.save(tmp, array, allow_pickle=False))


def read_array(path: Path) -> np.ndarray | None:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- verified entries
# One mechanism for every cached file a number is computed from: an entry is a directory whose
# manifest names the entry itself (its kind and name, which holds the digest of its key) and the
# sha256 of each file in it; a file that is missing, damaged or not the one the manifest vouches
# for, or an entry copied under another key, makes the whole entry absent, and it is computed
# again. The manifest (and a measurement's record, which is its entry's manifest) is sealed JSON:
# it carries the sha256 of its own value, so that damage to it is seen as well.

MANIFEST = "manifest.json"


def sealed_text(value) -> str:
    """``value`` as JSON with the digest of its canonical text (see :func:`unseal`)."""
    return json.dumps({"sealed": _seal(value), "value": value}, indent=1, sort_keys=True)


def write_sealed_json(path: Path, value) -> None:
    write_text(path, sealed_text(value))


def unseal(data):
    """The value of the parsed JSON ``data`` that :func:`sealed_text` made; None where it is not
    one, or not the value its seal vouches for."""
    if not isinstance(data, dict) or set(data) != {"sealed", "value"} or data["sealed"] != _seal(data["value"]):
        return None
    return data["value"]


def read_sealed_json(path: Path):
    """The value :func:`write_sealed_json` wrote at ``path``; None when absent, unreadable or not
    the value its seal vouches for."""
    return unseal(read_json(path))


def _seal(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@contextlib.contextmanager
def writing(where: Path):
    """Inside, a file system that refuses a write (full, read-only) is :class:`suite.errors.CannotWrite`
    naming ``where``: for writers that write their own files (numpy, TVM) into a directory the suite
    assembles (an entry, see :func:`store_entry`)."""
    from suite.errors import CannotWrite

    try:
        yield
    except CannotWrite:
        raise
    except OSError as err:  # numpy's short write has no errno: say what it means
        raise CannotWrite(err.errno or 28, err.strerror or f"{err} (the file system is full?)",
                          str(err.filename or where)) from None


def store_entry(where: Path, files: dict) -> None:
    """Write the entry ``where``: ``files`` maps each file name to ``write(tmp_path)``; the files and
    their manifest are assembled beside it and published with one rename."""
    staged = staging_dir(where)
    try:
        with writing(where):
            for name, write in files.items():
                write(str(staged / name))
            write_sealed_json(staged / MANIFEST, {"entry": entry_name(where),
                                                  "files": {name: file_digest(staged / name) for name in files}})
            publish_dir(staged, where)
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # gone already once published


def load_entry(where: Path, names) -> dict[str, Path] | None:
    """The paths of the files ``names`` of the entry ``where`` when its manifest names this entry
    and vouches for each of them, bytes included; None otherwise (absent, incomplete, damaged, or
    another key's entry copied here: compute it again)."""
    manifest = read_sealed_json(Path(where) / MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("entry") != entry_name(where):
        return None
    digests = manifest.get("files")
    if not isinstance(digests, dict):
        return None
    found = {}
    for name in names:
        path = Path(where) / name
        if not isinstance(digests.get(name), str) or file_digest(path) != digests[name]:
            return None
        found[name] = path
    return found


def entry_name(where: Path) -> str:
    """What an entry's manifest names it by: its kind and its name (:func:`entry`: a label and the
    digest of its key), so that an entry copied under another key is no entry of that key."""
    return f"{Path(where).parent.name}/{Path(where).name}"


def staging_dir(final: Path) -> Path:
    """An empty directory beside ``final`` to assemble an entry in, for :func:`publish_dir` (a file
    system that refuses it: :class:`suite.errors.CannotWrite` naming ``final``)."""
    with writing(final):
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
