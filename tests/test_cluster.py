"""Measuring on a Dask cluster (`tvm-suite run --cluster`): a real `dask scheduler` and two
`dask worker` processes on 127.0.0.1, each worker with a cache of its own.

On one machine every worker has the client's CPU, so bit-for-bit equality with the local run holds
by construction here; what these tests show is that the entries come back whole and unchanged,
under the client's cache key, and the fault behaviour: a worker killed mid-combination (the
scheduler retries it elsewhere, Dask's allowed-failures = 1 here), a combination whose every
worker dies (recorded as failed, lost, and measured again by the next run), an unreachable
scheduler and a worker of another TVM build (one-line errors).
"""

import importlib.util
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from suite import cache
from suite.compat import build, release
from suite.core import entries, measurement, run_place, runstore, timing
from suite.core.combo import Combo
from suite.core.record import Status
from suite.errors import UserError
from suite.targets import hexagon

#: Dask itself is imported by the tests that use it: at collection it cost every worker of the fast
#: loop (which deselects this module) about 0.4 CPU-seconds.
HAVE_DASK = importlib.util.find_spec("distributed") is not None

needs_dask = pytest.mark.skipif(not HAVE_DASK,
                                reason="Dask is not installed: pip install 'tvm-accuracy-suite[cluster]'")
#: Dask tests start a scheduler and workers (tens of seconds): a marker of their own, out of the fast loop.
pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture
def cli():
    """`tvm-suite` as a process of its own: Dask reads its configuration (DASK_*) when imported."""
    return run_cli
REPO = Path(__file__).resolve().parents[1]
PRELOAD = Path(__file__).with_name("cluster_preload.py")

MEAN, POOL = "resnet50.mean.7x7x2048", "resnet50.max_pool2d.112x112x64-k3s2"
GRID = [
    (MEAN, "float16", "llvm", "default"),
    (MEAN, "float32", "llvm", "default"),
    (POOL, "float16", "llvm", "seed-swap"),
    (MEAN, "float16", "llvm", "seed-tuned"),  # does not apply: a skipped record
]
EMULATED = [(MEAN, "float16", "hexagon-v68-emu", "default"), (POOL, "float16", "hexagon-v68-emu", "default")]
if not hexagon.missing_tools():
    GRID += EMULATED
# Measured slowly on the test's workers (tests/cluster_preload.py), to be killed mid-combination.
KILLED = (POOL, "float32", "llvm", "default")
LOST = (MEAN, "float32", "llvm", "seed-swap")
TIMINGS = ("compile_s", "emulated_s", "measured_on")  # where and how fast: not results


