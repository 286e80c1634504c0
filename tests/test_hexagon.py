"""Hexagon targets: compile metrics (needs only TVM), and runs on qemu-hexagon (needs qemu-user, clang, lld).

The emulated tests cover the seed conv2d (default order, about 45 s on an idle core) and small
workloads; the tuned seed schedules take minutes of scalar fp16 LLVM codegen and are benchmark runs.
"""

import json
import math
import re

import numpy as np
import pytest

from suite import targets
from suite.core import measurement, run_bundle, run_place
from suite.core.combo import Combo
from suite.core.record import Kind, Status
from suite.targets import hexagon
from suite.targets.base import Mode

SEED = "seed.conv2d_nhwc_7x7s2"
SMALL = ["resnet50.mean.7x7x2048", "resnet50.max_pool2d.112x112x64-k3s2"]
needs_emulator = pytest.mark.skipif(
    bool(hexagon.missing_tools()),
    reason=f"qemu-hexagon, clang and ld.lld are needed (missing: {', '.join(hexagon.missing_tools())}; "
           "apt-get install qemu-user clang lld)")


def test_targets_registered():
    names = targets.names()
    for name in ("hexagon-v68", "hexagon-v69", "hexagon-v73", "hexagon-v68-emu"):
        assert name in names
    assert targets.get("hexagon-v68").mode is Mode.COMPILE_ONLY
    assert targets.get("hexagon-v68-emu").mode is Mode.EMULATED
    assert targets.get("hexagon-v68").records_from == ("hexagon-v68-qf", "llvm")  # tuned on the emulator, else x86
    assert "-hexagon-autohvx=1" in targets.get("hexagon-v68").llvm_options
    assert "-force-hvx-float" in targets.get("hexagon-v68").llvm_options
    assert "+hvx-qfloat" in targets.get("hexagon-v73").mattr


def test_asm_metrics_counts_qfloat():
    asm = "\n".join([
        "main:", "\t{", "\t\tv22.qf16 = vmpy(v0.hf,v15.hf)", "\t\tv6.qf16 = vadd(v6.qf16,v23.hf)",
        "\t}", "\t{", "\t\tv1.hf = v1.qf16", "\t\tr0 = sfadd(r1,r0)", "\t\tcall __extendhfsf2",
        "\t}", "\t.size main, .-main",
    ])
    m = hexagon.asm_metrics(asm)
    assert m["instructions"] == 5
    assert (m["qfloat_arith"], m["qfloat_convert"], m["qfloat_total"]) == (2, 1, 3)
    assert m["hvx_fp_vector"] == 3 and m["scalar_fp"] == 1 and m["fp16_conversion_calls"] == 1


