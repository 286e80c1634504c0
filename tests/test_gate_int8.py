"""int8 in the gate and the report (issue 61): exactness is a deterministic check with no threshold.
An int32 accumulator that is not bit-exact is NOT READY (a first commit's too), so is an exact
fraction lower or a max step error higher than at the baseline; the culprit is named, and the
report says the same of the same pair. The ULP and bound checks never look at int8 rows.

The rules on in-memory histories (tests/histories.py); then real `tvm-suite run --dtypes int8`
histories, one of them with a kernel whose TIR drops a term, built and run through `run`."""

import json
import shutil

import pytest
from asv_runs import _git, two_commit_repo
from conftest import made_once, run_in_process
from histories import SEED, A, B, Builder, C
from markupsafe import escape
from test_report_agreement import agree, reported

from suite.core import quantized
from suite.reporting import (
    gate,
    gate_checks,
    gate_result,
    pair_verdicts,
    report,
    report_figures,
    results,
)
from suite.reporting import thresholds as limits
from suite.reporting.gate_result import Culprit, Status, Verdict

DEFAULTS = limits.load()
MEAN = ("resnet18.mean.7x7x512", "int8", "llvm", "default")
POOL = ("resnet18.max_pool2d.112x112x64-k3s2", "int8", "llvm", "reduction-outer")
FLOAT_CHECKS = ("scaled_error float", "ulp_mean float", "ulp_p99 float", "probabilistic bound", "rigorous bound",
                "non-finite")


def exact(b: Builder, ids, commit, **changed) -> Builder:
    """``ids`` measured at ``commit`` as an exact int8 kernel is (its values ``changed``), with samples."""
    values = {"exact_fraction": 1.0, "max_step_error": 0.0, "accumulator_mismatches": 0.0,
              "accumulator_wrapped": 0.0, **changed}
    return b.values_at(ids, commit, **values).timing(ids, commit)


def judge(history, commit=B) -> gate_result.GateResult:
    return gate.evaluate_named(history, commit, DEFAULTS)


def exactness(result: gate_result.GateResult) -> gate_result.Check:
    return next(c for c in result.checks if c.name.startswith(gate_checks.EXACTNESS))


def blamed(history, baseline, candidate) -> list[tuple]:
    """What the report says fails the pair: (check, words, culprit)."""
    pair = pair_verdicts.pair_verdict(history, history.resolve(baseline), history.resolve(candidate), DEFAULTS)
    return [(b.check, b.words, b.culprit) for b in pair.blamed]


def where(ids) -> str:
    return " ".join(ids)


# ----------------------------------------------------------------------------- the rules


def test_exact_int8_is_ready_and_no_ulp_or_bound_check_looks_at_it():
    b = Builder()
    for commit in (A, B):
        exact(exact(b, MEAN, commit), POOL, commit)
    result = judge(b.history())
    check = exactness(result)
    assert result.verdict is Verdict.READY
    assert (check.name, check.status, check.worst) == (f"int8 exactness vs {A[:10]}", Status.PASS,
                                                       f"2 of 2 bit-exact, none less exact than at {A[:10]}")
    # int8 alone: the float checks say so, not that values are missing
    for c in result.checks:
        if c.name.startswith(FLOAT_CHECKS):
            assert (c.status, c.worst, c.details) == (Status.NOT_CHECKED, gate_checks.ONLY_INTEGERS, ()), c
    # beside a float combination they judge it alone: no int8 row is listed, none "not checked"
    exact(b.accurate(SEED, A).accurate(SEED, B), MEAN, B)
    mixed = judge(b.history())
    for c in mixed.checks:
        if c.name.startswith(("probabilistic bound", "rigorous bound", "non-finite", "ulp_mean float16")):
            assert c.status is Status.PASS and c.worst.endswith(f"({where(SEED)})") and c.details == (), c


