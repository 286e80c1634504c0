"""Where the tuning records lie, how they are read, locked and replayed.

Whose records: the committed ones (``suite/tuning_records/``, :data:`RECORDS_DIR`) and the
user's own (:func:`user_records_root`: ``$XDG_DATA_HOME/tvm-suite/tuning_records``, by default
``~/.local/share/...``), of the same layout. ``tvm-suite tune`` writes the user's; only
``--into-checkout`` writes the committed ones. A record of the user's replays in place of the
committed record of the same target, workload and dtype (:func:`record_roots`, :func:`trace_path`).
``TVM_SUITE_TUNING_RECORDS`` names a directory read in place of both, and written by `tune`.

A record (:class:`TuningRecord`, written by :mod:`suite.core.tuning`) keeps the best schedule's
trace, its sha256 checked on every read (:func:`read_record`). The ``tuned`` loop order replays it
(:func:`replay`) on the installed TVM. A target may replay the records of others (``records_from``,
in order of preference: per workload the first that has a record, :func:`records_target`). A
missing record is a skip with its reason; a trace that no longer applies is a failure of that TVM.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass, fields
from pathlib import Path

import filelock

from suite import cache
from suite.compat import intrinsics, schedules
from suite.core import workloads
from suite.core.dot_product import (
    PROLOGUES,
    pack_weights,
    tensor_intrinsics,
    tensorizes,
)
from suite.errors import OrderNotApplicable, UserError, first_line

#: The committed records (the checkout's: only `tvm-suite tune --into-checkout` writes them);
#: TVM_SUITE_TUNING_RECORDS names another directory of the same layout, read in their place and
#: in place of the user's (:func:`record_roots`).
RECORDS_DIR = Path(__file__).resolve().parent.parent / "tuning_records"
RECORDS_ENV = "TVM_SUITE_TUNING_RECORDS"
#: What a record says its measure was, per the target's ``tuning_measure`` (records tuned for
#: hexagon-v68-qf before it ranked by packets say "emulated": the emulator's CPU seconds).
MEASURES = {
    "latency": "seconds per call on the machine tuned on (MetaSchedule's runner)",
    "packets": "packets the kernel call executed under qemu-hexagon (QEMU's counters; those of the "
               "program TVM emitted, the qfloat model's own not counted): one packet issues per cycle "
               "at best, so a lower bound of a Hexagon's cycles, not its latency; exact and the same "
               "on every run. candidates_emulated_s: the emulator's CPU seconds of the same candidates",
}


class NoTunedRecord(OrderNotApplicable):
    """No record for this combination: the ``tuned`` order does not apply (a skip)."""


class TuningInProgress(UserError):
    """Another process holds the record's tuning lock (:func:`tuning_lock`)."""


class TraceDoesNotApply(RuntimeError):
    """A record exists but its trace no longer replays on this TVM: a build failure of that TVM."""


def user_records_root() -> Path:
    """Where `tvm-suite tune` writes by default: ``TVM_SUITE_TUNING_RECORDS`` where set, else the
    user's records, ``$XDG_DATA_HOME/tvm-suite/tuning_records`` (``~/.local/share/...``), beside the
    committed ones and preferred to them."""
    named = os.environ.get(RECORDS_ENV)
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "tvm-suite" / "tuning_records"


def record_roots() -> tuple[Path, ...]:
    """The directories whose records replay, the preferred first: ``TVM_SUITE_TUNING_RECORDS``
    alone where set (in place of the others); else the user's records, then the committed ones."""
    if os.environ.get(RECORDS_ENV):
        return (Path(os.environ[RECORDS_ENV]),)
    return (user_records_root(), RECORDS_DIR)


def records_dir(target_name: str, dtype: str, root: Path | None = None) -> Path:
    """The records of (target, dtype) under ``root`` (default: ``TVM_SUITE_TUNING_RECORDS``, else
    the committed records)."""
    return Path(root or os.environ.get(RECORDS_ENV) or RECORDS_DIR) / target_name / dtype


def record_path(target_name: str, dtype: str, workload_id: str, root: Path | None = None) -> Path:
    """The record of (target, dtype, workload) under ``root`` (see :func:`records_dir`)."""
    return records_dir(target_name, dtype, root) / "traces" / f"{workload_id}.json"


def trace_path(target_name: str, dtype: str, workload_id: str) -> Path:
    """The record of (target, dtype, workload) that replays: in the first of :func:`record_roots`
    that has it (the user's before the committed); where none has it, where the committed one
    would be (or ``TVM_SUITE_TUNING_RECORDS``'s)."""
    for root in record_roots():
        path = record_path(target_name, dtype, workload_id, root)
        if path.exists():
            return path
    return record_path(target_name, dtype, workload_id)


def _names(records) -> tuple[str, ...]:
    return (records,) if isinstance(records, str) else tuple(records)


