"""The gate's and the report's whole-model checks ([model.<dtype>] of the thresholds, bench_model's
values) on in-memory histories (tests/histories.py): a setting over its limit fails, one not
measured is listed with its reason and never passes, the report shows them in its model table;
int8's and bfloat16's limits through `tvm-suite gate` on such a history filed as `run` files one."""

import math
import re

from histories import A, B, C, SEED, Builder
from suite.reporting import gate, gate_checks, report
from suite.reporting import thresholds as limits
from suite.reporting.gate_result import Status, Verdict

DEFAULTS = limits.load()
FP32 = ("miniresnet", "float32", "llvm", "default")
FP16 = ("miniresnet", "float16", "llvm", "default")
FP16_TUNED = ("miniresnet", "float16", "llvm", "tuned")
QF = ("miniresnet", "float16", "hexagon-v68-qf", "default")
INFEASIBLE = "skipped: not feasible within the budget: about 9,000 emulated seconds for 8 inputs"


def fine(b: Builder, ids, commit, **changed) -> Builder:
    """A model setting's values as miniresnet on llvm gives them (8 inputs)."""
    fp16 = ids[1] == "float16"
    values = {"model_rmse_ratio": 1.0, "model_rmse_ratio_fp32": 7111.0 if fp16 else 1.0,
              "model_max_abs_error": 0.0081 if fp16 else 1.7e-6, "model_top1_agreement": 0.875 if fp16 else 1.0,
              "model_top5_agreement": 1.0}
    if ids[3] == "tuned":
        values["model_tuned_rmse_ratio"] = 1.0
    return b.values_at(ids, commit, **{**values, **changed})


def history(**at_b) -> Builder:
    b = Builder()
    for commit in (A, B):
        b.accurate(SEED, commit).timing(SEED, commit)
        for ids in (FP32, FP16, FP16_TUNED):
            fine(b, ids, commit, **(at_b.get(ids[1] + ids[3], {}) if commit == B else {}))
    return b


def checks(result, prefix="model "):
    return {c.name: c for c in result.checks if c.name.startswith(prefix)}


def test_model_settings_within_their_limits_are_ready():
    result = gate.evaluate_named(history().history(), B, DEFAULTS)
    assert result.verdict is Verdict.READY
    found = checks(result)
    assert set(found) == {f"model {m} {d}" for d in ("float16", "float32", "bfloat16")
                          for m in ("rmse_ratio", "tuned_rmse_ratio", "top1_agreement", "top5_agreement")} | {
        "model rmse_ratio_fp32 bfloat16", "model rmse int8"}
    # no int8 or bfloat16 model at any commit: not checked, never a pass
    assert {(c.status, c.worst) for name, c in found.items() if name.endswith(("int8", "bfloat16"))} == {
        (Status.NOT_CHECKED, "no whole-model results in this dtype at any commit")}
    assert found["model top1_agreement float16"].status is Status.PASS
    assert found["model top1_agreement float16"].limit == ">= 0.75"
    assert found["model top1_agreement float16"].worst == "0.875 (miniresnet float16 llvm default)"
    # float32 has no tuned setting here: nothing to check, never a pass
    assert found["model tuned_rmse_ratio float32"].status is Status.NOT_CHECKED


def test_top1_agreement_below_its_floor_and_a_tuned_ratio_over_2_fail():
    b = history(float16default={"model_top1_agreement": 0.5}, float16tuned={"model_tuned_rmse_ratio": 2.5})
    result = gate.evaluate_named(b.history(), B, DEFAULTS)
    assert result.verdict is Verdict.NOT_READY
    found = checks(result)
    top1 = found["model top1_agreement float16"]
    assert top1.status is Status.FAIL and top1.details == ("miniresnet float16 llvm default: 0.5",)
    assert top1.worst == "0.5 (miniresnet float16 llvm default)"
    tuned = found["model tuned_rmse_ratio float16"]
    assert tuned.status is Status.FAIL and tuned.details == ("miniresnet float16 llvm tuned: 2.5",)
    assert found["model rmse_ratio float16"].status is Status.PASS


