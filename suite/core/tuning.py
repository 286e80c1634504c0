"""MetaSchedule tuning, and replay of the committed records.

Tuning (``tvm-suite tune``) runs ``tune_tir`` with the real ``xgb`` cost model and stores in the
repository, per target and dtype, per workload, the best schedule's trace with every candidate's
measure (``candidates_s``). MetaSchedule's JSON database is not kept: replay reads only the
trace, and the databases once committed took 0.1-1.2 MB a layer (17.6 MB for 71 layers). The
target says how candidates are built and measured (:meth:`suite.targets.base.Target.tuning_options`): on llvm and cuda MetaSchedule's own local
runner times them on this machine; on ``hexagon-v68-qf`` they run under the emulator and the
measure is packets executed (``tuning_measure``, kept in the record, with each candidate's emulated
seconds beside). Every candidate's output is checked against the float64 reference before it is
measured (:class:`OutputCheck`): on llvm and cuda a candidate whose output lies beyond the
rounding bound of any summation order (``tvm-suite triage``'s CHANGED) is refused, a runner error
MetaSchedule never picks, and the record counts them (``candidates_refused``). Benchmarks never tune: the
``tuned`` loop order replays the committed trace on the installed TVM, so every TVM commit compiles
the same schedule and a change in results is the compiler's doing. A target may replay the records
of others (``records_from``, in order of preference: per workload the first that has a record,
:func:`records_target`). A missing record is a skip with its reason; a trace that no longer
applies is a failure of that TVM.

int8 (llvm and the executed Hexagon targets): every candidate's uint8 output must equal the exact
integer oracle's (:mod:`suite.core.quantized`); the search offers MetaSchedule the target's
dot-product intrinsic (``dot_product_choice``: on llvm the CPU's,
:func:`suite.targets.llvm.dot_product_intrinsic`; on Hexagon HVX's ``vrmpy``), with the weights
packed into its blocks first (16x4, Hexagon's 32x4) where their channels allow (:func:`pack_weights`,
the record's ``prologue``); the record keeps the intrinsic offered, whether the kept kernel used it
(``tensorized``: its instruction counted in the disassembly, and on Hexagon in the instructions the
emulator executed) and the trace of its accumulator, checked bit for bit before the record is
written (docs/int8-tuned.md, docs/int8-hexagon.md). int8 records carry the instructions of their
instruction set, so a target replays the int8 records of its own family alone (:func:`records_target`).

Whose records: the committed ones (``suite/tuning_records/``, :data:`RECORDS_DIR`) and the
user's own (:func:`user_records_root`: ``$XDG_DATA_HOME/tvm-suite/tuning_records``, by default
``~/.local/share/...``), of the same layout. ``tvm-suite tune`` writes the user's; only
``--into-checkout`` writes the committed ones. A record of the user's replays in place of the
committed record of the same target, workload and dtype (:func:`record_roots`, :func:`trace_path`).
``TVM_SUITE_TUNING_RECORDS`` names a directory read in place of both, and written by `tune`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import filelock
import numpy as np

from suite import cache, children, compat
from suite.core import bounds, execution, quantized, reference, workloads
from suite.errors import ExitCode, OrderNotApplicable, UserError, first_line
from suite.targets.base import Output

#: The committed records (the checkout's: only `tvm-suite tune --into-checkout` writes them);
#: TVM_SUITE_TUNING_RECORDS names another directory of the same layout, read in their place and
#: in place of the user's (:func:`record_roots`).
RECORDS_DIR = Path(__file__).resolve().parent.parent / "tuning_records"
RECORDS_ENV = "TVM_SUITE_TUNING_RECORDS"
#: MetaSchedule's run_secs of a candidate whose build or run failed are 1e10 (a threshold for
#: seconds only: the packets a Hexagon candidate executes can pass 1e9, so those are counted from
#: the runner's own list).
FAILED_RUN_S = 1e9
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


def _plain(value):
    """A TVM JSON-style trace (Arrays, Strings, IntImms) as plain JSON values."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "value"):
        return value.value
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    try:
        return [_plain(item) for item in value]
    except TypeError:
        return str(value)


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


