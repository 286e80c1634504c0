"""The gate and its rules on in-memory histories (tests/histories.py): every rule of the verdict, in
milliseconds, without asv, TVM or files. End-to-end runs are in test_gate.py and test_gate_marks.py."""

import pytest
from markupsafe import escape

from histories import A, B, C, QF_TUNED, SAMPLES, SEED, TUNED, Builder
from suite.errors import ExitCode
from suite.reporting import gate, gate_checks, gate_result, pair_verdicts, report, rules
from suite.reporting import thresholds as limits
from suite.reporting.gate_result import Status, Verdict

DEFAULTS = limits.load()


def judge(history, commit=B, thresholds=DEFAULTS, baseline=None, remeasure=None) -> gate_result.GateResult:
    return gate.evaluate_named(history, commit, thresholds, baseline, remeasure)


def check(result, prefix) -> gate_result.Check:
    return next(c for c in result.checks if c.name.startswith(prefix))


def two_runs(scale_b=1.0, ids=SEED) -> Builder:
    """Two commits of one combination, accurate, with samples (B's scaled by ``scale_b``)."""
    b = Builder()
    for commit, scale in ((A, 1.0), (B, scale_b)):
        b.accurate(ids, commit).timing(ids, commit, [s * scale for s in SAMPLES])
    return b


def thresholds_file(tmp_path, text: str):
    path = tmp_path / "t.toml"
    path.write_text(text)
    return limits.load(path)


# ----------------------------------------------------------------------------- latency


def test_an_aa_history_is_ready():
    result = judge(two_runs().history())
    assert result.verdict is Verdict.READY and result.verdict.exit_code == ExitCode.OK
    assert check(result, "latency vs").status is Status.PASS and check(result, "latency vs").worst == "none slower of 1"
    assert result.line() == f"verdict: READY for {B[:10]} against {A[:10]} -> exit 0"


def test_a_suspect_not_timed_again_is_no_verdict_never_a_failure():
    result = judge(two_runs(1.5).history())
    latency = check(result, "latency vs")
    assert latency.status is Status.UNDECIDED and result.verdict is Verdict.UNDECIDED
    assert result.verdict.exit_code == ExitCode.NO_VERDICT and result.line().startswith("verdict: NO VERDICT")
    assert latency.details == (f"suspect: {' '.join(SEED)}: 1.50x, p 0.004 (not timed again)",)


def test_a_suspect_timed_again_is_noisy_or_confirmed():
    history = two_runs(1.5).history()
    seen = []

    def same_speed(series, timings):
        seen.append((series.ids, [t.kernel for t in timings]))
        return [list(SAMPLES), list(SAMPLES)], None

    noisy = judge(history, remeasure=same_speed)
    assert noisy.verdict is Verdict.READY and "noisy" in check(noisy, "latency vs").details[0]
    assert seen == [(SEED, [f"/cache/aaaa/{'.'.join(SEED)}/kernel.so", f"/cache/bbbb/{'.'.join(SEED)}/kernel.so"])]
    assert noisy.newly_remeasured()[0]["verdict"] == "noisy"

    confirmed = judge(history, remeasure=lambda s, t: ([list(SAMPLES), [x * 1.5 for x in SAMPLES]], "elsewhere"))
    assert confirmed.verdict is Verdict.NOT_READY
    assert check(confirmed, "latency vs").details[0].startswith(f"confirmed: {' '.join(SEED)}: 1.50x, p 0.004; "
                                                               "re-measured 1.50x, p 0.031, again 1.50x, p 0.031 "
                                                               "(elsewhere)")

    gone = judge(history, remeasure=lambda s, t: "kernel /x is gone from the cache")
    assert gone.verdict is Verdict.UNDECIDED
    assert "(cannot be timed again here: kernel /x is gone from the cache)" in check(gone, "latency vs").details[0]


def changed_code(scale_b=1.0) -> Builder:
    """two_runs whose kernel's code changed between A and B."""
    return two_runs(scale_b).code(SEED, A, "a" * 64).code(SEED, B, "b" * 64)


def retimed(step):
    """A re-measurement of 15 interleaved pairs under some load, B ``step`` times A in each pair."""
    base = [1e-3 * (1 + 0.01 * ((7 * i) % 5)) for i in range(15)]
    return lambda series, timings: ([base, [x * step for x in base]], None)


