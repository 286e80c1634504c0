"""Workloads: the fused PrimFuncs of a model (and the seed conv2d), their ids and inputs.

A workload is described by plain data: its *op chain* (the Relax ops that TVM fused into one
PrimFunc, with their attributes and input shapes), FLOPs and how often it occurs in the model.
The op chain is what the float64 reference evaluates, so the reference never needs TVM.

Ids are derived from the op chain and shapes, not from TVM's generated names (those are
numbered by occurrence and change between releases)::

    resnet50.conv2d_add_add_relu.56x56x64-k1s1-256
    <model>.<ops>.<input HxWxC>-k<kernel>s<stride>-<output channels>

An elementwise op whose chained operand is its second one is written with an ``r`` prefix
(``radd``): TVM keeps ``res + y`` and ``y + res`` as two PrimFuncs, so the ids must too.
"""

from __future__ import annotations

import difflib
import json
import math
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from suite import cache, floats
from suite.compat import relax as compat_relax
from suite.compat import release
from suite.core import models, quantized
from suite.errors import UserError

#: The dtypes of the default grid (`tvm-suite run`, asv without a grid) and of every command.
DTYPES = ("float32", "float16")
#: Every float dtype, judged against float64 by ULP and rounding bound: bfloat16 is measured by `run`
#: and `measure` when asked for, on the targets that run it (docs/bfloat16.md).
FLOAT_DTYPES = DTYPES + (floats.BFLOAT16,)
#: The quantized dtype (suite.core.quantized): measured by `run` and `measure` when asked for, on
#: the targets that run it (Target.dtypes), judged exactly against an integer oracle.
INTEGER_DTYPES = ("int8",)
#: What `run` and `measure` take.
MEASURED_DTYPES = DTYPES + INTEGER_DTYPES + (floats.BFLOAT16,)
SEED_ID = "seed.conv2d_nhwc_7x7s2"
SEED_MODEL = "seed"
#: Models whose workloads the benchmarks cover by default.
DEFAULT_MODELS = ("resnet50",)


class UnknownWorkload(UserError, ValueError):
    """A workload id that no model has; the message lists the closest ids."""


class UnknownDtype(UserError, ValueError):
    pass


@dataclass(frozen=True)
class Workload:
    id: str
    model: str
    chain: dict = field(repr=False)
    flops: int
    occurrences: int
    tvm_name: str

    @property
    def input_shapes(self) -> list[list[int]]:
        return [item["shape"] for item in self.chain["inputs"]]

    @property
    def output_shape(self) -> list[int]:
        return self.chain["output_shape"]

    @property
    def layout(self) -> str:
        """The data layout of the output (NHWC or NCHW; dense and mean outputs are N x C)."""
        for step in self.chain["steps"]:
            attrs = step.get("attrs", {})
            if "data_layout" in attrs or "layout" in attrs:
                return attrs.get("data_layout") or attrs["layout"]
        return "NHWC"

    def summary(self) -> dict:
        return {
            "id": self.id,
            "model": self.model,
            "ops": [step["op"] for step in self.chain["steps"]],
            "inputs": self.input_shapes,
            "output": self.output_shape,
            "flops": self.flops,
            "occurrences": self.occurrences,
            "tvm_name": self.tvm_name,
        }


# ----------------------------------------------------------------------------- op chains


def _op_name(call) -> str:
    return call.op.name.split(".")[-1]  # relax.nn.conv2d -> conv2d


def _attrs(call) -> dict:
    if call.attrs is None:
        return {}
    keys = [k for k in dir(call.attrs) if not k.startswith("_")]
    wanted = {
        "conv2d": ("strides", "padding", "dilation", "groups", "data_layout", "kernel_layout"),
        "max_pool2d": ("pool_size", "strides", "padding", "dilation", "ceil_mode", "layout"),
        "mean": ("axis", "keepdims"),
    }.get(_op_name(call), ())
    return {k: compat_relax.attr_to_python(getattr(call.attrs, k)) for k in wanted if k in keys}


def assign_roles(steps, inputs) -> None:
    """Mark each input as weight (with fan-in), bias or activation, for input generation."""
    for step in steps:
        for position, (kind, index) in enumerate(step["args"]):
            if kind != "input":
                continue
            item = inputs[index]
            shape = item["shape"]
            if step["op"] == "conv2d" and position == 1:
                hwio = step["attrs"]["kernel_layout"] == "HWIO"
                item["role"] = "weight"
                item["fan_in"] = math.prod(shape[:3]) if hwio else math.prod(shape[1:])
            elif step["op"] == "matmul" and position == 1:
                item["role"] = "weight"
                item["fan_in"] = shape[-2]
            elif step["op"] == "add" and max(shape) == math.prod(shape):
                item["role"] = "bias"
            item.setdefault("role", "activation")


