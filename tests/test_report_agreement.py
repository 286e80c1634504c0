"""The report and the gate agree on every pair of commits of a history: the same verdict, the same
culprits, the same words (issue 59, defect 6). Each history is built by tests/histories.py and filed
on disk in milliseconds; the report is `tvm-suite report`, the gate `tvm-suite gate --commit C
--baseline B --no-remeasure --json` on each pair (the report times nothing: a suspect no gate timed
again is the gate's NO VERDICT in both), and :func:`suite.reporting.pair_verdicts.pair_verdict` says what
the report says of each pair."""

import json
import re

from markupsafe import escape

from histories import A, B, C, QF_TUNED, SAMPLES, SEED, TUNED, Builder
from suite.core import retimings
from suite.reporting import gate, gate_result, pair_verdicts, report, report_figures, results
from suite.reporting import thresholds as limits

DEFAULTS = limits.load()
OTHER = ("resnet50.conv2d_add_relu.56x56x64-k1s1-64", "float16", "llvm", "default")
NAMES = ("workload", "dtype", "target", "order", "metric")


def timed(b: Builder, ids, commit, scale=1.0, code=None) -> Builder:
    """``ids`` measured at ``commit``: accurate, its samples ``scale`` times SAMPLES, its code identity."""
    b.accurate(ids, commit).timing(ids, commit, [s * scale for s in SAMPLES])
    return b.code(ids, commit, code) if code else b


def retimed(step):
    """A re-timing of 15 interleaved pairs, the candidate ``step`` times the baseline in each."""
    base = [1e-3 * (1 + 0.01 * ((7 * i) % 5)) for i in range(15)]
    return lambda series, timings: ([base, [x * step for x in base]], None)


def reported(cli, results_dir, out, status=None) -> dict:
    done = cli("report", "--results", str(results_dir), "--out", str(out))
    assert status is None or done.returncode == status, done.stdout + done.stderr
    facts = json.loads((out / "report.json").read_text())
    facts["stdout"], facts["html"] = done.stdout, (out / "index.html").read_text()
    return facts


def gate_says(cli, results_dir, baseline: str, candidate: str) -> tuple[int, dict]:
    done = cli("gate", "--results", str(results_dir), "--commit", candidate, "--baseline", baseline,
               "--no-remeasure", "--json")
    return done.returncode, json.loads(done.stdout)


def agree(cli, results_dir, facts: dict) -> None:
    """Every pair of the report is what `tvm-suite gate` gives on it, word for word: its verdict
    and exit status, its verdict line, and each line that fails it (or leaves it undecided), in
    order, with the combination and metric it blames; and what pair_verdict says of it."""
    history = results.load(results_dir)
    for baseline, candidate in zip(history.commits, history.commits[1:]):  # the page shows the gate's lines
        _, said = gate_says(cli, results_dir, baseline.hash, candidate.hash)
        assert str(escape(said["line"])) in facts["html"]
        for c in said["checks"]:
            if c["status"] in ("FAIL", "UNDECIDED"):
                assert all(str(escape(words)) in facts["html"] for words in c["details"][:len(c["culprits"])])
    assert [(p["baseline"]["hash"], p["candidate"]["hash"]) for p in facts["pairs"]] == [
        (h.hash, c.hash) for h, c in zip(history.commits, history.commits[1:])]
    for pair in facts["pairs"]:
        status, said = gate_says(cli, results_dir, pair["baseline"]["hash"], pair["candidate"]["hash"])
        assert (pair["verdict"], pair["exit_status"], pair["words"], pair["line"]) == (
            said["verdict"], status, said["words"], said["line"])
        by_gate = [(c["name"], words, {k: culprit[k] for k in NAMES})
                   for c in said["checks"] if c["status"] in ("FAIL", "UNDECIDED")
                   for words, culprit in zip(c["details"], c["culprits"])]
        assert [(b["check"], b["words"], {k: b[k] for k in NAMES}) for b in pair["blamed"]] == by_gate
        assert pair["not_checked"] == [f"{c['name']}: {c['worst']}" for c in said["checks"]
                                       if c["status"] == "NOT CHECKED"]
        documented = pair_verdicts.pair_verdict(history, history.resolve(pair["baseline"]["hash"]),
                                         history.resolve(pair["candidate"]["hash"]), DEFAULTS).as_dict()
        assert documented == {k: v for k, v in pair.items() if k != "blamed"} | {
            "blamed": [{k: v for k, v in b.items() if k not in ("bisect", "decide", "records")}
                       for b in pair["blamed"]]}


