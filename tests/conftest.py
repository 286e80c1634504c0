"""Shared fixtures: a cache directory per test session (or the one TVM_SUITE_TEST_CACHE names, kept
between sessions: safe, since every cache key holds a digest of what the suite's code means), asv's
dashboard libraries read offline, and `tvm-suite` run in this process (fast) or as a process of its
own (where a process is what is tested: signals, a closed pipe, another interpreter)."""

import contextlib
import functools
import importlib.util
import io
import json
import os
import resource
import shutil
import subprocess
import time
import sys
from pathlib import Path

import filelock
import pytest

SUITE_BIN = Path(sys.executable).parent / "tvm-suite"
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Where asv's dashboard libraries may already be (npm tarballs): .ci/run's pre-fetch, then the
#: user's own suite cache (read before the session's cache replaces it).
ASSET_PLACES = [REPO_ROOT / ".ci" / "cache" / "asv-assets",
                Path(os.environ.get("TVM_SUITE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                     / "tvm-suite") / "asv-assets"]


#: A cache kept between test sessions, where a developer names one (the fast inner loop).
TEST_CACHE_ENV = "TVM_SUITE_TEST_CACHE"


def session_root(tmp_path_factory) -> Path:
    """The directory of the whole test session: shared by pytest-xdist's workers (each has a
    directory of its own below it), so what one worker made, the others find."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(tmp_path_factory, name: str, make):
    """``make(directory)``'s JSON-able value, computed once per test session whatever the number
    of xdist workers: the first worker to ask makes it under a lock, the others wait and read it."""
    root = session_root(tmp_path_factory)
    place, done = root / name, root / f"{name}.json"
    with filelock.FileLock(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(place, ignore_errors=True)  # what a failed attempt left
            place.mkdir()
            value = make(place)
            done.write_text(json.dumps(value))
    return json.loads(done.read_text())


def pytest_addoption(parser):
    parser.addoption("--cpu-report", metavar="FILE",
                     help="append one JSON line per test to FILE: its id, the xdist worker, the CPU seconds of "
                          "the test process and of the children it reaped (getrusage), and its wall seconds")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """--cpu-report: what each test cost (setup and teardown included). CPU seconds, unlike wall time,
    are little changed by other load on the machine; a child's count once it has been waited for."""
    report = item.config.getoption("cpu_report")
    if not report:
        yield
        return
    wall, cpu = time.perf_counter(), _cpu_seconds()
    yield
    line = json.dumps({"id": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                       "cpu_s": round(_cpu_seconds() - cpu, 3), "wall_s": round(time.perf_counter() - wall, 3)})
    with open(report, "a") as out:  # one write per line: the workers' lines never interleave
        out.write(line + "\n")


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_collection_modifyitems(items):
    """The longest tests first: pytest-xdist hands the first tests out one per worker in turn, so
    they run side by side from the start instead of one of them ending the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("longest") is None)


#: The session's TVM_SUITE_CACHE, and the one it replaced (None: none was set).
SUITE_CACHE = pytest.StashKey[tuple[Path, "str | None"]]()


@pytest.hookimpl(trylast=True)  # after pytest's own hook has made the factory of temporary directories
def pytest_configure(config):
    """TVM_SUITE_CACHE of the whole session, from before collection on (a test module may read the
    cache as it is imported: a grid of the default workloads reads the model's catalog), shared by
    xdist's workers (compiles are shared between tests; the cache publishes every entry atomically,
    for concurrent processes): a new one, or the one TVM_SUITE_TEST_CACHE names, kept between
    sessions. Nothing of a session reads or writes the user's own cache."""
    kept = os.environ.get(TEST_CACHE_ENV)
    path = Path(kept).absolute() if kept else session_root(config._tmp_path_factory) / "cache"
    path.mkdir(parents=True, exist_ok=True)
    config.stash[SUITE_CACHE] = (path, os.environ.get("TVM_SUITE_CACHE"))
    os.environ["TVM_SUITE_CACHE"] = str(path)


def pytest_unconfigure(config):
    path, old = config.stash.get(SUITE_CACHE, (None, None))
    if path is None:
        return
    if old is None:
        os.environ.pop("TVM_SUITE_CACHE", None)
    else:
        os.environ["TVM_SUITE_CACHE"] = old


@pytest.fixture(scope="session")
def suite_cache(pytestconfig) -> Path:
    """The session's TVM_SUITE_CACHE (see pytest_configure)."""
    return pytestconfig.stash[SUITE_CACHE][0]


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
    """Run the installed ``tvm-suite`` console script as a process; returns the CompletedProcess."""
    command = [str(SUITE_BIN)] if SUITE_BIN.exists() else [sys.executable, "-m", "suite.cli"]
    return subprocess.run(command + list(args), capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)


#: Commands whose children write to the terminal (tune's MetaSchedule search prints its progress
#: on the suite's own stdout), which this process's capture cannot read: they run as processes of
#: their own. (triage tunes, reads and builds in confined children that write to files: here.)
OWN_PROCESS = ("tune",)


def run_in_process(*args, env=None, cwd=None):
    """`tvm-suite ARGS` in this process, with ``env`` added to the environment and ``cwd`` as the
    working directory for its duration; a CompletedProcess like :func:`run_cli`'s. An exception that
    escapes ``main`` is a traceback, and fails the test. The commands of OWN_PROCESS run as a process."""
    if args and args[0] in OWN_PROCESS:
        return run_cli(*args, env=env, cwd=cwd)
    from suite import cli as suite_cli

    return _main_in_process(suite_cli.main, "tvm-suite", args, env, cwd)


def run_experiment(script, *args, env=None, cwd=REPO_ROOT):
    """``python experiments/SCRIPT ARGS`` in this process, from the repository's root: the script's
    ``main(argv)``, as its ``sys.exit(main())`` runs it, without an interpreter and imports of its own
    (the script is imported once per test process); a CompletedProcess like :func:`run_cli`'s."""
    return _main_in_process(_experiment(script).main, f"experiments/{script}", args, env, cwd)


@functools.cache
def _experiment(script: str):
    path = REPO_ROOT / "experiments" / script
    spec = importlib.util.spec_from_file_location(f"experiments_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # where dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _main_in_process(main, program: str, args, env, cwd) -> subprocess.CompletedProcess:
    """``main(ARGS)`` with sys.argv, the environment and the working directory as a process of
    ``program`` would have them, its stdout and stderr caught; the exit status it returned or exited with."""
    out, err = io.StringIO(), io.StringIO()
    saved, here, argv = dict(os.environ), os.getcwd(), sys.argv
    args = [str(a) for a in args]
    try:
        os.environ.update({k: str(v) for k, v in (env or {}).items()})
        sys.argv = [program, *args]
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(args)
            except SystemExit as done:  # argparse
                status = done.code
    finally:
        sys.argv = argv
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess([program, *args], int(status or 0), out.getvalue(), err.getvalue())


@pytest.fixture
def unkept(monkeypatch):
    """Nothing of `tvm-suite model`'s runs read from or kept in the cache (suite.model.store):
    a test that plants a wrong kernel must neither find the real one's logits there nor leave its
    own for other tests."""
    from suite.model import store as model_store

    monkeypatch.setattr(model_store.InputStore, "load_run", lambda self, index: None)
    monkeypatch.setattr(model_store.InputStore, "load_attribution", lambda self, index, calls: None)
    monkeypatch.setattr(model_store.InputStore, "store_run", lambda self, index, kept: None)
    monkeypatch.setattr(model_store.InputStore, "store_attribution", lambda self, *args: None)


@pytest.fixture
def cli():
    """`tvm-suite` in this process (see run_in_process)."""
    return run_in_process


def eventually(condition, timeout_s: float = 60.0) -> bool:
    """Whether ``condition()`` holds within ``timeout_s``, asked every 50 ms: for what a process
    leaves to the kernel when it ends (its children go, its files are removed), never a fixed sleep."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


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


def check_fault_table(faults: dict, namespace: dict) -> None:
    """A fault module's table (kind of fault -> its test functions) and its tests agree: every kind
    has cases that exist, and every test of the module is a case of some kind, so that a new kind
    cannot be forgotten. Each test_faults*.py calls it from its test_every_fault_kind_has_cases."""
    defined = {name for name in namespace if name.startswith("test_")}
    for kind, cases in faults.items():
        assert cases and set(cases) <= defined, kind
    listed = {case for cases in faults.values() for case in cases}
    assert defined - listed == {"test_every_fault_kind_has_cases"}, "a fault test without its row"


def one_line(result, *words, status=2):
    """Refused as a user's error: ``status``, no traceback, one line on stderr
    (``tvm-suite: error: ...``) naming each of ``words``; the line."""
    assert result.returncode == status, (result.returncode, result.stdout[-1000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm-suite: error: "), result.stderr
    for word in words:
        assert str(word) in lines[0], (word, lines[0])
    return lines[0]