def records_target(records, dtype: str, workload_id: str) -> str | None:
    """Of the targets ``records`` (a name, or names in order of preference), the first with a
    record of this workload and dtype; None when none has one. In int8 only those of the first
    one's family (``llvm``, ``hexagon``: the name before its first ``-``): an int8 kernel is made of
    its instruction set's dot products (vpdpbusd, vrmpy), which another family cannot build."""
    names = _names(records)
    if dtype in workloads.INTEGER_DTYPES:
        names = tuple(name for name in names if _family(name) == _family(names[0]))
    return next((name for name in names if trace_path(name, dtype, workload_id).exists()), None)


def _family(target_name: str) -> str:
    return target_name.split("-", 1)[0]


class DamagedRecord(UserError):
    """A committed tuning record that cannot be read (the message names the file)."""


def read_record(path: Path) -> tuple[str, dict]:
    """(text, record) of a tuning record file, checked: a JSON object naming its workload and dtype
    as its path does, with a trace (a list). DamagedRecord naming the file otherwise: a damaged
    record is the suite's data to repair, never a combination silently skipped."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
        record = json.loads(text)
    except OSError as err:
        raise DamagedRecord(f"tuning record {path}: unreadable ({err.strerror or err})") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise DamagedRecord(f"tuning record {path}: not JSON ({str(err).splitlines()[0]})") from None
    dtype, workload = Path(path).parents[1].name, Path(path).name.removesuffix(".json")
    if (not isinstance(record, dict) or record.get("workload") != workload or record.get("dtype") != dtype
            or not isinstance(record.get("trace"), list)):
        raise DamagedRecord(f"tuning record {path}: not a record of {workload} {dtype} with a trace "
                            "(restore it from git)")
    if record.get("trace_sha256") != trace_digest(record["trace"]) or (
            "accumulator_trace" in record
            and record.get("accumulator_trace_sha256") != trace_digest(record["accumulator_trace"])):
        raise DamagedRecord(f"tuning record {path}: its trace is not the one it was tuned with (trace_sha256 "
                            "differs; restore it from git)")
    return text, record


def trace_digest(trace) -> str:
    """The sha256 a record keeps of its trace (``trace_sha256``): a damaged trace, which might still
    replay as another schedule, is refused instead of measured (or reported as TVM's failure)."""
    return cache.bytes_digest(json.dumps(trace, sort_keys=True, separators=(",", ":")).encode())


@contextlib.contextmanager
def tuning_lock(target_name: str, dtype: str, workload_id: str, root: Path | None = None):
    """Held while one process tunes the record of (target, workload, dtype); TuningInProgress,
    naming the holder, when another process holds it. Without it two processes tuning the same
    record each write their best, and the last write wins even when it is the worse schedule. The
    lock (filelock's flock, released when its holder dies) lies beside the record it protects
    (``.<record>.lock`` in its directory, found through the directory's real path), so that any
    two tunings of one record meet there, whatever their caches or their spelling of the path.
    ``root``: the records directory written (default: :func:`user_records_root`)."""
    path = record_path(target_name, dtype, workload_id, root or user_records_root())
    path.parent.mkdir(parents=True, exist_ok=True)
    record = path.parent.resolve() / path.name
    lock_path = record.parent / f".{record.name}.lock"
    stamp = f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode()
    lock = filelock.FileLock(lock_path, timeout=0,
                             on_acquired=lambda fd: (os.ftruncate(fd, 0), os.pwrite(fd, stamp, 0)))
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            holder = lock_path.read_text(errors="replace").strip() or "another process"
        except OSError:
            holder = "another process"
        raise TuningInProgress(f"{workload_id} {dtype} {target_name} is being tuned by {holder} "
                               f"(into {record})") from None
    try:
        yield
    finally:
        lock.release()


#: The fields of a tuning record that only one measure has (the others: every record).
_BY_MEASURE = {"latency": ("candidates_s", "best_measured_s"),
               "packets": ("candidates_packets", "candidates_emulated_s", "best_packets", "best_emulated_s",
                           "previous_record")}


@dataclass(frozen=True)
class TuningRecord:
    """What a tuning wrote (:func:`record_path`; read back by :func:`read_record`): what the search
    ran and found, and the trace that replays. A field is the record's JSON key of the same name;
    ``measure_is``, ``candidates_measured`` and ``trace_sha256`` follow from the fields."""

    workload: str
    dtype: str
    target: str
    tuned_on: dict  #: the TVM version and the target's identity
    trials: int
    tuning_s: float
    measure: str  #: the target's ``tuning_measure``: "latency" or "packets" (a key of MEASURES)
    candidates_failed: int
    candidates_checked: int
    candidates_refused: int
    trace: list
    #: measure "latency": every candidate's seconds, sorted, and the best (None: no candidate ran)
    candidates_s: list | None = None
    best_measured_s: float | None = None
    #: measure "packets": every candidate's packets and emulated seconds, by packets, and those of the
    #: trace kept (None: no candidate ran)
    candidates_packets: list | None = None
    candidates_emulated_s: list | None = None
    best_packets: int | None = None
    best_emulated_s: float | None = None
    previous_record: dict | None = None  #: the record replaced, measured against the search's best
    #: int8: the dot-product intrinsic offered (DotProductChoice's JSON; on llvm with the CPU flags
    #: it was chosen by), and whether the kept kernel used it (:class:`Tensorized`'s JSON)
    dot_product: dict | None = None
    tensorized: dict | None = None
    #: int8: what the kernel is made of before the trace applies (a :data:`PROLOGUES` name, or None: as it is)
    prologue: str | None = None
    #: int8: the kept trace as it applies to the kernel's accumulator (suite.core.quantized.
    #: accumulator_func; :func:`accumulator_trace`), whose output matched the oracle bit for bit
    accumulator_trace: list | None = None

    @property
    def candidates_measured(self) -> int:
        return len(self.candidates_packets if self.measure == "packets" else self.candidates_s)

    def to_json(self) -> dict:
        """The record as written: the fields of its measure (``previous_record`` where one was
        measured), with what follows from them."""
        other = {name for measure, names in _BY_MEASURE.items() if measure != self.measure for name in names}
        found = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in other}
        for optional in ("previous_record", "dot_product", "prologue", "tensorized", "accumulator_trace"):
            if found.get(optional) is None:
                found.pop(optional, None)
        found.update(measure_is=MEASURES[self.measure], candidates_measured=self.candidates_measured,
                     trace_sha256=trace_digest(self.trace))
        if self.accumulator_trace is not None:
            found["accumulator_trace_sha256"] = trace_digest(self.accumulator_trace)
        return found


