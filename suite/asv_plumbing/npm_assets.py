"""The libraries asv's published pages load from CDNs, taken from their npm packages: which files
of which package versions stand in for each URL (:data:`ASSETS`), each checked by the registry's
sha512 ``integrity`` of its tarball and the sha256 of every file taken, and where the tarballs come
from, in this order: ``TVM_SUITE_ASV_ASSETS`` (naming it also means: no network), the suite's cache,
the npm registry (:func:`obtain`, :func:`fetch_into`). :mod:`suite.asv_plumbing.dashboard` serves
them from the HTML directory."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from suite import cache
from suite.errors import UserError

ASSETS_ENV = "TVM_SUITE_ASV_ASSETS"
REGISTRY = "https://registry.npmjs.org/"
#: Seconds to wait for the registry before calling the machine offline.
NETWORK_TIMEOUT_S = 15


@dataclass(frozen=True, eq=False)
class Package:
    """An npm package version: the registry's ``dist.integrity`` of its tarball, and the sha256 of
    each file taken from it (checked whichever way the package came: tarball or unpacked)."""

    name: str
    version: str
    integrity: str
    files: dict

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def tarball(self) -> str:
        """The tarball's file name, as the registry's URL and ``npm pack`` name it."""
        return f"{self.name}-{self.version}.tgz"

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"


# Integrity values: registry.npmjs.org/<name>/<version>, dist.integrity. File digests: sha256 of
# the files inside those tarballs. License files travel with the code (all six are MIT;
# flot-orderbars ships no license file, its notice is in the script's header).
JQUERY = Package(
    "jquery", "3.3.1",
    "sha512-Ubldcmxp5np52/ENotGxlLe6aGMvmF4R8S6tZjsP6Knsaxd/xp3Zrh50cG93lR6nPXyUFwzN3ZSOQI0wRJNdGg==", {
    "dist/jquery.min.js": "160a426ff2894252cd7cebbdd6d6b7da8fcd319c65b70468f10b6690c45d02ef",
    "LICENSE.txt": "2b3ed8ba424423a50b023e728530d94bc385cfc7c328ad65a3dfee9c7c0531c5",
})
FLOT = Package(
    "flot", "0.8.3",
    "sha512-xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPykrpMvJ6b2uSp6SAgYAzj9tQ==", {
    "jquery.flot.js": "b7b931f273c38b1277b9c6c1f4e05c4ec09885a487bddaf3279e2d7e49a38e12",
    "jquery.flot.time.js": "a582c832adc7138a6b05aaf61f16ebac274701f1be4afea77e739a1c34b9c41a",
    "jquery.flot.selection.js": "e6c85f6c1ebe4b4da29d8ae238c7c5060283f05f7ef054f6b91817d02c092918",
    "jquery.flot.categories.js": "6e81664b28ea795c734906f4aa15614640a75ac7fbd399a7fb9084040698351a",
    "LICENSE.txt": "dd32421fa4b2ecc3fa7c6d831d395fb02d9304583504639a32e1c18660cff33f",
})
ORDERBARS = Package(
    "flot-orderbars", "1.0.0",
    "sha512-Jv51fvzevUjNXEeozpwEKfPjhiZhfiJddv0WHjduUTCmSF+7T5K7C9c9Y1wIVmUhDBv5fLMjgbwKecT0GIKPZA==", {
    "js/jquery.flot.orderBars.js": "39735b4f46f96ff4e082572401f47c55a2767b366fd1d1e821e44a8d830a12bf",
})
STUPIDTABLE = Package(
    "stupid-table-plugin", "1.1.3",
    "sha512-2Vk7XouQPxUQPRe9w0Fu7ZZ8kHLK7rDoLMsCgtKxRNJ7f4dSOGvW9CkHsq5wD6QsaEnWoyLBYH3xOEsrK3yWBg==", {
    "stupidtable.min.js": "4642380f28ebe9ed7cac251793b281ef8620c4386205d92788f9b12f5cceb4e0",
    "LICENSE": "7b3e49bc9ec1e75ca93b8c1b04e5506516b90de37ce611a4aed3a74734892547",
})
MD5 = Package(
    "blueimp-md5", "2.19.0",
    "sha512-DRQrD6gJyy8FbiE4s+bDoXS9hiW3Vbx5uCdwvcCf3zLHL+Iv7LtGHLpr+GZV8rHG8tK766FGYBwRbu8pELTt+w==", {
    "js/md5.min.js": "64d7ded388c562e4bde9e58ce205e5fa01b9734fcd434d496eb7b4fbfe9b927d",
    "LICENSE.txt": "ce2ef2581ac80c09ea7025ce0eca7995b1cdc631cd0daaffce3a1353bc2143f8",
})
BOOTSTRAP = Package(
    "bootstrap", "3.1.1",
    "sha512-TAzqS8E/ISpVHP29gYhy+1NSV+FJwApDVQhDfgLYsIuUDJiqJzH2DfORN5tiu+Ie2iBLrzEG34t4Rf465cigqg==", {
    "dist/js/bootstrap.min.js": "898d05a17f2cfc5120ddcdba47a885c378c0b466f30f0700e502757e24b403a1",
    "dist/css/bootstrap.min.css": "e9503448692b738dd260fbd7f7cabf2e11f09b600fa97e6eb3a56eba5b1a7e9b",
    # bootstrap.min.css names these as ../fonts/...: served beside it, its relative URLs resolve.
    "dist/fonts/glyphicons-halflings-regular.eot": "f495f34e4f177cf0115af995bbbfeb3fcabc88502876e76fc51a4ab439bc8431",
    "dist/fonts/glyphicons-halflings-regular.svg": "d168d50a88c730b4e6830dc0da2a2b51dae4658a77d9619943c27b8ecfc19d1a",
    "dist/fonts/glyphicons-halflings-regular.ttf": "bd18efd3efd70fec8ad09611a20cdbf99440b2c1d40085c29be036f891d65358",
    "dist/fonts/glyphicons-halflings-regular.woff": "fc969dc1c6ff531abcf368089dcbaf5775133b0626ff56b52301a059fc0f9e1e",
    "LICENSE": "103ffbd5456d39cd2ca1612f028219e6b7d367aca0b3efb21aacafb75deb6ff6",
})
PACKAGES = (JQUERY, FLOT, ORDERBARS, STUPIDTABLE, MD5, BOOTSTRAP)

_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
_JSDELIVR = "https://cdn.jsdelivr.net/npm"
#: Each URL asv's index.html loads (asv 0.6.4, 0.6.5 and 0.6.6 alike) -> the package file served instead.
#: jQuery, orderBars, md5 and bootstrap's two are the very bytes asv pins. The four flot files
#: are cdnjs's minified builds, which no npm file matches: flot 0.8.3's own unminified sources
#: are served (the same plugins: $.plot, time and categories axis modes, selection and its
#: "plotselected" event). stupidtable 1.0.1 is not on npm: 1.1.3 (of 2017) is, and keeps what
#: asv's summarylist.js and regressions.js call: .stupidtable(sort functions),
#: th.stupidsort(direction), data-sort / data-sort-value, and "aftertablesort" with
#: {column, direction}.
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": (JQUERY, "dist/jquery.min.js"),
    f"{_CDNJS}/flot/0.8.3/jquery.flot.min.js": (FLOT, "jquery.flot.js"),
    f"{_CDNJS}/flot/0.8.3/jquery.flot.time.min.js": (FLOT, "jquery.flot.time.js"),
    f"{_CDNJS}/flot/0.8.3/jquery.flot.selection.min.js": (FLOT, "jquery.flot.selection.js"),
    f"{_CDNJS}/flot/0.8.3/jquery.flot.categories.min.js": (FLOT, "jquery.flot.categories.js"),
    f"{_JSDELIVR}/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": (ORDERBARS, "js/jquery.flot.orderBars.js"),
    f"{_CDNJS}/stupidtable/1.0.1/stupidtable.min.js": (STUPIDTABLE, "stupidtable.min.js"),
    f"{_CDNJS}/blueimp-md5/2.19.0/js/md5.min.js": (MD5, "js/md5.min.js"),
    f"{_JSDELIVR}/bootstrap@3.1.1/dist/js/bootstrap.min.js": (BOOTSTRAP, "dist/js/bootstrap.min.js"),
    f"{_JSDELIVR}/bootstrap@3.1.1/dist/css/bootstrap.min.css": (BOOTSTRAP, "dist/css/bootstrap.min.css"),
}

#: How to make a page work offline where the packages cannot be had (``{html_dir}`` filled in).
HOW = (f"set {ASSETS_ENV}=DIR, a directory of their npm tarballs (`python -m suite.asv_plumbing.dashboard "
       "--fetch-into DIR` where there is a network, or `npm pack`), and run `python -m suite.asv_plumbing.dashboard "
       "{html_dir}`")


# ----------------------------------------------------------------------------- the packages


class _Unavailable(Exception):
    """A package that one source cannot give (one line: which source, why)."""


class _Offline(_Unavailable):
    """The registry cannot be reached: not asked again in this call."""


def assets_dir() -> Path | None:
    """The directory the user named (``TVM_SUITE_ASV_ASSETS``); a UserError when it is none."""
    named = os.environ.get(ASSETS_ENV)
    if not named:
        return None
    where = Path(named).expanduser()
    if not where.is_dir():
        raise UserError(f"{ASSETS_ENV}={named} is not a directory")
    return where


def cache_dir() -> Path | None:
    """``<suite cache>/asv-assets``, or None when the cache cannot be used."""
    try:
        return cache.root() / "asv-assets"
    except UserError:
        return None


def integrity(data: bytes, algorithm: str) -> str:
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def _unpack(package: Package, tarball: bytes, origin: str) -> dict:
    """{path: bytes} of the package's files from its npm tarball (top folder stripped)."""
    if integrity(tarball, "sha512") != package.integrity:
        raise _Unavailable(f"{origin} is not the registry's {package.tarball} (its sha512 differs)")
    found = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            for member in archive.getmembers():
                inner = member.name.split("/", 1)[-1]
                if member.isfile() and inner in package.files:
                    found[inner] = archive.extractfile(member).read()
    except (tarfile.TarError, OSError, EOFError) as err:
        raise _Unavailable(f"{origin}: {err}") from None
    return _checked(package, found, origin)


