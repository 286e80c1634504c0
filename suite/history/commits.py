"""`tvm-suite history`: asv over commits of a TVM clone.

One virtualenv; each commit's TVM is installed into it by ``python -m suite.asv_plumbing.install_tvm``
(the asv ``install_command`` written here): a tagged release's wheel, else a source build.
Results asv already has are skipped; then ``asv publish``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from suite import cache, git
from suite.asv_plumbing import config as asvconf, driver, releases, source_build
from suite.core.combo import Grid
from suite.core import run_bundle, run_journal, run_place
from suite.errors import UserError


@dataclass
class HistoryCommit:
    label: str  #: what the user asked for: a release version or a short hash
    commit: str
    release: str | None  #: apache-tvm version installed from the package index, else None


def history_commits(tvm_repo: Path, versions: list[str] | None, range_arg: str | None) -> list[HistoryCommit]:
    """The commits of a history run, oldest first, from ``--releases`` (versions) or ``--range``."""
    repo = releases.check_repo(tvm_repo)
    if bool(versions) == bool(range_arg):
        raise UserError("give exactly one of --releases and --range")
    if versions:
        found = [HistoryCommit(rel.version, commit, rel.version)
                 for rel, commit in releases.resolve_releases(repo, versions)]
    else:
        found = []
        for commit in releases.resolve_range(repo, range_arg):
            rel = releases.release_for_commit(repo, commit)
            found.append(HistoryCommit(rel.version if rel else commit[:10], commit, rel.version if rel else None))
    dates = {c.commit: int(git.git(repo, "log", "-1", "--format=%ct", c.commit)) for c in found}
    return sorted({c.commit: c for c in found}.values(), key=lambda c: dates[c.commit])


def history_config(out_dir: Path, env_dir: Path, repo: Path, release_map: Path, html_dir: Path,
                   mirrors: Path | None = None) -> Path:
    """asv.conf.json for a history run: the clone, one virtualenv, the suite (install_suite: once per
    environment) and install_tvm as install commands (with the mirrors of TVM's submodules for source
    builds, where given)."""
    if asvconf.CHECKOUT is None:
        raise UserError("tvm-suite history installs the suite into asv's environments from its source checkout; "
                        "this suite is an installed wheel: run it from a checkout (pip install -e .)")
    install = (f"in-dir={{env_dir}} python -m suite.asv_plumbing.install_tvm --commit {{commit}} "
               f"--checkout {{build_dir}} --release-map {release_map.resolve()} "
               f"--log-dir {(out_dir / 'install-logs').resolve()}" + (f" --git-mirrors {mirrors}" if mirrors else ""))
    return driver.write_conf(
        out_dir, "asv.history.json", repo,
        environment_type="virtualenv",
        pythons=[f"{sys.version_info.major}.{sys.version_info.minor}"],
        install_command=[f"in-dir={{env_dir}} python {asvconf.SUITE_DIR / 'asv_plumbing' / 'install_suite.py'} "
                         f"{asvconf.CHECKOUT} --log {(out_dir / 'install-logs').resolve()}/{{commit}}.log", install],
        html_dir=str(html_dir.resolve()),
        env_dir=str(env_dir.resolve()),
    )


def no_submodules_env(repo: Path, commits: list[str]) -> dict:
    """git configuration (GIT_CONFIG_*) that makes asv's checkout skip TVM's submodules.

    asv runs ``git submodule update --init --recursive`` in every checkout; offline that
    fails for every commit, and a wheel install needs none of them. install_tvm fetches them
    itself for a source build.
    """
    names = releases.submodule_names(repo, commits)
    env = {"GIT_CONFIG_COUNT": str(len(names))}
    for index, name in enumerate(names):
        env[f"GIT_CONFIG_KEY_{index}"] = f"submodule.{name}.update"
        env[f"GIT_CONFIG_VALUE_{index}"] = "none"
    return env


@dataclass
class Prepared:
    """An asv project over a TVM clone, its one virtualenv made: ready for asv run or asv find."""

    repo: Path
    config: Path
    log: Path
    env_dir: Path
    setup_s: float
    machine_args: list  #: what makes asv run and asv find file under the machine asked for
    machine: str  #: the machine the results are filed under
    context: run_place.RunContext  #: what asv and its benchmark processes are told (driver.asv's context)


def prepare(tvm_repo: Path, commits: list[HistoryCommit], grid: Grid, out_dir: Path, env_dir: Path | None = None,
            html_dir: Path | None = None, git_mirrors: str | None = None, machine: str | None = None) -> Prepared:
    """The asv configuration of ``out_dir`` over the clone, the release map of ``commits``, the run's
    context (the grid, where the side data goes), the machine file and the virtualenv (``asv setup``)."""
    repo = releases.check_repo(tvm_repo)
    cache.ensure_dir(out_dir, "--out")
    env_dir = (env_dir or Path(".asv") / "env-history").absolute()  # not under reports/: about 0.6 GB
    html_dir = html_dir or out_dir / "html"
    driver.check_results(out_dir / "results")
    log_path = out_dir / "asv.log"
    release_map = out_dir / "release-map.json"
    try:
        known = json.loads(release_map.read_text()) if release_map.exists() else {}
        if not isinstance(known, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError):
        raise UserError(f"corrupt {release_map}: move it away and run again") from None
    known.update({c.commit: c.release for c in commits if c.release})
    cache.write_json(release_map, known)
    config = history_config(out_dir, env_dir, repo, release_map, html_dir, source_build.mirrors_dir(git_mirrors))
    # Timings and difference maps go beside results/, per commit (asv gives each benchmark process
    # its ASV_COMMIT).
    machine = driver.machine_name(machine)
    context = run_place.RunContext(out_dir.resolve(), machine, None, grid.to_env(),
                                  no_submodules_env(repo, [c.commit for c in commits]))
    machine_args = driver.machine(config, log_path, machine)
    t0 = time.perf_counter()
    setup_status = driver.asv(config, "setup", log=log_path, context=context)
    # asv 0.6's `setup` returns its list of environments as the exit status (so 1 when it
    # worked): judge by the environment it made instead.
    if not any(env_dir.glob("*/bin/python")):
        raise driver.ToolFailed(f"asv setup (creating the environment) failed, exit {setup_status}; see {log_path}")
    return Prepared(repo, config, log_path, env_dir, time.perf_counter() - t0, machine_args, machine, context)


def run_history(tvm_repo: Path, commits: list[HistoryCommit], grid: Grid, quick: bool, out_dir: Path,
                env_dir: Path | None = None, html_dir: Path | None = None,
                git_mirrors: str | None = None, machine: str | None = None) -> driver.RunSummary:
    """asv over TVM commits (skipping results asv already has), then ``asv publish``; ``out_dir``
    is this run's alone while it works (run_journal.RunLock)."""
    cache.ensure_dir(out_dir, "--out")
    with run_journal.RunLock(out_dir, ",".join(c.commit[:12] for c in commits[:3]), "tvm-suite history"):
        return _run_history(tvm_repo, commits, grid, quick, out_dir, env_dir, html_dir, git_mirrors, machine)


