"""Issue 63: a finding made small while it still fails, and the pass and primitive to blame
(suite.fuzz.blame); a Ctrl-C during minimisation, under a real lowering bug planted in TVM's
VectorizeLoop through the experiment-only hook (experiments/compiler_changes.py:
``lowering_bug_env``). A real finding minimised, blamed and replayed: tests/test_fuzz_recall.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SUITE_BIN, eventually

from suite.fuzz import blame
from suite.fuzz.outcome import Outcome

#: A trace as MetaSchedule writes one: lookups, samples, and primitives that use their outputs.
TRACE = [[["GetSBlock", [], ["C", "main"], ["b0"]],  # 0
          ["Annotate", ["b0", "1"], ["x"], []],  # 1
          ["GetLoops", ["b0"], [], ["l1", "l2"]],  # 2
          ["SamplePerfectTile", ["l1"], [4, 16], ["v1", "v2"]],  # 3
          ["Split", ["l1", [None, "v1", "v2"]], [], ["l3", "l4"]],  # 4
          ["SampleCategorical", [], [[0, 16, 64], [0.3, 0.3, 0.4]], ["v5"]],  # 5
          ["Annotate", ["b0", "v5"], ["unroll"], []],  # 6
          ["Parallel", ["l3"], [], []],  # 7
          ["Vectorize", ["l4"], [], []]],  # 8
         [[3, [2, 8]], [5, 1]]]


def _names(value):
    if isinstance(value, list):
        for item in value:
            yield from _names(item)
    elif isinstance(value, str):
        yield value


def _replayable(trace) -> bool:
    """Every name an instruction takes was made by an earlier one; every decision is a sample's."""
    made = set()
    for _kind, inputs, _attrs, outputs in trace[0]:
        if any(name not in made for name in _names(inputs) if name != "1"):
            return False
        made.update(outputs)
    return all(trace[0][n][0].startswith("Sample") for n, _ in trace[1])


def test_drop_takes_what_depends_on_it_and_moves_each_decision_with_its_sample():
    dropped = blame.drop(TRACE, [3])  # the tile sizes: the split that uses them goes, and what uses its loops
    assert [i[0] for i in dropped[0]] == ["GetSBlock", "Annotate", "GetLoops", "SampleCategorical", "Annotate"]
    assert dropped[1] == [[3, 1]]
    assert dropped[0][3][0] == "SampleCategorical"
    assert _replayable(dropped)


def test_minimise_keeps_the_failure_and_ends_with_no_primitive_that_can_go():
    """ddmin keeps only what the failure needs (the vectorize of a split loop), every candidate it
    builds replayable, none built twice; the lookups and samples left unused go without a build."""
    tried = []

    def fails(trace):
        tried.append(trace)
        return any(i[0] == "Vectorize" for i in trace[0])

    kept = blame.minimise(TRACE, fails, tries=40)
    assert [i[0] for i in kept.trace[0]] == ["GetSBlock", "GetLoops", "SamplePerfectTile", "Split", "Vectorize"]
    assert kept.trace[1] == [[2, [2, 8]]]
    assert kept.complete and kept.tries == len(tried) and kept.original_instructions == 9 and kept.instructions == 5
    assert all(_replayable(t) for t in tried) and len({repr(t) for t in tried}) == len(tried)
    budget = blame.minimise(TRACE, fails, tries=2)
    assert budget.tries == 2 and not budget.complete and fails(budget.trace)
    # a candidate that does not replay is never built: here, any without the Parallel
    tried.clear()
    needs_parallel = blame.minimise(TRACE, fails, tries=40,
                                    repaired=lambda t: t if any(i[0] == "Parallel" for i in t[0]) else None)
    assert [i[0] for i in needs_parallel.trace[0]] == ["GetSBlock", "GetLoops", "SamplePerfectTile", "Split", "Parallel",
                                                       "Vectorize"]
    assert all(any(i[0] == "Parallel" for i in t[0]) for t in tried) and needs_parallel.tries == len(tried)


