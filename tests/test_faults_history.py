"""Verdicts from data the suite did not verify (issue 44), beside the damage matrix (test_damage.py)
and the faults users meet (test_faults.py): a results directory given through a symbolic link,
asv's results without the side data a run keeps, asv's null against a sealed number, writes into
the side data, an alpha the latency test can never reach, an empty commit name, a `tvm-suite
history` interrupted (its asv stood in for by tests/stand_in_asv.py, as fast).

Each kind of fault is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases``
keeps the table and the tests together. Every case runs `tvm-suite` (in this process) on a small
history filed on disk by tests/histories.py as `tvm-suite run` files it (asv's results, the side
data sealed): milliseconds, without asv running or TVM compiling. The contract: the documented
exit status; where the input is refused, one line on stderr (``tvm-suite: error: ...``) naming
what is wrong; never a traceback; and the real values and verdicts otherwise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import check_fault_table, run_experiment
from conftest import one_line as refused

from asv_runs import loosen, member, tamper
from histories import A, B, C, MACHINE, QF_TUNED, SAMPLES, SEED, Builder
from suite.core import run_bundle, run_place, runstore
from suite.errors import UserError

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "links": ["test_a_linked_results_directory_gives_the_verdict_of_the_real_one",
              "test_an_edited_latency_is_refused_through_a_link",
              "test_report_out_through_a_link_is_refused"],
    "missing side data": ["test_results_without_side_data_are_data_missing_naming_what_and_how",
                          "test_one_commit_without_side_data_is_data_missing_too"],
    "null against sealed data": ["test_asvs_null_against_a_sealed_value_is_a_disagreement"],
    "writes into the side data": ["test_report_out_inside_the_side_data_is_refused"],
    "an alpha that cannot fail": ["test_an_alpha_below_the_tests_floor_is_refused_on_load",
                                  "test_samples_too_few_for_alpha_are_data_missing"],
    "an empty name": ["test_an_empty_commit_name_is_an_error", "test_an_empty_order_to_compare_with_is_an_error"],
    "an interrupted history": ["test_an_interrupted_history_keeps_what_asv_finished_sealed",
                               "test_a_rerun_seals_what_an_earlier_run_finished_and_left_unsealed",
                               "test_a_commit_asv_has_not_finished_stays_unsealed"],
    "a gap in the series": ["test_a_commit_that_did_not_build_is_no_baseline_and_the_gap_is_said"],
    "a series measured by two suite versions": [
        "test_a_commit_measured_before_a_metric_existed_is_not_checked_and_one_that_lost_it_is_missing"],
    "a kept history": ["test_a_kept_history_is_the_sealed_commits_less_their_maps_and_gives_the_same_verdict",
                       "test_a_commit_that_did_not_build_is_kept_with_its_build_log_and_the_gap_travels",
                       "test_keeping_again_leaves_the_same_commits_and_refuses_other_data",
                       "test_an_unsealed_or_damaged_commit_is_not_kept",
                       "test_how_each_commit_was_built_is_kept_and_never_replaced",
                       "test_a_differing_build_note_is_refused_before_any_commit_is_copied",
                       "test_a_build_installed_again_is_the_same_build",
                       "test_history_keep_inside_its_own_out_is_refused_before_any_work",
                       "test_history_keep_to_a_link_to_nothing_is_refused_before_any_work"],
    "an install log that cannot be written": ["test_install_suite_says_in_one_line_that_its_log_cannot_be_written"],
    "the gate's experiments: bad input, an existing --out": [
        "test_the_gate_experiments_refuse_bad_input_in_one_line", "test_the_gate_experiments_never_replace_a_file"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


# ----------------------------------------------------------------------------- the history


#: A/A on a busy machine: the same build timed twice, the candidate's medians 2.03x the baseline's,
#: its samples overlapping the baseline's (a one-sided U test gives p 0.21): no slowdown.
AA_SAMPLES = (0.0097, 0.0204, 0.0205, 0.0099, 0.0203)
MARK = dict(error_ratio=1.67, error_ratio_z=40.0, bias_shift=-0.1, bias_shift_z=3.0, twin_error_ratio=1.0,
            twin_error_ratio_z=1.0, twin_bias_shift=0.0, twin_bias_shift_z=0.0)
ASV_FILE = f"results/{MACHINE}/{{commit}}-tvm-suite-py3.11.json"
READY = f"verdict: READY for {B[:10]} against {A[:10]} -> exit 0"
DATA_MISSING = f"verdict: DATA MISSING (no verdict without complete data) for {B[:10]} against {A[:10]} -> exit 2"


def aa_history() -> Builder:
    """Two commits of one build: the seed conv2d on llvm timed twice (A/A, medians 2.03x apart), and
    a known arithmetic mark on the qfloat target at both (error ratio 1.67 against default)."""
    b = Builder()
    for commit, samples in ((A, SAMPLES), (B, AA_SAMPLES)):
        b.accurate(SEED, commit).timing(SEED, commit, samples)
        b.accurate(QF_TUNED, commit).values_at(QF_TUNED, commit, **MARK)
    return b


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """The A/A history as `tvm-suite run` files it: results/ and runs/ side by side."""
    aa_history().write(tmp_path / "asv")
    return tmp_path / "asv"


def gate(cli, results, *args):
    return cli("gate", "--results", str(results), "--no-remeasure", *args)


def no_traceback(result, status):
    assert result.returncode == status, (result.returncode, result.stdout[-3000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


def one_line(result, *words, status=2):
    """Refused (:func:`conftest.one_line`), and nothing judged on stdout."""
    line = refused(result, *words, status=status)
    assert "Traceback" not in result.stdout and "verdict:" not in result.stdout, result.stdout
    return line


def row(stdout: str, check: str) -> str:
    """The table row of ``check`` in the gate's output."""
    return next(line for line in stdout.splitlines() if line.startswith(check))


