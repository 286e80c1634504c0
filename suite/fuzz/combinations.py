"""What a fuzz campaign runs on: its options checked before any work and the combinations
(workload x dtype x target) they give (:func:`check`), each with its exact output
(:func:`expected_output`) and the unscheduled program's; the seconds a schedule may take
(:func:`timeout_of`); what a verdict depends on besides the schedule (:func:`judged_by`); and an
output a worker left, read as data (:func:`load_output`), for :mod:`suite.fuzz.campaign`."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from suite import cache, floats, sandbox, targets
from suite.core import quantized, reference, workloads
from suite.core.bounds import Expected
from suite.core.combo import select_workloads
from suite.errors import UserError
from suite.fuzz import EMULATED_TIMEOUT_S, NATIVE_TIMEOUT_S
from suite.fuzz.directory import LOCK, OWN_MARK, check_own_files, old_lock_dir
from suite.targets.base import Mode, NotTunable
from suite.triage import verdict

#: The least time the unscheduled function (the before program) gets to build and run.
BEFORE_TIMEOUT_S = 300.0

@dataclass
class Options:
    workloads: list[str]
    dtypes: list[str]
    targets: list[str]
    traces: int
    seed: int
    minutes: float
    out: Path
    plant: int = 0
    timeout_s: float | None = None  #: None: NATIVE_TIMEOUT_S or EMULATED_TIMEOUT_S, by target
    minimise_tries: int = 60  #: builds the trace's delta debugging may make, per finding
    #: small programs the finding's workload is shrunk to and judged (two builds each), per finding
    shrink_tries: int = 20
    cluster: str | None = None  #: a Dask scheduler's address: schedules built and run on its workers
    thresholds: Path | None = None  #: the thresholds file ([bound], [divergence]); None: the defaults
    jobs: int | None = None  #: worker children here; None: one per core


@dataclass
class Combination:
    workload: object
    dtype: str
    target: object
    expected: Expected = None
    before: np.ndarray | None = None
    before_twin: np.ndarray | None = None

    @property
    def label(self) -> str:
        return f"{self.workload.id} {self.dtype} {self.target.name}"


def timeout_of(options: Options, target) -> float:
    """The seconds one schedule of ``target`` may take to build and run (--trace-timeout)."""
    if options.timeout_s is not None:
        return options.timeout_s
    return EMULATED_TIMEOUT_S if target.mode is Mode.EMULATED else NATIVE_TIMEOUT_S


def check(options: Options) -> list[Combination]:
    """Every option checked before any work (one-line UserErrors); the combinations."""
    out = options.out
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory: give a directory for the campaign")
    cache.ensure_dir(out, "--out")  # made and writable (a link to nothing, a read-only disk: one line)
    # the lock is the campaign's (a campaign in use is said by the lock, naming its holder), and so
    # is the runs/ that held it before (runs/.lock alone)
    theirs = sorted(p.name for p in out.iterdir() if p.name != LOCK and not old_lock_dir(p))
    if theirs and not (out / OWN_MARK).exists():
        raise UserError(f"--out {out} holds files a fuzz did not make ({', '.join(theirs[:3])}"
                        f"{', ...' if len(theirs) > 3 else ''}): give a new or empty directory, or a campaign's own")
    check_own_files(out)
    for dtype in options.dtypes:
        workloads.check_dtype(dtype, workloads.MEASURED_DTYPES)
    found_targets = []
    for name in options.targets:
        target = targets.get(name)
        for dtype in options.dtypes:  # first: a dtype the target never runs, on any machine
            if reason := target.dtype_unavailable(dtype):
                raise UserError(f"--targets {name}: {reason}")
        reason = target.mode.value if target.mode is Mode.COMPILE_ONLY else target.unavailable()
        if reason:
            raise UserError(f"--targets {name}: nothing runs its code here ({reason})")
        try:  # the schedules are sampled from the space MetaSchedule tunes this target in
            target.tuning_target()
        except NotTunable as err:
            raise UserError(f"--targets {name}: fuzz samples MetaSchedule's design space of a target, and {err}") \
                from None
        found_targets.append(target)
    ids = select_workloads(options.workloads)
    return [Combination(workloads.get(w), d, t) for t in found_targets for d in options.dtypes for w in ids]

def expected_output(combination: Combination) -> Expected:
    """The exact output: the float64 reference with its magnitude; in int8, the integer oracle's
    uint8 output, which a schedule's must equal (no magnitude: :func:`verdict.judge` judges it exactly)."""
    chain = combination.workload.chain
    inputs = workloads.make_inputs(combination.workload, combination.dtype)
    if combination.dtype in workloads.INTEGER_DTYPES:
        return Expected(quantized.evaluate(chain, inputs).output.astype(np.int64), None,
                        reference.accumulation_length(chain), "output", workloads.output_dtype(combination.dtype))
    return Expected(reference.evaluate(chain, inputs), reference.evaluate_magnitude(chain, inputs),
                    reference.accumulation_length(chain), "output", combination.dtype)

#: The worker's check that a schedule's output is a function of its inputs
#: (:func:`suite.triage.filled.undefined`), run on native targets: lines judged without it are judged again.
UNDEFINED_CHECK = "output filled with two patterns"


def judged_by(thresholds, target=None) -> str:
    """What a verdict depends on besides the schedule: the rounding bound's and the divergence
    rules' parameters, and on a native target the check for UNDEFINED. A journal line judged by
    others is judged again, not reused."""
    native = target is not None and target.mode is Mode.NATIVE
    what = (thresholds.bound, thresholds.divergence, ("element factor", verdict.ELEMENT_FACTOR)) + (
        (UNDEFINED_CHECK,) if native else ())
    return hashlib.sha256(repr(what).encode()).hexdigest()[:16]


def load_output(path: Path) -> np.ndarray:
    """An output a worker (confined) left in its request's directory: read as data, never through a
    link, never a pickle. One that is none is refused in one line: the worker is the suite's own, and
    what it left is no verdict."""
    try:
        # np.save keeps a bfloat16 output as raw two-byte records: viewed as bfloat16 again
        return floats.as_saved(np.load(io.BytesIO(sandbox.read_back(path)), allow_pickle=False), floats.BFLOAT16)
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: not an array the campaign's worker writes ({err}); no verdict on it") from None