@pytest.mark.slow
def test_compile_only_v68_seed_tuned_uses_qfloat(cli):
    done = cli("measure", "--workload", SEED, "--dtype", "float16", "--target", "hexagon-v68",
               "--order", "seed-tuned", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["kind"] == "compile-only" and "metrics" not in record and "latency_s" not in record
    codegen = record["codegen"]
    assert codegen["e_flags"] == "0x68" and codegen["code_bytes"] > 0
    assert codegen["qfloat_arith"] > 0 and codegen["qfloat_total"] > 0
    text = cli("measure", "--workload", SEED, "--dtype", "float16", "--target", "hexagon-v68",
               "--order", "seed-tuned")
    assert text.returncode == 0 and "compile-only" in text.stdout


def test_missing_tools_one_line_error(cli, tmp_path):
    done = cli("measure", "--workload", SMALL[0], "--dtype", "float16", "--target", "hexagon-v68-emu",
               env={"PATH": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "qemu-hexagon" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_tools_recorded_as_skip(monkeypatch, tmp_path):
    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path))  # a cached record would be answered without the tools
    monkeypatch.setattr(hexagon.shutil, "which", lambda name: None)
    record = measurement.measure(Combo.resolve(SMALL[0], "float16", "hexagon-v68-emu", "default"))
    assert record.status is Status.SKIPPED and "qemu-hexagon" in record.reason


@pytest.mark.longest
@needs_emulator
@pytest.mark.slow
def test_emulated_seed_and_small_workloads_match_reference():
    combos = [Combo.resolve(SEED, "float16", "hexagon-v68-emu", "default")]
    combos += [Combo.resolve(w, d, "hexagon-v68-emu", "default") for w in SMALL for d in ("float16", "float32")]
    records = measurement.measure_many(combos, jobs=2)
    for combo, record in records.items():
        assert record.ok, (combo, record.get("reason"))
        assert record.kind is Kind.EMULATED and record.emulated_s > 0
        assert record.codegen["e_flags"] == "0x67"  # v67 ELF: QEMU 7.2 refuses v68
        m = record.metrics
        assert m["nonfinite"] == 0 and m["bound_fraction"] < 1.0, (combo, m)
    # fp16 seed conv: the same scale of error as on x86 (~10 ULP mean against float64)
    assert records[combos[0]].metrics["ulp_mean"] < 30


@needs_emulator
@pytest.mark.slow
def test_emulated_pool_is_exact_and_cached():
    wid = SMALL[1]
    record = measurement.measure(Combo.resolve(wid, "float16", "hexagon-v68-emu", "default"))
    assert record.ok
    # max pooling rounds nothing: Hexagon output equals the reference rounded to fp16
    assert record.metrics["ulp_max"] <= 0.5
    kernel = measurement.load_kernel(Combo.resolve(wid, "float16", "hexagon-v68-emu", "default"))
    out = kernel.output()  # from the content-keyed run cache, no second emulation
    np.testing.assert_array_equal(out, measurement.output(Combo.resolve(wid, "float16", "hexagon-v68-emu", "default")))


@needs_emulator
@pytest.mark.slow
def test_run_on_emulated_target_records_emulated_time_and_no_failures(cli, tmp_path):
    """`run --targets hexagon-v68-emu`: asv exits 0 (metrics the variant lacks are skips, not
    failures), and the summary prints packets executed, never latency."""
    out = tmp_path / "asv"
    # the whole model (miniresnet) on one input, not 8: each is a run of its 9 calls under the emulator
    result = cli("run", "--quick", "--targets", "hexagon-v68-emu", "--workloads", SMALL[0],
                 "--dtypes", "float16", "--orders", "default", "--out", str(out),
                 env={"HOME": str(tmp_path), "TVM_SUITE_MODEL_INPUTS": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(SMALL[0]))
    assert re.search(r"\s[\d,]+ pkts\s", row) and row.endswith("ok")
    files = [p for p in (out / "results").glob("*/*.json") if p.name != "machine.json"]
    results = json.loads(files[0].read_text())["results"]
    assert results["bench_codegen.HexagonEmulated.track_emulated_seconds"][0][0] > 0
    assert results["bench_codegen.HexagonCodegen.track_code_bytes"][0][0] > 0
    packets = results["bench_codegen.HexagonCounts.track_packets"][0][0]
    assert f"{int(packets):,} pkts" in row and packets > 0
    # HVX instructions have no worse direction: kept beside asv's results, not an asv benchmark
    assert "bench_codegen.HexagonCounts.track_hvx_instructions" not in results
    (bundle,) = (out / "runs").glob("*/*.zip")
    kept = run_bundle.sealed_members(run_place.Place(out, bundle.parent.name, bundle.stem))
    counts = kept[f"values/{SMALL[0]}.float16.hexagon-v68-emu.default/bench_codegen.HexagonCounts.json"]
    assert 0 <= json.loads(counts)["hvx_instructions"] <= packets * 4

    def skipped(name):  # asv stores a skipped parameter combination as NaN
        return results[name][0][0] is None or math.isnan(results[name][0][0])

    # qfloat instruction counts (kept beside asv's results: no direction) are no asv benchmark
    assert not any(name.endswith("track_qfloat_instructions") for name in results)
    # latency is not even a parameter of an emulated-only run: Throughput has no combination to time
    assert "bench_latency.Throughput.track_latency_median" not in results
