"""MetaSchedule tuning, and replay of the committed records.

Tuning (``tvm-suite tune``) runs ``tune_tir`` with the real ``xgb`` cost model and stores in the
repository, per target and dtype, per workload, the MetaSchedule JSON database of the run and the best
schedule's trace. Benchmarks never tune: the ``tuned`` loop order replays the committed trace on
the installed TVM, so every TVM commit compiles the same schedule and a change in results is the
compiler's doing. A trace that no longer applies is a skip with its reason, not a crash.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from suite import cache, compat
from suite.core import workloads
from suite.errors import OrderNotApplicable, UserError

#: The committed records; TVM_SUITE_TUNING_RECORDS names another directory of the same layout
#: (a user's own records, or a test's).
RECORDS_DIR = Path(__file__).resolve().parent.parent / "tuning_records"
RECORDS_ENV = "TVM_SUITE_TUNING_RECORDS"
DATABASE_FILES = ("database_workload.json", "database_tuning_record.json")


class NoTunedRecord(OrderNotApplicable):
    """No record for this combination: the ``tuned`` order does not apply (a skip)."""


class TraceDoesNotApply(RuntimeError):
    """A record exists but its trace no longer replays on this TVM: a build failure of that TVM."""


def records_dir(target_name: str, dtype: str) -> Path:
    return Path(os.environ.get(RECORDS_ENV) or RECORDS_DIR) / target_name / dtype


def trace_path(target_name: str, dtype: str, workload_id: str) -> Path:
    return records_dir(target_name, dtype) / "traces" / f"{workload_id}.json"


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


def tune(workload_id: str, dtype: str, target, trials: int, log=print) -> dict:
    """Tune one workload with MetaSchedule and commit its trace and database rows to the repo."""
    ms = compat.meta_schedule()
    workload = workloads.get(workload_id)
    func = workloads.prim_func(workload, dtype)
    module = compat.tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
    tvm_target = target.tuning_target()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tvm-suite-tune-") as work_dir:
        database = ms.tune_tir(
            module, tvm_target, work_dir, max_trials_global=trials,
            num_trials_per_iter=min(16, trials), seed=0, builder=compat.local_builder(),
        )
        schedule = ms.tir_integration.compile_tir(database, module, tvm_target)
        if schedule is None:
            raise UserError(f"MetaSchedule found no valid schedule for {workload_id} in {trials} trials")
        best = [r for r in database.get_all_tuning_records() if r.run_secs]
        _keep_database(Path(work_dir), records_dir(target.name, dtype) / "database" / workload_id)
    elapsed = time.perf_counter() - started
    latencies = [min(float(s) for s in r.run_secs) for r in best]
    record = {
        "workload": workload_id,
        "dtype": dtype,
        "target": target.name,
        "tuned_on": {"tvm": compat.installed_version(), **target.identity()},
        "trials": trials,
        "tuning_s": round(elapsed, 1),
        "best_measured_s": min(latencies) if latencies else None,
        "trace": _plain(schedule.trace.as_json()),
    }
    path = trace_path(target.name, dtype, workload_id)
    cache.write_json(path, record)
    log(f"tuned {workload_id} {dtype} {target.name}: {trials} trials in {elapsed:.0f} s -> {path}")
    return record


def _keep_database(work_dir: Path, into: Path) -> None:
    """Copy this run's MetaSchedule JSON database (a valid ``JSONDatabase``) into the repo."""
    into.mkdir(parents=True, exist_ok=True)
    for name in DATABASE_FILES:
        for found in work_dir.glob(f"**/{name}"):
            shutil.copyfile(found, into / name)


def _tensorizes(trace) -> bool:
    instructions = trace[0] if trace else []
    return any(isinstance(inst, list) and inst and inst[0] == "Tensorize" for inst in instructions)


def replay(func, workload_id: str, dtype: str, target_name: str):
    """``func`` scheduled by the committed trace of (workload, dtype, target)."""
    path = trace_path(target_name, dtype, workload_id)
    record = cache.read_json(path)
    if record is None:
        raise NoTunedRecord(f"no tuned record for {workload_id} {dtype} on {target_name} "
                            f"(run `tvm-suite tune --target {target_name} --dtype {dtype} --workload {workload_id}`)")
    schedule = compat.schedule(func)
    if _tensorizes(record["trace"]):  # GPU fp16 traces use tensor cores (wmma)
        compat.register_tensor_intrinsics()
    try:
        compat.apply_trace(record["trace"], schedule)
    except Exception as err:  # the trace no longer applies on this TVM: news about this TVM
        lines = [line for line in str(err).splitlines() if line.strip()]
        raise TraceDoesNotApply(f"tuned trace does not apply: {lines[-1] if lines else type(err).__name__}") from None
    return schedule.mod["main"]
