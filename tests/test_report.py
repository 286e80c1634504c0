"""`tvm-suite report`: HTML + report.json from real asv results; bad input; headless Chromium."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from asv_runs import VACUOUS, WORKLOAD, member, place, plant, plant_file, two_commit_results
from suite.core import run_bundle

pytestmark = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return two_commit_results(tmp_path_factory)


def llvm_marks_thresholds(path):
    """Make the bias-shift rule fire on any shift at all (llvm's tuned vs default here)."""
    path.write_text("[divergence]\nmax_bias_shift = 0.0\nmin_z = 0.0\n")
    return path


def test_report_from_real_runs(cli, runs, tmp_path):
    results, repo, commits = runs
    out = tmp_path / "report"
    result = cli("report", "--results", str(results), "--out", str(out), "--tvm-repo", str(repo))
    assert result.returncode == 0, result.stderr
    facts = json.loads((out / "report.json").read_text())
    # Ordered by the repository's history, the tag names the newer commit.
    assert [c["hash"] for c in facts["commits"]] == commits
    assert facts["newest"]["label"] == "v9.9.0"
    assert facts["newest"]["url"] == f"https://github.com/apache/tvm/commit/{commits[1]}"
    rows = {(r["workload"], r["dtype"], r["target"], r["order"]): r for r in facts["summary"]}
    default, tuned = rows[(WORKLOAD, "float16", "llvm", "default")], rows[(WORKLOAD, "float16", "llvm", "tuned")]
    for row in (default, tuned):
        values = row["values"]
        assert values["latency"] > 0 and values["gflops"] > 0 and values["ulp_mean"] > 0
        assert 0 < values["bound_fraction"] < 1 and 0 < values["prob_bound_fraction"] < 1
        assert values["accumulation_length"] == 147 and row["no_rigorous_bound"] is None
        assert row["previous"]["latency"]["commit"] == commits[0]
        assert "latency_pct" in row["change"]
    assert tuned["values"]["max_ulp_distance"] > 0 and default["values"]["max_ulp_distance"] is None
    # Whose tuning record the tuned order replayed (llvm's own here).
    assert tuned["records"] == "llvm" and default["records"] is None
    # An IEEE reordering: bits differ, the error against float64 stays alike.
    assert 0.9 < tuned["values"]["error_ratio"] < 1.1 and abs(tuned["values"]["bias_shift"]) < 0.1
    # K = 2305 in float16: no rigorous bound (NaN, never 0), the probabilistic one is finite.
    vacuous = rows[(VACUOUS, "float16", "llvm", "default")]
    assert vacuous["values"]["bound_fraction"] is None and 0 < vacuous["values"]["prob_bound_fraction"] < 1
    assert vacuous["no_rigorous_bound"] == "no rigorous bound for K = 2305 in float16"
    # Default thresholds: llvm's tuned order is a reordering, within the bounds: no marks.
    assert facts["divergence"]["marks"] == [] and facts["divergence"]["first_divergent"] is None
    assert facts["divergence"]["last_good"]["hash"] == commits[1]
    assert isinstance(facts["regressions"], list)
    html = (out / "index.html").read_text()
    assert "No divergent commit" in html and "no rigorous bound for K = 2305 in float16" in html
    assert "(llvm record)" in html
    assert html.count('<svg class="chart"') >= 4 and 'class="line"' in html
    assert not re.search(r'(src|href)="(https?:)?//', html.replace('href="https://github.com/apache/tvm/commit/', ""))


def test_a_mark_that_appeared_says_how_to_find_its_commit(cli, runs, tmp_path):
    """A mark that appeared at a commit (its combination measured unmarked at the commit before)
    carries the bisect command between the two, in the history of marks and among the marks the
    gate judged (new); one marked since the first commit carries none."""
    from suite.core import run_place

    results, repo, commits = runs
    run_dir = tmp_path / "asv"
    shutil.copytree(results.parent, run_dir, ignore=shutil.ignore_patterns("env*", "html", "report", ".gate"))
    ids = (WORKLOAD, "float16", "llvm", "tuned")
    relative = run_place.values_relative("bench_divergence.DivergenceFromDefault", ids)
    reported = json.loads(member(place(run_dir, commits[0]), relative))
    plant_file(run_dir, commits[0], relative, json.dumps({**reported, "bias_shift": 0.0}))
    plant_file(run_dir, commits[0], run_place.relative("code", ids), "f" * 64)  # another value: other code
    out = tmp_path / "report"
    result = cli("report", "--results", str(run_dir / "results"), "--out", str(out), "--tvm-repo", str(repo),
                 "--thresholds", str(llvm_marks_thresholds(tmp_path / "t.toml")))
    assert result.returncode == 1, result.stderr
    d = json.loads((out / "report.json").read_text())["divergence"]
    command = (f"tvm-suite bisect --tvm-repo {repo} --range {commits[0][:12]}..{commits[1][:12]} --workload "
               f"{WORKLOAD} --dtype float16 --target llvm --order tuned --metric bias_shift")
    seed = [m for m in d["marks"] if m["workload"] == WORKLOAD and m["metric"] == "bias_shift"]
    assert [(m["commit"], m.get("bisect")) for m in seed] == [(commits[1], command)]
    new = [m for m in d["judged"]["groups"]["new"] if m["workload"] == WORKLOAD]
    assert [(m["metric"], m["bisect"]) for m in new] == [("bias_shift", command)]
    assert not [m for m in d["marks"] if m["workload"] == VACUOUS and "bisect" in m]
    page = command.replace(str(repo), repo.name)  # the page, made to be published, names no path of this machine
    assert f"find the commit: <code>{page}</code>" in (out / "index.html").read_text()


def test_marks_name_first_divergent_commit(cli, runs, tmp_path):
    results, repo, commits = runs
    out = tmp_path / "report"
    thresholds = llvm_marks_thresholds(tmp_path / "t.toml")
    result = cli("report", "--results", str(results), "--out", str(out), "--tvm-repo", str(repo),
                 "--thresholds", str(thresholds))
    assert result.returncode == 1, result.stderr  # the marks fail the gate: report exits with its verdict
    facts = json.loads((out / "report.json").read_text())
    d = facts["divergence"]
    assert d["first_divergent"]["hash"] == commits[0] and d["last_good"] is None
    assert {m["commit"] for m in d["marks"]} == set(commits)
    mark = next(m for m in d["marks"] if m["workload"] == WORKLOAD)
    assert (mark["workload"], mark["dtype"], mark["target"], mark["order"]) == (WORKLOAD, "float16", "llvm", "tuned")
    assert mark["metric"] == "bias_shift" and mark["threshold"] == 0 and mark["rule"].startswith("error drifted")
    html = (out / "index.html").read_text()
    assert "First divergent commit" in html and f"https://github.com/apache/tvm/commit/{commits[0]}" in html
    assert 'class="mark"' in html
    # Where it diverges: the H x W heat map and the per-channel bars, exported beside the results.
    assert f"maps/{WORKLOAD}.float16.llvm.tuned.npz" in run_bundle.sealed_members(place(results.parent, commits[1]))
    # Marked since the first commit: nothing to bisect, at either commit.
    assert not [m for m in d["marks"] if "bisect" in m] and "--metric bias_shift" not in html
    assert "marked at every commit that measured it: nothing to bisect" in html
    # The marks at the newest commit, judged against the one before as the gate judges them: the
    # llvm mark is inherited (known) and has no IEEE twin to say why (unattributed), so it fails.
    known = d["judged"]["groups"]["known"]
    assert [(m["since"]["hash"], m["cause"], m["fails"]) for m in known if m["workload"] == WORKLOAD] == [
        (commits[0], "unattributed", True)]
    assert html.count('<img class="hw" src="data:image/png;base64,') == len(known)
    assert html.count('<svg class="bars"') == len(known)
    assert 'id="marks-known-table"' in html and "unattributed: llvm has no IEEE twin" in html
    assert "first divergent commit: " in result.stdout


def test_report_replaces_its_previous_output_atomically(cli, runs, tmp_path):
    results, repo, _ = runs
    out = tmp_path / "report"
    assert cli("report", "--results", str(results), "--out", str(out)).returncode == 0
    (out / "index.html").write_text("old")
    (out / "notes.txt").write_text("a user's own file")
    assert cli("report", "--results", str(results), "--out", str(out)).returncode == 0
    assert (out / "index.html").read_text() != "old"
    assert (out / "notes.txt").read_text() == "a user's own file"  # nothing else in --out is touched
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "notes.txt", "report.json"]  # no temporaries


