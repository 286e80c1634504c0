"""What `tvm-suite model` found, typed: a :class:`ModelResult` holds one :class:`SettingResult` per
setting (dtype x target x order), each with its :class:`Metrics`, the IEEE twin's
(:class:`TwinMetrics`) and, with ``--attribute``, its :class:`Attribution` (and, in ``tuned``, the
orders' difference attributed: :class:`AgainstDefault`).

Each piece's ``to_json()`` is the JSON the command writes (``--json``, ``model.json``, the page
``model.html`` is rendered from; docs/model.md): keys in the same order, a piece that does not
apply absent, a number that is undefined null. Its ``lines()`` are what the command prints. The
numbers themselves are computed by :mod:`suite.model.accuracy`; nothing here computes any.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from suite.model.calls import Call

#: The calls an attribution table shows, largest share first (--json has them all).
SHOWN_CALLS = 8
#: What the settings' table says of its columns.
TABLE_NOTE = ("errors of the logits against float64 (int8: the float model's, its logits dequantized); eager: llvm "
              "default in the same dtype (PyTorch's rule passes at 2x fp32, 3x fp16); default: the same target and "
              "dtype in order default; top-k: inputs whose float64 top class is the target's top-1 / among its "
              "top-5; IEEE twin: the same kernels with IEEE rounding; integer: int8's every call against the exact "
              "integer pipeline")
TABLE_HEADERS = ["dtype", "target", "order", "max|err|", "mean|err|", "RMSE", "RMSE/eager", "RMSE/fp32",
                 "RMSE/default", "vs llvm max", "top-1", "top-5", "s/input", "pkts/input", "no record", "integer"]


def number(value, spec=".3g") -> str:
    """A number as the tables print it; ``-`` where it is undefined (None)."""
    return "-" if value is None else format(value, spec)


def _json(piece):
    return None if piece is None else piece.to_json()


def _table(rows, headers) -> str:
    from tabulate import tabulate  # here: the benchmarks import this module in asv's environments, which lack it

    return tabulate(rows, headers, tablefmt="plain", disable_numparse=True)


class Status(enum.Enum):
    """A setting measured, not measured (a call its target could not build or run: ``reason``), or
    skipped (the whole-model benchmarks: an emulated setting over the budget, ``reason``)."""

    MEASURED = "measured"
    NOT_MEASURED = "not measured"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Apart:
    """How far two runs' logits are apart: the largest and the mean absolute difference."""

    max_abs: float
    mean_abs: float

    def to_json(self) -> dict:
        return {"max_abs": self.max_abs, "mean_abs": self.mean_abs}


@dataclass(frozen=True)
class Errors:
    """Logits (inputs x classes) against float64: their errors, the non-finite ones, and how often
    the float64 top class is the logits' top-1 or among their top-5 (an input with a non-finite
    logit agrees on nothing)."""

    max_abs_error: float
    mean_abs_error: float
    rmse: float
    nonfinite: int
    top1_agreement: float
    top5_agreement: float

    def to_json(self) -> dict:
        return {"max_abs_error": self.max_abs_error, "mean_abs_error": self.mean_abs_error, "rmse": self.rmse,
                "nonfinite": self.nonfinite, "top1_agreement": self.top1_agreement,
                "top5_agreement": self.top5_agreement}


@dataclass(frozen=True)
class Metrics(Errors):
    """A setting's logits against float64, and against the other settings: llvm's in the same dtype
    and order (``vs_llvm``), eager's RMSE (llvm ``default`` in the same dtype: ``rmse_ratio``, and
    PyTorch's rule on it), llvm float32 ``default``'s (``rmse_ratio_fp32``), and the same target's
    ``default`` (``vs_default``, ``rmse_ratio_default``; None in ``default``). A ratio is None where
    undefined (no such setting, or 0 / 0)."""

    vs_llvm: Apart | None
    rmse_ratio: float | None
    rmse_ratio_fp32: float | None
    torch_multiplier: float
    within_torch_rule: bool | None
    vs_default: Apart | None
    rmse_ratio_default: float | None

    def to_json(self) -> dict:
        return {**super().to_json(), "vs_llvm": _json(self.vs_llvm), "rmse_ratio": self.rmse_ratio,
                "rmse_ratio_fp32": self.rmse_ratio_fp32, "torch_multiplier": self.torch_multiplier,
                "within_torch_rule": self.within_torch_rule, "vs_default": _json(self.vs_default),
                "rmse_ratio_default": self.rmse_ratio_default}


