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


def test_triage_refuses_a_dtype_it_does_not_take_in_one_line(cli, tmp_path):
    """int4 weights (numpy holds int4 through ml_dtypes, and nothing here evaluates it): one line
    naming the dtypes triage takes, before any build."""
    text = (CASES / "qdot.py").read_text().replace('"int8"', '"int4"')
    (tmp_path / "int4.py").write_text(text)
    done = cli("triage", tmp_path / "int4.py", tmp_path / "int4.py")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"tvm-suite: error: {tmp_path / 'int4.py'}: W is int4: triage does not take int4 values; it takes bool, int8, "
        "int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64")


# ----------------------------------------------------------------------------- fuzz


def journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_fuzz_int8_and_bfloat16_sample_schedules_and_judge_int8_exactly(cli, tmp_path):
    """int8 and bfloat16 in one small campaign (a 16-10 matmul_add: orders, one sampled trace and
    eight planted bugs): every unmodified schedule is EQUIVALENT; a planted bug in int8 is CHANGED
    against the integer oracle (bound 0, the exact value the oracle's), and bfloat16's is judged by
    its own rounding bound."""
    from suite.core import quantized, workloads

    workload = "miniresnet.matmul_add.16-10"
    done = cli("fuzz", "--workloads", workload, "--dtypes", "int8,bfloat16", "--traces", "1", "--plant", "8",
               "--out", tmp_path / "o", "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)["table"]
    for dtype in ("int8", "bfloat16"):
        row = table[f"{workload} {dtype} llvm"]
        assert row["EQUIVALENT"] >= 4 and row["CHANGED"] == row["SHIFTED"] == row["BUILD_FAILED"] == 0, row
    lines = journal(tmp_path / "o")
    assert {(line["dtype"], line["kind"]) for line in lines if line["outcome"] == "EQUIVALENT"} == {
        (dtype, kind) for dtype in ("int8", "bfloat16") for kind in ("order", "trace")}
    chosen = workloads.get(workload)
    oracle = quantized.evaluate(chosen.chain, workloads.make_inputs(chosen, "int8")).output
    wrong = [line for line in lines if line["dtype"] == "int8" and line["outcome"] == "CHANGED"]
    assert {line["name"] for line in wrong} == {"off_by_one_outer_loop#4", "truncating_cast#6"}
    for line in wrong:
        first = line["first_wrong"]
        assert first["bound"] == 0 and first["exact"] == first["before"] == oracle[tuple(first["index"])]
        assert first["after"] != first["exact"] and "uint8 results must match exactly" in line["summary"]
    (bf16,) = [line for line in lines if line["dtype"] == "bfloat16" and line["kind"] == "plant"
               and line["outcome"] not in ("NOT_APPLICABLE",)]
    assert bf16["outcome"] == "SHIFTED" and "(K = 17, bfloat16)" in bf16["summary"]
    assert 0 < bf16["first_wrong"]["bound"] < abs(bf16["first_wrong"]["exact"])


@pytest.mark.slow
def test_fuzz_int8_samples_the_tensorized_space_tune_searches(cli, tmp_path):
    """int8 traces come from the design space `tune --dtype int8` searches: tiled for the CPU's
    dot-product intrinsic first (VNNI here), the weights packed into its 16x4 blocks by the trace
    itself, so that it replays on the unpacked kernel; a tensorized trace is judged exactly
    (EQUIVALENT: bit for bit the oracle's), and the journal says per trace what it tensorized with."""
    from suite.compat import intrinsics
    from suite.targets import llvm

    choice = llvm.dot_product_intrinsic()
    if choice.intrinsic is None:
        pytest.skip(choice.reason)
    done = cli("fuzz", "--workloads", "miniresnet.conv2d_add.8x8x16-k3s1-16", "--dtypes", "int8", "--traces", "1",
               "--out", tmp_path / "o", "--json")
    assert done.returncode == 0, done.stderr
    assert f"tiled for {intrinsics.dot_product_intrinsic_name(choice.intrinsic)} first ({choice.reason})" in done.stderr
    assert json.loads(done.stdout)["tensorized"] == {"traces_offered_intrinsic": 1, "traces_tensorized": 1}
    (trace,) = [line for line in journal(tmp_path / "o") if line["kind"] == "trace"]
    assert trace["outcome"] == "EQUIVALENT" and "bit for bit" in trace["summary"]
    assert trace["tensorized"] == [intrinsics.dot_product_intrinsic_name(choice.intrinsic)]
    assert [inst[0] for inst in trace["trace"][0][1:4]] == ["CacheRead", "TransformLayout", "Annotate"]  # the packing


@pytest.mark.parametrize("args, words", [
    (("--dtypes", "int4"), "unknown dtype 'int4'; valid dtypes: float32, float16, int8, bfloat16"),
    (("--dtypes", "int8", "--targets", "llvm-avx512bf16"),
     "--targets llvm-avx512bf16: llvm-avx512bf16 does not run int8: only bfloat16 has native instructions"),
    (("--dtypes", "bfloat16", "--targets", "hexagon-v68-qf"),
     "hexagon-v68-qf does not run bfloat16: on Hexagon, int8 runs on hexagon-v68-qf and hexagon-v73-qf"),
])
def test_fuzz_refuses_a_dtype_it_cannot_run_in_one_line(cli, tmp_path, args, words):
    done = cli("fuzz", "--workloads", "miniresnet.matmul_add.16-10", *args, "--out", tmp_path / "o")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert words in line and not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- the report

#: A tuned int8 kernel that did not tensorize: the committed record of ResNet-18's matmul (1000
#: outputs) offered dot_16x4_vnni and its kernel holds no vpdpbusd (docs/int8-tuned.md).
MATMUL = "resnet18.matmul_add.512-1000"
#: One that did (16 vpdpbusd), replayed only where the CPU has VNNI: elsewhere its kernel cannot run.
CONV = "resnet18.conv2d_add_radd_relu.28x28x128-k1s2-256"
CHROMIUM = Path("/usr/bin/chromium")


def has_vnni() -> bool:
    return "avx512_vnni" in Path("/proc/cpuinfo").read_text().split()


@pytest.mark.slow
def test_the_report_names_a_tuned_int8_kernel_that_did_not_tensorize(cli, tmp_path):
    """A real `run` of tuned int8 kernels: the report's intrinsic column and its callout say what
    the replayed records say (the matmul: not used, 0 vpdpbusd; the conv2d, where this CPU runs it:
    16 vpdpbusd), and headless Chromium shows the callout."""
    import subprocess

    from asv_runs import two_commit_repo
    from test_report_agreement import reported

    repo = tmp_path / "tvm"
    commit = two_commit_repo(repo)[0]
    chosen = [MATMUL] + ([CONV] if has_vnni() else [])
    done = cli("run", "--dtypes", "int8", "--workloads", ",".join(chosen), "--orders", "tuned", "--out",
               str(tmp_path / "asv"), "--tvm-repo", str(repo), "--tvm-commit", commit)
    assert done.returncode == 0, done.stdout + done.stderr
    facts = reported(cli, tmp_path / "asv" / "results", tmp_path / "report")
    rows = {r["workload"]: r for r in facts["summary"]}
    assert "intrinsic" in facts["summary_columns"] and rows[MATMUL]["records"] == "llvm"
    assert rows[MATMUL]["intrinsic"] == {
        "offered": "dot_16x4_vnni", "instruction": "vpdpbusd", "count": 0, "executed": None, "used": False,
        "reason": "the CPU has avx512_vnni",
        "words": "not used: dot_16x4_vnni offered, 0 vpdpbusd in the kernel", "finding": True}
    if has_vnni():
        assert rows[CONV]["intrinsic"]["used"] and rows[CONV]["intrinsic"]["words"] == "vpdpbusd x16"
    page = tmp_path / "report" / "index.html"
    if not CHROMIUM.exists():
        pytest.skip("the page is checked in Debian's chromium (/usr/bin/chromium), not installed here")
    dom = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    callout = dom[dom.index('id="int8-not-tensorized"'):]
    callout = " ".join(callout[:callout.index("</div>")].split())
    assert "<strong>1 tuned int8 kernel did not tensorize at" in callout
    assert f"{MATMUL} int8 llvm tuned</code>: not used: dot_16x4_vnni offered, 0 vpdpbusd in the kernel" in callout
    assert CONV not in callout
