"""`tvm-suite fuzz` on real values: the seed conv2d on llvm float32, its schedules judged by
triage's verdict; a planted bug judged CHANGED; the same seed samples the same traces; a rerun
continues from the journal."""

import json
import shutil

import numpy as np
import pytest

from suite import targets
from suite.core import workloads
from suite.errors import UserError
from suite.fuzz import plant, sampling
from suite.fuzz.combinations import Combination, expected_output
from suite.fuzz.outcome import VERDICTS, Answer, Outcome
from suite.fuzz.summary import OUTCOMES, upper_bound_95
from suite.fuzz.worker import Worker
from suite.triage import verdict

SEED_PROGRAM = """\
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    for i, j, k in T.grid(4, 4, 4):
        with T.sblock("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[v_i, v_j] = T.float32(0.0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
"""


def test_every_planted_kind_edits_one_line_of_a_matmul():
    """Fast: each kind that applies changes the program, and says so when it cannot."""
    applied = 0
    for kind in plant.KINDS:
        try:
            planted = plant.mutate(SEED_PROGRAM, kind, "float32")
        except plant.NotApplicable:
            continue
        applied += 1
        assert planted != SEED_PROGRAM
    assert applied >= 15
    swapped = plant.mutate(SEED_PROGRAM, "swapped_index", "float32")
    assert "A[v_k, v_i]" in swapped


def test_plants_read_the_64_bit_literals_of_a_relax_models_functions():
    """ResNet's fused functions print every extent as T.int64(N): the loop and index kinds found
    nothing to edit in them (off_by_one_* 10 of 10 and swapped_index 10 of 10 not applicable in a
    1,060-trace campaign)."""
    wide = (SEED_PROGRAM.replace("(4, 4)", "(T.int64(4), T.int64(4))")
            .replace("T.grid(4, 4, 4)", "T.grid(T.int64(4), T.int64(4), T.int64(4))"))
    for kind in ("off_by_one_inner_loop", "off_by_one_outer_loop"):  # one T.grid: its first extent
        assert "T.grid(T.int64(3), T.int64(4), T.int64(4))" in plant.mutate(wide, kind, "float32")
    assert "A[v_k, v_i]" in plant.mutate(wide, "swapped_index", "float32")


def test_an_outcome_is_spelled_once():
    """The verdicts among the outcomes are triage's, word for word and in its order; the worker's
    answer is read into the same outcomes, and anything else it could send is one line."""
    assert tuple(VERDICTS) == verdict.KINDS and list(Outcome)[:len(VERDICTS)] == list(VERDICTS)
    assert OUTCOMES == tuple(Outcome)
    where = "/tmp/request"
    for outcome in (Outcome.TIMEOUT, Outcome.NOT_APPLICABLE):
        answer = Answer.parse(Answer.failed(outcome, "why").to_json(), where)
        assert answer.failure.outcome is outcome and answer.failure.message == "why" and str(answer.dir) == where
    ran = Answer.parse(Answer(undefined=None, compile_s=0.5).to_json(), where)
    assert ran.failure is None and ran.compile_s == 0.5
    with pytest.raises(UserError, match="a damaged record"):  # the suite's own refusal, the campaign's to say
        Answer.parse({"error": "a damaged record"}, where)
    for sent in ({"status": "build_failed", "message": "old words"}, {"failure": {"outcome": "CHANGED", "message": ""},
                                                                       "undefined": None, "compile_s": None},
                 {"failure": {"outcome": "build_failed", "message": ""}, "undefined": None, "compile_s": None}, []):
        with pytest.raises(UserError, match="no answer of it"):
            Answer.parse(sent, where)


def test_false_changed_bound_of_none_in_ten():
    assert upper_bound_95(0, 10) == pytest.approx(0.3085, abs=1e-3)


