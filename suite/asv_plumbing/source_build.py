"""Build the TVM of one commit from source, offline: submodules from local mirrors, an LLVM of
Debian's, ccache.

What a CPU + LLVM build needs of TVM's submodules (TVM's ``.gitmodules`` and CMake files, v0.27.dev0
to main of November 2026): ``3rdparty/tvm-ffi``, and tvm-ffi's own ``3rdparty/dlpack`` (its C ABI
header) and ``3rdparty/libbacktrace`` (tracebacks of errors). ``cutlass``,
``cutlass_fpA_intB_gemm`` and ``libflash_attn`` are CUDA-only, ``OpenCL-Headers`` OpenCL-only:
they stay empty.

Mirrors (``TVM_SUITE_GIT_MIRRORS=DIR``, or ``--git-mirrors``) are git repositories laid out as
GitHub names them, ``DIR/<owner>/<name>`` (bare or not, e.g. made with ``git clone --mirror``);
git reaches them through ``url.DIR/.insteadOf=https://github.com/``, so the submodule URLs of
each commit stay as TVM wrote them.

LLVM (``TVM_SUITE_LLVM_CONFIG``, else the newest ``llvm-config-N`` on the PATH): TVM's
``cmake/utils/FindLLVM.cmake`` refuses LLVM older than 15. Debian 12 has 14 (its default), 15, 16
and 19 in bookworm, and 22 in bookworm-security (``llvm-22-dev``); the apache-tvm 0.27 wheel is
built with LLVM 22 too (``target.llvm_version_major``), linked statically, so even 22 is not the
wheel's LLVM, and results of the two are not compared silently (the gate says where two builds'
LLVMs differ: ``suite.reporting.gate.other_llvm``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from suite.git import GitError, git
from suite.errors import UserError

MIRRORS_ENV = "TVM_SUITE_GIT_MIRRORS"
LLVM_CONFIG_ENV = "TVM_SUITE_LLVM_CONFIG"
MIN_LLVM = 15  # TVM's FindLLVM.cmake: "TVM requires LLVM 15.0 or higher."

FFI = "3rdparty/tvm-ffi"
FFI_SUBMODULES = ("3rdparty/dlpack", "3rdparty/libbacktrace")

#: Build requirements beyond the pyprojects' own: tvm-ffi's CMakeLists needs CMake 3.26 (Debian 12
#: has 3.25).
EXTRA_REQUIREMENTS = ["cmake>=3.26"]
#: Z3 is off (TVM's arith analyzer then uses its conservative stub of the Z3 prover): the static Z3
#: that TVM's pyproject asks for (``mlc-z3-static``, a manylinux wheel) was compiled against the
#: libstdc++ of GCC 13 or newer, and linking it with Debian 12's GCC 12 fails
#: (``undefined symbol: std::to_chars(char*, char*, _Float128)``, ``__cxa_call_terminate``;
#: measured with mlc-z3-static 4.16.0). The wheels of apache-tvm have Z3: another reason why
#: their kernels and a source build's are not compared as one compiler's.
CMAKE_DEFINES = {"USE_CUDA": "OFF", "USE_Z3": "OFF"}
NOT_NEEDED = {"mlc-z3-static"}


class BuildFailed(Exception):
    pass


def mirrors_dir(given: str | os.PathLike | None = None) -> Path | None:
    """The mirrors directory: ``given``, else ``$TVM_SUITE_GIT_MIRRORS``; None for the network."""
    value = given or os.environ.get(MIRRORS_ENV)
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise UserError(f"git mirrors directory {path} does not exist ({MIRRORS_ENV} or --git-mirrors)")
    return path


def git_mirror_config(mirrors: Path | None) -> list[str]:
    """``git -c`` options that send every GitHub URL to the mirror of the same name.

    ``-c`` settings reach the git processes a submodule update starts (git passes them on in
    ``GIT_CONFIG_PARAMETERS``). ``protocol.file.allow``: since git 2.38.1 submodules from local
    paths are refused unless allowed.
    """
    if mirrors is None:
        return []
    return ["-c", f"url.{mirrors}/.insteadOf=https://github.com/", "-c", f"url.{mirrors}/.insteadOf=git@github.com:",
            "-c", "protocol.file.allow=always"]


def fetch_submodules(checkout: Path, mirrors: Path | None, say=print) -> None:
    """Check out the submodules a CPU + LLVM build needs, and only those."""
    config = git_mirror_config(mirrors)
    where = f"the mirrors in {mirrors}" if mirrors else "the network"
    hint = "" if mirrors else (f"; offline, point {MIRRORS_ENV} at mirrors of github.com/apache/tvm-ffi "
                               "and its submodules")
    try:
        git(checkout, *config, "submodule", "update", "--init", "--force", FFI)
    except GitError as err:
        raise BuildFailed(f"submodule {FFI} could not be fetched from {where}: {err}{hint}") from None
    ffi = checkout / FFI
    for path in FFI_SUBMODULES:
        try:
            git(ffi, *config, "submodule", "update", "--init", "--force", path)
            say(f"{FFI}/{path} from {where}")
        except GitError as err:
            if path != "3rdparty/dlpack":
                raise BuildFailed(f"submodule {FFI}/{path} could not be fetched from {where}: {err}{hint}") from None
            say(f"{FFI}/{path}: {err}")
            dlpack_from_sdist(ffi, say)
    if not (ffi / "3rdparty" / "dlpack" / "include" / "dlpack" / "dlpack.h").is_file():
        raise BuildFailed(f"{FFI}/3rdparty/dlpack has no include/dlpack/dlpack.h")


def _gitlink(repo: Path, rev: str, path: str) -> str | None:
    """The commit a tree records for submodule ``path`` at ``rev``."""
    line = git(repo, "ls-tree", rev, path, check=False)
    return line.split()[2] if line else None


def dlpack_from_sdist(ffi: Path, say=print) -> None:
    """tvm-ffi's pinned dlpack, from the source distribution of an apache-tvm-ffi release.

    A mirror of dmlc/dlpack taken before the commit tvm-ffi pins lacks it. Every apache-tvm-ffi
    sdist carries ``3rdparty/dlpack`` as checked out at its release, so the sdist of a tvm-ffi
    tag that pins the same dlpack commit has the very files (the tag at the pinned tvm-ffi commit
    first, then newest first).
    """
    pin = _gitlink(ffi, "HEAD", "3rdparty/dlpack")
    here = git(ffi, "rev-parse", "HEAD")
    tags = git(ffi, "tag", "--points-at", here, check=False).split() + \
        git(ffi, "tag", "--sort=-creatordate", "-l", "v*", check=False).split()
    for tag in dict.fromkeys(tags):
        if _gitlink(ffi, tag, "3rdparty/dlpack") != pin:
            continue
        version = tag.lstrip("v").replace("-post", ".post").replace("-rc", "rc")
        with tempfile.TemporaryDirectory() as tmp:
            fetched = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                                      "apache-tvm-ffi", f"apache-tvm-ffi=={version}", "-d", tmp],
                                     capture_output=True, text=True)
            sdists = list(Path(tmp).glob("apache_tvm_ffi-*.tar.gz"))
            if fetched.returncode != 0 or not sdists:
                continue
            target = ffi / "3rdparty" / "dlpack"
            shutil.rmtree(target, ignore_errors=True)
            with tarfile.open(sdists[0]) as archive:
                prefix = f"{sdists[0].name[:-len('.tar.gz')]}/3rdparty/dlpack/"
                members = [m for m in archive.getmembers() if m.name.startswith(prefix) and m.isfile()]
                for member in members:
                    member.name = member.name[len(prefix):]
                archive.extractall(target, members=members, filter="data")
        say(f"{FFI}/3rdparty/dlpack {pin[:12]} from the apache-tvm-ffi {version} sdist (tag {tag} pins it too)")
        return
    raise BuildFailed(f"dlpack {pin[:12]} pinned by tvm-ffi is in no mirror and in no apache-tvm-ffi sdist")


@dataclass(frozen=True)
class LLVM:
    config: str  #: path of llvm-config
    version: str  #: llvm-config --version, e.g. 22.1.8

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


def find_llvm(given: str | None = None) -> LLVM:
    """The LLVM to build against: ``given``, ``$TVM_SUITE_LLVM_CONFIG``, else the newest
    ``llvm-config-N`` (then ``llvm-config``) on the PATH; at least LLVM 15."""
    candidates = [given or os.environ.get(LLVM_CONFIG_ENV)]
    if not candidates[0]:
        candidates = [shutil.which(f"llvm-config-{v}") for v in range(30, MIN_LLVM - 1, -1)]
        candidates += [shutil.which("llvm-config")] + sorted(
            (str(p) for p in Path("/usr/lib").glob("llvm-*/bin/llvm-config")),
            key=lambda p: -int(re.search(r"llvm-(\d+)", p).group(1)))
    found = []
    for config in filter(None, candidates):
        try:
            version = subprocess.run([config, "--version"], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            continue
        llvm = LLVM(config, version)
        if llvm.major >= MIN_LLVM:
            return llvm
        found.append(f"{config} ({version})")
    raise BuildFailed(f"no LLVM {MIN_LLVM} or newer for the source build (found: {', '.join(found) or 'none'}); "
                      f"apt-get install llvm-19-dev (Debian 12), or set {LLVM_CONFIG_ENV}")


def build_requirements(checkout: Path) -> list[str]:
    """What TVM's and tvm-ffi's pyprojects ask to build with, plus EXTRA_REQUIREMENTS, less what
    CMAKE_DEFINES switches off: installed into the environment, since the build runs without pip's
    isolation (an isolated build compiles in a new temporary directory each time, and ccache
    then misses)."""
    wanted = []
    for project in (checkout, checkout / FFI):
        data = tomllib.loads((project / "pyproject.toml").read_text())
        wanted += data.get("build-system", {}).get("requires", [])
    wanted += EXTRA_REQUIREMENTS
    name = re.compile(r"^[A-Za-z0-9_.-]+")
    out = {}
    for requirement in wanted:
        key = name.match(requirement).group(0).lower().replace("_", "-")
        if key not in NOT_NEEDED:
            out.setdefault(key, requirement)
    return list(out.values())


def build_commands(checkout: Path, build_root: Path, llvm: LLVM, python: str = sys.executable,
                   ccache: str | None = None) -> list[list[str]]:
    """pip commands that build and install the ffi and TVM of a checkout with their own pyprojects.

    The CMake trees live in ``build_root``, outside asv's checkout (asv wipes that with
    ``git clean -fdx``), so consecutive commits build incrementally; ccache, when given, caches
    compiles across trees. The ffi is the checkout's own submodule, the one that commit was
    written against.
    """
    defines = {"USE_LLVM": llvm.config, **CMAKE_DEFINES}
    if ccache:
        defines |= {"CMAKE_C_COMPILER_LAUNCHER": ccache, "CMAKE_CXX_COMPILER_LAUNCHER": ccache}
    def settings(names):
        return [f"--config-settings=cmake.define.{key}={defines[key]}" for key in names if key in defines]

    launchers = ["CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER"]
    pip = [python, "-m", "pip", "install", "--no-cache-dir", "--no-build-isolation", "--no-deps"]
    return [
        [python, "-m", "pip", "install", *build_requirements(checkout)],
        pip + [str(checkout / FFI), f"--config-settings=build-dir={build_root / 'tvm-ffi'}", *settings(launchers)],
        pip + [str(checkout), f"--config-settings=build-dir={build_root / 'tvm'}", *settings(defines)],
        [python, "-m", "pip", "install", "ml_dtypes", "numpy", "typing_extensions"],
    ]


def ccache_environment(checkout: Path, build_root: Path) -> dict:
    """ccache settings for builds of many commits: one cache, hits across build trees.

    ``CCACHE_BASEDIR`` makes paths under the checkout and the build root relative in what ccache
    hashes; ``CCACHE_NOHASHDIR``: tvm-ffi compiles with ``-g``, and the build directory in its
    debug information would otherwise miss every object of another tree.
    """
    base = os.path.commonpath([Path(checkout).resolve(), Path(build_root).resolve()])
    return {"CCACHE_BASEDIR": base, "CCACHE_NOHASHDIR": "1",
            "CCACHE_MAXSIZE": os.environ.get("CCACHE_MAXSIZE", "20G")}


def _print_stats(ccache: str) -> dict[str, str]:
    """``ccache --print-stats``: one ``name<TAB>value`` a line."""
    text = subprocess.run([ccache, "--print-stats"], capture_output=True, text=True).stdout
    return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)


def ccache_objects() -> int:
    """How many objects ccache holds (0 without ccache)."""
    ccache = shutil.which("ccache")
    return int(_print_stats(ccache).get("files_in_cache", 0)) if ccache else 0


def ccache_stats(ccache: str | None) -> dict:
    """Hits and misses since the last ``ccache -z``."""
    if not ccache:
        return {}
    stats = _print_stats(ccache)
    keys = {"direct_cache_hit": "direct_hits", "preprocessed_cache_hit": "preprocessed_hits", "cache_miss": "misses"}
    return {name: int(stats[key]) for key, name in keys.items() if key in stats}
