"""`tvm-suite fuzz` on real values: the seed conv2d on llvm float32, its schedules judged by
triage's verdict; a planted bug judged CHANGED; the same seed samples the same traces; a rerun
continues from the journal."""

import json

import numpy as np
import pytest

from suite.fuzz import campaign, plant
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


def test_minimise_drops_what_the_finding_does_not_need():
    trace = [[["GetSBlock", [], ["C", "main"], ["b0"]], ["Annotate", ["b0", "1"], ["x"], []],
              ["Unroll", ["b0"], [], []]], []]
    kept = campaign.minimise(trace, lambda t: any(i[0] == "Unroll" for i in t[0]), tries=5)
    assert [i[0] for i in kept[0]] == ["GetSBlock", "Unroll"]
    assert campaign.dedup_key({"outcome": "CHANGED", "name": "0"}, kept) == "CHANGED: Unroll on block C"


def test_false_changed_bound_of_none_in_ten():
    assert campaign.upper_bound_95(0, 10) == pytest.approx(0.3085, abs=1e-3)


def test_a_planted_swapped_index_is_judged_changed(tmp_path):
    """The unscheduled seed conv2d, and the same with its input indices swapped, built and run by
    the worker child, judged against the float64 reference."""
    from suite.core import workloads

    combination = campaign.Combination(workloads.seed_workload(), "float32", None)
    combination.expected = campaign._expected(combination)
    worker = Worker(tmp_path / "work")
    try:
        base = {"workload": combination.workload.id, "dtype": "float32", "target": "llvm", "order": "default"}
        before = worker.ask({**base, "dir": str(tmp_path / "before")}, 120)
        planted = worker.ask({**base, "plant": "swapped_index", "dir": str(tmp_path / "planted")}, 120)
    finally:
        worker.close()
    assert before["status"] == planted["status"] == "ok"
    out_before = np.load(tmp_path / "before" / "output.npy")
    judged = verdict.judge(combination.expected, out_before, out_before)
    assert judged.kind == verdict.EQUIVALENT
    wrong = verdict.judge(combination.expected, out_before, np.load(tmp_path / "planted" / "output.npy"))
    assert wrong.kind == verdict.CHANGED


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
               if r["outcome"] != campaign.SKIPPED)
    again = cli("fuzz", "--traces", "2", "--plant", "2", "--out", tmp_path / "a", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["judged_this_run"] == 0
    assert len((tmp_path / "a" / "journal.jsonl").read_text().splitlines()) == len(lines)
    other = cli("fuzz", "--traces", "2", "--out", tmp_path / "b", "--json")
    traces = lambda d: {r["id"]: r["trace"] for r in map(json.loads, (d / "journal.jsonl").read_text().splitlines())  # noqa: E731
                        if r["kind"] == "trace"}
    assert other.returncode == 0 and traces(tmp_path / "a") == traces(tmp_path / "b")
