"""The record of one measured combination, and how it becomes an asv outcome.

A record is stored as ``record.json`` in its cache entry beside the files it vouches for
(``parts``: name -> sha256), so that record, output and kernel are valid together or not at all.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields

from suite.targets import elf
from suite.targets.base import Mode

#: The metric names (suite.tracked) of the codegen counts a record keeps under shorter names of
#: their own (suite.targets.hexagon.asm_metrics): records keep those, as they have been written.
_CODEGEN_METRICS = {"qfloat_total": "qfloat_instructions", "hvx_fp_vector": "hvx_fp_vector_instructions",
                    "scalar_fp": "scalar_fp_instructions"}


class Status(str, enum.Enum):
    OK = "ok"
    SKIPPED = "skipped"  #: not applicable here (order, tool, GPU): asv NaN, never a pass
    FAILED = "failed"  #: TVM could not build or run it: news about that TVM build, asv null


class Kind(str, enum.Enum):
    """What an ok record measured; follows from the target's mode."""

    LATENCY = "latency"  #: ran natively: accuracy, and latency timed on every run (suite.core.timing)
    EMULATED = "emulated"  #: ran under an emulator: accuracy and emulated seconds, never latency
    COMPILE_ONLY = "compile-only"  #: built only: code metrics


@dataclass
class Record:
    workload: str
    dtype: str
    target: str
    order: str
    status: Status
    reason: str = ""
    kind: Kind | None = None
    tvm_version: str | None = None
    flops: int | None = None
    compile_s: float | None = None
    codegen: dict | None = None  #: code size and instruction counts (Hexagon)
    #: the code identity: its scheme and the sha256 of what the kernel executes and calls
    #: (suite.targets.elf.code_digest); two commits whose kernels have the same one ran the same code
    code: str | None = None
    accumulation_length: int | None = None
    #: accuracy against float64 (suite.core.metrics.accuracy_metrics); int8: exactness against the
    #: integer oracle (suite.core.quantized.metrics), no ULP
    metrics: dict | None = None
    #: accuracy of the IEEE twin's output (the same program, HVX floating point rounded as IEEE
    #: does: suite.targets.ieee_twin), where the target has one
    twin_metrics: dict | None = None
    emulated_s: float | None = None  #: one emulated run's seconds (never latency)
    #: what the emulated call executed, exactly (QEMU's counters: packets, instructions,
    #: hvx_instructions; on the qfloat targets those of the program TVM emitted), and for conv2d and
    #: dense the fewest packets HVX allows (packet_floor, suite.targets.hexagon.packet_floor)
    counts: dict | None = None
    measured_on: str | None = None  #: the cluster worker (host) whose seconds compile_s and emulated_s are; None: here
    tuned_from: str | None = None  #: order tuned: the target whose tuning record was replayed
    parts: dict = field(default_factory=dict)  #: file name in the cache entry -> sha256

    def __post_init__(self):
        self.status = Status(self.status)
        self.kind = Kind(self.kind) if self.kind is not None else None

    @property
    def ids(self) -> tuple[str, str, str, str]:
        return self.workload, self.dtype, self.target, self.order

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def has_output(self) -> bool:
        return self.ok and self.kind in (Kind.LATENCY, Kind.EMULATED)

    def values(self) -> dict:
        """Every number of the record, flat, each under its metric's name: what the benchmarks
        track (see suite.tracked)."""
        found = {"compile_seconds": self.compile_s, "emulated_seconds": self.emulated_s,
                 "accumulation_length": self.accumulation_length}
        found.update(self.metrics or {})
        found.update({f"twin_{k}": v for k, v in (self.twin_metrics or {}).items()})
        found.update({_CODEGEN_METRICS.get(k, k): v for k, v in (self.codegen or {}).items()})
        if self.codegen is not None:
            found["compile_success"] = 1.0
        counts = self.counts or {}
        found.update({k: v for k, v in counts.items() if k != "packet_floor"})
        if counts.get("packet_floor") and counts.get("packets"):
            found["hvx_efficiency"] = counts["packet_floor"] / counts["packets"]
        return {k: v for k, v in found.items() if v is not None}

    def to_json(self) -> dict:
        data = asdict(self)
        data["status"] = self.status.value
        data["kind"] = self.kind.value if self.kind else None
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_json(cls, data) -> Record:
        """A record from its JSON form; ValueError when it is not one (a field of another type
        included: a damaged record is measured again, never read)."""
        if not isinstance(data, dict):
            raise ValueError("a record is a JSON object")
        known = {f.name for f in fields(cls)}
        for name, value in data.items():
            if name in known and value is not None and not _FIELD_TYPES[name](value):
                raise ValueError(f"record field {name!r} is not {_FIELD_TYPES[name].__doc__}: {value!r}")
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as err:
            raise ValueError(str(err)) from None