def _hwc(shape, layout) -> tuple[int, int, int]:
    if layout.startswith("NC"):
        return shape[2], shape[3], shape[1]
    return shape[1], shape[2], shape[3]


def workload_id(model: str, chain: dict) -> str:
    """The readable, stable id of an op chain (see the module docstring)."""
    tokens = []
    for step in chain["steps"]:
        chained_second = len(step["args"]) == 2 and step["args"][1][0] == "step" and step["args"][0][0] == "input"
        tokens.append(("r" if chained_second else "") + step["op"])
    ops = "_".join(tokens)
    first = chain["steps"][0]
    shapes = chain["inputs"]
    if first["op"] == "conv2d":
        attrs = first["attrs"]
        data, weight = shapes[first["args"][0][1]]["shape"], shapes[first["args"][1][1]]["shape"]
        h, w, c = _hwc(data, attrs["data_layout"])
        k = weight[0] if attrs["kernel_layout"] == "HWIO" else weight[2]
        cout = weight[3] if attrs["kernel_layout"] == "HWIO" else weight[0]
        pad = attrs["padding"][0]
        geometry = f"{h}x{w}x{c}-k{k}s{attrs['strides'][0]}" + ("" if pad == k // 2 else f"p{pad}")
        geometry += f"-{cout}"
    elif first["op"] == "max_pool2d":
        attrs = first["attrs"]
        h, w, c = _hwc(shapes[0]["shape"], attrs["layout"])
        geometry = f"{h}x{w}x{c}-k{attrs['pool_size'][0]}s{attrs['strides'][0]}"
    elif first["op"] == "matmul":
        weight = shapes[first["args"][1][1]]["shape"]
        geometry = f"{weight[0]}-{weight[1]}"
    else:
        geometry = "x".join(str(d) for d in shapes[first["args"][0][1]]["shape"][1:])
    return f"{model}.{ops}.{geometry}"


def _input_shapes(step: dict, chain: dict) -> list:
    """The shape of each argument of ``step`` that is an input of the chain (None for a chained one)."""
    return [chain["inputs"][i]["shape"] if kind == "input" else None for kind, i in step["args"]]


def _step_macs(step: dict, chain: dict, out: int) -> int:
    """Multiply-accumulates of one conv2d or matmul step with ``out`` output elements (0 for other ops)."""
    shapes = _input_shapes(step, chain)
    if step["op"] == "conv2d":
        weight = shapes[1]
        return (math.prod(weight[:3]) if step["attrs"]["kernel_layout"] == "HWIO" else math.prod(weight[1:])) * out
    if step["op"] == "matmul":
        return shapes[1][-2] * out
    return 0


def flop_count(chain: dict) -> int:
    """FLOPs of one run: 2 per multiply-add of a reduction, 1 per element of add/relu/compare."""
    total = 0
    out = math.prod(chain["output_shape"])
    for step in chain["steps"]:
        if step["op"] in ("conv2d", "matmul"):
            total += 2 * _step_macs(step, chain, out)
        elif step["op"] == "max_pool2d":
            total += math.prod(step["attrs"]["pool_size"]) * out
        elif step["op"] == "mean":
            total += math.prod(_input_shapes(step, chain)[0]) + out
        else:
            total += out
    return total


def multiply_accumulates(chain: dict) -> int:
    """Multiply-accumulates of the conv2d and matmul steps of one run (0 when it has none)."""
    out = math.prod(chain["output_shape"])
    return sum(_step_macs(step, chain, out) for step in chain["steps"])


# ----------------------------------------------------------------------------- extraction


def fuse(module):
    """(legalized, fused, final): Relax's own fusion of a model (LegalizeOps, AnnotateTIROpPattern,
    FuseOps, FuseTIR), each stage kept; the workloads and the whole model's calls read them."""
    relax = release.relax()
    legalized = relax.transform.LegalizeOps()(module)
    fused = relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(legalized))
    return legalized, fused, relax.transform.FuseTIR()(fused)


def bindings(func):
    """Every binding of a Relax function, in order."""
    return [b for block in func.body.blocks for b in block.bindings]


