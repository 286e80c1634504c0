"""asv's published dashboard, offline: the libraries its pages load from CDNs, served from the HTML
directory itself.

asv 0.6's ``index.html`` loads jQuery 3.3.1, flot 0.8.3 and three of its plugins, flot-orderBars,
stupidtable, blueimp-md5 and bootstrap 3.1.1 (script and stylesheet) from code.jquery.com,
cdnjs.cloudflare.com and cdn.jsdelivr.net, each pinned by a Subresource Integrity hash; without
them its pages redirect to ``error.html``. This module takes those files from their npm packages
(the registry's tarballs, verified against the registry's sha512 ``integrity``:
:mod:`suite.asv_plumbing.npm_assets`), writes them to ``<html>/vendor/<name>-<version>/`` and points
the page's tags at them, with the integrity hash recomputed for the bytes served. Nothing fetched is
kept in this repository.

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
import contextlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from suite import cache
from suite.asv_plumbing.npm_assets import (ASSETS, ASSETS_ENV, HOW, PACKAGES, assets_dir, fetch_into, integrity, obtain,
                                           write_served)
from suite.errors import UserError

VENDOR = "vendor"
#: The file `tvm-suite run` leaves in the HTML directory it published: a later run replaces that
#: directory (asv publish removes it whole); one without it holds someone else's files.
MARKER = ".published-by-tvm-suite"


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
                write_served(html_dir / VENDOR / package.folder / path, data)
        for page, text in texts.items():
            rewritten = _TAG.sub(lambda m: _local_tag(m, got, done), text)
            if rewritten != text:
                write_served(page, rewritten.encode("utf-8"))
        write_served(html_dir / VENDOR / "assets.json",
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
    write_served(flag, b"tvm-suite run is publishing asv's HTML beside this file\n")
    yield
    if html_dir.is_dir():
        write_served(html_dir / MARKER, b"asv's HTML, published by tvm-suite run: the next run replaces this directory "
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
    same = algorithm in ("sha256", "sha384", "sha512") and integrity(data, algorithm) == pinned
    served = Served(url, local, package.label, integrity(data, "sha384"), same)
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
            elif pinned and integrity(target.read_bytes(), pinned.split("-", 1)[0]) != pinned:
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
