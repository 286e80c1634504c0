"""The verified history: asv results of the suite and what each run kept beside them, loaded once.

``load(results_dir, tvm_repo)`` gives a :class:`History`: the commits that have results, oldest
first; for every benchmark and parameter combination (workload x dtype x target x order, per
machine) the value at each commit; and each commit's side data (``suite.core.runstore``: timing
samples, failure reasons, whose tuning records replayed, build notes, maps, the values each
benchmark reported) and the re-measurements earlier gates kept. Values keep asv's distinction:
``None`` means the benchmark failed (asv stores null), NaN means it was skipped.

Nothing is trusted piecemeal: every file is checked when it is loaded (asv's results, machine and
benchmark files field by field, side data against its seal, and in a kept history the machine and
benchmark files and build logs against the seal of the keep), every asv value of a commit with side
data is checked against the value its benchmark reported, and asv's latency against the median of
the sealed samples; a mismatch names both files. A run in progress in the directory is refused
(its commit is half-written); a run that was killed is undone first. Report and gate read only
this object, so they judge the same data.

Order of the commits, best source first:

1. a TVM clone (``--tvm-repo``, or the ``repo`` of the ``asv.installed.json`` that
   ``tvm-suite run`` writes next to ``results/``): ``git rev-list --topo-order --date-order``,
   so a parent always comes before its child and otherwise commit time decides (release tags
   sit on release branches, not on main: they are ordered by time);
2. otherwise the commit date asv stored in each results file.

Every unreadable input raises :class:`suite.errors.UserError` naming the file.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from suite import git, tracked
from suite.asv_plumbing import config as asvconf
from suite.core import retimings, run_journal, run_place, runstore
from suite.core.combo import PARAM_NAMES
from suite.errors import UserError
from suite.history import keep

DEFAULT_COMMIT_URL = "https://github.com/apache/tvm/commit/"


class ResultsError(UserError):
    pass


@dataclass(frozen=True)
class Series:
    """One parameter combination of the benchmark grid, on one machine."""

    workload: str
    dtype: str
    target: str
    order: str
    machine: str

    def as_dict(self) -> dict:
        return {"workload": self.workload, "dtype": self.dtype, "target": self.target,
                "order": self.order, "machine": self.machine}

    @property
    def ids(self) -> tuple[str, str, str, str]:
        return self.workload, self.dtype, self.target, self.order


@dataclass(frozen=True)
class Commit:
    hash: str
    date_ms: int | None  # commit date (git, else the one asv stored)
    tags: tuple[str, ...] = ()
    url: str = ""

    @property
    def short(self) -> str:
        return self.hash[:10]

    @property
    def label(self) -> str:
        return self.tags[0] if self.tags else self.short

    def as_dict(self) -> dict:
        return {"hash": self.hash, "label": self.label, "tags": list(self.tags), "url": self.url,
                "date": _iso(self.date_ms)}


@dataclass(frozen=True)
class History:
    results_dir: Path
    commits: tuple[Commit, ...]  # oldest first
    #: metric name -> Series -> commit hash -> value (None: failed, NaN: skipped)
    values: dict[str, dict[Series, dict[str, float | None]]]
    machines: tuple[str, ...]
    files: tuple[Path, ...]
    ordering: str  # how the commits were ordered, in words
    commit_url: str
    repo: Path | None = None  # the TVM clone that ordered the commits
    #: (commit hash, machine) -> what its run kept beside asv's results, verified (runstore.SideData)
    side: dict = field(default_factory=dict)
    #: (baseline hash, candidate hash) -> what earlier gates found by timing suspects again
    remeasured: dict = field(default_factory=dict)
    #: what was done to a run killed before it completed, before loading (one line each)
    recovered: tuple[str, ...] = ()

    @property
    def run_dir(self) -> Path:
        return run_place.of_results(self.results_dir)

    def kept(self, commit_hash: str, machine: str) -> runstore.SideData:
        """What the run of ``commit_hash`` on ``machine`` kept (``kept`` False: nothing)."""
        return (self.side.get((commit_hash, machine))
                or runstore.SideData(commit_hash, False, self.run_dir / run_place.RUNS / machine / commit_hash))

    def unkept(self, commit_hash: str) -> tuple[runstore.SideData, ...]:
        """Where ``commit_hash`` has asv's results but no side data (results of a plain `asv run`,
        or a ``results/`` copied without its ``runs/``): one entry per machine, naming where the
        side data would be. The checks that need it are DATA MISSING there, never guessed."""
        return tuple(kept for (commit, _machine), kept in sorted(self.side.items()) if commit == commit_hash
                     and not kept.kept)

    def index(self, commit_hash: str) -> int:
        for i, commit in enumerate(self.commits):
            if commit.hash == commit_hash:
                return i
        raise ResultsError(f"no results for commit {commit_hash} in {self.results_dir}")

    def series(self) -> list[Series]:
        found = set()
        for per_series in self.values.values():
            found.update(per_series)
        return sorted(found, key=lambda s: (s.workload, s.dtype, s.target, s.order, s.machine))

    def value(self, metric: str, series: Series, commit_hash: str):
        return self.values.get(metric, {}).get(series, {}).get(commit_hash)

    def resolve(self, name: str) -> Commit:
        """A commit by (a prefix of) its hash or by a tag name."""
        name = name.strip()
        if not name:
            raise ResultsError("empty commit hash")
        by_tag = [c for c in self.commits if name in c.tags]
        by_hash = [c for c in self.commits if c.hash.startswith(name.lower())] if len(name) >= 4 else []
        found = by_tag or by_hash
        if not found and len(name) < 4 and all(c in "0123456789abcdef" for c in name.lower()):
            raise ResultsError(f"commit {name!r} is too short to name a commit: give at least 4 hex digits "
                               "(or a tag)")
        if not found:
            known = ", ".join(c.label for c in self.commits)
            raise ResultsError(f"unknown commit {name!r}: {self.results_dir} has results for {known}")
        if len(found) > 1:
            raise ResultsError(f"commit {name!r} is ambiguous in {self.results_dir}: "
                               f"{', '.join(c.short for c in found)}")
        return found[0]


def finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _iso(date_ms):
    if date_ms is None:
        return None
    import datetime
    return datetime.datetime.fromtimestamp(date_ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# ----------------------------------------------------------------------------- reading


def _read_conf(path: Path) -> dict:
    try:
        return asvconf.read_conf(path)
    except UserError as err:
        raise ResultsError(str(err)) from None


#: The largest asv file read: a results file of the whole grid (thousands of combinations x 40
#: benchmarks) is a few MiB; one beyond this is refused by its size, before it is read.
MAX_FILE_BYTES = 256 << 20


def _json_file(path: Path, what: str):
    """The JSON value of a file asv wrote; ResultsError naming it when it cannot be read."""
    if not path.is_file():
        raise ResultsError(f"{path}: {'not a file' if path.exists() else 'missing'} ({what})")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ResultsError(f"{path}: {path.stat().st_size} bytes, too large for an {what} "
                               f"(at most {MAX_FILE_BYTES >> 20} MiB)")
        return json.loads(path.read_bytes().decode("utf-8"))
    except OSError as err:
        raise ResultsError(f"{path}: unreadable {what} ({err.strerror or err})") from None
    except RecursionError:
        raise ResultsError(f"{path}: malformed {what} (nested too deep)") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ResultsError(f"{path}: unreadable {what} ({str(err).splitlines()[0]})") from None


def _text(v):
    return isinstance(v, str)


def _texts(v):
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


#: The columns asv 0.6 writes in every results file (asv/results.py, Results.save).
_ASV_COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
                "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
#: The fields of an asv 0.6 machine file and results file, and what each must be: a results file
#: with a field of another type is damaged, whichever field it is (the gate never judges on one).
_MACHINE_FIELDS = {"machine": _text, "os": _text, "arch": _text, "cpu": _text, "num_cpu": _text, "ram": _text,
                   "version": lambda v: v == 1}
_RESULT_FIELDS = {
    "commit_hash": lambda v: isinstance(v, str) and run_place.COMMIT.fullmatch(v) is not None,
    "env_name": _text, "date": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "params": _texts, "python": _text, "requirements": lambda v: isinstance(v, dict), "env_vars": _texts,
    "result_columns": lambda v: v == _ASV_COLUMNS,
    "results": lambda v: isinstance(v, dict), "durations": lambda v: isinstance(v, dict) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values()),
    "version": lambda v: v == 2,
}


def _check_fields(path: Path, data, fields: dict, what: str) -> None:
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: malformed {what} (not a JSON object)")
    for name, ok in fields.items():
        if name not in data:
            raise ResultsError(f"{path}: malformed {what} (no {name!r})")
        if not ok(data[name]):
            raise ResultsError(f"{path}: malformed {what} ({name!r} is {data[name]!r:.60})")


def _check_results_entries(path: Path, data: dict) -> None:
    """Every benchmark's entry: one value per parameter combination, numbers or null (failed)."""
    columns = data["result_columns"]
    for name, entry in data["results"].items():
        if not isinstance(entry, list) or len(entry) > len(columns) or len(entry) < 2:
            raise ResultsError(f"{path}: malformed results of {name} (not a row of {', '.join(columns[:2])}, ...)")
        values, params = entry[0], entry[1]
        if not isinstance(params, list) or not all(isinstance(p, list) and all(isinstance(x, str) for x in p)
                                                   for p in params):
            raise ResultsError(f"{path}: malformed parameters of {name}")
        expected = math.prod(len(p) for p in params)
        if values is None:  # asv writes null for a benchmark whose every combination failed
            continue
        if not isinstance(values, list) or len(values) != expected:
            raise ResultsError(f"{path}: {name} has {len(values) if isinstance(values, list) else 'no list of'} "
                               f"values for {expected} parameter combinations")
        if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
            raise ResultsError(f"{path}: a value of {name} is not a number")