def test_a_reproducer_keeps_one_primitive_where_the_failure_needs_none():
    """A lowering bug that the unscheduled program shows too fails with every candidate: the
    reproducer still schedules something (a trace of no primitive is refused by triage)."""
    kept = blame.minimise(TRACE, lambda trace: True, tries=40)
    primitives = [i[0] for i in kept.trace[0] if not blame.NOT_PRIMITIVES.match(i[0])]
    assert len(primitives) == 1 and kept.complete


def test_a_crash_is_the_same_failure_only_with_the_same_first_line():
    assert blame.same_failure(Outcome.CRASH, "Check failed: lanes > 1\nat ...", Outcome.CRASH, "Check failed: lanes > 1")
    assert not blame.same_failure(Outcome.CRASH, "Check failed: lanes > 1", Outcome.CRASH, "Segmentation fault")
    assert blame.same_failure(Outcome.CHANGED, "", Outcome.CHANGED, "")
    assert not blame.same_failure(Outcome.CHANGED, "", Outcome.UNDEFINED, "")


def test_the_guilty_pass_is_the_last_whose_removal_makes_the_output_right():
    """NarrowDataType's removal also makes it right (the faulty pass no longer sees what it breaks),
    VectorizeLoop's build fails left out and is switched off instead: VectorizeLoop is named; the
    primitive is the Vectorize whose removal makes the output right."""
    asked = []

    def judge(extra):
        asked.append(extra)
        if extra.get("disabled_pass") == ["tirx.VectorizeLoop"]:
            return Outcome.BUILD_FAILED, "Check failed: VectorizeLoop before LiftStorageAlloc"
        if extra.get("disabled_pass") in (["tirx.NarrowDataType"],) or extra.get("switched_off"):
            return Outcome.EQUIVALENT, ""
        if "trace" in extra:
            return (Outcome.REORDERED if not any(i[0] == "Vectorize" for i in extra["trace"][0]) else Outcome.CHANGED), ""
        return Outcome.CHANGED, ""

    found = blame.attribute(Outcome.CHANGED, TRACE, ["tirx.NarrowDataType", "tirx.VectorizeLoop", "tirx.UnrollLoop"],
                            judge, {"tirx.VectorizeLoop": "disable_vectorize"})
    assert (found.guilty_pass, found.guilty_primitive, found.primitive_block) == ("tirx.VectorizeLoop", "Vectorize", None)
    assert found.key == "CHANGED: pass tirx.VectorizeLoop, primitive Vectorize"
    assert [(t.what, t.how, t.outcome) for t in found.tried] == [
        ("tirx.NarrowDataType", "left out", Outcome.EQUIVALENT), ("tirx.VectorizeLoop", "left out", Outcome.BUILD_FAILED),
        ("tirx.VectorizeLoop", "switched off", Outcome.EQUIVALENT), ("tirx.UnrollLoop", "left out", Outcome.CHANGED),
        ("Vectorize #8", "dropped", Outcome.REORDERED)]
    assert json.loads(json.dumps(found.to_json()))["guilty_pass"] == "tirx.VectorizeLoop"


#: An imperfect split's guard: the block of element i runs where ``i < 10`` (as the workloads spell it: int64).
GUARDED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((T.int64(10),), "float32"), B: T.Buffer((T.int64(10),), "float32")):
    for i_0, i_1 in T.grid(T.int64(3), T.int64(4)):
        with T.sblock("B"):
            v = T.axis.spatial(T.int64(10), i_0 * T.int64(4) + i_1)
            T.where(i_0 * T.int64(4) + i_1 < T.int64(10))
            B[v] = A[v] + T.float32(1)