def test_a_small_step_of_changed_code_shows_only_when_timed_again():
    """A 5% step is within the noise between two runs (kept samples 1.05x, never a suspect by
    max_ratio): a kernel whose code changed is timed again all the same, and that finds it."""
    history = changed_code(1.05).history()
    assert judge(history).verdict is Verdict.READY  # --no-remeasure: the kept samples pass it
    caught = judge(history, remeasure=retimed(1.05))
    latency = check(caught, "latency vs")
    assert caught.verdict is Verdict.NOT_READY and latency.status is Status.FAIL
    assert latency.details[0].startswith(f"confirmed: {' '.join(SEED)}: 1.05x, p 0.004; re-measured 1.05x, p 5.4e-05, "
                                         "again 1.05x, p 5.4e-05")
    assert latency.worst == "1 slower of 1 (1 of changed code timed again)"
    # kept: a later gate (or the report) without re-measurement gives the same verdict
    b = changed_code(1.05)
    b.kept_remeasure(A, B, caught.newly_remeasured())
    assert judge(b.history()).verdict is Verdict.NOT_READY
    said = pair_verdicts.pair_verdict(b.history(), *b.history().commits, DEFAULTS)
    assert [blamed.words.split(":")[0] for blamed in said.blamed] == ["confirmed"]


def answers(*steps):
    """A remeasure giving ``retimed(step)``'s samples for each step in turn (a text: that reason),
    and the steps asked for."""
    asked = []

    def again(series, timings):
        step = steps[len(asked)]
        asked.append(step)
        return step if isinstance(step, str) else retimed(step)(series, timings)

    return again, asked


def test_a_step_is_confirmed_only_when_timed_again_twice_in_a_row(tmp_path):
    """Among the 128 kernels a gate may time again, one re-timing at retimed_alpha 0.05 finds a few
    slower by chance: a kernel is confirmed slower only when timed again ``retimed_times`` (2) times
    in a row finds it slower; the second re-timing is spent only on one the first found slower."""
    history = changed_code(1.05).history()
    remeasure, asked = answers(1.05, 1.0)
    chance = judge(history, remeasure=remeasure)
    latency = check(chance, "latency vs")
    assert asked == [1.05, 1.0] and chance.verdict is Verdict.READY and latency.details == ()
    assert chance.newly_remeasured()[0]["verdict"] == "noisy"
    assert [[round(r, 3), round(p, 5)] for r, p in chance.newly_remeasured()[0]["remeasured"]] == \
        [[1.05, 5e-05], [1.0, 1.0]]
    remeasure, asked = answers(1.0)
    assert judge(history, remeasure=remeasure).verdict is Verdict.READY and asked == [1.0]  # once is enough
    # slower once, then it cannot be timed again: as if never timed again, and not kept (a later
    # gate times it again): its kept samples pass it (1.05x), or it stays a suspect (1.5x)
    remeasure, asked = answers(1.05, "kernel /x is gone from the cache")
    passed = judge(history, remeasure=remeasure)
    assert passed.verdict is Verdict.READY and passed.newly_remeasured() == [] and len(asked) == 2
    remeasure, asked = answers(1.05, "kernel /x is gone from the cache")
    stuck = judge(two_runs(1.5).code(SEED, A, "a" * 64).code(SEED, B, "b" * 64).history(), remeasure=remeasure)
    assert stuck.verdict is Verdict.UNDECIDED and stuck.newly_remeasured() == []
    assert check(stuck, "latency vs").details == (
        f"suspect: {' '.join(SEED)}: 1.50x, p 0.004; re-measured 1.05x, p 5.4e-05 (cannot be timed again here: "
        "kernel /x is gone from the cache)",)
    # the count is a threshold: once, and a single re-timing confirms
    remeasure, asked = answers(1.05)
    once = thresholds_file(tmp_path, "[latency]\nretimed_times = 1\n")
    assert judge(history, thresholds=once, remeasure=remeasure).verdict is Verdict.NOT_READY and asked == [1.05]


def test_a_kept_re_measurement_of_an_older_suite_timed_once_is_timed_again(tmp_path):
    """An older suite kept one (ratio, p) bare, and confirmed on one re-timing: read as one
    re-timing, a noisy one still speaks for its samples; a confirmed one is timed again."""
    from suite.core import retimings

    slow, calm = changed_code(1.05), changed_code(1.05)
    confirmed = judge(slow.history(), remeasure=retimed(1.05)).newly_remeasured()[0]
    noisy = judge(calm.history(), remeasure=retimed(1.0)).newly_remeasured()[0]
    for builder, entry in ((slow, confirmed), (calm, noisy)):
        retimings.keep_remeasured(tmp_path / entry["verdict"], A, B,
                                 [{**entry, "remeasured": entry["remeasured"][0]}])  # one bare (ratio, p)
        loaded = retimings.load_remeasured(tmp_path / entry["verdict"])
        assert loaded[(A, B)][0]["remeasured"] == [entry["remeasured"][0]]
        builder.kept_remeasure(A, B, loaded[(A, B)])
    assert judge(calm.history(), remeasure=lambda s, t: pytest.fail("judged already")).verdict is Verdict.READY
    remeasure, asked = answers(1.0)
    assert judge(slow.history(), remeasure=remeasure).verdict is Verdict.READY and asked == [1.0]
    assert judge(slow.history()).verdict is Verdict.READY  # not timed again: its kept samples pass it


