"""The asv side: one rule from record to asv outcome, one declaration per metric, and a benchmark
skipped because the suite cannot be imported says why."""

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from suite import tracked
from suite.core.record import CombinationFailed, Kind, Need, Record, Status, outcome

ROOT = Path(__file__).resolve().parents[1]


def test_skip_reason_names_the_import_error(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    common = importlib.import_module("benchmarks.common")
    assert common.safe_import("suite.no_such_module") is None
    reason = common.not_imported()
    assert isinstance(reason, NotImplementedError)  # asv records it as a skip
    assert str(reason).startswith("the suite could not be imported (")
    assert "suite.no_such_module: ModuleNotFoundError: No module named 'suite.no_such_module'" in str(reason)


def record(status, kind=None, **values):
    return Record("w", "float16", "llvm", "default", status=status, kind=kind, reason="why", **values)


def test_outcome_skipped_is_nan_failed_is_null():
    # asv stores a setup that raises NotImplementedError as NaN (skipped), anything else as null (failed).
    with pytest.raises(NotImplementedError, match="skipped: why"):
        outcome(record(Status.SKIPPED))
    with pytest.raises(CombinationFailed, match="w float16 llvm default failed: why") as info:
        outcome(record(Status.FAILED))
    assert not isinstance(info.value, NotImplementedError)
    ok = record(Status.OK, Kind.COMPILE_ONLY, codegen={"code_bytes": 10})
    assert outcome(ok, Need.CODEGEN) is ok
    with pytest.raises(NotImplementedError, match="compile-only"):
        outcome(ok, Need.OUTPUT)
    with pytest.raises(NotImplementedError, match="counts no executed packets"):
        outcome(ok, Need.COUNTS)
    native = record(Status.OK, Kind.LATENCY, compile_s=0.5, metrics={"ulp_mean": 3.0})
    assert outcome(native, Need.LATENCY).values() == {"compile_seconds": 0.5, "ulp_mean": 3.0}
    with pytest.raises(NotImplementedError, match="not an emulated target"):
        outcome(native, Need.EMULATED)


def test_record_round_trips_through_json():
    r = record(Status.OK, Kind.EMULATED, emulated_s=1.5, metrics={"ulp_mean": 2.0}, parts={"output.npy": "ab" * 32})
    again = Record.from_json(json.loads(json.dumps(r.to_json())))
    assert again == r and again.kind is Kind.EMULATED
    with pytest.raises(ValueError):
        Record.from_json({"status": "ok"})


def discover(targets, orders="default,tuned", dtypes=None):
    """{benchmark name: (unit, params)} as asv's own discovery finds them for a grid (``dtypes``
    None: the default grid's)."""
    code = ("import json, sys; from asv_runner.discovery import disc_benchmarks; "
            "print(json.dumps({b.name: [getattr(b, 'unit', None), b._params] for b in disc_benchmarks(sys.argv[1])}))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks")], capture_output=True, text=True,
                          cwd=ROOT, env={"TVM_SUITE_WORKLOADS": "seed", "TVM_SUITE_TARGETS": targets,
                                         "TVM_SUITE_ORDERS": orders, "PATH": "/usr/bin:/bin",
                                         **({"TVM_SUITE_DTYPES": dtypes} if dtypes else {})})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_benchmarks_are_exactly_the_declared_metrics_asv_reads_right():
    """asv's own discovery finds one benchmark per declared lower-is-better metric, and nothing
    else: no higher-is-better, signed or direction-less value, which asv would misread."""
    from suite.core import peers

    found = discover("llvm,hexagon-v68,hexagon-v68-emu,hexagon-v68-qf", dtypes="float32,float16,int8")
    asv_reads = {m.benchmark for m in tracked.METRICS if m.worse == tracked.HIGHER}
    if not peers.available():  # no PyTorch: the peer's benchmarks are not in the run at all
        asv_reads = {b for b in asv_reads if not b.startswith("bench_peer.")}
    assert set(found) == asv_reads
    for name in ("gflops", "bias_shift", "mean_signed_error", "error_ratio_z", "hvx_efficiency", "qfloat_arith"):
        assert tracked.get(name).benchmark not in found, name
    for metric in tracked.METRICS:
        if metric.benchmark in asv_reads:
            assert found[metric.benchmark][0] == metric.unit, metric