def _extract(model: str, dtype: str) -> tuple[list[Workload], dict]:
    """Fuse ``model`` in ``dtype``; returns its workloads and their PrimFuncs by id."""
    module = models.graph(model, dtype)
    legalized, fused, final = fuse(module)
    relax_calls = {b.var: b.value for b in bindings(module["main"])}
    # LegalizeOps keeps every binding's var, so each legalized PrimFunc maps back to the
    # high-level Relax call (and its attributes) it came from.
    call_of_prim = {}
    for binding in bindings(legalized["main"]):
        value = binding.value
        if binding.var in relax_calls and hasattr(value, "args") and value.args:
            prim = getattr(value.args[0], "name_hint", None)
            if prim is not None:
                call_of_prim[prim] = relax_calls[binding.var]

    groups: dict[str, dict] = {}
    for binding in bindings(fused["main"]):
        call = binding.value
        callee = getattr(call, "op", None)
        if getattr(callee, "name", None) == "relax.call_tir":  # a single op left unfused
            name, func = call.args[0].name_hint, None
        elif hasattr(callee, "name_hint") and compat_relax.is_relax_function(fused[callee]):
            name, func = callee.name_hint, fused[callee]
        else:
            continue
        groups.setdefault(name, {"count": 0, "func": func, "call": call})["count"] += 1

    workloads, prim_funcs = [], {}
    for name, group in groups.items():
        chain = _chain_of_group(group, call_of_prim)
        wid = workload_id(model, chain)
        if wid in prim_funcs:
            raise RuntimeError(f"two fused functions of {model} share the id {wid}")
        prim_funcs[wid] = final[name]
        workloads.append(Workload(wid, model, chain, flop_count(chain), group["count"], name))
    return workloads, prim_funcs


def _chain_of_group(group, call_of_prim) -> dict:
    if group["func"] is None:  # a single op TVM did not fuse with anything
        call = group["call"]
        prim = call.args[0].name_hint
        args = list(call.args[1])
        inputs = [{"shape": compat_relax.struct_shape(a)} for a in args]
        steps = [{"op": _op_name(call_of_prim[prim]), "args": [["input", i] for i in range(len(args))],
                  "attrs": _attrs(call_of_prim[prim])}]
        output = compat_relax.struct_shape(call)
    else:
        func = group["func"]
        params = list(func.params)
        inputs = [{"shape": compat_relax.struct_shape(p)} for p in params]
        position = {p: ("input", i) for i, p in enumerate(params)}
        steps = []
        for binding in bindings(func):
            prim = binding.value.args[0].name_hint
            original = call_of_prim[prim]
            steps.append({
                "op": _op_name(original),
                "args": [list(position[a]) for a in binding.value.args[1]],
                "attrs": _attrs(original),
            })
            position[binding.var] = ("step", len(steps) - 1)
        output = compat_relax.struct_shape(func.body)
    assign_roles(steps, inputs)
    return {"inputs": inputs, "steps": steps, "output_shape": output}


def _seed_chain() -> dict:
    chain = {
        "inputs": [{"shape": [1, 230, 230, 3]}, {"shape": [7, 7, 3, 64]}],
        "steps": [{
            "op": "conv2d",
            "args": [["input", 0], ["input", 1]],
            "attrs": {"strides": [2, 2], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1,
                      "data_layout": "NHWC", "kernel_layout": "HWIO"},
        }],
        "output_shape": [1, 112, 112, 64],
    }
    assign_roles(chain["steps"], chain["inputs"])
    return chain


def seed_workload() -> Workload:
    """The conv2d of the seed issue: 1x230x230x3 * 7x7x3x64, stride 2, no padding."""
    chain = _seed_chain()
    return Workload(SEED_ID, SEED_MODEL, chain, flop_count(chain), 1, "conv2d")


def _seed_prim_func(dtype: str):
    te, topi = release.te(), release.topi()
    data = te.placeholder((1, 230, 230, 3), dtype, name="lv1")
    weight = te.placeholder((7, 7, 3, 64), dtype, name="param_0")
    # Accumulates in the output dtype, exactly as in the seed issue.
    out = topi.nn.conv2d_nhwc(data, weight, 2, 0, 1, out_dtype=dtype)
    return te.create_prim_func([data, weight, out])


# ----------------------------------------------------------------------------- public API


def catalog(model: str) -> list[Workload]:
    """The workloads of ``model`` (or ``seed``), cached on disk per TVM build."""
    if model == SEED_MODEL:
        return [seed_workload()]
    models.parse_model_name(model)
    # The graph (models.py) and how it is fused and named (this module) are in the key: a model
    # added or changed is fused again.
    code = {name: cache.source_digest(Path(__file__).with_name(name)) for name in ("models.py", "workloads.py")}
    where = cache.entry("catalog", model, {"model": model, "tvm": release.build_id(), "code": code})
    found = cache.load_entry(where, ("workloads.json",))
    stored = cache.read_json(found["workloads.json"]) if found else None
    if not isinstance(stored, list):  # absent or damaged: fused again
        workloads, _ = _extract(model, "float32")
        stored = [w.__dict__ for w in workloads]
        cache.store_entry(where, {"workloads.json": lambda tmp: Path(tmp).write_text(json.dumps(stored))})
    return [Workload(**item) for item in stored]