def test_changed_code_timed_again_and_not_slower_is_not_listed():
    result = judge(changed_code(0.97).history(), remeasure=retimed(1.005))
    latency = check(result, "latency vs")
    assert result.verdict is Verdict.READY and latency.details == ()
    assert latency.worst == "none slower of 1 (1 of changed code timed again)"
    assert [e["verdict"] for e in result.newly_remeasured()] == ["noisy"]  # kept, not timed again next time
    b = changed_code(0.97)
    b.kept_remeasure(A, B, result.newly_remeasured())
    again = judge(b.history(), remeasure=lambda s, t: pytest.fail("judged already"))
    assert check(again, "latency vs").worst == "none slower of 1"
    assert pair_verdicts.pair_verdict(b.history(), *b.history().commits, DEFAULTS).blamed == ()


def test_changed_code_that_cannot_be_timed_again_passes_on_its_kept_samples():
    result = judge(changed_code(1.05).history(), remeasure=lambda s, t: "kernel /x is gone from the cache")
    assert result.verdict is Verdict.READY and check(result, "latency vs").details == ()


def test_timed_again_a_few_slow_pairs_are_not_a_step():
    """A burst of load on some pairs moves the median of the ratios above retimed_max_ratio, not
    the signed-rank test: noisy."""
    base = [1e-3] * 15
    burst = [x * (1.5 if i % 2 else 0.97) for i, x in enumerate(base)]  # 7 of 15 pairs slow
    result = judge(changed_code(1.3).history(), remeasure=lambda s, t: ([base, burst], None))
    assert result.verdict is Verdict.READY and check(result, "latency vs").details[0].startswith("noisy:")


def test_a_kept_re_measurement_speaks_for_the_samples_it_judged_only():
    b = two_runs(1.5)
    first = judge(b.history(), remeasure=lambda s, t: ([list(SAMPLES), list(SAMPLES)], None))
    b.kept_remeasure(A, B, first.newly_remeasured())
    again = judge(b.history())  # no re-measurement: the kept one applies
    assert again.verdict is Verdict.READY and check(again, "latency vs").details[0].startswith("noisy:")
    b.timing(SEED, B, [s * 1.6 for s in SAMPLES])  # new samples: the kept verdict is not theirs
    assert judge(b.history()).verdict is Verdict.UNDECIDED


def test_results_without_samples_are_data_missing_never_a_ratio_of_medians():
    b = Builder()
    for commit, latency in ((A, 0.01), (B, 0.02)):
        b.accurate(SEED, commit).value("latency", SEED, commit, latency)
    result = judge(b.history(), remeasure=lambda s, t: pytest.fail("nothing is judged, nothing timed again"))
    latency = check(result, "latency vs")
    assert result.verdict is Verdict.DATA_MISSING and latency.status is Status.MISSING
    assert latency.worst == "1 without timing samples: not judged"
    assert latency.details == (f"missing: {' '.join(SEED)}",)
    # without the side data at all (plain `asv run`): the commits named, and how to get it
    unkept = judge(two_runs(2.0).unkept(A, B).history())
    latency = check(unkept, "latency vs")
    assert unkept.verdict is Verdict.DATA_MISSING and latency.status is Status.MISSING
    assert latency.details[0] == (f"no side data of {A[:10]} on testbox: /nonexistent/run/runs/testbox/{A}.zip is missing "
                                  "(timing samples, the values asv does not keep, records, build note)")
    assert latency.details[-1] == gate_checks.HOW_TO_KEEP and len(latency.details) == 3
    unkept = two_runs(2.0).unkept(A, B).history()
    assert pair_verdicts.pair_verdict(unkept, *unkept.commits, DEFAULTS).blamed == ()