def _check_machine_file(path: Path) -> str:
    data = _json_file(path, "machine file (asv writes machine.json beside each machine's results)")
    _check_fields(path, data, _MACHINE_FIELDS, "machine file")
    return data["machine"]


def _load_result(path: Path, machine_name: str):
    from asv import results, util

    data = _json_file(path, "asv results file")
    _check_fields(path, data, _RESULT_FIELDS, "asv results file")
    _check_results_entries(path, data)
    try:
        result = results.Results.load(str(path), machine_name=machine_name)
        keys = list(result.get_all_result_keys())
        for key in keys:  # touch everything once so structural damage shows up here
            params = result.get_result_params(key)
            if params is not None:
                result.get_result_value(key, params)
    except util.UserError as err:
        raise ResultsError(f"{path}: unreadable asv results file ({err})") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError) as err:
        raise ResultsError(f"{path}: unreadable asv results file ({type(err).__name__}: {err})") from None
    return result


@functools.lru_cache(maxsize=None)  # a history repeats a few hundred parameter values thousands of times
def _decode(param: str):
    try:
        return ast.literal_eval(param)
    except (ValueError, SyntaxError):
        return param


def _order_by_git(repo: Path, hashes: list[str], asv_dates: dict[str, int]):
    """(ordered hashes, dates, tags, note) from the clone ``repo``."""
    checked = git.git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)",
                      stdin="".join(f"{h}^{{commit}}\n" for h in hashes)).splitlines()
    known = [h for h, line in zip(hashes, checked) if line.endswith(" commit")]
    unknown = [h for h in hashes if h not in known]
    dates, tags = {}, {}
    if known:
        listed = git.git(repo, "rev-list", "--topo-order", "--date-order", *known).split()
        wanted = set(known)
        ordered = [h for h in listed if h in wanted][::-1]
        for line in git.git(repo, "show", "-s", "--format=%H %ct", *known).splitlines():
            h, _, ct = line.partition(" ")
            dates[h] = int(ct) * 1000
        for line in git.git(repo, "for-each-ref", "refs/tags",
                         "--format=%(objectname) %(*objectname) %(refname)").splitlines():
            parts = line.split()
            if len(parts) == 3:
                obj, peeled, tag = parts
            elif len(parts) == 2:
                (obj, tag), peeled = parts, ""
            else:
                continue
            tag = tag.removeprefix("refs/tags/")
            for h in (obj, peeled):
                if h in wanted:
                    tags.setdefault(h, []).append(tag)
    else:
        ordered = []
    note = f"commits ordered by the history of the clone {repo.name} (git rev-list --topo-order --date-order)"
    for h in sorted(unknown, key=lambda x: asv_dates.get(x) or 0):
        date = asv_dates.get(h) or 0
        position = next((i for i, k in enumerate(ordered) if (dates.get(k) or 0) > date), len(ordered))
        ordered.insert(position, h)
        dates[h] = asv_dates.get(h)
    if unknown:
        note += f"; {len(unknown)} commit(s) not in that clone placed by the date asv stored"
    for values in tags.values():
        values.sort(key=lambda t: (not t.startswith("v"), "rc" in t or "dev" in t, t))
    return ordered, dates, tags, note


