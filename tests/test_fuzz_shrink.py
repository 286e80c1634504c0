"""Issue 63: a finding's program made small while it still fails (suite.fuzz.shrink), on a real
lowering bug planted in TVM's VectorizeLoop through the experiment-only hook
(experiments/compiler_changes.py: ``lowering_bug_env``), each candidate built and run by a fuzz
worker child under that TVM and judged by triage's verdict, as a campaign judges it."""

from __future__ import annotations

import json
import os

import numpy as np

from suite.core import reference, workloads
from suite.core.bounds import Expected
from suite.fuzz import shrink
from suite.fuzz.outcome import Outcome
from suite.fuzz.worker import Worker
from suite.triage import verdict

MATMUL = "resnet50.matmul_add.2048-1000"
#: A sampled trace of the matmul's, minimised: the bias add's two loops fused, split by 64 and the
#: inner loop vectorized (its second block found by position, as MetaSchedule's traces find it).
TRACE = [[["GetSBlock", [], ["root", "main"], ["b0"]], ["GetChildBlocks", ["b0"], [], ["b1", "b2"]],
          ["GetLoops", ["b2"], [], ["l3", "l4"]], ["Fuse", ["l3", "l4"], [1], ["l5"]],
          ["Split", ["l5", None, 64], [True, False], ["l6", "l7"]], ["Vectorize", ["l7"], [], []]], []]


class _Judge:
    """A worker child (TVM with ``env``) that builds and runs a small program of the matmul before
    and after its trace, judged by triage's verdict against the small chain's float64 reference."""

    def __init__(self, where, env):
        self.where, self.worker, self.asked = where, Worker(where / "work", env=env, confined=False), 0

    def outcome(self, chain: dict, trace: list) -> Outcome:
        small = shrink.workload(workloads.get(MATMUL), chain)
        inputs = workloads.make_inputs(small, "float32")
        expected = Expected(reference.evaluate(chain, inputs), reference.evaluate_magnitude(chain, inputs),
                            reference.accumulation_length(chain), "output", "float32")
        outputs = []
        for request in ({"order": "default"}, {"trace": trace}):
            self.asked += 1
            where = self.where / f"request-{self.asked}"
            answer = self.worker.ask({"workload": MATMUL, "dtype": "float32", "target": "llvm", "dir": str(where),
                                      "chain": chain, **request}, 120)
            assert answer["failure"] is None, answer
            if answer["undefined"]:
                return Outcome.UNDEFINED
            outputs.append(np.load(where / "output.npy"))
        return Outcome(verdict.judge(expected, *outputs).kind)


def test_a_finding_is_shrunk_to_a_small_program_that_still_fails(tmp_path):
    """Under a VectorizeLoop whose last lane reads its neighbour's index, the matmul's trace (a
    CHANGED finding there: docs/fuzz-recall.md; not built here, the shrinking is what is tested)
    shrunk: the program keeps the bias add alone (the matmul dropped, its trace made to find the
    add by name), on fewer than 1,000 columns, in a TVMScript of at most 15 lines, and the small
    program is judged CHANGED again, while the clean TVM computes it right. ~16 s."""
    from experiments import compiler_changes

    bug = _Judge(tmp_path / "bug", {**os.environ, **compiler_changes.lowering_bug_env(
        "vector-lane-loads-neighbour", tmp_path / "hook")})
    matmul = workloads.get(MATMUL)
    try:
        judged = []

        def judge(chain, trace):
            judged.append(chain)
            return bug.outcome(chain, trace), ""

        found = shrink.shrink(matmul, "float32", TRACE, Outcome.CHANGED, "", judge, tries=16)
        assert found.complete and len(found.tried) == len(judged) <= 16
        edits = {k for k in found.kept if not k.startswith("trace ")}  # each stage and size kept was judged failing
        assert edits <= {t.what for t in found.tried if t.kept}
        steps = found.chain["steps"]
        assert [s["op"] for s in steps] == ["add"] and found.kept[0] == "matmul (stage 1 of 2) dropped"
        columns = found.chain["output_shape"][1]
        assert 1 < columns < 1000 and found.lines <= 15
        assert "T.vectorized" in found.after and "matmul" not in found.after
        # the regions TVM's parser infers are not written out: the same program in fewer lines
        assert "T.reads(" not in found.after and "T.writes(" not in found.after and "T.reads(" not in found.before
        assert bug.outcome(found.chain, found.trace) is Outcome.CHANGED  # the program kept fails
        # one size smaller was tried and judged right: the bisection stopped at the failure's edge
        assert any(t.what == f"axis 1 1000 -> {columns // 2}" and not t.kept for t in found.tried)
    finally:
        bug.worker.close()
    clean = _Judge(tmp_path / "clean", None)
    try:
        assert clean.outcome(found.chain, found.trace) in (Outcome.EQUIVALENT, Outcome.REORDERED)
    finally:
        clean.worker.close()
    assert json.loads(json.dumps(found.to_json()))["lines"] == found.lines


def test_a_conv2ds_window_strides_and_channels_are_shrunk_while_it_fails():
    """The seed's conv2d (7x7 window, strides 2, 3 to 64 channels) under a failure that needs a
    window two wide (as an unroll that drops a loop's last copy does): the window is made 1 x 2,
    the strides 1, one channel in and out, one output element, the data as small as that needs,
    and the program kept is printed without the regions TVM infers. No build (a judge of the
    chain's shapes alone); ~3 s."""
    seed = workloads.get("seed.conv2d_nhwc_7x7s2")
    trace = [[["GetSBlock", [], ["conv2d_nhwc", "main"], ["b0"]],
              ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4", "l5", "l6", "l7"]], ["Unroll", ["l6"], [], []]], []]

    def judge(chain, candidate):
        return (Outcome.CHANGED if chain["inputs"][1]["shape"][1] >= 2 else Outcome.EQUIVALENT), ""

    found = shrink.shrink(seed, "float32", trace, Outcome.CHANGED, "", judge, tries=40)
    assert found.complete
    (step,) = found.chain["steps"]
    assert [i["shape"] for i in found.chain["inputs"]] == [[1, 1, 2, 1], [1, 2, 1, 1]]
    assert step["attrs"]["strides"] == [1, 1] and found.chain["output_shape"] == [1, 1, 1, 1]
    assert {"kernel height 7 -> 1", "kernel width 7 -> 2", "stride height 2 -> 1"} <= set(found.kept)
    assert "T.unroll(2)" in found.after and "T.reads(" not in found.after and found.lines < 20
