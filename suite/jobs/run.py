"""`tvm-suite run`: the main job on the installed TVM: measure, asv run, publish, then the gate's
verdict on the commit it ran and the report of it.

asv records results per commit of its ``repo``. The installed TVM wheel does not carry its git
hash, so the commit comes from (in this order) ``--tvm-commit``, the tag ``v<version>`` of a TVM
clone given with ``--tvm-repo``, or a local *versions repository* (``<out>/tvm-versions``) that
holds one commit per TVM version the suite has run, tagged ``v<version>``: asv then has a real
hash to file the results under and to publish.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from suite import cache, git
from suite.asv_plumbing import dashboard, driver, releases
from suite.compat import release
from suite.core import (
    ahead,
    entries,
    measurement,
    peers,
    retimings,
    run_journal,
    run_place,
    timing,
    tuning_records,
)
from suite.core.combo import Combo, Grid
from suite.core.record import Kind, Record, Status
from suite.errors import Interrupted, Skipped, UserError, raise_if_signalled
from suite.model import grid as model_grid
from suite.progress import Progress, announce
from suite.reporting import gate, gate_result, report, results
from suite.reporting import thresholds as limits


def versions_repo_commit(repo: Path, version: str) -> str:
    """The commit standing for TVM ``version`` in the local versions repository (made if new).

    The repository is the same everywhere: one empty commit per apache-tvm release the suite knows
    (suite.asv_plumbing.releases), oldest first on ``main``, each dated when the release was published
    and tagged ``v<version>``, so a release's commit hash is the same in every output directory and
    on every machine, and results of several can be merged. A version the suite does not know (a
    build of one's own) gets a commit after them, dated now."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git.git(repo, "init", "-q", "-b", "main")
        for known in releases.RELEASES.values():
            _commit_version(repo, known.version, known.published)
    tag = f"v{version}"
    if not git.git(repo, "tag", "--list", tag):
        _commit_version(repo, version, None)
    return git.git(repo, "rev-list", "-n", "1", tag)


def _commit_version(repo: Path, version: str, date: str | None) -> None:
    # Everything a commit's hash depends on is fixed here: author, committer, dates, no signature.
    fixed = {"GIT_AUTHOR_NAME": "tvm-suite", "GIT_AUTHOR_EMAIL": "tvm-suite@localhost",
             "GIT_COMMITTER_NAME": "tvm-suite", "GIT_COMMITTER_EMAIL": "tvm-suite@localhost",
             **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    git.git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", f"apache-tvm {version}",
            env=fixed)
    git.git(repo, "tag", f"v{version}")


def installed_commit(out_dir: Path, tvm_repo: Path | None, tvm_commit: str | None) -> tuple[Path, str]:
    """(asv repo, commit hash) under which the installed TVM's results are filed."""
    version = release.installed_version()
    if tvm_repo is not None:
        if not git.is_repo(tvm_repo):
            raise UserError(f"--tvm-repo {tvm_repo} is not a git repository")
        name = tvm_commit or f"v{version}"
        found = git.git(tvm_repo, "rev-parse", "--verify", "-q", f"{name}^{{commit}}", check=False)
        if not found:
            raise UserError(f"{tvm_repo} has no commit {name!r} for apache-tvm {version}; pass --tvm-commit")
        return tvm_repo, found
    if tvm_commit is not None:
        raise UserError("--tvm-commit needs --tvm-repo, the clone that holds that commit")
    repo = out_dir / "tvm-versions"
    return repo, versions_repo_commit(repo, version)


@dataclass(frozen=True)
class MeasurePhase:
    """What :func:`warm_cache` measured, and its seconds."""

    records: dict[Combo, Record]
    latency: dict[Combo, float]  #: the median of the timing samples of each native combination
    peer_ratios: dict[Combo, dict]  #: {"ratio", "eager_ratio"} to the PyTorch peer, where taken
    seconds: float
    timing_s: float
    measure_s: float  #: building, running and references; with a helper process, the wait for it
    helper_s: float | None  #: the helper process's busy seconds; None: no helper
    model_s: float = 0.0  #: the whole-model settings (suite.model.grid), from the cache where kept


def warm_cache(grid: Grid, place: run_place.Place, log=print, cluster: str | None = None) -> MeasurePhase:
    """Measure every combination once (one TVM import instead of hundreds), time every native one
    afresh into the run's timing store at ``place`` (asv's latency benchmarks read it), and the
    PyTorch peer of each on its target's peer device, where PyTorch is installed.

    On two cores or more a helper process measures the next combinations while this one times the
    current one (:mod:`suite.core.ahead`). With ``cluster`` (a Dask scheduler's address) every
    combination not yet cached is measured on the cluster's workers first (suite.core.cluster);
    this loop then finds them cached and only times: latency is always taken here, on the machine
    the results are filed under."""
    records, latency, ratios, started = {}, {}, {}, time.perf_counter()
    measure_s = timing_s = 0.0
    combos = grid.combos()
    for combo in combos:  # a measurement a cluster lost last time is measured again
        entries.forget_lost(combo)
    if cluster is not None:
        from suite.core import (
            cluster as dask_cluster,  # Dask is imported only with a cluster
        )

        dask_cluster.measure_many(combos, cluster, log=log)
    announce("measure")
    with contextlib.ExitStack() as stack:
        helper = (stack.enter_context(ahead.MeasureAhead(combos))
                  if cluster is None and ahead.worth_it(combos) else None)
        shown = stack.enter_context(Progress("measure", len(combos), costs=[c.cost for c in combos]))
        for combo in combos:
            t0 = time.perf_counter()
            if helper is not None and helper.taken_back is None:
                helper.wait(combo)
                if helper.taken_back is not None:  # said once: the rest is measured here
                    print(f"tvm-suite: {helper.taken_back}: ended; its work is measured here", file=sys.stderr,
                          flush=True)
                    log(f"  {helper.taken_back}: ended; its work is measured here")
            record = records[combo] = measurement.measure(combo)
            measure_s += time.perf_counter() - t0
            if record.ok and record.kind is Kind.LATENCY:
                t1 = time.perf_counter()
                taken = timing.take(combo)
                timing.save(place, combo, taken)
                latency[combo] = taken.median
                timing_s += time.perf_counter() - t1
                if peers.available():
                    try:
                        ratios[combo] = peers.latency_ratios(combo, taken.median)
                        peers.save_ratios(place, combo, ratios[combo])
                    except Skipped:
                        pass
            log(f"  {record.status.value:7s} {combo.label} ({time.perf_counter() - t0:.1f} s)")
            shown.step(combo.label)
    model_s = measure_models(grid, log)
    return MeasurePhase(records, latency, ratios, time.perf_counter() - started, timing_s, measure_s,
                        helper.busy_s if helper else None, model_s)


def measure_models(grid: Grid, log=print) -> float:
    """The whole-model benchmarks' settings (suite.model.grid: the models and inputs the
    environment names, this grid's dtypes, targets and orders), measured into the cache here, once
    per model, so that asv's benchmark processes only read them; their seconds."""
    started = time.perf_counter()
    models = model_grid.ModelGrid.from_env({**os.environ, **grid.to_env()})
    if models.empty:
        return 0.0
    announce("model")
    for model in models.models:
        t0 = time.perf_counter()
        found = model_grid.measure(models, model)
        for r in found.results:
            words = r.status.value + ("" if r.measured else f": {r.reason}")
            log(f"  model {model} {r.dtype} {r.target} {r.order} {models.inputs} inputs: {words}")
        log(f"  model {model}: {time.perf_counter() - t0:.1f} s")
    return time.perf_counter() - started


def run(grid: Grid, quick: bool, out_dir: Path, tvm_repo=None, tvm_commit=None, cluster: str | None = None,
        thresholds_path: Path | None = None, machine: str | None = None) -> driver.RunSummary:
    """The main job: measure (on a Dask cluster at ``cluster``, where given), run asv on the
    installed TVM, keep the results, publish asv's HTML, then give the gate's verdict on the commit
    (its exit status) and write the report of it. ``out_dir`` is this run's alone while it works."""
    thresholds = limits.load(thresholds_path)  # a bad thresholds file is refused before any work
    model_grid.ModelGrid.from_env({**os.environ, **grid.to_env()})  # and bad TVM_SUITE_MODEL* values
    release.tvm()
    if cluster is not None:  # a one-line error before anything is written, cached or not
        from suite.core import cluster as dask_cluster

        dask_cluster.connect(cluster).close()
    cache.ensure_dir(out_dir, "--out")
    dashboard.check_replaceable(out_dir / "html", "--out")  # asv publish replaces it whole: ours only
    repo, commit = installed_commit(out_dir, tvm_repo, tvm_commit)
    machine = driver.machine_name(machine)
    report_dir = out_dir / "report"
    report.check_out(report_dir, out_dir)
    with run_journal.RunLock(out_dir, commit, "tvm-suite run"):
        warm, filed = _measure_and_file(grid, quick, out_dir, repo, commit, tvm_repo, cluster, machine)
        result = _verdict(out_dir, commit, tvm_repo, thresholds, report_dir)
    text = _summary_text(warm, commit, out_dir, filed)
    failed = [c for c, r in warm.records.items() if r.status is Status.FAILED]
    if failed:
        text += "\n\nfailed combinations (their results are asv failures, null):\n" + "\n".join(
            f"  {c.label}: {warm.records[c].reason}" for c in failed)
    if own := own_records(warm.records):
        text += (f"\ntuned: {len(own)} combination(s) replayed your own tuning records "
                 f"({tuning_records.user_records_root()}), not the committed ones")
    text += f"\nreport:  {report_dir / 'index.html'}\n{result.line()}"
    counts = _status_counts(warm.records)
    facts = {"commit": commit, "machine": machine, "results": str(out_dir / "results"),
             "report": str(report_dir / "index.html"), "combinations": counts,
             "failed": [{"combination": c.label, "reason": warm.records[c].reason} for c in failed],
             "own_tuning_records": [c.label for c in own],
             **result.as_dict()}
    return driver.RunSummary(text, result.verdict.exit_code, facts)


@dataclass(frozen=True)
class AsvRun:
    """How asv went in :func:`_measure_and_file`."""

    asv_status: int  #: asv run's exit status
    asv_s: float
    publish_status: int  #: asv publish's exit status
    archived: list[Path]  #: copies of the commit's previous result files (driver.archive_previous)
    log: Path
    offline: dashboard.Offline  #: what making asv's HTML work offline did


def _measure_and_file(grid, quick, out_dir, repo, commit, tvm_repo, cluster, machine) -> tuple[MeasurePhase, AsvRun]:
    """Measure, run asv and file the commit's results (whole or not at all), then publish asv's
    HTML: (what was measured, how asv went)."""
    log_path = out_dir / "asv.log"
    # No commit links for the local versions repository: its hashes are not TVM's. The installed
    # TVM is asv's environment "tvm-suite" (suite.asv_plumbing.plugin: a plugin, which asv imports
    # as a module only when its name starts with "."): one series per machine.
    config = driver.write_conf(out_dir, "asv.installed.json", repo, plugins=[".suite.asv_plumbing.plugin"],
                               **({} if tvm_repo is not None else {"show_commit_url": ""}))
    print(f"measuring {len(grid.workloads)} workloads x {len(grid.dtypes)} dtypes on apache-tvm "
          f"{release.installed_version()} (cache: {measurement.cache.root()}; each combination in "
          f"{out_dir / 'measure.log'})", flush=True)
    if cluster is not None:
        print(f"building and running on the Dask cluster at {cluster}; latency timed here", flush=True)
    for line in run_journal.recover(out_dir):
        print(f"recovered: {line}", flush=True)
    # The commit's results and side data are replaced only once this run is complete: until then its
    # side data goes to a staging run directory, and an interrupted run undoes itself.
    pending = run_journal.begin_run(out_dir, machine, commit)
    try:
        with (out_dir / "measure.log").open("a") as measure_log:
            warm = warm_cache(grid, pending.staged, log=lambda line: print(line, file=measure_log, flush=True),
                              cluster=cluster)
        measurement.note_tvm_build(pending.staged)  # here, where TVM is imported already, not in a benchmark process
        archived = driver.archive_previous(out_dir / "results", commit, out_dir)
        t0 = time.perf_counter()
        named = driver.machine(config, log_path, machine)
        args = ["run", "--environment", f"tvm-suite:{sys.executable}", "--set-commit-hash", commit, *named,
                "--show-stderr"]
        announce("asv run")
        # the grid and the staging directory, told to asv's benchmark processes alone
        context = run_place.RunContext(pending.staging, machine, commit, grid.to_env())
        asv_status = driver.asv(config, *args, *driver.quick_args(quick), log=log_path, phase="asv run",
                                context=context)
        asv_s = time.perf_counter() - t0
        if not driver.result_counts(out_dir / "results", commit):
            raise driver.ToolFailed(f"asv run wrote no results for {commit[:12]} (exit {asv_status}); see {log_path}")
        raise_if_signalled()
        pending.keep()
    except KeyboardInterrupt as err:
        raise Interrupted.by(err, pending.drop()) from None
    except BaseException:
        pending.drop()
        raise
    announce("asv publish")
    try:
        with dashboard.publishing(out_dir / "html"):  # the next run replaces it: this run published it
            publish_status, offline = driver.publish(config, out_dir / "html", log_path)
    except KeyboardInterrupt as err:
        raise Interrupted.by(err, f"the run of {commit[:12]} was filed whole (results and side data); asv's HTML was "
                                  "not published (the next run publishes it)") from None
    raise_if_signalled()
    return warm, AsvRun(asv_status, asv_s, publish_status, archived, log_path, offline)


def _verdict(out_dir: Path, commit: str, tvm_repo, thresholds, report_dir: Path) -> gate_result.GateResult:
    """The gate's verdict on the commit just filed (suspects timed again, as `tvm-suite gate`
    does), kept, and the report that renders it."""
    announce("report")  # the gate's verdict, then the report that renders it
    filed = f"the run of {commit[:12]} was filed whole"
    try:
        history = results.load(out_dir / "results", tvm_repo)
        result = gate.evaluate_named(history, commit, thresholds, remeasure=timing.remeasure)
        keep_remeasured(history, result)
        report.make_report(gate.with_remeasured(history, result), result, report_dir)
        raise_if_signalled()
    except UserError as err:
        raise type(err)(f"{filed}, but no verdict: {err}") from None
    except KeyboardInterrupt as err:
        raise Interrupted.by(err, f"{filed}; its verdict and report were not written (tvm-suite gate --results "
                                  f"{out_dir / 'results'} --commit {commit[:12]} gives the verdict)") from None
    return result


def own_records(records: dict) -> list:
    """The combinations of ``records`` whose ``tuned`` order replayed a record of the user's own
    (tuning_records.user_records_root), not a committed one."""
    own = []
    for combo, record in records.items():
        if combo.order == "tuned" and record.tuned_from:
            path = tuning_records.trace_path(record.tuned_from, combo.dtype, combo.workload.id)
            if tuning_records.RECORDS_DIR not in path.parents:
                own.append(combo)
    return own


def keep_remeasured(history: results.History, result: gate_result.GateResult) -> None:
    """Keep what the gate found by timing suspects again, so that the report and later gates give
    the same verdict on the same samples; where the directory cannot be written, say so (stderr)
    and go on: the verdict does not depend on it."""
    kept = result.newly_remeasured()
    if not kept or result.baseline is None:
        return
    try:
        retimings.keep_remeasured(history.run_dir, result.baseline.hash, result.candidate.hash, kept)
    except OSError as err:
        print(f"tvm-suite: note: the re-measurements were not kept ({err.strerror or err}: "
              f"{err.filename or history.run_dir}); the verdict stands", file=sys.stderr)


def _status_counts(records: dict) -> dict[str, int]:
    """How many of ``records`` (combination -> Record) are ok, skipped and failed."""
    return {s.value: sum(r.status is s for r in records.values()) for s in Status}


def _seconds(value: float) -> str:
    """A duration to three significant digits in the unit that suits it: 850 ns, 12.3 µs, 1.23 ms."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if value >= scale * 0.9995 or unit == "ns":
            text = f"{value / scale:#.3g}".rstrip(".")
            return f"{text if 'e' not in text else f'{value / scale:.0f}'} {unit}"


#: run's table: header, alignment of each column (the metrics are right-aligned numbers)
_COLUMNS = (("workload", "left"), ("dtype", "left"), ("target", "left"), ("order", "left"), ("latency", "right"),
            ("GFLOP/s", "right"), ("x torch", "right"), ("x eager", "right"), ("ULP mean", "right"),
            ("scaled", "right"), ("bound", "right"), ("exact", "right"), ("status", "left"))


def _exactness(m: dict) -> str:
    """An int8 row's exactness: the share of output elements equal to the integer oracle's, and the
    accumulator elements that differ from the exact sum where there are any."""
    text = f"{m['exact_fraction'] * 100:.4g}%"
    if m.get("accumulator_mismatches"):
        text += f", {m['accumulator_mismatches']:.0f} acc wrong"
    return text


def _summary_text(warm: MeasurePhase, commit, out_dir, filed: AsvRun) -> str:
    records = warm.records
    rows = []  # None: no value (a column with none in any row is left out)
    for combo, r in records.items():
        if r.has_output:
            m = r.metrics
            if combo in warm.latency:
                latency, ratios = warm.latency[combo], warm.peer_ratios.get(combo, {})
                timed = [_seconds(latency), f"{timing.gflops(combo, latency):.2f}"]
                versus = [f"{ratios[k]:.2f}" if k in ratios else "-" for k in ("ratio", "eager_ratio")]
            else:  # emulated: its time is not latency and has no throughput or peer; packets are exact
                packets = (r.counts or {}).get("packets")
                timed = [f"{packets:,} pkts" if packets is not None else "emulated", "-"]
                versus = ["-", "-"]
            versus = versus if warm.peer_ratios else [None, None]  # no PyTorch in this run: no columns
            if "exact_fraction" in m:  # int8: exact against the integer oracle, no ULP or bound
                rows.append([*combo.ids, *timed, *versus, "-", "-", "-", _exactness(m), "ok"])
                continue
            bound = m["bound_fraction"]
            rows.append([*combo.ids, *timed, *versus, f"{m['ulp_mean']:.3f}", f"{m['scaled_error']:.3f}",
                         "none" if math.isnan(bound) else f"{bound:.4f}", None, "ok"])
        else:
            status = "ok (compile-only)" if r.ok else f"{r.status.value}: {r.reason[:90]}"
            rows.append([*combo.ids, *[None] * 8, status])
    kept = [i for i in range(len(_COLUMNS)) if any(row[i] is not None for row in rows)]
    table = tabulate([["" if row[i] is None else row[i] for i in kept] for row in rows],
                     [_COLUMNS[i][0] for i in kept], tablefmt="plain", disable_numparse=True,
                     colalign=[_COLUMNS[i][1] for i in kept])
    lines = ["", *(line.rstrip() for line in table.splitlines())]
    counts = _status_counts(records)
    legend = ("x torch: TVM latency / PyTorch's for the same layer (a CUDA-graph replay on the GPU, eager on the "
              "CPU); x eager: / PyTorch with each op launched eagerly from Python" if warm.peer_ratios else
              "x torch, x eager (TVM latency / PyTorch's): left out, none in this run (they need PyTorch installed, "
              "a native target and a layer the PyTorch peer covers)")
    if any(" pkts" in (row[4] or "") for row in rows):
        legend += "; pkts: packets an emulated Hexagon kernel executed (exact, one per cycle at best; not time)"
    lines += ["", legend]
    if any(row[10] == "none" for row in rows):
        lines.append("bound: share of the rigorous rounding bound gamma_K*m used; none: no such bound exists "
                     "(K*u >= 1: float16 accumulating 2048 or more terms, bfloat16 256 or more)")
    if any(row[11] is not None for row in rows):
        lines.append("exact: int8 output elements equal to the exact integer oracle's (docs/int8.md); ULP, scaled "
                     "and bound mean nothing for integers (-)")
    lines += [
        f"combinations: {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed",
        _measure_phase_text(warm),
        f"asv run: {filed.asv_s:.1f} s, exit {filed.asv_status}; publish exit {filed.publish_status}; "
        f"log {filed.log}",
        f"results: {out_dir / 'results'} (commit {commit[:12]})",
        f"asv's own HTML: {filed.offline.line()}",
    ]
    if filed.archived:
        lines.append(f"previous results for this commit kept in {filed.archived[0].parent}")
    return "\n".join(lines)


def _measure_phase_text(warm: MeasurePhase) -> str:
    text = f"measure phase: {warm.seconds:.1f} s (whole models {warm.model_s:.1f} s); timing {warm.timing_s:.1f} s"
    if warm.helper_s is None:
        return text + f", building, running and references {warm.measure_s:.1f} s"
    return text + (f"; building, running and references {warm.helper_s:.1f} s in a helper process beside "
                   f"the timing, waited for {warm.measure_s:.1f} s")
