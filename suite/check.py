"""`tvm-suite check CANDIDATE`: the release readiness of a TVM commit in one command.

It measures the baseline and the candidate over the benchmark grid with `tvm-suite history`'s
machinery (each commit's TVM installed into asv's environment: a tagged release from its wheel,
any other commit built from source), gives the release gate's verdict on the candidate against the
baseline (latency suspects timed again, as `gate` does), writes the report, prints the verdict and
exits with it. What asv has measured already in ``--out`` is kept (asv's ``--skip-existing``), so
an interrupted check goes on where it stopped, and says which commits' results it kept. Before it
starts it verifies what ``--out`` holds already (a damaged file: one line naming it), says what it
will install for each commit and roughly how long that takes, and whether the baseline is newer
than the candidate. The report renders the verdict with the re-measurements it made.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from suite import git, run
from suite.core import runstore, timing
from suite.core.combo import Grid
from suite.errors import Interrupted, UserError
from suite.asv_plumbing import driver, releases, source_build
from suite.history import commits as history
from suite.reporting import gate, report, results
from suite.reporting import thresholds as limits

#: Rough costs on 2 cores, for the plan said before any work (measured: a wheel of about 100 MB
#: installs in 1-2 minutes; a cold source build with LLVM took 44-87 minutes, one whose objects
#: ccache holds about 3; the quick grid of ResNet-50 and the seed on llvm benchmarks in 3-5 minutes
#: on a new TVM build).
WHEEL_S, SOURCE_COLD_S, SOURCE_CACHED_S, BENCHMARK_S = 120, 90 * 60, 4 * 60, 5 * 60
#: Objects a CPU + LLVM build of TVM compiles (613 at 0.26-0.27): ccache holding fewer cannot
#: make the build a cached one.
BUILD_OBJECTS = 500


@dataclass(frozen=True)
class Side:
    """One of the two commits a check measures."""

    role: str  #: "baseline" or "candidate"
    commit: str
    label: str  #: the name given, or the release
    release: releases.Release | None

    @property
    def named(self) -> str:
        """The commit in a message: its label and short hash (the short hash alone for a hash)."""
        return self.commit[:10] if self.commit.startswith(self.label) else f"{self.label} ({self.commit[:10]})"

    @property
    def history_commit(self) -> history.HistoryCommit:
        return history.HistoryCommit(self.label, self.commit, self.release.version if self.release else None)


def default_baseline(repo: Path, candidate: str) -> str:
    """The newest apache-tvm release the suite knows whose tagged commit is older than the candidate
    (and is not it)."""
    when = int(git.git(repo, "log", "-1", "--format=%ct", candidate))
    older = []
    for rel in releases.RELEASES.values():
        commit = releases.tag_commit(repo, rel.tag)
        if commit and commit != candidate and int(git.git(repo, "log", "-1", "--format=%ct", commit)) < when:
            older.append((int(git.git(repo, "log", "-1", "--format=%ct", commit)), commit))
    if not older:
        raise UserError(f"no apache-tvm release older than {candidate[:12]} in {repo}: name one with --baseline")
    return max(older)[1]


def plan(sides: list[Side], out_dir: Path, grid: Grid) -> tuple[list[str], float]:
    """What the check will install and measure for each side, in words, and roughly how long (s)."""
    rows, total = [], 0.0
    for side in sides:
        kept = driver.result_counts(out_dir / "results", side.commit)
        if kept:
            rows.append([side.role, f"{side.label} ({side.commit[:10]}):", f"measured already in {out_dir} (kept)"])
            continue
        if side.release is not None:
            how, seconds = (f"the wheel apache-tvm {side.release.version} with apache-tvm-ffi {side.release.ffi}",
                            WHEEL_S)
        else:
            objects = source_build.ccache_objects()
            cached = objects >= BUILD_OBJECTS
            seconds = SOURCE_CACHED_S if cached else SOURCE_COLD_S
            how = ("a source build (TVM's CMake with LLVM; "
                   + (f"ccache holds {objects:,} objects of earlier builds" if cached
                      else "ccache holds no earlier build: a cold one") + ")")
        seconds += BENCHMARK_S * max(1, len(grid.combos()) // 132)
        total += seconds
        rows.append([side.role, f"{side.label} ({side.commit[:10]}):",
                     f"{how}, then {len(grid.combos())} combinations; about {_minutes(seconds)}"])
    return [line.rstrip() for line in tabulate(rows, tablefmt="plain", disable_numparse=True).splitlines()], total


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds < 5400 else f"{seconds / 3600:.1f} hours"


def check_name(name: str | None, what: str) -> str | None:
    """``name`` (a tag or commit the user gave), refused when empty: an empty name never means
    "the default"."""
    if name is not None and not name.strip():
        raise UserError(f"{what} {name!r} names no commit: give a tag or commit of --tvm-repo")
    return name


def _date(repo: Path, commit: str) -> tuple[int, str]:
    stamp, _, day = git.git(repo, "log", "-1", "--format=%ct %cs", commit).partition(" ")
    return int(stamp), day


def newer_baseline(repo: Path, baseline: Side, candidate: Side) -> str:
    """A line saying that the baseline is newer than the candidate (a descendant of it, else
    committed later), naming both commits and their dates; "" when it is not."""
    base = git.git(repo, "merge-base", baseline.commit, candidate.commit, check=False)
    (when_b, day_b), (when_c, day_c) = _date(repo, baseline.commit), _date(repo, candidate.commit)
    if base == baseline.commit or (base != candidate.commit and when_b <= when_c):
        return ""
    return (f"the baseline {baseline.named} of {day_b} is newer than the candidate {candidate.named} of {day_c}: "
            "the check compares backwards in TVM's history")


def verify_kept(out_dir: Path, repo: Path) -> None:
    """What ``out_dir`` holds from earlier checks, verified before any work: asv's results files,
    and every results file and side-data file against its seal, as the verdict reads them; a
    damaged one is a one-line error naming it (exit 2), never hours of measuring first."""
    results_dir = out_dir / "results"
    if not results_dir.is_dir():
        return
    driver.check_results(results_dir)
    if any(p.name not in ("machine.json", "benchmarks.json") for p in results_dir.glob("*/*.json")):
        results.load(results_dir, repo)


def _results_files(results_dir: Path, commit: str) -> dict[Path, int]:
    """asv's results files of ``commit`` (any machine) and their modification times."""
    return {p: p.stat().st_mtime_ns for p in Path(results_dir).glob(f"*/{commit[:8]}-*.json") if p.is_file()}


