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

With ``--baseline-from DIR`` the baseline is a commit of a kept history (the ``--out`` of
`tvm-suite history` or `run`): its data is read as the gate reads any (``results.load``: verified
against its seals), and it is never built or measured again; only the candidate is. Its
deterministic metrics are judged against the baseline from whichever machine measured it; its
latency only where both were measured on this machine (the same asv machine name and the same
hardware): results of two machines never share a latency series.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from suite import cache, tracked
from suite.core import run_bundle, run_place, timing
from suite.core.combo import Grid
from suite.errors import Interrupted, UserError
from suite.asv_plumbing import driver, releases, source_build
from suite.history import commits as history
from suite.jobs import run as main_job
from suite.reporting import code_identity, gate, gate_checks, gate_result, report, results
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


def plan(sides: list[Side], out_dir: Path, grid: Grid, kept: KeptBaseline | None = None) -> tuple[list[str], float]:
    """What the check will install and measure for each side, in words, and roughly how long (s);
    a baseline ``kept`` in a history is neither."""
    rows, total = [], 0.0
    for side in sides:
        if kept is not None and side.role == "baseline":
            rows.append([side.role, f"{side.label} ({side.commit[:10]}):",
                         f"kept in {kept.where} (machine {kept.machine}): neither built nor measured again"])
            continue
        kept_here = driver.result_counts(out_dir / "results", side.commit)
        if kept_here:
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


def newer_baseline(tvm: releases.Releases, baseline: Side, candidate: Side) -> str:
    """A line saying that the baseline is newer than the candidate (a descendant of it, else
    committed later), naming both commits and their dates; "" when it is not."""
    if not tvm.newer(baseline.commit, candidate.commit):
        return ""
    return (f"the baseline {baseline.named} of {tvm.day(baseline.commit)} is newer than the candidate "
            f"{candidate.named} of {tvm.day(candidate.commit)}: the check compares backwards in TVM's history")


#: The machine facts (of asv's machine.json) a latency depends on. asv's ``os`` (the kernel's
#: release) and ``ram`` (MemTotal, which moves with the kernel) change on one machine.
LATENCY_FACTS = ("arch", "cpu", "num_cpu")