def existing_measure(target_name: str, dtype: str, workload_id: str, root: Path | None = None) -> str | None:
    """What the record of (target, workload, dtype) was tuned by (its ``measure``: "latency",
    "packets", or "emulated" for Hexagon records ranked by the emulator's CPU seconds); None where
    there is no record: the record that replays (:func:`trace_path`), or with ``root`` the one
    there. A damaged record is an error naming it (DamagedRecord)."""
    path = trace_path(target_name, dtype, workload_id) if root is None else record_path(
        target_name, dtype, workload_id, root)
    return read_record(path)[1].get("measure", "latency") if path.exists() else None


def replay(func, workload_id: str, dtype: str, records, accumulator: bool = False,
           cpu_flags: frozenset[str] | None = None):
    """``func`` scheduled by the committed trace of (workload, dtype) of the first of the targets
    ``records`` (a name, or names in order of preference) that has one; ``accumulator``: ``func``
    is an int8 kernel's accumulator function, scheduled by the record's ``accumulator_trace``.
    A record whose kernel used a dot-product intrinsic this CPU (one with ``cpu_flags``; default:
    this one) cannot run is a skip naming the features it lacks (NoTunedRecord)."""
    names = _names(records)
    found = records_target(names, dtype, workload_id)
    record = read_record(trace_path(found, dtype, workload_id))[1] if found else None
    if record is None:
        how = (f"run `tvm-suite tune --target {names[0]} --dtype {dtype} --workload {workload_id}`"
               if dtype in workloads.MEASURED_DTYPES else f"`tvm-suite tune` does not tune {dtype} yet")
        raise NoTunedRecord(f"no tuned record for {workload_id} {dtype} on {' or '.join(names)} ({how})")
    if (record.get("tensorized") or {}).get("used"):
        from suite.targets import llvm

        intrinsic = record["dot_product"]["intrinsic"]
        if lacking := llvm.lacking_features(intrinsic, cpu_flags):
            raise NoTunedRecord(f"the tuned record of {workload_id} {dtype} uses {intrinsic} "
                                f"({record['dot_product']['instruction']}), and this CPU lacks {', '.join(lacking)} "
                                f"(tune it here: `tvm-suite tune --dtype {dtype} --workload {workload_id}`)")
    trace = record["trace"]
    lanes = {name: lanes for lanes, name in PROLOGUES.items()}
    if record.get("prologue") in lanes:
        func = pack_weights(func, workloads.get(workload_id).chain, lanes[record["prologue"]])
        if func is None:
            raise TraceDoesNotApply(f"the record's prologue {record['prologue']} does not apply to {workload_id}")
    elif record.get("prologue") is not None:
        raise DamagedRecord(f"tuning record of {workload_id} {dtype}: unknown prologue {record['prologue']!r}")
    if accumulator:
        trace = record.get("accumulator_trace")
        if trace is None:
            raise NoTunedRecord(f"the tuned record of {workload_id} {dtype} has no accumulator trace (tune it again)")
    schedule = schedules.schedule(func)
    if tensorizes(trace):  # GPU fp16 traces use tensor cores (wmma), int8 ones x86's or HVX's dot products
        intrinsics.register_tensor_intrinsics(tensor_intrinsics(trace))
    try:
        schedules.apply_trace(trace, schedule)
    except Exception as err:  # the trace no longer applies on this TVM: news about this TVM
        raise TraceDoesNotApply(f"tuned trace does not apply: {first_line(err)}") from None
    return schedule.mod["main"]
