"""Numbers that cannot lie: an input no dtype holds, a nan in a verdict's comparison, a threshold
that would switch a check off, an overflow in the bound's arithmetic, and `check --baseline-from`
with a dtype not asked for.

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together. The contract: bad input is one line on stderr naming what
is wrong (exit 2, never a traceback); a nan is judged a difference, never "within the bound"; a
kept baseline is judged only on what the check measures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from asv_runs import two_commit_repo
from conftest import check_fault_table, one_line, run_in_process
from suite.core import bounds
from suite.reporting import thresholds
from suite.triage import inputs, ir, verdict
from test_check import history_stand_in
from test_faults_untrusted import here, refused

CASES = Path(__file__).parent / "data" / "triage"
MATMUL = [CASES / "matmul.py", CASES / "matmul_wrong_split.py"]

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "an input value its dtype cannot hold": ["test_an_input_file_beyond_its_dtype_is_one_line",
                                             "test_an_input_value_that_would_change_is_refused_naming_it",
                                             "test_an_input_range_beyond_its_dtype_is_one_line"],
    "a nan in a verdict's comparison": ["test_an_output_that_misses_a_non_finite_exact_value_is_changed",
                                        "test_a_nan_error_shift_is_never_reordered"],
    "a threshold that switches a check off": ["test_a_threshold_that_would_switch_a_check_off_is_refused",
                                              "test_every_command_refuses_a_lambda_beyond_the_bound_at_load"],
    "a threshold no float holds": ["test_a_threshold_of_hundreds_of_digits_is_one_line_naming_its_range"],
    "an overflow in the bound's arithmetic": ["test_the_bound_never_overflows"],
    "a dtype not asked for": ["test_a_kept_baseline_is_judged_on_the_dtypes_asked_for_only"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


# ----------------------------------------------------------------------------- an input value its dtype cannot hold


def test_an_input_file_beyond_its_dtype_is_one_line(tmp_path):
    """A float64 .npy holding 1e300 for a float32 input: refused in one line naming the input, the
    file and the first element (it became inf, and two different functions were judged REORDERED
    with every figure nan)."""
    values = np.random.default_rng(0).uniform(-1, 1, (32, 32))
    values[:, 25] = 1e300
    np.save(tmp_path / "f64.npy", values)
    line = refused(here(*MATMUL, "--inputs", f"A={tmp_path / 'f64.npy'}"))
    assert line == (f"tvm-suite: error: --inputs A={tmp_path / 'f64.npy'}: A[0, 25] = 1e+300 does not fit float32 "
                    "(largest finite value 3.40282e+38): it would be inf (32 of 1,024 elements are not float32 values)")


@pytest.mark.parametrize("dtype, stored, words", [
    ("float16", [0.5, np.nan, 1.0, 2.0], "A[1] = nan is not a finite number"),
    ("float32", [0.5, 1.0, -np.inf, 2.0], "A[2] = -inf is not a finite number"),
    ("float16", [0.5, 65519.0, 65520.0, 2.0], "A[2] = 65520.0 does not fit float16 (largest finite value 65504)"),
    ("int8", [1.0, 2.5, 3.0, 4.0], "A[1] = 2.5 is not a whole number"),
    ("int8", np.array([1, 2, 300, 4], dtype=np.int64), "A[2] = 300 does not fit int8 ([-128, 127])"),
    ("int64", [1.0, 2.0 ** 63, 3.0, 4.0], f"A[1] = {2.0 ** 63!r} does not fit int64"),
    ("uint8", np.array([1, -1, 3, 4], dtype=np.int16), "A[1] = -1 does not fit uint8 ([0, 255])"),
    ("bool", np.array([0, 1, 2, 1], dtype=np.uint8), "A[2] = 2 is neither 0 nor 1"),
])
def test_an_input_value_that_would_change_is_refused_naming_it(tmp_path, dtype, stored, words):
    """Each value of an input file must be one of the input's dtype: finite, in range, whole for an
    integer, 0 or 1 for a bool (it was wrapped, cut or made inf without a word); rounding to a
    float's precision is kept (65519 is float16's 65504)."""
    path = tmp_path / "a.npy"
    np.save(path, np.asarray(stored))
    param = ir.Buf("A", (4,), dtype, param=True)
    with pytest.raises(inputs.BadInputs) as err:
        inputs.make(inputs.parse(f"A={path}"), [param])
    assert f"--inputs A={path}: {words}" in str(err.value) and "\n" not in str(err.value)
    np.save(path, np.asarray([0.5, 65519.0, 1.0, -2.0]).astype("float64"))
    assert inputs.make(inputs.parse(f"A={path}"), [ir.Buf("A", (4,), "float16", param=True)])["A"][1] == 65504


def test_an_input_range_beyond_its_dtype_is_one_line():
    """A range whose draws a float32 cannot hold (they were inf), and a float64 range wider than
    the largest float64 (numpy's OverflowError, a traceback), are one line each."""
    refused(here(*MATMUL, "--inputs", "A=-1e39:1e39"), "range [-1e+39, 1e+39) for A does not fit its float32")
    param = ir.Buf("A", (4,), "float64", param=True)
    with pytest.raises(inputs.BadInputs, match=r"range \[-1e\+308, 1e\+308\) for A is wider than the largest"):
        inputs.make(inputs.parse("A=-1e308:1e308"), [param])


# ----------------------------------------------------------------------------- a nan in a verdict's comparison


def _expected(value, magnitude, k=32, dtype="float32"):
    return verdict.Expected(np.asarray(value, float), np.asarray(magnitude, float), k, "C", dtype)


def test_an_output_that_misses_a_non_finite_exact_value_is_changed():
    """Where the exact value is inf, an output that is finite there is beyond the bound (its nan
    comparison passed as within: REORDERED); one that is the exact inf, or the exact nan, is not."""
    expected = _expected([math.inf, 1.0, math.nan, 2.0], [math.inf, 1.0, math.nan, 2.0])
    before = np.array([np.inf, 1.0, np.nan, 2.0], dtype=np.float32)
    after = np.array([3.0, 1.0, np.nan, 2.0], dtype=np.float32)
    judged = verdict.judge(expected, before, after)
    assert judged.kind == verdict.CHANGED and judged.first["index"] == [0], judged.summary
    assert "C[0]: after 3, before inf, exact inf; the exact value is inf, which only inf matches" in judged.summary
    json.dumps(judged.to_json(), allow_nan=False)  # its document stays JSON
    same = np.array([np.inf, 1.0, np.nan, 2.0 + 2 ** -22], dtype=np.float32)
    assert verdict.judge(expected, before, same).kind == verdict.REORDERED


def test_a_nan_error_shift_is_never_reordered():
    """A before program whose output is inf where the exact value is finite: the error shift's
    figures are nan, and a nan crosses the divergence rules (it was "within" them: REORDERED)."""
    expected = _expected([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    before = np.array([np.inf, 2.0, 3.0, 4.0], dtype=np.float32)
    after = np.array([1.0, 2.0, 3.0, 4.0 + 2 ** -21], dtype=np.float32)
    judged = verdict.judge(expected, before, after)
    assert math.isnan(judged.figures["bias_shift"])
    assert judged.kind == verdict.SHIFTED, judged.summary


# ----------------------------------------------------------------------------- a threshold that switches a check off


def _load(tmp_path: Path, text: str):
    path = tmp_path / "t.toml"
    path.write_text(text)
    return thresholds.load(path)


@pytest.mark.parametrize("text, words", [
    ("[bound]\nlambda = 1e7\n", "bound.lambda = 10000000.0 is out of range: it must be above 0 and below 20.87"),
    ("[bound]\nlambda = 30000\n", "bound.lambda = 30000 is out of range: it must be above 0 and below 20.87"),
    ("[bound]\nmax_fraction = 3\n", "bound.max_fraction = 3 is out of range: with lambda = 9.4 it must be above 0 "
                                    "and below 2.724 (1 / gamma~_4610(9.4) in float16)"),
    ("[bound]\nlambda = 20\nmax_fraction = 1.1\n", "bound.max_fraction = 1.1 is out of range: with lambda = 20 it "
                                                   "must be above 0 and below 1.061"),
    ("[bound]\nmax_nonfinite = 1e9\n", "bound.max_nonfinite = 1000000000.0 is out of range: it must be a whole "
                                       "number from 0 to 9"),
    ("[latency]\nmax_ratio = 1e9\n", "latency.max_ratio = 1000000000.0 is out of range: it must be at least 1 "
                                     "(a ratio below 1 would fail an unchanged value) and at most 10"),
    ("[latency]\nretimed_max_ratio = 11\n", "latency.retimed_max_ratio = 11 is out of range"),
    ("[change.packets]\nmax_ratio = 100\n", "change.packets.max_ratio = 100 is out of range"),
    ("[accuracy.float16]\nulp_mean = 1025\n", "accuracy.float16.ulp_mean = 1025 is out of range: it must be above 0 "
                                              "and at most 1024 (2^10"),
    ("[accuracy.float32]\nscaled_error = 1e9\n", "accuracy.float32.scaled_error = 1000000000.0 is out of range: it "
                                                 "must be above 0 and at most 8388608"),
    ("[model.float16]\nmax_abs_error = 1e9\n", "model.float16.max_abs_error = 1000000000.0 is out of range"),
    ("[model.float32]\nmax_rmse_ratio = 1e9\n", "model.float32.max_rmse_ratio = 1000000000.0 is out of range"),
    ("[model.int8]\nmax_rmse = 1e9\n", "model.int8.max_rmse = 1000000000.0 is out of range: it must be above 0 "
                                    "and at most 10 (ten times the logits' standard deviation)"),
    ("[model.bfloat16]\nmax_rmse_ratio_fp32 = 1e9\n", "model.bfloat16.max_rmse_ratio_fp32 = 1000000000.0 is out "
                                                     "of range: it must be at least 1 (float32's own ratio) and at "
                                                     "most 8388608 (2^23"),
    ("[divergence]\nmax_error_ratio = 1e9\n", "divergence.max_error_ratio = 1000000000.0 is out of range"),
    ("[divergence]\nmax_bias_shift = 1e9\n", "divergence.max_bias_shift = 1000000000.0 is out of range: it must be "
                                             "at least 0 and at most 10"),
    ("[divergence]\nmin_z = 1e9\n", "divergence.min_z = 1000000000.0 is out of range: it must be at least 0 and at "
                                    "most 10"),
    ("[divergence]\nworse_factor = 1e9\n", "divergence.worse_factor = 1000000000.0 is out of range"),
])
def test_a_threshold_that_would_switch_a_check_off_is_refused(tmp_path, text, words):
    """Every threshold has a range checked at load, naming the key, the value and the range: a
    lambda of 1e7 made the bound admit any error (CHANGED read REORDERED, fuzz's recall 1.0)."""
    with pytest.raises(thresholds.ThresholdsError) as err:
        _load(tmp_path, text)
    assert words in str(err.value) and str(tmp_path / "t.toml") in str(err.value) and "\n" not in str(err.value)


def test_every_command_refuses_a_lambda_beyond_the_bound_at_load(tmp_path):
    """lambda = 30000 overflowed in gate (a traceback, exit 1 read as NOT READY, empty stdout under
    --json) and lambda = 1e7 in triage; fuzz ran with it. Each is one line, exit 2, before any work;
    --json gives the error as its document. The largest lambda allowed is still a finite bound."""
    too_large = tmp_path / "lambda.toml"
    too_large.write_text("[bound]\nlambda = 30000\n")
    (tmp_path / "results").mkdir()
    gate = run_in_process("gate", "--results", tmp_path / "results", "--commit", "HEAD", "--thresholds", too_large, "--json")
    assert gate.returncode == 2 and "Traceback" not in gate.stderr, gate.stderr
    assert "bound.lambda = 30000 is out of range" in json.loads(gate.stdout)["error"]
    one_line(run_in_process("fuzz", "--traces", "1", "--plant", "1", "--out", tmp_path / "fuzz", "--thresholds", too_large),
             "bound.lambda = 30000", "below 20.87")
    assert not (tmp_path / "fuzz").exists()
    too_large.write_text("[bound]\nlambda = 1e7\n")
    refused(here(CASES / "rowsum.py", "--schedule", CASES / "rowsum_rfactor.py", "--thresholds", too_large),
            "bound.lambda = 10000000.0 is out of range")
    assert _load(tmp_path, "[bound]\nlambda = 20.8\nmax_fraction = 1.0\n").bound.lam == 20.8


def test_a_threshold_of_hundreds_of_digits_is_one_line_naming_its_range(tmp_path):
    """An integer beyond the largest float (400 nines) was an OverflowError traceback (exit 1) from
    the range check itself, and one of more digits than Python reads (5000) a ValueError from the
    TOML reader: each is one line naming the key and its range, exit 2, in every command that
    reads thresholds; a large integer that a float holds is named by its digits' count too."""
    (tmp_path / "results").mkdir()
    for digits, where, sign in ((400, "", ""), (5000, ", line 2", ""), (30, "", "-")):
        path = tmp_path / f"t{digits}.toml"
        path.write_text(f"[latency]\nalpha = {sign}{'9' * digits}\n")
        said = f"{'a negative' if sign else 'an'} integer of {digits} digits"
        line = one_line(run_in_process("gate", "--results", tmp_path / "results", "--commit", "HEAD", "--thresholds", path),
                        f"{path}{where}: latency.alpha = {said} is out of range: it must be between 0 and 1")
        assert len(line) < 300, line
    one_line(run_in_process("fuzz", "--traces", "1", "--plant", "1", "--out", tmp_path / "fuzz", "--thresholds",
                     tmp_path / "t400.toml"), "latency.alpha = an integer of 400 digits is out of range")
    assert not (tmp_path / "fuzz").exists()
    with pytest.raises(thresholds.ThresholdsError) as err:
        _load(tmp_path, f"[bound]\nmax_nonfinite = 1{'0' * 400}\n")
    assert "bound.max_nonfinite = an integer of 401 digits is out of range: it must be a whole number" in str(err.value)


# ----------------------------------------------------------------------------- an overflow in the bound's arithmetic


def test_the_bound_never_overflows():
    """gamma~ past the largest float is nan (no bound of that form), never an OverflowError (it
    reached the user as a traceback); just below the largest lambda allowed it stays below 1."""
    assert math.isnan(bounds.gamma_tilde(bounds.K_MAX, "float16", 30000))
    assert math.isnan(bounds.gamma_tilde(bounds.K_MAX, "float16", 1e300))
    assert bounds.gamma_tilde(bounds.K_MAX, "float16", bounds.MAX_LAMBDA) == pytest.approx(1.0)
    assert bounds.gamma_tilde(bounds.K_MAX, "float16", 20.8) < 1


# ----------------------------------------------------------------------------- a dtype not asked for

WORKLOAD = "miniresnet.matmul_add.16-10"


@pytest.fixture(scope="module")
def kept_and_candidate(tmp_path_factory):
    """A kept history of the baseline in float32 and float16, and an --out with the candidate
    measured in float32 alone (two small real runs, the whole-model benchmarks left out)."""
    base = tmp_path_factory.mktemp("dtypes")
    repo = base / "tvm"
    commits = two_commit_repo(repo)
    env = {"HOME": str(base), "TVM_SUITE_MODELS": "none"}
    for commit, dtypes, out in ((commits[0], "float32,float16", "kept"), (commits[1], "float32", "check")):
        done = run_in_process("run", "--quick", "--workloads", WORKLOAD, "--dtypes", dtypes, "--out", base / out,
                              "--tvm-repo", repo, "--tvm-commit", commit, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    return base, repo, commits


@pytest.mark.slow  # two whole runs (real kernels built and measured) make the kept history
def test_a_kept_baseline_is_judged_on_the_dtypes_asked_for_only(cli, kept_and_candidate, monkeypatch):
    """`check --baseline-from KEPT --dtypes float32`: the kept history's float16 rows are not the
    check's (it was DATA MISSING, exit 2, for rows nobody asked for); float32 is judged against it."""
    base, repo, commits = kept_and_candidate
    history_stand_in(monkeypatch)
    done = cli("check", commits[1], "--baseline-from", base / "kept", "--tvm-repo", repo, "--out", base / "check",
               "--workloads", WORKLOAD, "--dtypes", "float32", "--json", env={"HOME": str(base)})
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert not [name for name, c in checks.items() if c["status"] == "MISSING"]
    assert (checks["ulp_mean float16"]["status"], checks["ulp_mean float16"]["worst"]) == (
        "NOT CHECKED", "no values at any commit")
    assert checks["ulp_mean float32"]["status"] == "PASS"
    assert checks[f"ulp_mean vs {commits[0][:10]}"]["worst"] == "0 of 1"