@dataclass(frozen=True)
class KeptBaseline:
    """The baseline of ``--baseline-from DIR``: a commit of a kept history, verified as the gate
    reads any (``results.load``), and the machine whose data of it the check reads; it is never
    built or measured again."""

    where: Path  #: DIR, links resolved once
    history: results.History  #: DIR's verified history
    commit: str
    machine: str

    @classmethod
    def load(cls, kept_dir: Path, out_dir: Path, tvm: releases.Releases, candidate: str, named: str | None,
             machine: str) -> KeptBaseline:
        """The baseline ``named`` (a commit), else the newest commit of the kept history ``kept_dir``
        other than ``candidate`` that has sealed side data; its data of ``machine`` (this one)
        where it has some, else of another machine. One line (UserError) where there is none."""
        where = Path(kept_dir).expanduser().resolve()
        if not where.is_dir():
            missing = "not a directory" if where.exists() else "no such directory"
            raise UserError(f"--baseline-from {kept_dir}: {missing}")
        if not (where / "results").is_dir():
            raise UserError(f"--baseline-from {kept_dir} is not a kept history: it has no results/ (give the --out "
                            "of a `tvm-suite history` or `run`)")
        out = Path(out_dir).expanduser().resolve()
        if out == where or where in out.parents:
            raise UserError(f"--out {out_dir} is inside the kept history --baseline-from {kept_dir} ({where}): the "
                            "check measures the candidate into --out, and a kept history is only read: give another "
                            "--out")
        history = results.load(where / "results", tvm.repo)
        what = f"the baseline {named[:10]}" if named else f"any commit other than the candidate {candidate[:10]}"
        choices = [named] if named else [c.hash for c in reversed(history.commits) if c.hash != candidate]
        if not choices or not set(choices) <= {c.hash for c in history.commits}:
            raise UserError(f"the kept history {kept_dir} has no results of {what}: it holds "
                            f"{', '.join(c.label for c in history.commits)}")
        for commit in choices:
            sealed = sorted(m for (c, m), side in history.side.items() if c == commit and side.kept)
            if sealed:
                return cls(where, history, named or _in_clone(tvm, commit, kept_dir),
                           machine if machine in sealed else sealed[0])
        raise UserError(f"the kept history {kept_dir} has results but no sealed side data of {what} (runs/ beside "
                        f"results/ in {where}): {gate_checks.HOW_TO_KEEP}")

    def other_machine(self, out_results: Path, machine: str) -> str:
        """Why the baseline's latency is not compared with the candidate's, measured on ``machine``
        (its results in ``out_results``); "" where both were measured on this machine: the same
        asv machine name and the same LATENCY_FACTS (both machine files verified by results.load),
        or where the baseline has no latency to set apart (an emulator's: the gate's latency check
        says why there is none)."""
        if not self.timed:
            return ""
        if self.machine != machine:
            return f"the baseline's latency was measured on machine {self.machine}; this is machine {machine}"
        kept, here = (cache.read_json(Path(d) / m / "machine.json") or {}
                      for d, m in ((self.history.results_dir, self.machine), (out_results, machine)))
        differ = [fact for fact in LATENCY_FACTS if kept.get(fact) != here.get(fact)]
        if not differ:
            return ""
        was, now = (", ".join(f"{fact} {found.get(fact)}" for fact in differ) for found in (kept, here))
        return (f"the baseline's latency was measured on machine {self.machine} ({was}); this is machine {machine} "
                f"({now})")

    @property
    def timed(self) -> bool:
        """Whether the kept baseline has a latency (it was measured on a native target)."""
        return any(results.finite(per_commit.get(self.commit))
                   for series, per_commit in self.history.values.get("latency", {}).items()
                   if series.machine == self.machine)

    def beside(self, measured: results.History, candidate: str, machine: str, backwards: bool,
               latency_apart: str, grid: Grid) -> results.History:
        """One history of two commits: the candidate as ``measured`` here on ``machine``, and this
        baseline filed under that machine, with its timed metrics (latency, its samples) only where
        ``latency_apart`` is "" (both measured on this machine), and only the combinations of the
        ``grid`` the check measures (a dtype not asked for is no data missing at the candidate); in
        TVM's order (``backwards``: the baseline comes after the candidate)."""
        sides = ((measured, candidate, machine, False), (self.history, self.commit, self.machine, bool(latency_apart)))
        values: dict = {}
        for side, commit, source, deterministic_only in sides:
            for metric, per_series in side.values.items():
                if deterministic_only and metric not in code_identity.DETERMINISTIC:
                    continue
                for series, per_commit in per_series.items():
                    if series.machine == source and commit in per_commit and _asked(grid, metric, series):
                        filed = dataclasses.replace(series, machine=machine)
                        values.setdefault(metric, {}).setdefault(filed, {})[commit] = per_commit[commit]
        baseline_side = self.history.kept(self.commit, self.machine)
        if latency_apart:
            baseline_side = dataclasses.replace(baseline_side, timings={}, peers={})
        pair = [self.history.commits[self.history.index(self.commit)], measured.commits[measured.index(candidate)]]
        files = tuple(p for side, commit, source, _ in sides for p in side.files
                      if p.parent.name == source and p.name.startswith(commit[:8]))
        return results.History(
            measured.results_dir, tuple(pair[::-1] if backwards else pair), values, (machine,), files,
            f"{measured.ordering}; the baseline kept in {self.where} (machine {self.machine})", measured.commit_url,
            measured.repo, {(candidate, machine): measured.kept(candidate, machine),
                            (self.commit, machine): baseline_side},
            measured.remeasured, measured.recovered + self.history.recovered)


def _asked(grid: Grid, metric: str, series: results.Series) -> bool:
    """Whether the check measures ``series``: its dtype, target and order in the grid, and its
    workload too (a whole model's series is named by its model, which the grid's axes select)."""
    whole_model = tracked.get(metric).module == "bench_model"
    return (series.dtype in grid.dtypes and series.target in grid.targets and series.order in grid.orders
            and (whole_model or series.workload in grid.workloads))


def _in_clone(tvm: releases.Releases, commit: str, kept_dir: Path) -> str:
    """``commit`` of a kept history, resolved in the clone (which orders it against the candidate)."""
    try:
        return tvm.commit(commit)
    except UserError:
        raise UserError(f"the baseline {commit[:10]} of the kept history {kept_dir} is not in --tvm-repo {tvm.repo}: "
                        "fetch it there (the check orders the two commits by TVM's history)") from None


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
    """What an interrupted measure phase kept of the ``sides`` it measures, in words, and what the
    same check does again. A commit whose results asv completed in this check is sealed here (its
    side data is complete: asv writes a commit's results after its last benchmark), as `history`
    seals it when asv ends."""
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
                    run_bundle.seal(run_place.Place(out_dir, path.parent.name, side.commit))
                except (OSError, UserError):
                    pass  # left unsealed, the next check refuses its side data, naming it
    if not kept:
        what = "both" if len(sides) > 1 else f"the {sides[0].role} {sides[0].named}"
        return (f"the check stopped while measuring: no commit's results were complete, none kept in {out_dir}; "
                f"the same check again measures {what} (what the cache holds is not built again)")
    said = " and ".join(f"the {s.role} {s.named}" for s in kept)
    resume = (f"measures only {' and '.join(f'the {s.role} {s.named}' for s in again)}" if again else
              "measures nothing: it gives the verdict and writes the report")
    return (f"the check stopped while measuring: the results of {said} are kept in {out_dir}; the same check again "
            f"{resume}")