def edit_asv(results: Path, commit: str, benchmark: str, edit) -> Path:
    """Change asv's value of the first combination of ``benchmark`` at ``commit`` (``edit(old) ->
    new``), in asv's results only; the asv file."""
    path = results / ASV_FILE.format(commit=commit[:8]).removeprefix("results/")
    data = json.loads(path.read_text())
    values = data["results"][benchmark][0]
    values[0] = edit(values[0])
    path.write_text(json.dumps(data))
    return path


# ----------------------------------------------------------------------------- links


def test_a_linked_results_directory_gives_the_verdict_of_the_real_one(cli, run_dir, tmp_path):
    """Through a link, the side data is the real directory's: the A/A pair is judged on its samples
    (READY), not on asv's medians (2.03x, NOT READY before), and the known mark stays known."""
    link = tmp_path / "elsewhere" / "linked-results"
    link.parent.mkdir()
    link.symlink_to(run_dir / "results")
    real, linked = gate(cli, run_dir / "results", "--commit", B[:8]), gate(cli, link, "--commit", B[:8])
    no_traceback(real, 0)
    no_traceback(linked, 0)
    assert linked.stdout == real.stdout and linked.stdout.rstrip().endswith(READY), linked.stdout
    assert row(linked.stdout, "latency vs").split()[-5:] == ["none", "slower", "of", "1", "PASS"]
    assert row(linked.stdout, "divergence marks vs").split()[-3:] == ["1", "known", "PASS"]
    assert f"known since {A[:10]}: {' '.join(QF_TUNED)}: error vs float64 grew" in linked.stdout
    assert "ratio of medians" not in linked.stdout
    # the report through the link: the same verdict, written beside, outside the real results
    report = cli("report", "--results", str(link), "--out", str(tmp_path / "report"))
    assert report.returncode in (0, 2) and "Traceback" not in report.stderr, report.stderr
    facts = json.loads((tmp_path / "report" / "report.json").read_text())
    assert facts["gate"]["line"] == READY


def test_an_edited_latency_is_refused_through_a_link(cli, run_dir, tmp_path):
    """asv's latency edited x37 (through the link): refused as disagreeing with the sealed side
    data, both files named, exit 2; never judged."""
    link = tmp_path / "linked-results"
    link.symlink_to(run_dir / "results")
    asv_file = edit_asv(link, B, "bench_latency.Throughput.track_latency_median", lambda v: v * 37)
    place = run_place.Place(run_dir, MACHINE, B)
    kept = place.bundle / run_place.values_relative("bench_latency.Throughput", SEED)
    line = one_line(gate(cli, link, "--commit", B[:8]), asv_file.resolve(), kept,
                    "is 0.7511, but", "says 0.0203", "asv's results and the run's side data disagree")
    assert str(link) not in line  # one real path, named as such


def test_report_out_through_a_link_is_refused(cli, run_dir, tmp_path):
    """`report --out` into the results or the side data, through a link to either: refused before
    any work, nothing written there."""
    link = tmp_path / "linked-results"
    link.symlink_to(run_dir / "results")
    runs_link = tmp_path / "linked-runs"
    runs_link.symlink_to(run_dir / "runs")
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    for results, out, inside in ((link, link / "report", run_dir / "results"),
                                 (link, runs_link / "report", run_dir / "runs"),
                                 (run_dir / "results", runs_link, run_dir / "runs")):
        one_line(cli("report", "--results", str(results), "--out", str(out)), f"--out {out} (that is ",
                 "is inside", inside, "write elsewhere")
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == before


# ----------------------------------------------------------------------------- missing side data


