"""`tvm-suite check CANDIDATE`: the release readiness of a TVM commit in one command.

It measures the baseline and the candidate over the benchmark grid with `tvm-suite history`'s
machinery (each commit's TVM installed into asv's environment: a tagged release from its wheel,
any other commit built from source), gives the release gate's verdict on the candidate against the
baseline (latency suspects timed again, as `gate` does), writes the report, prints the verdict and
exits with it. What asv has measured already in ``--out`` is kept (asv's ``--skip-existing``), so
an interrupted check goes on where it stopped. Before it starts it says what it will install for
each commit and roughly how long that takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from suite import git, run
from suite.core import timing
from suite.core.combo import Grid
from suite.errors import UserError
from suite.history import commits as history, driver, releases, source_build
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
    lines, total = [], 0.0
    for side in sides:
        kept = driver.result_counts(out_dir / "results", side.commit)
        if kept:
            lines.append(f"{side.role:9s} {side.label} ({side.commit[:10]}): measured already in {out_dir} (kept)")
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
        lines.append(f"{side.role:9s} {side.label} ({side.commit[:10]}): {how}, then {len(grid.combos())} "
                     f"combinations; about {_minutes(seconds)}")
    return lines, total


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds < 5400 else f"{seconds / 3600:.1f} hours"


def run_check(tvm_repo: Path, candidate_name: str, baseline_name: str | None, grid: Grid, out_dir: Path,
              env_dir: Path | None = None, git_mirrors=None, machine: str | None = None,
              thresholds_path: Path | None = None) -> driver.RunSummary:
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
    lines, seconds = plan(sides, out_dir, grid)
    print("\n".join(["release readiness check of " + sides[1].label + " against " + sides[0].label, *lines,
                     f"in all about {_minutes(seconds)} (on 2 cores); what is measured stays in {out_dir}, so an "
                     "interrupted check goes on where it stopped"]), flush=True)
    measured = history.run_history(repo, [s.history_commit for s in sides], grid, quick=True, out_dir=out_dir,
                                   env_dir=env_dir, git_mirrors=git_mirrors, machine=machine)
    loaded = results.load(out_dir / "results", repo)
    found = {c.hash for c in loaded.commits}
    for side in sides:
        if side.commit not in found:
            raise UserError(f"the {side.role} {side.label} has no results in {out_dir} (its install failed? see "
                            f"{out_dir / 'asv.log'}): no verdict\n{measured.text}")
    result = gate.evaluate(loaded, loaded.commits[loaded.index(candidate)], loaded.commits[loaded.index(baseline)],
                           thresholds, remeasure=timing.remeasure)
    run.keep_remeasured(loaded, result)
    report.make_report(loaded, result, out_dir / "report")
    text = "\n".join([measured.text, "", f"report: {out_dir / 'report' / 'index.html'}", "",
                      gate.format_table(result, loaded)])
    return driver.RunSummary(text, result.verdict.exit_code, {**result.as_dict(), "report": str(out_dir / "report"),
                                                              "plan": lines})