def test_samples_that_cannot_reach_alpha_are_data_missing():
    b = Builder()
    for commit, scale in ((A, 1.0), (B, 3.0)):
        b.accurate(SEED, commit).timing(SEED, commit, [s * scale for s in SAMPLES[:2]])
    latency = check(judge(b.history()), "latency vs")
    assert latency.status is Status.MISSING and latency.worst == "1 with too few samples: the check cannot fail: not judged"
    assert latency.details == (f"cannot fail: {' '.join(SEED)}: latency.alpha = 0.01 is below 1/6 = 0.167, the smallest "
                               "p-value of a one-sided Mann-Whitney test with 2 samples a side: the check could never "
                               "fail",)
    assert limits.smallest_p(5, 5) == 1 / 252 and limits.cannot_fail(0.004, 5, 5) is None


def two_builds(scale_b=1.0) -> Builder:
    """changed_code of a wheel (A) and of a source build with Debian's LLVM (B)."""
    return changed_code(scale_b).build(A, "wheel").build(B, "source")


def test_kernels_of_two_llvms_are_judged_on_latency_only_timed_again_in_one_runtime():
    """A wheel and a source build: two LLVMs and two runtimes, so the kept samples pass nothing and
    fail nothing; a kernel whose code changed is timed again beside the other, and that decides."""
    slower = judge(two_builds(1.0).history(), remeasure=retimed(1.3))
    latency = check(slower, "latency vs")
    assert slower.verdict is Verdict.NOT_READY and latency.worst == "1 slower of 1 (1 of changed code timed again)"
    assert any("was built with LLVM 22 (source, USE_LLVM ON), at" in n and "may be the compiler's" in n
               for n in slower.notes)
    assert judge(two_builds(1.5).history(), remeasure=retimed(1.0)).verdict is Verdict.READY
    # no code identity kept (an older suite's results): not known to be the same, so timed again too
    unknown = two_runs(1.0).build(A, "wheel").build(B, "source").history()
    assert judge(unknown, remeasure=retimed(1.3)).verdict is Verdict.NOT_READY
    # not timed again (the report): a suspect, never passed on the samples of two builds
    undecided = judge(two_builds(1.0).history())
    assert undecided.verdict is Verdict.UNDECIDED
    assert check(undecided, "latency vs").details == (f"suspect: {' '.join(SEED)}: 1.00x, p 0.54 (not timed again)",)
    # cannot be timed here (a kernel this runtime cannot load): not compared, and said
    cannot = judge(two_builds(1.5).history(), remeasure=lambda s, t: "this TVM cannot load the kernels (TVMError)")
    latency = check(cannot, "latency vs")
    assert latency.status is Status.NOT_CHECKED and cannot.verdict is Verdict.READY
    assert latency.worst == "built with another LLVM: cannot be timed again here"
    assert latency.details == ("not compared: 1 of changed code, built with another LLVM, cannot be timed again "
                               "here: this TVM cannot load the kernels (TVMError)",)
    # slower when timed again once, and then it cannot be: left out all the same
    remeasure, asked = answers(1.3, "this TVM cannot load the kernels (TVMError)")
    once = judge(two_builds(1.5).history(), remeasure=remeasure)
    assert check(once, "latency vs").status is Status.NOT_CHECKED and len(asked) == 2
    # the same code: a latency step is noise, whatever built it
    same = two_runs(1.5).code(SEED, A, "c" * 64).code(SEED, B, "c" * 64).build(A, "wheel").build(B, "source")
    result = judge(same.history(), remeasure=lambda s, t: pytest.fail("the same code is not timed again"))
    assert result.verdict is Verdict.READY and check(result, "latency vs").status is Status.PASS


def test_kernels_of_two_llvms_are_compared_on_their_deterministic_values():
    """A deterministic value that moved between a wheel and a source build moved: its kernel's code
    changed or not, a change over the limit fails (the note says it may be the compiler's); the
    same code with another value is the suite's own bug."""
    b = Builder()
    other = ("resnet50.mean.7x7x2048", "float16", "llvm", "default")
    for commit, ulp in ((A, 10.0), (B, 30.0)):
        b.accurate(SEED, commit).accurate(other, commit, ulp_mean=ulp).build(commit, "wheel" if commit == A else "source")
        b.code(SEED, commit, "c" * 64).code(other, commit, ("a" if commit == A else "b") * 64)
    result = judge(b.history(), remeasure=retimed(1.0))
    ulp = check(result, "ulp_mean vs")
    assert ulp.status is Status.FAIL and ulp.worst == "1 of 2" and result.verdict is Verdict.NOT_READY
    assert ulp.details == (f"{' '.join(other)}: 10 -> 30 (3.00x)",)
    b.accurate(SEED, B, ulp_mean=11.0)  # the same code, another value: the suite's own bug
    with pytest.raises(Exception, match="ulp_mean"):
        judge(b.history())