def run(tvm_repo: Path, candidate_name: str, baseline_name: str | None, grid: Grid, out_dir: Path,
        env_dir: Path | None = None, git_mirrors=None, machine: str | None = None,
        thresholds_path: Path | None = None, baseline_from: Path | None = None) -> driver.RunSummary:
    check_name(candidate_name, "the candidate")
    check_name(baseline_name, "--baseline")
    thresholds = limits.load(thresholds_path)  # refused before any work
    tvm = releases.Releases.of(tvm_repo)
    candidate = tvm.commit(candidate_name)
    named = tvm.commit(baseline_name) if baseline_name else None
    if named == candidate:
        raise UserError(f"the baseline {baseline_name} is the candidate {candidate_name}")
    machine = driver.machine_name(machine)  # the candidate's, as `history` files it
    kept = KeptBaseline.load(baseline_from, out_dir, tvm, candidate, named, machine) if baseline_from else None
    baseline = kept.commit if kept else named or tvm.newest_release_before(candidate)
    sides = []
    for role, commit, name in (("baseline", baseline, baseline_name), ("candidate", candidate, candidate_name)):
        rel = tvm.release(commit)
        sides.append(Side(role, commit, name or (rel.tag if rel else commit[:10]), rel))
    measuring = sides[1:] if kept else sides
    newer = newer_baseline(tvm, sides[0], sides[1])
    verify_kept(out_dir, tvm.repo)
    lines, seconds = plan(sides, out_dir, grid, kept)
    print("\n".join(["release readiness check of " + sides[1].label + " against " + sides[0].label, *lines,
                     f"in all about {_minutes(seconds)} (on 2 cores); what is measured stays in {out_dir}, so an "
                     "interrupted check goes on where it stopped", *([f"note: {newer}"] if newer else [])]),
          flush=True)
    before = {side.commit: _results_files(out_dir / "results", side.commit) for side in measuring}
    try:
        measured = history.run_history(tvm.repo, [s.history_commit for s in measuring], grid, quick=True,
                                       out_dir=out_dir, env_dir=env_dir, git_mirrors=git_mirrors, machine=machine)
    except KeyboardInterrupt as err:
        raise Interrupted.by(err, _stopped_measuring(out_dir, measuring, before)) from None
    result, phase, latency_apart = None, "giving the verdict (latency suspects timed again)", ""
    try:
        loaded = results.load(out_dir / "results", tvm.repo)
        for side in measuring:
            if (side.commit, machine) not in loaded.side:
                print(measured.text, flush=True)
                raise UserError(f"the {side.role} {side.label} has no results in {out_dir} (its install failed? see "
                                f"{out_dir / 'asv.log'}): no verdict")
        if kept:
            latency_apart = kept.other_machine(loaded.results_dir, machine)
            loaded = kept.beside(loaded, candidate, machine, bool(newer), latency_apart, grid)
        result = gate.evaluate(loaded, loaded.commits[loaded.index(candidate)],
                               loaded.commits[loaded.index(baseline)], thresholds, remeasure=timing.remeasure,
                               baseline_note=newer, latency_apart=latency_apart)
        if latency_apart:
            print(f"tvm-suite: note: latency not judged: {latency_apart}", file=sys.stderr, flush=True)
        phase = "writing its report"
        main_job.keep_remeasured(loaded, result)  # kept first: the report renders what the gate found
        report.make_report(gate.with_remeasured(loaded, result), result, out_dir / "report")
    except KeyboardInterrupt as err:
        verdict = f" (its verdict was {result.verdict.words})" if result else ""
        where = f"the candidate's results are kept in {out_dir}, the baseline's in {kept.where}" if kept else \
            f"the results of both commits are kept in {out_dir}"
        raise Interrupted.by(err, f"the check stopped while {phase}: {where}{verdict}; the same check again measures "
                                  "nothing: it gives the verdict and writes the report") from None
    text = "\n".join([measured.text, "", f"report: {out_dir / 'report' / 'index.html'}", "",
                      gate_result.format_table(result, loaded)])
    facts = {**result.as_dict(), "report": str(out_dir / "report"), "plan": lines}
    if kept:
        facts["baseline_from"] = {"history": str(kept.where), "commit": kept.commit, "machine": kept.machine,
                                  "latency_judged": kept.timed and not latency_apart,
                                  "latency_not_judged": latency_apart or None}
    return driver.RunSummary(text, result.verdict.exit_code, facts)