def load(results_dir, tvm_repo=None) -> History:
    """Every asv results file under ``results_dir`` and every file its runs kept, verified;
    commits ordered by ``tvm_repo`` when given. Links are resolved once: a results directory given
    through a symbolic link is read, with its side data, as the real directory it points to."""
    if not Path(results_dir).is_dir():
        raise ResultsError(f"results directory {results_dir} does not exist")
    results_dir = run_place.real_results(results_dir)
    run_dir = run_place.of_results(results_dir)
    recovered = tuple(run_journal.recover(run_dir))  # refuses a run in progress
    try:
        return _load(results_dir, tvm_repo, run_dir, recovered)
    except UserError as err:  # what recovery did is said all the same
        if not recovered:
            raise
        raise type(err)(f"{err} (before that, recovered: {'; '.join(recovered)})") from None


def _load(results_dir: Path, tvm_repo, run_dir: Path, recovered: tuple[str, ...]) -> History:
    run_journal.check_idle(run_dir)
    # a kept history: asv's machine and benchmark files and the build logs as kept; one whose seal is
    # missing is refused (keep.signs), never read as a run's own directory with nothing to verify
    keep.verify(run_dir)
    loaded, files, machines = _read_results(results_dir)
    values, asv_dates, sources = _values(loaded)
    hashes = sorted(asv_dates.keys() | {r.commit_hash for _m, r, _p in loaded})
    side = {(r.commit_hash, m): runstore.load(run_place.Place(run_dir, m, r.commit_hash)) for m, r, _p in loaded}
    _verify(values, side, sources)
    _add_kept_values(values, side)
    commits, note, commit_url, repo = _commits(results_dir, tvm_repo, hashes, asv_dates)
    return History(results_dir, tuple(commits), values, tuple(sorted(set(machines))), tuple(files), note,
                   commit_url, repo if repo is not None and not _versions_repo(repo, results_dir) else None,
                   side, retimings.load_remeasured(run_dir), recovered)


