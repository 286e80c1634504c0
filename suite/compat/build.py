"""Targets and builds across TVM releases: host CPU and its features, targets made from JSON dicts
(Hexagon's too), a PrimFunc built, the pass configuration and the lowering pipeline with passes
switched off, a TVM InternalError told apart, a module written to a file."""

from __future__ import annotations

import contextlib
import os

from suite.compat.relax import attr_to_python
from suite.compat.release import tir, tvm
from suite.errors import UserError


def pass_config(options: dict) -> dict:
    """TVM pass-configuration options named without their namespace (``disable_assert``) under the
    names this TVM registers: ``tirx.`` from 0.27, ``tir.`` before. An option it does not know is a
    UserError (TVM itself would raise an AttributeError listing every option)."""
    known = set(tvm().transform.PassContext.list_configs())
    found = {}
    for name, value in options.items():
        spelled = next((f"{prefix}.{name}" for prefix in ("tirx", "tir") if f"{prefix}.{name}" in known), None)
        if spelled is None:
            raise UserError(f"this TVM has no pass option {name!r}")
        found[spelled] = value
    return found

#: Passes that wrap others (the pipeline's own module pass, a Sequential): never one to blame.
_PIPELINE_PASSES = frozenset({"_pipeline", "sequential", "Sequential"})

#: Passes the build needs, which TVM's pipeline can be told to run without doing their work: the
#: pass configuration option (named as :func:`pass_config` takes it) that does so. VectorizeLoop
#: left out fails the build (LiftStorageAlloc's check), ``disable_vectorize`` makes it lower the loops
#: to serial ones.
PASS_SWITCHES = {"tirx.VectorizeLoop": "disable_vectorize", "tir.VectorizeLoop": "disable_vectorize",
                 "tirx.StorageRewrite": "disable_storage_rewrite", "tir.StorageRewrite": "disable_storage_rewrite",
                 "tirx.CommonSubexprElim": "disable_cse_tir", "tir.CommonSubexprElim": "disable_cse_tir"}


@contextlib.contextmanager
def lowering(disabled: list[str] = (), seen: list | None = None, switched_off: list[str] = (),
             running: list | None = None):
    """TVM's lowering for the builds inside: as the current pass context has it, with the passes
    named in ``disabled`` left out (``PassContext(disabled_pass=...)``; a pass TVM needs left out
    makes the build fail), those in ``switched_off`` run without doing their work
    (:data:`PASS_SWITCHES`), and the name of each pass that changed the module appended to ``seen``,
    once, in the order they ran (a pass instrument: the passes this TVM runs for the target, whatever
    its version's pipeline; one that changed nothing cannot be what makes an output wrong). The
    name of each pass is pushed on ``running`` as it starts and popped as it ends: after a build
    that raised inside a pass, :func:`raising_pass` of it names that pass."""
    module = tvm()
    current = module.transform.PassContext.current()
    config = {**current.config, **pass_config({PASS_SWITCHES[name]: True for name in switched_off})}
    instruments = list(current.instruments)
    if running is not None:

        @module.instrument.pass_instrument
        class Running:
            def run_before_pass(self, _mod, info):
                running.append(info.name)

            def run_after_pass(self, _mod, _info):
                running.pop()

        instruments.append(Running())
    if seen is not None:
        import tvm_ffi

        digest = getattr(module.ir, "structural_hash", None) or tvm_ffi.structural_hash  # moved in 0.27
        before = []  # a stack: passes nest (the pipeline's own module pass runs the others)

        @module.instrument.pass_instrument
        class Seen:
            def run_before_pass(self, mod, _info):
                before.append(digest(mod))

            def run_after_pass(self, mod, info):
                if before.pop() != digest(mod) and info.name not in _PIPELINE_PASSES and info.name not in seen:
                    seen.append(info.name)

        instruments.append(Seen())
    with module.transform.PassContext(opt_level=current.opt_level, required_pass=list(current.required_pass),
                                      disabled_pass=[*current.disabled_pass, *disabled], instruments=instruments,
                                      config=config):
        yield