def _copy(results, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    return copy


def _one_line_error(result, *words):
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert str(word) in lines[0], lines[0]


@pytest.mark.parametrize("damage", ["truncated", "empty", "not-asv", "machine"])
def test_corrupt_results_name_the_file_and_keep_the_old_report(cli, runs, tmp_path, damage):
    results, _, _ = runs
    copy = _copy(results, tmp_path)
    victim = next(p for p in copy.glob("*/*.json") if p.name != "machine.json")
    if damage == "truncated":
        victim.write_text(victim.read_text()[:500])
    elif damage == "empty":
        victim.write_text("")
    elif damage == "not-asv":
        victim.write_text('{"version": 2, "results": {}}')
    else:
        victim = victim.parent / "machine.json"
        victim.write_text("{")
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.json").write_text("{}")
    (out / "index.html").write_text("previous")
    result = cli("report", "--results", str(copy), "--out", str(out))
    _one_line_error(result, victim)
    assert (out / "index.html").read_text() == "previous"


def test_missing_and_empty_results_directories(cli, tmp_path):
    result = cli("report", "--results", str(tmp_path / "nope"), "--out", str(tmp_path / "r"))
    _one_line_error(result, tmp_path / "nope")
    (tmp_path / "empty" / "vm").mkdir(parents=True)
    result = cli("report", "--results", str(tmp_path / "empty"), "--out", str(tmp_path / "r"))
    _one_line_error(result, "no commits")
    assert not (tmp_path / "r").exists()


def test_unknown_threshold_key_is_named(cli, runs, tmp_path):
    results, _, _ = runs
    bad = tmp_path / "bad.toml"
    bad.write_text("[divergence]\nmax_ulp_distnce = 3\n")
    result = cli("report", "--results", str(results), "--out", str(tmp_path / "r"), "--thresholds", str(bad))
    _one_line_error(result, "divergence.max_ulp_distnce", bad)
    assert not (tmp_path / "r").exists()


def test_never_replaces_what_is_not_its_own(cli, runs, tmp_path):
    """--out may hold other files: they stay. An index.html that is no report (no report.json
    beside it) is refused, and a file given as --out too."""
    results, _, _ = runs
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keep.txt").write_text("mine")
    result = cli("report", "--results", str(results), "--out", str(tmp_path / "docs"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "docs" / "keep.txt").read_text() == "mine" and (tmp_path / "docs" / "report.json").is_file()
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<p>my page</p>")
    _one_line_error(cli("report", "--results", str(results), "--out", str(tmp_path / "site")), tmp_path / "site")
    assert (tmp_path / "site" / "index.html").read_text() == "<p>my page</p>"
    (tmp_path / "afile").write_text("x")
    _one_line_error(cli("report", "--results", str(results), "--out", str(tmp_path / "afile")), "is a file")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)")
def test_report_renders_in_headless_chromium(cli, runs, tmp_path):
    results, repo, _ = runs
    out = tmp_path / "report"
    thresholds = llvm_marks_thresholds(tmp_path / "t.toml")  # marks drawn too
    assert cli("report", "--results", str(results), "--out", str(out), "--tvm-repo", str(repo),
               "--thresholds", str(thresholds)).returncode == 1  # NOT READY: the marks
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=3000", "--dump-dom", (out / "index.html").as_uri()],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    root = re.search(r"<html[^>]*>", dom).group(0)
    paths = int(re.search(r'data-chart-paths="(\d+)"', root).group(1))
    drawn = int(re.search(r'data-chart-paths-drawn="(\d+)"', root).group(1))
    assert paths >= 4 and drawn == paths, root
    assert 'data-errors="0"' in root, root
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    # each check's result stands beside its name, where a narrow window still shows it
    gate_table = re.search(r'<table id="gate-table">(.*?)</table>', dom, re.S).group(1)
    header = re.findall(r"<th[^>]*>([^<]*)</th>", gate_table)
    assert header == ["check", "result", "threshold", "at the candidate"]
    checks = re.findall(r'<tr class="[^"]*"><td class="l">([^<]+)</td>\s*<td class="l status-[^"]*">([^<]+)</td>',
                        gate_table)
    assert len(checks) >= 10 and {status for _, status in checks} <= {"PASS", "FAIL", "NOT CHECKED", "MISSING",
                                                                      "UNDECIDED"}


def test_a_step_where_the_tuning_records_changed_is_not_blamed_on_tvm(cli, runs, tmp_path):
    """The newer commit's tuned ULP mean doubles. Where both commits replayed llvm's record the gate
    fails it, and the report lists that line with a bisect command; where the newer one replayed
    another target's record, the suite's records changed, not TVM: the gate notes it, passes it,
    and the report shows that note, no regression and no bisect."""
    import itertools

    from suite.core import run_place

    results, repo, commits = runs
    run_dir = tmp_path / "asv"
    shutil.copytree(results.parent, run_dir)
    ids = (WORKLOAD, "float16", "llvm", "tuned")
    newer = next(p for p in (run_dir / "results").glob("*/*.json") if p.name.startswith(commits[1][:8]))
    entry = json.loads(newer.read_text())["results"]["bench_accuracy.Accuracy.track_ulp_mean"]
    combos = [tuple(json.loads(v.replace("'", '"')) for v in c) for c in itertools.product(*entry[1])]
    plant(run_dir, commits[1], "bench_accuracy.Accuracy.track_ulp_mean", ids, entry[0][combos.index(ids)] * 2)

    def regressions(status):
        out = tmp_path / "report"
        done = cli("report", "--results", str(run_dir / "results"), "--out", str(out), "--tvm-repo", str(repo))
        assert done.returncode == status, done.stdout + done.stderr
        found = json.loads((out / "report.json").read_text())["regressions"]
        return [r for r in found if r["metric"] == "ulp_mean" and (r["workload"], r["order"]) == (WORKLOAD, "tuned")]

    [step] = regressions(1)  # TVM's step: [change.ulp_mean] fails the gate, in its words
    assert step["check"] == f"ulp_mean vs {commits[0][:10]}" and step["words"].endswith("(2.00x)")
    assert step["records"] == ["llvm", "llvm"] and "--metric ulp_mean" in step["bisect"]
    plant_file(run_dir, commits[1], run_place.relative("records", ids), "hexagon-v68-qf")
    assert regressions(0) == []  # the suite's records: noted, never failed
    html = (tmp_path / "report" / "index.html").read_text()
    assert "hexagon-v68-qf&#39;s at v9.9.0: the suite&#39;s records changed, not TVM" in html


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)")
@pytest.mark.parametrize("width", [390, 1400])
def test_the_report_fits_the_window(cli, runs, tmp_path, width):
    """At a phone's width (390 px) and a desktop's (1400 px) the page is never wider than its window:
    every table scrolls in a box of its own. Chromium's windows are 500 px wide at least, so the report
    is shown in a frame of the width, served over HTTP (one origin: the page can read the frame's
    width). A screenshot of each is taken."""
    import functools
    import http.server
    import threading

    results, repo, _ = runs
    out = tmp_path / "report"
    assert cli("report", "--results", str(results), "--out", str(out), "--tvm-repo", str(repo)).returncode == 0
    (tmp_path / "frame.html").write_text(
        f'<!doctype html><html><body style="margin:0"><iframe id="f" src="report/index.html" '
        f'style="width:{width}px;height:2400px;border:0"></iframe><script>'
        'document.getElementById("f").addEventListener("load", function () {'
        ' var d = this.contentDocument.documentElement;'
        ' document.documentElement.setAttribute("data-frame-scroll-width", String(d.scrollWidth));'
        ' document.documentElement.setAttribute("data-frame-width", String(d.clientWidth)); });'
        "</script></body></html>")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/frame.html"
        common = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
                  f"--window-size={max(width, 500)},2400", "--virtual-time-budget=5000"]
        dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
        shot = tmp_path / f"report-{width}.png"
        subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, timeout=120, cwd=tmp_path)
    finally:
        server.shutdown()
    root = re.search(r"<html[^>]*>", dom).group(0)
    frame = int(re.search(r'data-frame-width="(\d+)"', root).group(1))
    scroll = int(re.search(r'data-frame-scroll-width="(\d+)"', root).group(1))
    assert frame <= width and scroll <= frame, root
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    html = (out / "index.html").read_text()
    assert str(results) not in html and str(repo) not in html  # no path of this machine in a page to publish