def tune(workload_id: str, dtype: str, target, trials: int, *, lam: float, limit: float,
         root: Path | None = None, cpu_flags: frozenset[str] | None = None) -> Path:
    """Tune one workload with MetaSchedule and store its best trace in the records directory
    ``root`` (default: the user's, :func:`user_records_root`), holding the record's
    :func:`tuning_lock` throughout; the record's path. ``lam`` and ``limit``: the rounding bound
    every candidate's output is checked against (:class:`OutputCheck`; the thresholds' [bound]).

    The search runs in a process of its own (:func:`_child`), in a session of its own, with its
    temporary files in a directory made here: MetaSchedule's process pools do not survive Ctrl-C
    in the process that runs them (a segfault, its temporary directory left behind). Ctrl-C or
    SIGTERM reach this process alone; it ends the search, whatever it was doing, and removes that
    directory; the record is written whole by the search, or not at all.

    ``cpu_flags``: the CPU features (/proc/cpuinfo's names) an int8 tuning on llvm chooses its
    dot-product intrinsic by (:func:`suite.targets.llvm.dot_product_intrinsic`); default: this
    CPU's, read in the search's process."""
    root = Path(root or user_records_root())
    with tuning_lock(target.name, dtype, workload_id, root):
        work = Path(tempfile.mkdtemp(prefix="tvm-suite-tune-"))
        try:
            search_process = children.start_python(
                ["-m", "suite.core.tuning", workload_id, dtype, target.name, str(trials), repr(float(lam)),
                 repr(float(limit)), str(work / "failure.txt"), str(root),
                 "host" if cpu_flags is None else ",".join(sorted(cpu_flags))],
                env={**os.environ, "TMPDIR": str(work)})
            try:
                status = search_process.wait()
            except BaseException:
                children.end(search_process)
                raise
            failure = work / "failure.txt"
            if failure.is_file():
                raise UserError(failure.read_text().strip())
            if status != 0:
                how = f"signal {-status}" if status < 0 else f"exit {status}"
                raise SearchEnded(f"the MetaSchedule search of {workload_id} {dtype} {target.name} ended ({how}) "
                                  "without a record; its output above says how")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return record_path(target.name, dtype, workload_id, root)


def _child(argv: list[str]) -> int:
    """``python -m suite.core.tuning WORKLOAD DTYPE TARGET TRIALS LAMBDA LIMIT FAILURE_FILE ROOT FLAGS``:
    the search of :func:`tune`, in its process, its record written under ROOT; FLAGS: the CPU
    features, comma-separated, or ``host`` (this CPU's). An expected failure (a damaged record,
    say) is written, one line, to FAILURE_FILE for the parent to say."""
    from suite import targets

    workload_id, dtype, target_name, trials, lam, limit, failure, root, flags = argv
    cpu_flags = None if flags == "host" else frozenset(f for f in flags.split(",") if f)
    try:
        _tune(workload_id, dtype, targets.get(target_name), int(trials), float(lam), float(limit), print,
              Path(root), cpu_flags)
    except UserError as err:
        Path(failure).write_text(str(err))
        return 2
    return 0


@dataclass
class Search:
    """What one MetaSchedule search found: the best schedule's PrimFunc and trace, the measures
    of the candidates that ran (sorted; (packets, emulated s) pairs where the target measures
    packets), how many failed and how many of those the output check refused, where its logs
    are kept, and the tuned module and ``measure_module`` a record needs to compare itself."""

    func: object
    trace: list
    measured: list
    failed: int
    refused: int
    checked: int
    logs: Path
    seconds: float
    module: object
    measure_module: object = None

    @property
    def best(self):
        return self.measured[0] if self.measured else None


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


