"""int8 downstream of the workloads: `triage` judges integer programs against their exact value
(any difference CHANGED, a wrapped int32 accumulator named), `fuzz --dtypes int8` samples
MetaSchedule's schedules of the quantized workloads and judges them exactly, and the report shows
a tuned int8 kernel that did not tensorize."""

import json
from pathlib import Path

import numpy as np
import pytest

CASES = Path(__file__).parent / "data" / "triage"


def triage(cli, *args):
    """`tvm-suite triage ... --json`: (the exit status, the report)."""
    done = cli("triage", *map(str, args), "--json")
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None


def saved(tmp_path, **arrays) -> str:
    """``--inputs`` naming one .npy file per array."""
    items = []
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)
        items.append(f"{name}={tmp_path / name}.npy")
    return ",".join(items)


def quantized_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (4, 64)).astype("uint8"), rng.integers(-127, 128, (64, 16)).astype("int8"))


@pytest.mark.slow
def test_triage_a_narrower_accumulator_is_changed_and_named_as_wrapping(cli, tmp_path):
    """An int32 accumulator of uint8 x int8 products computed in int16 instead: every element the
    int16 sum wraps differs from the exact value, CHANGED (never within a bound), with the exact
    fraction and the largest difference numpy's int64 computes, and the wrap named."""
    a, w = quantized_inputs()
    exact = a.astype(np.int64) @ w.astype(np.int64)
    wrapped = exact.astype(np.int16).astype(np.int64)
    status, report = triage(cli, CASES / "qdot.py", CASES / "qdot_int16.py", "--inputs", saved(tmp_path, A=a, W=w),
                            "--repro", tmp_path / "repro.py")
    assert status == 12 and report["verdict"] == "CHANGED"
    (llvm,) = report["targets"]
    assert llvm["figures"]["exact_fraction"] == pytest.approx(np.mean(wrapped == exact))
    assert llvm["figures"]["max_step_error"] == int(np.abs(wrapped - exact).max()) > 0
    first = llvm["first_wrong"]
    assert first["exact"] == first["before"] == exact[tuple(first["index"])] != first["after"]
    assert first["after"] == wrapped[tuple(first["index"])] and first["bound"] == 0
    assert "never within a bound" in llvm["summary"]
    assert any("wrapped to int16" in note for note in llvm["notes"]), llvm["notes"]


@pytest.mark.slow
def test_triage_a_requantize_off_by_one_step_is_changed(cli, tmp_path):
    """The quantized matmul_add with its requantize rounding dropped (it floors): the uint8 output
    is one step low wherever round half up goes up, and that is CHANGED, with the fraction of exact
    elements the int64 oracle gives."""
    a, w = quantized_inputs(1)
    bias = np.random.default_rng(2).integers(-2000, 2000, (1, 16)).astype("int32")
    acc = a.astype(np.int64) @ w.astype(np.int64) + bias
    rounded = np.clip(((acc * 1865240858 + (1 << 40)) >> 41) + 128, 0, 255)
    floored = np.clip(((acc * 1865240858) >> 41) + 128, 0, 255)
    status, report = triage(cli, CASES / "qmatmul.py", CASES / "qmatmul_floor.py", "--inputs",
                            saved(tmp_path, input0=a, input1=w, input2=bias), "--repro", tmp_path / "repro.py")
    assert status == 12, report
    (llvm,) = report["targets"]
    assert 0 < np.mean(floored == rounded) < 1
    assert llvm["figures"]["exact_fraction"] == pytest.approx(np.mean(floored == rounded))
    assert llvm["figures"]["max_step_error"] == 1
    assert llvm["first_wrong"]["exact"] == rounded[tuple(llvm["first_wrong"]["index"])]


def test_triage_a_wrapped_int32_accumulator_is_named(cli, tmp_path):
    """A bias that takes one accumulator element past int32: the before program is undefined (TVM's
    int32 add is nsw), and the finding names that element of the accumulator, its exact value and
    its two's-complement wrap; nothing is compiled."""
    a, w = np.ones((4, 64), "uint8"), np.ones((64, 16), "int8")
    bias = np.zeros((1, 16), "int32")
    bias[0, 5] = 2 ** 31 - 10  # + 64: past int32 in column 5, rows 0 to 3
    status, report = triage(cli, CASES / "qmatmul.py", CASES / "qmatmul_floor.py", "--inputs",
                            saved(tmp_path, input0=a, input1=w, input2=bias))
    assert status == 13 and report["targets"] == []
    (found,) = report["undefined"]
    assert found["kind"] == "signed_overflow" and found["buffer"] == "bias_add" and found["index"] == [0, 5]
    assert found["count"] == 4
    exact = 2 ** 31 - 10 + 64
    assert (f"wraps the int32 accumulator bias_add[0, 5]: an addition overflows int32 (a value of {exact}, "
            f"{exact - 2 ** 32} in two's complement") in found["message"]