def _checked(package: Package, found: dict, origin: str) -> dict:
    for path, sha256 in package.files.items():
        if path not in found:
            raise _Unavailable(f"{origin} has no {path}")
        if hashlib.sha256(found[path]).hexdigest() != sha256:
            raise _Unavailable(f"{origin}: {path} is not {package.label}'s")
    return found


def _from_dir(package: Package, where: Path) -> dict | None:
    """The package's files from ``where``: its tarball, or an unpacked copy (``where/<name>/``, as
    ``npm install`` lays out node_modules) whose package.json says the version; None when neither."""
    tarball = where / package.tarball
    if tarball.is_file():
        return _unpack(package, tarball.read_bytes(), str(tarball))
    unpacked = where / package.name
    meta = cache.read_json(unpacked / "package.json")
    if not (isinstance(meta, dict) and meta.get("version") == package.version):
        return None
    found = {}
    for path in package.files:
        if (unpacked / path).is_file():
            found[path] = (unpacked / path).read_bytes()
    return _checked(package, found, str(unpacked))


def _registry() -> str:
    return os.environ.get("npm_config_registry") or REGISTRY


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT_S) as response:
        return response.read()


def _fetch(package: Package) -> bytes:
    """The package's tarball from the npm registry, checked against the registry's integrity."""
    registry = _registry().rstrip("/")
    try:
        meta = json.loads(_download(f"{registry}/{package.name}/{package.version}"))
        dist = meta["dist"]
        tarball = _download(dist["tarball"])
    except (urllib.error.URLError, OSError) as err:
        why = getattr(err, "reason", None) or err
        raise _Offline(f"the npm registry {registry} cannot be reached ({why})") from None
    except (ValueError, KeyError, TypeError) as err:
        raise _Unavailable(f"{registry}/{package.name}/{package.version}: no npm package metadata ({err})") from None
    if dist.get("integrity") != package.integrity:
        raise _Unavailable(f"the registry says {package.label}'s tarball is {dist.get('integrity')}, "
                           f"not {package.integrity}")
    _unpack(package, tarball, dist["tarball"])
    return tarball


