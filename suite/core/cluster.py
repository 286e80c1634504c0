"""Measure combinations on a Dask cluster: build -> run -> reference -> metrics on its workers.

Only what does not depend on where it runs goes to the cluster: a combination's build (for this
machine's target: its CPU for llvm), its emulated or native run, the float64 reference and the
accuracy metrics. Each task measures one combination into the worker's own cache
(``TVM_SUITE_CACHE`` of the worker process) under *this* machine's cache key and returns the
entry's files (record, kernels, output) and the reference, which are checked against the record's
sha256 and published here, atomically, by :func:`suite.core.entries.publish_measured`: an
intact entry already here is never replaced. Latency is not measured here at all: `tvm-suite run`
times every native combination afresh on this machine once it is cached
(:mod:`suite.core.timing`), so a worker's timing is never filed under this machine's name. The
``compile_s`` and ``emulated_s`` of a record are the worker's seconds: the record names it
(``measured_on``).

No scheduler of our own: Dask distributed places, balances and retries the tasks. A worker that
dies while measuring sends the combination to another worker, as often as the scheduler's
``distributed.scheduler.allowed-failures`` allows (Dask's default 3); after that it is recorded as
failed, lost on the cluster (:data:`suite.core.entries.LOST`), and the next run measures it
again. A worker declines what it cannot measure faithfully (tools missing, a CPU that cannot run
code built for this one, another cache key); :func:`suite.core.measurement.measure_many` measures
those here. Workers of another TVM build or another suite are refused at connect time with both
ids (their records would be filed under the wrong build), and every task compares its cache key
with the client's.

Workers are started with the same installed suite and TVM, one combination at a time each::

    dask scheduler --host HOST                       # tcp://HOST:8786
    dask worker tcp://HOST:8786 --nthreads 1 --nworkers N
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import socket
import struct
import threading
import time
from functools import lru_cache
from pathlib import Path

from suite import cache
from suite.compat import release
from suite.core import entries, measurement
from suite.core.combo import Combo
from suite.core.record import Record, Status
from suite.errors import UserError, first_line
from suite.progress import Progress
from suite.targets import llvm

try:
    import dask.config
    import dask.utils
    import distributed
    import distributed.comm
except ImportError:  # the `cluster` extra is not installed
    distributed = None

SUITE_DIR = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=None)
def suite_id() -> str:
    """A digest of the suite's own files (code by what it means, tuning records, C sources:
    cache.source_digest): what, beside TVM, decides a record without being part of its cache key."""
    return cache.digest({path.relative_to(SUITE_DIR).as_posix(): cache.source_digest(path)
                         for path in sorted(SUITE_DIR.rglob("*"))
                         if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"})


def worker_identity() -> dict:
    """What the client compares on every worker at connect time (run there by ``client.run``)."""
    return {"build": release.build_id(), "suite": suite_id(), "host": socket.gethostname()}


# ----------------------------------------------------------------------------- connecting


def connect(address: str):
    """A Dask client of the scheduler at ``address`` whose every worker runs this TVM build and this
    suite; UserError (one line) when Dask is missing, the scheduler cannot be reached, no worker
    joins, or a worker differs."""
    if distributed is None:
        raise UserError("--cluster needs Dask distributed: pip install 'tvm-accuracy-suite[cluster]'")
    timeout = dask.utils.parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    if problem := _not_dask(address, timeout):
        raise UserError(f"cannot reach the Dask scheduler at {address}: {problem}")

    async def probe():  # before a Client: a Client that failed to connect complains again at exit
        comm = await distributed.comm.connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(probe())
        client = distributed.Client(address, set_as_default=False)
    except (OSError, ValueError, TypeError, asyncio.TimeoutError) as err:
        raise UserError(f"cannot reach the Dask scheduler at {address}: {first_line(err)}") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise UserError(f"no Dask worker joined the scheduler at {address} within {timeout:g} s") from None
        check_workers(client)
    except BaseException:
        client.close()
        raise
    return client


def _not_dask(address: str, timeout: float) -> str | None:
    """Why ``address`` (tcp://HOST:PORT) is not a Dask scheduler, from the first bytes it sends:
    Dask's listener writes its handshake as soon as a connection opens, framed as distributed's TCP
    comm frames every message (``distributed/comm/tcp.py``): an 8-byte little-endian length, then
    the frame count and each frame's length, 8 bytes each. Something else (an HTTP server waits
    for a request; other servers send other bytes) would leave Dask's own connect waiting for ever,
    or reading a length of exabytes; a refused connection (nothing listens there) or an unknown host
    is said at once too. None for a Dask scheduler, or an address of another scheme."""
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return None
    host, _, port = rest.rpartition(":")
    try:
        sock = socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout)
    except ConnectionRefusedError:  # said at once: Dask's own connect would retry it until its timeout
        return f"connection refused: nothing listens on port {port} there (start the scheduler, or give its address)"
    except socket.gaierror as err:
        return f"no such host {host!r} ({err.strerror})"
    except (OSError, ValueError):
        return None  # not reachable (yet): Dask's own connect retries until its timeout and says so
    try:
        sock.settimeout(timeout)
        first = b""
        while len(first) < 16:
            chunk = sock.recv(16 - len(first))
            if not chunk:
                return "it closed the connection without a Dask handshake"
            first += chunk
    except socket.timeout:
        return f"no Dask handshake within {timeout:g} s (is it a Dask scheduler?)"
    except OSError as err:
        return f"the connection failed before a Dask handshake ({err.strerror or err})"
    finally:
        sock.close()
    length, frames = struct.unpack("<QQ", first)
    if not (16 <= length <= 1 << 24 and 1 <= frames <= 1024):
        return f"it answered, but not as a Dask scheduler (it sent {first!r})"
    return None


def check_workers(client) -> dict:
    """{worker address: identity} of every worker, or UserError naming the first that runs another
    TVM build or another suite than this process, with both ids."""
    try:
        found = client.run(worker_identity)
    except Exception as err:
        raise UserError(f"a Dask worker cannot run the suite: {first_line(err)}") from None
    ours = worker_identity()
    for address, theirs in sorted(found.items()):
        if theirs["build"] != ours["build"]:
            raise UserError(f"worker {address} runs TVM build {theirs['build']}, this machine {ours['build']}: "
                            "its results would be filed under the wrong build")
        if theirs["suite"] != ours["suite"]:
            raise UserError(f"worker {address} runs suite {theirs['suite']}, this machine {ours['suite']}: "
                            "install the same tvm-accuracy-suite on every worker")
    return found


# ----------------------------------------------------------------------------- on a worker

#: One measurement at a time in a worker process (TVM builds are not made to share a process).
_ONE_AT_A_TIME = threading.Lock()


def measure_task(ids, key: dict, cpu: dict, want_reference: bool) -> dict:
    """Measure the combination ``ids`` on this worker for a client whose cache key is ``key`` and
    whose CPU is ``cpu`` ({mcpu, model}); returns its entry's files, or why it declined. Never
    raises: an error is a decline, in words (a client can hang on an exception Dask cannot ship)."""
    where = _where()
    try:
        return _measure_here(ids, key, cpu, want_reference, where)
    except Exception as err:
        return {"declined": f"worker {where}: {type(err).__name__}: {first_line(err)}"}


def _measure_here(ids, key: dict, cpu: dict, want_reference: bool, where: str) -> dict:
    with _ONE_AT_A_TIME, llvm.building_for(cpu["mcpu"], cpu["model"]):
        combo = Combo.resolve(*ids)
        if combo.key["tvm"] != key["tvm"]:
            return {"refused": f"worker {where} runs TVM build {combo.key['tvm']}, the client {key['tvm']}: "
                               "its results would be filed under the wrong build"}
        if combo.key != key:
            differ = ", ".join(sorted(k for k in set(key) | set(combo.key) if key.get(k) != combo.key.get(k)))
            return {"declined": f"worker {where} computes another cache key ({differ} differ)"}
        if entries.cached(combo) is None:
            if reason := combo.target.unavailable():
                return {"declined": f"worker {where}: {reason}"}
            if isinstance(combo.target, llvm.LLVMTarget) and (reason := llvm.can_run(cpu["mcpu"])):
                return {"declined": f"worker {where}: {reason}"}
        started = time.perf_counter()
        record = measurement.measure(combo)  # a missing tool raises UserError: declined, measured by the client
        files = _read_parts(combo, record)
        if files is None:  # replaced meanwhile by another process sharing this cache
            return {"declined": f"worker {where}: its cache entry changed while being read"}
        reference = None
        if want_reference and record.has_output:
            measurement.reference_arrays(combo.workload, combo.dtype)  # a verified entry, made if missing
            found = cache.load_entry(measurement.reference_entry(combo.workload, combo.dtype),
                                     measurement.REFERENCE_FILES)
            reference = {name: path.read_bytes() for name, path in found.items()} if found else None
        return {"record": record.to_json(), "files": files, "reference": reference, "worker": where,
                "host": socket.gethostname(), "seconds": time.perf_counter() - started}


def _where() -> str:
    try:
        return distributed.get_worker().address
    except (ValueError, AttributeError):  # not in a worker (tests call the task directly)
        return socket.gethostname()


def _read_parts(combo: Combo, record: Record) -> dict[str, bytes] | None:
    files = {}
    for name, digest in record.parts.items():
        try:
            data = (combo.entry / name).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        files[name] = data
    return files


def _suspicious(key, dask_scheduler=None) -> int:
    """How many workers died while running task ``key`` (on the scheduler)."""
    task = dask_scheduler.tasks.get(key)
    return task.suspicious if task is not None else 0


def _allowed_failures(dask_scheduler=None) -> int:
    return dask_scheduler.allowed_failures


# ----------------------------------------------------------------------------- on the client


def measure_many(combos, address: str, log=None) -> dict[Combo, Record]:
    """:func:`suite.core.measurement.measure_many` with the cluster at ``address`` first: every
    combination not yet cached and not exclusive is sent to its workers; what the cluster could
    not measure is measured here. ``log`` takes one line per combination the cluster measured."""
    combos = list(dict.fromkeys(combos))
    for combo in combos:
        entries.forget_lost(combo)
    measure([c for c in combos if entries.cached(c) is None and not c.target.exclusive], address,
            log=log or (lambda line: None))
    return measurement.measure_many(combos)


def measure(combos, address: str, log=print) -> dict:
    """Measure ``combos`` on the cluster at ``address`` and publish what comes back in this
    machine's cache. Returns counts: sent, measured, retried (after a lost worker), lost, declined
    (left to be measured here). UserError when the scheduler cannot be reached or is lost, or a
    worker runs another TVM build."""
    combos = list(dict.fromkeys(combos))
    counts = {"sent": len(combos), "measured": 0, "retried": 0, "lost": 0, "declined": 0}
    if not combos:
        return counts
    client = connect(address)
    # Dask's client logs a lost scheduler with tracebacks; this says it in one line (UserError).
    quiet, level = logging.getLogger("distributed.client"), logging.getLogger("distributed.client").level
    quiet.setLevel(logging.CRITICAL)
    try:
        workers = len(client.nthreads())
        allowed = client.run_on_scheduler(_allowed_failures)
        log(f"cluster: {len(combos)} combinations to {address} ({workers} workers, allowed-failures {allowed})")
        cpu = llvm.this_cpu()
        need_reference = {(c.workload.id, c.dtype) for c in combos if not cache.load_entry(
            measurement.reference_entry(c.workload, c.dtype), measurement.REFERENCE_FILES)}
        futures = {
            client.submit(measure_task, c.ids, c.key, cpu, (c.workload.id, c.dtype) in need_reference,
                          key=f"tvm-suite-{c.entry.name}", pure=False): c
            for c in combos
        }
        with Progress("cluster", len(combos)) as shown:  # in the order they complete: counted, not weighed
            for future in distributed.as_completed(list(futures), loop=client.loop):
                combo = futures.pop(future)
                _collect(client, future, combo, allowed, counts, log)
                future.release()
                shown.step(combo.label)
    finally:
        client.close()
        quiet.setLevel(level)
    log(f"cluster: {counts['measured']} measured, {counts['retried']} retried after a lost worker, "
        f"{counts['lost']} lost, {counts['declined']} declined (measured here)")
    return counts


def _collect(client, future, combo: Combo, allowed: int, counts: dict, log) -> None:
    try:
        result = future.result()
    except concurrent.futures.CancelledError as err:  # the scheduler went away (Dask cancels its futures)
        raise UserError(f"lost the Dask scheduler while measuring {combo.label}: {first_line(err)} "
                        "(what was measured is in the cache; run again)") from None
    except distributed.KilledWorker as err:
        reason = (f"{entries.LOST}{allowed + 1} workers died while measuring it "
                  f"(the scheduler's allowed-failures is {allowed}): {first_line(err)}")
        entries.publish_measured(combo, Record(*combo.ids, status=Status.FAILED, reason=reason), {})
        counts["lost"] += 1
        log(f"  lost     {combo.label}: {reason}")
        return
    except Exception as err:  # the task itself raised: a bug on that worker, measured here instead
        counts["declined"] += 1
        log(f"  declined {combo.label}: {type(err).__name__}: {first_line(err)}")
        return
    if "refused" in result:
        raise UserError(result["refused"])
    if "declined" in result:
        counts["declined"] += 1
        log(f"  declined {combo.label}: {result['declined']}")
        return
    retried = client.run_on_scheduler(_suspicious, future.key)
    record = Record.from_json(result["record"])
    record.measured_on = result["host"]
    try:
        entries.publish_measured(combo, record, result["files"])
    except ValueError as err:  # damaged on the way: measured here instead
        counts["declined"] += 1
        log(f"  declined {combo.label}: {err}")
        return
    if result["reference"]:
        _keep_reference(combo, result["reference"])
    counts["measured"] += 1
    counts["retried"] += bool(retried)
    again = f", after {retried} lost worker{'s' if retried > 1 else ''}" if retried else ""
    log(f"  {record.status.value:8s} {combo.label} on {result['worker']} ({result['seconds']:.1f} s{again})")


def _keep_reference(combo: Combo, files: dict[str, bytes]) -> None:
    """Keep the worker's float64 reference of a combination, unless a verified one is here."""
    where = measurement.reference_entry(combo.workload, combo.dtype)
    if set(files) != set(measurement.REFERENCE_FILES) or cache.load_entry(where, measurement.REFERENCE_FILES):
        return
    cache.store_entry(where, {name: lambda tmp, data=data: Path(tmp).write_bytes(data) for name, data in files.items()})