def _add_kept_values(values, side: dict) -> None:
    """The metrics asv does not record (suite.tracked: not lower-is-better) from what each run kept."""
    for (commit, machine), kept in side.items():
        for (ids, benchmark_class), reported in kept.values.items():
            for name, value in reported.items():
                metric = tracked.BY_NAME.get(name)
                if metric is not None and not metric.in_asv and f"{metric.module}.{metric.cls}" == benchmark_class:
                    values.setdefault(name, {}).setdefault(Series(*ids, machine=machine), {})[commit] = value


class _Lazy:
    """A kept file's path, made only where a message names it (a history checks thousands)."""

    def __init__(self, file, relative, *args):
        self.file, self.relative, self.args = file, relative, args

    def __str__(self) -> str:
        return str(self.file(self.relative(*self.args)))

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def _verify(values, side: dict, sources: dict) -> None:
    """Every asv value of a commit with side data against the value its benchmark reported
    (``values/``), and asv's latency against the median of the sealed samples: a mismatch names
    both files (ResultsError). asv's null (failed) or NaN (skipped) where the benchmark reported a
    number is a mismatch too, never a failed or skipped combination."""
    for name, per_series in values.items():
        metric = tracked.get(name)
        benchmark_class = f"{metric.module}.{metric.cls}"
        for series, per_commit in per_series.items():
            for commit, value in per_commit.items():
                kept = side[commit, series.machine]
                if not kept.kept:
                    continue
                where = f"{sources[commit, series.machine]}: {metric.benchmark} of {' '.join(series.ids)}"
                reported = kept.values.get((series.ids, benchmark_class), {}).get(name)
                kept_file = _Lazy(kept.file, run_place.values_relative, benchmark_class, series.ids)
                if not finite(value):
                    if reported is not None and (value is None or finite(reported)):
                        asv_says = "null (asv's mark of a failed benchmark)" if value is None else "NaN (skipped)"
                        raise ResultsError(f"{where} is {asv_says}, but {kept_file} says {reported:.6g}: asv's "
                                           "results and the run's side data disagree")
                    continue
                if reported is None:
                    raise ResultsError(f"{where} is {value:.6g}, but the run of {commit[:12]} kept no such value "
                                       f"({kept_file}): asv's results and the run's side data disagree")
                if not math.isclose(reported, value, rel_tol=1e-12, abs_tol=0.0):
                    raise ResultsError(f"{where} is {value:.6g}, but {kept_file} says {reported:.6g}: asv's results "
                                       "and the run's side data disagree")
                samples = kept.timings.get(series.ids)
                timings_file = _Lazy(kept.file, run_place.relative, "timings", series.ids)
                if name == "latency" and samples is None:  # a run keeps the samples of every latency it reports
                    raise ResultsError(f"{where} is {value:.6g}, but the run of {commit[:12]} kept no timing samples "
                                       f"({timings_file}): asv's latency and the run's side data disagree")
                if name == "latency" and not math.isclose(samples.median, value, rel_tol=1e-12):
                    raise ResultsError(f"{where} is {value:.6g}, but the median of {timings_file} is {samples.median:.6g}: "
                                       "asv's latency and the run's timing samples disagree")