def test_a_planted_swapped_index_is_judged_changed(tmp_path):
    """The unscheduled seed conv2d, and the same with its input indices swapped, built and run by
    the worker child, judged against the float64 reference."""
    from suite.core import workloads

    combination = Combination(workloads.seed_workload(), "float32", None)
    combination.expected = expected_output(combination)
    worker = Worker(tmp_path / "work", scratch=tmp_path)  # the requests' directories are its to write
    try:
        base = {"workload": combination.workload.id, "dtype": "float32", "target": "llvm", "order": "default"}
        before = worker.ask({**base, "dir": str(tmp_path / "before")}, 120)
        planted = worker.ask({**base, "plant": "swapped_index", "dir": str(tmp_path / "planted")}, 120)
    finally:
        worker.close()
    assert Answer.parse(before, tmp_path / "before").failure is None
    assert Answer.parse(planted, tmp_path / "planted").failure is None
    out_before = np.load(tmp_path / "before" / "output.npy")
    judged = verdict.judge(combination.expected, out_before, out_before)
    assert judged.kind == verdict.EQUIVALENT
    wrong = verdict.judge(combination.expected, out_before, np.load(tmp_path / "planted" / "output.npy"))
    assert wrong.kind == verdict.CHANGED


def test_one_worker_asked_twice_in_one_directory_runs_the_second_kernel(tmp_path):
    """Issue 63, defect 1: a worker built each request's kernel to ``<dir>/kernel.so`` and loaded
    it, and the dynamic loader answers a second load of a path with the library loaded first: a
    second schedule built in the directory of a first (minimisation's every attempt) ran the
    first's kernel. The planted kernel, asked after the unplanted one in one directory, gives its
    own output, the one it gives in a directory of its own."""
    from suite.core import workloads

    worker = Worker(tmp_path / "work", scratch=tmp_path)  # the requests' directories are its to write
    try:
        base = {"workload": workloads.seed_workload().id, "dtype": "float32", "target": "llvm", "order": "default"}
        first = Answer.parse(worker.ask({**base, "dir": str(tmp_path / "same")}, 120), tmp_path / "same")
        out_first = np.load(tmp_path / "same" / "output.npy")
        shutil.rmtree(tmp_path / "same")  # as minimisation removes each attempt's directory
        again = Answer.parse(worker.ask({**base, "plant": "swapped_index", "dir": str(tmp_path / "same")}, 120),
                             tmp_path / "same")
        out_again = np.load(tmp_path / "same" / "output.npy")
        alone = Answer.parse(worker.ask({**base, "plant": "swapped_index", "dir": str(tmp_path / "own")}, 120),
                             tmp_path / "own")
    finally:
        worker.close()
    assert first.failure is None and again.failure is None and alone.failure is None
    assert not np.array_equal(out_again, out_first)
    assert np.array_equal(out_again, np.load(tmp_path / "own" / "output.npy"))


def test_a_schedule_that_reads_its_output_before_writing_it_is_undefined(tmp_path):
    """A dropped init leaves the reduction reading whatever its output array held: the worker runs
    the kernel on an array of bytes 0x55 and one of 0xAA and finds every element apart (UNDEFINED,
    whatever the values); the unplanted kernel writes every element first and gives the same bits."""
    from suite.core import workloads

    worker = Worker(tmp_path / "work", scratch=tmp_path)  # the requests' directories are its to write
    try:
        base = {"workload": workloads.seed_workload().id, "dtype": "float32", "target": "llvm", "order": "default"}
        before = worker.ask({**base, "dir": str(tmp_path / "before")}, 120)
        dropped = worker.ask({**base, "plant": "dropped_init", "dir": str(tmp_path / "planted")}, 120)
    finally:
        worker.close()
    before, dropped = Answer.parse(before, tmp_path / "before"), Answer.parse(dropped, tmp_path / "planted")
    assert before.failure is None and dropped.failure is None
    assert before.undefined is None
    assert dropped.undefined.startswith("its output depends on what its output array held before it ran: "
                                           "802,816 of 802,816 elements differ between a run on an array of bytes "
                                           "0x55 and one of 0xAA, and not between two runs on 0x55 (first at "
                                           "[0, 0, 0, 0]): read before written")


