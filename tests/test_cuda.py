"""The cuda target: skipped with its reason where there is no GPU, measured like the others where
there is one. The schedule checks (dlight binds every ResNet-50 workload to GPU threads; the
committed GPU records replay) need no GPU and run everywhere."""

import pytest

from suite.compat import build
from suite.compat import schedules as compat_schedules
from suite.core import measurement, peers, schedules, timing, tuning_records, workloads
from suite.core.combo import Combo
from suite.core.record import Status
from suite.errors import OrderNotApplicable
from suite.targets import cuda

SEED = workloads.SEED_ID
CONV = "resnet50.conv2d_add_relu.56x56x64-k3s1-64"
#: An H100's target, spelled out, so GPU schedules can be built and checked without a GPU.
SM90 = {"kind": "cuda", "arch": "sm_90", "max_shared_memory_per_block": 49152,
        "max_threads_per_block": 1024, "thread_warp_size": 32}

needs_gpu = pytest.mark.skipif(cuda.gpu_info() is None, reason="no NVIDIA GPU on this machine")


def test_without_gpu_every_combination_is_a_skip_with_its_reason(monkeypatch):
    monkeypatch.setattr(cuda, "gpu_info", lambda: None)
    combos = [Combo.resolve(SEED, dtype, "cuda", order) for dtype in ("float16", "float32")
              for order in ("default", "tuned")]
    records = measurement.measure_many(combos, jobs=2)
    for record in records.values():
        assert record.status is Status.SKIPPED
        assert record.reason == "no NVIDIA GPU on this machine (nvidia-smi finds none)"


def test_measure_cuda_without_gpu_is_one_line_error(cli, tmp_path):
    done = cli("measure", "--workload", SEED, "--dtype", "float16", "--target", "cuda",
               env={"PATH": str(tmp_path)})  # no nvidia-smi on the PATH
    assert done.returncode == 2
    assert done.stderr == "tvm-suite: error: no NVIDIA GPU on this machine (nvidia-smi finds none)\n"


def test_cpu_loop_orders_are_skips_on_cuda():
    func = workloads.prim_func(workloads.get(SEED), "float16")
    for order in ("seed-swap", "reduction-outer", "seed-tuned"):
        with pytest.raises(OrderNotApplicable, match="CPU loop order"):
            cuda.CUDATarget().prepare(func, order)


@pytest.mark.slow
def test_dlight_binds_every_kind_of_resnet50_workload_to_gpu_threads():
    """One workload of each kind (the operator chain names the kind; dlight picks its rule by it)."""
    target = build.make_target(SM90)
    kinds = {}
    for workload in workloads.catalog("resnet50"):
        kinds.setdefault(workload.id.split(".")[1], workload)
    assert len(kinds) >= 5, sorted(kinds)
    for workload in kinds.values():
        for dtype in ("float16", "float32"):
            scheduled = compat_schedules.dlight_default_schedule(workloads.prim_func(workload, dtype), target)
            text = scheduled.script()
            assert "threadIdx.x" in text and "blockIdx.x" in text, (workload.id, dtype)


@pytest.mark.slow
def test_committed_gpu_records_replay_on_installed_tvm():
    """Tensor-core (wmma) fp16 traces need TVM's tensor intrinsics registered; they are."""
    for workload_id, tensor_cores in ((SEED, True), ("resnet50.max_pool2d.112x112x64-k3s2", False)):
        assert tuning_records.trace_path("cuda", "float16", workload_id).exists()
        func = workloads.prim_func(workloads.get(workload_id), "float16")
        text = schedules.apply(func, "tuned", workload_id, "float16", "cuda").script()
        assert "threadIdx.x" in text
        assert ("wmma" in text) == tensor_cores, workload_id


@needs_gpu
@pytest.mark.slow
def test_seed_on_gpu_default_and_tuned():
    records = {order: measurement.measure(Combo.resolve(SEED, "float16", "cuda", order)) for order in ("default", "tuned")}
    for order, record in records.items():
        assert record.ok, (order, record.reason)
        assert timing.take(Combo.resolve(SEED, "float16", "cuda", order)).median > 0
        m = record.metrics
        assert m["nonfinite"] == 0 and m["bound_fraction"] < 1.0, (order, m)
    divergence = measurement.divergence(Combo.resolve(SEED, "float16", "cuda", "tuned"))
    assert 0 < divergence["differ_fraction"] <= 1 and divergence["exceeds_bound"] == 0.0


@needs_gpu
@pytest.mark.skipif(not peers.available(), reason="PyTorch is not installed")
def test_pytorch_peer_on_gpu_matches_reference():
    import numpy as np

    ref, _ = measurement.reference_arrays(workloads.get(CONV), "float32")
    out = peers.pytorch_output(CONV, "float32", "cuda")
    assert out.shape == ref.shape
    assert np.max(np.abs(out - ref)) <= 1e-4 * np.max(np.abs(ref))  # TF32 off: float32 accuracy
    timed = peers.pytorch_latency(CONV, "float32", "cuda")
    assert timed["timed_as"] == "cuda-graph replay" and timed["latency_s"] > 0
    # The replay launches the same kernels without Python's dispatch between them.
    assert timed["latency_s"] < timed["eager_latency_s"]


@needs_gpu
@pytest.mark.skipif(not peers.available(), reason="PyTorch is not installed")
def test_graph_replay_computes_what_eager_computes():
    """The timed CUDA graph computes the layer: its output is the eager chain's (cuDNN's algorithm
    search runs before the capture, so both use the same algorithms)."""
    import numpy as np

    eager = peers.pytorch_output(CONV, "float16", "cuda")
    replayed = peers.pytorch_output(CONV, "float16", "cuda", graph=True)
    assert replayed.shape == eager.shape
    assert np.array_equal(replayed, eager)