def test_each_benchmark_gets_only_the_combinations_it_can_measure():
    """No asv process for a combination that could only be skipped: latency on native targets,
    Hexagon code metrics on Hexagon targets, divergence from default for the other orders."""
    found = discover("llvm,hexagon-v68,hexagon-v68-emu")
    targets = {name: params[2] for name, (_unit, params) in found.items()}
    assert targets["bench_latency.Throughput.track_latency_median"] == ["llvm"]
    assert targets["bench_accuracy.Accuracy.track_ulp_mean"] == ["llvm", "hexagon-v68-emu"]
    assert targets["bench_codegen.HexagonCodegen.track_code_bytes"] == ["hexagon-v68", "hexagon-v68-emu"]
    assert targets["bench_codegen.HexagonEmulated.track_emulated_seconds"] == ["hexagon-v68-emu"]
    assert found["bench_divergence.DivergenceFromDefault.track_error_ratio"][1][3] == ["tuned"]
    llvm_only = discover("llvm")
    assert not any(name.startswith(("bench_codegen.", "bench_ieee_twin.")) for name in llvm_only)
    # The IEEE twin: only the targets that have one (the executed qfloat ones).
    twins = discover("llvm,hexagon-v68-emu,hexagon-v68-qf")
    assert twins["bench_ieee_twin.TwinAccuracy.track_prob_bound_fraction"][1][2] == ["hexagon-v68-qf"]
    assert twins["bench_ieee_twin.TwinDivergence.track_error_ratio"][1][2:] == [["hexagon-v68-qf"], ["tuned"]]
    # int8 (asked for, never in the default grid): judged exactly by a class of its own, never by ULP.
    assert not any(".IntegerAccuracy." in name for name in found)
    mixed = discover("llvm", "default,reduction-outer", dtypes="float32,int8")
    assert mixed["bench_accuracy.Accuracy.track_ulp_mean"][1][1] == ["float32"]
    assert mixed["bench_divergence.DivergenceFromDefault.track_error_ratio"][1][1] == ["float32"]
    assert mixed["bench_accuracy.IntegerAccuracy.track_accumulator_mismatches"][1][1] == ["int8"]
    assert mixed["bench_latency.Throughput.track_latency_median"][1][1] == ["float32", "int8"]