def test_results_without_side_data_are_data_missing_naming_what_and_how(cli, run_dir, tmp_path):
    """results/ copied alone (as a plain root `asv run` writes it): latency is not judged on a ratio
    of medians (NOT READY 2.03x before) and the marks are not "compared" (PASS before, with the mark
    the full history knows): DATA MISSING, exit 2, naming the side data and how to get it."""
    alone = tmp_path / "copy" / "results"
    shutil.copytree(run_dir / "results", alone)
    full = gate(cli, run_dir / "results", "--commit", B[:8])
    no_traceback(full, 0)
    result = gate(cli, alone, "--commit", B[:8])
    no_traceback(result, 2)
    assert result.stderr == "" and result.stdout.rstrip().endswith(DATA_MISSING), result.stdout
    latency = row(result.stdout, "latency vs")
    assert latency.split()[-7:] == ["1", "without", "timing", "samples:", "not", "judged", "MISSING"], latency
    divergence = row(result.stdout, "divergence marks vs")
    assert "1 not compared: no error_ratio_z, bias_shift, bias_shift_z at" in divergence, divergence
    assert divergence.rstrip().endswith("MISSING")
    for commit in (A, B):
        assert (f"no side data of {commit[:10]} on {MACHINE}: {alone.parent / 'runs' / MACHINE / commit}.zip is "
                "missing (timing samples, the values asv does not keep, records, build note)") in result.stdout
    assert "measure the commit with `tvm-suite run`" in result.stdout and "copy runs/ beside results/" in result.stdout
    for guess in ("ratio of medians", "compared;", "combinations compared", "slower:", "NOT READY"):
        assert guess not in result.stdout, guess
    # the checks asv's values answer alone are judged as with the side data
    assert row(result.stdout, "ulp_mean float16").split() == row(full.stdout, "ulp_mean float16").split()


def test_one_commit_without_side_data_is_data_missing_too(cli, tmp_path):
    """The baseline measured by a plain `asv run`, the candidate by `tvm-suite run`: what compares
    them needs both sides' side data (samples, records, builds): DATA MISSING, the baseline named."""
    b = aa_history().unkept(A)
    b.value("code_bytes", QF_TUNED, A, 4096.0).value("code_bytes", QF_TUNED, B, 4096.0)
    b.value("qfloat_arith", QF_TUNED, A, 86.0).value("qfloat_arith", QF_TUNED, B, 86.0)
    results = b.write(tmp_path / "asv")
    assert not run_place.Place(tmp_path / "asv", MACHINE, A).sealed and run_place.Place(tmp_path / "asv", MACHINE, B).sealed
    result = gate(cli, results, "--commit", B[:8])
    no_traceback(result, 2)
    assert result.stdout.rstrip().endswith(DATA_MISSING)
    for check in ("latency vs", "divergence marks vs", "code_bytes vs", "qfloat_arith vs"):
        assert row(result.stdout, check).rstrip().endswith("MISSING"), row(result.stdout, check)
    assert f"no side data at {A[:10]}: qfloat_arith and the records and builds behind it not known" in \
        row(result.stdout, "qfloat_arith vs")
    assert f"no side data of {A[:10]} on {MACHINE}: " in result.stdout
    assert f"no side data of {B[:10]}" not in result.stdout
    assert row(result.stdout, "packets vs").rstrip().endswith("NOT CHECKED")  # measured at neither commit


# ----------------------------------------------------------------------------- asv's null against sealed data


@pytest.mark.parametrize("asv_says, words", [(None, "is null (asv's mark of a failed benchmark)"),
                                             (float("nan"), "is NaN (skipped)")], ids=["null", "NaN"])
def test_asvs_null_against_a_sealed_value_is_a_disagreement(cli, run_dir, asv_says, words):
    """asv's null (a failed benchmark) or NaN (skipped) where the run sealed the number its
    benchmark reported: the two files disagree, exit 2, both named; never "failed: reason in the
    asv log" (NOT READY before), never skipped."""
    asv_file = edit_asv(run_dir / "results", B, "bench_accuracy.Accuracy.track_ulp_mean", lambda v: asv_says)
    place = run_place.Place(run_dir, MACHINE, B)
    kept = place.bundle / run_place.values_relative("bench_accuracy.Accuracy", SEED)
    assert json.loads(member(place, run_place.values_relative("bench_accuracy.Accuracy", SEED)))["ulp_mean"] == 10.0
    line = one_line(gate(cli, run_dir / "results", "--commit", B[:8]), asv_file, kept, words, "says 10:",
                    "asv's results and the run's side data disagree")
    assert "reason in the asv log" not in line


# ----------------------------------------------------------------------------- writes into the side data


def test_report_out_inside_the_side_data_is_refused(cli, run_dir, tmp_path):
    """`report --out` inside runs/ (the sealed side data), or runs/ itself: refused like the results
    directory, before any work; the history stays usable (the same READY afterwards)."""
    for out in (run_dir / "runs" / "report", run_dir / "runs", run_dir / "runs" / MACHINE / B / "report",
                run_dir / "results" / MACHINE):
        inside = run_dir / ("runs" if "runs" in out.parts else "results")
        one_line(cli("report", "--results", str(run_dir / "results"), "--out", str(out)), f"--out {out} is inside",
                 inside, "write elsewhere")
    assert not (run_dir / "runs" / "report").exists() and not (run_dir / "runs" / "index.html").exists()
    again = gate(cli, run_dir / "results", "--commit", B[:8])
    no_traceback(again, 0)
    assert again.stdout.rstrip().endswith(READY)
    beside = cli("report", "--results", str(run_dir / "results"), "--out", str(run_dir / "report"))
    assert "Traceback" not in beside.stderr and (run_dir / "report" / "report.json").is_file(), beside.stderr