def _run_history(tvm_repo, commits, grid, quick, out_dir, env_dir, html_dir, git_mirrors, machine) -> driver.RunSummary:
    html_dir = html_dir or out_dir / "html"
    print(f"history of {len(commits)} commits of {tvm_repo}: "
          + ", ".join(f"{c.label} ({c.commit[:10]})" for c in commits), flush=True)
    ready = prepare(tvm_repo, commits, grid, out_dir, env_dir, html_dir, git_mirrors, machine)
    config, log_path, env_dir, setup_s = ready.config, ready.log, ready.env_dir, ready.setup_s
    hashfile = out_dir / "commits.txt"
    cache.write_text(hashfile, "".join(f"{c.commit}\n" for c in commits))
    before = {p: p.stat().st_mtime_ns for p in (out_dir / "results").glob("*/*.json")}
    # what asv finished in an earlier run that ended before sealing it (killed, or a suite that sealed
    # only what its own run had written)
    sealed_earlier = seal_finished(out_dir, ready.machine, commits, before)
    logs_before = {p: p.stat().st_size for p in (out_dir / "install-logs").glob("*.log")}
    t0 = time.perf_counter()
    try:
        asv_status = driver.asv(config, "run", f"HASHFILE:{hashfile.resolve()}", "--skip-existing",
                                *ready.machine_args, "--show-stderr", *driver.quick_args(quick), log=log_path,
                                phase=f"asv run over {len(commits)} commits", context=ready.context)
    finally:  # interrupted too: every commit asv finished is sealed; the one it was in, the next run finishes
        seal_finished(out_dir, ready.machine, commits, before)
    run_s = time.perf_counter() - t0
    publish_status, offline = driver.publish(config, html_dir, log_path)
    installs = _install_seconds(out_dir / "install-logs", logs_before)
    install_s = sum(installs.values())
    rows = []
    failed_install = False
    for c in commits:
        s = driver.result_counts(out_dir / "results", c.commit)
        if s is None:
            rows.append([c.commit[:12], c.release or "source", "", "", "", "", "no results (see log)"])
            continue
        installed = s.ok + s.skipped > 0
        failed_install |= not installed
        note = "" if installed else f"install failed, see {log_path}"
        if before.get(s.path) == s.path.stat().st_mtime_ns:
            kept = "kept from an earlier run" + (", sealed now" if c.commit in sealed_earlier else "")
            note = (note + "; " if note else "") + kept
        # asv's "<build>" misses the install it does to discover benchmarks: install_tvm's log has it.
        build_s = installs.get(c.commit, s.build_s)
        rows.append([c.commit[:12], c.release or "source", f"{build_s:.1f}s", s.ok, s.skipped, s.failed, note])
    table = tabulate(rows, ["commit", "release", "install", "ok", "skipped", "failed", "note"], tablefmt="plain",
                     disable_numparse=True, colalign=["left", "left", "right", "right", "right", "right", "left"])
    lines = ["", *(line.rstrip() for line in table.splitlines())]
    lines += [
        "",
        f"environment set-up (asv setup): {setup_s:.1f} s; TVM installs: {install_s:.1f} s; "
        f"benchmarking: {max(run_s - install_s, 0.0):.1f} s (asv run {run_s:.1f} s, exit {asv_status})",
        f"environments: {driver.dir_size(env_dir) / 2**20:.0f} MiB in {env_dir}",
        f"publish exit {publish_status}; log {log_path}",
        f"results: {out_dir / 'results'}",
        f"html:    {offline.line()}",
    ]
    ran = any(driver.result_counts(out_dir / "results", c.commit) for c in commits)
    # asv exits 2 when a benchmark (or a commit's install) failed; skips are no failures.
    status = 0 if asv_status == 0 and publish_status == 0 and not failed_install and ran else 1
    return driver.RunSummary("\n".join(lines), status)