def test_one_ulp_more_on_average_fails_by_default_and_the_same_value_passes():
    # ULP mean is deterministic for one build, and did not move between two releases whose code
    # all changed: one ULP more on the quick grid's largest mean (103, float32) is news.
    for after, status, verdict in ((103.8, Status.FAIL, Verdict.NOT_READY), (102.8, Status.PASS, Verdict.READY)):
        b = Builder()
        b.accurate(SEED, A, ulp_mean=102.8).accurate(SEED, B, ulp_mean=after)
        result = judge(b.history())
        assert check(result, "ulp_mean vs").status is status and result.verdict is verdict, result.checks
    assert check(result, "ulp_mean vs").limit == "<= 1.005x"


# ----------------------------------------------------------------------------- the records rule


def packets_history(records_b: str) -> Builder:
    b = Builder()
    for commit, packets, records in ((A, 1_000_000, "llvm"), (B, 1_110_000, records_b)):
        b.accurate(QF_TUNED, commit).value("packets", QF_TUNED, commit, packets).records(QF_TUNED, commit, records)
    return b


def test_the_suites_own_records_change_is_not_blamed_on_tvm():
    tvm = judge(packets_history("llvm").history())
    assert check(tvm, "packets vs").status is Status.FAIL and tvm.verdict is Verdict.NOT_READY
    assert check(tvm, "packets vs").details == (f"{' '.join(QF_TUNED)}: 1e+06 -> 1.11e+06 (1.11x)",)

    records = judge(packets_history("hexagon-v68-qf").history())
    packets = check(records, "packets vs")
    assert packets.status is Status.PASS and records.verdict is Verdict.READY
    assert packets.notes == (f"records: {' '.join(QF_TUNED)}: 1e+06 -> 1.11e+06 (1.11x): tuned replayed llvm's record "
                             f"at {A[:10]}, hexagon-v68-qf's at {B[:10]}: the suite's records changed, not TVM",)


def test_a_latency_step_of_changed_records_is_records():
    b = two_runs(1.5, ids=TUNED).records(TUNED, A, "llvm").records(TUNED, B, "hexagon-v68-qf")
    result = judge(b.history(), remeasure=lambda s, t: pytest.fail("a records step is not timed again"))
    assert result.verdict is Verdict.READY
    assert check(result, "latency vs").details[0].startswith(f"records: {' '.join(TUNED)}: 1.50x")
    assert pair_verdicts.pair_verdict(b.history(), *b.history().commits, DEFAULTS).blamed == ()  # no regression


# ----------------------------------------------------------------------------- change checks


def test_change_checks_follow_the_metrics_worse_direction(tmp_path):
    faster = thresholds_file(tmp_path, "[change.gflops]\nmax_ratio = 1.01\n")

    def gflops(before, after):
        b = Builder()
        for commit, value in ((A, before), (B, after)):
            b.accurate(SEED, commit).value("gflops", SEED, commit, value)
        return check(judge(b.history(), thresholds=faster), "gflops vs")

    assert gflops(2.79, 3.62).status is Status.PASS  # a speedup
    slower = gflops(3.62, 2.79)
    assert slower.status is Status.FAIL and slower.details == (f"{' '.join(SEED)}: 3.62 -> 2.79 (0.77x)",)
    assert slower.limit == "<= 1.01x (lower is worse: baseline / candidate)"


def test_code_that_goes_scalar_fails_keep_nonzero():
    b = Builder()
    for commit, arith in ((A, 86.0), (B, 0.0)):
        b.accurate(QF_TUNED, commit).value("qfloat_arith", QF_TUNED, commit, arith)
    result = judge(b.history())
    assert check(result, "qfloat_arith vs").details == (f"{' '.join(QF_TUNED)}: 86 -> 0",)


# ----------------------------------------------------------------------------- marks


def mark(b: Builder, commit: str, ratio: float, twin_ratio: float = 1.0, ids=QF_TUNED) -> Builder:
    """Divergence values of ``ids`` against default at ``commit`` (marked above 1.25), with the IEEE
    twin's of the same pair (the twin marked too: the cause is the schedule)."""
    b.accurate(ids, commit)
    return b.values_at(ids, commit, error_ratio=ratio, error_ratio_z=40.0, bias_shift=-0.1, bias_shift_z=3.0,
                       twin_error_ratio=twin_ratio, twin_error_ratio_z=40.0 if twin_ratio > 1.25 else 1.0,
                       twin_bias_shift=0.0, twin_bias_shift_z=0.0)