# ----------------------------------------------------------------------------- an alpha that cannot fail


def test_an_alpha_below_the_tests_floor_is_refused_on_load(cli, run_dir, tmp_path):
    """With 5 samples a side the smallest p of the one-sided Mann-Whitney test is 1/252: an alpha
    at or below it would switch the latency check off. Refused when the thresholds are loaded, by
    gate and report alike, naming the floor; an alpha just above it is a check like any other."""
    thresholds = tmp_path / "t.toml"
    for alpha, shown in (("1e-7", "1e-07 is below"), ("0.0039", "0.0039 is below"),
                         (repr(1 / 252), "0.00396825 is equal to")):
        thresholds.write_text(f"[latency]\nalpha = {alpha}\n")
        words = (thresholds, f"latency.alpha = {shown} 1/252 = 0.00397, the smallest p-value of a one-sided "
                             "Mann-Whitney test with 5 samples a side: the check could never fail")
        one_line(gate(cli, run_dir / "results", "--commit", B[:8], "--thresholds", str(thresholds)), *words)
        one_line(cli("report", "--results", str(run_dir / "results"), "--out", str(tmp_path / "r"),
                     "--thresholds", str(thresholds)), *words)
    thresholds.write_text("[latency]\nalpha = 0.004\n")
    reachable = gate(cli, run_dir / "results", "--commit", B[:8], "--thresholds", str(thresholds))
    no_traceback(reachable, 0)
    assert "U-test p >= 0.004" in row(reachable.stdout, "latency vs")


def test_samples_too_few_for_alpha_are_data_missing(cli, tmp_path):
    """Samples kept by a run of another sample count (3 a side: the smallest p is 1/20 = 0.05) can
    never be below alpha 0.01, however much slower: the gate says plainly that the check cannot
    fail there, and gives no verdict (exit 2), rather than a PASS it could not have refused."""
    b = Builder()
    for commit, scale in ((A, 1.0), (B, 3.0)):
        b.accurate(SEED, commit).timing(SEED, commit, [s * scale for s in SAMPLES[:3]])
    result = gate(cli, b.write(tmp_path / "asv"), "--commit", B[:8])
    no_traceback(result, 2)
    assert result.stdout.rstrip().endswith(DATA_MISSING)
    latency = row(result.stdout, "latency vs")
    assert "1 with too few samples: the check cannot fail: not judged" in latency and latency.rstrip().endswith("MISSING")
    assert (f"cannot fail: {' '.join(SEED)}: latency.alpha = 0.01 is below 1/20 = 0.05, the smallest p-value of a "
            "one-sided Mann-Whitney test with 3 samples a side: the check could never fail") in result.stdout


# ----------------------------------------------------------------------------- an empty name


@pytest.mark.parametrize("argv", [("gate", "--commit", ""), ("gate", "--commit", "  "),
                                  ("gate", "--commit", B[:8], "--baseline", ""),
                                  ("report", "--out", "{tmp}/r", "--baseline", "")],
                         ids=["gate --commit ''", "gate --commit '  '", "gate --baseline ''", "report --baseline ''"])
def test_an_empty_commit_name_is_an_error(cli, run_dir, tmp_path, argv):
    """An empty name names no commit: one line, exit 2, before any work; never the newest commit
    (gate judged B, READY, before)."""
    command, *rest = argv
    result = cli(command, "--results", str(run_dir / "results"), *[a.format(tmp=tmp_path) for a in rest])
    option = "--baseline" if "--baseline" in argv else "--commit"
    one_line(result, f"tvm-suite {command}: argument {option}: ", "names no commit")
    assert result.stdout == "" and not (tmp_path / "r").exists()


def test_an_empty_order_to_compare_with_is_an_error(cli):
    """`measure --against ''` compared with nothing and exited 0; an empty order is an unknown one:
    one line, exit 2, before any compile."""
    result = cli("measure", "--workload", "seed.conv2d_nhwc_7x7s2", "--dtype", "float16", "--order", "tuned",
                 "--against", "")
    one_line(result, "unknown loop order ''", "valid orders: default")


# ----------------------------------------------------------------------------- an interrupted history


def history(cli, repo: Path, found: list, out: Path):
    from test_run_context import MACHINE

    return cli("history", "--tvm-repo", str(repo), "--range", f"{found[0].commit}^..{found[-1].commit}",
               "--workloads", SEED[0], "--dtypes", SEED[1], "--orders", SEED[3], "--out", str(out),
               "--env-dir", str(out.parent / "env"), "--machine", MACHINE)


def note(stdout: str, commit: str) -> str:
    """The note of ``commit``'s row in history's table (its last column, "" where none)."""
    cells = row(stdout, commit[:12]).split(maxsplit=6)
    return cells[6] if len(cells) == 7 else ""


