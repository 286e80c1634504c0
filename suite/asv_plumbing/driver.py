"""The asv driver: the project's asv configuration, asv commands, and the results they leave.

`tvm-suite run` (:mod:`suite.jobs.run`) and `tvm-suite history`
(:mod:`suite.history.commits`) both drive asv through this module: one reader of
``asv.conf.json`` (which has ``//`` comment lines), one writer of the per-run configuration, one
way to call asv and log it, and the bookkeeping of result files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from asv import machine as asv_machine, results as asv_results, util as asv_util
from asv.benchmarks import Benchmarks

from suite import cache, children
from suite.asv_plumbing.config import BENCHMARKS, IMPORT_ROOT, read_conf
from suite.core import run_journal, run_place
from suite.errors import UserError
from suite.asv_plumbing import dashboard
from suite.progress import Progress

#: asv benchmark attributes of a quick run: few samples, one round, no warm-up.
QUICK_ATTRIBUTES = {"repeat": 3, "rounds": 1, "warmup_time": 0}


class ToolFailed(UserError):
    pass


def machine_name(given: str | None) -> str:
    """The machine results are filed under: the one given, else asv's own choice (the host name)."""
    return given or asv_machine.Machine.get_unique_machine_name()


@dataclass
class RunSummary:
    text: str
    exit_status: int
    facts: dict | None = None  #: what ``--json`` prints


#: The keys of an asv configuration that name a directory asv reads: written relative to the
#: directory asv runs in, wherever they are. The directories it writes are relative where they lie
#: inside it (a history's environments elsewhere stay absolute: asv's install commands run in them).
READ_KEYS, WRITTEN_KEYS = ("repo", "benchmark_dir"), ("results_dir", "html_dir", "env_dir")


def write_conf(out_dir: Path, name: str, repo: Path, **overrides) -> Path:
    """The project's asv.conf.json for one run, as ``out_dir/name``: ``repo`` and asv's output
    directories under ``out_dir``, then ``overrides``. asv runs in ``out_dir`` (see :func:`asv`), so
    the directories it names are written relative to it (``results``, ``../tvm``, the suite's
    benchmarks; see READ_KEYS): the configuration of `run` names no absolute path of this machine,
    the output directory can be moved or copied, and what lies inside it still works there. The
    file is written again by every run."""
    conf = read_conf()
    conf.update({"repo": str(repo), "benchmark_dir": str(BENCHMARKS), "results_dir": "results",
                 "html_dir": "html", "env_dir": "env"})
    conf.update(overrides)
    out = Path(out_dir).resolve()
    for key in READ_KEYS + WRITTEN_KEYS:
        where = (out / conf[key]).resolve()
        inside = where == out or out in where.parents
        conf[key] = Path(os.path.relpath(where, out)).as_posix() if inside or key in READ_KEYS else str(where)
    path = out_dir / name
    cache.write_text(path, json.dumps(conf, indent=1))
    return path


_PERCENT = re.compile(r"^\[\s*(\d+(?:\.\d+)?)%\]")
#: What of asv's progress line is shown: the benchmark it is at (asv's tables and "For parameters"
#: lines share the prefix, and are not shown).
_BENCHMARK = re.compile(r"^(?:\.\.\.)?[\w.]*\.(?:track|time|mem|peakmem)_\w+")