def accept_file(tmp_path, ids=QF_TUNED):
    return thresholds_file(tmp_path, '[[divergence.accept]]\nworkload = "{}"\ndtype = "{}"\ntarget = "{}"\n'
                                     'order = "{}"\nreason = "reviewed in PR 1"\n'.format(*ids))


def test_an_inherited_arithmetic_mark_is_known_and_ready():
    result = judge(mark(mark(Builder(), A, 1.67), B, 1.67).history())
    assert result.verdict is Verdict.READY
    (judged,) = result.marks.marks
    assert judged.status is rules.MarkStatus.KNOWN and judged.since.hash == A and not judged.fails
    assert judged.mark.cause is rules.Cause.ARITHMETIC
    assert judged.line(False).startswith(f"known since {A[:10]}: {' '.join(QF_TUNED)}: error vs float64 grew")


def test_new_and_worse_marks_fail():
    new = judge(mark(mark(Builder(), A, 1.0), B, 1.67).history())
    assert new.verdict is Verdict.NOT_READY and new.marks.marks[0].status is rules.MarkStatus.NEW
    worse = judge(mark(mark(Builder(), A, 1.67), B, 2.0).history())
    assert worse.marks.marks[0].status is rules.MarkStatus.WORSE and worse.marks.marks[0].baseline_value == 1.67
    assert "(baseline 1.67)" in check(worse, "divergence marks").details[0]


def test_a_mark_that_disappears_is_fixed():
    result = judge(mark(mark(Builder(), A, 1.67), B, 1.01).history())
    assert result.verdict is Verdict.READY and [(m.value, now) for m, now in result.marks.fixed] == [(1.67, 1.01)]
    assert f"fixed: {' '.join(QF_TUNED)}: error_ratio 1.67 at {A[:10]}, 1.01 now" in check(result, "divergence").notes


def test_an_acceptance_applies_to_a_known_mark_only(tmp_path):
    accepted = accept_file(tmp_path)
    known = judge(mark(mark(Builder(), A, 1.67, 1.6), B, 1.67, 1.6).history())
    assert known.verdict is Verdict.NOT_READY  # known, but the schedule's: fails unless accepted
    assert known.marks.marks[0].mark.cause is rules.Cause.SCHEDULE
    known = judge(mark(mark(Builder(), A, 1.67, 1.6), B, 1.67, 1.6).history(), thresholds=accepted)
    assert known.verdict is Verdict.READY and known.marks.marks[0].accepted == "reviewed in PR 1"

    new = judge(mark(mark(Builder(), A, 1.0, 1.0), B, 1.67, 1.6).history(), thresholds=accepted)
    assert new.verdict is Verdict.NOT_READY
    (judged,) = new.marks.marks
    assert judged.fails and judged.accepted is None and judged.acceptance_not_applied == "reviewed in PR 1"
    assert judged.line(False).endswith("; the acceptance in the thresholds file does not apply to a new mark")


def test_an_acceptance_that_matches_no_mark_is_stale(tmp_path):
    result = judge(mark(mark(Builder(), A, 1.67), B, 1.67).history(),
                   thresholds=accept_file(tmp_path, ("seed.conv2d_nhwc_7x7s2", "float16", "hexagon-v68-qf", "seed-tuned")))
    assert result.verdict is Verdict.READY and len(result.marks.stale) == 1
    assert any(n.startswith("stale acceptance in") for n in check(result, "divergence").notes)


def test_a_mark_of_changed_records_is_judged_by_its_cause_alone():
    b = mark(mark(Builder(), A, 1.0), B, 1.67).records(QF_TUNED, A, "llvm").records(QF_TUNED, B, "hexagon-v68-qf")
    result = judge(b.history())
    (judged,) = result.marks.marks
    assert judged.status is rules.MarkStatus.FIRST and not judged.fails and result.verdict is Verdict.READY
    assert "the suite's records changed, not TVM" in judged.line(False)


def test_the_first_commit_is_judged_by_cause_and_absolute_checks():
    result = judge(mark(Builder(), A, 1.67).history(), commit=A)
    assert result.first_commit and result.verdict is Verdict.READY
    assert result.marks.marks[0].status is rules.MarkStatus.FIRST
    assert check(result, "latency vs").status is Status.NOT_CHECKED
    assert result.line() == f"verdict: READY for {A[:10]} (first commit with results) -> exit 0"