def all_models() -> list[str]:
    return models.model_names() + [SEED_MODEL]


def default_ids() -> list[str]:
    """The workloads the benchmarks cover: the seed conv2d and every ResNet-50 PrimFunc."""
    return [SEED_ID] + [w.id for model in DEFAULT_MODELS for w in catalog(model)]


def model_of(workload_id: str) -> str:
    return workload_id.split(".", 1)[0]


def get(workload_id: str) -> Workload:
    """The workload with this id; :class:`UnknownWorkload` lists the closest ids otherwise."""
    model = model_of(workload_id)
    # Look among the id's own model, or among the default set when the model is unknown.
    known = catalog(model) if model in all_models() else [seed_workload()] + catalog(DEFAULT_MODELS[0])
    for workload in known:
        if workload.id == workload_id:
            return workload
    close = difflib.get_close_matches(workload_id, [w.id for w in known], n=5, cutoff=0.4)
    hint = ", ".join(close) if close else "run `tvm-suite list` for the valid ids"
    raise UnknownWorkload(f"unknown workload {workload_id!r}; closest: {hint}")


def check_dtype(dtype: str, valid: tuple[str, ...] = DTYPES) -> str:
    """``dtype`` if it is one of ``valid`` (the float dtypes unless a caller takes more), else a
    UserError naming those."""
    if dtype not in valid:
        what = f"unknown dtype {dtype!r}" if dtype not in MEASURED_DTYPES else f"{dtype} is not taken here yet"
        raise UnknownDtype(f"{what}; valid dtypes: {', '.join(valid)}")
    return dtype


def output_dtype(dtype: str) -> str:
    """The dtype of a workload's output in ``dtype``: int8 workloads requantize to uint8."""
    return quantized.OUTPUT_DTYPE if dtype in INTEGER_DTYPES else dtype


@lru_cache(maxsize=8)
def _model_prim_funcs(model: str, dtype: str) -> dict:
    return _extract(model, dtype)[1]


def prim_func(workload: Workload, dtype: str):
    """The TVM PrimFunc of ``workload`` with every tensor in ``dtype``, as Relax legalized it; in
    int8, its quantized form (:func:`suite.core.quantized.prim_func`)."""
    check_dtype(dtype, MEASURED_DTYPES)
    if dtype in INTEGER_DTYPES:
        return quantized.prim_func(workload.chain)
    if workload.model == SEED_MODEL:
        return _seed_prim_func(dtype)
    return _model_prim_funcs(workload.model, dtype)[workload.id]


def make_inputs(workload: Workload, dtype: str) -> list[np.ndarray]:
    """Inputs from fixed seeds (per workload and input), rounded to ``dtype``.

    Scales keep fp16 finite through a whole layer: activations (and residuals) uniform in
    [0, 1) like post-relu feature maps, weights normal with variance 1/fan_in (He-style, so
    outputs stay of order 1), biases uniform in [-0.1, 0.1). The same draws are used for
    every dtype, so fp16 and fp32 results of a workload see the same values up to rounding
    (bfloat16's to nearest, ties to even: :func:`suite.floats.rounded`).
    int8 workloads draw integers of their own (:func:`suite.core.quantized.make_inputs`).
    """
    check_dtype(dtype, MEASURED_DTYPES)
    if dtype in INTEGER_DTYPES:
        return quantized.make_inputs(workload.id, workload.chain)
    inputs = tuple((item["role"], tuple(item["shape"]), item.get("fan_in")) for item in workload.chain["inputs"])
    return [floats.rounded(values, dtype) for values in _draws(workload.id, inputs)]


@lru_cache(maxsize=1)
def _draws(workload_id: str, inputs: tuple) -> tuple[np.ndarray, ...]:
    """The float64 draws of :func:`make_inputs` ((role, shape, fan_in) of each input), kept for the
    last workload: `run` measures and times a workload in every dtype and order in a row (a quick
    run draws each once instead of four times). Read-only: every caller gets arrays of its own."""
    draws = []
    for index, (role, shape, fan_in) in enumerate(inputs):
        rng = np.random.default_rng(zlib.crc32(f"{workload_id}/{index}".encode()))
        if role == "weight":
            values = rng.normal(0.0, math.sqrt(1.0 / fan_in), size=shape)
        elif role == "bias":
            values = rng.uniform(-0.1, 0.1, size=shape)
        else:
            values = rng.uniform(0.0, 1.0, size=shape)
        values.flags.writeable = False
        draws.append(values)
    return tuple(draws)
