"""`tvm-suite model`: a whole model call by call on llvm against its float64 evaluation, and the
attribution of its error to the calls. On ``miniresnet`` (models.py: ResNet's ops and data flow on
a 32x32 image, 9 calls), whose kernels build in seconds."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from suite import targets, tracked
from suite.model import accuracy as model_accuracy
from suite.model import calls as model_calls
from suite.model import chain as model_chain
from suite.model import grid as model_grid
from suite.model import settings as model_settings
from suite.model import store as model_store
from suite.model import weights as model_weights
from suite.model.results import Apart, SettingResult, Status
from suite.model.settings import Setting

MODEL = "miniresnet"


@pytest.fixture(scope="module")
def plan():
    return model_calls.model_calls(MODEL)


def evaluate(plan, dtypes=("float32",), orders=("default",), count=3, attribute=False):
    llvm = targets.get("llvm")
    return model_accuracy.evaluate(plan, model_settings.settings_to_run(list(dtypes), [llvm], list(orders), llvm),
                                   count, attribute=attribute)


def result(found, dtype="float32", target="llvm", order="default") -> SettingResult:
    return found.result(dtype, target, order)


def json_result(found: dict, dtype="float32", target="llvm", order="default") -> dict:
    """A setting's result in the JSON the command printed."""
    return next(r for r in found["results"] if (r["dtype"], r["target"], r["order"]) == (dtype, target, order))


@pytest.fixture(scope="module")
def fp32_attributed(plan):
    return evaluate(plan, attribute=True)


def test_the_calls_are_the_fused_main_in_order_with_its_data_flow(plan):
    ids = [c.workload.id for c in plan.calls]
    assert len(ids) == 9 and ids[0] == "miniresnet.conv2d_add_relu.32x32x3-k3s1-8"
    assert ids[-1] == "miniresnet.matmul_add.16-10"
    # The identity block's residual is the pool's output; the downsampling block's 1x1 shortcut
    # (fused with the residual add) reads the identity block's output and the block's second conv.
    assert plan.calls[3].args == (("call", 2), ("param", 4), ("param", 5), ("call", 1))
    assert plan.calls[6].workload.id == "miniresnet.conv2d_add_radd_relu.16x16x8-k1s2-16"
    assert plan.calls[6].args == (("call", 3), ("param", 6), ("param", 7), ("call", 5))
    assert plan.image_shape == (1, 32, 32, 3) and len(plan.param_shapes) == 14


def test_the_chained_kernels_are_tvms_whole_model_bit_for_bit(plan):
    """The call sequence and its data flow are the model's: the calls chained on llvm give exactly
    the logits of TVM's own build of the fused module, run by the Relax VM."""
    import tvm
    from tvm import relax

    from suite.core import models, workloads

    params = [p.astype("float32") for p in model_weights.weights(plan)]
    image = model_weights.images(plan, 1)[0].astype("float32")
    llvm = targets.get("llvm")
    _, _, fused = workloads.fuse(models.graph(MODEL, "float32"))
    vm = relax.VirtualMachine(tvm.compile(fused, target=llvm.tvm_target()), tvm.cpu())
    whole = vm["main"](*[tvm.runtime.tensor(a) for a in (image, *params)]).numpy()
    kernels = model_settings.kernels(plan, Setting("float32", llvm, "default"))
    chained = model_chain.target_forward(plan, kernels, image, params, "float32")
    np.testing.assert_array_equal(chained, whole)


def test_weights_and_images_are_seeded_and_of_a_sane_scale(plan):
    first, again = model_weights.weights(plan), model_weights.weights(plan)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    pictures = model_weights.images(plan, 6)
    assert np.array_equal(pictures[2], model_weights.images(plan, 3)[2])  # image i whatever the count
    colours = np.array([p.mean(axis=(0, 1, 2)) for p in pictures])  # as ImageNet-normalized photographs:
    assert np.all(np.abs(colours) < 2) and colours.std(axis=0).min() > 0.1  # each image its own colour cast
    assert all(0.3 < p.std(axis=(0, 1, 2)).min() and p.std(axis=(0, 1, 2)).max() < 2 for p in pictures)
    outputs = [model_chain.forward(plan, image, first) for image in pictures]
    for call in plan.calls[:-1]:  # batch norm folded: every activation of order 1
        spread = np.std([o[call.index] for o in outputs])
        assert 0.1 < spread < 3, (call.workload.id, spread)
    logits = np.concatenate([o[-1] for o in outputs])
    assert 0.3 < logits.std() < 3
    assert len(set(np.argmax(logits, axis=1))) > 1  # the classes differ from image to image


