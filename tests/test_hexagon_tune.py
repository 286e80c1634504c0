"""Tuning for hexagon-v68-qf (MetaSchedule, candidates timed under the emulator) and the `tuned`
order of the Hexagon targets: their own records first, llvm's where they have none."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from suite import cli as suite_cli
from suite import targets
from suite.compat import metaschedule, relax, release
from suite.compat import schedules as compat_schedules
from suite.core import measurement, output_check, schedules, tuning_records, workloads
from suite.core.combo import Combo
from suite.core.record import Status
from suite.errors import OrderNotApplicable
from suite.targets import hexagon, hexagon_qf, hexagon_tune
from suite.targets.base import NotTunable

QF = "hexagon-v68-qf"
MEAN = "resnet50.mean.7x7x2048"  # the smallest workload: scheduled by llvm's trace, builds and emulates in seconds
MATMUL = "resnet50.matmul_add.2048-1000"
#: What `tune` searches: MetaSchedule's candidate for it builds in seconds (the mean's first
#: candidate is 66,000 lines of Hexagon assembly, minutes of LLVM each time it is built).
POOL = "resnet50.max_pool2d.112x112x64-k3s2"
COMMITTED = tuning_records.RECORDS_DIR
needs_v68_qemu = pytest.mark.skipif(
    targets.get(QF).unavailable() is not None, reason=f"{targets.get(QF).unavailable()}")


@pytest.fixture
def records(tmp_path, monkeypatch):
    """An empty scratch records directory, for this process and the commands it starts."""
    monkeypatch.setenv(tuning_records.RECORDS_ENV, str(tmp_path / "records"))
    return tmp_path / "records"


def test_every_hexagon_target_prefers_hexagon_records_then_llvm():
    for name in ("hexagon-v68", "hexagon-v69", "hexagon-v73", "hexagon-v68-emu", "hexagon-v68-qemu"):
        assert targets.get(name).records_from == (QF, "llvm")
    assert targets.get(QF).records_from == (QF, "llvm")
    assert targets.get("hexagon-v73-qf").records_from == ("hexagon-v73-qf", QF, "llvm")
    assert targets.get("llvm").records_from == ("llvm",)
    assert targets.get(QF).tuning_measure == "packets" and targets.get("llvm").tuning_measure == "latency"


def test_compile_only_hexagon_is_not_tunable_and_says_what_is():
    with pytest.raises(NotTunable, match="tune hexagon-v68-qf"):
        targets.get("hexagon-v68").tuning_target()


def test_without_the_emulator_tune_is_one_line(monkeypatch, capsys, records):
    monkeypatch.setattr(hexagon_qf.HexagonQfTarget, "unavailable",
                        lambda self: "hexagon-v68-qf needs qemu-hexagon; missing: qemu-hexagon")
    status = suite_cli.main(["tune", "--target", QF, "--dtype", "float16", "--workload", MEAN, "--trials", "2"])
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tvm-suite: error: hexagon-v68-qf cannot be tuned here: hexagon-v68-qf needs qemu-hexagon; "
                   "missing: qemu-hexagon"]
    assert not records.exists()


def test_tuning_target_is_tvms_hexagon_kind_with_the_suites_llvm_options():
    if targets.get(QF).unavailable():
        pytest.skip(targets.get(QF).unavailable())
    target = targets.get(QF).tuning_target()
    assert target.kind.name == "hexagon"
    spec = relax.attr_to_python(target.export()["llvm-options"])
    assert sorted(spec) == sorted(targets.get(QF).llvm_options)
    assert int(target.export()["num-cores"]) == 4


def test_replay_prefers_the_hexagon_record_and_falls_back_to_llvm(records):
    wid, dtype = MATMUL, "float32"
    names = targets.get("hexagon-v68").records_from
    func = workloads.prim_func(workloads.get(wid), dtype)
    # None: a skip naming both, and the command that tunes for Hexagon.
    assert tuning_records.records_target(names, dtype, wid) is None
    with pytest.raises(OrderNotApplicable, match=f"on {QF} or llvm .*tune --target {QF} "):
        schedules.apply(func, "tuned", wid, dtype, names)
    assert schedules.schedule_digest("tuned", wid, dtype, names) is None
    # llvm's only: replayed from llvm.
    source = json.loads((COMMITTED / "llvm" / dtype / "traces" / f"{wid}.json").read_text())
    (records / "llvm" / dtype / "traces").mkdir(parents=True)
    (records / "llvm" / dtype / "traces" / f"{wid}.json").write_text(json.dumps(source))
    assert tuning_records.records_target(names, dtype, wid) == "llvm"
    llvm_key = Combo.resolve(wid, dtype, "hexagon-v68", "tuned").key["schedule"]
    assert llvm_key == schedules.schedule_digest("tuned", wid, dtype, "llvm") is not None
    # A Hexagon record wins, per workload, and changes the cache key.
    source["target"], source["measure"] = QF, "emulated"
    path = tuning_records.trace_path(QF, dtype, wid)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(source))
    assert tuning_records.records_target(names, dtype, wid) == QF
    assert tuning_records.records_target(names, dtype, MEAN) is None
    assert Combo.resolve(wid, dtype, "hexagon-v68", "tuned").key["schedule"] not in (None, llvm_key)
    assert schedules.apply(func, "tuned", wid, dtype, names).script() != func.script()


@pytest.mark.slow
def test_the_record_says_whose_trace_replayed(records):
    """Compile-only v68 build of the fp32 matmul's llvm trace, then of a Hexagon record."""
    wid, dtype = MATMUL, "float32"
    source = (COMMITTED / "llvm" / dtype / "traces" / f"{wid}.json").read_text()
    for name in ("llvm", QF):
        path = tuning_records.trace_path(name, dtype, wid)
        path.parent.mkdir(parents=True)
        path.write_text(source if name == "llvm" else source.replace('"target": "llvm"', f'"target": "{QF}"'))
        record = measurement.measure(Combo.resolve(wid, dtype, "hexagon-v68", "tuned"))
        assert record.ok, record.reason
        assert record.tuned_from == name and record.to_json()["tuned_from"] == name
    default = measurement.measure(Combo.resolve(wid, dtype, "hexagon-v68", "default"))
    assert default.tuned_from is None and "tuned_from" not in default.to_json()


