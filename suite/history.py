"""Runs the asv suite and keeps its results: on the installed TVM (this module, now) and,
later, over TVM commits.

asv records results per commit of its ``repo``. The installed TVM wheel does not carry its git
hash, so for the installed TVM the commit comes from (in this order) ``--tvm-commit``, the tag
``v<version>`` of a TVM clone given with ``--tvm-repo``, or a local *versions repository*
(``<out>/tvm-versions``) that holds one commit per TVM version the suite has run, tagged
``v<version>``: asv then has a real hash to file the results under and to publish.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from suite import compat, measurement, peers, workloads
from suite.errors import UserError

REPO_ROOT = Path(__file__).resolve().parent.parent
ASV_CONF = REPO_ROOT / "asv.conf.json"
GIT_IDENTITY = ["-c", "user.name=tvm-suite", "-c", "user.email=tvm-suite@localhost"]
#: asv benchmark attributes of a quick run: few samples, one round, no warm-up.
QUICK_ATTRIBUTES = {"repeat": 3, "rounds": 1, "warmup_time": 0}
#: Loop orders of a quick run: as legalized, and as tuned.
QUICK_ORDERS = ("default", "tuned")


class ToolFailed(UserError):
    pass


@dataclass
class RunSummary:
    text: str
    exit_status: int


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", *GIT_IDENTITY, "-C", str(repo), *args],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ToolFailed(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout.strip()


def versions_repo_commit(repo: Path, version: str) -> str:
    """The commit standing for TVM ``version`` in the local versions repository (made if new)."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
    tag = f"v{version}"
    if _git(repo, "tag", "--list", tag):
        return _git(repo, "rev-list", "-n", "1", tag)
    _git(repo, "commit", "-q", "--allow-empty", "-m", f"apache-tvm {version}")
    _git(repo, "tag", tag)
    return _git(repo, "rev-parse", "HEAD")