def test_same_code_and_noisy_steps_are_no_regressions(cli, tmp_path):
    """The llvm history's report listed 517 regressions, each with a bisect command, every one the
    latency of a kernel whose code was the same, or a suspect a gate had timed again and found
    noisy. The gate passes both: the report lists neither, and no bisect command."""
    b = Builder(commits=(A, B, C))
    for commit, scale in ((A, 1.0), (B, 3.0), (C, 0.5)):  # the same code: steps of noise
        timed(b, SEED, commit, scale, code="5" * 64)
    for commit, scale, code in ((A, 1.0, "a"), (B, 1.5, "b"), (C, 1.5, "b")):
        timed(b, TUNED, commit, scale, code=code * 64)
    noisy = gate.evaluate(b.history(), b.history().resolve(B), b.history().resolve(A), DEFAULTS, retimed(1.0))
    assert [e["verdict"] for e in noisy.newly_remeasured()] == ["noisy"]
    results_dir = b.write(tmp_path / "run")
    retimings.keep_remeasured(tmp_path / "run", A, B, noisy.newly_remeasured())  # as `tvm-suite gate` keeps it
    facts = reported(cli, results_dir, tmp_path / "report", status=0)
    assert facts["regressions"] == [] and [p["verdict"] for p in facts["pairs"]] == ["READY", "READY"]
    assert "Regressions (0)" in facts["html"] and "tvm-suite bisect" not in facts["html"]
    assert "the gate on 2 pairs of commits: 2 READY; 0 regressions" in facts["stdout"]
    agree(cli, results_dir, facts)


def test_a_persistent_small_packets_step_is_the_gates_regression(cli, tmp_path):
    """+2% packets, kept at every later commit: [change.packets] (any rise) fails the gate on the pair
    where it appeared; the report, which searched steps above 5% of its own, said nothing. Now the
    report says what the gate says, on that pair, with its bisect command, and READY after it."""
    b = Builder(commits=(A, B, C))
    for commit, packets, code in ((A, 1_000_000, "a"), (B, 1_020_000, "b"), (C, 1_020_000, "b")):
        b.accurate(QF_TUNED, commit).value("packets", QF_TUNED, commit, packets).code(QF_TUNED, commit, code * 64)
        b.records(QF_TUNED, commit, "hexagon-v68-qf")
    results_dir = b.write(tmp_path / "run")
    facts = reported(cli, results_dir, tmp_path / "report", status=0)  # the newest pair: READY
    [step] = facts["regressions"]
    assert [p["verdict"] for p in facts["pairs"]] == ["NOT_READY", "READY"]
    assert (step["check"], step["words"], step["metric"]) == (
        f"packets vs {A[:10]}", f"{' '.join(QF_TUNED)}: 1e+06 -> 1.02e+06 (1.02x)", "packets")
    assert step["bisect"] == pair_verdicts.bisect_command(None, A, B, results.Series(*QF_TUNED, "testbox"), "packets")
    assert str(escape(step["words"])) in facts["html"] and f"find the commit: <code>{step['bisect']}" in facts["html"]
    agree(cli, results_dir, facts)


def slower_by_30_percent() -> Builder:
    """A +30% step of a kernel whose code changed: a suspect in the kept samples (1.30x, p 0.004)."""
    b = Builder()
    for commit, scale, code in ((A, 1.0, "a"), (B, 1.3, "b")):
        timed(b, SEED, commit, scale, code=code * 64)
    return b


def test_a_suspect_no_gate_timed_again_is_the_gates_no_verdict(cli, tmp_path):
    """The report times nothing: where the gate would time a suspect again, it says so in the
    gate's words (NO VERDICT, "not timed again"), with the gate that decides it."""
    results_dir = slower_by_30_percent().write(tmp_path / "run")
    facts = reported(cli, results_dir, tmp_path / "report", status=2)
    assert facts["regressions"] == [] and "tvm-suite bisect" not in facts["html"]  # nothing to bisect: undecided
    [pair] = facts["pairs"]
    assert pair["verdict"] == "UNDECIDED" and pair["words"] == gate_result.Verdict.UNDECIDED.words
    [suspect] = pair["blamed"]
    assert suspect["status"] == "UNDECIDED"
    assert suspect["words"] == f"suspect: {' '.join(SEED)}: 1.30x, p 0.004 (not timed again)"
    assert suspect["decide"] == f"tvm-suite gate --results {results_dir} --commit {B[:10]} --baseline {A[:10]}"
    assert suspect["bisect"] is None and facts["regressions"] == []
    agree(cli, results_dir, facts)