def asv(config: Path, *args: str, log: Path, phase: str | None = None,
        context: run_place.RunContext | None = None) -> int:
    """Run ``asv ARGS`` with ``config`` in the directory of ``config`` (its paths are relative to
    it), its output appended to ``log``; with ``phase``, asv's own progress (its ``[ 12.50%]``
    lines) is shown on the terminal; with ``context``, asv and its benchmark processes are told the
    run's (in their environment: this process's stays as it is)."""
    args = ["-m", "asv", "--config", str(config), *args]
    shown = Progress(phase, 100.0, counted=False) if phase else None
    label = ""
    places = _places(config.parent)
    with log.open("a") as handle:
        handle.write(f"$ {_logged(' '.join([sys.executable, *args]), config.parent, places)}\n")
        handle.flush()
        # asv drops PYTHONPATH from its benchmark processes unless it comes as ASV_PYTHONPATH: they
        # must import this very suite (its code is part of every cache key), wherever it is found.
        paths = [str(IMPORT_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = {**os.environ, **(context.to_env() if context else {}),
               "ASV_PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
        # asv ends with this process: an interrupted or killed run must not leave asv behind to
        # write results after the run has put the previous ones back.
        process = children.start_python(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=config.parent,
                                        text=True, errors="replace", env=env)
        try:
            for line in process.stdout:
                handle.write(_logged(line, config.parent, places))  # asv's lines and the plugin's alike
                found = _PERCENT.match(line.strip())
                if shown and found and "···" in line:
                    benchmark = _BENCHMARK.match(line.strip().split("···")[-1].strip())
                    label = benchmark.group(0) if benchmark else label
                    shown.update(float(found.group(1)), label)
            status = process.wait()
        except BaseException:
            if shown:
                shown.close()
            children.end(process)
            raise
    if shown:
        shown.finish()
    return status


#: Directories of this machine a logged line may name, by the name a log gives them instead
#: (:func:`_logged`): the variables that name them, the home directory as ``~``.
_NAMED_PLACES = (("TVM_SUITE_CACHE", "$TVM_SUITE_CACHE"), ("TVM_SUITE_ASV_ASSETS", "$TVM_SUITE_ASV_ASSETS"),
                 ("XDG_CACHE_HOME", "$XDG_CACHE_HOME"), ("HOME", "~"))


def _places(run_dir: Path) -> list[tuple[re.Pattern, str]]:
    """(pattern of a directory, its name in a log) for :func:`_logged`, the longest first (a place
    inside another is named by its own name): the run directory (``.``, and a path inside it
    relative to it), then each of _NAMED_PLACES that is set, as given and with links resolved."""
    found = {}
    for variable, name in (("", "."), *_NAMED_PLACES):
        given = Path(run_dir) if not variable else Path(os.environ.get(variable) or "/").expanduser()
        for where in (given.absolute(), given.resolve()):
            if where != Path(where.anchor):  # never the root itself
                found.setdefault(str(where), name)
    # a directory is named where the name ends there: not /tmp/a in /tmp/ab
    return [(re.compile(re.escape(where) + r"(/|(?![\w-]|\.[\w-]))"), name)
            for where, name in sorted(found.items(), key=lambda item: -len(item[0]))]


def _logged(line: str, run_dir: Path, places=None) -> str:
    """A line for a log kept in ``run_dir``, naming no absolute path of this machine (the log
    travels with the run directory): the run directory as ``.`` (a path inside it relative to it),
    the interpreter by its name, the suite's cache, the dashboard's assets and the home directory by
    the variables that name them (``$TVM_SUITE_CACHE``, ``$TVM_SUITE_ASV_ASSETS``,
    ``$XDG_CACHE_HOME``, ``~``)."""
    line = line.replace(sys.executable, Path(sys.executable).name)
    for pattern, name in places if places is not None else _places(run_dir):
        line = pattern.sub(lambda m: ("" if name == "." else name + "/") if m.group(1) else name, line)
    return line


def machine(config: Path, log: Path, name: str | None = None) -> list[str]:
    """``asv machine --yes``: the machine file asv files results under, named ``name`` (asv's
    default: the host name); the arguments that make ``asv run`` and ``asv find`` use it."""
    named = ["--machine", name] if name else []
    if asv(config, "machine", *named, "--yes", log=log) != 0:
        raise ToolFailed(f"asv machine failed; see {log}")
    return named


def publish(config: Path, html_dir: Path, log: Path) -> tuple[int, dashboard.Offline]:
    """``asv publish``, then its pages made to work offline (:mod:`suite.asv_plumbing.dashboard`): asv's
    exit status, and what the dashboard step did (a page that still needs a network is no failure
    of the run; it says why, in one line)."""
    status = asv(config, "publish", log=log)
    offline = dashboard.make_offline(html_dir)
    with log.open("a") as handle:
        handle.write(f"dashboard: {_logged(offline.line(), config.parent)}\n")
    return status, offline


def quick_args(quick: bool) -> list[str]:
    args = []
    if quick:
        for name, value in QUICK_ATTRIBUTES.items():
            args += ["-a", f"{name}={value}"]
    return args


def check_results(results_dir: Path) -> None:
    """Refuse to run over result files asv cannot read (asv would stop with a traceback)."""
    for path in sorted(Path(results_dir).glob("*/*.json")):
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or ("commit_hash" not in data and path.name != "machine.json"):
                raise ValueError("not an asv result file")
        except (ValueError, UnicodeDecodeError, RecursionError) as err:
            raise UserError(f"corrupt asv result file {path}: {(str(err) or 'nested too deep').splitlines()[0]}; "
                            "move it away and run again") from None


def archive_previous(results_dir: Path, commit: str, out_dir: Path) -> list[Path]:
    """Copy result files asv is about to update for ``commit``, so nothing is lost silently."""
    kept = []
    for path in Path(results_dir).glob(f"*/{commit[:8]}-*.json"):
        target = run_journal.archive_path(out_dir, path)
        shutil.copy2(path, target)
        kept.append(target)
    return kept


@dataclass(frozen=True)
class ResultCounts:
    """What asv filed for one commit: its result file, how many values are ok, skipped (NaN) and
    failed (null), and asv's build seconds."""

    path: Path
    ok: int
    skipped: int
    failed: int
    build_s: float


def result_counts(results_dir: Path, commit: str) -> ResultCounts | None:
    """The counts of ``commit``'s results; None where asv filed none."""
    for path in Path(results_dir).glob(f"*/{commit[:8]}-*.json"):
        data = json.loads(path.read_text())
        if data.get("commit_hash") != commit:
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
        return ResultCounts(path, ok, skipped, failed, float(data.get("durations", {}).get("<build>", 0.0)))
    return None


def finished_results(results_dir: Path, machine_name: str, commit: str) -> list[Path]:
    """asv's results files of ``commit`` on ``machine_name`` once asv has finished the commit there;
    [] before.

    Finished: the commit has a results file, and every one it has holds a result (a value, NaN or
    null) of every benchmark of asv's ``benchmarks.json`` at that benchmark's version: what `asv run
    --skip-existing` takes for nothing left to run. asv 0.6 writes a commit's file once, after the
    commit's last benchmark: a commit it was interrupted in keeps what it had, no file or an earlier
    run's that lacks the benchmarks asv found since. A file asv cannot read is not finished either."""
    try:
        benchmarks = asv_util.load_json(str(Path(results_dir) / "benchmarks.json"), api_version=Benchmarks.api_version)
    except (OSError, asv_util.UserError):
        return []
    found = []
    for path in sorted((Path(results_dir) / machine_name).glob(f"{commit[:8]}-*.json")):
        try:
            result = asv_results.Results.load(str(path))
        except (OSError, asv_util.UserError):
            return []
        if result.commit_hash != commit:  # another commit of the same 8-digit prefix
            continue
        if not set(benchmarks) <= result.get_result_keys(benchmarks):
            return []
        found.append(path)
    return found


def dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total