def installed_commit(out_dir: Path, tvm_repo: Path | None, tvm_commit: str | None) -> tuple[Path, str]:
    """(asv repo, commit hash) under which the installed TVM's results are filed."""
    version = compat.installed_version()
    if tvm_repo is not None:
        if not (tvm_repo / ".git").exists() and not (tvm_repo / "HEAD").exists():
            raise UserError(f"--tvm-repo {tvm_repo} is not a git repository")
        name = tvm_commit or f"v{version}"
        result = subprocess.run(["git", "-C", str(tvm_repo), "rev-parse", "--verify", "-q", f"{name}^{{commit}}"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise UserError(f"{tvm_repo} has no commit {name!r} for apache-tvm {version}; pass --tvm-commit")
        return tvm_repo, result.stdout.strip()
    if tvm_commit is not None:
        raise UserError("--tvm-commit needs --tvm-repo, the clone that holds that commit")
    repo = out_dir / "tvm-versions"
    return repo, versions_repo_commit(repo, version)


def asv_config(out_dir: Path, repo: Path, commit_urls: bool = True) -> Path:
    """asv.conf.json with the repository and output directories of this run, as absolute paths.

    ``commit_urls=False`` for the local versions repository, whose hashes are not TVM's.
    """
    text = "\n".join(line for line in ASV_CONF.read_text().splitlines() if not line.strip().startswith("//"))
    conf = json.loads(text)
    conf.update({
        "repo": str(repo.resolve()),
        "benchmark_dir": str(REPO_ROOT / "benchmarks"),
        "results_dir": str((out_dir / "results").resolve()),
        "html_dir": str((out_dir / "html").resolve()),
        "env_dir": str((out_dir / "env").resolve()),
    })
    if not commit_urls:
        conf["show_commit_url"] = ""
    path = out_dir / "asv.installed.json"
    path.write_text(json.dumps(conf, indent=1))
    return path


def _asv(config: Path, *args: str, log: Path) -> int:
    command = [sys.executable, "-m", "asv", "--config", str(config), *args]
    with log.open("a") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        return subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO_ROOT).returncode


def _archive_previous(results_dir: Path, commit: str, out_dir: Path) -> list[Path]:
    """Copy result files asv is about to update for ``commit``, so nothing is lost silently."""
    kept = []
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for path in results_dir.glob(f"*/{commit[:8]}-*.json"):
        target = out_dir / "results-archive" / path.parent.name / f"{path.stem}.{stamp}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        kept.append(target)
    return kept


def warm_cache(workload_ids, dtypes, target_names, orders, log=print) -> dict:
    """Measure every combination once in this process (one TVM import instead of hundreds),
    and the PyTorch peer of each workload on each target that has one, where PyTorch is installed."""
    records, peer_latency, started = {}, {}, time.perf_counter()
    reference_s = 0.0
    for wid in workload_ids:
        workload = workloads.get(wid)
        for dtype in dtypes:
            t0 = time.perf_counter()
            measurement.reference_arrays(workload, dtype)
            reference_s += time.perf_counter() - t0
            for target in target_names:
                for order in orders:
                    t0 = time.perf_counter()
                    record = measurement.measure(wid, dtype, target, order)
                    records[(wid, dtype, target, order)] = record
                    log(f"  {record['status']:7s} {wid} {dtype} {target} {order} "
                        f"({time.perf_counter() - t0:.1f} s)")
                device = peers.DEVICE_OF_TARGET.get(target)
                if device and peers.available() and not measurement.unavailable(target):
                    try:
                        peer_latency[(wid, dtype, target)] = peers.pytorch_latency(wid, dtype, device)["latency_s"]
                    except peers.NoPeer:
                        pass
    return {"records": records, "peer_latency": peer_latency,
            "seconds": time.perf_counter() - started, "reference_s": reference_s}


def run_installed(workload_ids, dtypes, orders, quick, out_dir: Path, tvm_repo=None, tvm_commit=None,
                  target_names=("llvm",)) -> RunSummary:
    """The main job: measure, run asv on the installed TVM, keep the results, publish HTML."""
    compat.tvm()
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "asv.log"
    repo, commit = installed_commit(out_dir, tvm_repo, tvm_commit)
    config = asv_config(out_dir, repo, commit_urls=tvm_repo is not None)

    print(f"measuring {len(workload_ids)} workloads x {len(dtypes)} dtypes on apache-tvm "
          f"{compat.installed_version()} (cache: {measurement.cache.root()})", flush=True)
    warm = warm_cache(workload_ids, dtypes, target_names, orders, log=lambda s: print(s, flush=True))

    env = {
        "TVM_SUITE_WORKLOADS": ",".join(workload_ids),
        "TVM_SUITE_DTYPES": ",".join(dtypes),
        "TVM_SUITE_TARGETS": ",".join(target_names),
        "TVM_SUITE_ORDERS": ",".join(orders),
    }
    os.environ.update(env)
    archived = _archive_previous(out_dir / "results", commit, out_dir)
    t0 = time.perf_counter()
    if _asv(config, "machine", "--yes", log=log_path) != 0:
        raise ToolFailed(f"asv machine failed; see {log_path}")
    args = ["run", "--environment", f"existing:{sys.executable}", "--set-commit-hash", commit,
            "--show-stderr"]
    if quick:
        for name, value in QUICK_ATTRIBUTES.items():
            args += ["-a", f"{name}={value}"]
    asv_status = _asv(config, *args, log=log_path)
    asv_s = time.perf_counter() - t0
    publish_status = _asv(config, "publish", log=log_path)
    # The suite's own report: static, works offline (asv's HTML loads its scripts from CDNs).
    from suite import report

    report.make_report(out_dir / "results", out_dir / "report", tvm_repo=tvm_repo)

    text = _summary_text(warm, commit, out_dir, asv_status, asv_s, publish_status, archived, log_path)
    # asv exits 2 when a benchmark failed; a skipped combination is not a failure.
    return RunSummary(text, 0 if asv_status == 0 and publish_status == 0 else 1)


def _summary_text(warm, commit, out_dir, asv_status, asv_s, publish_status, archived, log_path) -> str:
    records = warm["records"]
    lines = ["", f"{'workload':52s} {'dtype':8s} {'target':15s} {'order':10s} {'ms':>9s} {'GFLOP/s':>8s} "
                 f"{'x torch':>7s} {'ULP mean':>9s} {'scaled':>8s} {'bound':>7s}  status"]
    for (wid, dtype, target, order), r in records.items():
        head = f"{wid:52s} {dtype:8s} {target:15s} {order:10s}"
        if r["status"] == "ok" and "metrics" in r:
            m = r["metrics"]
            peer = warm["peer_latency"].get((wid, dtype, target))
            if "latency_s" in r:
                timing = f"{r['latency_s'] * 1e3:9.3f} {r['gflops']:8.2f}"
                ratio = f"{r['latency_s'] / peer:7.2f}" if peer else f"{'-':>7s}"
            else:  # emulated: its time is not latency and has no throughput or peer
                timing, ratio = f"{'emulated':>18s}", f"{'-':>7s}"
            lines.append(f"{head} {timing} {ratio} "
                         f"{m['ulp_mean']:9.3f} {m['scaled_error']:8.3f} {m['bound_fraction']:7.4f}  ok")
        elif r["status"] == "ok":
            lines.append(f"{head} {'':>53s}  ok (compile-only)")
        else:
            lines.append(f"{head} {'':>53s}  {r['status']}: {r['reason'][:90]}")
    counts = {s: sum(r["status"] == s for r in records.values()) for s in ("ok", "skipped", "failed")}
    lines += [
        "",
        f"combinations: {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed",
        f"measure + compile + reference: {warm['seconds']:.1f} s (references {warm['reference_s']:.1f} s)",
        f"asv run: {asv_s:.1f} s, exit {asv_status}; publish exit {publish_status}; log {log_path}",
        f"results: {out_dir / 'results'} (commit {commit[:12]})",
        f"report:  {out_dir / 'report' / 'index.html'} (asv's own HTML: {out_dir / 'html' / 'index.html'})",
    ]
    if archived:
        lines.append(f"previous results for this commit kept in {archived[0].parent}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- TVM history
# `tvm-suite history`: asv over commits of a TVM clone, one virtualenv, each commit's TVM
# installed into it by `python -m suite.install_tvm` (asv.conf.json's install_command).


@dataclass
class HistoryCommit:
    label: str  #: what the user asked for: a release version or a short hash
    commit: str
    release: str | None  #: apache-tvm version installed from the package index, else None


def history_commits(tvm_repo: Path, releases_arg: str | None, range_arg: str | None) -> list[HistoryCommit]:
    """The commits of a history run, oldest first, from ``--releases`` or ``--range``."""
    from suite import releases

    repo = releases.check_repo(tvm_repo)
    if bool(releases_arg) == bool(range_arg):
        raise UserError("give exactly one of --releases and --range")
    if releases_arg:
        versions = [v.strip() for v in releases_arg.split(",") if v.strip()]
        if not versions:
            raise UserError("--releases names no release")
        found = [HistoryCommit(rel.version, commit, rel.version)
                 for rel, commit in releases.resolve_releases(repo, versions)]
    else:
        found = []
        for commit in releases.resolve_range(repo, range_arg):
            rel = releases.release_for_commit(repo, commit)
            found.append(HistoryCommit(rel.version if rel else commit[:10], commit, rel.version if rel else None))
    dates = {c.commit: int(_git(repo, "log", "-1", "--format=%ct", c.commit)) for c in found}
    return sorted({c.commit: c for c in found}.values(), key=lambda c: dates[c.commit])


def history_config(out_dir: Path, env_dir: Path, repo: Path, release_map: Path, html_dir: Path) -> Path:
    """asv.conf.json for a history run: the clone, virtualenvs, and absolute paths."""
    text = "\n".join(line for line in ASV_CONF.read_text().splitlines() if not line.strip().startswith("//"))
    conf = json.loads(text)
    install = (f"in-dir={{env_dir}} python -m suite.install_tvm --commit {{commit}} --checkout {{build_dir}} "
               f"--release-map {release_map.resolve()} --log-dir {(out_dir / 'install-logs').resolve()}")
    conf.update({
        "repo": str(repo),
        "environment_type": "virtualenv",
        "pythons": [f"{sys.version_info.major}.{sys.version_info.minor}"],
        "install_command": [
            f"in-dir={{env_dir}} python -m pip install --no-deps --no-build-isolation -e {REPO_ROOT}",
            install,
        ],
        "benchmark_dir": str(REPO_ROOT / "benchmarks"),
        "results_dir": str((out_dir / "results").resolve()),
        "html_dir": str(html_dir.resolve()),
        "env_dir": str(env_dir.resolve()),
    })
    path = out_dir / "asv.history.json"
    path.write_text(json.dumps(conf, indent=1))
    return path


def check_results(results_dir: Path) -> None:
    """Refuse to run over result files asv cannot read (asv would stop with a traceback)."""
    for path in sorted(results_dir.glob("*/*.json")):
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or ("commit_hash" not in data and path.name != "machine.json"):
                raise ValueError("not an asv result file")
        except (ValueError, UnicodeDecodeError) as err:
            raise UserError(f"corrupt asv result file {path}: {str(err).splitlines()[0]}; "
                            "move it away and run again") from None


def _no_submodules_env(repo: Path, commits: list[str]) -> dict:
    """git configuration (GIT_CONFIG_*) that makes asv's checkout skip TVM's submodules.

    asv runs ``git submodule update --init --recursive`` in every checkout; offline that
    fails for every commit, and a wheel install needs none of them. install_tvm fetches them
    itself for a source build.
    """
    from suite import releases

    names = releases.submodule_names(repo, commits)
    env = {"GIT_CONFIG_COUNT": str(len(names))}
    for index, name in enumerate(names):
        env[f"GIT_CONFIG_KEY_{index}"] = f"submodule.{name}.update"
        env[f"GIT_CONFIG_VALUE_{index}"] = "none"
    return env


def _dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def run_history(tvm_repo: Path, commits: list[HistoryCommit], workload_ids, dtypes, orders, quick,
                out_dir: Path, env_dir: Path | None = None, html_dir: Path | None = None,
                target_names=("llvm",)) -> RunSummary:
    """asv over TVM commits (skipping results asv already has), then ``asv publish``."""
    from suite import releases

    repo = releases.check_repo(tvm_repo)
    out_dir.mkdir(parents=True, exist_ok=True)
    env_dir = env_dir or Path(".asv") / "env-history"  # not under reports/: about 0.6 GB
    html_dir = html_dir or out_dir / "html"
    check_results(out_dir / "results")
    log_path = out_dir / "asv.log"
    release_map = out_dir / "release-map.json"
    try:
        known = json.loads(release_map.read_text()) if release_map.exists() else {}
    except ValueError:
        raise UserError(f"corrupt {release_map}: move it away and run again") from None
    known.update({c.commit: c.release for c in commits if c.release})
    release_map.write_text(json.dumps(known, indent=1))
    config = history_config(out_dir, env_dir, repo, release_map, html_dir)
    hashfile = out_dir / "commits.txt"
    hashfile.write_text("".join(f"{c.commit}\n" for c in commits))

    os.environ.update({
        "TVM_SUITE_WORKLOADS": ",".join(workload_ids),
        "TVM_SUITE_DTYPES": ",".join(dtypes),
        "TVM_SUITE_TARGETS": ",".join(target_names),
        "TVM_SUITE_ORDERS": ",".join(orders),
        **_no_submodules_env(repo, [c.commit for c in commits]),
    })
    print(f"history of {len(commits)} commits of {repo}: "
          + ", ".join(f"{c.label} ({c.commit[:10]})" for c in commits), flush=True)
    if _asv(config, "machine", "--yes", log=log_path) != 0:
        raise ToolFailed(f"asv machine failed; see {log_path}")
    t0 = time.perf_counter()
    setup_status = _asv(config, "setup", log=log_path)
    setup_s = time.perf_counter() - t0
    # asv 0.6's `setup` returns its list of environments as the exit status (so 1 when it
    # worked): judge by the environment it made instead.
    if not any(env_dir.glob("*/bin/python")):
        raise ToolFailed(f"asv setup (creating the environment) failed, exit {setup_status}; see {log_path}")
    args = ["run", f"HASHFILE:{hashfile}", "--skip-existing", "--show-stderr"]
    if quick:
        for name, value in QUICK_ATTRIBUTES.items():
            args += ["-a", f"{name}={value}"]
    before = {p: p.stat().st_mtime_ns for p in (out_dir / "results").glob("*/*.json")}
    logs_before = {p: p.stat().st_size for p in (out_dir / "install-logs").glob("*.log")}
    t0 = time.perf_counter()
    asv_status = _asv(config, *args, log=log_path)
    run_s = time.perf_counter() - t0
    publish_status = _asv(config, "publish", log=log_path)
    stats = _history_stats(out_dir / "results", commits, before)
    installs = _install_seconds(out_dir / "install-logs", logs_before)
    for commit, seconds in installs.items():
        if commit in stats:  # asv's "<build>" misses the install it does to discover benchmarks
            stats[commit]["build_s"] = seconds
    install_s = sum(installs.values())
    lines = ["", f"{'commit':14s} {'release':14s} {'install':>9s} {'ok':>5s} {'skipped':>8s} {'failed':>7s}  note"]
    for c in commits:
        s = stats.get(c.commit)
        if s is None:
            lines.append(f"{c.commit[:12]:14s} {c.release or 'source':14s} {'':>9s} {'':>5s} {'':>8s} {'':>7s}  "
                         "no results (see log)")
            continue
        note = "" if s["installed"] else f"install failed, see {log_path}"
        if not s["ran"]:
            note = (note + "; " if note else "") + "kept from an earlier run"
        lines.append(f"{c.commit[:12]:14s} {c.release or 'source':14s} {s['build_s']:8.1f}s {s['ok']:5d} "
                     f"{s['skipped']:8d} {s['failed']:7d}  {note}")
    lines += [
        "",
        f"environment set-up (asv setup): {setup_s:.1f} s; TVM installs: {install_s:.1f} s; "
        f"benchmarking: {max(run_s - install_s, 0.0):.1f} s (asv run {run_s:.1f} s, exit {asv_status})",
        f"environments: {_dir_size(env_dir) / 2**20:.0f} MiB in {env_dir}",
        f"publish exit {publish_status}; log {log_path}",
        f"results: {out_dir / 'results'}",
        f"html:    {html_dir / 'index.html'}",
    ]
    failed_install = any(not s["installed"] for s in stats.values())
    # asv exits 2 when a benchmark (or a commit's install) failed; skips are no failures.
    status = 0 if asv_status == 0 and publish_status == 0 and not failed_install and stats else 1
    return RunSummary("\n".join(lines), status)


def _history_stats(results_dir: Path, commits: list[HistoryCommit], before: dict) -> dict:
    """Per commit: install time, whether it installed, counts of ok/skipped/failed values."""
    stats = {}
    for c in commits:
        for path in results_dir.glob(f"*/{c.commit[:8]}-*.json"):
            data = json.loads(path.read_text())
            if data.get("commit_hash") != c.commit:
                continue
            ok = skipped = failed = 0
            for value in data.get("results", {}).values():
                items = value[0] if isinstance(value, list) and value else value
                for item in items if isinstance(items, list) else [items]:
                    if item is None:
                        failed += 1
                    elif isinstance(item, float) and item != item:
                        skipped += 1
                    else:
                        ok += 1
            durations = data.get("durations", {})
            stats[c.commit] = {
                "build_s": float(durations.get("<build>", 0.0)),
                "installed": ok + skipped > 0,
                "ok": ok, "skipped": skipped, "failed": failed,
                "ran": before.get(path) != path.stat().st_mtime_ns,
            }
    return stats


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