def test_an_interrupted_history_keeps_what_asv_finished_sealed(cli, tmp_path, monkeypatch):
    """Ctrl-C while asv is in the second commit: the first, which asv finished, is sealed (a
    reader verifies it); the second's side data, half-kept, is refused until the same history
    again finishes it, and seals it."""
    from test_run_context import KEPT, MACHINE, stand_in_history, use_stand_in_asv

    repo, found = stand_in_history(tmp_path)
    out = tmp_path / "history"
    use_stand_in_asv(monkeypatch, stop_at=found[1].commit)
    stopped = history(cli, repo, found, out)
    no_traceback(stopped, 130)
    assert stopped.stderr.strip().startswith("tvm-suite: interrupted (SIGINT): "), stopped.stderr
    first, second = (run_place.Place(out, MACHINE, c.commit) for c in found)
    assert runstore.load(first).values == KEPT
    with pytest.raises(run_place.DamagedRunData, match="side data without its seal"):
        runstore.load(second)
    use_stand_in_asv(monkeypatch)
    again = history(cli, repo, found, out)
    no_traceback(again, 0)
    assert note(again.stdout, found[0].commit) == "kept from an earlier run"  # sealed by the run it was finished in
    assert note(again.stdout, found[1].commit) == ""
    assert runstore.load(first).values == runstore.load(second).values == KEPT


def test_a_rerun_seals_what_an_earlier_run_finished_and_left_unsealed(cli, tmp_path, monkeypatch):
    """A commit asv finished, left without its seal (a run killed before it sealed, or a suite
    that sealed only what its own asv run had just written): the next history seals it before asv
    runs, and its row says so."""
    from test_run_context import KEPT, MACHINE, stand_in_history, use_stand_in_asv

    repo, found = stand_in_history(tmp_path)
    out = tmp_path / "history"
    use_stand_in_asv(monkeypatch)
    no_traceback(history(cli, repo, found, out), 0)
    first = run_place.Place(out, MACHINE, found[0].commit)
    loosen(first)
    again = history(cli, repo, found, out)
    no_traceback(again, 0)
    assert note(again.stdout, found[0].commit) == "kept from an earlier run, sealed now"
    assert note(again.stdout, found[1].commit) == "kept from an earlier run"
    assert runstore.load(first).values == KEPT


def test_a_commit_asv_has_not_finished_stays_unsealed(cli, tmp_path, monkeypatch):
    """A results file that lacks a benchmark of asv's benchmarks.json (an earlier run's, before the
    benchmark existed, or one asv was interrupted in) is no finished commit: it is not sealed; asv
    runs what it lacks, and then it is."""
    from test_run_context import MACHINE, stand_in_history, use_stand_in_asv
    from suite.history import commits

    repo, found = stand_in_history(tmp_path)
    out = tmp_path / "history"
    use_stand_in_asv(monkeypatch)
    no_traceback(history(cli, repo, found, out), 0)
    for c in found:
        loosen(run_place.Place(out, MACHINE, c.commit))
    [results] = (out / "results" / MACHINE).glob(f"{found[1].commit[:8]}-*.json")
    data = json.loads(results.read_text())
    del data["results"]["bench_stand_in.Second.track_value"]
    results.write_text(json.dumps(data))
    assert commits.seal_finished(out, MACHINE, found, {}) == [found[0].commit]
    with pytest.raises(run_place.DamagedRunData, match="side data without its seal"):
        runstore.load(run_place.Place(out, MACHINE, found[1].commit))
    again = history(cli, repo, found, out)
    no_traceback(again, 0)
    assert note(again.stdout, found[1].commit) == ""  # asv ran what it lacked
    runstore.load(run_place.Place(out, MACHINE, found[1].commit))


# ----------------------------------------------------------------------------- a kept history


def with_maps(run_dir: Path) -> Path:
    """The A/A history with a difference map planted in B's side data, and sealed again."""
    place = run_place.Place(run_dir, MACHINE, B)
    loosen(place)
    maps = place.file("maps/" + ".".join(QF_TUNED) + ".npz")
    maps.parent.mkdir(parents=True)
    import numpy as np
    np.savez_compressed(maps, channels=np.ones(4), hw=np.ones((2, 2)))
    run_bundle.seal(place)
    return run_dir


def test_a_kept_history_is_the_sealed_commits_less_their_maps_and_gives_the_same_verdict(cli, run_dir, tmp_path):
    from suite.history import keep

    with_maps(run_dir)
    kept_dir = tmp_path / "kept"
    kept = keep.keep(run_dir, kept_dir, MACHINE)
    assert kept.copied == (A, B) and kept.already == () and kept.unsealed == () and kept.size > 0
    maps = "maps/" + ".".join(QF_TUNED) + ".npz"
    assert maps in run_bundle.sealed_members(run_place.Place(run_dir, MACHINE, B))
    assert maps not in run_bundle.sealed_members(run_place.Place(kept_dir, MACHINE, B))
    assert sorted(p.name for p in (kept_dir / "runs" / MACHINE).iterdir()) == [f"{A}.zip", f"{B}.zip"]
    for commit in (A, B):  # every file kept verifies against the digest its run sealed
        side = runstore.load(run_place.Place(kept_dir, MACHINE, commit))
        assert side.kept and side.maps == {} and side.timings
    real, kept_gate = gate(cli, run_dir / "results", "--commit", B[:8]), gate(cli, kept_dir / "results",
                                                                              "--commit", B[:8])
    no_traceback(kept_gate, 0)
    assert kept_gate.stdout.replace(str(kept_dir), "X") == real.stdout.replace(str(run_dir), "X")