def _read_results(results_dir: Path) -> tuple[list, list[Path], list[str]]:
    """[(machine, asv Results, its file)], the files and the machines, every file checked first."""
    machine_dirs = sorted({Path(root) for root, _dirs, files in os.walk(results_dir)
                           if any(f.endswith(".json") and f not in ("benchmarks.json", "machine.json")
                                  for f in files)})
    benchmarks_file = results_dir / "benchmarks.json"
    if benchmarks_file.exists():
        found = _json_file(benchmarks_file, "asv benchmark list")
        if not isinstance(found, dict) or found.get("version") != 2 or not all(
                isinstance(v, dict) for k, v in found.items() if k != "version"):
            raise ResultsError(f"{benchmarks_file}: malformed asv benchmark list")

    from asv import results as asv_results

    for path in sorted(results_dir.glob("*/*.json")):
        if not path.is_file():  # asv would pass it by: the commit would silently vanish
            raise ResultsError(f"{path}: not a file (an asv results file was expected)")
    machines = [_check_machine_file(directory / "machine.json") for directory in machine_dirs]
    loaded, files = [], []
    for root, filename, machine_name in asv_results.iter_results_paths(str(results_dir)):
        path = Path(root) / filename
        loaded.append((machine_name, _load_result(path, machine_name), path))
        files.append(path)
    if not loaded:
        raise ResultsError(f"{results_dir} holds no asv results (no commits): run `tvm-suite run` first")
    return loaded, files, machines