def test_an_accumulator_not_bit_exact_is_not_ready_at_a_first_commit_too():
    first = exact(Builder(commits=(A,)), MEAN, A, accumulator_mismatches=3.0).history()
    result = judge(first, A)
    check = exactness(result)
    assert result.verdict is Verdict.NOT_READY and result.first_commit
    assert (check.name, check.limit, check.worst) == ("int8 exactness", "accumulator bit-exact", "1 of 1 not bit-exact")
    words = f"{where(MEAN)}: accumulator not bit-exact: 3 int32 elements differ from the exact sum"
    assert check.details == (words,)
    assert check.culprits == (Culprit(first.series()[0], "accumulator_mismatches"),)
    # the report says it of the first commit too, and marks the row
    facts = report.compute(first, result)
    (row,) = facts["summary"]
    assert row["not_exact"] == "accumulator not bit-exact in 3 elements"
    assert row["judged"]["accumulator_mismatches"] == report_figures.FAIL
    assert [b.words for b in pair_verdicts.said_of(result).blamed] == [words]


@pytest.mark.parametrize("changed, metric, words", [
    ({"exact_fraction": 0.99}, "exact_fraction", "exact fraction 1 -> 0.99"),
    ({"max_step_error": 1.0}, "max_step_error", "max step error 0 -> 1 output steps"),
])
def test_an_output_less_exact_than_at_the_baseline_fails_and_the_report_blames_it(changed, metric, words):
    b = exact(exact(Builder(), MEAN, A), MEAN, B, **changed)
    history = b.history()
    result = judge(history)
    check = exactness(result)
    assert result.verdict is Verdict.NOT_READY and check.status is Status.FAIL
    assert check.details == (f"{where(MEAN)}: {words}",)
    assert check.culprits == (Culprit(history.series()[0], metric),)
    assert blamed(history, A, B) == [(check.name, f"{where(MEAN)}: {words}", check.culprits[0])]


def test_a_more_exact_output_passes_and_what_is_not_exact_is_said():
    b = Builder()
    exact(b, MEAN, A, exact_fraction=0.5, max_step_error=2.0)
    exact(b, MEAN, B, exact_fraction=0.75, max_step_error=1.0, accumulator_wrapped=2.0)
    result = judge(b.history())
    check = exactness(result)
    assert result.verdict is Verdict.READY and check.status is Status.PASS
    assert check.notes == (f"output not exact: {where(MEAN)}: exact fraction 0.75, max 1 steps (as at the baseline)",
                           f"wrapped: {where(MEAN)}: the exact value of 2 accumulator elements leaves int32 (the "
                           "inputs'): compared with its wrap")
    assert blamed(b.history(), A, B) == []


def test_int8_without_the_side_data_of_a_run_is_data_missing():
    b = exact(exact(Builder(), MEAN, A), MEAN, B, exact_fraction=0.5).unkept(B)
    check = exactness(judge(b.history()))
    assert check.status is Status.MISSING and check.worst == f"1 measured without exact_fraction at {B[:10]}"


def test_results_without_int8_say_so():
    floats = Builder()
    for commit in (A, B):
        floats.accurate(SEED, commit)
    check = exactness(judge(floats.history()))
    assert (check.status, check.worst) == (Status.NOT_CHECKED, "no int8 combination at any commit")
    dropped = exact(Builder(commits=(A, B, C)), MEAN, A).accurate(SEED, B).accurate(SEED, C)
    check = exactness(judge(dropped.history(), C))
    assert (check.status, check.worst) == (
        Status.NOT_CHECKED, "no int8 combination measured at this commit (int8 runs where --dtypes names it)")


MODEL = ("miniresnet", "int8", "llvm", "default")


def int8_model(b: Builder, commit, **changed) -> Builder:
    """The int8 model setting at ``commit`` as a suite before ``model_integer_differing`` and
    ``model_rmse`` gave it (``changed``: what a later one adds), beside a float kernel with samples."""
    values = {"model_rmse_ratio": 1.0, "model_rmse_ratio_fp32": 31.0, "model_max_abs_error": 0.41,
              "model_top1_agreement": 0.875, "model_top5_agreement": 1.0, **changed}
    return b.values_at(MODEL, commit, **values).accurate(SEED, commit).timing(SEED, commit)