def seal_finished(out_dir: Path, machine: str, commits: list[HistoryCommit], written_before: dict) -> list[str]:
    """Seal the side data of each of ``commits`` that asv has finished on ``machine``
    (driver.finished_results) and that no seal covers yet: none was written, or asv has written the
    commit's results since ``written_before`` (results file -> mtime, before this run's asv), after
    its benchmark processes added to the side data. The commits sealed.

    A commit asv was interrupted in stays unsealed (readers refuse its side data) until a run
    finishes it: asv --skip-existing runs only what its results file lacks."""
    sealed = []
    for c in commits:
        place = run_place.Place(out_dir, machine, c.commit)
        results = driver.finished_results(out_dir / "results", machine, c.commit)
        written = any(written_before.get(path) != path.stat().st_mtime_ns for path in results)
        if results and place.dir.is_dir() and (written or not place.sealed):
            run_bundle.seal(place)
            sealed.append(c.commit)
    return sealed


def _install_seconds(log_dir: Path, sizes_before: dict) -> dict:
    """Seconds of the TVM installs of this run, per commit, from install_tvm's own logs."""
    seconds = {}
    for path in log_dir.glob("*.log"):
        with path.open() as handle:
            handle.seek(sizes_before.get(path, 0))
            for line in handle:
                if " installed in " in line and line.startswith("install_tvm: "):
                    seconds[path.stem] = seconds.get(path.stem, 0.0) + float(line.rsplit(" in ", 1)[1].split()[0])
    return seconds