class Cluster:
    """A scheduler and workers started as processes of their own, stopped by their process group."""

    def __init__(self, tmp: Path, workers: int = 2, allowed_failures: int = 1, env=None):
        self.tmp, self.procs, self.client, self.workers = tmp, [], None, workers
        try:
            self._start_all(workers, allowed_failures, env)
        except BaseException:
            self.close()
            raise

    def _start_all(self, workers, allowed_failures, env):
        scheduler_file = self.tmp / "scheduler.json"
        base = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                "TVM_SUITE_TEST_SLOW": "|".join(" ".join(ids) for ids in (KILLED, LOST)), **(env or {})}
        # Should this process be killed before close(): an idle scheduler closes, its workers follow.
        self._start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--idle-timeout", "600s",
                     "--scheduler-file", str(scheduler_file)],
                    {**base, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures)}, "scheduler")
        deadline = time.monotonic() + 60
        while (address := cache.read_json(scheduler_file)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        self.address = address["address"]
        for i in range(workers):
            self._start(["worker", self.address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                         "--death-timeout", "60s",
                         "--name", f"w{i}", "--local-directory", str(self.tmp / f"scratch{i}"),
                         "--preload", str(PRELOAD)],
                        {**base, "TVM_SUITE_CACHE": str(self.tmp / f"worker-cache{i}")}, f"worker{i}")
        import distributed

        self.client = distributed.Client(self.address, set_as_default=False)
        self.client.wait_for_workers(workers, timeout=120)

    def _start(self, args, env, name):
        log = open(self.tmp / f"{name}.log", "w")
        self.procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args], env=env, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def kill_worker_running(self, key: str, timeout: float = 120) -> str:
        """SIGKILL the worker process (its nanny starts a new one) running task ``key``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for address, keys in self.client.processing().items():
                if key in keys:
                    pid = self.client.run(os.getpid, workers=[address])[address]
                    os.kill(pid, signal.SIGKILL)
                    while address in self.client.nthreads() and time.monotonic() < deadline:
                        time.sleep(0.05)
                    return address
            time.sleep(0.05)
        raise AssertionError(f"no worker ran {key} within {timeout} s")

    def close(self):
        if self.client is not None:
            self.client.close()
        for proc in reversed(self.procs):  # the nanny's worker is in the nanny's process group
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def dask_cluster():
    """suite.core.cluster, which imports Dask."""
    from suite.core import cluster

    return cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not HAVE_DASK:
        pytest.skip("Dask is not installed: pip install 'tvm-accuracy-suite[cluster]'")
    started = Cluster(tmp_path_factory.mktemp("dask"))
    yield started
    started.close()


def task_key(combo) -> str:
    return f"tvm-suite-{combo.entry.name}"


def client_cache(tmp_path, monkeypatch) -> Path:
    """A cache of its own for the client, holding only the session's workload catalogs (fusing
    ResNet-50 again would only cost time)."""
    path = tmp_path / "client"
    session = cache.root()
    if (session / "catalog").is_dir():
        shutil.copytree(session / "catalog", path / "catalog")
    monkeypatch.setenv("TVM_SUITE_CACHE", str(path))
    return path


def local_run(grid) -> dict:
    """The same combinations measured here, in the session's cache: {ids: (record, files)}."""
    found = {}
    for ids in grid:
        combo = Combo.resolve(*ids)
        record = measurement.measure(combo)
        found[ids] = (record, {name: (combo.entry / name).read_bytes() for name in record.parts})
    return found


def assert_same(local, ids, where):
    """The record and every file of ``ids`` in the client cache ``where`` are those of the local run."""
    record, files = local[ids]
    combo = Combo.resolve(*ids)
    assert combo.entry.parent.parent == where
    theirs = entries.cached(combo, verify=tuple(record.parts))
    assert theirs is not None, ids
    mine, got = record.to_json(), theirs.to_json()
    for key in TIMINGS:
        mine.pop(key, None), got.pop(key, None)
    assert got == mine, ids  # status, reason, every metric, codegen, and the sha256 of every part
    assert theirs.measured_on is not None
    for name, data in files.items():
        assert (combo.entry / name).read_bytes() == data, (ids, name)
    if record.has_output:
        ours, back = np.load(io.BytesIO(files["output.npy"])), measurement.output(combo)
        assert back.dtype == ours.dtype and np.array_equal(back, ours, equal_nan=True)
        assert back.tobytes() == ours.tobytes()


@needs_dask
def test_a_grid_on_the_cluster_matches_the_local_run_bit_for_bit(cluster, tmp_path, monkeypatch, dask_cluster):
    local = local_run(GRID)
    local_refs = {(w, d): (measurement.reference_entry(Combo.resolve(w, d, t, o).workload, d) / "reference.npy")
                  .read_bytes() for w, d, t, o in GRID if local[(w, d, t, o)][0].has_output}
    client = client_cache(tmp_path, monkeypatch)
    lines = []
    records = dask_cluster.measure_many([Combo.resolve(*ids) for ids in GRID], cluster.address,
                                       log=lines.append)
    assert {c.ids: r.status for c, r in records.items()} == {ids: local[ids][0].status for ids in GRID}
    assert lines[-1].startswith(f"cluster: {len(GRID)} measured, 0 retried after a lost worker, 0 lost, 0 declined")
    for ids in GRID:
        assert_same(local, ids, client)
    for (w, d), data in local_refs.items():  # the float64 references came back too
        assert (measurement.reference_entry(Combo.resolve(w, d, "llvm").workload, d) / "reference.npy").read_bytes() == data
    # Latency is timed here, on the kernel the cluster built for this CPU.
    assert timing.take(Combo.resolve(*GRID[0]), repeats=3).median > 0
    # Measured once: a second pass sends nothing.
    again = []
    dask_cluster.measure_many([Combo.resolve(*ids) for ids in GRID], cluster.address, log=again.append)
    assert again == []