@pytest.mark.parametrize("differing", [3.0, 0.0])
def test_a_whole_int8_model_unlike_the_integer_pipeline_is_not_ready_as_a_kernel_is(differing):
    """bench_model's model_integer_differing by the per-PrimFunc rule: any element unlike the exact
    integer pipeline's is NOT READY, judged at the candidate alone, so a baseline measured before
    the metric existed (none there) is no gap; the report's model table shows it and the RMSE."""
    b = int8_model(Builder(), A)
    int8_model(b, B, model_rmse=0.052, model_integer_differing=differing)
    history = b.history()
    result = judge(history)
    check = exactness(result)
    assert check.limit == ("accumulator bit-exact; exact fraction not lower, max step error not higher; a whole "
                           "model's outputs as the exact integer pipeline's")
    facts = report.compute(history, result)
    (row,) = [r for r in facts["models"] if r["dtype"] == "int8"]
    assert row["values"]["model_rmse"] == 0.052 and row["values"]["model_integer_differing"] == differing
    html = report.render_html(facts, history, facts["divergence"]["marks"])
    assert "<td>0.052</td>" in html
    if differing:
        words = f"{where(MODEL)}: model not exact: 3 uint8 elements differ from the exact integer pipeline"
        assert result.verdict is Verdict.NOT_READY
        assert (check.status, check.worst, check.details) == (
            Status.FAIL, f"1 of 1 not bit-exact or less exact than at {A[:10]}", (words,))
        assert check.culprits == (Culprit(b.series(MODEL), "model_integer_differing"),)
        assert blamed(history, A, B) == [(check.name, words, check.culprits[0])]
        assert '<strong class="not-exact">NOT EXACT</strong>:\n      3 elements differ' in html
    else:
        assert result.verdict is Verdict.READY
        assert (check.status, check.worst) == (Status.PASS, f"1 of 1 bit-exact, none less exact than at {A[:10]}")
        assert '<td class="l">exact</td>' in html
    # a first commit is judged by the same rule
    first = gate.evaluate(history, history.resolve(B), None, DEFAULTS)
    assert exactness(first).status is (Status.FAIL if differing else Status.PASS)


def test_an_int8_model_measured_before_the_integer_pipeline_existed_is_not_checked_one_that_lost_it_missing():
    """No commit has model_integer_differing (a suite before it): not a pass, and no gap; the
    model table's integer cell is empty, not "exact". Where an earlier commit has it and the
    candidate's model was measured without it, DATA MISSING (tests/test_faults_history.py's rule)."""
    b = int8_model(int8_model(Builder(), A), B)
    history = b.history()
    result = judge(history)
    assert result.verdict is Verdict.READY
    assert (exactness(result).status, exactness(result).worst) == (Status.NOT_CHECKED,
                                                                   "no int8 combination at any commit")
    html = report.render_html(report.compute(history, result), history, [])
    table = html[html.index('id="models-table"'):]
    table = table[:table.index("</table>")]
    assert '<th class="l">integer</th>' in table and table.count('<td class="l">–</td>') == 1
    assert '<td class="l">exact</td>' not in table and "NOT EXACT" not in table
    # measured at A, and B's run of the model lost it: DATA MISSING, as any metric that vanishes
    lost = judge(int8_model(b, A, model_integer_differing=0.0).history())
    check = exactness(lost)
    assert lost.verdict is Verdict.DATA_MISSING and check.status is Status.MISSING
    assert (check.worst, check.details) == ("1 measured without model_integer_differing, "
                                            "which an earlier commit has", (f"missing: {where(MODEL)}",))


# ----------------------------------------------------------------------------- real runs

WORKLOADS = f"{MEAN[0]},{POOL[0]}"


def run_int8(cli_or_run, out, repo, commit, workloads=WORKLOADS, orders="default,reduction-outer", env=None):
    return cli_or_run("run", "--dtypes", "int8", "--workloads", workloads, "--orders", orders, "--out", str(out),
                      "--tvm-repo", str(repo), "--tvm-commit", commit, env=env)


