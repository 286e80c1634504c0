"""asv's published dashboard, offline: the libraries its pages load from CDNs, served from the HTML
directory itself.

asv 0.6's ``index.html`` loads jQuery 3.3.1, flot 0.8.3 and three of its plugins, flot-orderBars,
stupidtable, blueimp-md5 and bootstrap 3.1.1 (script and stylesheet) from code.jquery.com,
cdnjs.cloudflare.com and cdn.jsdelivr.net, each pinned by a Subresource Integrity hash; without
them its pages redirect to ``error.html``. This module takes those files from their npm packages
(the registry's tarballs, verified against the registry's sha512 ``integrity``), writes them to
``<html>/vendor/<name>-<version>/`` and points the page's tags at them, with the integrity hash
recomputed for the bytes served. Nothing fetched is kept in this repository.

Where the tarballs come from, in this order: the directory named by ``TVM_SUITE_ASV_ASSETS`` (npm
tarballs as ``npm pack NAME@VERSION`` names them, or a ``node_modules`` directory; naming it also
means: no network), the suite's cache (``<TVM_SUITE_CACHE>/asv-assets``, same layout), the npm
registry (``npm_config_registry``, else registry.npmjs.org), whose tarballs go to the cache.

    python -m suite.asv_plumbing.dashboard HTML_DIR              # a directory `asv publish` wrote
    python -m suite.asv_plumbing.dashboard --fetch-into DIR      # the tarballs, for TVM_SUITE_ASV_ASSETS

The suite's own publishing (``tvm-suite run``, ``tvm-suite history``) calls :func:`make_offline`,
and so does ``asv publish`` itself wherever the suite's asv plugin is loaded (asv at the root:
suite.asv_plumbing.plugin). ``asv publish`` removes its HTML directory whole: `tvm-suite run` leaves
:data:`MARKER` in the directory it published, and refuses to publish over one without it
(:func:`check_replaceable`), which holds someone else's files.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from suite import cache
from suite.errors import UserError

ASSETS_ENV = "TVM_SUITE_ASV_ASSETS"
REGISTRY = "https://registry.npmjs.org/"
#: Seconds to wait for the registry before calling the machine offline.
NETWORK_TIMEOUT_S = 15
VENDOR = "vendor"
#: The file `tvm-suite run` leaves in the HTML directory it published: a later run replaces that
#: directory (asv publish removes it whole); one without it holds someone else's files.
MARKER = ".published-by-tvm-suite"


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


@dataclass
class Served:
    """One file of the page served from the HTML directory."""

    url: str  # what asv's page loaded it from
    path: str  # relative to the HTML directory
    package: str  # name@version
    integrity: str  # of the bytes served, now in the page
    same_bytes: bool  # the very bytes asv's pinned hash vouches for


@dataclass
class Offline:
    """What :func:`make_offline` did to an HTML directory; ``problem`` says why it is not offline."""

    html_dir: Path
    served: list = field(default_factory=list)
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        index = self.html_dir / "index.html"
        if not index.is_file():
            return f"no {index}: {self.problem}"
        if self.ok and not self.served:
            return f"{index} (works offline: every script and style it loads is beside it, its integrity holds)"
        if self.ok:
            packages = sorted({s.package for s in self.served})
            return (f"{index} (works offline: its {len(self.served)} scripts and styles come from {VENDOR}/ beside "
                    f"it: {', '.join(packages)})")
        return f"{index} needs a network: {self.problem}"


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


def _integrity(data: bytes, algorithm: str) -> str:
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def _unpack(package: Package, tarball: bytes, origin: str) -> dict:
    """{path: bytes} of the package's files from its npm tarball (top folder stripped)."""
    if _integrity(tarball, "sha512") != package.integrity:
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
            _write(stored / package.tarball, tarball)
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
                _write(target, tarball)
                continue
        except _Offline as err:
            reasons.append(str(err))
            network = False
        except (_Unavailable, OSError) as err:
            reasons.append(str(err))
        missing.append(package)
    return _missing(missing, [p for p in (cache_dir(),) if p], reasons, False) if missing else None


# ----------------------------------------------------------------------------- the page

