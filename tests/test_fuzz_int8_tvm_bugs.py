"""The two TVM bugs the int8 fuzz campaign found (docs/int8-tuned.md, "TVM bugs found"), at their
smallest, as the campaign's worker answers them: each a CRASH that names the lowering pass TVM's
check failed in, so that the finding's key (its message's first line) says where to look."""

from suite.compat import intrinsics
from suite.compat import schedules as compat_schedules
from suite.core import dot_product, workloads
from suite.fuzz import findings, shrink, worker
from suite.fuzz.outcome import Outcome

#: ResNet-18's classifier made small (suite.fuzz.shrink): uint8 [1, 4] x int8 [4, 32], one 4-deep
#: dot product per output, two blocks of 16 output channels for a 16x4 dot-product intrinsic.
CHAIN = {"inputs": [{"shape": [1, 4], "role": "activation"}, {"shape": [4, 32], "role": "weight", "fan_in": 4}],
         "steps": [{"op": "matmul", "args": [["input", 0], ["input", 1]], "attrs": {}}], "output_shape": [1, 32]}
WORKLOAD = "resnet18.matmul_add.512-1000"


def _plain(value):
    """A schedule's JSON trace (TVM's containers) as the plain lists a worker request carries."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "value"):
        return value.value
    return [_plain(item) for item in value]


def _traces(func) -> dict[str, list]:
    """The two schedules, as MetaSchedule's postprocessors leave them in the sampled traces: a
    tensorized block in a vectorized loop (RewriteParallelVectorizeUnroll vectorizes the loop
    over the 16-channel blocks, RewriteTensorize tensorizes inside it), and a vectorized loop in a
    vectorized loop (RewriteTensorize's vectorized init loop inside the vectorized block loop)."""
    tensorized = compat_schedules.schedule(func)
    assert dot_product.pack_weights_in(tensorized, CHAIN)  # the 16x4 blocks the intrinsic reads
    block = tensorized.get_sblock("matmul")
    i, j, k = tensorized.get_loops(block)
    j_block, j_lane = tensorized.split(j, [None, 16])
    k_block, k_lane = tensorized.split(k, [None, 4])
    tensorized.reorder(i, k_block, j_block, j_lane, k_lane)
    tensorized.vectorize(j_block)
    tensorized.decompose_reduction(block, k_block)
    tensorized.tensorize(j_lane, intrinsics.dot_product_intrinsic_name("dot_16x4_vnni"))
    nested = compat_schedules.schedule(func)
    _, j = nested.get_loops(nested.get_sblock("requantize"))
    outer, inner = nested.split(j, [None, 16])
    nested.vectorize(outer)
    nested.vectorize(inner)
    return {"tensorized": _plain(tensorized.trace.as_json()), "nested": _plain(nested.trace.as_json())}


def test_the_int8_campaigns_tvm_crashes_name_the_pass_that_raised(tmp_path):
    """About 2.5 CPU-seconds (the schedules made here, one worker child's TVM import, two lowerings
    that stop at the failing pass; no kernel is compiled). The campaign's two crashes were filed
    under TVM's check alone ("Cannot broadcast lanes=64 ... to 256", "VectorizeLoop before
    LiftStorageAlloc"); the first is raised in tirx.VectorizeLoop, the second in
    tirx.StorageRewrite, on a loop VectorizeLoop left vectorized: each CRASH now says so."""
    small = shrink.workload(workloads.get(WORKLOAD), CHAIN)
    traces = _traces(shrink.prim_func(small, "int8"))
    child = worker.Worker(tmp_path / "work", scratch=tmp_path)
    try:
        answers = {name: child.ask({"workload": WORKLOAD, "chain": CHAIN, "dtype": "int8", "target": "llvm",
                                    "trace": trace, "dir": str(tmp_path / name)}, 300)
                   for name, trace in traces.items()}
    finally:
        child.close()
    tensorized, nested = answers["tensorized"]["failure"], answers["nested"]["failure"]
    assert tensorized["outcome"] == nested["outcome"] == "CRASH", answers
    assert tensorized["message"].startswith(
        "TVM failed an internal check in tirx.VectorizeLoop (InternalError): Check failed: (e.ty().IsScalar()) "
        "is false: Cannot broadcast lanes="), answers
    assert nested["message"] == (
        "TVM failed an internal check in tirx.StorageRewrite (InternalError): Check failed: "
        "(op->kind != ForKind::kVectorized) is false: VectorizeLoop before LiftStorageAlloc"), answers
    # TVM's error and traceback kept with each, as a finding keeps them
    assert "vectorize_loop.cc" in (tmp_path / "tensorized" / worker.LOG).read_text()
    assert "storage_rewrite.cc" in (tmp_path / "nested" / worker.LOG).read_text()
    # one bug, one key: the campaign's own crash of this check, on its 4-iteration loop, is the same finding
    campaigns = tensorized["message"].split("lanes=")[0] + "lanes=64 is_scalable=0 to 256"
    assert findings.dedup_key(Outcome.CRASH, "trace 1", campaigns, None) == findings.dedup_key(
        Outcome.CRASH, "trace 4", tensorized["message"], None) == (
        "CRASH: TVM failed an internal check in tirx.VectorizeLoop (InternalError): Check failed: "
        "(e.ty().IsScalar()) is false: Cannot broadcast lanes=N is_scalable=N to N")