def test_the_gates_confirmed_slowdown_is_the_reports(cli, tmp_path):
    """The gate confirms the +30% plant (timed again twice, 1.30x each time); the report called it
    a suspect. Now the report says what the gate kept: confirmed, in the gate's words; and where
    the gate confirmed it on its kept samples (the kernels gone: nothing kept to read back), the
    report written with that verdict (`run`, `check`) says that very line."""
    b = slower_by_30_percent()
    history = b.history()
    gone = retimings.KeptSamples("the baseline's and candidate's kernels are gone from the cache")
    on_kept = gate.evaluate(history, history.resolve(B), history.resolve(A), DEFAULTS, lambda s, t: gone)
    line = next(c for c in on_kept.checks if c.name.startswith("latency vs")).details[0]
    assert on_kept.verdict is gate_result.Verdict.NOT_READY and on_kept.newly_remeasured() == []
    assert line.startswith("confirmed: ") and "judged on the kept samples" in line
    facts = report.make_report(gate.with_remeasured(history, on_kept), on_kept, tmp_path / "made")
    assert str(escape(line)) in (tmp_path / "made" / "index.html").read_text().split('id="regressions"')[1]
    assert [(b["status"], b["words"]) for b in facts["pairs"][0]["blamed"]] == [("FAIL", line)]
    assert facts["pairs"][0]["line"] == on_kept.line() == facts["gate"]["line"]

    confirmed = gate.evaluate(history, history.resolve(B), history.resolve(A), DEFAULTS, retimed(1.3))
    latency = next(c for c in confirmed.checks if c.name.startswith("latency vs"))
    assert confirmed.verdict is gate_result.Verdict.NOT_READY and latency.details[0].startswith("confirmed: ")
    results_dir = b.write(tmp_path / "run")
    retimings.keep_remeasured(tmp_path / "run", A, B, confirmed.newly_remeasured())  # as `tvm-suite gate` keeps it
    facts = reported(cli, results_dir, tmp_path / "report", status=1)
    [step] = facts["regressions"]
    assert (step["status"], step["words"], step["metric"]) == ("FAIL", latency.details[0], "latency")
    assert facts["pairs"][0]["line"] == confirmed.line()
    agree(cli, results_dir, facts)


def known_mark(b: Builder, commit: str) -> Builder:
    """A mark of qfloat's arithmetic (the error grew 1.67x, the IEEE twin's did not) at ``commit``."""
    b.accurate(QF_TUNED, commit)
    return b.values_at(QF_TUNED, commit, error_ratio=1.67, error_ratio_z=40.0, bias_shift=-0.1, bias_shift_z=3.0,
                       twin_error_ratio=1.0, twin_error_ratio_z=1.0, twin_bias_shift=0.0, twin_bias_shift_z=0.0)


def test_known_marks_beside_ready_are_said_to_be_known(cli, tmp_path):
    """The Hexagon history's banner "First divergent commit ... 1073 marks" stood in red beside
    READY. The marks at the candidate are known (inherited, the arithmetic's): the banner says what
    the gate's check of marks says of them, and is no alarm."""
    results_dir = known_mark(known_mark(Builder(), A), B).write(tmp_path / "run")
    facts = reported(cli, results_dir, tmp_path / "report", status=0)
    banner = re.search(r'<div class="callout ([a-z ]*)" id="divergence">(.*?)</div>', facts["html"], re.S)
    assert banner.group(1) == "warn" and "First divergent commit" in banner.group(2)
    assert "PASS</strong>, 1 known: inherited from" in banner.group(2)
    assert "and not worse, known marks of the arithmetic (or accepted) pass." in banner.group(2)
    assert f"2 marks; at {B[:10]}: divergence marks vs {A[:10]} PASS (1 known)" in facts["stdout"]
    check = facts["divergence"]["check"]
    assert (check["name"], check["status"], check["worst"]) == (f"divergence marks vs {A[:10]}", "PASS", "1 known")
    agree(cli, results_dir, facts)


def test_not_checked_rows_are_counted_and_shown(cli, tmp_path):
    """"All 25 checks passed or had nothing to check" hid 8 NOT CHECKED rows: the verdict says how
    many checks of each status, and names those not checked."""
    b = Builder()
    for commit in (A, B):
        timed(b, SEED, commit, code="5" * 64)
    results_dir = b.write(tmp_path / "run")
    facts = reported(cli, results_dir, tmp_path / "report", status=0)
    _, said = gate_says(cli, results_dir, A, B)
    statuses = [c["status"] for c in said["checks"]]
    unchecked = [c for c in said["checks"] if c["status"] == "NOT CHECKED"]
    assert "passed or had nothing to check" not in facts["html"]
    assert len(unchecked) >= 5 and facts["gate"]["counts"] == {"PASS": statuses.count("PASS"),
                                                               "NOT CHECKED": len(unchecked)}
    assert (f"Of {len(statuses)} checks: {statuses.count('PASS')} PASS, {len(unchecked)} NOT CHECKED."
            in facts["html"])
    shown = re.search(r'<span id="not-checked">(.*?)</span>', facts["html"], re.S).group(1)
    assert shown.startswith(f"Not checked ({len(unchecked)}): ")
    assert all(str(escape(f"{c['name']} ({c['worst']})")) in shown for c in unchecked)
    agree(cli, results_dir, facts)


