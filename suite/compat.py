"""Every difference between the TVM releases the suite drives, and nothing else.

The rest of the suite calls TVM only through these helpers (or through objects they
return), so supporting another release means changing this module alone.
Known drift, each checked against the 0.25.0, 0.26.0 and 0.27.0.post1 wheels: 0.27 renamed ``tvm.tir`` to ``tvm.tirx`` and moved
``Schedule``/``meta_schedule``/``dlight`` to ``tvm.s_tir``; Relax's ``TensorStructInfo`` became
``TensorType``; targets are JSON dicts only; runtime arrays are made by ``tvm.runtime.tensor``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

from suite import floats
from suite.errors import UserError

#: Oldest release whose APIs this module knows.
MIN_SUPPORTED = (0, 25)


class TVMUnavailable(UserError):
    """TVM is missing or is a version the suite cannot drive (one-line message)."""


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def installed_version() -> str:
    """The installed apache-tvm version, read without importing TVM."""
    try:
        return importlib.metadata.version("apache-tvm")
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec("tvm")
    if spec is None or spec.origin is None:
        raise TVMUnavailable(
            "TVM is not installed: pip install 'tvm-accuracy-suite[tvm]' (apache-tvm 0.27.0.post1)"
        )
    # A source build installed in development mode has no distribution metadata.
    return "source-" + Path(spec.origin).parent.name


@lru_cache(maxsize=None)
def build_id() -> str:
    """Identifies the installed TVM build for cache keys, without importing TVM; computed once
    per process (a history run installs each commit's TVM in a process of its own).

    Two source builds of different commits can share a version string, so the size and
    modification time of the TVM library are part of the identity.
    """
    version = installed_version()
    spec = importlib.util.find_spec("tvm")
    package_dir = Path(spec.origin).parent if spec and spec.origin else None
    stamp = ""
    if package_dir is not None:
        libs = sorted(package_dir.glob("**/libtvm*.so"))
        stamp = ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in libs)
    return f"{version}-{hashlib.sha256(stamp.encode()).hexdigest()[:10]}"


@lru_cache(maxsize=None)
def tvm():
    """Import TVM, failing with one clear line when it is missing or too old."""
    version = installed_version()
    if _version_tuple(version) < MIN_SUPPORTED and not version.startswith("source-"):
        raise TVMUnavailable(
            f"apache-tvm {version} is not supported: the suite drives 0.25.0 and newer"
        )
    try:
        module = importlib.import_module("tvm")
    except Exception as err:  # a broken ffi pairing fails here with an undefined symbol
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TVMUnavailable(f"apache-tvm {version} does not import: {first}") from None
    return module


def tir():
    """The TIR namespace: ``tvm.tirx`` from 0.27, ``tvm.tir`` before."""
    module = tvm()
    return getattr(module, "tirx", None) or module.tir


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
def lowering(disabled: list[str] = (), seen: list | None = None, switched_off: list[str] = ()):
    """TVM's lowering for the builds inside: as the current pass context has it, with the passes
    named in ``disabled`` left out (``PassContext(disabled_pass=...)``; a pass TVM needs left out
    makes the build fail), those in ``switched_off`` run without doing their work
    (:data:`PASS_SWITCHES`), and the name of each pass that changed the module appended to ``seen``,
    once, in the order they ran (a pass instrument: the passes this TVM runs for the target, whatever
    its version's pipeline; one that changed nothing cannot be what makes an output wrong)."""
    module = tvm()
    current = module.transform.PassContext.current()
    config = {**current.config, **pass_config({PASS_SWITCHES[name]: True for name in switched_off})}
    instruments = list(current.instruments)
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


def schedule_namespace():
    """Where ``Schedule``, ``meta_schedule`` and ``dlight`` live: ``tvm.s_tir`` or ``tvm.tir``."""
    module = tvm()
    try:
        return importlib.import_module("tvm.s_tir")
    except ImportError:
        return module.tir


def relax():
    tvm()
    return importlib.import_module("tvm.relax")


def te():
    tvm()
    return importlib.import_module("tvm.te")


def topi():
    tvm()
    return importlib.import_module("tvm.topi")


def tensor_type(shape, dtype: str):
    """The Relax annotation of a tensor: ``TensorType`` (0.27) or ``TensorStructInfo``.

    0.25 and 0.26 have both names, but their ``TensorType`` is the old ``DynTensorType``
    (ndim, dtype): ``TensorStructInfo`` comes first wherever it exists.
    """
    rx = relax()
    make = getattr(rx, "TensorStructInfo", None) or rx.TensorType
    return make(shape, dtype)


def struct_shape(expr) -> list[int]:
    """The static shape of a Relax expression or variable as Python ints."""
    info = getattr(expr, "struct_info", None)
    if info is None:
        info = expr.ty
    return [int(dim) for dim in info.shape]


def is_relax_function(func) -> bool:
    return isinstance(func, relax().Function)


def attr_to_python(value):
    """Convert a TVM attribute value (Array, IntImm, String, ...) to plain Python."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "value"):  # IntImm / FloatImm
        return value.value
    try:
        return [attr_to_python(item) for item in value]
    except TypeError:
        return str(value)


@lru_cache(maxsize=None)
def llvm_build() -> dict:
    """The LLVM this TVM's code generator was built with: ``version`` (``LLVM_VERSION`` of TVM's
    libinfo where the build records it, else the major version TVM reports), ``use_llvm`` (the
    ``USE_LLVM`` setting) and ``installed_from``: ``wheel`` (apache-tvm from a package index, its
    LLVM linked statically, Z3 on) or ``source`` (a build of a checkout, e.g. with Debian's LLVM).
    Libinfo alone cannot tell them apart: TVM 0.27 reports ``USE_LLVM ON`` and no LLVM version for
    both. Two builds with different values are different compilers, whatever their TVM commit."""
    info = {str(k): str(v) for k, v in tvm().support.libinfo().items()}
    major = int(tvm().target.codegen.llvm_version_major())
    version = info.get("LLVM_VERSION") or ""
    return {"version": version if version not in ("", "NOT-FOUND") else str(major),
            "use_llvm": info.get("USE_LLVM", ""), "installed_from": _installed_from()}


def _installed_from() -> str:
    """``source`` where pip installed apache-tvm from a local directory or a VCS (its
    ``direct_url.json`` has ``dir_info`` or ``vcs_info``, PEP 610) or there is no distribution at
    all (a development tree), else ``wheel``."""
    try:
        text = importlib.metadata.distribution("apache-tvm").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return "source"
    if not text:
        return "wheel"
    origin = json.loads(text)
    return "source" if "dir_info" in origin or "vcs_info" in origin else "wheel"


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


def cpu_device():
    return tvm().cpu(0)


# ----------------------------------------------------------------------------- GPU


def cuda_device():
    return tvm().cuda(0)


def target_from_device(device, host: dict | None = None):
    """The target TVM detects for a device (for CUDA: arch, shared memory, threads per block)."""
    detected = tvm().target.Target.from_device(device)
    return tvm().target.Target(detected, host=make_target(host)) if host else detected


def dlight():
    """dlight, the default schedules (``tvm.s_tir.dlight``, ``tvm.dlight`` before it moved)."""
    try:
        return importlib.import_module(schedule_namespace().__name__ + ".dlight")
    except ImportError:
        return importlib.import_module("tvm.dlight")


def dlight_default_schedule(func, target):
    """``func`` scheduled for a GPU by the dlight rules Relax's CUDA pipeline applies."""
    dl = dlight()
    module = tvm().IRModule({"main": func})
    with target:
        module = dl.ApplyDefaultSchedule(
            dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback()
        )(module)
    return module["main"]


def to_device(array, device):
    """A runtime tensor on ``device`` holding ``array``."""
    runtime = tvm().runtime
    make = getattr(runtime, "tensor", None)
    if make is not None:
        return make(array, device)
    return tvm().nd.array(array, device)


def empty(shape, dtype: str, device):
    runtime = tvm().runtime
    make = getattr(runtime, "empty", None)
    if make is not None:
        return make(shape, dtype, device)
    return tvm().nd.empty(shape, dtype, device)


def load_module(path: os.PathLike):
    return tvm().runtime.load_module(str(path))


# ----------------------------------------------------------------------------- schedules
# 0.27 calls blocks "sblocks" (``Schedule.get_sblock``, ``tvm.s_tir.SBlockRealize``); earlier
# releases have ``Schedule.get_block`` and ``tvm.tir.BlockRealize``.


def schedule(func):
    """A schedule of one PrimFunc; its errors carry TVM's detailed message."""
    return schedule_namespace().Schedule(func, error_render_level="detail")


def schedule_error():
    """The exception class TVM's schedule primitives raise when they refuse a transformation."""
    namespace = schedule_namespace()
    return getattr(namespace, "ScheduleError", None) or namespace.schedule.ScheduleError


def get_block(sch, name: str):
    """The block (``sblock`` in 0.27) called ``name`` in a schedule of one PrimFunc."""
    getter = getattr(sch, "get_sblock", None) or sch.get_block
    return getter(name)


def _block_realize_class():
    """``tvm.s_tir.SBlockRealize`` (0.27), ``tvm.tirx.SBlockRealize`` (0.25, 0.26), ``tvm.tir.BlockRealize``."""
    for namespace in (schedule_namespace(), tir()):
        found = getattr(namespace, "SBlockRealize", None) or getattr(namespace, "BlockRealize", None)
        if found is not None:
            return found
    raise AttributeError("this TVM has no (S)BlockRealize")


def block_realize(sch, block):
    """The realize (iter var bindings) of ``block``, found under its innermost loop."""
    realize_class = _block_realize_class()
    target = sch.get(block)
    loops = sch.get_loops(block)
    pending = [sch.get(loops[-1]).body] if loops else [sch.mod["main"].body]
    while pending:
        node = pending.pop()
        if isinstance(node, realize_class):
            if node.block.same_as(target):
                return node
            pending.append(node.block.body)
        elif hasattr(node, "seq"):
            pending.extend(node.seq)
        elif hasattr(node, "body"):
            pending.append(node.body)
    raise LookupError(f"no realize of block {target.name_hint!r} found")


def vars_in(expr) -> list:
    """The variables an expression uses."""
    return list(tir().analysis.undefined_vars(expr, []))


def iter_kind(iter_var) -> str:
    """``"S"`` (data parallel), ``"R"`` (commutative reduction) or ``"O"`` (other)."""
    kinds = {int(tir().IterVar.DataPar): "S", int(tir().IterVar.CommReduce): "R"}
    return kinds.get(int(iter_var.iter_type), "O")


# ----------------------------------------------------------------------------- MetaSchedule


def meta_schedule():
    """``tvm.s_tir.meta_schedule`` (0.27) or ``tvm.meta_schedule``."""
    tvm()
    try:
        return importlib.import_module("tvm.s_tir.meta_schedule")
    except ImportError:
        return importlib.import_module("tvm.meta_schedule")


def apply_trace(trace_json, sch) -> None:
    """Replay a JSON trace (plain lists, as committed) on a schedule, the tensor intrinsics its
    ``Tensorize`` instructions name registered first (:func:`register_tensor_intrinsics`).

    Traces recorded with 0.27 carry TIR nodes (a ``TransformLayout``'s IndexMap) as JSON
    graphs in 0.27's node schema; they are rewritten to the running release's first.
    """
    named = {str(inst[2][0]) for inst in (trace_json[0] if trace_json else [])
             if isinstance(inst, list) and inst[:1] == ["Tensorize"] and len(inst) > 2 and inst[2]}
    if named:
        register_tensor_intrinsics(named)
    schedule_namespace().Trace.apply_json_to_schedule(_local_node_graphs(trace_json), sch)


@lru_cache(maxsize=None)
def _node_schema() -> dict:
    """How the running release serializes TIR nodes (0.25: ``tirx.Var`` with ``dtype``;
    0.26: ``ir.Var`` with ``ty``, ``tirx.`` arithmetic; 0.27: ``prim.`` arithmetic and
    IntImm values as separate ``int`` nodes)."""
    import json

    t = tir()
    x = t.Var("i", "int32")
    nodes = json.loads(tvm().ir.save_json(t.floordiv(x, t.IntImm("int32", 8))))["nodes"]
    var = next(n for n in nodes if n["type"].endswith(".Var"))
    div = next(n for n in nodes if n["type"].endswith(".FloorDiv"))
    return {
        "var": var["type"],
        "dtype_field": "dtype" in var["data"],
        "arith_prefix": div["type"].rsplit(".", 1)[0] + ".",
        "int_nodes": any(n["type"] == "int" for n in nodes),
    }


def _convert_graph(graph: dict, schema: dict) -> dict:
    """A 0.27 JSON node graph in the running release's schema."""
    nodes = graph["nodes"]
    for node in nodes:
        kind, data = node["type"], node.get("data")
        if kind.startswith("prim.") and schema["arith_prefix"] != "prim.":
            node["type"] = schema["arith_prefix"] + kind[len("prim."):]
        if not isinstance(data, dict):
            continue
        if kind in ("ir.IntImm", "ir.FloatImm") and not schema["int_nodes"] and isinstance(data.get("value"), int):
            referenced = nodes[data["value"]]
            if referenced.get("type") in ("int", "float"):
                data["value"] = referenced["data"]
        if schema["dtype_field"] and "ty" in data:
            ty = data.pop("ty")
            prim = nodes[ty] if isinstance(ty, int) and ty < len(nodes) else {}
            data["dtype"] = prim.get("data", {}).get("dtype", "handle") if prim.get("type") == "ir.PrimType" else "handle"
            if kind == "ir.Var":
                node["type"] = schema["var"]
                data["type_annotation"] = ty
    return graph


def _local_node_graphs(value):
    """``value`` with every embedded 0.27 JSON node graph converted to the running schema."""
    import json

    if isinstance(value, list):
        return [_local_node_graphs(item) for item in value]
    if isinstance(value, str) and value.startswith('{"root_index"'):
        schema = _node_schema()
        if schema == {"var": "ir.Var", "dtype_field": False, "arith_prefix": "prim.", "int_nodes": True}:
            return value
        return json.dumps(_convert_graph(json.loads(value), schema), separators=(",", ":"))
    return value


def register_tensor_intrinsics(names=None) -> None:
    """Register the tensor intrinsics ``names`` (those a tensorizing trace names; None: all): the
    suite's own (:data:`VNNI_I8X64_INTRIN`) alone where they are all it needs, else TVM's too
    (``wmma_*``, ``mma_*``, ``dot_16x4_*``...). TVM's cost more: it parses every intrinsic's
    TVMScript (about 4 CPU-seconds), so only traces that use them pay for it."""
    names = None if names is None else set(names)
    if names is None or VNNI_I8X64_INTRIN in names:
        _register_vnni_i8x64()
    if names is None or names - {VNNI_I8X64_INTRIN}:
        _register_tvm_tensor_intrinsics()


@lru_cache(maxsize=None)
def _register_tvm_tensor_intrinsics() -> None:
    # TVMScript's parser takes inspect.stack() for each of the hundreds of intrinsics it parses, and
    # inspect looks the module of each frame up by its file: a frame of a frozen module (the import
    # machinery's own, "<frozen importlib._bootstrap>") names no file of any module, so every lookup
    # scans every loaded module (20 of the 24 CPU-seconds of the import, measured in a plain process).
    # Those files named as their modules' for the import, the frames read as before (no source), at once.
    frozen = {}
    for name, module in list(sys.modules.items()):
        if getattr(getattr(module, "__spec__", None), "origin", None) == "frozen":
            for file in (f"<frozen {module.__name__}>", f"<frozen {name}>"):
                if file not in inspect.modulesbyfile:
                    frozen.setdefault(file, name)
    inspect.modulesbyfile.update(frozen)
    # TVMScript's decorators read of inspect.stack() only each frame, its file, line and function, and
    # the source line of one frame, to see whether the function is defined in a class (no tensor
    # intrinsic is): inspect's reading of every frame's source file, 60% of what is left, is skipped.
    full_stack, inspect.stack = inspect.stack, _frames_without_source
    try:
        importlib.import_module(schedule_namespace().__name__ + ".tensor_intrin")
    finally:
        inspect.stack = full_stack
        for file in frozen:
            inspect.modulesbyfile.pop(file, None)


def _frames_without_source(context: int = 1) -> list:
    """``inspect.stack()`` of the caller without the source lines (``code_context`` None)."""
    frame, frames = sys._getframe(1), []
    while frame is not None:
        frames.append(inspect.FrameInfo(frame, frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name,
                                        None, None))
        frame = frame.f_back
    return frames


#: The suite's VNNI dot product (uint8 x int8 -> int32, 16 lanes of 4): what TVM's ``dot_16x4_vnni``
#: computes, with the operands LLVM's ``llvm.x86.avx512.vpdpbusd.512`` takes since LLVM 22 (the 0.27
#: wheel's): <64 x i8>. TVM 0.27's own passes <16 x i32>, which LLVM 22 refuses ("Intrinsic has
#: incorrect argument type"), so that no kernel tensorized with it builds.
VNNI_I8X64_INTRIN = "tvm_suite_dot_16x4_vnni_i8x64"


def dot_product_intrinsic_name(intrinsic: str | None) -> str | None:
    """The registered tensor intrinsic that does what TVM's ``intrinsic`` does on the installed
    TVM's LLVM, registered: :data:`VNNI_I8X64_INTRIN` for ``dot_16x4_vnni`` from LLVM 22 on, else
    TVM's own."""
    if intrinsic is None:
        return None
    if intrinsic == "dot_16x4_vnni" and int(tvm().target.codegen.llvm_version_major()) >= 22:
        _register_vnni_i8x64()
        return VNNI_I8X64_INTRIN
    _register_tvm_tensor_intrinsics()
    return intrinsic


@lru_cache(maxsize=None)
def _register_vnni_i8x64() -> None:
    tvm()
    from tvm.script import tirx as T  # 0.27's TVMScript (s_tir blocks)

    @T.prim_func(s_tir=True)
    def description(a: T.Buffer((4,), "uint8", offset_factor=1), b: T.Buffer((16, 4), "int8", offset_factor=1),
                    c: T.Buffer((16,), "int32", offset_factor=1)) -> None:
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            for i, k in T.grid(16, 4):
                with T.sblock("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    c[vi] = c[vi] + T.cast(a[vk], "int32") * T.cast(b[vi, vk], "int32")

    @T.prim_func(s_tir=True)
    def implementation(a: T.Buffer((4,), "uint8", offset_factor=1), b: T.Buffer((16, 4), "int8", offset_factor=1),
                       c: T.Buffer((16,), "int32", offset_factor=1)) -> None:
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            # a's 4 bytes in every 32-bit lane; b's 16 rows of 4 bytes as they lie
            c[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), c.vload([0], "int32x16"),
                T.reinterpret(T.broadcast(T.reinterpret(a.vload([0], "uint8x4"), dtype="int32"), 16), dtype="int8x64"),
                b.vload([0, 0], "int8x64"), dtype="int32x16")

    schedule_namespace().TensorIntrin.register(VNNI_I8X64_INTRIN, description, implementation)


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
    imports every tensor intrinsic of TVM's: imported here the fast way (:func:`_register_tvm_tensor_intrinsics`)."""
    ms = meta_schedule()
    _register_tvm_tensor_intrinsics()
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


def block_read_names(schedule, block) -> list[str]:
    """The names of the buffers ``block`` reads, in order (0.27: TensorRegions with ``source``;
    before: BufferRegions with ``buffer``)."""
    return [getattr(region, "source", None).name if hasattr(region, "source") else region.buffer.name
            for region in schedule.get(block).reads]


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
    :func:`_register_tvm_tensor_intrinsics`): callers keep the result."""
    ms = meta_schedule()
    _register_tvm_tensor_intrinsics()
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