@pytest.fixture(scope="module")
def int8_runs(tmp_path_factory):
    """(run dir, repo, [three commits]) of two real int8 runs at the first two commits: the mean and
    a max pool, in default and reduction-outer. Made once per test session; tests change copies."""

    def make(base):
        repo = base / "tvm"
        commits = two_commit_repo(repo)
        _git(repo, "commit", "-q", "--allow-empty", "-m", "commit 2")
        commits.append(_git(repo, "rev-parse", "HEAD"))
        for commit in commits[:2]:
            done = run_int8(run_in_process, base / "asv", repo, commit, env={"HOME": str(base)})
            assert done.returncode == 0, done.stdout + done.stderr
        return [str(base / "asv"), str(repo), commits]

    out, repo, commits = made_once(tmp_path_factory, "asv-int8-history", make)
    return out, repo, commits


@pytest.mark.slow
@pytest.mark.longest  # it makes the module's two runs: 26 s at load 4 (--durations)
def test_real_int8_runs_are_ready_and_reported_exact(cli, int8_runs, tmp_path):
    out, repo, commits = int8_runs
    done = cli("gate", "--results", f"{out}/results", "--commit", commits[1], "--tvm-repo", repo, "--no-remeasure",
               "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    # the 4 kernels and the whole model (miniresnet int8 against its exact integer pipeline)
    assert checks[f"int8 exactness vs {commits[0][:10]}"]["worst"] == (
        f"5 of 5 bit-exact, none less exact than at {commits[0][:10]}")
    assert checks["probabilistic bound fraction (lambda 9.4)"]["worst"] == gate_checks.ONLY_INTEGERS
    # its logits against the float model's: within [model.int8] max_rmse (0.8), and over a limit below them
    # NOT READY, the line naming the model and its RMSE (reports/thresholds.toml: miniresnet's 0.109)
    assert (checks["model rmse int8"]["status"], checks["model rmse int8"]["worst"]) == (
        "PASS", "0.1093 (miniresnet int8 llvm default)")
    (tmp_path / "t.toml").write_text("[model.int8]\nmax_rmse = 0.1\n")
    over = cli("gate", "--results", f"{out}/results", "--commit", commits[1], "--tvm-repo", repo, "--no-remeasure",
               "--thresholds", str(tmp_path / "t.toml"))
    assert over.returncode == 1, over.stdout + over.stderr
    assert "\nfail: model rmse int8\n  miniresnet int8 llvm default: 0.1093\n" in over.stdout
    facts = reported(cli, f"{out}/results", tmp_path / "report", status=0)
    assert {m: m in facts["summary_columns"] for m in ("exact_fraction", "accumulator_mismatches", "ulp_mean")} == {
        "exact_fraction": True, "accumulator_mismatches": True, "ulp_mean": False}
    assert len(facts["summary"]) == 4 and all(r["values"]["exact_fraction"] == 1.0 and r["not_exact"] is None
                                              and r["values"]["accumulator_mismatches"] == 0 for r in facts["summary"])
    assert "acc. mismatches" in facts["html"] and 'id="int8-not-exact"' not in facts["html"]


def sum_dropping_a_term(monkeypatch):
    """int8's sums (the mean's accumulator) leave out the first term of every window: a wrong
    kernel, as a TVM that lost one term of a reduction would build."""
    from suite.compat import release

    kept = quantized._te_sum

    def dropping(te, x, attrs, shape):
        tir = release.tir()

        class OneTermLess:  # tvm.te, but for its sum
            def __getattr__(self, name):
                return getattr(te, name)

            def sum(self, expr, axis):
                first = tir.all(*(a.var == 0 for a in axis))
                return te.sum(tir.if_then_else(first, tir.const(0, quantized.ACCUMULATOR_DTYPE), expr), axis=axis)

        return kept(OneTermLess(), x, attrs, shape)

    monkeypatch.setattr(quantized, "_te_sum", dropping)


@pytest.mark.slow
def test_a_real_kernel_that_drops_a_term_is_not_ready_and_the_report_names_it(cli, int8_runs, tmp_path, monkeypatch):
    """The third commit's mean is built from TIR that drops one term of each sum, and run through
    `tvm-suite run` (one combination: measured in this process, into a cache of its own): its real
    accumulator differs from the oracle's. The gate fails it, naming it, at the third commit and as
    a first commit; the report's verdict on the pair blames the same lines, and its row is marked."""
    out, repo, commits = int8_runs
    run_dir = tmp_path / "asv"
    shutil.copytree(out, run_dir, ignore=shutil.ignore_patterns("html", "report"))
    sum_dropping_a_term(monkeypatch)
    done = run_int8(cli, run_dir, repo, commits[2], workloads=MEAN[0], orders="default",
                    env={"TVM_SUITE_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(f"verdict: NOT READY (a check failed) for {commits[2][:10]} against "
                                         f"{commits[1][:10]} -> exit 1")
    results_dir = run_dir / "results"
    history = results.load(results_dir, repo)
    (mean,) = [s for s in history.series() if s.ids == MEAN]
    wrong = history.value("accumulator_mismatches", mean, commits[2])
    fraction = history.value("exact_fraction", mean, commits[2])
    steps = history.value("max_step_error", mean, commits[2])
    assert wrong == 512 and 0 < fraction < 1 and steps > 0  # every sum of 512 channels lost its first term
    lines = [f"{where(MEAN)}: accumulator not bit-exact: 512 int32 elements differ from the exact sum",
             f"{where(MEAN)}: exact fraction 1 -> {fraction:.6g}",
             f"{where(MEAN)}: max step error 0 -> {steps:.0f} output steps"]
    metrics = ["accumulator_mismatches", "exact_fraction", "max_step_error"]
    # the whole model built with that TVM (its mean too) is no longer the exact integer pipeline's
    (model,) = [s for s in history.series() if s.ids == ("miniresnet", "int8", "llvm", "default")]
    differing = history.value("model_integer_differing", model, commits[2])
    assert differing > 0
    lines.append(f"miniresnet int8 llvm default: model not exact: {differing:.0f} uint8 elements differ from the "
                 "exact integer pipeline")
    metrics.append("model_integer_differing")
    done = cli("gate", "--results", str(results_dir), "--commit", commits[2], "--tvm-repo", repo, "--no-remeasure",
               "--json")
    assert done.returncode == 1
    check = next(c for c in json.loads(done.stdout)["checks"] if c["name"].startswith(gate_checks.EXACTNESS))
    assert (check["status"], check["details"]) == ("FAIL", lines)
    assert [(c["workload"], c["order"], c["metric"]) for c in check["culprits"]] == [
        *((MEAN[0], MEAN[3], m) for m in metrics[:3]), (model.workload, model.order, metrics[3])]
    # a first commit with that kernel fails too
    first = gate.evaluate(history, history.resolve(commits[2]), None, DEFAULTS)
    assert first.verdict is Verdict.NOT_READY and exactness(first).details == (lines[0], lines[3])
    # the report: the same lines of the same pair, its row marked, named above the table
    facts = reported(cli, results_dir, tmp_path / "report", status=1)
    agree(cli, results_dir, facts)
    (pair,) = [p for p in facts["pairs"] if p["candidate"]["hash"] == commits[2]]
    assert [(b["words"], b["metric"]) for b in pair["blamed"]] == list(zip(lines, metrics))
    (row,) = [r for r in facts["summary"] if (r["workload"], r["order"]) == MEAN[::3]]
    assert row["not_exact"] == f"accumulator not bit-exact in 512 elements; output {fraction:.4%} exact, up to " \
                               f"{steps:.0f} steps off"
    assert row["judged"]["accumulator_mismatches"] == row["judged"]["exact_fraction"] == report_figures.FAIL
    html = facts["html"]
    assert 'id="int8-not-exact"' in html and str(escape(row["not_exact"])) in html
    # the row's mark, the legend's, and the whole model's in the model table
    assert html.count('class="not-exact"') == 3 and f"{differing:,.0f} elements differ" in html
