"""Shared fixtures: every test session gets its own empty cache directory."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE_BIN = Path(sys.executable).parent / "tvm-suite"


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
