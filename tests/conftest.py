"""Shared fixtures: every test session gets its own empty cache directory."""

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE_BIN = Path(sys.executable).parent / "tvm-suite"
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Where asv's dashboard libraries may already be (npm tarballs): .ci/run's pre-fetch, then the
#: user's own suite cache (read before the session's cache replaces it).
ASSET_PLACES = [REPO_ROOT / ".ci" / "cache" / "asv-assets",
                Path(os.environ.get("TVM_SUITE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                     / "tvm-suite") / "asv-assets"]


@pytest.fixture(scope="session", autouse=True)
def suite_cache(tmp_path_factory):
    """An isolated TVM_SUITE_CACHE for the whole session (compiles are shared between tests)."""
    path = tmp_path_factory.mktemp("cache")
    old = os.environ.get("TVM_SUITE_CACHE")
    os.environ["TVM_SUITE_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("TVM_SUITE_CACHE", None)
    else:
        os.environ["TVM_SUITE_CACHE"] = old


@pytest.fixture(scope="session", autouse=True)
def asv_assets(tmp_path_factory):
    """Tests never use the network: asv's dashboard libraries come from TVM_SUITE_ASV_ASSETS (a
    named directory means no registry), by default the first of ASSET_PLACES that exists, else an
    empty directory (the dashboard's browser tests then skip)."""
    old = os.environ.get("TVM_SUITE_ASV_ASSETS")
    if not old:
        found = next((p for p in ASSET_PLACES if p.is_dir()), None)
        os.environ["TVM_SUITE_ASV_ASSETS"] = str(found or tmp_path_factory.mktemp("no-asv-assets"))
    yield Path(os.environ["TVM_SUITE_ASV_ASSETS"])
    if not old:
        os.environ.pop("TVM_SUITE_ASV_ASSETS", None)


def run_cli(*args, env=None, cwd=None):
    """Run the installed ``tvm-suite`` console script; returns the CompletedProcess."""
    command = [str(SUITE_BIN)] if SUITE_BIN.exists() else [sys.executable, "-m", "suite.cli"]
    return subprocess.run(command + list(args), capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)


@pytest.fixture
def cli():
    return run_cli


def have_tool(name):
    return shutil.which(name) is not None


@contextlib.contextmanager
def read_only_copy(source: Path, where: Path):
    """A copy of the directory ``source`` at ``where`` that cannot be written to, by anyone: a tmpfs
    mounted read-only where this process may mount (root in a container), else the copy's write
    bits taken away (which binds everyone but root). Skips the test where neither holds."""
    where.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(where)],
                             capture_output=True).returncode == 0
    try:
        shutil.copytree(source, where, dirs_exist_ok=True, ignore=shutil.ignore_patterns("env*", "html"))
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, capture_output=True)
        elif os.geteuid() != 0:
            subprocess.run(["chmod", "-R", "a-w", str(where)], check=True)
        else:
            pytest.skip("no read-only directory here: root cannot mount")
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)
        else:
            subprocess.run(["chmod", "-R", "u+w", str(where)], capture_output=True)


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "64k"):
    """A file system of ``size`` mounted at ``where`` (a full disk, soon); skips where this process
    cannot mount."""
    where.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small file system here (not root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
