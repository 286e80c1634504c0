"""What every target is and can do: the one protocol the rest of the suite relies on.

A target builds a scheduled PrimFunc to a file and loads it as a :class:`Kernel`. Its declared
capabilities say how its results are to be read, so no caller probes attributes:

- ``mode``: :attr:`Mode.NATIVE` (runs here: latency), :attr:`Mode.EMULATED` (runs under an
  emulator: outputs and emulated seconds, never latency) or :attr:`Mode.COMPILE_ONLY` (code
  metrics only);
- ``orders``: the loop orders it runs (None: all), with ``orders_note`` saying why not the others;
- ``dtypes``: the workload dtypes it runs, with ``dtypes_note`` saying why not the others (a skip,
  never a pass: :meth:`Target.dtype_unavailable`);
- ``records_from``: whose tuning records its ``tuned`` order replays, in order of preference (its
  own by default; a target declares its tuple): per workload, the first of them that has a record;
- ``tuning_options``/``tuning_measure``: how MetaSchedule builds and measures candidates for it,
  and what the measure is (latency, or packets executed under the emulator);
- ``exclusive``: measured one combination at a time (a GPU: timings must not overlap);
- ``peer_device``: the PyTorch device of its latency peer, or None;
- ``codegen``: whether its builds have code metrics (size, instruction counts);
- ``ieee_twin``: whether its kernels also run with IEEE arithmetic in place of its own
  (:meth:`Target.load_ieee_twin`; the executed qfloat targets: :mod:`suite.targets.ieee_twin`),
  which tells a divergence caused by the arithmetic from one caused by the schedule.

A benchmark's kernel has one output, its last parameter (:meth:`Target.load`). A program of several
outputs, or of one elsewhere than last (triage: a bug report's PrimFunc), is loaded with its
arguments in parameter order (:meth:`Target.load_outputs`, :class:`Output`), where the target runs
such kernels (:meth:`Target.several_outputs_unavailable` says why not); :meth:`Kernel.outputs`
returns them all.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from suite import cache
from suite.compat import build as compat_build
from suite.compat import metaschedule, runtime
from suite.errors import OrderNotApplicable, Skipped, UserError


class Mode(enum.Enum):
    NATIVE = "native"
    EMULATED = "emulated"
    COMPILE_ONLY = "compile-only"


class NotTunable(UserError):
    """MetaSchedule cannot tune for this target here (one-line message)."""


class SeveralOutputsUnavailable(Skipped):
    """A target whose kernels take one output, their last parameter, asked to run others."""


@dataclass(frozen=True)
class Output:
    """An output parameter of a kernel (:meth:`Target.load_outputs`), which the kernel allocates."""

    shape: tuple[int, ...]
    dtype: str


class Kernel(abc.ABC):
    """A compiled workload bound to its inputs, ready to run and time."""

    #: What the last call executed, exactly (QEMU's execution counters: packets, instructions,
    #: hvx_instructions), on the targets that count it (emulated Hexagon); None elsewhere.
    counts: dict | None = None

    @abc.abstractmethod
    def run(self) -> None: ...

    @abc.abstractmethod
    def output(self) -> np.ndarray:
        """Run once and return the output."""

    def outputs(self) -> list[np.ndarray]:
        """Run once and return every output, in parameter order (one, for a kernel of one output)."""
        return [self.output()]

    @abc.abstractmethod
    def time(self, repeat: int = 5) -> list[float]:
        """Seconds per run, one value per repeat (emulated seconds for an emulated kernel)."""


class ModuleKernel(Kernel):
    """A TVM runtime module's function on a device (llvm, cuda)."""

    def __init__(self, module, device, inputs, output_shape, dtype, entry="main", synchronize=False):
        self.device = device
        self.synchronize = synchronize  # GPU launches return at once: run() waits for the kernel
        self.function = module[entry]
        self._module, self._entry = module, entry
        self.args = [runtime.to_device(a, device) for a in inputs]
        self.result = runtime.empty(tuple(output_shape), dtype, device)
        self.args.append(self.result)

    def run(self) -> None:
        self.function(*self.args)
        if self.synchronize:
            self.device.sync()

    def output(self) -> np.ndarray:
        self.run()
        return self.result.numpy()

    def time(self, repeat: int = 5, min_repeat_ms: int = 20, arguments_of: ModuleKernel | None = None) -> list[float]:
        """TVM's own time_evaluator (CUDA events on a GPU). ``arguments_of``: another kernel of the
        same function whose arrays this one runs on. Two kernels timed against each other must
        share their arrays: the same code on arrays of its own is measurably slower or faster (an
        llvm fp32 matmul on two sets of identical arrays: 0.84x and 0.94x, every sample apart)."""
        evaluator = self._module.time_evaluator(
            self._entry, self.device, number=1, repeat=repeat, min_repeat_ms=min_repeat_ms
        )
        return [float(t) for t in evaluator(*(arguments_of or self).args).results]


