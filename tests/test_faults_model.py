"""Faults users meet with `tvm-suite model`: bad names and numbers, targets that cannot run a
model, calls without a tuning record, calls the target cannot build or run, a kernel that gives
non-finite values, a run interrupted, a damaged cache entry.

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together. The contract: bad input is one line on stderr naming what
is wrong, exit 2, before any work; a call that cannot be built or run makes its setting "not
measured" with the reason (no number stands for the model's), exit 1; with ``--json`` stdout is
one JSON document either way. On ``miniresnet``, whose kernels build in seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
from conftest import SUITE_BIN, check_fault_table, one_line, run_experiment

from suite import cache, targets
from suite.core import execution, measurement
from suite.core.record import Record, Status
from suite.model import accuracy as model_accuracy
from suite.model import calls as model_calls
from suite.model import chain as model_chain
from suite.model import settings as model_settings
from suite.model import store as model_store

MODEL = "miniresnet"
#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "an unknown name": ["test_an_unknown_name_is_one_line_naming_the_valid_ones"],
    "an order a model does not run in": ["test_an_order_other_than_default_or_tuned_is_refused"],
    "a number of inputs out of range": ["test_a_number_of_inputs_out_of_range_is_refused"],
    "an empty list": ["test_an_empty_list_is_an_error_never_all"],
    "a target that runs no kernel": ["test_a_compile_only_target_is_refused"],
    "a target this machine cannot run": ["test_an_unavailable_target_is_one_line"],
    "an --out that is a file": ["test_an_out_that_is_a_file_is_refused_before_any_work"],
    "an --out holding a model.json the suite did not write": ["test_a_model_json_of_the_users_is_never_replaced"],
    "an --out that is a link to nothing": ["test_an_out_that_links_to_nothing_is_refused_before_any_work"],
    "bad input with --json": ["test_bad_input_with_json_is_a_json_error_on_stdout"],
    "a call without a tuning record": ["test_a_call_without_a_record_runs_default_in_tuned_and_is_listed"],
    "a call the target cannot build": ["test_a_call_that_does_not_build_leaves_the_setting_not_measured"],
    "a call the target cannot run": ["test_a_call_that_does_not_run_leaves_the_setting_not_measured"],
    "a kernel that gives non-finite values": ["test_non_finite_logits_are_counted_and_agree_on_nothing"],
    "a run interrupted (Ctrl-C)": ["test_an_interrupted_run_keeps_its_inputs_and_a_rerun_finishes_the_same_numbers"],
    "a damaged cache entry": ["test_a_damaged_cache_entry_is_computed_again_with_one_line"],
    "a model grid environment out of range": ["test_a_bad_model_grid_environment_is_one_line_before_any_work"],
    "experiments/model_cost.py: bad input, an existing --json file": [
        "test_model_cost_refuses_bad_input_in_one_line", "test_model_cost_never_replaces_an_existing_file"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


def model(cli, *args):
    return cli("model", "--model", MODEL, *args)


def result(found, dtype="float32", target="llvm", order="default") -> dict:
    return next(r for r in found["results"] if (r["dtype"], r["target"], r["order"]) == (dtype, target, order))


def numbers(found) -> list:
    """What a run measured, less the seconds it took and what it found in the cache."""
    return [{k: v for k, v in r.items() if k not in ("seconds_per_input",)} for r in found["results"]]


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("option, value, words", [
    ("--model", "vgg16", ("unknown model 'vgg16'", "resnet18", "miniresnet")),
    ("--targets", "llvm,vulkan", ("unknown target 'vulkan'", "valid targets: llvm")),
    ("--dtypes", "float64", ("unknown dtype 'float64'", "float32, float16")),
    ("--orders", "fastest", ("unknown loop order 'fastest'", "default")),
])
def test_an_unknown_name_is_one_line_naming_the_valid_ones(cli, option, value, words):
    args = ["--model", value] if option == "--model" else ["--model", MODEL, option, value]
    one_line(cli("model", *args), *words)


def test_an_order_other_than_default_or_tuned_is_refused(cli):
    one_line(model(cli, "--orders", "default,seed-swap"), "default, tuned", "'seed-swap'")


@pytest.mark.parametrize("value, words", [("0", "0 is not between 1 and 1,000"), ("-3", "-3 is not between"),
                                          ("1001", "1001 is not between 1 and 1,000"),
                                          ("many", "'many' is not a whole number")])
def test_a_number_of_inputs_out_of_range_is_refused(cli, value, words):
    one_line(model(cli, "--inputs", value), "--inputs", words)


@pytest.mark.parametrize("option", ["--targets", "--dtypes", "--orders"])
def test_an_empty_list_is_an_error_never_all(cli, option):
    one_line(model(cli, option, " , "), option, "names nothing")


def test_a_compile_only_target_is_refused(cli):
    one_line(model(cli, "--targets", "llvm,hexagon-v68"), "hexagon-v68 is compile-only", "runs no kernel")


def test_an_unavailable_target_is_one_line(cli):
    reason = targets.get("cuda").unavailable()
    if reason is None:
        pytest.skip("this machine has a GPU: cuda is available")
    assert one_line(model(cli, "--targets", "cuda")) == f"tvm-suite: error: {reason}"


def test_an_out_that_is_a_file_is_refused_before_any_work(cli, tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("x")
    asked = []
    monkeypatch.setattr(model_accuracy, "evaluate", lambda *a, **k: asked.append(a))
    one_line(model(cli, "--out", afile), str(afile), "a file")
    assert asked == [] and afile.read_text() == "x"


def test_an_out_that_links_to_nothing_is_refused_before_any_work(cli, tmp_path, monkeypatch):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    asked = []
    monkeypatch.setattr(model_accuracy, "evaluate", lambda *a, **k: asked.append(a))
    one_line(model(cli, "--out", link), str(link), "a link to nothing")
    assert asked == [] and not (tmp_path / "gone").exists()


def test_a_model_json_of_the_users_is_never_replaced(cli, tmp_path, monkeypatch):
    (tmp_path / "model.json").write_text("mine")
    asked = []
    monkeypatch.setattr(model_accuracy, "evaluate", lambda *a, **k: asked.append(a))
    one_line(model(cli, "--out", tmp_path), str(tmp_path), "did not write", "never replaced")
    assert asked == [] and (tmp_path / "model.json").read_text() == "mine"


def test_bad_input_with_json_is_a_json_error_on_stdout(cli):
    for args, words in ((("--dtypes", "int4"), "unknown dtype 'int4'; valid dtypes: float32, float16, bfloat16, int8"),
                        (("--dtypes", "int8", "--targets", "llvm-avx512bf16"),
                         "llvm-avx512bf16 does not run int8: only bfloat16 has native instructions to ask for; the "
                         "other dtypes run on llvm; a whole model in int8 runs on: llvm, hexagon-v68-qf, "
                         "hexagon-v73-qf")):
        done = model(cli, *args, "--json")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert json.loads(done.stdout) == {"error": words, "exit_status": 2}


# ----------------------------------------------------------------------------- calls


def test_a_call_without_a_record_runs_default_in_tuned_and_is_listed(cli):
    """miniresnet has no tuning record: in tuned, every call runs its default schedule, the output
    lists them, and the logits are default's (it was "skipped: no tuned record", the whole model lost)."""
    done = model(cli, "--dtypes", "float32", "--orders", "default,tuned", "--inputs", "2", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    tuned = result(found, order="tuned")
    assert tuned["status"] == "measured"
    assert [c["index"] for c in tuned["default_calls"]] == list(range(9))
    assert tuned["default_calls"][0]["workload"] == "miniresnet.conv2d_add_relu.32x32x3-k3s1-8"
    assert tuned["metrics"]["vs_default"] == {"max_abs": 0.0, "mean_abs": 0.0}
    assert "default_calls" not in result(found, order="default")
    assert "9 calls default" in done.stderr


def test_a_call_that_does_not_build_leaves_the_setting_not_measured(cli, monkeypatch, unkept):
    broken = "miniresnet.conv2d_add.8x8x16-k3s1-16"
    real = measurement.measure

    def measure(combo, verify=()):
        if combo.workload.id == broken and combo.dtype == "float16":
            return Record(*combo.ids, status=Status.FAILED, reason="build failed: LLVM ERROR: planted")
        return real(combo, verify)

    monkeypatch.setattr(measurement, "measure", measure)
    done = model(cli, "--dtypes", "float32,float16", "--orders", "default", "--inputs", "1", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    found = json.loads(done.stdout)
    fp16 = result(found, "float16")
    assert fp16 == {"dtype": "float16", "target": "llvm", "order": "default", "requested": True,
                    "status": "not measured", "reason": f"{broken} (default): build failed: LLVM ERROR: planted"}
    assert result(found)["status"] == "measured"  # fp32 is measured all the same
    assert "not measured: " + fp16["reason"] in done.stderr


def test_a_call_that_does_not_run_leaves_the_setting_not_measured(cli, monkeypatch, unkept):
    """The sixth call's kernel fails on the second input: the setting is not measured (the first
    input's logits stand for nothing), the reason names the call."""
    llvm = targets.get("llvm")
    model_settings.kernels(model_calls.model_calls(MODEL), model_settings.Setting("float32", llvm, "default"))
    real, runs = execution.run, []  # the kernels measured first: the planted failure is never cached

    def run(built, arguments, timed=False, twin=True):
        if "conv2d_add_radd_relu" in built.path.parent.name:
            runs.append(1)
            if len(runs) == 2:
                return execution.Ran(built, failure=execution.Failure(Status.FAILED, execution.Stage.RUN,
                                                                      "planted segfault"))
        return real(built, arguments, timed, twin)

    monkeypatch.setattr(execution, "run", run)
    done = model(cli, "--dtypes", "float32", "--orders", "default", "--inputs", "3", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    r = result(json.loads(done.stdout))
    assert r["status"] == "not measured" and "metrics" not in r
    assert r["reason"] == "call 6 (miniresnet.conv2d_add_radd_relu.16x16x8-k1s2-16): run failed: planted segfault"
    assert len(runs) == 2  # no call of that setting ran after it


def test_non_finite_logits_are_counted_and_agree_on_nothing(cli, monkeypatch, unkept):
    real = model_chain.run_call

    def nan_in_one_class(built, call, inputs, dtype, **tally):
        output = real(built, call, inputs, dtype, **tally)
        if call.index == 8:
            output = output.copy()
            output[0, 3] = np.nan
        return output

    monkeypatch.setattr(model_chain, "run_call", nan_in_one_class)
    done = model(cli, "--dtypes", "float32", "--orders", "default", "--inputs", "2", "--json")
    assert done.returncode == 0, done.stderr
    m = result(json.loads(done.stdout))["metrics"]
    assert m["nonfinite"] == 2 and m["top1_agreement"] == 0 and m["top5_agreement"] == 0
    assert np.isnan(m["max_abs_error"])


# ----------------------------------------------------------------------------- what is kept


def _entries(root, kind: str, label: str) -> list:
    return sorted((root / kind).glob(f"{label}-*"), key=lambda p: p.stat().st_mtime)


@pytest.mark.slow
def test_an_interrupted_run_keeps_its_inputs_and_a_rerun_finishes_the_same_numbers(cli, tmp_path, monkeypatch):
    """Ctrl-C in a `tvm-suite model` process (a cache of its own: its kernels are built first) once
    it has kept an input's run and attribution: exit 130, one line saying what was kept; the rerun
    runs only the rest (it was "interrupted" with nothing kept, the whole run lost), and its numbers
    are those of a run never interrupted; a third run runs nothing on the target at all."""
    args = ["model", "--model", MODEL, "--dtypes", "float32", "--orders", "default", "--inputs", "40",
            "--attribute", "--json"]
    own = tmp_path / "cache"
    env = {**os.environ, "TVM_SUITE_CACHE": str(own)}
    process = subprocess.Popen([str(SUITE_BIN), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    while not _entries(own, "model-attribution", f"{MODEL}.float32.llvm.default.0"):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("tvm-suite: interrupted (SIGINT): ") and "kept in the cache" in last, err
    assert "Traceback" not in err and json.loads(out)["exit_status"] == 130
    kept = len(list((own / "model-input").glob(f"{MODEL}.float32.llvm.default.*")))
    assert 0 < kept < 40, kept

    again = subprocess.run([str(SUITE_BIN), *args], capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["cache"]["resumed"] == ["float32 llvm default"] and resumed["cache"]["reused"] == []
    assert "1 resumed" in again.stderr
    fresh = cli(*args)  # the session's cache: computed apart from the interrupted one
    assert fresh.returncode == 0, fresh.stderr
    assert numbers(resumed) == numbers(json.loads(fresh.stdout))

    def no_target(*a, **k):
        raise AssertionError("the target ran again")

    monkeypatch.setattr(execution, "run", no_target)
    third = cli(*args, env={"TVM_SUITE_CACHE": own})
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["cache"]["reused"] == ["float32 llvm default"]
    assert "1 setting(s) reused whole" in third.stderr and numbers(json.loads(third.stdout)) == numbers(resumed)


def _damage_logits(entry):
    other = np.full((1, 10), 0.5, dtype=np.float32)  # a valid array, the wrong numbers
    np.save(entry / "logits.npy", other, allow_pickle=False)


def _damage_manifest(entry):
    (entry / cache.MANIFEST).write_text((entry / cache.MANIFEST).read_text()[:40])


def _damage_weights(entry):
    (entry / "weights.npz").write_bytes((entry / "weights.npz").read_bytes()[:100])


def _entry(which: str):
    """The entry this code keeps: an input of miniresnet float32 llvm default, or its weights."""
    plan = model_calls.model_calls(MODEL)
    if which == "weights":
        return model_store.weights_entry(plan)
    setting = model_settings.Setting("float32", targets.get("llvm"), "default")
    store = model_store.InputStore(plan, setting.ids, model_settings.setting_key(plan, setting), 10)
    return store.where("model-input", int(which))


@pytest.mark.parametrize("which, damage", [("1", _damage_logits), ("0", _damage_manifest),
                                           ("weights", _damage_weights)], ids=["logits", "manifest", "weights"])
def test_a_damaged_cache_entry_is_computed_again_with_one_line(cli, which, damage):
    """A kept input whose logits are other numbers, a manifest cut short, the weights cut short:
    never read as they are (a silently wrong number) nor a traceback: one line naming the entry,
    computed again, the same numbers as before."""
    args = ("--dtypes", "float32", "--orders", "default", "--inputs", "2", "--json")
    first = model(cli, *args)
    assert first.returncode == 0, first.stderr
    entry = _entry(which)
    damage(entry)
    again = model(cli, *args)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    notes = [line for line in again.stderr.splitlines() if "damaged" in line]
    assert len(notes) == 1 and str(entry) in notes[0] and "computed again" in notes[0], again.stderr
    assert numbers(json.loads(again.stdout)) == numbers(json.loads(first.stdout))
    assert not [line for line in model(cli, *args).stderr.splitlines() if "damaged" in line]  # stored anew


@pytest.mark.parametrize("variable, value, words", [
    ("TVM_SUITE_MODEL_INPUTS", "0", "TVM_SUITE_MODEL_INPUTS=0 is out of range (1 to 1000)"),
    ("TVM_SUITE_MODEL_INPUTS", "many", "TVM_SUITE_MODEL_INPUTS='many' is not a number"),
    ("TVM_SUITE_MODEL_BUDGET_S", "-5", "TVM_SUITE_MODEL_BUDGET_S=-5 is out of range"),
    ("TVM_SUITE_MODEL_BUDGET_S", "nan", "TVM_SUITE_MODEL_BUDGET_S=nan is out of range"),
    ("TVM_SUITE_MODELS", "vgg16", "unknown model 'vgg16'"),
    ("TVM_SUITE_MODELS", "none,miniresnet", "TVM_SUITE_MODELS='none,miniresnet': 'none' means no model and stands "
                                            "alone"),
])
def test_a_bad_model_grid_environment_is_one_line_before_any_work(cli, tmp_path, variable, value, words):
    out = tmp_path / "asv"
    one_line(cli("run", "--quick", "--workloads", "resnet50.mean.7x7x2048", "--out", out, env={variable: value}),
             words)
    assert not out.exists()


@pytest.mark.parametrize("args, words", [
    (["--inputs", "0"], "--inputs: 0 is not between 1 and 1,000"),
    (["--budget-s", "nan"], "--budget-s: nan is not a number of seconds from 0 up"),
    (["--models", ","], "--models: ',' names nothing"),
    (["--target", "nowhere"], "unknown target 'nowhere'"),
])
def test_model_cost_refuses_bad_input_in_one_line(args, words):
    """experiments/model_cost.py: bad input is one line, exit 2, before any work."""
    done = run_experiment("model_cost.py", *args)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_model_cost_never_replaces_an_existing_file(tmp_path):
    mine = tmp_path / "rows.json"
    mine.write_text("the user's")
    done = run_experiment("model_cost.py", "--json", mine)
    assert done.returncode == 2 and "exists: it is never replaced" in done.stderr and mine.read_text() == "the user's"