def test_asvs_benchmark_server_works_out_what_its_forks_would_each_work_out_again():
    """asv_runner builds a benchmark's object in every process the server forks (about 1,200 a
    quick run), reading and tokenizing its source each time, and a latency benchmark's median
    imports numpy.ma: the server does both before it forks, and a benchmark built again then reads
    no source and is the one asv's discovery built (code, version)."""
    code = ("import json, sys, inspect, tokenize; root = sys.argv[1]; sys.argv[1:] = ['run_server']; "
            "from asv_runner.discovery import disc_benchmarks, get_benchmark_from_name as get; "
            "found = {b.name: [b.code, b.version] for b in disc_benchmarks(root)}; "
            "inspect.getsourcelines = tokenize.generate_tokens = None; "
            "print(json.dumps(['numpy.ma' in sys.modules, len(found), "
            "{name: [get(root, name).code, get(root, name).version] for name in found} == found]))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks")], capture_output=True, text=True,
                          cwd=ROOT, env={"TVM_SUITE_WORKLOADS": "seed", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    imported, benchmarks, same = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported and benchmarks > 10 and same


@pytest.mark.slow
def test_a_benchmark_process_imports_tvm_only_to_note_a_missing_build(tmp_path):
    """asv runs every metric of every combination in a process of its own (thousands a run): once
    the run's build note exists, a benchmark's setup reads the cache and never imports TVM."""
    from suite.core import measurement
    from suite.core.combo import Combo

    assert measurement.measure(Combo.resolve("seed.conv2d_nhwc_7x7s2", "float32", "llvm", "default")).ok
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); from benchmarks import bench_accuracy as b; "
        "a = b.Accuracy(); a.setup('seed.conv2d_nhwc_7x7s2', 'float32', 'llvm', 'default'); "
        "print('tvm' in sys.modules, a.track_ulp_mean('seed.conv2d_nhwc_7x7s2', 'float32', 'llvm', 'default') > 0)"
    )
    env = {**os.environ, "TVM_SUITE_RUN_DIR": str(tmp_path), "TVM_SUITE_COMMIT": "c0ffee0", "TVM_SUITE_MACHINE": "box",
           "TVM_SUITE_WORKLOADS": "seed.conv2d_nhwc_7x7s2", "TVM_SUITE_TARGETS": "llvm"}

    def run():
        done = subprocess.run([sys.executable, "-c", probe, str(ROOT)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert run() == ["True", "True"]  # the first notes the build: it imports TVM
    noted = json.loads((tmp_path / "runs" / "box" / "c0ffee0" / "build.json").read_text())
    assert noted["llvm"]["use_llvm"] and noted["tvm"]
    assert run() == ["False", "True"]  # every later one only reads
    # asv's benchmark server (forkserver) reads every record and the build note once, before it forks
    # the benchmarks: each of those then measures nothing and looks for no note itself.
    probe = probe.replace("import sys; ", "import sys; sys.argv[1:] = ['run_server']; ", 1).replace(
        "a = b.Accuracy()", "from benchmarks import common as c; print(len(c.PRELOADED), c.BUILD_NOTED); "
        "c.measurement.measure = c.measurement.note_tvm_build = None; a = b.Accuracy()")
    assert run() == ["4", "True", "False", "True"]  # the grid's 4 combinations (float32 and float16, 2 orders)


def test_asv_reports_a_timing_step_from_the_gates_latency_ratio_up():
    """asv sees one number per commit: a timing (latency, the PyTorch ratios) moves by a few
    percent between runs of one build, so asv's Regressions page and compare list a step of one
    only from the gate's latency ratio (the gate then judges it on the samples)."""
    from suite.asv_plumbing import config as asvconf
    from suite.reporting import thresholds

    step = round(thresholds.load().latency.max_ratio - 1, 6)
    expected = {re.escape(tracked.BY_NAME[name].benchmark): step for name in tracked.TIMED}
    assert all(tracked.BY_NAME[name].in_asv for name in tracked.TIMED)
    assert asvconf.read_conf()["regressions_thresholds"] == expected


def test_the_suite_imports_in_asvs_environment_with_only_its_packages():
    """asv's environments (asv.conf.json's matrix: numpy, scipy, jinja2, psutil, filelock,
    cloudpickle, setuptools, and TVM) hold none of the suite's other dependencies: a module the
    benchmarks import that imports one at its top skips every benchmark of every commit a history
    or bisect measures (suite.model.results imported tabulate: "the suite could not be imported")."""
    conf = json.loads("\n".join(line for line in (ROOT / "asv.conf.json").read_text().splitlines()
                                 if not line.lstrip().startswith("//")))
    allowed = set(conf["matrix"]["req"])
    absent = [name for name in ("tabulate", "rich", "dask", "distributed", "tomli_w", "torch") if name not in allowed]
    code = ("import sys; [sys.modules.__setitem__(name, None) for name in sys.argv[2:]]; sys.path.insert(0, sys.argv[1]); "
            "import common; print(common.SUITE, common.IMPORT_ERRORS)")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks"), *absent], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True {}", done.stdout