def test_a_setting_not_measured_is_listed_with_its_reason_never_passed():
    b = history()
    b.values_at(QF, B, model_rmse_ratio=math.nan)  # asv's NaN: skipped
    b.side[B]["failures"][QF] = INFEASIBLE
    result = gate.evaluate_named(b.history(), B, DEFAULTS)
    ratio = checks(result)["model rmse_ratio float16"]
    assert ratio.status is Status.PASS and ratio.worst.endswith("; 1 not measured")
    assert ratio.details == (f"not measured: miniresnet float16 hexagon-v68-qf default: {INFEASIBLE}",)
    only = Builder()  # the only setting of a dtype not measured: not checked, with the reason
    only.accurate(SEED, A).timing(SEED, A).values_at(QF, A, model_rmse_ratio=math.nan)
    only.side[A]["failures"][QF] = INFEASIBLE
    alone = checks(gate.evaluate_named(only.history(), A, DEFAULTS))["model rmse_ratio float16"]
    assert alone.status is Status.NOT_CHECKED and alone.worst == "none measured; 1 not measured"


def test_a_setting_that_failed_is_not_ready_with_its_reason():
    b = history()
    b.failed(FP16, B, "call 6 (miniresnet.conv2d_add_radd_relu.16x16x8-k1s2-16): run failed: segfault",
             metrics=("model_rmse_ratio", "model_max_abs_error", "model_rmse_ratio_fp32"))
    result = gate.evaluate_named(b.history(), B, DEFAULTS)
    assert result.verdict is Verdict.NOT_READY
    completed = next(c for c in result.checks if c.name == "combinations completed")
    assert completed.status is Status.FAIL
    assert completed.details == ("miniresnet float16 llvm default: call 6 (miniresnet.conv2d_add_radd_relu."
                                 "16x16x8-k1s2-16): run failed: segfault",)


def test_model_values_that_vanish_at_the_candidate_are_data_missing():
    b = Builder()
    fine(b, FP32, A)
    b.accurate(SEED, A).timing(SEED, A).accurate(SEED, B).timing(SEED, B)
    top1 = checks(gate.evaluate_named(b.history(), B, DEFAULTS))["model top1_agreement float32"]
    assert top1.status is Status.MISSING and top1.worst == "no values at this commit"


def test_a_commit_measured_before_the_models_were_is_not_checked_never_missing():
    """A kept history outlives suite versions: commits measured by a suite that predates a metric
    have none of it, and a later commit's values do not make them DATA MISSING."""
    b = Builder(commits=(A, B, C))
    for commit in (A, B, C):
        b.accurate(SEED, commit).timing(SEED, commit)
    fine(b, FP32, C)
    before = gate.evaluate_named(b.history(), B, DEFAULTS)
    top1 = checks(before)["model top1_agreement float32"]
    assert top1.status is Status.NOT_CHECKED and top1.worst == gate_checks.NOT_YET_MEASURED
    assert before.verdict is Verdict.READY
    at = checks(gate.evaluate_named(b.history(), C, DEFAULTS))["model top1_agreement float32"]
    assert at.status is Status.PASS
    # a kernel metric too: measured at B and none at C is missing; first measured at C, not checked at B
    b2 = Builder(commits=(A, B, C))
    b2.timing(SEED, A).timing(SEED, B).accurate(SEED, B).timing(SEED, C)
    ulp_at = {c.name: c for c in gate.evaluate_named(b2.history(), C, DEFAULTS).checks}
    assert (ulp_at["ulp_mean float16"].status, ulp_at["ulp_mean float16"].worst) == (Status.MISSING,
                                                                                   "no values at this commit")
    b3 = Builder(commits=(A, B, C))
    b3.timing(SEED, A).timing(SEED, B).accurate(SEED, C).timing(SEED, C)
    ulp_before = {c.name: c for c in gate.evaluate_named(b3.history(), B, DEFAULTS).checks}
    assert (ulp_before["ulp_mean float16"].status, ulp_before["ulp_mean float16"].worst) == (
        Status.NOT_CHECKED, gate_checks.NOT_YET_MEASURED)


def test_the_report_has_a_model_table_and_leaves_models_out_of_the_kernels():
    b = history(float16default={"model_top1_agreement": 0.5})
    b.values_at(QF, B, model_rmse_ratio=math.nan)
    b.side[B]["failures"][QF] = INFEASIBLE
    h = b.history()
    result = gate.evaluate_named(h, B, DEFAULTS)
    facts = report.compute(h, result)
    rows = {tuple(r[k] for k in ("model", "dtype", "target", "order")): r for r in facts["models"]}
    assert set(rows) == {FP32, FP16, FP16_TUNED, QF}
    assert rows[FP16]["values"]["model_top1_agreement"] == 0.5 and rows[FP16]["measured"]
    assert not rows[QF]["measured"] and rows[QF]["reason"] == INFEASIBLE
    assert [r["workload"] for r in facts["summary"]] == [SEED[0]] and facts["summary_skipped"] == 0
    html = report.render_html(facts, h, facts["divergence"]["marks"])
    assert 'id="models-table"' in html and f"not measured: {INFEASIBLE}" in html
    assert "<td>0.50</td>" in html