def test_keeping_again_leaves_the_same_commits_and_refuses_other_data(run_dir, tmp_path):
    from suite.history import keep

    kept_dir = tmp_path / "kept"
    keep.keep(run_dir, kept_dir, MACHINE)
    before = {p: p.read_bytes() for p in kept_dir.rglob("*") if p.is_file()}
    again = keep.keep(run_dir, kept_dir, MACHINE)
    assert again.copied == () and again.already == (A, B)
    assert {p: p.read_bytes() for p in kept_dir.rglob("*") if p.is_file()} == before
    # B measured again (other samples): its kept data is not replaced silently
    other = tmp_path / "other"
    history = aa_history()
    history.timing(SEED, B, SAMPLES)
    history.write(other)
    with pytest.raises(UserError, match=f"holds other data of commit {B[:12]}"):
        keep.keep(other, kept_dir, MACHINE)
    assert {p: p.read_bytes() for p in kept_dir.rglob("*") if p.is_file()} == before


def test_how_each_commit_was_built_is_kept_and_never_replaced(run_dir, tmp_path):
    """install_tvm's note of each build (wheel or source, seconds, ccache) travels with the kept
    commit; a note the run has no more is no loss; a different one, a damaged one or a link is
    refused in one line, the kept one left as it was."""
    from suite.history import keep

    logs = run_dir / "install-logs"
    logs.mkdir()
    facts = {"kind": "source", "build_s": 237.9, "ccache": {"direct_hits": 447, "misses": 5}}
    (logs / f"{A}.build.json").write_text(json.dumps(facts))
    kept_dir = tmp_path / "kept"
    keep.keep(run_dir, kept_dir, MACHINE)
    assert json.loads((kept_dir / "install-logs" / f"{A}.build.json").read_text()) == facts
    assert not (kept_dir / "install-logs" / f"{B}.build.json").exists()  # the run has no note of B's build
    (logs / f"{A}.build.json").unlink()
    assert keep.keep(run_dir, kept_dir, MACHINE).already == (A, B)  # kept before: still there
    assert json.loads((kept_dir / "install-logs" / f"{A}.build.json").read_text()) == facts
    for name, text in ((A, json.dumps({**facts, "build_s": 12.0})), (B, "[1, 2]"), (B, "{half")):
        (logs / f"{name}.build.json").write_text(text)
        with pytest.raises(UserError, match="differs from the run's|damaged"):
            keep.keep(run_dir, kept_dir, MACHINE)
        (logs / f"{name}.build.json").unlink()
    (logs / f"{B}.build.json").symlink_to(tmp_path / "secret.json")
    (tmp_path / "secret.json").write_text("{}")
    with pytest.raises(UserError, match="a link, not the file install_tvm writes"):
        keep.keep(run_dir, kept_dir, MACHINE)
    assert json.loads((kept_dir / "install-logs" / f"{A}.build.json").read_text()) == facts
    assert not (kept_dir / "install-logs" / f"{B}.build.json").exists()


def test_a_differing_build_note_is_refused_before_any_commit_is_copied(run_dir, tmp_path):
    """The run's note of B is of another build than the kept one (built again): the keep copies
    nothing, not even A, kept before B; a later keep, the note chosen, does it all."""
    from suite.history import keep

    logs = run_dir / "install-logs"
    logs.mkdir()
    (logs / f"{B}.build.json").write_text(json.dumps({"kind": "source", "build_s": 22.1}))
    kept_dir = tmp_path / "kept"
    (kept_dir / "install-logs").mkdir(parents=True)
    kept_note = kept_dir / "install-logs" / f"{B}.build.json"
    kept_note.write_text(json.dumps({"kind": "source", "build_s": 29.6}))
    with pytest.raises(UserError, match="differs from the run's"):
        keep.keep(run_dir, kept_dir, MACHINE)
    assert sorted(p.relative_to(kept_dir).as_posix() for p in kept_dir.rglob("*") if p.is_file()) == [
        f"install-logs/{B}.build.json"]
    kept_note.unlink()
    assert keep.keep(run_dir, kept_dir, MACHINE).copied == (A, B)
    assert (kept_dir / "results" / MACHINE / "machine.json").exists()


