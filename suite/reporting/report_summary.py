"""The report's tables at the newest commit: one row per combination (:func:`summary_rows`: its
metrics, the change from the previous commit, int8's exactness, whether a tuned int8 kernel used
the dot-product intrinsic offered, :class:`IntrinsicUse`) and one per whole-model setting
(:func:`model_rows`)."""

from __future__ import annotations

from dataclasses import dataclass

from suite import tracked
from suite.reporting import results as res
from suite.reporting import gate_checks, rules

#: int8's metrics against its exact integer oracle, shown where a float row shows its ULP (docs/int8.md)
EXACTNESS_METRICS = ("exact_fraction", "max_step_error", "accumulator_mismatches", "accumulator_wrapped")
SUMMARY_METRICS = ("latency", "gflops", "packets", "hvx_efficiency", *EXACTNESS_METRICS, "ulp_mean", "ulp_p99",
                   "ulp_max", "scaled_error", "bound_fraction",
                   "prob_bound_fraction", "accumulation_length", "nonfinite", "differ_fraction",
                   "max_ulp_distance", "error_ratio", "bias_shift", "exceeds_bound", "twin_error_ratio")


def _previous_with_value(history, metric, s, index):
    for commit in reversed(history.commits[:index]):
        value = history.value(metric, s, commit.hash)
        if res.finite(value):
            return commit, value
    return None, None


#: The whole-model metrics (bench_model), in the model table's order.
MODEL_METRICS = tuple(m.name for m in tracked.METRICS if m.module == "bench_model")


def model_series(history: res.History) -> set:
    """The series of the whole-model benchmarks (model x dtype x target x order)."""
    return {s for name in MODEL_METRICS for s in history.values.get(name, {})}


def model_rows(history: res.History) -> list[dict]:
    """The whole-model settings at the newest commit: their metrics, or "not measured" with the
    reason kept (a skip: over the emulation budget, a target not here; a failure)."""
    newest = history.commits[-1].hash
    rows = []
    for s in sorted(model_series(history), key=lambda s: (s.ids, s.machine)):
        values = {m: history.value(m, s, newest) for m in MODEL_METRICS}
        if all(newest not in history.values.get(m, {}).get(s, {}) for m in MODEL_METRICS):
            continue  # not in this commit's grid
        measured = any(res.finite(v) for v in values.values())
        rows.append({**s.as_dict(), "model": s.workload, "values": values, "measured": measured,
                     "reason": None if measured else gate_checks.failure_reason(history, newest, s)})
    return rows


def not_exact(values: dict) -> str | None:
    """What is not exact of an int8 row (``values`` of :data:`EXACTNESS_METRICS`), in words; None
    where it is exact, or no int8 row."""
    mismatches, fraction, steps = (values.get(m) for m in ("accumulator_mismatches", "exact_fraction",
                                                           "max_step_error"))
    found = []
    if res.finite(mismatches) and mismatches > 0:
        found.append(f"accumulator not bit-exact in {mismatches:.0f} elements")
    if res.finite(fraction) and fraction < 1:
        found.append(f"output {fraction:.4%} exact" + (f", up to {steps:.0f} steps off" if res.finite(steps) else ""))
    return "; ".join(found) or None


@dataclass(frozen=True)
class IntrinsicUse:
    """Whether a tuned int8 kernel with a dot product (a conv2d or matmul) used the dot-product
    intrinsic its record's search offered, as the replayed record says (its ``dot_product`` and
    ``tensorized``, :class:`suite.core.dot_product.Tensorized`: the kernel's disassembly, and on Hexagon
    the instructions the emulator executed, when it was tuned). One that did not is a finding the
    report shows (issue 61)."""

    offered: str | None  #: the intrinsic offered (None: none, for ``reason``)
    instruction: str | None  #: its instruction (vpdpbusd, vrmpy)
    count: int | None  #: how many the kernel's disassembly holds
    executed: int | None  #: Hexagon: how many the emulator executed in one call
    used: bool | None  #: None: unknown, the record is not here (removed since the run, or another machine's)
    reason: str  #: why that intrinsic (or none) was offered; where ``used`` is None, why unknown

    def words(self) -> str:
        if self.used is None:
            return f"unknown: {self.reason}"
        if self.used:
            return f"{self.instruction} x{self.count:,}" + (f", {self.executed:,} run" if self.executed else "")
        if self.offered is None:
            return f"none offered ({self.reason})"
        return f"not used: {self.offered} offered, {self.count or 0} {self.instruction} in the kernel"

    def to_json(self) -> dict:
        return {"offered": self.offered, "instruction": self.instruction, "count": self.count,
                "executed": self.executed, "used": self.used, "reason": self.reason, "words": self.words(),
                "finding": self.used is False}


def intrinsic_use(workload_id: str, dtype: str, records_target: str | None) -> IntrinsicUse | None:
    """What the int8 record ``records_target`` replayed for ``workload_id`` says of its dot-product
    intrinsic; None where the row is no tuned int8 kernel with a dot product (a max pool or a mean
    has none to tensorize: its id names no conv2d or matmul)."""
    from suite.core import tuning_records, workloads

    ops = workload_id.split(".")[1] if workload_id.count(".") >= 2 else ""
    if dtype not in workloads.INTEGER_DTYPES or not records_target or not ("conv2d" in ops or "matmul" in ops):
        return None
    path = tuning_records.trace_path(records_target, dtype, workload_id)
    if not path.exists():
        return IntrinsicUse(None, None, None, None, None, f"its record is not here ({path})")
    _, record = tuning_records.read_record(path)
    offered, found = record.get("dot_product") or {}, record.get("tensorized") or {}
    return IntrinsicUse(offered.get("intrinsic"), found.get("instruction") or offered.get("instruction"),
                        found.get("instruction_count"), found.get("executed_count"), bool(found.get("used")),
                        offered.get("reason") or "the record names no dot product")


def summary_rows(history: res.History) -> tuple[list[dict], int]:
    newest = history.commits[-1]
    index = len(history.commits) - 1
    rows, skipped = [], 0
    models = model_series(history)  # in the model table
    for s in history.series():
        if s in models:
            continue
        values = {m: history.value(m, s, newest.hash) for m in SUMMARY_METRICS}
        failed = sorted(tracked.get(m).method for m, per_series in history.values.items()
                        if newest.hash in per_series.get(s, {}) and per_series[s][newest.hash] is None)
        if not failed and not any(res.finite(v) for v in values.values()):
            skipped += 1
            continue
        previous = {}
        for m in SUMMARY_METRICS:
            commit, value = _previous_with_value(history, m, s, index)
            if commit is not None:
                previous[m] = {"commit": commit.hash, "label": commit.label, "value": value}
        change = {}
        for m in ("latency", "packets"):
            if res.finite(values[m]) and m in previous and previous[m]["value"] > 0:
                change[f"{m}_pct"] = 100.0 * (values[m] / previous[m]["value"] - 1)
        for m in ("ulp_mean", "scaled_error", "prob_bound_fraction", "error_ratio"):
            if res.finite(values[m]) and m in previous:
                change[m] = values[m] - previous[m]["value"]
        records = history.kept(newest.hash, s.machine).records.get(s.ids) if s.order == "tuned" else None
        intrinsic = intrinsic_use(s.workload, s.dtype, records)
        rows.append({**s.as_dict(), "values": values, "failed": failed, "previous": previous, "change": change,
                     "no_rigorous_bound": rules.no_rigorous_bound(history, s, newest.hash),
                     "records": records, "not_exact": not_exact(values),
                     "intrinsic": intrinsic.to_json() if intrinsic else None})
    return rows, skipped
