"""TIR schedules across TVM releases: a schedule and its error, blocks (``sblock`` or ``block``) and
what they read, iteration kinds, a MetaSchedule trace applied from JSON (its node graph converted
to the installed release's), and dlight's default schedule."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from functools import lru_cache

from suite.compat.intrinsics import register_tensor_intrinsics
from suite.compat.release import schedule_namespace, tir, tvm


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


def block_read_names(schedule, block) -> list[str]:
    """The names of the buffers ``block`` reads, in order (0.27: TensorRegions with ``source``;
    before: BufferRegions with ``buffer``)."""
    return [getattr(region, "source", None).name if hasattr(region, "source") else region.buffer.name
            for region in schedule.get(block).reads]