def raising_pass(running: list) -> str | None:
    """The pass a build raised inside, from the ``running`` stack :func:`lowering` kept (the pass
    that started last and never ended, the pipeline's own wrappers aside); None where the build
    raised outside every pass (in code generation)."""
    inner = [name for name in running if name not in _PIPELINE_PASSES]
    return inner[-1] if inner else None


def host_cpu() -> str:
    """LLVM's name of this machine's CPU; a generic x86-64 target makes fp16 16x slower."""
    return str(tvm().target.codegen.llvm_get_system_cpu())


def cpu_features(mcpu: str) -> frozenset[str] | None:
    """The features LLVM gives the CPU named ``mcpu`` (ISA and tuning flags), or None where this
    TVM cannot tell."""
    features = getattr(tvm().target.codegen, "llvm_get_cpu_features", None)
    if features is None:
        return None
    return frozenset(str(f) for f in features(make_target({"kind": "llvm", "mcpu": mcpu})))


def make_target(spec: dict):
    """A ``Target`` from its dict form; releases before 0.27 also take the string form."""
    target_cls = tvm().target.Target
    try:
        return target_cls(spec)
    except Exception:
        parts = [spec["kind"]] + [f"-{k}={v}" for k, v in spec.items() if k != "kind"]
        return target_cls(" ".join(parts))


def build(func, target, name: str = "main"):
    """Compile one PrimFunc to a runtime module whose function ``name`` runs it."""
    ir_module = tvm().IRModule({name: func.with_attr("global_symbol", name)})
    builder = getattr(tir(), "build", None) or tvm().build
    return builder(ir_module, target=target)


def param_names(func) -> list[str]:
    """The names of a PrimFunc's parameters, as its TVMScript spells them (a Var's ``name`` from
    0.27, its ``name_hint`` before)."""
    return [str(getattr(p, "name", None) or p.name_hint) for p in func.params]


def is_internal_error(err: BaseException) -> bool:
    """Whether ``err`` is TVM's InternalError: a check inside TVM failed (an ICHECK), a fault of
    TVM's, not of what it was given."""
    return isinstance(err, tvm().error.InternalError)


# ----------------------------------------------------------------------------- Hexagon
# The 0.27 wheel (USE_HEXAGON=OFF) cannot build Hexagon through ``tvm.compile`` with a
# ``qcom/hexagon-*`` target (it emits x86 code, or fails on tvm_call_packed with host=). An
# ``llvm`` target with ``mtriple=hexagon`` produces real Hexagon code with the same LLVM flags.


def hexagon_target(mcpu: str, mattr: list[str], llvm_options: list[str]):
    """An llvm target that generates Hexagon code (``mtriple=hexagon``)."""
    spec = {"kind": "llvm", "mtriple": "hexagon", "mcpu": mcpu, "mattr": list(mattr)}
    if llvm_options:
        spec["cl-opt"] = list(llvm_options)
    try:
        return tvm().target.Target(spec)
    except Exception:  # releases with string targets spell LLVM options -cl-opt=...
        parts = ["llvm", "-mtriple=hexagon", f"-mcpu={mcpu}", f"-mattr={','.join(mattr)}"]
        parts += [f"-cl-opt={opt}" for opt in llvm_options]
        return tvm().target.Target(" ".join(parts))


def hexagon_tag_target(tag: str, llvm_options: list[str]):
    """TVM's own ``hexagon``-kind target of a ``qcom/hexagon-*`` tag (VTCM capacity, cores), with
    ``llvm_options`` added: what MetaSchedule tunes for (its Hexagon rules and postprocessors check
    the kind). This wheel cannot build with it; candidates are built with :func:`hexagon_target`."""
    target_cls = tvm().target.Target
    spec = {str(k): attr_to_python(v) for k, v in dict(target_cls(tag).export()).items() if k not in ("tag", "keys")}
    spec["llvm-options"] = list(dict.fromkeys([*(spec.get("llvm-options") or []), *llvm_options]))
    return target_cls(spec)


def write_module_file(module, path: os.PathLike, fmt: str) -> None:
    """Write an LLVM-built runtime module as an object (``"o"``) or assembly (``"s"``)."""
    module.write_to_file(str(path), fmt)