def _cached_tarball(package: Package, network: bool) -> bytes | None:
    """The package's tarball from the cache, else (``network``) from the registry into the cache;
    None when it is in neither place and the registry is not to be asked."""
    stored = cache_dir()
    if stored is not None and (stored / package.tarball).is_file():
        tarball = (stored / package.tarball).read_bytes()
        try:
            _unpack(package, tarball, str(stored / package.tarball))
            return tarball
        except _Unavailable:
            if not network:
                raise
    if not network:
        return None
    tarball = _fetch(package)
    if stored is not None:
        try:
            write_served(stored / package.tarball, tarball)
        except OSError:  # a cache that cannot be written is no reason to fail
            pass
    return tarball


def _missing(missing: list, places: list, reasons: list, named: bool) -> str:
    text = (f"{', '.join(p.label for p in missing)} {'is' if len(missing) == 1 else 'are'} not in "
            f"{' or '.join(map(str, places)) or 'any directory'}")
    if named and not reasons:
        text += f" (with {ASSETS_ENV} named, the registry is not asked)"
    return "; ".join([text, *dict.fromkeys(reasons)])


def obtain(packages, network: bool | None = None) -> tuple[dict, str | None]:
    """({package: {path: bytes}}, problem) for ``packages``: from the directory the user named,
    the cache, then the npm registry (by default only where no directory is named), whose
    tarballs go to the cache. ``problem`` names what is missing and why, in one line."""
    named = assets_dir()
    network = named is None if network is None else network
    got, missing, reasons = {}, [], []
    for package in packages:
        files = None
        if named is not None:
            try:
                files = _from_dir(package, named)
            except (_Unavailable, OSError) as err:
                reasons.append(str(err))
        if files is None:
            try:
                tarball = _cached_tarball(package, network)
                files = tarball and _unpack(package, tarball, package.tarball)
            except _Offline as err:
                reasons.append(str(err))
                network = False  # not asked again
            except (_Unavailable, OSError) as err:
                reasons.append(str(err))
        if files:
            got[package] = files
        else:
            missing.append(package)
    if not missing:
        return got, None
    return got, _missing(missing, [p for p in (named, cache_dir()) if p is not None], reasons, named is not None)


def fetch_into(where: Path) -> str | None:
    """Put every package's tarball into ``where`` (for ``TVM_SUITE_ASV_ASSETS``): from the cache or
    the registry; tarballs there and intact already are kept. The problem, in one line, or None."""
    cache.ensure_dir(where, "--fetch-into")
    missing, reasons, network = [], [], True
    for package in PACKAGES:
        target = where / package.tarball
        try:
            _unpack(package, target.read_bytes(), str(target))
            continue
        except (_Unavailable, OSError):
            pass  # absent or damaged: fetched again
        try:
            tarball = _cached_tarball(package, network)
            if tarball is not None:
                write_served(target, tarball)
                continue
        except _Offline as err:
            reasons.append(str(err))
            network = False
        except (_Unavailable, OSError) as err:
            reasons.append(str(err))
        missing.append(package)
    return _missing(missing, [p for p in (cache_dir(),) if p], reasons, False) if missing else None


def write_served(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Atomically, readable by a web server (as asv leaves its own files)."""
    def write(tmp):
        Path(tmp).write_bytes(data)
        os.chmod(tmp, mode)
    cache.write_file(path, write)
