"""Workload extraction from the Relax ResNets, ids, FLOPs, occurrences and inputs."""

import math
import re

import numpy as np
import pytest

from suite.core import workloads
from suite.core.workloads import SEED_ID

ID_PATTERN = re.compile(r"^resnet(18|50)(-nchw)?\.[a-z0-9_]+\.[0-9x]+(-k\d+s\d+(p\d+)?)?(-\d+)?$")


def test_resnet50_gives_31_fused_prim_funcs_with_readable_unique_ids():
    found = workloads.catalog("resnet50")
    ids = [w.id for w in found]
    assert len(ids) == 31
    assert len(set(ids)) == 31
    assert all(ID_PATTERN.match(i) for i in ids), ids
    assert "resnet50.conv2d_add_add_relu.56x56x64-k1s1-256" in ids
    assert "resnet50.conv2d_add_relu.224x224x3-k7s2-64" in ids
    assert "resnet50.max_pool2d.112x112x64-k3s2" in ids
    assert "resnet50.matmul_add.2048-1000" in ids


def test_occurrences_and_flops_add_up_to_the_whole_resnet50():
    found = workloads.catalog("resnet50")
    # 53 convolutions (each fused with its bias, residual and relu), max pool, mean, dense.
    assert sum(w.occurrences for w in found) == 56
    convs = [w for w in found if w.chain["steps"][0]["op"] == "conv2d"]
    assert sum(w.occurrences for w in convs) == 53
    total = sum(w.flops * w.occurrences for w in found)
    assert total == 8_206_520_296  # about 4.1 G multiply-adds, the textbook ResNet-50 cost
    by_id = {w.id: w for w in found}
    assert by_id["resnet50.conv2d_add_relu.14x14x256-k3s1-256"].occurrences == 5
    stem = by_id["resnet50.conv2d_add_relu.224x224x3-k7s2-64"]
    # 2 * (7*7*3) per output, plus bias add and relu per output element.
    assert stem.flops == 112 * 112 * 64 * (2 * 147 + 2)


def test_resnet18_and_nchw_variants():
    assert len(workloads.catalog("resnet18")) == 21
    nchw = workloads.catalog("resnet50-nchw")
    assert len(nchw) == 31
    assert all(w.id.startswith("resnet50-nchw.") for w in nchw)
    conv = nchw[0].chain["steps"][0]["attrs"]
    assert conv["data_layout"] == "NCHW" and conv["kernel_layout"] == "OIHW"


def test_op_chain_records_relax_attributes_and_roles():
    workload = workloads.get("resnet50.conv2d_add_relu.56x56x128-k3s2-128")
    conv, add, relu = workload.chain["steps"]
    assert conv["op"] == "conv2d" and add["op"] == "add" and relu["op"] == "relu"
    assert conv["attrs"]["strides"] == [2, 2]
    assert conv["attrs"]["padding"] == [1, 1, 1, 1]
    assert [i["role"] for i in workload.chain["inputs"]] == ["activation", "weight", "bias"]
    assert workload.chain["inputs"][1]["fan_in"] == 3 * 3 * 128
    assert workload.output_shape == [1, 28, 28, 128]


def test_seed_workload_is_the_conv2d_of_the_seed_issue():
    seed = workloads.get(SEED_ID)
    assert seed.input_shapes == [[1, 230, 230, 3], [7, 7, 3, 64]]
    assert seed.output_shape == [1, 112, 112, 64]
    assert seed.chain["steps"][0]["attrs"]["strides"] == [2, 2]
    assert seed.flops == 2 * 112 * 112 * 64 * 147
    func = workloads.prim_func(seed, "float16")
    text = func.script()
    assert "conv2d_nhwc" in text and '"float16"' in text
    # Accumulates in the output dtype, as in the seed issue: no float32 anywhere.
    assert "float32" not in text


def test_prim_func_per_dtype_has_the_chain_shapes():
    workload = workloads.get("resnet50.conv2d_add_radd_relu.56x56x64-k1s1-256")
    for dtype in workloads.DTYPES:
        text = workloads.prim_func(workload, dtype).script()
        assert f'"{dtype}"' in text
        assert "T.int64(56), T.int64(56), T.int64(256)" in text


def test_inputs_are_deterministic_and_scaled():
    workload = workloads.get("resnet50.conv2d_add_relu.56x56x64-k3s1-64")
    first = workloads.make_inputs(workload, "float32")
    again = workloads.make_inputs(workload, "float32")
    half = workloads.make_inputs(workload, "float16")
    for a, b, h in zip(first, again, half):
        np.testing.assert_array_equal(a, b)
        assert h.dtype == np.float16
        # The same draws, each rounded once to its dtype.
        np.testing.assert_allclose(h, a, rtol=2.0**-11, atol=2.0**-25)
    data, weight, bias = first
    assert data.min() >= 0 and data.max() < 1
    assert weight.std() == pytest.approx(math.sqrt(1 / 576), rel=0.02)
    assert np.abs(bias).max() <= 0.1
    data[...] = 7.0  # a caller's arrays are its own: the next call has the same draws
    np.testing.assert_array_equal(workloads.make_inputs(workload, "float32")[0], again[0])


def test_unknown_workload_lists_the_closest_ids():
    with pytest.raises(workloads.UnknownWorkload) as err:
        workloads.get("resnet50.conv2d_add_relu.56x56x64-k3s1-65")
    assert "resnet50.conv2d_add_relu.56x56x64-k3s1-64" in str(err.value)
    with pytest.raises(workloads.UnknownDtype, match="float32, float16"):
        workloads.check_dtype("bfloat16")