def search(func, target, trials: int, inputs, output_shape, dtype: str, check, label: str,
           dot_product=None) -> Search:
    """MetaSchedule's search for the best schedule of ``func`` on ``target`` (``trials`` trials),
    every candidate's output judged by ``check`` (an :class:`OutputCheck`).

    The runner checks a candidate whose parameters are the function's. MetaSchedule measures some
    llvm candidates with their weights' layout rewritten (RewriteLayout: the weights arrive
    transformed, and the runner, which has them in their own layout only, cannot check the
    output); before a schedule is chosen, such a candidate is checked as the ``tuned`` order will
    run it, its trace replayed and built by the target (the rewrite inside the function), and
    refused like any other; the next best one is tried then. So no record holds a candidate
    whose output was not checked. ``dot_product``: int8, the dot-product intrinsic offered (the
    target's ``dot_product_choice``: on llvm this CPU's, on Hexagon vrmpy)."""
    ms = compat.meta_schedule()
    module = compat.tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
    tvm_target = target.tuning_target()
    output_dtype = workloads.output_dtype(dtype)  # int8 kernels requantize to uint8
    options = (target.tuning_options(inputs, output_shape, output_dtype, check=check, dot_product=dot_product)
               if dot_product is not None else target.tuning_options(inputs, output_shape, output_dtype, check=check))
    beside = options.pop("measured", None)      # the runner's (packets, emulated s) per candidate
    measure_module = options.pop("measure_module", None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tvm-suite-tune-") as work_dir:
        database = ms.tune_tir(
            module, tvm_target, work_dir, max_trials_global=trials,
            num_trials_per_iter=min(16, trials), seed=0, **options,
        )
        records = database.get_all_tuning_records()
        runs = [r for r in records if r.run_secs]
        if target.tuning_measure == "packets":  # the runner's own list: a count of packets may exceed 1e9
            measured = sorted(beside)
            # Queried with the module as tune_tir stored it (it adds attributes, e.g. noalias, that a
            # function parsed from TVMScript may lack, and compile_tir would not find it).
            schedule = ms.tir_integration.compile_tir(database, records[0].workload.mod if records else module,
                                                      tvm_target)
        else:  # MetaSchedule's seconds, where a failure reads 1e10
            schedule, seconds = _checked_best(runs, target, inputs, output_shape, dtype, check)
            measured = sorted(seconds)
        logs = _keep_logs(Path(work_dir), label)
    if schedule is None:
        raise UserError(f"MetaSchedule found no valid schedule for {label} in {trials} trials"
                        + (f" ({check.refused} candidate(s) refused: CHANGED)" if check.refused else ""))
    return Search(schedule.mod["main"], _plain(schedule.trace.as_json()), measured, len(runs) - len(measured),
                  check.refused, check.checked, logs, time.perf_counter() - started, module, measure_module)


def _checked_best(runs, target, inputs, output_shape, dtype: str, check):
    """(The schedule of the fastest candidate whose output was checked, the seconds of every
    candidate that ran and was not refused); see :func:`search`."""
    out_dtype = workloads.output_dtype(dtype)
    shapes = [(str(a.dtype), [int(d) for d in a.shape]) for a in inputs] + [(out_dtype, [int(d) for d in output_shape])]
    seconds = {id(r): min(float(s) for s in r.run_secs) for r in runs}
    ranked = sorted((r for r in runs if seconds[id(r)] < FAILED_RUN_S), key=lambda r: seconds[id(r)])
    refused = set()
    for record in ranked:
        schedule = compat.record_schedule(record)
        if compat.record_arguments(record) != shapes:  # measured with rewritten weights: check it as replayed
            with tempfile.TemporaryDirectory(prefix="tvm-suite-replay-") as where:
                built = execution.build(target, schedule.mod["main"], Path(where) / target.KERNEL_FILE, "tuned")
                arguments = [*inputs, Output(tuple(output_shape), out_dtype)]
                ran = execution.run(built, arguments, twin=False) if not built.failure else None
                failure = built.failure or ran.failure
                if failure is not None:  # the measured candidate, replayed, must build and run
                    raise RuntimeError(f"the fastest candidate, replayed: {failure.words()}")
                if check(ran.output):
                    refused.add(id(record))
                    continue
        return schedule, [seconds[id(r)] for r in ranked if id(r) not in refused]
    return None, []


def _tune(workload_id: str, dtype: str, target, trials: int, lam: float, limit: float, log,
          root: Path | None = None, cpu_flags: frozenset[str] | None = None) -> TuningRecord:
    workload = workloads.get(workload_id)
    func = workloads.prim_func(workload, dtype)
    inputs = workloads.make_inputs(workload, dtype)
    integer = dtype in workloads.INTEGER_DTYPES
    if integer:  # the exact integer oracle: a candidate's output equals it, or it is refused
        oracle = quantized.evaluate(workload.chain, inputs)
        check = OutputCheck.of(oracle.output, None, reference.accumulation_length(workload.chain), dtype)
    else:
        check = OutputCheck.of(reference.evaluate(workload.chain, inputs), reference.evaluate_magnitude(workload.chain, inputs),
                               reference.accumulation_length(workload.chain), dtype, gross=target.ieee_twin,
                               lam=lam, limit=limit)
    by_packets = target.tuning_measure == "packets"
    # Read before the search (the lock keeps it as it is); only a deterministic measure compares it.
    previous = _previous_trace(target, dtype, workload_id) if by_packets else None
    choice, prologue = None, None
    if integer:  # the targets that run int8 say which dot product they offer (`tune` refuses the others)
        choice = target.dot_product_choice(cpu_flags)
        lanes = intrinsic_lanes(choice.intrinsic)
        packed = pack_weights(func, workload.chain, lanes) if choice.intrinsic else None
        if packed is not None:
            func, prologue = packed, PROLOGUES[lanes]
    try:  # the check stays until the record is written: the record replaced is measured with it
        found = search(func, target, trials, inputs, workload.output_shape, dtype, check,
                       f"{target.name}-{dtype}-{workload_id}", choice)
        kept = (_integer_facts(workload, target, found, oracle, inputs, choice, cpu_flags, prologue, log)
                if integer else {})
        return _record(workload_id, dtype, target, trials, log, found, check, previous, root, kept)
    finally:
        check.remove()


#: The prologue of int8 records whose weights the tuned kernel first copies into blocks of 16 (x86)
#: or 32 (HVX) output channels by 4 input channels (:func:`pack_weights`); a record names it under
#: ``prologue``.
PACK_WEIGHTS, PACK_WEIGHTS_32X4 = "pack_weights_16x4", "pack_weights_32x4"
PROLOGUES = {16: PACK_WEIGHTS, 32: PACK_WEIGHTS_32X4}
#: The output lanes of the dot-product intrinsics that are not 16 wide (x86's are): HVX's vrmpy.
_WIDE_INTRINSICS = {"dot_32x4_u8i8i32_vrmpy": 32}


def intrinsic_lanes(intrinsic: str | None) -> int:
    """The output channels one call of the dot-product ``intrinsic`` computes (x86's: 16; vrmpy: 32)."""
    return _WIDE_INTRINSICS.get(intrinsic, 16)


def pack_weights(func, chain: dict, lanes: int = 16):
    """``func`` (an int8 kernel of ``chain``, or its accumulator function) whose conv2d (NHWC, HWIO)
    or matmul first copies its weights into blocks of ``lanes`` (16 or 32) output channels by 4 input
    channels, the 4 contiguous (``[O/lanes, KH, KW, I/4, lanes, 4]``, a matmul's ``[N/lanes, K/4,
    lanes, 4]``): the operand layout of the lanes x 4 dot-product intrinsics (the activations' 4
    channels and the output's lanes lie contiguous in NHWC already). The copy is never inlined back
    (``meta_schedule.inline_rule``). None where the chain has no such weights, or their channels are
    not multiples of ``lanes`` and 4."""
    found = quantized.plan(chain)
    if found.weight is None or found.op not in ("conv2d", "matmul"):
        return None
    if found.op == "conv2d" and (found.attrs.get("data_layout"), found.attrs.get("kernel_layout")) != ("NHWC", "HWIO"):
        return None
    shape = [int(d) for d in chain["inputs"][found.weight]["shape"]]
    if shape[-1] % lanes or shape[-2] % 4:
        return None
    schedule = compat.schedule(func)
    block = schedule.get_sblock(found.op)
    copy = schedule.cache_read(block, compat.block_read_names(schedule, block).index(f"input{found.weight}"), "global")
    if found.op == "conv2d":
        schedule.transform_layout(copy, ("write", 0),
                                  lambda ry, rx, rc, o: (o // lanes, ry, rx, rc // 4, o % lanes, rc % 4))
    else:
        schedule.transform_layout(copy, ("write", 0), lambda k, n: (n // lanes, k // 4, n % lanes, k % 4))
    schedule.annotate(copy, "meta_schedule.inline_rule", "disable")
    return schedule.mod["main"]


@dataclass(frozen=True)
class Tensorized:
    """Whether a kept int8 kernel used the dot-product intrinsic offered: ``trace_tensorizes``, its
    trace has a Tensorize instruction; ``instruction``, the intrinsic's instruction, and
    ``instruction_count``, how often it occurs in the kernel's disassembly (llvm-objdump; None:
    none was offered, or no disassembler); on Hexagon ``executed_count``, how many times the
    emulator executed it in one call on the workload's inputs (None elsewhere); ``used``: all."""

    trace_tensorizes: bool
    instruction: str | None
    instruction_count: int | None
    executed_count: int | None = None

    @property
    def used(self) -> bool:
        executed = self.executed_count is None or self.executed_count > 0
        return self.trace_tensorizes and bool(self.instruction_count) and executed

    def to_json(self) -> dict:
        found = {"trace_tensorizes": self.trace_tensorizes, "instruction": self.instruction,
                 "instruction_count": self.instruction_count, "used": self.used}
        return found if self.executed_count is None else {**found, "executed_count": self.executed_count}


def instruction_count(kernel: Path, mnemonic: str) -> int | None:
    """How many ``mnemonic`` instructions the disassembly of ``kernel`` (a shared library) holds;
    None where no ``llvm-objdump`` (or ``objdump``) is installed."""
    tool = shutil.which("llvm-objdump") or shutil.which("objdump")
    if tool is None:
        return None
    text = subprocess.run([tool, "-d", "--no-show-raw-insn", str(kernel)], check=True, capture_output=True,
                          text=True).stdout
    return len(re.findall(rf"^\s*[0-9a-f]+:\s+(?:\{{\w+\}}\s*)?{re.escape(mnemonic)}\b", text, re.MULTILINE))


def accumulator_trace(trace: list, accumulator_func) -> list:
    """``trace`` (a kernel's, as JSON) as it applies to the kernel's accumulator function: every
    instruction that applies there, in order, the others (those of the blocks after the
    accumulator, and what depends on them) left out; as JSON, its decisions kept (renumbered: a
    decision names its instruction by position, an instruction its inputs by name)."""
    instructions, decisions = trace[0], {int(i): d for i, d in (trace[1] if len(trace) > 1 else [])}
    kept: list[int] = []
    for index in range(len(instructions)):
        trying = kept + [index]
        candidate = [[instructions[i] for i in trying],
                     [[position, decisions[i]] for position, i in enumerate(trying) if i in decisions]]
        try:
            compat.apply_trace(candidate, compat.schedule(accumulator_func))
        except Exception:  # an instruction of a block the accumulator has not, or of one left out
            continue
        kept = trying
    return [[instructions[i] for i in kept], [[position, decisions[i]] for position, i in enumerate(kept) if i in decisions]]


def _integer_facts(workload, target, found: Search, oracle, inputs, choice, cpu_flags, prologue, log) -> dict:
    """What an int8 record keeps beside its trace: the intrinsic offered, whether the kept kernel
    used it (its disassembly; on Hexagon also the instructions the emulator executed), and the
    trace of its accumulator, checked against the oracle's accumulator bit for bit (a UserError
    where it differs: no record is kept)."""
    from suite.targets import llvm

    emulated = target.tuning_measure == "packets"  # Hexagon, under qemu-hexagon
    if emulated:
        chosen = {**choice.to_json(), "chosen_by": f"the target ({target.name})"}
    else:
        flags = llvm.host_cpu_flags() if cpu_flags is None else cpu_flags
        chosen = {**choice.to_json(), "chosen_by": "this CPU's flags" if cpu_flags is None else "the flags given",
                  "cpu_flags": sorted(flags & set(llvm.DOT_PRODUCT_FEATURES))}
    found_acc = quantized.accumulator_func(workload.chain)
    if prologue is not None:
        found_acc = pack_weights(found_acc, workload.chain, {v: k for k, v in PROLOGUES.items()}[prologue])
    acc_trace = accumulator_trace(found.trace, found_acc)
    schedule = compat.schedule(found_acc)
    compat.apply_trace(acc_trace, schedule)
    plan = quantized.plan(workload.chain)
    used = [inputs[i] for i in (plan.data, plan.weight, plan.bias) if i is not None]
    with tempfile.TemporaryDirectory(prefix="tvm-suite-int8-") as where:
        kernel = execution.build(target, found.func, Path(where) / target.KERNEL_FILE, "tuned")
        if kernel.failure is not None:
            raise UserError(f"the kept int8 kernel of {workload.id} does not build: {kernel.failure.words()}")
        executed = None
        if emulated and choice.instruction:
            from suite.targets import hexagon

            count = hexagon.mnemonic_count(kernel.path, choice.instruction)
            executed = hexagon.executed_mnemonic_count(
                kernel.path.with_suffix(".elf"), hexagon.encode_inputs(inputs, workload.output_shape,
                                                                       quantized.OUTPUT_DTYPE),
                choice.instruction, ("qemu-hexagon", "-cpu", target.arch))
        else:
            count = instruction_count(kernel.path, choice.instruction) if choice.instruction else None
        built = execution.build(target, schedule.mod["main"], Path(where) / f"accumulator-{target.KERNEL_FILE}",
                                "tuned")
        ran = (execution.run(built, [*used, Output(tuple(workload.output_shape), quantized.ACCUMULATOR_DTYPE)],
                             twin=False) if built.failure is None else None)
        failure = built.failure or ran.failure
        if failure is not None:
            raise UserError(f"the kept int8 kernel's accumulator of {workload.id} fails: {failure.words()}")
        wrong = int(np.count_nonzero(ran.output.astype(np.int64) != quantized.wrap_int32(oracle.accumulator)))
    if wrong:
        raise UserError(f"the kept int8 kernel of {workload.id}: {wrong:,} accumulator elements differ from the "
                        "exact oracle's (CHANGED): no record kept")
    tensorized = Tensorized(_tensorizes(found.trace), choice.instruction, count, executed)
    ran_count = f", {executed:,} executed" if executed is not None else ""
    log(f"{workload.id} int8: intrinsic {choice.intrinsic} ({choice.reason}), weights "
        f"{prologue.removeprefix('pack_weights_') + ' packed first' if prologue else 'as they are'}; "
        f"{'used' if tensorized.used else 'NOT used'} ({tensorized.instruction}: {count} in the disassembly"
        f"{ran_count}); accumulator exact")
    return {"dot_product": chosen, "prologue": prologue, "tensorized": tensorized.to_json(),
            "accumulator_trace": acc_trace}


def _record(workload_id: str, dtype: str, target, trials: int, log, found: Search, check, previous,
            root: Path | None = None, integer_facts: dict | None = None) -> TuningRecord:
    """The record of a search (and of the record it replaces, where the measure compares them),
    written under ``root`` (default: the user's records, :func:`user_records_root`)."""
    first_refusal = check.first_refusal
    measured, logs, elapsed = found.measured, found.logs, found.seconds
    searched = {"workload": workload_id, "dtype": dtype, "target": target.name,
                "tuned_on": {"tvm": compat.installed_version(), **target.identity()}, "trials": trials,
                "tuning_s": round(elapsed, 1), "measure": target.tuning_measure, "candidates_failed": found.failed,
                "candidates_checked": found.checked, "candidates_refused": found.refused, "trace": found.trace,
                **(integer_facts or {})}
    if target.tuning_measure == "packets":
        record = TuningRecord(**searched, candidates_packets=[p for p, _ in measured],
                              candidates_emulated_s=[s for _, s in measured],
                              best_packets=measured[0][0] if measured else None,
                              best_emulated_s=measured[0][1] if measured else None)
        best = f"best {measured[0][0]:,} packets ({measured[0][1]:.4g} s emulated)" if measured else "no candidate ran"
        if previous is not None and measured:
            record, best = _against_previous(previous, found.module, found.measure_module, record, best, log)
    else:
        record = TuningRecord(**searched, candidates_s=measured, best_measured_s=measured[0] if measured else None)
        best = f"best {measured[0]:.4g} s measured" if measured else "no candidate ran"
    path = record_path(target.name, dtype, workload_id, root or user_records_root())
    cache.write_json(path, record.to_json())
    refused = (f", {found.refused} of {found.checked} outputs checked refused ({first_refusal})" if found.refused
               else f", {found.checked} outputs checked against the reference (by the runner, or replayed where "
                    "MetaSchedule rewrote the weights' layout), none refused")
    log(f"tuned {workload_id} {dtype} {target.name}: {trials} trials in {elapsed:.0f} s, "
        f"{len(measured)} ran{refused}, {best} -> {path} (MetaSchedule's logs, with the reason of each failed "
        f"candidate: {logs})")
    return record


class SearchEnded(UserError):
    """A workload's search process ended without a record (a crash, a child killed under load):
    that workload's failure; ``tune`` goes on with the others and names it at the end."""

    exit_status = ExitCode.NOT_READY


def existing_measure(target_name: str, dtype: str, workload_id: str, root: Path | None = None) -> str | None:
    """What the record of (target, workload, dtype) was tuned by (its ``measure``: "latency",
    "packets", or "emulated" for Hexagon records ranked by the emulator's CPU seconds); None where
    there is no record: the record that replays (:func:`trace_path`), or with ``root`` the one
    there. A damaged record is an error naming it (DamagedRecord)."""
    path = trace_path(target_name, dtype, workload_id) if root is None else record_path(
        target_name, dtype, workload_id, root)
    return read_record(path)[1].get("measure", "latency") if path.exists() else None


def _previous_trace(target, dtype: str, workload_id: str) -> dict | None:
    """The record the ``tuned`` order replays on this target today (:func:`records_target` over
    ``target.records_from``): the one this tuning replaces, or another target's (llvm's, for a
    Hexagon workload never tuned for Hexagon), which the new record supersedes all the same. None
    when there is none, or it cannot be read."""
    name = records_target(target.records_from, dtype, workload_id)
    if name is None:
        return None
    try:
        return {"target": name, **read_record(trace_path(name, dtype, workload_id))[1]}
    except DamagedRecord:
        return None


def _against_previous(previous: dict, module, measure_module, record: TuningRecord, best: str, log):
    """A deterministic measure lets the record being replaced (the one ``tuned`` replays today,
    :func:`_previous_trace`) compete with the search's best: its trace, measured now as the
    candidates were, is kept where it is better, so that a tuning never leaves ``tuned`` slower
    than it was (a search of a few dozen trials can miss a schedule found before, or find nothing
    better than another target's). Returns (the record with the trace kept and the comparison in
    ``previous_record``, with the target whose record it was; the words for the log)."""
    whose = "the record it replaces" if previous["target"] == record.target else f"{previous['target']}'s record"
    try:
        schedule = compat.schedule(module["main"])
        compat.apply_trace(previous["trace"], schedule)
        packets, emulated_s = measure_module(schedule.mod)
    except Exception as err:  # it no longer replays, builds or runs here: the search's best stands
        log(f"{whose} could not be measured ({first_line(err)}): the search's best is kept")
        return replace(record, previous_record={"target": previous["target"],
                                                "trace_sha256": previous.get("trace_sha256"),
                                                "failed": first_line(err)}), best
    kept = packets < record.best_packets
    compared = {"target": previous["target"], "trace_sha256": previous.get("trace_sha256"),
                "measure": previous.get("measure", "latency"), "packets": packets, "emulated_s": emulated_s,
                "kept": kept}
    if not kept:
        return replace(record, previous_record=compared), f"{best}; {whose}: {packets:,} packets"
    return (replace(record, previous_record=compared, trace=previous["trace"], best_packets=packets,
                    best_emulated_s=emulated_s),
            f"{whose} kept: {packets:,} packets ({emulated_s:.4g} s emulated), fewer than the search's {best}")


def _keep_logs(work_dir: Path, label: str) -> Path:
    """MetaSchedule's logs of a run (they name why each failed candidate failed), kept in the
    cache (``tune-logs/``) since the run's work directory is temporary."""
    into = cache.root() / "tune-logs" / label
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(work_dir / "logs", into, dirs_exist_ok=True)
    return into


def _output_check(make_reference):
    """``check(output) -> problem | None`` for runners that see outputs: wrong when not finite or
    off the float64 reference (``make_reference()``, evaluated on first use) by more than 10% of
    max|ref| anywhere, far beyond any rounding, qfloat's included: a candidate that computes
    something else."""
    found = []

    def check(output) -> str | None:
        if not found:
            found.append(np.asarray(make_reference(), dtype=np.float64))
        ref = found[0]
        scale = float(np.max(np.abs(ref))) or 1.0
        values = np.asarray(output, dtype=np.float64)
        if values.shape != ref.shape:
            return f"output shape {values.shape}, expected {ref.shape}"
        if not np.all(np.isfinite(values)):
            return f"{int(np.sum(~np.isfinite(values)))} non-finite outputs"
        worst = float(np.max(np.abs(values - ref)))
        if worst > 0.1 * scale:
            return f"wrong output: max |out - float64| = {worst:.4g}, over 0.1 x max|ref| = {scale:.4g}"
        return None

    return check


class OutputCheck:
    """A candidate's output judged against the float64 reference, picklable (MetaSchedule runs it
    in its runner's worker process): ``check(output)`` is None, or the problem, which the runner
    raises as that candidate's failure. Each judgement is appended to ``checked.jsonl`` in the
    check's directory, so the tuning process can count the checked and the refused.

    On IEEE targets (llvm, cuda) the rule is ``tvm-suite triage``'s CHANGED: an element beyond the
    rounding bound of any summation order (``suite.core.bounds.Bound``: ``limit`` x gamma~_K(lam) * m,
    ``lam`` and ``limit`` the numbers of ``reports/thresholds.toml`` [bound], which the command loaded
    and passes; without them, the file's defaults: lambda 9.4, limit 1). On the qfloat targets (``gross``),
    whose arithmetic is not IEEE's, the bound does not apply, and the rule stays the one the
    Hexagon runner has (:func:`_output_check`: not finite, or off by 10% of max|ref|)."""

    def __init__(self, directory: str, k: int, dtype: str, gross: bool, lam: float, limit: float):
        self.directory, self.k, self.dtype, self.gross = directory, k, dtype, gross
        self.lam, self.limit = lam, limit

    @classmethod
    def of(cls, reference_value, magnitude, k: int, dtype: str, gross: bool = False,
           lam: float = bounds.DEFAULT_LAMBDA, limit: float = 1.0) -> "OutputCheck":
        directory = tempfile.mkdtemp(prefix="tvm-suite-check-")
        floats = magnitude is not None  # an integer output has no bound: it must match exactly
        np.save(Path(directory) / "reference.npy", np.asarray(reference_value, dtype=np.float64 if floats else None),
                allow_pickle=False)
        if floats:
            np.save(Path(directory) / "magnitude.npy", np.asarray(magnitude, dtype=np.float64), allow_pickle=False)
        return cls(directory, int(k), dtype, gross, float(lam), float(limit))

    def _arrays(self):
        found = _CHECK_ARRAYS.get(self.directory)
        if found is None:
            where = Path(self.directory)
            magnitude = where / "magnitude.npy"
            found = _CHECK_ARRAYS[self.directory] = (
                np.load(where / "reference.npy", allow_pickle=False),
                np.load(magnitude, allow_pickle=False) if magnitude.exists() else None)
        return found

    def __call__(self, output) -> str | None:
        ref, magnitude = self._arrays()
        problem = _output_check(lambda: ref)(output) if self.gross else self._beyond(np.asarray(output), ref, magnitude)
        with open(Path(self.directory) / "checked.jsonl", "a") as log:
            log.write(json.dumps({"problem": problem}) + "\n")
        return problem

    def _beyond(self, output, ref, magnitude) -> str | None:
        if output.shape != ref.shape:
            return f"output shape {output.shape}, expected {ref.shape}"
        if magnitude is None:
            wrong = output != ref
            if not wrong.any():
                return None
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrong)), ref.shape))
            return (f"CHANGED: output{list(index)} = {output[index].item()}, exact {ref[index].item()} "
                    f"({int(wrong.sum()):,} of {ref.size:,} integer elements differ)")
        bound = bounds.Bound(bounds.Expected(ref, magnitude, self.k, "output", self.dtype), self.lam, self.limit)
        beyond = bound.beyond(output)
        if not beyond.any():
            return None
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(beyond)), ref.shape))
        return (f"CHANGED: output{list(index)} = {float(output[index]):.6g}, exact {float(ref[index]):.6g}, "
                f"beyond the rounding bound {bound.of(index):.4g} of any summation order "
                f"({int(beyond.sum()):,} of {ref.size:,} elements)")

    def _checked(self) -> list:
        try:
            text = (Path(self.directory) / "checked.jsonl").read_text()
        except OSError:
            return []
        return [json.loads(line)["problem"] for line in text.splitlines() if line.strip()]

    def _refusals(self) -> list[str]:
        return [problem for problem in self._checked() if problem]

    @property
    def checked(self) -> int:
        """How many outputs were checked (candidates whose parameters are not the workload's, a
        rewritten layout, run on random inputs unchecked)."""
        return len(self._checked())

    @property
    def refused(self) -> int:
        return len(self._refusals())

    @property
    def first_refusal(self) -> str | None:
        found = self._refusals()
        return found[0] if found else None

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


#: Reference arrays of the checks this process ran, by directory (a runner worker checks many candidates).
_CHECK_ARRAYS: dict = {}


def _tensorizes(trace) -> bool:
    instructions = trace[0] if trace else []
    return any(isinstance(inst, list) and inst and inst[0] == "Tensorize" for inst in instructions)


def _tensor_intrinsics(trace) -> set[str]:
    """The names of the tensor intrinsics a trace's Tensorize instructions use (their first attribute)."""
    return {str(inst[2][0]) for inst in (trace[0] if trace else [])
            if isinstance(inst, list) and inst and inst[0] == "Tensorize" and len(inst) > 2 and inst[2]}


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
    schedule = compat.schedule(func)
    if _tensorizes(trace):  # GPU fp16 traces use tensor cores (wmma), int8 ones x86's or HVX's dot products
        compat.register_tensor_intrinsics(_tensor_intrinsics(trace))
    try:
        compat.apply_trace(trace, schedule)
    except Exception as err:  # the trace no longer applies on this TVM: news about this TVM
        raise TraceDoesNotApply(f"tuned trace does not apply: {first_line(err)}") from None
    return schedule.mod["main"]


if __name__ == "__main__":
    import sys

    sys.exit(_child(sys.argv[1:]))
