"""The installed TVM release: its version (refused below MIN_SUPPORTED) and build id, the ``tvm``
module and the namespaces that moved between releases (``tir``/``tirx``, the schedule namespace,
Relax, TE, TOPI, MetaSchedule), and the LLVM it was built with."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from suite.errors import UserError

#: Oldest release whose APIs this module knows.
MIN_SUPPORTED = (0, 25)


class TVMUnavailable(UserError):
    """TVM is missing or is a version the suite cannot drive (one-line message)."""


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def installed_version() -> str:
    """The installed apache-tvm version, read without importing TVM."""
    try:
        return importlib.metadata.version("apache-tvm")
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec("tvm")
    if spec is None or spec.origin is None:
        raise TVMUnavailable(
            "TVM is not installed: pip install 'tvm-accuracy-suite[tvm]' (apache-tvm 0.27.0.post1)"
        )
    # A source build installed in development mode has no distribution metadata.
    return "source-" + Path(spec.origin).parent.name


@lru_cache(maxsize=None)
def build_id() -> str:
    """Identifies the installed TVM build for cache keys, without importing TVM; computed once
    per process (a history run installs each commit's TVM in a process of its own).

    Two source builds of different commits can share a version string, so the size and
    modification time of the TVM library are part of the identity.
    """
    version = installed_version()
    spec = importlib.util.find_spec("tvm")
    package_dir = Path(spec.origin).parent if spec and spec.origin else None
    stamp = ""
    if package_dir is not None:
        libs = sorted(package_dir.glob("**/libtvm*.so"))
        stamp = ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in libs)
    return f"{version}-{hashlib.sha256(stamp.encode()).hexdigest()[:10]}"


@lru_cache(maxsize=None)
def tvm():
    """Import TVM, failing with one clear line when it is missing or too old."""
    version = installed_version()
    if _version_tuple(version) < MIN_SUPPORTED and not version.startswith("source-"):
        raise TVMUnavailable(
            f"apache-tvm {version} is not supported: the suite drives 0.25.0 and newer"
        )
    try:
        module = importlib.import_module("tvm")
    except Exception as err:  # a broken ffi pairing fails here with an undefined symbol
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TVMUnavailable(f"apache-tvm {version} does not import: {first}") from None
    return module


def tir():
    """The TIR namespace: ``tvm.tirx`` from 0.27, ``tvm.tir`` before."""
    module = tvm()
    return getattr(module, "tirx", None) or module.tir


def schedule_namespace():
    """Where ``Schedule``, ``meta_schedule`` and ``dlight`` live: ``tvm.s_tir`` or ``tvm.tir``."""
    module = tvm()
    try:
        return importlib.import_module("tvm.s_tir")
    except ImportError:
        return module.tir


def relax():
    tvm()
    return importlib.import_module("tvm.relax")


def te():
    tvm()
    return importlib.import_module("tvm.te")


def topi():
    tvm()
    return importlib.import_module("tvm.topi")


@lru_cache(maxsize=None)
def llvm_build() -> dict:
    """The LLVM this TVM's code generator was built with: ``version`` (``LLVM_VERSION`` of TVM's
    libinfo where the build records it, else the major version TVM reports), ``use_llvm`` (the
    ``USE_LLVM`` setting) and ``installed_from``: ``wheel`` (apache-tvm from a package index, its
    LLVM linked statically, Z3 on) or ``source`` (a build of a checkout, e.g. with Debian's LLVM).
    Libinfo alone cannot tell them apart: TVM 0.27 reports ``USE_LLVM ON`` and no LLVM version for
    both. Two builds with different values are different compilers, whatever their TVM commit."""
    info = {str(k): str(v) for k, v in tvm().support.libinfo().items()}
    major = int(tvm().target.codegen.llvm_version_major())
    version = info.get("LLVM_VERSION") or ""
    return {"version": version if version not in ("", "NOT-FOUND") else str(major),
            "use_llvm": info.get("USE_LLVM", ""), "installed_from": _installed_from()}


def _installed_from() -> str:
    """``source`` where pip installed apache-tvm from a local directory or a VCS (its
    ``direct_url.json`` has ``dir_info`` or ``vcs_info``, PEP 610) or there is no distribution at
    all (a development tree), else ``wheel``."""
    try:
        text = importlib.metadata.distribution("apache-tvm").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return "source"
    if not text:
        return "wheel"
    origin = json.loads(text)
    return "source" if "dir_info" in origin or "vcs_info" in origin else "wheel"


# ----------------------------------------------------------------------------- MetaSchedule


def meta_schedule():
    """``tvm.s_tir.meta_schedule`` (0.27) or ``tvm.meta_schedule``."""
    tvm()
    try:
        return importlib.import_module("tvm.s_tir.meta_schedule")
    except ImportError:
        return importlib.import_module("tvm.meta_schedule")