def _values(loaded) -> tuple[dict[str, dict[Series, dict[str, float | None]]], dict[str, int], dict]:
    """{metric: {series: {commit: value}}} of the tracked metrics, the date asv stored per commit,
    and the file each (commit, machine) came from."""
    values: dict[str, dict[Series, dict[str, float | None]]] = {}
    asv_dates: dict[str, int] = {}
    sources = {}
    for machine_name, result, path in loaded:
        commit = result.commit_hash
        sources[commit, machine_name] = path
        if result.date is not None:
            asv_dates[commit] = int(result.date)
        for key in result.get_all_result_keys():
            metric = tracked.BY_BENCHMARK.get(key)
            params = result.get_result_params(key)
            if metric is None or not params or len(params) != len(PARAM_NAMES):
                continue
            decoded = [[str(_decode(p)) for p in values_of] for values_of in params]
            for combo, value in zip(itertools.product(*decoded), result.get_result_value(key, params)):
                series = Series(*combo, machine=machine_name)
                if value is not None and not isinstance(value, (int, float)):
                    raise ResultsError(f"{path}: value of {key} is not a number: {value!r}")
                per_commit = values.setdefault(metric.name, {}).setdefault(series, {})
                if value is None and finite(per_commit.get(commit)):
                    continue  # another environment of the same commit has the value
                per_commit[commit] = None if value is None else float(value)
    return values, asv_dates, sources


def _commits(results_dir: Path, tvm_repo, hashes: list[str], asv_dates: dict[str, int]):
    """(the commits in order, how they were ordered, the commit link prefix, the TVM clone read)."""
    # Where the repository and the commit links come from.
    installed_conf = asvconf.run_config(results_dir)
    conf = _read_conf(installed_conf or asvconf.ASV_CONF)
    # An empty show_commit_url (the local versions repository of `tvm-suite run`) means no links.
    commit_url = conf.get("show_commit_url", DEFAULT_COMMIT_URL)
    repo = Path(tvm_repo) if tvm_repo else None
    if repo is not None and not git.is_repo(repo):
        raise ResultsError(f"--tvm-repo {repo} is not a git repository")
    if repo is None and installed_conf and conf.get("repo") and git.is_repo(asvconf.repo_of(installed_conf)):
        repo = asvconf.repo_of(installed_conf)
    if repo is not None:
        ordered, dates, tags, note = _order_by_git(repo, hashes, asv_dates)
    else:
        ordered = sorted(hashes, key=lambda h: (asv_dates.get(h) or 0, h))
        dates, tags = dict(asv_dates), {}
        note = "commits ordered by the commit date asv stored (give --tvm-repo to order by TVM's history)"
    # Commits of the installed TVM that `tvm-suite run` filed under its local versions repository
    # (wheels carry no git hash): named by their tag there (v<version>), with no upstream link.
    versions = _version_tags(results_dir.parent / "tvm-versions", hashes)
    commits = [Commit(h, dates.get(h), tuple(tags.get(h) or versions.get(h, [])),
                      f"{commit_url}{h}" if commit_url and h not in versions else "")
               for h in ordered]
    return commits, note, commit_url, repo


def _versions_repo(repo: Path, results_dir: Path) -> bool:
    return Path(repo).resolve() == (results_dir.parent / "tvm-versions").resolve()


def _version_tags(repo: Path, hashes) -> dict[str, list[str]]:
    if not git.is_repo(repo):
        return {}
    found: dict[str, list[str]] = {}
    for line in git.git(repo, "for-each-ref", "refs/tags", "--format=%(objectname) %(refname:short)",
                        check=False).splitlines():
        commit, _, tag = line.partition(" ")
        if commit in hashes:
            found.setdefault(commit, []).append(tag)
    return found