_TAG = re.compile(r"<(script|link)\b([^>]*)>", re.I)
_ATTR = re.compile(r"""([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
#: attributes that only make a third-party response eligible for the integrity check
_CDN_ONLY = {"crossorigin", "referrerpolicy"}


def _attributes(text: str) -> list[tuple[str, str | None]]:
    return [(m.group(1), next((g for g in m.groups()[1:] if g is not None), None)) for m in _ATTR.finditer(text)]


def _loaded_url(tag: str, attrs: dict) -> str | None:
    """The URL a script or stylesheet tag makes the browser load (None for other tags)."""
    if tag == "script":
        return attrs.get("src")
    rel = (attrs.get("rel") or "").lower().split()
    return attrs.get("href") if {"stylesheet", "preload", "modulepreload"} & set(rel) else None


def _external(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url, re.I))


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Atomically, readable by a web server (as asv leaves its own files)."""
    def write(tmp):
        Path(tmp).write_bytes(data)
        os.chmod(tmp, mode)
    cache.write_file(path, write)


def make_offline(html_dir: Path, network: bool | None = None) -> Offline:
    """Serve the libraries of asv's pages in ``html_dir`` from ``html_dir/vendor`` and point the
    pages at them, integrity recomputed. All or nothing: where a package cannot be had, the pages
    are left as asv wrote them and ``problem`` says why. Never raises for an expected failure."""
    html_dir = Path(html_dir)
    done = Offline(html_dir)
    try:
        pages = sorted(html_dir.glob("*.html"))
        if not (html_dir / "index.html").is_file():
            done.problem = "asv publish wrote none"
            return done
        texts = {page: page.read_text(encoding="utf-8") for page in pages}
        wanted, unknown = {}, []
        for text in texts.values():
            for match in _TAG.finditer(text):
                url = _loaded_url(match.group(1).lower(), dict(_attributes(match.group(2))))
                if url and url in ASSETS:
                    wanted[url] = ASSETS[url]
                elif url and _external(url):
                    unknown.append(url)
        if unknown:
            done.problem = (f"it loads {', '.join(sorted(set(unknown)))}, which the suite has no package for "
                            "(another asv version?)")
            return done
        if not wanted:  # done before (or an asv without CDN scripts): the page's own hashes must hold
            problems = check(html_dir)
            done.problem = "; ".join(problems) if problems else None
            done.served = _served_before(html_dir) if done.problem is None else []
            return done
        got, problem = obtain(sorted({p for p, _ in wanted.values()}, key=PACKAGES.index), network)
        if problem:
            done.problem = (f"its scripts come from CDNs, and {problem}; to serve them locally, "
                            + HOW.format(html_dir=html_dir))
            return done
        # the files first, the pages last: an interruption leaves the pages as asv wrote them
        for package, files in got.items():
            for path, data in files.items():
                _write(html_dir / VENDOR / package.folder / path, data)
        for page, text in texts.items():
            rewritten = _TAG.sub(lambda m: _local_tag(m, got, done), text)
            if rewritten != text:
                _write(page, rewritten.encode("utf-8"))
        _write(html_dir / VENDOR / "assets.json",
               json.dumps([vars(s) for s in done.served], indent=1).encode())
        done.problem = "; ".join(check(html_dir)) or None
    except OSError as err:
        done.problem = f"{getattr(err, 'filename', None) or html_dir}: {err.strerror or err}"
    except UserError as err:
        done.problem = str(err)
    return done


def _served_before(html_dir: Path) -> list:
    """What an earlier :func:`make_offline` served from ``html_dir`` (its ``vendor/assets.json``),
    or nothing where it cannot be read."""
    listed = cache.read_json(Path(html_dir) / VENDOR / "assets.json")
    try:
        return [Served(**entry) for entry in listed] if isinstance(listed, list) else []
    except TypeError:
        return []


def _in_progress(html_dir: Path) -> Path:
    """The file beside ``html_dir`` that says the suite is publishing into it (asv publish has
    removed it, or is writing it): left by an interrupted publish, it makes the directory the
    suite's all the same."""
    return html_dir.parent / f".{html_dir.name}.publishing-by-tvm-suite"


def check_replaceable(html_dir: Path, option: str = "--out") -> None:
    """Refuse (a UserError naming it) an existing ``html_dir`` the suite did not publish: asv
    publish removes the directory whole, and files of someone else's there would be lost. An empty
    directory, one holding :data:`MARKER`, or one an interrupted publish of the suite's left, may
    be replaced."""
    html_dir = Path(html_dir)
    if not html_dir.exists() and not html_dir.is_symlink():
        return
    if html_dir.is_dir() and not html_dir.is_symlink():
        if (html_dir / MARKER).is_file() or _in_progress(html_dir).is_file() or not any(html_dir.iterdir()):
            return
        what = "holds files tvm-suite did not publish"
    else:
        what = "is not a directory tvm-suite published"
    raise UserError(f"{option}: {html_dir} {what} (no {MARKER}), and asv publish would replace it whole: "
                    f"move it away, or give another {option}")


@contextlib.contextmanager
def publishing(html_dir: Path):
    """While the suite publishes into ``html_dir`` (checked by :func:`check_replaceable` first):
    a file beside it says so, and once done :data:`MARKER` in it makes it the suite's for the next
    run; an interrupted publish leaves the first, so the next run still replaces what it left."""
    html_dir = Path(html_dir)
    flag = _in_progress(html_dir)
    _write(flag, b"tvm-suite run is publishing asv's HTML beside this file\n")
    yield
    if html_dir.is_dir():
        _write(html_dir / MARKER, b"asv's HTML, published by tvm-suite run: the next run replaces this directory "
                                  b"whole. Remove this file to keep the directory from it.\n")
    flag.unlink(missing_ok=True)


def _local_tag(match: re.Match, got: dict, done: Offline) -> str:
    tag, attrs = match.group(1), _attributes(match.group(2))
    url = _loaded_url(tag.lower(), dict(attrs))
    if url not in ASSETS:
        return match.group(0)
    package, path = ASSETS[url]
    data = got[package][path]
    local = f"{VENDOR}/{package.folder}/{path}"
    pinned = dict(attrs).get("integrity") or ""
    algorithm = pinned.split("-", 1)[0]
    same = algorithm in ("sha256", "sha384", "sha512") and _integrity(data, algorithm) == pinned
    served = Served(url, local, package.label, _integrity(data, "sha384"), same)
    done.served.append(served)
    kept = []
    for name, value in attrs:
        if name.lower() in _CDN_ONLY:
            continue
        if value == url:
            value = local
        elif name.lower() == "integrity":
            value = served.integrity
        quote = "'" if '"' in (value or "") else '"'
        kept.append(name if value is None else f"{name}={quote}{value}{quote}")
    return f"<{tag} {' '.join(kept)}>"


def check(html_dir: Path) -> list[str]:
    """Why the pages of ``html_dir`` would not work offline, one line each: a script or stylesheet
    loaded from another host, or a local one that is missing or not the bytes its integrity names."""
    problems = []
    for page in sorted(Path(html_dir).glob("*.html")):
        for match in _TAG.finditer(page.read_text(encoding="utf-8")):
            attrs = dict(_attributes(match.group(2)))
            url = _loaded_url(match.group(1).lower(), attrs)
            if not url:
                continue
            if _external(url):
                problems.append(f"{page.name} loads {url}")
                continue
            pinned = attrs.get("integrity")
            target = Path(html_dir) / url.split("?")[0]
            if not target.is_file():
                problems.append(f"{page.name} loads {url}, which is missing")
            elif pinned and _integrity(target.read_bytes(), pinned.split("-", 1)[0]) != pinned:
                problems.append(f"{page.name} loads {url}, whose bytes are not the ones its integrity names")
    return problems


# ----------------------------------------------------------------------------- command line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.asv_plumbing.dashboard",
        description="Make a directory `asv publish` wrote work offline: the scripts and styles asv's pages "
                    f"load from CDNs are served from HTML_DIR/{VENDOR}/, taken from their npm packages "
                    f"(${ASSETS_ENV}, the suite's cache, or the npm registry).")
    parser.add_argument("html_dir", nargs="?", type=Path, help="the directory asv publish wrote (its html_dir)")
    parser.add_argument("--fetch-into", type=Path, metavar="DIR",
                        help=f"put the npm tarballs into DIR, for {ASSETS_ENV}=DIR where there is no network")
    args = parser.parse_args(argv)
    if (args.html_dir is None) == (args.fetch_into is None):
        parser.exit(2, f"{parser.prog}: error: give HTML_DIR or --fetch-into DIR (see --help)\n")
    try:
        if args.fetch_into is not None:
            problem = fetch_into(args.fetch_into)
            if problem:
                raise UserError(problem)
            print(f"{args.fetch_into}: {', '.join(p.tarball for p in PACKAGES)} "
                  f"(set {ASSETS_ENV}={args.fetch_into.resolve()} where there is no network)")
            return 0
        if not (args.html_dir / "index.html").is_file():
            raise UserError(f"{args.html_dir} is no directory asv publish wrote (it holds no index.html)")
        assets_dir()  # a named directory that is none is the user's error, said as such
        done = make_offline(args.html_dir)
        if not done.ok:
            raise UserError(done.line())
        for s in done.served:
            print(f"  {s.path:60s} {s.package:27s} {'same bytes as' if s.same_bytes else 'replaces':13s} {s.url}")
        print(done.line())
        return 0
    except UserError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return err.exit_status


if __name__ == "__main__":
    sys.exit(main())