@dataclass(frozen=True)
class TwinMetrics(Errors):
    """The IEEE twin's logits (the same schedule with IEEE rounding) against float64: what is left
    of the error without qfloat's arithmetic, and how far qfloat moved the logits from them
    (``vs_target``)."""

    rmse_ratio: float | None
    vs_target: Apart
    rmse_ratio_default: float | None

    def to_json(self) -> dict:
        return {**super().to_json(), "rmse_ratio": self.rmse_ratio, "vs_target": self.vs_target.to_json(),
                "rmse_ratio_default": self.rmse_ratio_default}


@dataclass(frozen=True)
class Exactness:
    """An int8 setting's chain against the exact integer pipeline (numpy int64, the same calls on the
    same integers), call by call: exact or wrong, never within a bound. ``outputs``: the uint8
    elements compared (every call's output, every input); ``differing``: those unlike the
    pipeline's; ``logits_differing``: of them, the logits'. ``first_call``: the first call, in call
    order, whose output differs on some input (on every input its inputs were the pipeline's own, so
    its kernel is wrong there: the calls after it may differ because of it alone), and its
    ``first_call_differing`` elements over the inputs."""

    outputs: int
    differing: int
    logits_differing: int
    first_call: CallId | None
    first_call_differing: int

    @property
    def exact(self) -> bool:
        return self.differing == 0

    def to_json(self) -> dict:
        return {"exact": self.exact, "outputs": self.outputs, "differing": self.differing,
                "logits_differing": self.logits_differing, "first_call": _json(self.first_call),
                "first_call_differing": self.first_call_differing}

    def words(self) -> str:
        if self.exact:
            return "exact"
        return (f"NOT EXACT from call {self.first_call.index} ({self.first_call.workload}: "
                f"{self.first_call_differing:,} elements)")


@dataclass(frozen=True)
class Seconds:
    """Wall seconds per input this run took: on the target, by the IEEE twin's chain (a target with
    one), and of the attribution (``--attribute``); those that did not run are None (absent)."""

    target: float
    ieee_twin: float | None = None
    attribution: float | None = None

    def to_json(self) -> dict:
        found = {"target": self.target}
        if self.ieee_twin is not None:
            found["ieee_twin"] = self.ieee_twin
        if self.attribution is not None:
            found["attribution"] = self.attribution
        return found


@dataclass(frozen=True)
class CallId:
    """A call of the model: its index in call order and its fused PrimFunc's workload id."""

    index: int
    workload: str

    def to_json(self) -> dict:
        return {"index": self.index, "workload": self.workload}


@dataclass(frozen=True)
class CallShare:
    """One call's share of a setting's error (suite.model.accuracy: "only i on the target", "all but
    i"), its local error, and its rank (1: the largest ``only_rmse``)."""

    index: int
    workload: str
    only_rmse: float
    only_share: float | None
    without_share: float | None
    local_rmse: float
    rank: int

    def to_json(self) -> dict:
        return {"index": self.index, "workload": self.workload, "only_rmse": self.only_rmse,
                "only_share": self.only_share, "without_share": self.without_share, "local_rmse": self.local_rmse,
                "rank": self.rank}


@dataclass(frozen=True)
class OrderShare:
    """One call's share of the logits' difference between two orders, and its rank (1: the largest)."""

    index: int
    workload: str
    rmse: float
    share: float | None
    rank: int

    def to_json(self) -> dict:
        return {"index": self.index, "workload": self.workload, "rmse": self.rmse, "share": self.share,
                "rank": self.rank}


@dataclass(frozen=True)
class AgainstDefault:
    """The logits' difference between an order and ``default`` on the same target and dtype,
    attributed to the calls (largest first); the shares' sum against 1 is the interaction."""

    total_mse: float
    sum_share: float | None
    calls: tuple[OrderShare, ...]

    def to_json(self) -> dict:
        return {"total_mse": self.total_mse, "sum_share": self.sum_share, "calls": [c.to_json() for c in self.calls]}

    def lines(self, dtype: str, target: str, order: str) -> list[str]:
        found = [(f"\n{order} against default ({dtype} {target}): logits' mean squared difference "
                  f"{self.total_mse:.3g}; the calls alone sum to {number(self.sum_share)} of it")]
        moved = [c for c in self.calls if c.rmse > 0]
        if not moved:
            return [*found, "no call's kernel gives other outputs in the two orders"]
        top = moved[0]
        found.append(f"most of it: call {top.index} ({top.workload}), share {number(top.share)}")
        found.append(_table([[c.rank, c.index, c.workload, number(c.share), number(c.rmse)]
                             for c in moved[:SHOWN_CALLS]], ["rank", "call", "workload", "share", "RMSE apart"]))
        if len(self.calls) > len(moved):
            found.append(f"({len(self.calls) - len(moved)} calls give the same outputs in both orders)")
        return found