def test_a_build_installed_again_is_the_same_build(run_dir, tmp_path):
    """asv installs the range's first commit again at each run to find the benchmarks; install_tvm
    lists those installs under ``reinstalls`` of the first build's note. The keep takes that for
    the same build: every commit kept, the kept note left as it was."""
    from suite.history import keep

    logs = run_dir / "install-logs"
    logs.mkdir()
    first = {"kind": "source", "build_s": 67.7, "ccache": {"direct_hits": 613, "misses": 3}}
    (logs / f"{B}.build.json").write_text(json.dumps({**first, "reinstalls": [{"kind": "source", "build_s": 32.3}]}))
    kept_dir = tmp_path / "kept"
    (kept_dir / "install-logs").mkdir(parents=True)
    kept_note = kept_dir / "install-logs" / f"{B}.build.json"
    kept_note.write_text(json.dumps(first))
    assert keep.keep(run_dir, kept_dir, MACHINE).copied == (A, B)
    assert json.loads(kept_note.read_text()) == first
    (logs / f"{B}.build.json").write_text(json.dumps({**first, "build_s": 70.0, "reinstalls": []}))
    with pytest.raises(UserError, match="differs from the run's"):  # another first build: refused
        keep.keep(run_dir, tmp_path / "kept", MACHINE)


def test_an_unsealed_or_damaged_commit_is_not_kept(run_dir, tmp_path):
    from suite.history import keep

    loosen(run_place.Place(run_dir, MACHINE, A))  # a run that did not finish A
    kept = keep.keep(run_dir, tmp_path / "kept", MACHINE)
    assert kept.copied == (B,) and kept.unsealed == (A,)
    assert not run_place.Place(tmp_path / "kept", MACHINE, A).sealed
    place = run_place.Place(run_dir, MACHINE, B)
    timing = next(name for name in run_bundle.sealed_members(place) if name.startswith("timings/"))
    tamper(place, timing, member(place, timing) + b" ")  # one byte more than its run sealed
    with pytest.raises(run_place.DamagedRunData, match="damaged"):
        keep.keep(run_dir, tmp_path / "kept2", MACHINE)
    assert not run_place.Place(tmp_path / "kept2", MACHINE, B).sealed


def test_history_keep_inside_its_own_out_is_refused_before_any_work(cli, tmp_path):
    out = tmp_path / "out"
    done = cli("history", "--tvm-repo", str(tmp_path / "no-clone"), "--releases", "0.26.0", "--out", str(out),
               "--keep", str(out / "kept"))
    one_line(done, "--keep", "apart from the run's own")
    assert not out.exists()


# ----------------------------------------------------------------------------- a gap in the series


def test_a_commit_that_did_not_build_is_no_baseline_and_the_gap_is_said(cli, tmp_path):
    """B's TVM did not build: asv keeps a null for every benchmark and there is no side data. C is
    judged against A, the last commit with data, and the gate says B was passed over (it was
    judged against B before: DATA MISSING)."""
    history = Builder(commits=(A, B, C))
    for commit in (A, C):
        history.accurate(SEED, commit).timing(SEED, commit)
    history.failed(SEED, B, "the build of TVM failed", metrics=("ulp_mean", "latency")).unkept(B)
    results = history.write(tmp_path / "asv")
    done = gate(cli, results, "--commit", C[:8])
    no_traceback(done, 0)
    assert done.stdout.rstrip().endswith(f"verdict: READY for {C[:10]} against {A[:10]} -> exit 0"), done.stdout
    assert (f"note: compared with {A[:10]}, the last earlier commit with data: {B[:10]} has none "
            "(every combination failed: a build that failed?)") in done.stdout


def test_a_commit_measured_before_a_metric_existed_is_not_checked_and_one_that_lost_it_is_missing(cli, tmp_path):
    """A kept history outlives suite versions: A and B were measured by a suite without the ULP
    benchmarks, C by one with them. A later suite's metric does not make B DATA MISSING (NOT
    CHECKED, saying so); a metric measured at B and gone at C is DATA MISSING."""
    def accuracy_only_at(commit: str) -> Path:
        history = Builder(commits=(A, B, C))
        for each in (A, B, C):
            history.timing(SEED, each)
        return history.accurate(SEED, commit).write(tmp_path / commit[0])

    before = gate(cli, accuracy_only_at(C), "--commit", B[:8])
    no_traceback(before, 0)
    assert before.stdout.rstrip().endswith(f"verdict: READY for {B[:10]} against {A[:10]} -> exit 0"), before.stdout
    assert "first measured at a later commit" in row(before.stdout, "ulp_mean float16")
    after = gate(cli, accuracy_only_at(B), "--commit", C[:8])
    no_traceback(after, 2)
    assert "no values at this commit" in row(after.stdout, "ulp_mean float16"), after.stdout


