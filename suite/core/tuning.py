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
instruction set, so a target replays the int8 records of its own family alone (``tuning_records.records_target``).

Where the records lie, whose replay in place of whose, and how they are read and replayed:
:mod:`suite.core.tuning_records`.
"""


from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from suite import cache, children
from suite.compat import metaschedule, release, schedules
from suite.core import execution, quantized, reference, workloads
from suite.core.dot_product import (
    PROLOGUES,
    Tensorized,
    accumulator_trace,
    instruction_count,
    intrinsic_lanes,
    pack_weights,
    tensorizes,
)
from suite.core.output_check import OutputCheck
from suite.core.tuning_records import (
    DamagedRecord,
    TuningRecord,
    read_record,
    record_path,
    records_target,
    trace_path,
    tuning_lock,
    user_records_root,
)
from suite.errors import ExitCode, UserError, first_line
from suite.targets.base import Output

#: MetaSchedule's run_secs of a candidate whose build or run failed are 1e10 (a threshold for
#: seconds only: the packets a Hexagon candidate executes can pass 1e9, so those are counted from
#: the runner's own list).
FAILED_RUN_S = 1e9


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
    ms = release.meta_schedule()
    module = release.tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
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
        schedule = metaschedule.record_schedule(record)
        if metaschedule.record_arguments(record) != shapes:  # measured with rewritten weights: check it as replayed
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
    schedule = schedules.schedule(found_acc)
    schedules.apply_trace(acc_trace, schedule)
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
    tensorized = Tensorized(tensorizes(found.trace), choice.instruction, count, executed)
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
                "tuned_on": {"tvm": release.installed_version(), **target.identity()}, "trials": trials,
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
        schedule = schedules.schedule(module["main"])
        schedules.apply_trace(previous["trace"], schedule)
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



if __name__ == "__main__":
    import sys

    sys.exit(_child(sys.argv[1:]))