def test_committed_packet_records_count_every_candidate_that_ran():
    """A candidate's packets can pass 1e9 (scalar fp16 code runs billions): it ran, and the record
    counts it as measured, never among the failures (whose MetaSchedule seconds read 1e10)."""
    found = [tuning_records.read_record(path)[1] for path in sorted(tuning_records.records_dir(QF, "float16").glob("traces/*.json"))]
    by_packets = [r for r in found if r["measure"] == "packets"]
    assert by_packets and {r["measure"] for r in found} <= {"packets", "emulated"}
    for record in by_packets:
        packets = record["candidates_packets"]
        assert record["candidates_measured"] == len(packets) == len(record["candidates_emulated_s"])
        # Fewer than the trials where the design space holds fewer distinct schedules (max_pool2d
        # has 8: MetaSchedule's task ends when it has measured them all).
        assert record["candidates_measured"] + record["candidates_failed"] <= record["trials"]
        assert packets == sorted(packets) and record["best_packets"] <= packets[0]
        if "previous_record" in record and "packets" in record["previous_record"]:
            assert record["best_packets"] == min(packets[0], record["previous_record"]["packets"])
    assert any(max(r["candidates_packets"]) > 1e9 for r in by_packets)


def test_output_check_tells_wrong_from_rounded():
    ref = np.linspace(-2, 2, 64).reshape(1, 64)
    check = output_check._output_check(lambda: ref)
    assert check(ref.astype(np.float16)) is None
    assert "non-finite" in check(np.full_like(ref, np.inf))
    assert "wrong output" in check(ref[:, ::-1])
    assert "shape" in check(ref.T)


