"""Source builds offline: TVM's submodules from local mirrors, only those a CPU build needs; the
LLVM chosen; the build commands (the build itself takes hours here and is a benchmark run)."""

import subprocess
import sys

import pytest

from suite.git import git
from suite.asv_plumbing import source_build
from suite.asv_plumbing.source_build import BuildFailed


def _repo(path, files, gitlinks=(), modules=()):
    """A repository with ``files`` and submodule entries (path, url, commit), one commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    if modules:
        (path / ".gitmodules").write_text("".join(
            f'[submodule "{p}"]\n\tpath = {p}\n\turl = {url}\n' for p, url, _ in modules))
    git(path, "add", "-A")
    for p, _, commit in modules:
        git(path, "update-index", "--add", "--cacheinfo", f"160000,{commit},{p}")
    git(path, "commit", "-q", "-m", "one")
    return git(path, "rev-parse", "HEAD")


@pytest.fixture
def mirrored(tmp_path):
    """Mirrors laid out as GitHub names them, and a TVM checkout whose submodules point at GitHub."""
    mirrors = tmp_path / "mirrors"
    dlpack = _repo(mirrors / "dmlc" / "dlpack", {"include/dlpack/dlpack.h": "#define DLPACK_VERSION 1\n"})
    backtrace = _repo(mirrors / "ianlancetaylor" / "libbacktrace", {"backtrace.h": "/* */\n"})
    ffi = _repo(mirrors / "apache" / "tvm-ffi", {"pyproject.toml": "[build-system]\nrequires = ['cython>=3.2.8']\n"},
                modules=[("3rdparty/dlpack", "https://github.com/dmlc/dlpack", dlpack),
                         ("3rdparty/libbacktrace", "https://github.com/ianlancetaylor/libbacktrace", backtrace)])
    _repo(tmp_path / "tvm", {"pyproject.toml": "[build-system]\nrequires = ['scikit-build-core>=0.11', "
                                               "'mlc-z3-static>=4.16.0']\n"},
          modules=[("3rdparty/tvm-ffi", "https://github.com/apache/tvm-ffi", ffi),
                   ("3rdparty/cutlass", "https://github.com/NVIDIA/cutlass.git", "1" * 40)])
    checkout = tmp_path / "checkout"  # as asv checks a commit out: a clone, submodules left alone
    subprocess.run(["git", "clone", "-q", str(tmp_path / "tvm"), str(checkout)], check=True)
    return mirrors, checkout


def test_submodules_come_from_the_mirrors_and_only_those_a_cpu_build_needs(mirrored):
    mirrors, checkout = mirrored
    said = []
    source_build.fetch_submodules(checkout, source_build.mirrors_dir(mirrors), said.append)
    ffi = checkout / "3rdparty" / "tvm-ffi"
    assert (ffi / "3rdparty" / "dlpack" / "include" / "dlpack" / "dlpack.h").read_text().startswith("#define")
    assert (ffi / "3rdparty" / "libbacktrace" / "backtrace.h").is_file()
    assert not any((checkout / "3rdparty" / "cutlass").glob("*"))  # CUDA-only: never fetched
    assert said == [f"3rdparty/tvm-ffi/3rdparty/dlpack from the mirrors in {mirrors}",
                    f"3rdparty/tvm-ffi/3rdparty/libbacktrace from the mirrors in {mirrors}"]
    # the build requirements of both pyprojects, less the static Z3 (off: it needs GCC 13's libstdc++)
    assert source_build.build_requirements(checkout) == ["scikit-build-core>=0.11", "cython>=3.2.8", "cmake>=3.26"]


def test_a_missing_mirror_is_named(mirrored, tmp_path):
    mirrors, checkout = mirrored
    (mirrors / "apache" / "tvm-ffi").rename(tmp_path / "elsewhere")
    with pytest.raises(BuildFailed, match=f"submodule 3rdparty/tvm-ffi could not be fetched from the mirrors in "
                                          f"{mirrors}"):
        source_build.fetch_submodules(checkout, mirrors, print)


def test_a_dlpack_pin_in_no_mirror_and_no_sdist_fails_with_its_commit(mirrored):
    mirrors, checkout = mirrored
    dlpack = mirrors / "dmlc" / "dlpack"
    pin = git(dlpack, "rev-parse", "HEAD")
    git(dlpack, "commit", "-q", "--amend", "-m", "rewritten: the pinned commit is gone")
    git(dlpack, "reflog", "expire", "--expire=now", "--all")
    git(dlpack, "gc", "-q", "--prune=now")
    with pytest.raises(BuildFailed, match=f"dlpack {pin[:12]} pinned by tvm-ffi is in no mirror and in no "
                                          "apache-tvm-ffi sdist"):
        source_build.fetch_submodules(checkout, mirrors, lambda line: None)


def test_mirrors_dir_must_exist(tmp_path, monkeypatch):
    from suite.errors import UserError

    monkeypatch.setenv(source_build.MIRRORS_ENV, str(tmp_path / "none"))
    with pytest.raises(UserError, match="git mirrors directory .*none does not exist"):
        source_build.mirrors_dir()
    monkeypatch.delenv(source_build.MIRRORS_ENV)
    assert source_build.mirrors_dir() is None


def _fake_llvm_config(path, version):
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return str(path)


def test_llvm_is_15_or_newer(tmp_path, monkeypatch):
    monkeypatch.setenv(source_build.LLVM_CONFIG_ENV, _fake_llvm_config(tmp_path / "old", "14.0.6"))
    with pytest.raises(BuildFailed, match=r"no LLVM 15 or newer .*old \(14.0.6\).*llvm-19-dev"):
        source_build.find_llvm()
    monkeypatch.setenv(source_build.LLVM_CONFIG_ENV, _fake_llvm_config(tmp_path / "new", "22.1.8"))
    llvm = source_build.find_llvm()
    assert (llvm.version, llvm.major) == ("22.1.8", 22)


def test_build_commands(mirrored, tmp_path):
    mirrors, checkout = mirrored
    source_build.fetch_submodules(checkout, mirrors, lambda line: None)
    build = tmp_path / "tvm-build"
    llvm = source_build.LLVM("/usr/lib/llvm-22/bin/llvm-config", "22.1.8")
    deps, ffi, tvm, runtime = source_build.build_commands(checkout, build, llvm, "/env/bin/python", "/usr/bin/ccache")
    assert deps[:4] == ["/env/bin/python", "-m", "pip", "install"] and "cmake>=3.26" in deps
    assert str(checkout / "3rdparty" / "tvm-ffi") in ffi  # the ffi of the commit itself
    for command in (ffi, tvm):  # ccache hits need one build environment, not pip's temporary ones
        assert "--no-build-isolation" in command
        assert "--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/ccache" in command
    # The CMake tree is outside the checkout, which asv wipes with git clean -fdx.
    assert f"--config-settings=build-dir={build / 'tvm'}" in tvm and str(checkout) in tvm
    assert "--config-settings=cmake.define.USE_LLVM=/usr/lib/llvm-22/bin/llvm-config" in tvm
    assert "--config-settings=cmake.define.USE_Z3=OFF" in tvm
    no_ccache = source_build.build_commands(checkout, build, llvm, sys.executable, None)
    assert not any("LAUNCHER" in a for command in no_ccache for a in command)
    assert "ml_dtypes" in runtime
    env = source_build.ccache_environment(checkout, build)
    assert env["CCACHE_BASEDIR"] == str(tmp_path) and env["CCACHE_NOHASHDIR"] == "1"