def _stopped_measuring(out_dir: Path, sides: list[Side], before: dict) -> str:
    """What an interrupted measure phase kept, in words, and what the same check does again. A
    commit whose results asv completed in this check is sealed here (its side data is complete:
    asv writes a commit's results after its last benchmark), as `history` seals it when asv ends."""
    kept, again = [], []
    for side in sides:
        now = _results_files(out_dir / "results", side.commit)
        if not now:
            again.append(side)
            continue
        kept.append(side)
        for path, stamp in now.items():
            if before[side.commit].get(path) != stamp:
                try:
                    runstore.seal(runstore.Place(out_dir, path.parent.name, side.commit))
                except (OSError, UserError):
                    pass  # left unsealed, the next check refuses its side data, naming it
    if not kept:
        return (f"the check stopped while measuring: no commit's results were complete, none kept in {out_dir}; "
                "the same check again measures both (what the cache holds is not built again)")
    said = " and ".join(f"the {s.role} {s.named}" for s in kept)
    resume = (f"measures only {' and '.join(f'the {s.role} {s.named}' for s in again)}" if again else
              "measures nothing: it gives the verdict and writes the report")
    return (f"the check stopped while measuring: the results of {said} are kept in {out_dir}; the same check again "
            f"{resume}")


def run_check(tvm_repo: Path, candidate_name: str, baseline_name: str | None, grid: Grid, out_dir: Path,
              env_dir: Path | None = None, git_mirrors=None, machine: str | None = None,
              thresholds_path: Path | None = None) -> driver.RunSummary:
    check_name(candidate_name, "the candidate")
    check_name(baseline_name, "--baseline")
    thresholds = limits.load(thresholds_path)  # refused before any work
    repo = releases.check_repo(tvm_repo)
    candidate = releases.commit_of(repo, candidate_name)
    baseline = releases.commit_of(repo, baseline_name) if baseline_name else default_baseline(repo, candidate)
    if baseline == candidate:
        raise UserError(f"the baseline {baseline_name} is the candidate {candidate_name}")
    sides = []
    for role, commit, name in (("baseline", baseline, baseline_name), ("candidate", candidate, candidate_name)):
        rel = releases.release_for_commit(repo, commit)
        sides.append(Side(role, commit, name or (rel.tag if rel else commit[:10]), rel))
    newer = newer_baseline(repo, sides[0], sides[1])
    verify_kept(out_dir, repo)
    lines, seconds = plan(sides, out_dir, grid)
    print("\n".join(["release readiness check of " + sides[1].label + " against " + sides[0].label, *lines,
                     f"in all about {_minutes(seconds)} (on 2 cores); what is measured stays in {out_dir}, so an "
                     "interrupted check goes on where it stopped", *([f"note: {newer}"] if newer else [])]),
          flush=True)
    before = {side.commit: _results_files(out_dir / "results", side.commit) for side in sides}
    try:
        measured = history.run_history(repo, [s.history_commit for s in sides], grid, quick=True, out_dir=out_dir,
                                       env_dir=env_dir, git_mirrors=git_mirrors, machine=machine)
    except KeyboardInterrupt as err:
        raise Interrupted.by(err, _stopped_measuring(out_dir, sides, before)) from None
    result, phase = None, "giving the verdict (latency suspects timed again)"
    try:
        loaded = results.load(out_dir / "results", repo)
        found = {c.hash for c in loaded.commits}
        for side in sides:
            if side.commit not in found:
                print(measured.text, flush=True)
                raise UserError(f"the {side.role} {side.label} has no results in {out_dir} (its install failed? see "
                                f"{out_dir / 'asv.log'}): no verdict")
        result = gate.evaluate(loaded, loaded.commits[loaded.index(candidate)],
                               loaded.commits[loaded.index(baseline)], thresholds, remeasure=timing.remeasure,
                               baseline_note=newer)
        phase = "writing its report"
        run.keep_remeasured(loaded, result)  # kept first: the report renders what the gate found
        report.make_report(gate.with_remeasured(loaded, result), result, out_dir / "report")
    except KeyboardInterrupt as err:
        verdict = f" (its verdict was {result.verdict.words})" if result else ""
        raise Interrupted.by(err, f"the check stopped while {phase}: the results of both commits are kept in "
                                  f"{out_dir}{verdict}; the same check again measures nothing: it gives the verdict "
                                  "and writes the report") from None
    text = "\n".join([measured.text, "", f"report: {out_dir / 'report' / 'index.html'}", "",
                      gate.format_table(result, loaded)])
    return driver.RunSummary(text, result.verdict.exit_code, {**result.as_dict(), "report": str(out_dir / "report"),
                                                              "plan": lines})