def built_mean(dtype="float16"):
    """The mean workload built and linked as a tuning candidate: (ELF path, workload). Scheduled
    by llvm's committed trace, whose Hexagon code LLVM emits in a second (the function as written
    takes it half a minute)."""
    target = targets.get(QF)
    workload = workloads.get(MEAN)
    func = workloads.prim_func(workload, dtype)
    schedule = compat_schedules.schedule(func.with_attr("global_symbol", "main"))
    compat_schedules.apply_trace(tuning_records.read_record(COMMITTED / "llvm" / dtype / "traces" / f"{MEAN}.json")[1]["trace"],
                       schedule)
    built = hexagon_tune.build_candidate(schedule.mod, None, mcpu="hexagonv68", mattr=target.mattr,
                                         llvm_options=target.llvm_options)
    return hexagon_tune.export_elf(built, "v68"), workload


def runner_input(elf, workload, dtype="float16"):
    ms = release.meta_schedule()
    args = [ms.arg_info.TensorInfo(dtype, list(shape)) for shape in [*workload.input_shapes, workload.output_shape]]
    return ms.runner.RunnerInput(str(elf), "cpu", args)


@needs_v68_qemu
@pytest.mark.slow
def test_runner_returns_packets_and_failures_are_runner_errors(tmp_path):
    elf, workload = built_mean()
    inputs = workloads.make_inputs(workload, "float16")
    lines = []
    measure = hexagon_tune.EmulatorMeasure(("qemu-hexagon", "-cpu", "v68"), inputs, workload.output_shape,
                                           "float16", check=lambda output: None, log=lines.append)
    runner = metaschedule.custom_runner(measure)
    (result,) = [f.result() for f in runner.run([runner_input(elf, workload)])]
    assert result.error_msg is None
    (packets,) = [float(s) for s in result.run_secs]
    # The packets of the kernel alone: the same as the target's own measurement of that ELF.
    stdin = hexagon.encode_inputs(inputs, workload.output_shape, "float16")
    assert packets == hexagon.emulate(Path(elf), stdin, workload.output_shape, "float16").counts["packets"] > 1000
    (again,) = [f.result() for f in runner.run([runner_input(elf, workload)])]
    assert [float(s) for s in again.run_secs] == [packets]        # exact: the same on every run
    assert [p for p, _ in measure.measured] == [packets, packets] and 0 < measure.measured[0][1] < 60
    assert lines and "packets executed" in lines[0] and "not hardware latency" in lines[0]
    # Inputs drawn from MetaSchedule's argument list when the workload's are not given.
    (result,) = [f.result() for f in metaschedule.custom_runner(hexagon_tune.EmulatorMeasure(
        ("qemu-hexagon", "-cpu", "v68"), log=lines.append)).run([runner_input(elf, workload)])]
    assert result.error_msg is None and float(result.run_secs[0]) > 0
    # A wrong output, and an artifact that does not run, are that candidate's errors.
    measure.check = lambda output: "wrong output: made up"
    (wrong,) = [f.result() for f in runner.run([runner_input(elf, workload)])]
    assert wrong.run_secs is None and wrong.error_msg.startswith("WrongOutput: wrong output: made up")
    broken = tmp_path / "broken.elf"
    broken.write_bytes(b"not an ELF")
    (failed,) = [f.result() for f in runner.run([runner_input(broken, workload)])]
    assert failed.run_secs is None and failed.error_msg.startswith("EmulationFailed: qemu-hexagon")
    assert "failed after" in lines[-1]


