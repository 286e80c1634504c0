"""Where a campaign's schedules are built and run: a pool of worker children on this machine, or
the workers of a Dask cluster. Both answer :meth:`ask` as one :class:`suite.fuzz.worker.Worker`
does (the answer, with ``output.npy``, the IEEE twin's ``twin.npy`` and ``after.py`` in the
request's directory), from as many
threads of the campaign at once as they have places (:attr:`size`).

- :class:`LocalPool`: one worker child per core (one child builds on one core: LLVM compiles a
  function single-threaded), each taking one request at a time; the kernels run with the cores
  shared between the children (``TVM_NUM_THREADS``), which changes no output: only spatial loops run
  in parallel, each element's sum keeps its order.
- :class:`ClusterPool` (``--cluster``): each request is one Dask task (:func:`cluster_task`), run by
  a worker child that the Dask worker process keeps, so a hang is a TIMEOUT and a segfault a CRASH
  there as here. The workers are those :func:`suite.core.cluster.connect` accepts (this TVM build
  and this suite, else one line); llvm code is built for this machine's CPU (a worker whose CPU
  cannot run it declines, and the request is run here), so a worker's output is the one this
  machine's build gives. A Dask worker that dies mid-request (not the child: the worker process)
  leaves the request unjudged, :class:`Lost`: the campaign journals nothing for it, and a rerun
  judges it.

Once :meth:`close` has begun (the campaign is stopping: Ctrl-C, an error), either pool starts no
child and sends no task: a thread that asks, or waits for a place, or waits on a child that the
close ends, is told :class:`Stopping` at once.
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
import threading
from pathlib import Path

from suite import sandbox
from suite.errors import UserError, first_line
from suite.fuzz.worker import LOG, STOPPING, Stopping, Worker

#: The files a worker leaves in a request's directory, brought back from a cluster's worker.
FILES = ("output.npy", "twin.npy", "after.py", "passes.json", LOG)


class Lost(Exception):
    """A request the cluster did not answer (its Dask worker died, or the scheduler went away)."""


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class LocalPool:
    """``size`` worker children on this machine (default: one per core)."""

    def __init__(self, work: Path, size: int | None = None):
        self.size = max(1, size or cores())
        threads = str(max(1, cores() // self.size))
        confined = sandbox.unavailable() is None
        self._all = [Worker(Path(work) / f"w{n}", env={"TVM_NUM_THREADS": threads}, scratch=Path(work),
                            confined=confined) for n in range(self.size)]
        #: The workers no thread holds, and whether the pool is closed, under one condition: a
        #: thread waiting for a worker wakes when one is given back, or when the pool closes.
        self._free = collections.deque(self._all)
        self._turn = threading.Condition()
        self._closed = False
        self.where = (f"{self.size} worker process{'es' if self.size > 1 else ''} here, "
                      + ("in the sandbox" if confined else f"unconfined ({sandbox.unavailable()})"))

    def ask(self, request: dict, timeout_s: float) -> dict:
        """The answer of a free worker (waiting for one to be free); :class:`Stopping` at once once
        the pool is closed, whether it waited for a worker or for its child's answer."""
        worker = self._take()
        try:
            return worker.ask(request, timeout_s)
        finally:
            self._give(worker)

    def _take(self) -> Worker:
        with self._turn:
            while not self._closed and not self._free:
                self._turn.wait()
            if self._closed:
                raise Stopping(STOPPING)
            return self._free.popleft()

    def _give(self, worker: Worker) -> None:
        with self._turn:
            self._free.append(worker)
            self._turn.notify()

    def close(self) -> None:
        """End every child, and start none again: each thread asking or waiting is :class:`Stopping`.
        Closing again does nothing more."""
        with self._turn:
            self._closed = True
            self._turn.notify_all()
        for worker in self._all:  # a worker a thread holds as well: its wait ends with Stopping
            worker.close(for_good=True)


class ClusterPool:
    """The workers of the Dask scheduler at ``address``; requests it declines run on ``fallback``."""

    def __init__(self, address: str, fallback: LocalPool):
        from suite.compat import release
        from suite.core import cluster
        from suite.targets import llvm

        self.client = cluster.connect(address)  # a user's error (unreachable, another build): one line
        self.address, self.fallback = address, fallback
        self.build, self.cpu = release.build_id(), llvm.this_cpu()
        self.size = max(1, sum(self.client.nthreads().values()))
        self.where = f"the Dask cluster at {address} ({self.size} worker threads)"

    def ask(self, request: dict, timeout_s: float) -> dict:
        import concurrent.futures

        import distributed

        client = self.client
        if client is None:  # closed: the campaign is stopping
            raise Stopping(STOPPING)
        where = Path(request["dir"])
        sent = {k: v for k, v in request.items() if k != "dir"}
        future = client.submit(cluster_task, sent, timeout_s, self.build, self.cpu, pure=False)
        try:
            answer = future.result()
        except (distributed.KilledWorker, concurrent.futures.CancelledError) as err:
            raise Lost(f"lost on the cluster: {first_line(err)}") from None
        except Exception as err:  # the task raised: a bug on that worker, not the schedule's finding
            raise Lost(f"the cluster's task failed: {type(err).__name__}: {first_line(err)}") from None
        finally:
            future.release()
        if answer.get("status") == "refused":
            raise UserError(answer["message"])
        if answer.get("status") == "declined":
            return self.fallback.ask(request, timeout_s)
        where.mkdir(parents=True, exist_ok=True)
        for name, data in (answer.pop("files", None) or {}).items():
            if name in FILES:
                (where / name).write_bytes(data)
        return answer

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        self.fallback.close()


# ----------------------------------------------------------------------------- on a Dask worker

_WORKERS: dict[int, Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _worker_of_this_thread() -> Worker:
    """The worker child of this Dask worker thread, started on first use and kept between tasks
    (TVM is imported once per child, not per task)."""
    with _WORKERS_LOCK:
        ident = threading.get_ident()
        if ident not in _WORKERS:
            _WORKERS[ident] = Worker(Path(tempfile.mkdtemp(prefix="tvm-suite-fuzz-")),
                                     confined=sandbox.unavailable() is None)
        return _WORKERS[ident]


def cluster_task(request: dict, timeout_s: float, build: str, cpu: dict) -> dict:
    """One request run by this Dask worker's child for a client of TVM build ``build`` whose CPU
    is ``cpu``: the answer with the files it left (``files``), ``refused`` for another TVM build,
    ``declined`` where this CPU cannot run code built for the client's. Never raises."""
    from suite.compat import release
    from suite.targets import llvm

    try:
        if release.build_id() != build:
            return {"status": "refused", "message": f"a Dask worker runs TVM build {release.build_id()}, this machine "
                                                    f"{build}: its results would be judged under the wrong build"}
        if request["target"] == "llvm" and (reason := llvm.can_run(cpu["mcpu"])):
            return {"status": "declined", "message": reason}
        worker = _worker_of_this_thread()
        worker.work.mkdir(parents=True, exist_ok=True)
        where = Path(tempfile.mkdtemp(prefix="request-", dir=worker.work))
        try:
            answer = worker.ask({**request, "dir": str(where), "cpu": cpu}, timeout_s)
            answer["files"] = {name: (where / name).read_bytes() for name in FILES if (where / name).exists()}
        finally:
            shutil.rmtree(where, ignore_errors=True)
        return answer
    except Exception as err:
        return {"status": "declined", "message": f"{type(err).__name__}: {first_line(err)}"}
