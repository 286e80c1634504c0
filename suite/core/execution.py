"""One path for a kernel: a PrimFunc built for a target, loaded on its inputs, run, and run again
by its IEEE twin where the target has one.

Measurement (:mod:`suite.core.measurement`), tuning's check of a replayed candidate
(:mod:`suite.core.tuning`) and triage (:mod:`suite.triage.pipeline`) all take it, so a kernel is built
and run one way whoever asks. Two stages, each taking the result of the one before, each failure a
field of its result (as MetaSchedule's builder and runner return BuilderResult and RunnerResult):

- :func:`build`: the function made ready by the target (:meth:`Target.prepare`) and compiled to a
  file -> :class:`Built`: the file, compile seconds, code metrics and the code identity;
- :func:`run`: the build loaded on its arguments and run once -> :class:`Ran`: every output, the
  IEEE twin's outputs, emulated seconds and execution counts.

A missing tool or TVM is the user's to fix: raised (UserError, TVMUnavailable), never a failure of
the kernel. What a target cannot do here (Skipped) is a skipped stage, anything else a failed one.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from suite.compat import release
from suite.core.record import Status
from suite.errors import Skipped, UserError, first_line
from suite.targets import elf
from suite.targets.base import Mode, Output, Target


class Stage(enum.Enum):
    BUILD = "build"
    RUN = "run"
    TWIN = "IEEE twin run"


@dataclass(frozen=True)
class Failure:
    """Why a stage ended without its result: ``status`` SKIPPED (not applicable here, ``message``
    the reason) or FAILED (``message`` the first line of what TVM or the target raised)."""

    status: Status
    stage: Stage
    message: str
    #: What was raised, where something was (its kind tells TVM's internal errors from the rest).
    cause: BaseException | None = field(default=None, compare=False, repr=False)

    def words(self) -> str:
        """The failure as a record keeps it: a skip's reason, or ``<stage> failed: <message>``."""
        return self.message if self.status is Status.SKIPPED else f"{self.stage.value} failed: {self.message}"


@dataclass(frozen=True)
class Built:
    """What :func:`build` made: the kernel file, or the failure that left none."""

    target: Target
    path: Path
    compile_s: float | None = None
    codegen: dict | None = None  #: code size and instruction counts (Hexagon)
    code: str | None = None  #: digest of what the kernel executes (suite.targets.elf); None: unknown
    failure: Failure | None = None


@dataclass(frozen=True)
class Ran:
    """What :func:`run` got from a build: its outputs in parameter order (and its IEEE twin's, on
    targets with one), what the run executed, or the failure that left no output."""

    built: Built
    outputs: list[np.ndarray] | None = None
    twins: list[np.ndarray] | None = None
    emulated_s: float | None = None  #: one emulated run's seconds (never latency)
    counts: dict | None = None  #: what the call executed (QEMU's counters), on targets that count it
    failure: Failure | None = None

    @property
    def output(self) -> np.ndarray | None:
        """The one output of a kernel of one output; None when the run failed."""
        if self.outputs is None:
            return None
        (only,) = self.outputs
        return only

    @property
    def twin(self) -> np.ndarray | None:
        return self.twins[0] if self.twins else None


def failure_of(stage: Stage, err: Exception) -> Failure:
    """A Skipped is a skipped stage, with its reason; anything else a failed one."""
    if isinstance(err, Skipped):
        return Failure(Status.SKIPPED, stage, str(err))
    return Failure(Status.FAILED, stage, first_line(err), err)


def build(target: Target, func, path: Path, order: str = "default") -> Built:
    """``func`` made ready by ``target`` for loop ``order`` and compiled to ``path``."""
    started = time.perf_counter()
    try:
        target.build(target.prepare(func, order), path)
    except (UserError, release.TVMUnavailable):
        raise
    except Exception as err:
        return Built(target, path, failure=failure_of(Stage.BUILD, err))
    compile_s = time.perf_counter() - started
    try:
        code = elf.code_digest(path)
    except elf.NotELF:
        code = None  # no identity: every comparison of its code says "unknown", never "same"
    return Built(target, path, compile_s, target.codegen_metrics(path), code)


def run(built: Built, arguments: list, timed: bool = False, twin: bool = True) -> Ran:
    """Run a build once on ``arguments``, the function's parameters in order (input arrays, and an
    :class:`Output` for each output; :meth:`Target.load_outputs`). ``timed``: an emulated kernel is
    also timed once (emulated seconds: never latency). On targets with an IEEE twin (unless
    ``twin`` is False: a check that reads the output alone), the twin runs the same build; a build without a rewritten instruction never calls the model, so its twin's
    output is its own (the emulation is not repeated; tests/test_ieee_twin.py runs both and
    compares)."""
    target, path = built.target, built.path
    try:
        kernel = target.load_outputs(path, arguments)
        outputs = [np.asarray(o) for o in kernel.outputs()]
        emulated_s = float(kernel.time(repeat=1)[0]) if timed and target.mode is Mode.EMULATED else None
        counts = dict(kernel.counts) if kernel.counts else None
    except (UserError, release.TVMUnavailable):
        raise
    except Exception as err:
        return Ran(built, failure=failure_of(Stage.RUN, err))
    twins = None
    if twin and target.ieee_twin:
        try:
            twins = outputs if (built.codegen or {}).get("rewritten") == 0 else _twin_outputs(built, arguments)
        except (UserError, release.TVMUnavailable):
            raise
        except Exception as err:
            return Ran(built, failure=failure_of(Stage.TWIN, err))
    return Ran(built, outputs, twins, emulated_s, counts)


def run_twin(built: Built, arguments: list) -> Ran:
    """The IEEE twin alone on ``arguments`` (a target with one): ``twins`` holds its outputs. A build
    without a rewritten instruction never calls the model: its twin's output is its own run's."""
    if not built.target.ieee_twin:
        return Ran(built, failure=Failure(Status.SKIPPED, Stage.TWIN, f"{built.target.name} has no IEEE twin"))
    if (built.codegen or {}).get("rewritten") == 0:
        ran = run(built, arguments, twin=False)
        return ran if ran.failure is not None else Ran(built, ran.outputs, ran.outputs, ran.emulated_s, ran.counts)
    try:
        return Ran(built, twins=_twin_outputs(built, arguments))
    except (UserError, release.TVMUnavailable):
        raise
    except Exception as err:
        return Ran(built, failure=failure_of(Stage.TWIN, err))


def _twin_outputs(built: Built, arguments: list) -> list[np.ndarray]:
    """The IEEE twin's output: its kernels take one output, their last parameter."""
    *inputs, output = arguments
    if not isinstance(output, Output) or any(isinstance(a, Output) for a in inputs):
        raise Skipped(f"{built.target.name}'s IEEE twin runs kernels whose one output is their last parameter")
    return [np.asarray(built.target.load_ieee_twin(built.path, inputs, output.shape, output.dtype).output())]