def _text(value) -> bool:
    """text"""
    return isinstance(value, str)


def _number(value) -> bool:
    """a number"""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers(value) -> bool:
    """an object of names and numbers (or texts, objects of numbers)"""
    return isinstance(value, dict) and all(isinstance(k, str) and (_number(v) or isinstance(v, str) or (
        isinstance(v, dict) and all(_number(x) for x in v.values()))) for k, v in value.items())


def _code(value) -> bool:
    """a code identity (suite.targets.elf.scheme_of)"""
    return isinstance(value, str) and elf.scheme_of(value) is not None


def _digests(value) -> bool:
    """an object of file names and sha256 digests"""
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) and len(v) == 64
                                           for k, v in value.items())


_FIELD_TYPES = {"workload": _text, "dtype": _text, "target": _text, "order": _text, "status": _text,
                "reason": _text, "kind": _text, "tvm_version": _text, "flops": _number, "compile_s": _number,
                "codegen": _numbers, "code": _code, "accumulation_length": _number, "metrics": _numbers,
                "twin_metrics": _numbers, "emulated_s": _number, "counts": _numbers, "measured_on": _text, "tuned_from": _text,
                "parts": _digests}


# ----------------------------------------------------------------------------- asv outcome


class Need(enum.Enum):
    """What a benchmark needs from a record besides status ok, declared once per need: which
    targets can give it (``can``: the benchmark grid leaves the others out, see
    :meth:`suite.core.combo.Grid.for_need`), whether a record has it (``has``) and, when not, the
    skip reason (``missing``)."""

    RECORD = ("record", lambda t: True, lambda r: True, "-")
    OUTPUT = ("output", lambda t: t.mode in (Mode.NATIVE, Mode.EMULATED), lambda r: r.has_output,
              "{target} is compile-only: no output to measure")
    LATENCY = ("latency", lambda t: t.mode is Mode.NATIVE, lambda r: r.kind is Kind.LATENCY,
               "{target} does not run natively: no latency (see bench_codegen)")
    EMULATED = ("emulated", lambda t: t.mode is Mode.EMULATED, lambda r: r.kind is Kind.EMULATED,
                "{target} is not an emulated target")
    COUNTS = ("counts", lambda t: t.mode is Mode.EMULATED and t.codegen, lambda r: r.counts is not None,
              "{target} counts no executed packets (not an emulated Hexagon target)")
    CODEGEN = ("codegen", lambda t: t.codegen, lambda r: r.codegen is not None,
               "{target} has no Hexagon compile metrics")
    IEEE_TWIN = ("ieee_twin", lambda t: t.ieee_twin, lambda r: r.twin_metrics is not None,
                 "{target} has no IEEE twin (it runs no HVX floating-point model)")

    def __new__(cls, value: str, can, has, missing: str):
        need = object.__new__(cls)
        need._value_ = value
        need.can = can  #: (Target) -> whether its records can have it
        need.has = has  #: (Record) -> whether this record has it
        need.missing = missing  #: the skip reason of a record without it ({target}: its name)
        return need


class CombinationFailed(RuntimeError):
    """Raised in an asv benchmark's setup for a failed combination: asv stores null (a failure)
    and keeps this message in its log."""


def outcome(record: Record, need: Need = Need.RECORD) -> Record:
    """The one rule from record to asv outcome: skipped -> NaN (NotImplementedError), failed ->
    null (CombinationFailed, with the reason), a record lacking what the benchmark needs -> NaN;
    otherwise the record, whose values the benchmark reports."""
    if record.status is Status.SKIPPED:
        raise NotImplementedError(f"skipped: {record.reason}")
    if record.status is Status.FAILED:
        raise CombinationFailed(f"{record.workload} {record.dtype} {record.target} {record.order} "
                                f"failed: {record.reason}")
    if not need.has(record):
        raise NotImplementedError(need.missing.format(target=record.target))
    return record