@dataclass(frozen=True)
class Attribution:
    """A setting's logits error attributed to its calls (largest first): the logits' mean squared
    error, the calls' "only" shares summed and the interaction (1 less that sum), the share the
    local errors added up reproduce; in an order other than ``default`` whose ``default`` was
    attributed too, the orders' difference attributed (``vs_default``)."""

    total_mse: float
    sum_only_share: float | None
    interaction_share: float | None
    injected_share: float | None
    calls: tuple[CallShare, ...]
    vs_default: AgainstDefault | None = None

    def to_json(self) -> dict:
        found = {"total_mse": self.total_mse, "sum_only_share": self.sum_only_share,
                 "interaction_share": self.interaction_share, "injected_share": self.injected_share,
                 "calls": [c.to_json() for c in self.calls]}
        if self.vs_default is not None:
            found["vs_default"] = self.vs_default.to_json()
        return found

    def lines(self, dtype: str, target: str, order: str) -> list[str]:
        found = [(f"\nattribution {dtype} {target} {order}: logits MSE {self.total_mse:.3g}; the calls alone "
                  f"sum to {number(self.sum_only_share)} of it (interaction {number(self.interaction_share)}); "
                  f"local errors added up reproduce {number(self.injected_share)} of it"),
                 _table([[c.rank, c.index, c.workload, number(c.only_share), number(c.without_share),
                          number(c.only_rmse), number(c.local_rmse)] for c in self.calls[:SHOWN_CALLS]],
                        ["rank", "call", "workload", "only share", "without share", "only RMSE", "local RMSE"])]
        if len(self.calls) > SHOWN_CALLS:
            found.append(f"({len(self.calls) - SHOWN_CALLS} more calls in --json)")
        if self.vs_default is not None:
            found += self.vs_default.lines(dtype, target, order)
        return found


@dataclass(frozen=True)
class SettingResult:
    """One setting's result. Measured: its metrics, seconds, what an emulated target executed per
    input (``per_input``: the emulator's counts by name, and its emulated seconds), the IEEE twin's
    metrics (a target with one), the attribution (``--attribute``). Not measured or skipped: the
    reason. ``default_calls``: in ``tuned``, the calls that ran ``default`` (no tuning record)."""

    dtype: str
    target: str
    order: str
    requested: bool  #: False: a baseline the requested settings' metrics need
    status: Status
    reason: str | None = None
    default_calls: tuple[CallId, ...] | None = None
    metrics: Metrics | None = None
    seconds_per_input: Seconds | None = None
    per_input: dict[str, float] | None = None
    ieee_twin: TwinMetrics | None = None
    attribution: Attribution | None = None
    exactness: Exactness | None = None  #: int8: against the exact integer pipeline

    @classmethod
    def skipped(cls, dtype: str, target: str, order: str, reason: str) -> SettingResult:
        return cls(dtype, target, order, True, Status.SKIPPED, reason)

    @property
    def ids(self) -> tuple[str, str, str]:
        return self.dtype, self.target, self.order

    @property
    def measured(self) -> bool:
        return self.status is Status.MEASURED

    @property
    def packets_per_input(self) -> float | None:
        """Packets the calls executed per input (an emulated target that counts them), else None."""
        return (self.per_input or {}).get("packets")

    @property
    def emulated_s_per_input(self) -> float | None:
        """Emulated seconds per input (an emulated target), else None."""
        return (self.per_input or {}).get("emulated_s")

    def to_json(self) -> dict:
        found = {"dtype": self.dtype, "target": self.target, "order": self.order, "requested": self.requested}
        if self.default_calls is not None:
            found["default_calls"] = [c.to_json() for c in self.default_calls]
        found["status"] = self.status.value
        if not self.measured:
            found["reason"] = self.reason
            return found
        found.update({"metrics": self.metrics.to_json(), "seconds_per_input": self.seconds_per_input.to_json()})
        if self.per_input is not None:
            found["per_input"] = dict(self.per_input)
        if self.ieee_twin is not None:
            found["ieee_twin"] = self.ieee_twin.to_json()
        if self.attribution is not None:
            found["attribution"] = self.attribution.to_json()
        if self.exactness is not None:
            found["exactness"] = self.exactness.to_json()
        return found

    def rows(self) -> list[list[str]]:
        """The setting's rows of the settings' table (:data:`TABLE_HEADERS`): its own, and the IEEE twin's."""
        ids = [self.dtype, self.target, self.order + ("" if self.requested else " (baseline)")]
        if not self.measured:
            return [ids + ["not measured: " + self.reason] + [""] * (len(TABLE_HEADERS) - 4)]
        m, packets = self.metrics, self.packets_per_input
        untuned = len(self.default_calls or ())
        found = [ids + [number(m.max_abs_error), number(m.mean_abs_error), number(m.rmse), number(m.rmse_ratio),
                        number(m.rmse_ratio_fp32), number(m.rmse_ratio_default),
                        number(None if m.vs_llvm is None else m.vs_llvm.max_abs),
                        f"{m.top1_agreement:.2f}", f"{m.top5_agreement:.2f}",
                        self.seconds_words(), "-" if packets is None else f"{packets:,.0f}",
                        f"{untuned} calls default" if untuned else "",
                        "-" if self.exactness is None else self.exactness.words()]]
        if (t := self.ieee_twin) is not None:
            found.append([self.dtype, self.target, f"{self.order} (IEEE twin)", number(t.max_abs_error),
                          number(t.mean_abs_error), number(t.rmse), number(t.rmse_ratio), "",
                          number(t.rmse_ratio_default),
                          "", f"{t.top1_agreement:.2f}", f"{t.top5_agreement:.2f}",
                          f"{self.seconds_per_input.ieee_twin:.2f}", "", "", ""])
        return found

    def seconds_words(self) -> str:
        """This run's seconds per input on the target, and on an emulated target the emulated seconds
        of the kept runs (an output reused from the cache takes no emulation now)."""
        emulated = self.emulated_s_per_input
        return f"{self.seconds_per_input.target:.2f}" + (f" ({emulated:.0f} emulated)" if emulated else "")

    def attribution_lines(self) -> list[str]:
        return [] if self.attribution is None else self.attribution.lines(self.dtype, self.target, self.order)