def test_a_float64_placement_has_no_error(plan):
    params = model_weights.weights(plan)
    image = model_weights.images(plan, 1)[0]
    exact = model_chain.forward(plan, image, params)
    for call in plan.calls:
        placed = model_chain.forward(plan, image, params, call.index, exact,
                                        replaced={call.index: exact[call.index]})
        np.testing.assert_array_equal(placed[-1], exact[-1])
    zero = {c.index: np.zeros_like(exact[c.index]) for c in plan.calls}
    np.testing.assert_array_equal(model_chain.forward(plan, image, params, local_errors=zero)[-1], exact[-1])


def test_fp32_llvm_is_close_to_float64_but_not_exact(fp32_attributed):
    found, logits = fp32_attributed
    r = result(found)
    assert r.status is Status.MEASURED and r.requested
    m = r.metrics
    assert 0 < m.max_abs_error < 1e-4 and 0 < m.mean_abs_error <= m.max_abs_error
    assert 0 <= m.top1_agreement <= 1 and m.top1_agreement <= m.top5_agreement <= 1
    assert m.rmse_ratio == 1 and m.rmse_ratio_fp32 == 1 and m.within_torch_rule
    assert m.vs_llvm == Apart(0.0, 0.0) and m.nonfinite == 0
    assert logits["float32.llvm.default"].shape == (3, 10) and logits["float32.float64"].dtype == np.float64
    assert r.seconds_per_input.target > 0


def test_the_attribution_of_a_real_run_adds_up(fp32_attributed):
    a = result(fp32_attributed[0]).attribution
    assert [c.rank for c in a.calls] == list(range(1, 10))
    assert sorted(c.index for c in a.calls) == list(range(9))
    shares = [c.only_share for c in a.calls]
    assert shares == sorted(shares, reverse=True) and all(s > 0 for s in shares)
    assert a.sum_only_share == pytest.approx(sum(shares))
    assert a.interaction_share == pytest.approx(1 - a.sum_only_share)
    last = next(c for c in a.calls if c.index == 8)  # the logits' own call: its local error is theirs
    assert last.only_rmse == pytest.approx(last.local_rmse)


def test_a_planted_wrong_kernel_is_ranked_first(plan, monkeypatch, unkept):
    """A kernel off by 1e-3 on every element of call 4 (a mid-model convolution): the attribution
    puts it first, with almost all of the error, and its local error stands out."""
    real = model_chain.run_call

    def planted(built, call, inputs, dtype, **tally):
        output = real(built, call, inputs, dtype, **tally)
        return output + np.asarray(1e-3, dtype) if call.index == 4 else output

    monkeypatch.setattr(model_chain, "run_call", planted)
    a = result(evaluate(plan, count=2, attribute=True)[0]).attribution
    first = a.calls[0]
    assert first.index == 4 and first.only_share > 0.9 and first.without_share > 0.9
    assert first.local_rmse > 100 * max(c.local_rmse for c in a.calls[1:])


def test_the_call_whose_tuned_kernel_differs_is_named_against_default(plan, monkeypatch, unkept):
    """The seed's question: tuned and default give other logits; which call's kernel makes the
    difference? Call 5's kernel, planted to be off by 1e-3 in ``tuned`` only, gets all of it; every
    call whose two kernels agree gets exactly 0."""
    real_kernels, real_run = model_settings.kernels, model_chain.run_call
    tuned = set()

    def kernels(plan_, setting):
        found = real_kernels(plan_, setting)
        if setting.order == "tuned":
            found.built = {w: dataclasses.replace(b) for w, b in found.built.items()}  # its own objects
            tuned.update(id(b) for b in found.built.values())
        return found

    def planted(built, call, inputs, dtype, **tally):
        output = real_run(built, call, inputs, dtype, **tally)
        return output + np.asarray(1e-3, dtype) if call.index == 5 and id(built) in tuned else output

    monkeypatch.setattr(model_settings, "kernels", kernels)
    monkeypatch.setattr(model_chain, "run_call", planted)
    found, _ = evaluate(plan, orders=("default", "tuned"), count=2, attribute=True)
    apart = result(found, order="tuned").attribution.vs_default
    assert apart.total_mse > 0 and apart.sum_share == pytest.approx(1, abs=0.1)
    first, *rest = apart.calls
    assert (first.index, first.rank) == (5, 1) and first.share == pytest.approx(1, abs=0.1)
    assert all(c.rmse == 0 and c.share == 0 for c in rest)
    assert result(found, order="default").attribution.vs_default is None


