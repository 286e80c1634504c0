"""Loop orders applied with TVM's schedule primitives, checked against the seed issue's TVMScript.

The seed issue's modules are written below in today's (0.27) TVMScript syntax: ``tirx``,
``@T.prim_func(s_tir=True)``, ``T.sblock``, ``T.sblock_alloc_buffer``, ``"tirx.noalias"``.
"""

import functools

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from suite.compat import schedules as compat_schedules
from suite.core import measurement, metrics, schedules, workloads
from suite.core.combo import Combo
from suite.core.record import Status
from suite.errors import OrderNotApplicable

SEED = workloads.SEED_ID
RESNET_CONV = "resnet50.conv2d_add_relu.56x56x64-k3s1-64"
MAX_POOL = "resnet50.max_pool2d.112x112x64-k3s2"


# ----------------------------------------------------------------------------- the seed issue
#
# Each PrimFunc is parsed by the first test that asks for it, once (functools.cache), not when
# the module is imported: every pytest-xdist worker imports every test module.


@functools.cache
def issue_conv2d():
    @T.prim_func(s_tir=True)
    def issue_conv2d(lv1: T.Buffer((1, 230, 230, 3), "float16"), param_0: T.Buffer((7, 7, 3, 64), "float16"), conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float16")):
        T.func_attr({"global_symbol": "conv2d", "tirx.noalias": True})
        for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 112, 112, 64, 7, 7, 3):
            with T.sblock("conv2d_nhwc"):
                nn, yy, xx, ff, ry, rx, rc = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, i4, i5, i6])
                T.reads(lv1[nn, yy * 2 + ry, xx * 2 + rx, rc], param_0[ry, rx, rc, ff])
                T.writes(conv2d_nhwc[nn, yy, xx, ff])
                with T.init():
                    conv2d_nhwc[nn, yy, xx, ff] = T.float16(0)
                conv2d_nhwc[nn, yy, xx, ff] = conv2d_nhwc[nn, yy, xx, ff] + lv1[nn, yy * 2 + ry, xx * 2 + rx, rc] * param_0[ry, rx, rc, ff]
    return issue_conv2d


# The issue's module after `sch.reorder(i4, i3)`.
@functools.cache
def issue_swapped():
    @T.prim_func(s_tir=True)
    def issue_swapped(lv1: T.Buffer((1, 230, 230, 3), "float16"), param_0: T.Buffer((7, 7, 3, 64), "float16"), conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float16")):
        T.func_attr({"tirx.noalias": True, "global_symbol": "conv2d"})
        for i0, i1, i2, i4, i3, i5, i6 in T.grid(1, 112, 112, 7, 64, 7, 3):
            with T.sblock("conv2d_nhwc"):
                nn, yy, xx, ff, ry, rx, rc = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, i4, i5, i6])
                T.reads(lv1[nn, yy * 2 + ry, xx * 2 + rx, rc], param_0[ry, rx, rc, ff])
                T.writes(conv2d_nhwc[nn, yy, xx, ff])
                with T.init():
                    conv2d_nhwc[nn, yy, xx, ff] = T.float16(0)
                conv2d_nhwc[nn, yy, xx, ff] = (conv2d_nhwc[nn, yy, xx, ff] + lv1[nn, yy * 2 + ry, xx * 2 + rx, rc] * param_0[ry, rx, rc, ff])
    return issue_swapped


