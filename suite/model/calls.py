"""A whole model as the suite fuses it: its fused PrimFuncs in call order, and which tensor feeds
which argument of each call.

:mod:`suite.core.workloads` keeps one workload per fused PrimFunc (its op chain, shapes, how often
it occurs); a model run needs the call sites themselves. The same fusion (LegalizeOps,
AnnotateTIROpPattern, FuseOps, FuseTIR: ``workloads.fuse``) leaves a ``main`` whose bindings are
``call_tir(fused_function, args)`` in execution order; each argument is the image, a weight (a
parameter of ``main``) or the output of an earlier call. A call's arguments are, in order, the
inputs of its workload's op chain (checked shape by shape), so the float64 reference
(:mod:`suite.core.reference`) and the target's kernel take the same list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from suite import cache
from suite.compat import relax, release
from suite.core import models, workloads
from suite.core.workloads import Workload

#: Where a call's argument comes from: the model's input image, weight parameter k, or call j's output.
IMAGE, PARAM, CALL = "image", "param", "call"


@dataclass(frozen=True)
class Call:
    """Call site ``index`` of a model: ``workload``'s PrimFunc on ``args``, one ``(kind, index)``
    per input of its op chain (kind :data:`IMAGE`, :data:`PARAM` or :data:`CALL`)."""

    index: int
    workload: Workload
    args: tuple[tuple[str, int], ...]

    def summary(self) -> dict:
        return {"index": self.index, "workload": self.workload.id, "args": [list(a) for a in self.args]}


@dataclass(frozen=True)
class ModelCalls:
    """A model's calls in execution order; the last call's output is the model's (the logits)."""

    model: str
    image_shape: tuple[int, ...]
    param_shapes: tuple[tuple[int, ...], ...]
    calls: tuple[Call, ...]

    @property
    def layout(self) -> str:
        return models.parse_model_name(self.model)[1]

    def unique_workloads(self) -> list[Workload]:
        """The fused PrimFuncs the calls run, each once (one build each), in order of first call."""
        return list({call.workload.id: call.workload for call in self.calls}.values())

    def last_use(self) -> dict[int, int]:
        """Call index -> the index of the last call that reads its output (a value can be dropped after)."""
        used = {call.index: call.index for call in self.calls}
        for call in self.calls:
            for kind, source in call.args:
                if kind == CALL:
                    used[source] = call.index
        used[self.calls[-1].index] = len(self.calls)  # the logits are kept
        return used


def model_calls(model: str) -> ModelCalls:
    """The calls of ``model`` (a name of :func:`suite.core.models.model_names`), cached on disk per
    TVM build and the meaning of the code that fuses and reads it."""
    models.parse_model_name(model)
    code = {name: cache.source_digest(path) for name, path in _code_files().items()}
    where = cache.entry("model-calls", model, {"model": model, "tvm": release.build_id(), "code": code})
    found = cache.load_entry(where, ("calls.json",))
    stored = cache.read_json(found["calls.json"]) if found else None
    by_id = {w.id: w for w in workloads.catalog(model)}
    if not isinstance(stored, dict) or any(c["workload"] not in by_id for c in stored.get("calls", ())):
        stored = _extract(model, by_id)
        cache.store_entry(where, {"calls.json": lambda tmp: Path(tmp).write_text(json.dumps(stored))})
    calls = tuple(Call(i, by_id[c["workload"]], tuple((kind, index) for kind, index in c["args"]))
                  for i, c in enumerate(stored["calls"]))
    return ModelCalls(model, tuple(stored["image_shape"]), tuple(tuple(s) for s in stored["param_shapes"]), calls)


def _code_files() -> dict[str, Path]:
    """The suite's code that fuses a model and reads its calls, by its path under ``suite/``."""
    return {f"{path.parent.name}/{path.name}": path
            for path in (Path(models.__file__), Path(workloads.__file__), Path(__file__))}


def _extract(model: str, by_id: dict[str, Workload]) -> dict:
    """The call sequence of ``model``'s fused ``main`` (float32: the structure is that of every dtype)."""
    _, _, final = workloads.fuse(models.graph(model, "float32"))
    main = final["main"]
    by_name = {w.tvm_name: w for w in by_id.values()}
    image, *params = main.params
    source = {image: [IMAGE, 0], **{p: [PARAM, k] for k, p in enumerate(params)}}
    calls, last = [], None
    for binding in workloads.bindings(main):
        call = binding.value
        if getattr(getattr(call, "op", None), "name", None) != "relax.call_tir":
            raise RuntimeError(f"{model}: a binding of the fused main is not a call_tir: {call.op}")
        workload = by_name[call.args[0].name_hint]
        arguments = list(call.args[1])
        shapes = [relax.struct_shape(a) for a in arguments]
        if shapes != workload.input_shapes or relax.struct_shape(call) != workload.output_shape:
            raise RuntimeError(f"{model}: call {len(calls)} of {workload.id} takes {shapes}, "
                               f"its op chain {workload.input_shapes}")
        calls.append({"workload": workload.id, "args": [source[a] for a in arguments]})
        source[binding.var] = [CALL, len(calls) - 1]
        last = binding.var
    if last is None or not main.body.body.same_as(last):
        raise RuntimeError(f"{model}: the fused main does not return its last call's output")
    return {"image_shape": relax.struct_shape(image), "param_shapes": [relax.struct_shape(p) for p in params],
            "calls": calls}
