"""Real TVM builds and runs on the llvm target, measured against the float64 reference; the cache
entry is one unit."""

import json

import numpy as np
import pytest

from suite.core import measurement, metrics, timing, workloads
from suite.core.combo import Combo
from suite.core.record import Kind, Status

SEED = workloads.SEED_ID


def combo(workload=SEED, dtype="float32", target="llvm", order="default"):
    return Combo.resolve(workload, dtype, target, order)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_seed_conv2d_is_measured_with_real_metrics(dtype):
    record = measurement.measure(combo(dtype=dtype))
    assert record.status is Status.OK and record.kind is Kind.LATENCY, record
    m = record.metrics
    assert record.accumulation_length == 147
    # Latency is not cached with the record: it is timed afresh, here and on every run.
    taken = timing.take(combo(dtype=dtype))
    assert len(taken.samples_s) == timing.REPEATS and min(taken.samples_s) > 0
    assert timing.gflops(combo(dtype=dtype), taken.median) == pytest.approx(236_027_904 / taken.median / 1e9)
    assert m["nonfinite"] == 0
    # Plain recursive summation stays well inside the worst-case rounding bound...
    assert 0 < m["bound_fraction"] < 1
    # ...and a few ULPs of the output scale, in either dtype.
    assert 0.5 < m["scaled_error"] < 50
    assert 1 < m["ulp_mean"] < 100


def test_fp16_error_in_absolute_terms_is_larger_than_fp32():
    fp16 = measurement.measure(combo(dtype="float16")).metrics
    fp32 = measurement.measure(combo(dtype="float32")).metrics
    assert fp16["max_abs_error"] > 100 * fp32["max_abs_error"]


def test_output_matches_an_independent_recomputation():
    c = combo("resnet50.matmul_add.2048-1000")
    record = measurement.measure(c)
    assert record.ok
    out = measurement.output(c)
    x, w, b = workloads.make_inputs(c.workload, "float32")
    expected = x.astype(np.float64) @ w.astype(np.float64) + b
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert record.accumulation_length == 2049


def test_measurements_are_cached_and_deterministic():
    c = combo()
    record = measurement.measure(c)
    assert {"record.json", "kernel.so", "output.npy"} <= {p.name for p in c.entry.iterdir()}
    assert set(record.parts) == {"kernel.so", "output.npy"}
    first = measurement.output(c)
    # Same TVM build, same inputs: a fresh compile and run gives bit-identical results.
    (c.entry / "record.json").unlink()
    again = measurement.measure(c)
    np.testing.assert_array_equal(measurement.output(c), first)
    assert again.metrics == record.metrics
    assert metrics.divergence(first, first)["differ_fraction"] == 0.0


def test_kernel_of_a_measured_combination_runs():
    kernel = measurement.load_kernel(combo("resnet50.mean.7x7x2048", "float16"))
    assert kernel.output().shape == (1, 2048)


@pytest.mark.parametrize("part", ["output.npy", "kernel.so", "record.json", "missing output"])
def test_a_damaged_part_remeasures_the_whole_entry(part, cli):
    """Record, output and kernel are valid together: damage to any part is a recomputation,
    never a traceback and never a wrong number."""
    wid = "resnet50.mean.7x7x2048"
    c = combo(wid, "float16")
    good = measurement.measure(c)
    truth = measurement.output(c)
    if part == "missing output":
        (c.entry / "output.npy").unlink()
    elif part == "record.json":
        (c.entry / "record.json").write_text('{"status": "ok", "metrics"')
    else:  # a new file: this process maps the kernel it loaded, and a mapped file truncated in place crashes it
        (c.entry / part).unlink()
        (c.entry / part).write_bytes(b"garbage" * 100)
    # Through the CLI, as a user meets it: divergence against default needs both outputs.
    done = cli("measure", "--workload", wid, "--dtype", "float16", "--order", "seed-swap", "--against", "default",
               "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["divergence"]["against"] == "default"
    again = measurement.measure(c)
    assert again.metrics == good.metrics and again.parts == good.parts
    np.testing.assert_array_equal(measurement.output(c), truth)
    assert measurement.load_kernel(c).output().shape == (1, 2048)


def test_a_record_from_another_combination_is_not_used():
    a, b = combo("resnet50.mean.7x7x2048", "float16"), combo("resnet50.mean.7x7x2048", "float32")
    measurement.measure(a)
    measurement.measure(b)
    (b.entry / "record.json").write_text((a.entry / "record.json").read_text())
    assert measurement.measure(b).dtype == "float32"


def test_every_module_a_measurement_runs_is_in_its_cache_key():
    """A change to the code a measurement runs measures again (combo's _MEASURING_CODE digested
    into every key); only modules that cannot change a number may stay out. The kernel path,
    core/execution.py, was out: a fix there would have read numbers the old code computed."""
    import subprocess
    import sys

    found = subprocess.run([sys.executable, "-c", (
        "import sys, suite.core.measurement\n"
        "from pathlib import Path\n"
        "from suite.core import combo\n"
        "root = Path(combo.__file__).resolve().parents[1]\n"
        "covered = {p.resolve() for pattern in combo._MEASURING_CODE for p in root.glob(pattern)}\n"
        "print(' '.join(sorted(m for m, module in sys.modules.items() if m.startswith('suite') and\n"
        "      getattr(module, '__file__', None) and Path(module.__file__).resolve() not in covered)))\n")],
        capture_output=True, text=True, check=True).stdout.split()
    numberless = {"suite", "suite.core", "suite.errors", "suite.children", "suite.environ", "suite.progress",
                  "suite.core.combo", "suite.core.runstore", "suite.core.run_place",
                  "suite.core.run_bundle"}  # the key itself, paths, processes, side data
    assert set(found) <= numberless, set(found) - numberless


def test_a_kernel_stands_in_for_another_only_with_its_code_and_its_own_bytes(tmp_path, monkeypatch):
    """entries.with_code: an entry of the same combination whose record names the code identity,
    its kernel the bytes the record vouches for; another combination's entry, another code, or a
    kernel whose bytes changed after its record was written stands in for nothing."""
    from suite import cache
    from suite.core import entries
    from suite.core.record import Record

    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path))
    ids = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "default")

    def entry(name, code, record_ids=ids):
        where = tmp_path / "measure" / name
        where.mkdir(parents=True)
        (where / "kernel.so").write_bytes(b"machine code " + code.encode())
        record = Record(*record_ids, status="ok", code=code, parts={"kernel.so": cache.file_digest(where / "kernel.so")})
        cache.write_sealed_json(where / "record.json", record.to_json())
        return where / "kernel.so"

    other = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "tuned")
    entry(f"{'-'.join(other)}-{'1' * 16}", "a" * 64, other)  # same code, another combination
    entry(f"{'-'.join(ids)}-{'2' * 16}", "b" * 64)  # the combination, other code
    assert entries.with_code(ids, "a" * 64, "kernel.so") is None
    kernel = entry(f"{'-'.join(ids)}-{'3' * 16}", "a" * 64)
    assert entries.with_code(ids, "a" * 64, "kernel.so") == kernel
    assert entries.with_code(ids, "a" * 64, "kernel.o") is None  # a file the record does not vouch for
    kernel.write_bytes(b"other bytes")
    assert entries.with_code(ids, "a" * 64, "kernel.so") is None
