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

from suite import compat, measurement, reference, workloads
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


def asv_config(out_dir: Path, repo: Path) -> Path:
    """asv.conf.json with the repository and output directories of this run, as absolute paths."""
    text = "\n".join(line for line in ASV_CONF.read_text().splitlines() if not line.strip().startswith("//"))
    conf = json.loads(text)
    conf.update({
        "repo": str(repo.resolve()),
        "benchmark_dir": str(REPO_ROOT / "benchmarks"),
        "results_dir": str((out_dir / "results").resolve()),
        "html_dir": str((out_dir / "html").resolve()),
        "env_dir": str((out_dir / "env").resolve()),
    })
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
    """Measure every combination once in this process (one TVM import instead of hundreds)."""
    records, started = {}, time.perf_counter()
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
    return {"records": records, "seconds": time.perf_counter() - started, "reference_s": reference_s}


def run_installed(workload_ids, dtypes, orders, quick, out_dir: Path, tvm_repo=None, tvm_commit=None,
                  target_names=("llvm",)) -> RunSummary:
    """The main job: measure, run asv on the installed TVM, keep the results, publish HTML."""
    compat.tvm()
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "asv.log"
    repo, commit = installed_commit(out_dir, tvm_repo, tvm_commit)
    config = asv_config(out_dir, repo)

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

    text = _summary_text(warm, commit, out_dir, asv_status, asv_s, publish_status, archived, log_path)
    # asv exits 2 when a benchmark failed; a skipped combination is not a failure.
    return RunSummary(text, 0 if asv_status == 0 and publish_status == 0 else 1)


def _summary_text(warm, commit, out_dir, asv_status, asv_s, publish_status, archived, log_path) -> str:
    records = warm["records"]
    lines = ["", f"{'workload':52s} {'dtype':8s} {'order':15s} {'ms':>9s} {'GFLOP/s':>8s} {'ULP mean':>9s} "
                 f"{'scaled':>8s} {'bound':>7s}  status"]
    for (wid, dtype, _target, order), r in records.items():
        head = f"{wid:52s} {dtype:8s} {order:15s}"
        if r["status"] == "ok":
            m = r["metrics"]
            lines.append(f"{head} {r['latency_s'] * 1e3:9.3f} {r['gflops']:8.2f} "
                         f"{m['ulp_mean']:9.3f} {m['scaled_error']:8.3f} {m['bound_fraction']:7.4f}  ok")
        else:
            lines.append(f"{head} {'':>45s}  {r['status']}: {r['reason'][:90]}")
    counts = {s: sum(r["status"] == s for r in records.values()) for s in ("ok", "skipped", "failed")}
    lines += [
        "",
        f"combinations: {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed",
        f"measure + compile + reference: {warm['seconds']:.1f} s (references {warm['reference_s']:.1f} s)",
        f"asv run: {asv_s:.1f} s, exit {asv_status}; publish exit {publish_status}; log {log_path}",
        f"results: {out_dir / 'results'} (commit {commit[:12]})",
        f"html:    {out_dir / 'html' / 'index.html'}",
    ]
    if archived:
        lines.append(f"previous results for this commit kept in {archived[0].parent}")
    return "\n".join(lines)