# ----------------------------------------------------------------------------- int8 and bfloat16

INT8 = ("miniresnet", "int8", "llvm", "default")
BF16 = ("miniresnet", "bfloat16", "llvm", "default")


def quantized_and_bf16(b: Builder, commit, int8_rmse: float = 0.1093) -> Builder:
    """miniresnet's int8 and bfloat16 settings as `tvm-suite model --dtypes int8,bfloat16 --inputs 8`
    measured them on llvm (reports/thresholds.toml), beside a float kernel with samples."""
    b.values_at(INT8, commit, model_rmse=int8_rmse, model_rmse_ratio=1.0, model_rmse_ratio_fp32=2.81e5,
                model_max_abs_error=0.294, model_top1_agreement=0.75, model_top5_agreement=1.0,
                model_integer_differing=0.0)
    b.values_at(BF16, commit, model_rmse=0.00476, model_rmse_ratio=1.0, model_rmse_ratio_fp32=1.22e4,
                model_max_abs_error=0.0165, model_top1_agreement=1.0, model_top5_agreement=1.0)
    return b.accurate(SEED, commit).timing(SEED, commit)


def test_an_int8_model_over_its_rmse_limit_is_not_ready(cli, tmp_path):
    """[model.int8] max_rmse: the quantized model's logits against the float model's. Its integers
    here are the exact pipeline's and its RMSE is llvm default's own (ratio 1), as when the model's
    calls or the quantization change: only the RMSE against float64 sees that. Through `tvm-suite
    gate` on a history filed as `run` files one (tests/histories.py: Builder.write). Within the
    limit, READY: tests/test_gate_int8.py, on a real run's miniresnet (0.1093)."""
    b = quantized_and_bf16(quantized_and_bf16(Builder(), A), B, int8_rmse=0.8512)
    done = cli("gate", "--results", str(b.write(tmp_path / "run")), "--commit", B, "--no-remeasure")
    rows = {row[0]: row[1:] for row in (re.split(r"\s{2,}", line) for line in done.stdout.splitlines())
            if row[0].startswith("model ") and row[0].endswith(("int8", "bfloat16"))}
    assert rows == {
        "model rmse int8": ["<= 0.8", "0.8512 (miniresnet int8 llvm default)", "FAIL"],
        "model rmse_ratio_fp32 bfloat16": ["<= 32768", "1.22e+04 (miniresnet bfloat16 llvm default)", "PASS"],
        "model rmse_ratio bfloat16": ["<= 3", "1 (miniresnet bfloat16 llvm default)", "PASS"],
        "model tuned_rmse_ratio bfloat16": ["<= 2", "no whole-model results in this dtype at any commit",
                                            "NOT CHECKED"],
        "model top1_agreement bfloat16": [">= 0.75", "1 (miniresnet bfloat16 llvm default)", "PASS"],
        "model top5_agreement bfloat16": [">= 0.99", "1 (miniresnet bfloat16 llvm default)", "PASS"]}
    assert done.returncode == 1, done.stdout + done.stderr
    assert "\n\nfail: model rmse int8\n  miniresnet int8 llvm default: 0.8512\n\n" in done.stdout
    assert done.stdout.endswith(f"verdict: NOT READY (a check failed) for {B[:10]} against {A[:10]} -> exit 1\n")
    # the report's verdict on the pair blames that line, that combination and metric
    history = b.history()
    facts = report.compute(history, gate.evaluate_named(history, B, DEFAULTS))
    (failing,) = [c for c in facts["gate"]["checks"] if c["status"] == "FAIL"]
    assert (failing["name"], failing["details"]) == ("model rmse int8", ["miniresnet int8 llvm default: 0.8512"])
    assert [(c["workload"], c["dtype"], c["metric"]) for c in failing["culprits"]] == [
        ("miniresnet", "int8", "model_rmse")]
    assert "miniresnet int8 llvm default: 0.8512" in report.render_html(facts, history, facts["divergence"]["marks"])