def test_a_commit_that_did_not_build_is_kept_with_its_build_log_and_the_gap_travels(cli, tmp_path):
    """B's TVM did not build: --keep keeps its results (nulls) and its build log, not a sealed side
    data it never had; the kept history gives the gate's verdict and note of the run's. An
    unfinished commit (results with a value, no side data) is still not kept."""
    from suite.history import keep

    history = Builder(commits=(A, B, C))
    for commit in (A, C):
        history.accurate(SEED, commit).timing(SEED, commit)
    history.failed(SEED, B, "the build of TVM failed", metrics=("ulp_mean", "latency")).unkept(B)
    run_dir = tmp_path / "run"
    results = history.write(run_dir)
    (run_dir / "install-logs").mkdir()
    (run_dir / "install-logs" / f"{B}.log").write_text("error: ninja: build stopped: subcommand failed.\n")
    kept_dir = tmp_path / "kept"
    kept = keep.keep(run_dir, kept_dir, MACHINE)
    assert kept.copied == (A, C) and kept.failed == (B,) and kept.unsealed == (), kept
    assert (kept_dir / "install-logs" / f"{B}.log").read_text().startswith("error: ninja")
    assert f"kept without data (TVM did not build; the build log in install-logs/): {B[:12]}" in kept.text(kept_dir)
    real, kept_gate = gate(cli, results, "--commit", C[:8]), gate(cli, kept_dir / "results", "--commit", C[:8])
    no_traceback(kept_gate, 0)
    assert kept_gate.stdout.replace(str(kept_dir), "X") == real.stdout.replace(str(run_dir), "X")
    assert f"{B[:10]} has none" in kept_gate.stdout
    assert keep.keep(run_dir, kept_dir, MACHINE).failed == (B,)  # again: the same, left alone
    (run_dir / "install-logs" / f"{B}.log").write_text("built again, failed otherwise\n")
    with pytest.raises(UserError, match="differs from the run's"):
        keep.keep(run_dir, kept_dir, MACHINE)
    log = run_dir / "install-logs" / f"{B}.log"
    log.unlink()
    log.symlink_to(tmp_path / "secret")  # a link is not copied into the history, whatever it points at
    (tmp_path / "secret").write_text("not a build log\n")
    with pytest.raises(UserError, match="a link, not the file install_tvm writes"):
        keep.keep(run_dir, tmp_path / "kept-again", MACHINE)
    assert not (tmp_path / "kept-again" / "install-logs").exists()


def test_history_keep_to_a_link_to_nothing_is_refused_before_any_work(cli, tmp_path):
    (tmp_path / "kept").symlink_to(tmp_path / "gone")
    done = cli("history", "--tvm-repo", str(tmp_path / "no-clone"), "--releases", "0.26.0",
               "--out", str(tmp_path / "out"), "--keep", str(tmp_path / "kept"))
    one_line(done, "--keep", "a link to nothing")
    assert not (tmp_path / "out").exists() and not (tmp_path / "gone").exists()


@pytest.mark.parametrize("script, args, words", [
    ("retime_noise.py", ["--results", "/nonexistent"], "results directory /nonexistent does not exist"),
    ("retime_noise.py", ["--results", "reports/tvm-main/results", "--commit", "zzz"], "no commit zzz with results"),
    ("retime_noise.py", ["--results", "reports/tvm-main/results", "--repeats", "1"], "--repeats: 1 is not between 2"),
    ("retime_noise.py", ["--results", "reports/tvm-main/results", "--rounds", "0"], "--rounds: 0 is not between 1"),
    ("retime_noise.py", ["--results", "reports/tvm-main/results", "--limit", "0"], "--limit: 0 is not between 1"),
    ("retime_noise.py", ["--results", "README.md"], "README.md"),
    ("history_series.py", ["--results", ""], "--results: an empty path"),
    ("history_series.py", ["--results", "README.md"], "README.md does not exist"),
    ("history_series.py", ["--results", "reports/tvm-main/results", "--tvm-repo", ""], "--tvm-repo: an empty path"),
    ("history_series.py", ["--results", "reports/tvm-main/results", "--thresholds", "/nonexistent.toml"],
     "thresholds file /nonexistent.toml does not exist"),
    ("history_series.py", ["--results", "reports/tvm-main/results", "--thresholds", "README.md"],
     "not a readable TOML file"),
    ("history_series.py", ["--results", "reports/tvm-main/results", "--remeasure", "all"], "invalid choice: 'all'"),
])
def test_the_gate_experiments_refuse_bad_input_in_one_line(script, args, words):
    done = run_experiment(script, *args)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("script, written, out", [
    ("retime_noise.py", "pairs.json", "pairs.json"),  # --out names the file
])
def test_the_gate_experiments_never_replace_a_file(tmp_path, script, written, out):
    mine = tmp_path / written
    mine.write_text("the user's")
    done = run_experiment(script, "--results", "reports/tvm-main/results", "--out", tmp_path / out)
    assert done.returncode == 2 and "exists: it is never replaced" in done.stderr and mine.read_text() == "the user's"
    assert done.stdout == ""


def test_install_suite_says_in_one_line_that_its_log_cannot_be_written(tmp_path):
    """asv's install command for the suite (suite/asv_plumbing/install_suite.py), its --log a
    directory: one line naming it and exit 2 before pip runs, never a traceback, the environment
    left as it was."""
    import subprocess
    import sys

    import suite

    script = Path(suite.__file__).parent / "asv_plumbing" / "install_suite.py"
    (tmp_path / "checkout").mkdir()
    (tmp_path / "checkout" / "pyproject.toml").write_text('[project]\nname = "not-the-suite"\n')
    (tmp_path / "log").mkdir()
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "checkout"), "--log", str(tmp_path / "log")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"install_suite: cannot append to {tmp_path / 'log'}: Is a directory\n"
    assert done.stdout == ""  # pip never ran