class ModuleOutputsKernel(ModuleKernel):
    """A TVM runtime module's function bound to arguments in parameter order, any of them outputs
    (:meth:`Target.load_outputs`): made from the kernel of its first output, whose arrays it
    takes (the inputs on the device, the first output), the other outputs allocated beside."""

    def __init__(self, first: ModuleKernel, arguments):
        self.device, self.synchronize, self.function = first.device, first.synchronize, first.function
        self._module, self._entry = first._module, first._entry
        inputs = iter(first.args[:-1])
        self.args, self.results = [], []
        for argument in arguments:
            if isinstance(argument, Output):
                array = first.result if not self.results else runtime.empty(tuple(argument.shape), argument.dtype,
                                                                          self.device)
                self.results.append(array)
                self.args.append(array)
            else:
                self.args.append(next(inputs))
        self.result = self.results[0]

    def output(self) -> np.ndarray:
        """The only output; a kernel of several has :meth:`outputs`."""
        if len(self.results) != 1:
            raise ValueError(f"a kernel of {len(self.results)} outputs: call outputs()")
        return super().output()

    def outputs(self) -> list[np.ndarray]:
        self.run()
        return [result.numpy() for result in self.results]


class Target(abc.ABC):
    name: str
    mode: Mode = Mode.NATIVE
    orders: tuple[str, ...] | None = None
    orders_note: str = ""
    dtypes: tuple[str, ...] = ("float32", "float16")
    dtypes_note: str = "int8 and bfloat16 are measured on llvm (int8 also on hexagon-v68-qf and hexagon-v73-qf), not here yet"
    #: What MetaSchedule's measure of a candidate is when tuning for this target.
    tuning_measure: str = "latency"
    exclusive: bool = False
    peer_device: str | None = None
    codegen: bool = False
    ieee_twin: bool = False

    #: The file a build writes (beside it, a target may write more: assembly, linked ELF).
    KERNEL_FILE = "kernel.so"

    @property
    def records_from(self) -> tuple[str, ...]:
        """The targets whose committed tuning records the ``tuned`` order replays, in order of
        preference (see :func:`suite.core.tuning_records.records_target` for the choice per workload): its
        own here; a target that replays others' declares its tuple (``records_from = (...)``)."""
        return (self.name,)

    @abc.abstractmethod
    def identity(self) -> dict:
        """What keys this target's builds in the cache. Cheap: no TVM import, no tool run
        (asv's benchmark processes look records up by it)."""

    @abc.abstractmethod
    def tvm_target(self):
        """The TVM Target that builds for it."""

    def unavailable(self) -> str | None:
        """Why this target cannot run on this machine (tools missing, no GPU), or None."""
        return None

    def tuning_target(self):
        """The TVM Target MetaSchedule tunes for."""
        return self.tvm_target()

    def tuning_options(self, inputs=None, output_shape=None, dtype=None, check=None) -> dict:
        """The arguments of ``tune_tir`` that make and measure candidates for this target (builder,
        runner, design space), given the workload's ``inputs``, output and a ``check(output) ->
        problem | None`` for runners that see the output. Default: MetaSchedule's local runner on
        this machine, and the rules of the target's own kind; with a ``check`` and the inputs, the
        runner first runs each candidate on those inputs and refuses it (a runner error) when the
        check finds its output wrong (:class:`suite.core.output_check.OutputCheck`)."""
        options = {"builder": metaschedule.local_builder()}
        if check is not None and inputs is not None:
            options["runner"] = metaschedule.checking_runner(inputs, output_shape, dtype, check)
        return options

    def dtype_unavailable(self, dtype: str) -> str | None:
        """Why this target does not run workloads in ``dtype``, or None."""
        return None if dtype in self.dtypes else f"{self.name} does not run {dtype}: {self.dtypes_note}"

    def check_order(self, order: str) -> None:
        if self.orders is not None and order not in self.orders:
            raise OrderNotApplicable(f"{order} is not run on {self.name}: {self.orders_note}")

    def prepare(self, func, order: str):
        """The target's own scheduling of ``func`` in loop ``order`` (e.g. GPU thread binding)."""
        self.check_order(order)
        return func

    def order_as_written(self, func) -> str:
        """The loop order in which :meth:`prepare` takes a function as a bug report wrote it,
        scheduled or not (triage): ``default`` here; a GPU target schedules an unbound function
        with its default rules, and takes one already bound to threads as it is (``tuned``)."""
        return "default"

    def build(self, func, path: Path) -> None:
        """Compile ``func`` to a shared library at ``path``."""
        module = compat_build.build(func, self.tvm_target())
        cache.write_file(path, module.export_library)

    @abc.abstractmethod
    def load(self, path: Path, inputs, output_shape, dtype) -> Kernel: ...

    def several_outputs_unavailable(self) -> str | None:
        """Why this target runs only kernels whose one output is their last parameter (the
        benchmarks' kernels), or None where :meth:`load_outputs` runs any. A native target's kernel
        is a TVM runtime module's function (llvm, cuda), which takes any arguments; an emulated
        one runs under the suite's harness, which :meth:`load` gives the inputs, then one output."""
        if self.mode is Mode.NATIVE:
            return None
        if self.mode is Mode.COMPILE_ONLY:
            return f"{self.name} is compile-only: it runs no kernel"
        return (f"{self.name} runs kernels whose one output is their last parameter (its emulator harness is "
                "given the inputs, then one output); programs of several outputs run on llvm and cuda")

    def load_outputs(self, path: Path, arguments) -> Kernel:
        """The build at ``path`` bound to ``arguments``, the function's parameters in order: each an
        input array or an :class:`Output`, which the kernel allocates and :meth:`Kernel.outputs`
        returns, in order. One output, the last parameter: :meth:`load`'s kernel, as the benchmarks
        load it. Otherwise the kernel :meth:`load` makes for the first output, bound to every
        argument (:class:`ModuleOutputsKernel`); SeveralOutputsUnavailable (a Skipped, with the
        reason) where the target's kernels cannot take them."""
        outputs = [a for a in arguments if isinstance(a, Output)]
        if not outputs:
            raise ValueError("load_outputs: no Output among the arguments")
        if len(outputs) > 1 or not isinstance(arguments[-1], Output):
            if reason := self.several_outputs_unavailable():
                raise SeveralOutputsUnavailable(reason)
        inputs = [a for a in arguments if not isinstance(a, Output)]
        kernel = self.load(path, inputs, outputs[0].shape, outputs[0].dtype)
        if len(outputs) == 1 and isinstance(arguments[-1], Output):
            return kernel
        if not isinstance(kernel, ModuleKernel):
            raise SeveralOutputsUnavailable(f"{self.name}'s kernels take one output, their last parameter")
        return ModuleOutputsKernel(kernel, arguments)

    def codegen_metrics(self, path: Path) -> dict | None:
        """Code size and instruction counts of a build, where the target has them."""
        return None

    def packet_floor(self, multiply_accumulates: int, dtype: str) -> int | None:
        """The fewest packets (cycles at best) this target's hardware allows for that many
        multiply-accumulates in ``dtype``, where it counts packets (Hexagon); else None."""
        return None

    def load_ieee_twin(self, path: Path, inputs, output_shape, dtype) -> Kernel:
        """The same build, its floating point rounded as IEEE 754 does (targets with ``ieee_twin``)."""
        raise NotImplementedError(f"{self.name} has no IEEE twin")