@needs_v68_qemu
@pytest.mark.slow
@pytest.mark.longest
def test_tune_command_writes_a_hexagon_record_that_replays(cli, records):
    # A process of its own: pytest 9 hangs its log-capture handlers on every non-propagating
    # logger, MetaSchedule's included, and MetaSchedule's logging setup fails on a handler
    # without a name (TVM 0.27 s_tir/meta_schedule/logging.py formats every handler's name).
    # Never tuned for Hexagon: `tuned` replays llvm's record, which competes with the first tuning's
    # best (llvm's trace executes fewer packets than MetaSchedule's one candidate: it is kept).
    llvm_record = tuning_records.trace_path("llvm", "float16", POOL)
    llvm_record.parent.mkdir(parents=True)
    shutil.copyfile(COMMITTED / "llvm" / "float16" / "traces" / f"{POOL}.json", llvm_record)
    replayed = measurement.measure(Combo.resolve(POOL, "float16", QF, "tuned"))
    assert replayed.ok and replayed.tuned_from == "llvm", replayed.reason
    done = cli("tune", "--target", QF, "--dtype", "float16", "--workload", POOL, "--trials", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(tuning_records.trace_path(QF, "float16", POOL).read_text())
    assert record["target"] == QF and record["trials"] == 1 and record["trace"]
    assert record["measure"] == "packets" and "lower bound of a Hexagon's cycles" in record["measure_is"]
    assert record["best_packets"] > 1000 and record["best_emulated_s"] > 0 and "best_measured_s" not in record
    assert record["candidates_measured"] == len(record["candidates_packets"]) == len(record["candidates_emulated_s"])
    assert record["candidates_packets"] == sorted(record["candidates_packets"])
    assert record["tuned_on"]["target"] == QF
    assert not (tuning_records.records_dir(QF, "float16") / "database").exists()  # traces only
    from_llvm = record["previous_record"]
    assert from_llvm["target"] == "llvm" and from_llvm["measure"] == "latency"
    assert from_llvm["packets"] == replayed.counts["packets"]  # measured as the candidates are: the same count
    assert record["best_packets"] == min(from_llvm["packets"], record["candidates_packets"][0])
    assert from_llvm["kept"] is (from_llvm["packets"] < record["candidates_packets"][0])
    assert ("llvm's record kept" if from_llvm["kept"] else "llvm's record: ") in done.stdout
    # --skip-existing keeps a record tuned by packets ...
    path = tuning_records.trace_path(QF, "float16", POOL)
    kept = cli("tune", "--target", QF, "--dtype", "float16", "--workload", POOL, "--trials", "1", "--skip-existing")
    assert kept.returncode == 0 and f"kept     {POOL} (already tuned by packets)" in kept.stdout
    assert json.loads(path.read_text()) == record
    # ... and tunes again one tuned by emulated seconds, where the record it replaces competes,
    # measured now as the candidates are: here it holds the function as written (no schedule), which
    # executes more packets than the candidate, so the search's own trace is written and replays.
    llvm_record.unlink()
    as_written = [[], []]
    path.write_text(json.dumps({**record, "measure": "emulated", "trace": as_written,
                                "trace_sha256": tuning_records.trace_digest(as_written)}))
    record = json.loads(path.read_text())
    default = measurement.measure(Combo.resolve(POOL, "float16", QF, "default"))
    assert default.ok, default.reason
    again = cli("tune", "--target", QF, "--dtype", "float16", "--workload", POOL, "--trials", "1", "--skip-existing")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"re-tune  {POOL}: its record was tuned by emulated, this target tunes by packets" in again.stdout
    second = json.loads(path.read_text())
    assert second["measure"] == "packets"
    previous = second["previous_record"]
    assert previous["target"] == QF and previous["packets"] == default.counts["packets"]  # packets are deterministic
    assert previous["trace_sha256"] == record["trace_sha256"] and previous["measure"] == "emulated"
    assert second["best_packets"] == min(previous["packets"], second["candidates_packets"][0])
    assert previous["kept"] is (previous["packets"] < second["candidates_packets"][0])
    if previous["kept"]:
        assert second["trace"] == record["trace"] and "the record it replaces kept" in again.stdout
    else:
        assert second["trace"] != record["trace"] and "the record it replaces: " in again.stdout
    assert tuning_records.trace_digest(second["trace"]) == second["trace_sha256"]
    tuned = measurement.measure(Combo.resolve(POOL, "float16", QF, "tuned"))
    assert tuned.ok, tuned.reason
    assert tuned.tuned_from == QF and tuned.emulated_s > 0
    assert tuned.metrics["nonfinite"] == 0 and tuned.metrics["prob_bound_fraction"] < 1
    assert measurement.divergence(Combo.resolve(POOL, "float16", QF, "tuned"))["against"] == "default"
    shutil.rmtree(records)
    assert measurement.measure(Combo.resolve(POOL, "float16", QF, "tuned")).status is Status.SKIPPED