"""


def test_a_pass_the_build_cannot_do_without_is_named_by_running_the_lowering_pass_by_pass(monkeypatch):
    """The split-guard bug planted in s_tir.LowerOpaqueBlock (left out, the build fails): no pass
    left out makes the output right, and the pipeline bisected names the pass, from the one element
    its output no longer writes; on the clean TVM no pass is named, and the words say where the
    interpreter stopped reading the pipeline."""
    from experiments import compiler_changes
    from suite.compat import build, release
    from suite.fuzz import bisection

    tvm = release.tvm()
    func = tvm.script.from_source(GUARDED)

    def bisected():
        stages = []
        with bisection.recording(stages):
            build.build(func, tvm.target.Target("llvm"))
        return bisection.bisect(stages, [np.arange(10, dtype="float32")])

    clean = bisected()
    assert clean.guilty_pass is None and clean.evaluable >= 1
    assert clean.stopped.startswith("it stops at tirx.MakePackedAPI's output: parameter self_handle is a scalar")
    place = release.schedule_namespace().transform
    real = place.LowerOpaqueBlock
    monkeypatch.setattr(place, "LowerOpaqueBlock",
                        lambda *a, **k: compiler_changes.faulty_pass("split-guard-off-by-one", real, *a, **k))

    def judge(extra):
        if extra.get("disabled_pass") == ["s_tir.LowerOpaqueBlock"]:
            return Outcome.BUILD_FAILED, "Check failed: opaque blocks left"
        return Outcome.UNDEFINED, ""

    found = blame.attribute(Outcome.UNDEFINED, None, ["s_tir.LowerOpaqueBlock", "tirx.FlattenBuffer"], judge, {},
                            bisected)
    assert (found.guilty_pass, found.found_by) == ("s_tir.LowerOpaqueBlock", "bisected")
    assert found.bisection.difference == ("B[9] written by its input, never written by its output: "
                                          "1 of 10 elements differ")
    assert "TVM's pass s_tir.LowerOpaqueBlock is the one whose output computes something else" in found.words()
    assert found.key == "UNDEFINED: pass s_tir.LowerOpaqueBlock, primitive no single primitive"
    assert bisection.Bisection.from_json(json.loads(json.dumps(found.bisection.to_json()))) == found.bisection
    unfinished = bisection.Bisection(None, 0, 0, "no answer in 120 s", "", [], "the schedule")
    assert unfinished.words() == "the lowering of the schedule was not bisected (no answer in 120 s)"
    # a pass whose removal makes the output right is named so, with no bisection
    left_out = blame.attribute(Outcome.UNDEFINED, None, ["tirx.FlattenBuffer"], lambda extra: (Outcome.EQUIVALENT, ""),
                               {}, lambda: pytest.fail("bisected where a pass left out made the output right"))
    assert (left_out.guilty_pass, left_out.found_by, left_out.bisection) == ("tirx.FlattenBuffer", "left out", None)


#: Row sums into an allocated accumulator, zeroed, each loop over rows vectorized, the one over
#: columns unrolled: lowered, its buffers are flat views declared over the parameters' data, its
#: loops vector stores (Ramp, Broadcast) and copies of the unrolled body.
ROW_SUMS = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((T.int64(4), T.int64(3)), "float32"), B: T.Buffer((T.int64(4),), "float32")):
    acc = T.alloc_buffer((T.int64(4),))
    for i in T.vectorized(T.int64(4)):
        acc[i] = T.float32(0)
    for k in T.serial(T.int64(3), annotations={"pragma_auto_unroll_max_step": 16, "pragma_unroll_explicit": 1}):
        for i in T.vectorized(T.int64(4)):
            acc[i] = acc[i] + A[i, k]
    for i in T.vectorized(T.int64(4)):
        B[i] = acc[i] + T.float32(1)
"""


@pytest.mark.parametrize("bug, left_out, guilty, difference", [
    # the before program built with the bug is undefined too: leaving RemoveNoOp out is judged SHIFTED
    ("zero-init-of-allocation-removed", Outcome.SHIFTED, "tirx.RemoveNoOp",
     "undefined behaviour its input had not: uninitialized_read"),
    ("vector-lane-dropped", Outcome.BUILD_FAILED, "tirx.VectorizeLoop",
     "B[3] written by its input, never written by its output: 1 of 4 elements differ"),
    ("unroll-drops-last", Outcome.UNDEFINED, "tirx.UnrollLoop", "B[0] 4 in its input, 2 in its output: 4 of 4 elements differ")])