@needs_dask
def test_a_run_on_the_cluster_times_latency_here(cluster, tmp_path, monkeypatch):
    """`tvm-suite run --cluster`'s measuring phase: the cluster measures, this machine times."""
    from suite.core.combo import Grid
    from suite.jobs import run

    client_cache(tmp_path, monkeypatch)
    targets = ["llvm"] + (["hexagon-v68-emu"] if not hexagon.missing_tools() else [])
    grid = Grid.of([MEAN], ["float16"], targets, ["default"])
    lines = []
    place = run_place.Place(tmp_path / "run", "testbox", "0" * 40)
    warm = run.warm_cache(grid, place, log=lines.append, cluster=cluster.address)
    assert any(line.startswith(f"cluster: {len(targets)} combinations to {cluster.address}") for line in lines)
    assert all(r.ok and r.measured_on for r in warm.records.values())  # measured by the workers
    (native,) = warm.latency  # emulated time is never latency
    assert native.target.name == "llvm"
    kept = runstore.own_timing(place, native.ids)
    # timed here, its kernel named by its place in the cache (a run directory names no path of its machine)
    assert kept.tvm == release.build_id() and kept.kernel == f"measure/{native.entry.name}/kernel.so"


@needs_dask
def test_a_worker_killed_mid_combination_is_retried_on_another(cluster, tmp_path, monkeypatch, dask_cluster):
    local = local_run([KILLED])
    client = client_cache(tmp_path, monkeypatch)
    combo, lines, done = Combo.resolve(*KILLED), [], {}  # resolved here: TVM builds no model in two threads
    run = threading.Thread(target=lambda: done.update(dask_cluster.measure_many(
        [combo], cluster.address, log=lines.append)))
    run.start()
    killed = cluster.kill_worker_running(task_key(combo))
    run.join(timeout=300)
    assert not run.is_alive()
    (record,) = done.values()
    assert record.ok, record
    line = next(line for line in lines if " ".join(KILLED) in line)
    assert "after 1 lost worker" in line and killed not in line, line  # measured by another worker
    assert_same(local, KILLED, client)
    cluster.client.wait_for_workers(cluster.workers, timeout=120)  # the nanny restarted it


@needs_dask
def test_a_combination_every_worker_dies_on_is_failed_then_measured_again(cluster, tmp_path, monkeypatch, dask_cluster):
    client_cache(tmp_path, monkeypatch)
    kept, lost = Combo.resolve(*GRID[0]), Combo.resolve(*LOST)
    measurement.measure(kept)  # already in this cache: a lost worker changes nothing of it
    before = {p.name: p.read_bytes() for p in kept.entry.iterdir()}
    lines, done = [], {}
    run = threading.Thread(target=lambda: done.update(dask_cluster.measure_many(
        [kept, lost], cluster.address, log=lines.append)))
    run.start()
    first = cluster.kill_worker_running(task_key(lost))
    second = cluster.kill_worker_running(task_key(lost))
    run.join(timeout=300)
    assert not run.is_alive() and first != second
    record = done[lost]
    assert record.status is Status.FAILED and record.reason.startswith(entries.LOST), record
    assert "2 workers died while measuring it (the scheduler's allowed-failures is 1)" in record.reason
    assert measurement.measure(lost).reason == record.reason  # what the run's asv benchmarks read
    assert {p.name: p.read_bytes() for p in kept.entry.iterdir()} == before
    assert done[kept].ok
    # The next run measures it again.
    cluster.client.wait_for_workers(cluster.workers, timeout=120)
    lines.clear()
    again = dask_cluster.measure_many([lost], cluster.address, log=lines.append)
    assert all(r.ok for r in again.values()), again
    assert lines[-1].startswith("cluster: 1 measured, 0 retried")