def test_the_heat_map_colours_what_the_gate_says_never_same_code_noise(cli, tmp_path):
    """Same-code latency 1.4x slower and 0.6x faster were red and green: noise, now grey; a 1.5x
    step the gate confirmed is red."""
    b = Builder()
    for commit, scale in ((A, 1.0), (B, 1.4)):
        timed(b, SEED, commit, scale, code="5" * 64)
    for commit, scale in ((A, 1.0), (B, 0.6)):
        timed(b, TUNED, commit, scale, code="6" * 64)
    for commit, scale, code in ((A, 1.0, "a"), (B, 1.5, "b")):
        timed(b, OTHER, commit, scale, code=code * 64)
    history = b.history()
    confirmed = gate.evaluate(history, history.resolve(B), history.resolve(A), DEFAULTS, retimed(1.5))
    results_dir = b.write(tmp_path / "run")
    retimings.keep_remeasured(tmp_path / "run", A, B, confirmed.newly_remeasured())
    facts = reported(cli, results_dir, tmp_path / "report", status=1)
    colours = re.findall(r'style="background: (#[0-9a-f]{6})" title="latency x([0-9.]+)', facts["html"])
    assert {ratio: colour for colour, ratio in colours} == {"1.400": "#eaeef2", "0.600": "#eaeef2",
                                                                    "1.500": report_figures.heat_color({"ratio": 1.5,
                                                                                                "judged": "fail"})}
    cells = {(r["workload"], c["order"]): r["cells"][k]["latency"] for r in facts["heatmap"]["rows"]
             for k, c in enumerate(facts["heatmap"]["columns"]) if "latency" in r["cells"][k]}
    assert {key: (round(cell["ratio"], 2), cell["judged"]) for key, cell in cells.items()} == {
        (SEED[0], "default"): (1.4, "same code"), (SEED[0], "tuned"): (0.6, "same code"),
        (OTHER[0], "default"): (1.5, "fail")}
    spans = dict(re.findall(r'<span class="heat-([a-z-]+)" style="background: (#[0-9a-f]{6})" title="latency x[0-9]',
                            facts["html"]))  # the cells with a value
    assert spans == {"same-code": "#eaeef2", "fail": report_figures.heat_color(cells[(OTHER[0], "default")])}
    red, green, _ = (int(spans["fail"][k:k + 2], 16) for k in (1, 3, 5))
    assert red > 200 and green < 120  # red, as deep as a 1.5x step
    agree(cli, results_dir, facts)


def test_report_and_gate_agree_on_every_pair_of_a_series(cli, tmp_path):
    """One series of every kind of pair: noise, a same-code step, a failed build, a +2% packets step,
    known marks, a worse mark, changed code on kept samples, a suspect no gate timed again: each
    pair the same in both."""
    commits = tuple(c * 40 for c in "abcdef12")
    latency = (1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.6)  # same code to f, then changed: 1.0x, 1.3x
    packets = (1e6, 1e6, 1e6, 1.02e6, 1.02e6, 1.02e6, 1.02e6, 1.02e6)
    b = Builder(commits=commits)
    for k, commit in enumerate(commits):
        timed(b, SEED, commit, latency[k], code=("5" * 63 + "555555bc"[k]) if k >= 6 else "5" * 64)
        known_mark(b, commit)
        if k >= 5:  # 1.2 times the mark it was: worse, then known again
            b.value("error_ratio", QF_TUNED, commit, 1.67 * 1.2)
        b.value("packets", QF_TUNED, commit, packets[k]).code(QF_TUNED, commit, "aaabcddd"[k] * 64)
    b.failed(TUNED, commits[2], "build failed: a planted error", metrics=("latency", "ulp_mean"))
    results_dir = b.write(tmp_path / "run")
    facts = reported(cli, results_dir, tmp_path / "report", status=2)
    agree(cli, results_dir, facts)
    assert [p["verdict"] for p in facts["pairs"]] == ["READY", "NOT_READY", "NOT_READY", "READY", "NOT_READY",
                                                      "READY", "UNDECIDED"]
    assert "the gate on 7 pairs of commits: 3 READY, 3 NOT READY, 1 NO VERDICT; 3 regressions" in facts["stdout"]
