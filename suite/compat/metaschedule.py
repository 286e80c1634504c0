"""MetaSchedule across TVM releases: builders, runners (one that checks each candidate's output, one
that measures by the suite's own function), records read, tuning and design spaces (dot-product
ones too), and a schedule sampled from a design space by seed."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from pathlib import Path

from suite import floats
from suite.compat.intrinsics import register_tvm_tensor_intrinsics
from suite.compat.relax import attr_to_python
from suite.compat.release import meta_schedule, schedule_namespace, tir, tvm
from suite.compat.runtime import empty, to_device


def tuning_build(mod, target, _params=None):
    """MetaSchedule's default build without importing ``s_tir.tensor_intrin`` first.

    That import parses every tensor intrinsic's TVMScript (about 40 s on 2 cores) in each
    builder process, which exceeds the builder's timeout; CPU schedules of these workloads
    use no tensor intrinsics.
    """
    from tvm.driver import build as tvm_build

    transform = importlib.import_module(schedule_namespace().__name__ + ".transform")
    mod = transform.RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def plain_build(mod, target, _params=None):
    """A candidate built as :func:`build` builds a scheduled PrimFunc (as a replayed trace is
    built): a weight layout rewrite MetaSchedule added stays in the function, and is timed."""
    builder = getattr(tir(), "build", None) or tvm().build
    return builder(mod, target=target)


def local_builder(timeout_s: float = 60.0, f_build=tuning_build, f_export=None):
    """MetaSchedule's LocalBuilder (a process per build); ``f_build`` and ``f_export`` (picklable:
    module-level functions or partials of them) build the candidate and turn the built module
    into the artifact the runner gets (by default MetaSchedule's shared library).

    Every search of the suite gets its builder here, before ``tune_tir`` makes its TuneContext, which
    imports every tensor intrinsic of TVM's: imported here the fast way (:func:`register_tvm_tensor_intrinsics`)."""
    ms = meta_schedule()
    register_tvm_tensor_intrinsics()
    return ms.builder.LocalBuilder(f_build=f_build, f_export=f_export, timeout_sec=timeout_s)


class _InputArguments:
    """MetaSchedule's ``f_alloc_argument`` that gives a candidate the workload's own inputs (saved
    in ``path``, a .npz of arrays in parameter order) and an output to fill; a candidate whose
    parameters are not those (a rewritten layout) gets MetaSchedule's random ones."""

    def __init__(self, path: str, shapes: list):
        self.path, self.shapes = path, shapes

    def __call__(self, device, args_info, alloc_repeat):
        info = [attr_to_python(a) for a in args_info]
        shapes = [(str(a[1]), [int(d) for d in a[2]]) for a in info]
        if shapes != self.shapes:
            local_runner = importlib.import_module(meta_schedule().__name__ + ".runner.local_runner")
            return local_runner.default_alloc_argument(device, args_info, alloc_repeat)
        with _np_load(self.path) as data:  # np.save keeps bfloat16 as raw bytes: viewed as its dtype again
            arrays = [floats.as_saved(data[f"arg{i}"], self.shapes[i][0]) for i in range(len(data.files))]
        made = []
        for _ in range(alloc_repeat):
            made.append([to_device(a, device) for a in arrays] + [empty(self.shapes[-1][1], self.shapes[-1][0], device)])
        return made


class _CheckedEvaluator:
    """MetaSchedule's ``f_run_evaluator`` that runs a candidate once on the workload's inputs
    and raises when ``check(output)`` finds it wrong (the candidate's failure), then times it as
    MetaSchedule's default evaluator does."""

    def __init__(self, check, shapes: list):
        self.check, self.shapes = check, shapes

    def __call__(self, rt_mod, device, evaluator_config, repeated_args):
        args = repeated_args[0]
        if [(str(a.dtype), [int(d) for d in a.shape]) for a in args] == self.shapes:
            rt_mod[rt_mod.entry_name](*args)
            device.sync()
            problem = self.check(args[-1].numpy())
            if problem:
                raise RuntimeError(f"refused: {problem}")
        runner_utils = importlib.import_module(meta_schedule().__name__ + ".runner.utils")
        return runner_utils.run_evaluator_common(rt_mod, device, evaluator_config, repeated_args)


def _np_load(path):
    import numpy

    return numpy.load(path, allow_pickle=False)


def checking_runner(inputs, output_shape, dtype: str, check, timeout_s: float = 60.0):
    """MetaSchedule's LocalRunner (a worker process, a timeout) whose candidates run on
    ``inputs`` first and are refused when ``check(output)`` (picklable, with a ``directory`` to
    keep the inputs in) returns a problem; the others are timed as usual."""
    import numpy

    path = str(Path(check.directory) / "inputs.npz")
    numpy.savez(path, **{f"arg{i}": numpy.ascontiguousarray(a) for i, a in enumerate(inputs)})
    shapes = [(str(a.dtype), [int(d) for d in a.shape]) for a in inputs] + [(dtype, [int(d) for d in output_shape])]
    ms = meta_schedule()
    return ms.runner.LocalRunner(timeout_sec=timeout_s, f_alloc_argument=_InputArguments(path, shapes),
                                 f_run_evaluator=_CheckedEvaluator(check, shapes))


def record_schedule(record):
    """The schedule of a MetaSchedule tuning record, its trace applied as ``compile_tir`` applies
    the best one (postprocessors kept)."""
    sch = schedule_namespace().Schedule(record.workload.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    return sch


def record_arguments(record) -> list:
    """[(dtype, shape), ...] of the parameters a tuning record's candidate was measured with."""
    return [(str(a[1]), [int(d) for d in a[2]]) for a in (attr_to_python(i.as_json()) for i in record.args_info)]


def tuning_space(kind: str):
    """MetaSchedule's design space with the schedule rules, postprocessors and mutators that TVM
    selects for targets of ``kind`` ("llvm", "cuda", "hexagon"), whatever the kind of the target
    tuned for (the suite's Hexagon target is an ``llvm`` one with ``mtriple=hexagon``)."""
    ms = meta_schedule()
    return ms.space_generator.PostOrderApply(sch_rules=kind, postprocs=kind, mutator_probs=kind)


def dot_product_space(intrinsic: str | None, kind: str = "llvm"):
    """The design space of targets of ``kind`` ("llvm" or "hexagon", :func:`tuning_space`) whose
    multi-level tiling first tries to tensorize a block with ``intrinsic`` (a registered tensor
    intrinsic: ``dot_16x4_avx512``, :func:`dot_product_intrinsic_name`'s for ``dot_16x4_vnni``, or
    Hexagon's ``dot_32x4_u8i8i32_vrmpy``), and whose postprocessors tensorize what it marked; None:
    the kind's space alone. TVM picks such a space from the target's features itself
    ("from-target"); naming it lets the caller choose from a feature set of its own and say what it
    chose. The kind's own tiling stays as the fallback (Hexagon's: ``MultiLevelTilingWideVector``)."""
    ms = meta_schedule()
    if intrinsic is None:
        return tuning_space(kind)
    rules, postprocs = ms.schedule_rule, ms.postproc
    reuse_write = rules.ReuseType(req="may", levels=[1, 2], scope="global")
    structure = "SRSRS" if kind == "hexagon" else "SSRSRS"  # each kind's own multi-level tiling's
    sch_rules = []
    for rule in rules.ScheduleRule.create(kind):
        if type(rule).__name__ in ("MultiLevelTiling", "MultiLevelTilingWideVector"):  # the intrinsic's first
            sch_rules.append(rules.MultiLevelTilingWithIntrin(intrinsic, structure=structure, max_innermost_factor=64,
                                                              reuse_write=reuse_write))
        sch_rules.append(rule)
    processors = [p for p in postprocs.Postproc.create(kind) if type(p).__name__ != "RewriteLayout"]
    processors += [postprocs.RewriteTensorize(vectorize_init_loop=True), postprocs.RewriteLayout()]
    return ms.space_generator.PostOrderApply(sch_rules=sch_rules, postprocs=processors, mutator_probs=kind)


def design_space(func, target, kind: str, intrinsic: str | None = None) -> list:
    """MetaSchedule's design space of ``func`` for the TVM ``target``, with the rules of targets of
    ``kind`` (:func:`dot_product_space`: with ``intrinsic``, the tiling that tensorizes with it
    first): each space's trace as JSON, its sampling decisions dropped.
    Slow once per process (0.27's TuneContext imports every tensor intrinsic, here the fast way:
    :func:`register_tvm_tensor_intrinsics`): callers keep the result."""
    ms = meta_schedule()
    register_tvm_tensor_intrinsics()
    module = tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
    context = ms.TuneContext(mod=module, target=target, space_generator=dot_product_space(intrinsic, kind),
                             task_name="fuzz", num_threads=1)
    return [[_trace_plain(space.trace.as_json(remove_postproc=True))[0], []]
            for space in context.generate_design_space()]


def _trace_plain(value):
    """A JSON trace's TVM containers (Arrays, Maps, Strings, IntImms) as plain JSON values."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "value"):
        return value.value
    if hasattr(value, "items"):
        return {str(k): _trace_plain(v) for k, v in value.items()}
    try:
        return [_trace_plain(item) for item in value]
    except TypeError:
        return str(value)


def sample_schedule(func, space: list, seed: int, kind: str, intrinsic: str | None = None,
                    prepare=None) -> list | None:
    """One schedule of a design space (:func:`design_space`), as MetaSchedule's search samples one:
    ``prepare(schedule)`` first where given (its steps in the trace), the space's trace replayed
    with every sampling instruction deciding anew from ``seed``, then the postprocessors of that
    space (:func:`dot_product_space`) applied in order; the schedule's JSON trace (postprocessing
    included, decisions included: it replays as it is), or None where a postprocessor rejects it
    (tuning drops such a candidate and samples another)."""
    ms = meta_schedule()
    module = tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
    sch = schedule_namespace().Schedule(module, seed=seed, error_render_level="detail")
    if prepare is not None:
        prepare(sch)
    schedule_namespace().Trace.apply_json_to_schedule(space, sch)
    for postproc in dot_product_space(intrinsic, kind).postprocs if intrinsic else ms.Postproc.create(kind):
        if not postproc.apply(sch):
            return None
    return _trace_plain(sch.trace.as_json())


def custom_runner(measure):
    """A MetaSchedule Runner that measures each built candidate in this process with
    ``measure(artifact_path, args) -> [seconds, ...]``, ``args`` being ``[(dtype, shape), ...]``
    of the PrimFunc's parameters. An exception is that candidate's failure (MetaSchedule records
    it with the message, as it does a LocalRunner error)."""
    ms = meta_schedule()
    derived_object = importlib.import_module("tvm.ir.utils").derived_object
    done = ms.runner.local_runner.LocalRunnerFuture

    @derived_object
    class CustomRunner(ms.runner.PyRunner):
        def run(self, runner_inputs):
            futures = []
            for runner_input in runner_inputs:
                args = [(str(info[1]), [int(d) for d in info[2]])
                        for info in (attr_to_python(a.as_json()) for a in runner_input.args_info)]
                try:
                    seconds = [float(s) for s in measure(str(runner_input.artifact_path), args)]
                except Exception as err:  # the candidate's failure, not the tuner's
                    futures.append(done(error_message=f"{type(err).__name__}: {err}"))
                else:
                    futures.append(done(res=seconds))
            return futures

    return CustomRunner()