@needs_dask
def test_an_unreachable_scheduler_is_one_line_and_exit_2(cli, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = cli("run", "--workloads", MEAN, "--dtypes", "float16", "--orders", "default",
               "--cluster", f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "asv"),
               env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert lines == [f"tvm-suite: error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: connection "
                     f"refused: nothing listens on port {port} there (start the scheduler, or give its address)"], \
        done.stderr


@needs_dask
def test_a_worker_of_another_tvm_build_is_refused(tmp_path, monkeypatch, dask_cluster):
    client_cache(tmp_path, monkeypatch)  # nothing measured: there is work to send
    other = Cluster(tmp_path, workers=1, env={"TVM_SUITE_TEST_FAKE_BUILD": "0.27.0-0123456789"})
    try:
        with pytest.raises(UserError) as err:
            dask_cluster.measure_many([Combo.resolve(*GRID[0])], other.address)
    finally:
        other.close()
    message = str(err.value)
    assert "\n" not in message
    assert f"runs TVM build 0.27.0-0123456789, this machine {release.build_id()}" in message


@needs_dask
def test_a_scheduler_lost_mid_run_is_one_line_and_keeps_the_cache(tmp_path, monkeypatch, dask_cluster):
    client_cache(tmp_path, monkeypatch)
    kept, slow = Combo.resolve(*GRID[0]), Combo.resolve(*KILLED)
    measurement.measure(kept)
    before = {p.name: p.read_bytes() for p in kept.entry.iterdir()}
    other = Cluster(tmp_path, workers=1)
    failed = {}

    def run():
        try:
            dask_cluster.measure_many([kept, slow], other.address)
        except UserError as err:
            failed["error"] = str(err)

    try:
        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 120
        while not any(task_key(slow) in keys for keys in other.client.processing().values()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(other.procs[0].pid, signal.SIGKILL)  # the scheduler
        thread.join(timeout=120)
    finally:
        other.close()
    assert failed["error"].startswith(f"lost the Dask scheduler while measuring {slow.label}: ")
    assert "\n" not in failed["error"]
    assert entries.cached(slow) is None  # nothing half-published
    assert {p.name: p.read_bytes() for p in kept.entry.iterdir()} == before


def test_without_dask_the_cluster_option_says_what_to_install(monkeypatch):
    from suite.core import cluster

    monkeypatch.setattr(cluster, "distributed", None)
    with pytest.raises(UserError, match=r"pip install 'tvm-accuracy-suite\[cluster\]'"):
        cluster.connect("tcp://127.0.0.1:8786")


def test_a_published_entry_must_be_the_bytes_its_record_names(tmp_path, monkeypatch):
    """What comes back from a worker is checked before it enters the cache."""
    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path))
    combo = Combo.resolve(*GRID[0])
    record = measurement.measure(combo)
    files = {name: (combo.entry / name).read_bytes() for name in record.parts}
    cache.remove_dir(combo.entry)
    with pytest.raises(ValueError, match="not the file its record names"):
        entries.publish_measured(combo, record, {**files, "output.npy": b"garbage"})
    assert not combo.entry.exists()
    assert entries.publish_measured(combo, record, files).parts == record.parts
    assert entries.cached(combo, verify=tuple(record.parts)) is not None


def test_a_task_refuses_another_build_and_declines_another_cache_key():
    """What a worker does when the client's cache key is not the one it computes (no cluster
    needed: the task is a plain function)."""
    from suite.core import cluster
    from suite.targets import llvm

    combo = Combo.resolve(*GRID[0])
    refused = cluster.measure_task(combo.ids, {**combo.key, "tvm": "0.1.0-0000000000"}, llvm.this_cpu(), False)
    assert f"runs TVM build {release.build_id()}, the client 0.1.0-0000000000" in refused["refused"]
    declined = cluster.measure_task(combo.ids, {**combo.key, "schedule": "0" * 16}, llvm.this_cpu(), False)
    assert "computes another cache key (schedule differ)" in declined["declined"]


def test_building_for_another_cpu_targets_it_and_keys_the_cache_on_it():
    from suite.targets import llvm

    here = Combo.resolve(*GRID[0])
    with llvm.building_for("skylake", "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz"):
        there = Combo.resolve(*GRID[0])
        assert there.target.tvm_target().attrs["mcpu"] == "skylake"
        assert there.key["target"] == {"target": "llvm", "cpu": "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz"}
    assert there.entry != here.entry and Combo.resolve(*GRID[0]).entry == here.entry
    assert llvm.can_run(build.host_cpu()) is None