def test_without_a_tuned_kernel_nothing_differs_from_default(cli, tmp_path):
    """miniresnet has no tuning records: ``tuned`` runs the default kernels, and the attribution
    against default says that no call differs (no share of a zero difference is invented)."""
    done = cli("model", "--model", MODEL, "--dtypes", "float32", "--orders", "default,tuned", "--inputs", "1",
               "--attribute", "--json", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tuned against default (float32 llvm)" in done.stderr
    assert "no call's kernel gives other outputs in the two orders" in done.stderr
    apart = json_result(json.loads(done.stdout), order="tuned")["attribution"]["vs_default"]
    page = (tmp_path / "model.html").read_text()
    assert "tuned against default (float32, llvm):</strong> no call's kernel gives other outputs" in page
    assert apart["total_mse"] == 0 and apart["sum_share"] is None
    assert all(c["rmse"] == 0 and c["share"] is None for c in apart["calls"])


def test_fp16_errs_more_than_fp32_and_is_judged_against_its_own_eager(plan):
    found, _ = evaluate(plan, dtypes=("float16",), count=3)
    fp16, fp32 = result(found, "float16"), result(found, "float32")
    assert fp16.requested and not fp32.requested  # fp32 llvm default: the baseline of RMSE/fp32
    assert fp16.metrics.max_abs_error > 100 * fp32.metrics.max_abs_error
    assert fp16.metrics.rmse_ratio == 1 and fp16.metrics.rmse_ratio_fp32 > 100
    assert fp16.metrics.torch_multiplier == 3.0


def test_json_is_the_whole_stdout_and_the_table_goes_to_stderr(cli, tmp_path):
    done = cli("model", "--model", MODEL, "--dtypes", "float32", "--orders", "default", "--inputs", "2", "--json",
               "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["model"] == MODEL and found["inputs"] == 2 and "synthetic" in found["data"]
    assert len(found["calls"]) == 9 and found["calls"][1]["args"] == [["call", 0]]
    metrics = json_result(found)["metrics"]
    assert {"max_abs_error", "mean_abs_error", "rmse", "rmse_ratio", "rmse_ratio_fp32", "top1_agreement",
            "top5_agreement", "vs_llvm"} <= set(metrics)
    assert "top-1" in done.stderr and "max|err|" in done.stderr
    assert json.loads((tmp_path / "model.json").read_text())["results"] == found["results"]
    kept = np.load(tmp_path / f"{MODEL}.float32.llvm.default.logits.npy")
    assert kept.shape == (2, 10) and kept.dtype == np.float32
    page = (tmp_path / "model.html").read_text()
    assert "Whole model: miniresnet" in page and "Logits against float64" in page and "no pretrained weights" in page


def test_a_model_html_of_the_users_is_never_replaced(cli, tmp_path):
    (tmp_path / "model.html").write_text("mine")
    done = cli("model", "--model", MODEL, "--dtypes", "float32", "--orders", "default", "--inputs", "1",
               "--out", tmp_path)
    assert done.returncode == 2 and "holds a model.html that tvm-suite model did not write" in done.stderr
    assert (tmp_path / "model.html").read_text() == "mine" and not (tmp_path / "model.json").exists()


def test_the_same_run_twice_gives_the_same_numbers(plan):
    def numbers(found):
        return [dataclasses.replace(r, seconds_per_input=None) for r in found.results]

    assert numbers(evaluate(plan, count=2)[0]) == numbers(evaluate(plan, count=2)[0])


def test_the_table_says_what_the_data_is(cli):
    done = cli("model", "--model", MODEL, "--dtypes", "float32", "--orders", "default", "--inputs", "1")
    assert done.returncode == 0, done.stderr
    assert "synthetic" in done.stdout and "no pretrained weights" in done.stdout
    assert "float32  llvm      default" in done.stdout


@pytest.mark.slow
def test_the_model_runs_on_the_executed_qfloat_model(plan):
    """Hexagon (hexagon-v68-qf: TVM's qfloat code on the suite's model under qemu-hexagon) through the
    same target protocol: each of the 9 calls builds in about 30 s and emulates in under a second."""
    hexagon = targets.get("hexagon-v68-qf")
    if reason := hexagon.unavailable():
        pytest.skip(reason)
    llvm = targets.get("llvm")
    found, _ = model_accuracy.evaluate(plan, model_settings.settings_to_run(["float16"], [hexagon], ["default"], llvm),
                                       1)
    r = result(found, "float16", "hexagon-v68-qf")
    assert r.measured, r
    m = r.metrics
    assert m.nonfinite == 0 and 0 < m.max_abs_error < 0.1 and m.vs_llvm.max_abs < 0.1
    # what the 9 calls executed under the emulator, exact, and the IEEE twin's chain beside it
    assert r.packets_per_input > 0 and r.emulated_s_per_input > 0
    twin = r.ieee_twin
    assert twin.nonfinite == 0 and 0 < twin.max_abs_error < 0.1 and twin.vs_target.max_abs < 0.1


# ----------------------------------------------------------------------------- kept, and the benchmarks


def test_the_weights_are_kept_and_read_back_bit_for_bit(plan):
    kept = model_store.weights(plan)  # calibrated, or read: the same either way
    again = model_store.weights(plan)
    fresh = model_weights.weights(plan)
    assert len(kept) == len(fresh) == 14
    assert all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(kept, again, fresh))


def test_a_longer_run_reuses_the_inputs_of_a_shorter_one(plan):
    """Image i is the same whatever N: 3 inputs after 2 run only the third, and give the numbers
    of 3 inputs run at once."""
    evaluate(plan, count=2)
    found, _ = evaluate(plan, count=3)
    assert found.cache.resumed == ("float32 llvm default",) or found.cache.reused == ("float32 llvm default",)
    whole, _ = evaluate(plan, count=3)
    assert whole.cache.reused == ("float32 llvm default",)
    assert whole.results == found.results


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    return importlib.import_module("benchmarks.bench_model"), importlib.import_module("benchmarks.common")


def test_the_benchmark_reads_a_setting_and_skips_one_over_the_budget(bench, monkeypatch):
    """benchmarks/bench_model.py: a measured setting's values under their metrics' names; an emulated
    setting estimated over the budget (1 ms) skipped with its estimate (or the target's reason where it
    cannot run here), never measured."""
    bench_model, common = bench
    grid = model_grid.ModelGrid([MODEL], ["float16"], ["llvm", "hexagon-v68-qf"], ["default"], 2, 1e-3)
    monkeypatch.setattr(common, "MODEL_GRID", grid)
    benchmark = object.__new__(bench_model.ModelAccuracy)
    benchmark.setup(MODEL, "float16", "llvm", "default")
    assert set(benchmark.values) == {m.name for m in tracked.of_class("bench_model", "ModelAccuracy")}
    assert benchmark.values["model_rmse_ratio"] == 1.0 and benchmark.values["model_rmse_ratio_fp32"] > 100
    assert benchmark.track_rmse_ratio(MODEL, "float16", "llvm", "default") == 1.0
    with pytest.raises(NotImplementedError) as skipped:
        benchmark.setup(MODEL, "float16", "hexagon-v68-qf", "default")
    reason = targets.get("hexagon-v68-qf").unavailable()
    assert str(skipped.value) == reason if reason else str(skipped.value).startswith(
        "not feasible within the budget: about ")
    assert "TVM_SUITE_MODEL_BUDGET_S" in str(skipped.value) or reason


@pytest.mark.parametrize("environ, grid", [
    ({}, (["miniresnet"], ["float32", "float16"], ["llvm"], ["default", "tuned"], 8)),
    ({"TVM_SUITE_MODELS": "resnet18,miniresnet", "TVM_SUITE_MODEL_INPUTS": "2", "TVM_SUITE_DTYPES": "float16",
      "TVM_SUITE_TARGETS": "llvm,hexagon-v68", "TVM_SUITE_ORDERS": "default,seed-swap"},
     (["resnet18", "miniresnet"], ["float16"], ["llvm"], ["default"], 2)),
    ({"TVM_SUITE_MODELS": "none"}, ([], ["float32", "float16"], ["llvm"], ["default", "tuned"], 8)),
    ({"TVM_SUITE_DTYPES": "int8,bfloat16"}, (["miniresnet"], ["int8", "bfloat16"], ["llvm"], ["default", "tuned"], 8)),
])
def test_the_model_grid_comes_from_the_environment(environ, grid):
    """Compile-only targets and orders a model does not run in are left out, not failed; every dtype is kept."""
    found = model_grid.ModelGrid.from_env(environ)
    assert (found.models, found.dtypes, found.targets, found.orders, found.inputs) == grid
    assert found.empty == (not grid[0])


@pytest.mark.slow
def test_the_twin_left_out_is_run_by_the_next_run_that_wants_it(cli):
    """--no-twin keeps the qfloat run without the IEEE twin's chain; the next run without it runs the
    twin rather than taking the kept input for a complete one."""
    if reason := targets.get("hexagon-v68-qf").unavailable():
        pytest.skip(reason)
    args = ("model", "--model", MODEL, "--dtypes", "float16", "--targets", "hexagon-v68-qf", "--orders", "default",
            "--inputs", "2", "--json")
    alone = cli(*args, "--no-twin")
    assert alone.returncode == 0, alone.stderr
    without = json_result(json.loads(alone.stdout), "float16", "hexagon-v68-qf")
    assert "ieee_twin" not in without and "ieee_twin" not in without["seconds_per_input"]
    both = cli(*args)
    assert both.returncode == 0, both.stderr
    found = json.loads(both.stdout)
    with_twin = json_result(found, "float16", "hexagon-v68-qf")
    assert with_twin["ieee_twin"]["rmse"] > 0 and with_twin["metrics"] == without["metrics"]