# ----------------------------------------------------------------------------- absolute checks and precedence


def test_a_failed_combination_is_not_ready_with_its_reason():
    b = two_runs().failed(TUNED, B, "build failed: tuned trace does not apply")
    result = judge(b.history())
    assert result.verdict is Verdict.NOT_READY
    assert check(result, "combinations completed").details == (
        f"{' '.join(TUNED)}: build failed: tuned trace does not apply",)


def test_missing_data_wins_over_a_failure_and_a_failure_over_a_suspect(tmp_path):
    required = thresholds_file(tmp_path, '[divergence]\nrequired = true\ntargets = ["hexagon*"]\n')
    b = two_runs(1.5).failed(TUNED, B, "run failed")
    assert judge(b.history(), thresholds=required).verdict is Verdict.DATA_MISSING
    assert judge(b.history()).verdict is Verdict.NOT_READY
    assert judge(two_runs(1.5).history()).verdict is Verdict.UNDECIDED


def test_a_baseline_newer_than_the_candidate_is_said():
    b = two_runs()
    b.commits.append(C)
    b.side[C] = {"timings": {}, "records": {}, "failures": {}, "maps": {}, "build": None}
    b.accurate(SEED, C).timing(SEED, C)
    result = judge(b.history(), commit=B, baseline=C[:7])
    assert result.notes == (f"the baseline {C[:10]} comes after the candidate {B[:10]} in TVM's history",)
    assert f"note: {result.notes[0]}" in gate_result.format_table(result, b.history())


# ----------------------------------------------------------------------------- thresholds


@pytest.mark.parametrize("text, words", [
    ("[latency]\nalpha = 0\n", "latency.alpha = 0 is out of range: it must be between 0 and 1"),
    ("[latency]\nalpha = 5\n", "latency.alpha = 5 is out of range"),
    ("[latency]\nmax_ratio = 0.5\n", "latency.max_ratio = 0.5 is out of range: it must be at least 1"),
    ("[bound]\nlambda = 0\n", "bound.lambda = 0 is out of range: it must be above 0"),
    ("[divergence]\nworse_factor = 0.5\n", "divergence.worse_factor = 0.5 is out of range"),
    ("[change.packets]\nmax_ratio = 0\n", "change.packets.max_ratio = 0 is out of range"),
    ("[change.latency]\nmax_ratio = 1.5\n", "[change.latency] is not a check: latency is judged by [latency]"),
    ("[change.differ_fraction]\nmax_ratio = 1.5\n", "differ_fraction has no worse direction"),
    ('[regressions]\nthreshold = 0.05\n', "unknown key 'regressions'"),  # an older copy's: read no more
    ('[divergence]\ndtypes = []\n', "divergence.dtypes must be a non-empty list of strings"),
    ("[accuracy.float16]\nulp_meen = 3\n", "unknown key 'accuracy.float16.ulp_meen'"),
    ("[latency]\nalpha = nan\n", "latency.alpha must be a finite number"),
    ("[latency]\nalpha = 0.001\n", "latency.alpha = 0.001 is below 1/252 = 0.00397, the smallest p-value of a "
                                   "one-sided Mann-Whitney test with 5 samples a side: the check could never fail"),
    ("[latency]\nretimed_alpha = 1e-5\n", "latency.retimed_alpha = 1e-05 is not above 1/2^15 = 3.05e-05, the "
                                         "smallest p-value of the signed-rank test with 15 pairs"),
    ("[latency]\nretimed_alpha = 1\n", "latency.retimed_alpha = 1 is out of range"),
    ("[latency]\nretimed_max_ratio = 0.99\n", "latency.retimed_max_ratio = 0.99 is out of range: it must be at "
                                              "least 1"),
    ("[latency]\nretimed_times = 0\n", "latency.retimed_times = 0 is out of range: it must be a whole number from "
                                      "1 to 5"),
    ("[latency]\nretimed_times = 1.5\n", "latency.retimed_times = 1.5 is out of range"),
    ("[latency]\nretimed_times = 1000000\n", "latency.retimed_times = 1000000 is out of range"),
    ("[latency]\nretimed_times = true\n", "latency.retimed_times must be a finite number, not True"),
    ("a = " + "[" * 100 + "]" * 100 + "\n", "nested"),
    ("[model.float16]\nmin_top1_agreement = 0\n", "model.float16.min_top1_agreement = 0 is out of range: it must "
                                                  "be above 0 and at most 1"),
    ("[model.float16]\nmin_top1_agreement = 99\n", "model.float16.min_top1_agreement = 99 is out of range"),
    ("[model.float32]\nmin_top5_agreement = -0.5\n", "model.float32.min_top5_agreement = -0.5 is out of range"),
    ("[model.float32]\nmax_tuned_rmse_ratio = 0.5\n", "model.float32.max_tuned_rmse_ratio = 0.5 is out of range: "
                                                      "it must be at least 1"),
    ("[model.float32]\nmax_rmse_ratio = inf\n", "model.float32.max_rmse_ratio must be a finite number"),
    ("[model.float16]\nmax_abs_error = 0\n", "model.float16.max_abs_error = 0 is out of range: it must be above 0"),
    ("[model.float16]\nmin_top3_agreement = 0.9\n", "unknown key 'model.float16.min_top3_agreement'"),
    ("[model.int4]\nmax_rmse_ratio = 2\n", "unknown key 'model.int4' (valid here: model.float32, model.float16, "
                                            "model.bfloat16, model.int8)"),
    ("[model.int8]\nmax_rmse = 0\n", "model.int8.max_rmse = 0 is out of range: it must be above 0 and at most 10"),
    ("[model.int8]\nmax_rmse = '0.3'\n", "model.int8.max_rmse must be a finite number, not '0.3'"),
    ("[model.int8]\nmax_rmse_error = 0.3\n", "unknown key 'model.int8.max_rmse_error'"),
    ("[model.bfloat16]\nmin_top1_agreement = 1.5\n", "model.bfloat16.min_top1_agreement = 1.5 is out of range"),
    ("[model.bfloat16]\nmax_rmse_ratio_fp32 = 0.5\n", "model.bfloat16.max_rmse_ratio_fp32 = 0.5 is out of range: "
                                                      "it must be at least 1 (float32's own ratio)"),
])
def test_thresholds_out_of_their_meaning_are_refused_naming_key_and_file(tmp_path, text, words):
    with pytest.raises(limits.ThresholdsError) as err:
        thresholds_file(tmp_path, text)
    assert words in str(err.value) and str(tmp_path / "t.toml") in str(err.value)
    assert "\n" not in str(err.value)