# The issue's MetaSchedule-tuned PrimFunc. Two things are written as today's TVM writes them,
# not as the 2022 printout: the unroll annotations are plain ints (0.27 stores annotation
# integers as such; the 2022 text has T.int64(512) / T.int64(1)), and the xx bindings read
# `fused % 7 * 16 + i2_1 + i2_2`, the term order today's arithmetic simplifier gives for the
# same sum that the 2022 text prints as `i2_2 + fused % 7 * 16 + i2_1`.
@functools.cache
def issue_tuned():
    @T.prim_func(s_tir=True)
    def issue_tuned(lv1: T.Buffer((1, 230, 230, 3), "float16"), param_0: T.Buffer((7, 7, 3, 64), "float16"), conv2d_nhwc: T.Buffer((1, 112, 112, 64), "float16")):
        T.func_attr({"tirx.noalias": True, "global_symbol": "conv2d"})
        conv2d_nhwc_global = T.sblock_alloc_buffer((1, 112, 112, 64), "float16")
        for i0_0_i1_0_i2_0_fused in T.parallel(196, annotations={"pragma_auto_unroll_max_step": 512, "pragma_unroll_explicit": 1}):
            for i3_0 in T.serial(1):
                for i0_1_init, i1_1_init, i2_1_init, i3_1_init, i0_2_init, i1_2_init, i2_2_init in T.grid(1, 2, 16, 1, 1, 2, 1):
                    for i3_2_fused_init in T.vectorized(64):
                        with T.sblock("conv2d_nhwc_init"):
                            nn = T.axis.spatial(1, i0_1_init + i0_2_init)
                            yy = T.axis.spatial(112, i0_0_i1_0_i2_0_fused // 7 * 4 + i1_1_init * 2 + i1_2_init)
                            xx = T.axis.spatial(112, i0_0_i1_0_i2_0_fused % 7 * 16 + i2_1_init + i2_2_init)
                            ff = T.axis.spatial(64, i3_0 * 64 + i3_1_init * 64 + i3_2_fused_init)
                            T.reads()
                            T.writes(conv2d_nhwc_global[nn, yy, xx, ff])
                            T.sblock_attr({"meta_schedule.tiling_structure": "SRSRS"})
                            conv2d_nhwc_global[nn, yy, xx, ff] = T.float16(0)
                for i4_0, i5_0, i6_0 in T.grid(1, 7, 1):
                    for i0_1, i1_1, i2_1, i3_1, i4_1, i5_1, i6_1, i0_2, i1_2, i2_2 in T.grid(1, 2, 16, 1, 7, 1, 3, 1, 2, 1):
                        for i3_2_fused in T.vectorized(64):
                            with T.sblock("conv2d_nhwc_update"):
                                nn = T.axis.spatial(1, i0_1 + i0_2)
                                yy = T.axis.spatial(112, i0_0_i1_0_i2_0_fused // 7 * 4 + i1_1 * 2 + i1_2)
                                xx = T.axis.spatial(112, i0_0_i1_0_i2_0_fused % 7 * 16 + i2_1 + i2_2)
                                ff = T.axis.spatial(64, i3_0 * 64 + i3_1 * 64 + i3_2_fused)
                                ry = T.axis.reduce(7, i4_0 * 7 + i4_1)
                                rx = T.axis.reduce(7, i5_0 + i5_1)
                                rc = T.axis.reduce(3, i6_0 * 3 + i6_1)
                                T.reads(conv2d_nhwc_global[nn, yy, xx, ff], lv1[nn, yy * 2 + ry, xx * 2 + rx, rc], param_0[ry, rx, rc, ff])
                                T.writes(conv2d_nhwc_global[nn, yy, xx, ff])
                                T.sblock_attr({"meta_schedule.tiling_structure": "SRSRS"})
                                conv2d_nhwc_global[nn, yy, xx, ff] = conv2d_nhwc_global[nn, yy, xx, ff] + lv1[nn, yy * 2 + ry, xx * 2 + rx, rc] * param_0[ry, rx, rc, ff]
                    for ax0, ax1, ax2 in T.grid(1, 4, 16):
                        for ax3_fused in T.vectorized(64):
                            with T.sblock("conv2d_nhwc_global"):
                                v0 = T.axis.spatial(1, ax0)
                                v1 = T.axis.spatial(112, i0_0_i1_0_i2_0_fused // 7 * 4 + ax1)
                                v2 = T.axis.spatial(112, i0_0_i1_0_i2_0_fused % 7 * 16 + ax2)
                                v3 = T.axis.spatial(64, ax3_fused)
                                T.reads(conv2d_nhwc_global[v0, v1, v2, v3])
                                T.writes(conv2d_nhwc[v0, v1, v2, v3])
                                conv2d_nhwc[v0, v1, v2, v3] = conv2d_nhwc_global[v0, v1, v2, v3]
    return issue_tuned


# ----------------------------------------------------------------------------- helpers


def seed_func(dtype="float16"):
    return workloads.prim_func(workloads.seed_workload(), dtype)


def same_attrs(func):
    """Function attributes made equal: the TE-built seed is `main` and marks its weight
    layout-free; the issue's function is `conv2d`. Schedules never touch either."""
    return func.with_attr("global_symbol", "conv2d").with_attr("layout_free_buffers", [1])


def reduction_loops(func):
    """(extents, kinds) of the loops around the reduction block of ``func``, outer to inner."""
    sch = compat_schedules.schedule(func)
    block = schedules.reduction_block(sch)
    loops = schedules.loop_kinds(sch, block)
    return [int(sch.get(loop).extent) for loop, _ in loops], "".join(kind for _, kind in loops)


def inline_padding(func):
    """The TE seed's zero-padding copy `pad_temp` folded into the conv2d (absent in the issue)."""
    sch = compat_schedules.schedule(func)
    sch.compute_inline(compat_schedules.get_block(sch, "pad_temp"))
    return sch.mod["main"]


# ----------------------------------------------------------------------------- structure


def test_default_is_the_prim_func_unchanged():
    func = seed_func()
    assert schedules.apply(func, "default", SEED, "float32", "llvm").same_as(func)


def test_orders_are_checked():
    assert schedules.ORDERS == ("default", "seed-swap", "reduction-outer", "tuned", "seed-tuned", "seed-swap-vec")
    with pytest.raises(schedules.UnknownOrder, match="valid orders: default, seed-swap"):
        schedules.apply(seed_func(), "sorted", SEED, "float32", "llvm")


def test_seed_swap_is_the_issues_reorder():
    # On the issue's own PrimFunc: exactly the module the issue shows after reorder(i4, i3).
    swapped = schedules.apply(issue_conv2d(), "seed-swap", SEED, "float32", "llvm")
    tvm.ir.assert_structural_equal(swapped, issue_swapped())
    # The loop order nn,yy,xx,ry,ff,rx,rc on the TE-built seed conv2d.
    scheduled = schedules.apply(seed_func(), "seed-swap", SEED, "float32", "llvm")
    assert reduction_loops(seed_func()) == ([1, 112, 112, 64, 7, 7, 3], "SSSSRRR")
    assert reduction_loops(scheduled) == ([1, 112, 112, 7, 64, 7, 3], "SSSRSRR")
    loop_names = [sch_loop.loop_var.name for sch_loop in _loops_of(scheduled)]
    assert loop_names == ["nn", "yy", "xx", "ry", "ff", "rx", "rc"]
    # Structurally the issue's swapped module once TE's padding copy is inlined.
    tvm.ir.assert_structural_equal(
        same_attrs(inline_padding(scheduled)), same_attrs(issue_swapped()), map_free_vars=True
    )
    # And the default is the issue's untuned module the same way.
    tvm.ir.assert_structural_equal(
        same_attrs(inline_padding(seed_func())), same_attrs(issue_conv2d()), map_free_vars=True
    )


def _loops_of(func):
    sch = compat_schedules.schedule(func)
    return [sch.get(loop) for loop in sch.get_loops(schedules.reduction_block(sch))]


def test_seed_tuned_is_the_issues_tuned_prim_func():
    tuned = schedules.apply(seed_func("float16"), "seed-tuned", SEED, "float16", "llvm")
    tvm.ir.assert_structural_equal(same_attrs(tuned), same_attrs(issue_tuned()), map_free_vars=True)
    # The same schedule on the issue's own PrimFunc (no padding copy to inline).
    tvm.ir.assert_structural_equal(schedules.apply(issue_conv2d(), "seed-tuned", SEED, "float32", "llvm"), issue_tuned())


def test_reduction_outer_puts_every_reduction_loop_outermost():
    workload = workloads.get(RESNET_CONV)
    func = workloads.prim_func(workload, "float32")
    assert reduction_loops(func) == ([1, 56, 56, 64, 3, 3, 64], "SSSSRRR")
    scheduled = schedules.apply(func, "reduction-outer", workload.id, "float32", "llvm")
    assert reduction_loops(scheduled) == ([3, 3, 64, 1, 56, 56, 64], "RRRSSSS")
    names = [loop.loop_var.name for loop in _loops_of(scheduled)]
    assert names[:3] == ["ry", "rx", "rc"]
    # Applying it again has nothing to move; seed-swap has nothing to move either.
    with pytest.raises(OrderNotApplicable, match="already outermost"):
        schedules.apply(scheduled, "reduction-outer", workload.id, "float32", "llvm")
    with pytest.raises(OrderNotApplicable, match="already above its last spatial loop"):
        schedules.apply(scheduled, "seed-swap", workload.id, "float32", "llvm")


def test_max_pool_is_a_max_reduction_so_the_orders_apply():
    # pool_max has reduction iter vars (SSSSRR: a max over the 3x3 window), so seed-swap
    # moves rv0 above ax3 like any other reduction loop.
    workload = workloads.get(MAX_POOL)
    func = workloads.prim_func(workload, "float16")
    assert reduction_loops(func) == ([1, 56, 56, 64, 3, 3], "SSSSRR")
    scheduled = schedules.apply(func, "seed-swap", workload.id, "float32", "llvm")
    assert reduction_loops(scheduled) == ([1, 56, 56, 3, 64, 3], "SSSRSR")


# ----------------------------------------------------------------------------- not applicable


@functools.cache
def elementwise():
    @T.prim_func(s_tir=True)
    def elementwise(a: T.Buffer((8, 8), "float32"), b: T.Buffer((8, 8), "float32")):
        for i, j in T.grid(8, 8):
            with T.sblock("b"):
                vi, vj = T.axis.remap("SS", [i, j])
                b[vi, vj] = a[vi, vj] + T.float32(1)
    return elementwise


@functools.cache
def shared_outer_loop():
    @T.prim_func(s_tir=True)
    def shared_outer_loop(a: T.Buffer((4, 4), "float32"), c: T.Buffer((4,), "float32"), d: T.Buffer((4,), "float32")):
        for i in range(4):
            for k in range(4):
                with T.sblock("c"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        c[vi] = T.float32(0)
                    c[vi] = c[vi] + a[vi, vk]
            for j in range(1):
                with T.sblock("d"):
                    vi = T.axis.spatial(4, i + j)
                    d[vi] = c[vi] * T.float32(2)
    return shared_outer_loop


def test_seed_tuned_is_the_seed_workloads_only():
    workload = workloads.get(RESNET_CONV)
    with pytest.raises(OrderNotApplicable) as info:
        schedules.apply(workloads.prim_func(workload, "float16"), "seed-tuned", workload.id, "float16", "llvm")
    assert str(info.value) == "seed-tuned is the seed issue's schedule of seed.conv2d_nhwc_7x7s2 only"


@pytest.mark.parametrize("order", ["seed-swap", "reduction-outer"])
def test_a_reduction_free_func_has_nothing_to_reorder(order):
    with pytest.raises(OrderNotApplicable, match="no reduction block"):
        schedules.apply(elementwise(), order, "test.elementwise", "float32", "llvm")


def test_tvms_refusal_becomes_the_reason():
    # k cannot move above i: i also holds the loop of block "d", so the loops are no chain.
    with pytest.raises(OrderNotApplicable) as info:
        schedules.apply(shared_outer_loop(), "reduction-outer", "test.shared", "float32", "llvm")
    reason = str(info.value)
    assert reason.startswith("reduction-outer: TVM refused it: ")
    assert "\n" not in reason and "@T.prim_func" not in reason
    assert "chain" in reason.lower() or "single" in reason.lower(), reason


def test_an_inapplicable_order_is_recorded_as_a_skip():
    record = measurement.measure(Combo.resolve(RESNET_CONV, "float16", "llvm", "seed-tuned"))
    assert record.status is Status.SKIPPED
    assert record.reason == "seed-tuned is the seed issue's schedule of seed.conv2d_nhwc_7x7s2 only"


# ----------------------------------------------------------------------------- numerics


def test_seed_swap_keeps_each_elements_summation_order():
    for order in ("default", "seed-swap"):
        assert measurement.measure(Combo.resolve(SEED, "float32", "llvm", order)).ok
    default = measurement.output(Combo.resolve(SEED, "float32", "llvm", "default"))
    swapped = measurement.output(Combo.resolve(SEED, "float32", "llvm", "seed-swap"))
    assert metrics.divergence(default, swapped) == {"differ_fraction": 0.0, "max_ulp_distance": 0.0}
    np.testing.assert_array_equal(default, swapped)


def test_seed_tuned_fp16_differs_from_default_but_both_stay_in_the_rounding_bound():
    records = {order: measurement.measure(Combo.resolve(SEED, "float16", "llvm", order)) for order in ("default", "seed-tuned")}
    for record in records.values():
        assert record.ok, record
        assert 0 < record.metrics["bound_fraction"] < 1
        assert record.metrics["nonfinite"] == 0
    default = measurement.output(Combo.resolve(SEED, "float16", "llvm", "default"))
    tuned = measurement.output(Combo.resolve(SEED, "float16", "llvm", "seed-tuned"))
    divergence = metrics.divergence(default, tuned)
    # Summing rx outermost changes the fp16 rounding of most outputs (the issue's finding).
    assert divergence["differ_fraction"] > 0.5, divergence
    # (max_ulp_distance is large only where cancellation leaves outputs near zero.)
    assert divergence["max_ulp_distance"] > 0
    # Neither order is the better one: their mean ULP errors are alike.
    ulp_default = records["default"].metrics["ulp_mean"]
    ulp_tuned = records["seed-tuned"].metrics["ulp_mean"]
    assert 0.5 < ulp_tuned / ulp_default < 2