@dataclass(frozen=True)
class CacheReuse:
    """How much of each measured setting (``dtype target order``) came from the cache: every input,
    and its attribution where asked for (``reused``), some (``resumed``), none (``run``)."""

    reused: tuple[str, ...]
    resumed: tuple[str, ...]
    run: tuple[str, ...]

    def to_json(self) -> dict:
        return {"reused": list(self.reused), "resumed": list(self.resumed), "run": list(self.run)}

    def line(self) -> str:
        return (f"cache: {len(self.reused)} setting(s) reused whole, {len(self.resumed)} resumed, {len(self.run)} run"
                + (f" (reused: {', '.join(self.reused)})" if self.reused else ""))


@dataclass(frozen=True)
class ModelResult:
    """A model's settings over ``inputs`` synthetic inputs (what the data is: ``data``), its calls,
    the float64 chain's seconds per input in each dtype, and what came from the cache."""

    model: str
    inputs: int
    data: str
    calls: tuple[Call, ...]
    float64_s_per_input: dict[str, float]
    results: tuple[SettingResult, ...]
    cache: CacheReuse

    def result(self, dtype: str, target: str, order: str) -> SettingResult | None:
        """The setting ``dtype target order``'s result, or None where it is not among them."""
        return next((r for r in self.results if r.ids == (dtype, target, order)), None)

    @property
    def requested_measured(self) -> bool:
        """Whether every requested setting was measured."""
        return all(r.measured for r in self.results if r.requested)

    @property
    def integer_exact(self) -> bool:
        """Whether every measured int8 setting's chain equals the exact integer pipeline."""
        return all(r.exactness.exact for r in self.results if r.measured and r.exactness is not None)

    def to_json(self) -> dict:
        return {"model": self.model, "inputs": self.inputs, "data": self.data,
                "calls": [c.summary() for c in self.calls], "float64_s_per_input": dict(self.float64_s_per_input),
                "results": [r.to_json() for r in self.results], "cache": self.cache.to_json()}

    def lines(self) -> list[str]:
        """What `tvm-suite model` prints: the settings' table, what came from the cache, and each
        setting's attribution."""
        found = [f"model {self.model}: {len(self.calls)} calls, {self.inputs} inputs", f"data  {self.data}",
                 _table([row for r in self.results for row in r.rows()], TABLE_HEADERS), TABLE_NOTE,
                 self.cache.line()]
        for r in self.results:
            found += r.attribution_lines()
        return found