def test_a_bug_past_flatten_buffer_is_named_from_the_flat_views_and_vector_stores(monkeypatch, bug, left_out, guilty,
                                                                                  difference):
    """Lowering bugs in passes after tirx.FlattenBuffer: the interpreter reads the flattened
    program (buffers declared over others' data), VectorizeLoop's vector stores, UnrollLoop's
    copies and RemoveNoOp's output, so the bisection names the pass where no pass left out makes
    the output right."""
    import importlib

    from experiments import compiler_changes
    from suite.compat import build, release
    from suite.fuzz import bisection
    from suite.triage import interp, ir, tvmscript

    tvm = release.tvm()
    func = tvm.script.from_source(ROW_SUMS)
    spec = compiler_changes.LOWERING_BUGS[bug]
    place = importlib.import_module(f"tvm.{spec.namespace}")
    real = getattr(place, spec.factory)
    monkeypatch.setattr(place, spec.factory, lambda *a, **k: compiler_changes.faulty_pass(bug, real, *a, **k))
    stages = []
    with bisection.recording(stages):
        build.build(func, tvm.target.Target("llvm"))
    a = np.arange(12, dtype="float32").reshape(4, 3)

    def judge(extra):
        return (left_out if extra.get("disabled_pass") == [guilty] else Outcome.UNDEFINED), ""

    found = blame.attribute(Outcome.UNDEFINED, None, [guilty], judge, {}, lambda: bisection.bisect(stages, [a]))
    assert (found.guilty_pass, found.found_by, found.bisection.difference) == (guilty, "bisected", difference)
    assert found.bisection.stopped.startswith("it stops at tirx.MakePackedAPI's output")
    # the flattened, vectorized program computes the row sums, and its JSON (a confined child's) keeps the views
    last = next(s.after for s in reversed(stages) if s.name == "tirx.AnnotateEntryFunc")
    program = ir.from_json(json.loads(json.dumps(ir.to_json(tvmscript.translate(last, "main")))))
    assert any(b.base is not None for b in {id(s.buf): s.buf for s in ir.stores(program.body)}.values())
    result = interp.evaluate(program, {"A": a})
    assert result.output.tolist() == (a.sum(axis=1) + 1).tolist() or bug != "zero-init-of-allocation-removed"


# ----------------------------------------------------------------------------- a real lowering bug
# (a finding of one minimised, blamed and replayed: tests/test_fuzz_recall.py)

#: Its builds take under a second: a campaign's findings come in seconds.
MATMUL = "resnet50.matmul_add.2048-1000"


def _bug_env(tmp_path) -> dict:
    from experiments import compiler_changes

    return {**os.environ, **compiler_changes.lowering_bug_env("vector-lane-dropped", tmp_path / "hook")}


def _command() -> list[str]:
    return [str(SUITE_BIN)] if SUITE_BIN.exists() else [sys.executable, "-m", "suite.cli"]


@pytest.mark.slow
def test_ctrl_c_during_minimisation_keeps_no_finding_unjournaled_and_ends_its_children(tmp_path):
    """Issue 63, defect 3. Slow: SIGINT once a sampled schedule's finding is being minimised (its
    trace.json written): exit 130; every finding directory left is one the journal names (the one
    being minimised is removed: the rerun judges it again); no worker child of the campaign is left."""
    out = tmp_path / "o"
    # Far more traces than it judges before the signal: a kept finding has a trace.json too, and a
    # campaign of 3 could end between the poll that saw one and the signal (exit 13, not 130)
    process = subprocess.Popen(_command() + ["fuzz", "--workloads", MATMUL, "--dtypes", "float16", "--traces", "50",
                                             "--out", str(out)], env=_bug_env(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert eventually(lambda: any((out / "findings").glob("*trace*/trace.json")) or process.poll() is not None,
                          1500)
        assert process.poll() is None, process.communicate()[1]
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    journaled = {json.loads(line)["finding"]["dir"].rsplit("/", 1)[-1]
                 for line in (out / "journal.jsonl").read_text().splitlines() if '"finding"' in line}
    assert {p.name for p in (out / "findings").iterdir()} <= journaled
    work = str(out / "work")

    def campaign_children():
        found = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and work in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(proc.name)
            except OSError:
                continue
        return found

    assert eventually(lambda: not campaign_children(), 30), campaign_children()