def test_thresholds_are_immutable_and_complete():
    assert DEFAULTS.latency.alpha == 0.01 and DEFAULTS.bound.lam == 9.4
    with pytest.raises(AttributeError):
        DEFAULTS.latency.alpha = 0.5
    assert {c.metric for c in DEFAULTS.change} == {"code_bytes", "packets", "qfloat_arith", "ulp_mean"}


# ----------------------------------------------------------------------------- one verdict everywhere


@pytest.mark.parametrize("history, expected", [
    (lambda: two_runs().history(), Verdict.READY),
    (lambda: two_runs().failed(TUNED, B, "run failed").history(), Verdict.NOT_READY),
    (lambda: two_runs(1.5).history(), Verdict.UNDECIDED),
])
def test_the_report_renders_the_gates_result(history, expected):
    history = history()
    result = judge(history)
    assert result.verdict is expected
    facts = report.compute(history, result)
    assert facts["gate"]["words"] == expected.words and facts["gate"]["line"] == result.line()
    assert [c["status"] for c in facts["gate"]["checks"]] == [c.status.value for c in result.checks]
    html = report.render_html(facts, history, facts["divergence"]["marks"])
    assert "Release gate for" in html and str(escape(expected.words)) in html and str(escape(result.line())) in html


def test_an_exact_kernel_whose_ulp_mean_leaves_zero_fails():
    """A ULP mean of 0 (max pooling is exact) that becomes 1 is infinitely worse, never passed for
    want of a ratio; one that stays 0 passes."""
    b = Builder()
    exact = ("resnet50.max_pool2d.112x112x64-k3s2", "float32", "llvm", "default")
    for commit, ulp in ((A, 0.0), (B, 1.0)):
        b.accurate(SEED, commit).accurate(exact, commit, ulp_mean=ulp).timing(SEED, commit)
    ulp = check(judge(b.history(), remeasure=retimed(1.0)), "ulp_mean vs")
    assert ulp.status is Status.FAIL and ulp.details == (f"{' '.join(exact)}: 0 -> 1 (from 0)",)
    same = Builder()
    for commit in (A, B):
        same.accurate(SEED, commit).accurate(exact, commit, ulp_mean=0.0).timing(SEED, commit)
    assert check(judge(same.history(), remeasure=retimed(1.0)), "ulp_mean vs").status is Status.PASS