@pytest.mark.slow
def test_a_small_campaign_judges_determines_and_continues(tmp_path, cli):
    """Slow (MetaSchedule's first design space takes up to a minute): 2 traces and 2 plants on the
    seed conv2d; every verdict one of the five, none CHANGED; the same seed samples the same traces;
    a rerun judges nothing again."""
    first = cli("fuzz", "--traces", "2", "--plant", "2", "--out", tmp_path / "a", "--json")
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["false_changed"] == 0 and summary["plant"]["caught"] == 2
    lines = [json.loads(line) for line in (tmp_path / "a" / "journal.jsonl").read_text().splitlines()]
    unmodified = [r for r in lines if r["kind"] != "plant"]
    assert len(unmodified) == 6 + 2
    assert all(r["outcome"] in verdict.KINDS and r["outcome"] != verdict.CHANGED for r in unmodified
               if r["outcome"] != Outcome.SKIPPED)
    again = cli("fuzz", "--traces", "2", "--plant", "2", "--out", tmp_path / "a", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["judged_this_run"] == 0
    assert len((tmp_path / "a" / "journal.jsonl").read_text().splitlines()) == len(lines)
    # the same seed samples the same traces: each trace judged is the one the sampler the campaign
    # calls gives for the seed (0) and the trace's index (the design space is in the cache now)
    seed_conv, llvm = workloads.get("seed.conv2d_nhwc_7x7s2"), targets.get("llvm")
    spaces = sampling.design_space(seed_conv, "float32", llvm)
    sampled = {r["trace_index"]: r["trace"] for r in unmodified if r["kind"] == "trace"}
    assert sorted(sampled) == [0, 1]
    assert sampled == {i: sampling.sample(seed_conv, "float32", llvm, spaces, 0, i)[0] for i in sampled}


#: A 1x1 stride-2 conv2d: its input's row index yy * 2 + ry (ry = 0) is always even.
STRIDE_2_1X1 = "miniresnet.conv2d_add_radd_relu.16x16x8-k1s2-16"


def _journal(out):
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_plant_that_changes_nothing_is_not_applicable(tmp_path, cli):
    """Slow (a design space): on a 1x1 stride-2 conv2d, input_index_stride's ``// 2 * 2`` lands on
    an index that is always even, and cache_copy_stride and off_by_one_outer_loop on ones alike: the planted programs' outputs
    are the unplanted ones', bit for bit. They count as NOT_APPLICABLE with that reason, not as
    misses; the 8 plants that change the output are all caught."""
    done = cli("fuzz", "--workloads", STRIDE_2_1X1, "--traces", "1", "--plant", "11", "--out", tmp_path / "o",
               "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    plants = {r["planted"]: r for r in _journal(tmp_path / "o") if r["kind"] == "plant"}
    for kind in ("input_index_stride", "cache_copy_stride", "off_by_one_outer_loop"):
        assert plants[kind]["outcome"] == Outcome.NOT_APPLICABLE, plants[kind]
        assert "changes nothing" in plants[kind]["message"] and "bit for bit" in plants[kind]["message"]
        assert summary["plant"]["kinds"][kind]["verdicts"] == {"NOT_APPLICABLE": 1}
    assert summary["plant"]["no_effect"] == summary["plant"]["not_applicable"] == 3
    assert summary["plant"]["planted"] == summary["plant"]["caught"] == 8
    assert {k for k, r in plants.items() if r["outcome"] == verdict.CHANGED} == {
        "init_constant", "narrowing_cast", "truncating_cast", "dropped_copy", "swapped_index",
        "off_by_one_inner_loop", "cache_copy_swap"}
    # a dropped init reads what its accumulator held before: UNDEFINED, whatever the values came out
    # as; the accumulator is the output array, or (where the trace caches the writes) a buffer of
    # TVM's whose stale bytes the filled output array does not decide
    assert plants["dropped_init"]["outcome"] == verdict.UNDEFINED
    said = plants["dropped_init"]["summary"]
    assert "read before written" in said or "it reads memory it did not write (TVM's workspace" in said, said


@pytest.mark.slow
def test_builds_run_on_every_core_and_thresholds_decide_the_verdicts(tmp_path, cli):
    """Slow: the schedules run on one worker child per core, and every schedule of both
    combinations is judged (a child outlives the combination whose thread started it); a
    thresholds file whose bound is a millionth of the default's makes the reorderings of a
    float16 conv2d CHANGED, and the summary names the file and its lambda. A rerun with the
    default thresholds judges them again."""
    from suite import sandbox
    from suite.fuzz.pool import cores

    strict = tmp_path / "strict.toml"
    strict.write_text("[bound]\nmax_fraction = 1.0\nlambda = 0.000001\n")
    args = ("fuzz", "--workloads", "miniresnet.conv2d_add_relu.16x16x8-k3s1-8,miniresnet.matmul_add.16-10",
            "--dtypes", "float16", "--traces", "1")  # each CHANGED is a finding: minimised, blamed, triaged
    done = cli(*args, "--thresholds", strict, "--out", tmp_path / "o", "--json")
    summary = json.loads(done.stdout)
    assert [sum(row.values()) for row in summary["table"].values()] == [6 + 1, 6 + 1], done.stderr
    # the workers run in the sandbox where bubblewrap is there (docs/fuzz.md), and the summary says which
    confined = "in the sandbox" if sandbox.unavailable() is None else f"unconfined ({sandbox.unavailable()})"
    assert summary["where"] == f"{cores()} worker process{'es' if cores() > 1 else ''} here, {confined}"
    assert summary["thresholds"]["lambda"] == 1e-6 and summary["thresholds"]["source"] == str(strict)
    outcomes = [r["outcome"] for r in _journal(tmp_path / "o") if r["outcome"] in verdict.KINDS]
    assert verdict.CHANGED in outcomes and done.returncode == 12, done.stderr
    again = cli(*args, "--out", tmp_path / "o", "--json")
    summary = json.loads(again.stdout)
    assert summary["judged_this_run"] == 2 * (6 + 1) and summary["false_changed"] == 0, again.stderr
    assert summary["thresholds"]["lambda"] != 1e-6


@pytest.mark.longest
@pytest.mark.slow
def test_hexagon_schedules_are_sampled_run_on_the_emulator_and_judged(tmp_path, cli):
    """Slow (Hexagon's design space, then builds and emulated runs): two schedules of a float16
    matmul sampled from MetaSchedule's Hexagon space, built as hexagon-v68-qf builds, run under
    qemu-hexagon with the IEEE twin, and judged. The named orders are bit for bit the unscheduled
    function's; the sampled ones compute the same sums, so none may be judged CHANGED."""
    from suite import targets

    if reason := targets.get("hexagon-v68-qf").unavailable():
        pytest.skip(reason)
    done = cli("fuzz", "--targets", "hexagon-v68-qf", "--workloads", "miniresnet.matmul_add.16-10",
               "--dtypes", "float16", "--traces", "2", "--out", tmp_path / "o", "--json")
    summary = json.loads(done.stdout)
    lines = {r["name"]: r for r in _journal(tmp_path / "o")}
    assert len(lines) == 6 + 2
    assert [lines[o]["outcome"] for o in ("default", "seed-swap", "reduction-outer")] == [verdict.EQUIVALENT] * 3
    traces = [lines["0"], lines["1"]]
    # Both sampled schedules vectorize 10 float16 lanes, which LLVM builds by vinsert: they were
    # judged CHANGED (qfloat and twin alike) while the rewrite mistook vinsert for a plain write.
    assert all(r["outcome"] in (verdict.REORDERED, verdict.ARITHMETIC, verdict.EQUIVALENT) and r["trace"]
               for r in traces), traces
    assert done.returncode == summary["exit_status"] == 0, done.stderr
    assert summary["table"]["miniresnet.matmul_add.16-10 float16 hexagon-v68-qf"]["TIMEOUT"] == 0


@pytest.mark.longest
@pytest.mark.cluster
@pytest.mark.slow
def test_a_campaign_on_a_dask_cluster_judges_as_the_local_one(tmp_path):
    """Slow, starts Dask: the schedules of a campaign built and run by two Dask workers (each
    keeping a worker child) get the verdicts, messages and first wrong elements the local pool
    gives, every one; the summary names the cluster."""
    pytest.importorskip("distributed")
    from conftest import run_cli
    from test_cluster import Cluster

    args = ("fuzz", "--workloads", "miniresnet.matmul_add.16-10", "--dtypes", "float16", "--traces", "3",
            "--plant", "3", "--json")
    local = run_cli(*args, "--out", tmp_path / "local")
    assert local.returncode == 0, local.stderr
    (tmp_path / "dask").mkdir()
    dask = Cluster(tmp_path / "dask", workers=2)
    try:
        remote = run_cli(*args, "--out", tmp_path / "remote", "--cluster", dask.address)
    finally:
        dask.close()
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout)["where"] == f"the Dask cluster at {dask.address} (2 worker threads)"
    fields = ("outcome", "message", "summary", "first_wrong", "trace")
    mine = {r["id"]: {k: r.get(k) for k in fields} for r in _journal(tmp_path / "local")}
    theirs = {r["id"]: {k: r.get(k) for k in fields} for r in _journal(tmp_path / "remote")}
    assert theirs == mine and len(mine) == 6 + 3 + 3
