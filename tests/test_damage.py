"""The damage matrix: every file the suite reads, damaged every way, read through the public
interface (the `tvm-suite` command, in this process so that a traceback fails the test).

The contract, for each file kind x damage:
- the cache (files a number is computed from): computed again, to the very same values;
- what a run keeps (asv's results and machine files, the side data in runs/<machine>/<commit>.zip,
  the bundle itself and each member of it, damaged behind its seal), the
  thresholds and the tuning records: a one-line error naming the file, exit 2 (the gate: 2, never
  0 or 1); never a traceback, never a number computed from damaged data;
- files no command reads after the run wrote them (logs, asv's HTML, the report's output) are
  listed as such, and the commands are checked to give the same answer with them damaged.

Every file the fixture runs and measurements leave is matched to a row of a table below (test
``test_every_file_kind_has_its_row``): a new kind of file cannot appear without its row.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from asv_runs import (WORKLOAD, bundle_entries, plant, plant_file, qf_two_commit_results, two_commit_results,
                      write_entries)
from conftest import run_cli
from suite import cache, cli, targets
from suite.core import measurement, retimings, run_place, tuning_records, workloads
from suite.core import entries as measure_entries
from suite.core.combo import Combo
from suite.targets import hexagon, hvx_toolchain

pytestmark = pytest.mark.slow

DAMAGES = ("truncated", "garbage", "zero length", "deleted", "directory", "non-UTF-8")


def damage(path: Path, how: str) -> None:
    if how == "deleted":
        path.unlink()
    elif how == "directory":
        path.unlink()
        path.mkdir()
    else:
        data = path.read_bytes()
        if how == "truncated":
            data = data[: len(data) // 2]
        elif how == "garbage":
            middle = max(0, len(data) // 2 - 32)
            data = data[:middle] + bytes(np.random.default_rng(len(data)).integers(0, 256, 64, dtype=np.uint8)) \
                + data[middle + 64:]
        elif how == "zero length":
            data = b""
        elif how == "non-UTF-8":
            data = b"\xff\xfe\x80" + data[3:]
        _write_anew(path, data)


def _write_anew(path: Path, data: bytes) -> None:
    """Write ``path`` as a new file: this process may hold the old one mapped (a kernel library
    an in-process measurement loaded), and truncating a mapped file in place crashes the process
    that maps it (SIGBUS or SIGSEGV when the library is touched again, at the latest at exit)."""
    path.unlink(missing_ok=True)
    path.write_bytes(data)


def json_damages(path: Path) -> list[str]:
    """For a JSON object: each top-level field given a value of another type, and each list one
    element short ("wrong lengths")."""
    try:
        value = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return []
    if not isinstance(value, dict):
        return ["wrong type: the whole file"]
    found = [f"wrong type: {key}" for key in value]
    found += [f"wrong length: {key}" for key, item in value.items() if isinstance(item, list) and item]
    return found


def damage_json(path: Path, how: str) -> None:
    value = json.loads(path.read_text())
    kind, _, key = how.partition(": ")
    if key == "the whole file":
        value = {"not": value}
    elif kind == "wrong type":
        item = value[key]
        value[key] = ("text" if not isinstance(item, str) else 12345) if not isinstance(item, (dict, list)) \
            else ([item] if isinstance(item, dict) else {"list": item})
    else:
        value[key] = value[key][:-1]
    _write_anew(path, json.dumps(value).encode())


def run(capsys, *argv) -> tuple[int, str, str]:
    """`tvm-suite ARGV` in this process: (exit status, stdout, stderr); an exception escaping main()
    is a traceback, and fails the test."""
    capsys.readouterr()
    try:
        status = cli.main([str(a) for a in argv])
    except SystemExit as done:  # argparse
        status = done.code
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_naming(result, path: Path):
    status, out, err = result
    lines = err.strip().splitlines()
    assert status == 2, (status, out[-500:], err)
    assert len(lines) == 1 and lines[0].startswith("tvm-suite: error: "), err
    assert str(path) in lines[0] or str(path.parent) in lines[0], (str(path), lines[0])


# ----------------------------------------------------------------------------- what a run keeps

#: Files of a run directory: pattern -> the commands that read them ("gate", "report") or None for
#: files no command reads after the run wrote them.
RUN_FILES = {
    "results/*/machine.json": ("gate", "report"),
    "results/benchmarks.json": ("gate", "report"),
    "results/*/*.json": ("gate", "report"),
    "asv.installed.json": ("gate", "report"),
    # The side data (runs/<machine>/<commit>.zip, a bundle: "<bundle>/<member>" names a member) is
    # loaded whole and verified by every reader (suite.reporting.results.load).
    "runs/*/*.zip": ("gate", "report"),
    "runs/*/*.zip/manifest.json": ("gate", "report"),
    "runs/*/*.zip/build.json": ("gate", "report"),
    "runs/*/*.zip/timings/*.json": ("gate", "report"),
    "runs/*/*.zip/values/*/*.json": ("gate", "report"),
    "runs/*/*.zip/maps/*.npz": ("gate", "report"),
    "runs/*/*.zip/records/*.txt": ("gate", "report"),
    "runs/*/*.zip/failures/*.txt": ("gate", "report"),
    "runs/*/*.zip/code/*.txt": ("gate", "report"),    # each kernel's code identity
    "runs/*/*.zip/peers/*.json": ("gate", "report"),  # only where PyTorch is installed
    "runs/.gate/*.json": ("gate", "report"),      # re-measurements a gate or run kept (sealed)
    "runs/.lock": None,                           # the run directory's lock: its holder, in words
    "asv.log": None, "measure.log": None, "html/*": None, "report/*": None, "results-archive/*": None,
    "tvm-versions/*": None,
}


def run_kind(relative: str) -> str | None:
    return next((p for p in RUN_FILES if fnmatch.fnmatch(relative, p)), None)


@pytest.fixture(scope="module")
def llvm_run(tmp_path_factory):
    """The two-commit llvm run, with one combination planted as failed (its failure reason kept)."""
    results, repo, commits = two_commit_results(tmp_path_factory)
    base = tmp_path_factory.mktemp("damage-run") / "asv"
    shutil.copytree(results.parent, base, ignore=shutil.ignore_patterns("env*"))
    ids = (WORKLOAD, "float16", "llvm", "tuned")
    plant(base, commits[1], "bench_accuracy.Accuracy.track_ulp_mean", ids, None)
    plant_file(base, commits[1], run_place.relative("failures", ids), "seed failed: planted for the damage matrix")
    # a re-measurement a gate kept (the fixture's A/A pair had no suspect to time again)
    retimings.keep_remeasured(base, commits[0], commits[1], [
        {"ids": list(ids), "machine": "m", "verdict": "noisy", "remeasured": [[1.03, 0.01], [1.0, 0.5]],
         "samples": "0" * 16, "runtime": None}])
    marks = base.parent / "marks.toml"  # marks everything, so that the report reads every map
    marks.write_text("[divergence]\nmax_bias_shift = 0.0\nmin_z = 0.0\n")
    return base, repo, commits, marks


@pytest.fixture(scope="module")
def undamaged(llvm_run, tmp_path_factory):
    """The exit status of each command that reads a run (gate, report) on the undamaged run: the
    planted failure is NOT READY, and the report ends with the same verdict and exits with it."""
    base, repo, commits, marks = llvm_run
    found = {}
    for name, argv in _commands(base, repo, commits, marks, tmp_path_factory.mktemp("clean")).items():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            found[name] = cli.main([str(a) for a in argv])
        assert "Traceback" not in err.getvalue(), err.getvalue()
    assert found["gate"] == 1 and found["report"] == found["gate"]
    return found


def _commands(run_dir, repo, commits, marks, out):
    return {"gate": ["gate", "--results", run_dir / "results", "--commit", commits[1], "--tvm-repo", repo,
                     "--no-remeasure", "--thresholds", marks],
            "report": ["report", "--results", run_dir / "results", "--out", out, "--tvm-repo", repo,
                       "--thresholds", marks]}


def _run_files(run_dir: Path) -> list[str]:
    """Every file of the run, and every member of each commit's bundle as "<bundle>/<member>"."""
    found = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        found.append(path.relative_to(run_dir).as_posix())
        if path.suffix == ".zip" and path.parent.parent.name == run_place.RUNS:
            found += [f"{found[-1]}/{name}" for name in bundle_entries(path)]
    return found


def _damage_member(victim: Path, how: str, damage_file) -> None:
    """Damage the member ``victim`` ("<bundle>/<member>") behind the bundle's seal, as ``damage_file``
    damages a file: the member read out, damaged, and written back in its place (the manifest kept)."""
    bundle = next(p for p in victim.parents if p.suffix == ".zip")
    name = victim.relative_to(bundle).as_posix()
    members = bundle_entries(bundle)
    out = bundle.parent / f".{victim.name}.out"
    out.write_bytes(members.pop(name))
    damage_file(out, how)
    if out.is_dir():
        members[name] = None
    elif out.exists():
        members[name] = out.read_bytes()
    write_entries(bundle, members)
    shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)


def _run_cases():
    """(pattern, damage) for every run-file kind: the byte-level damages and, for JSON kinds, the
    per-field ones (expanded on the real file in the test)."""
    return [(pattern, how) for pattern, readers in RUN_FILES.items() if readers for how in DAMAGES + ("fields",)]


@pytest.mark.parametrize("pattern,how", _run_cases())
def test_damaged_run_files(llvm_run, undamaged, capsys, tmp_path, pattern, how):
    base, repo, commits, marks = llvm_run
    readers = RUN_FILES[pattern]
    relative = _candidate_file(base, pattern, commits[1])
    member = ".zip/" in relative
    if how == "fields" and member:
        bundle = bundle_entries(base / (relative.partition(".zip/")[0] + ".zip"))
        (tmp_path / "member.json").write_bytes(bundle[relative.partition(".zip/")[2]])
    kinds = [how] if how != "fields" else json_damages(tmp_path / "member.json" if member else base / relative)
    for one in kinds:
        copy = tmp_path / f"run-{kinds.index(one)}"
        shutil.copytree(base, copy)
        victim = copy / relative
        damage_file = damage_json if how == "fields" else damage
        _damage_member(victim, one, damage_file) if member else damage_file(victim, one)
        for name in readers:
            result = run(capsys, *_commands(copy, repo, commits, marks, tmp_path / f"out-{name}")[name])
            assert "Traceback" not in result[2]
            if pattern == "runs/*/*.zip" and one == "deleted":  # results without side data, as plain asv's:
                assert result[0] == 2 and "verdict: DATA MISSING" in result[1], (name, result)
                assert name == "report" or f"{victim} is missing" in result[1], result
                continue
            if _unchanged_allowed(pattern, one, name):
                assert result[0] == undamaged[name], (pattern, one, name, result)
                continue
            assert_one_line_naming(result, victim if one != "deleted" or "runs/" in relative else copy / "results")


def _candidate_file(run_dir: Path, pattern: str, commit: str) -> str:
    """The file of ``pattern`` the commands read for the candidate ``commit`` (or the only one)."""
    found = [f for f in _run_files(run_dir) if run_kind(f) == pattern]
    per_commit = [f for f in found if f"/{commit}.zip" in f or (f.startswith("results/") and f"/{commit[:8]}-" in f)]
    if not found and pattern == "runs/*/*.zip/peers/*.json":
        pytest.skip("no PyTorch here: the run kept no peer ratios")
    assert found, f"the fixture run has no {pattern}"
    # of the combinations' files, the seed's: it is the one marked (the report reads marked ones' maps)
    return sorted(per_commit or found, key=lambda f: WORKLOAD not in f)[0]


#: The fields of asv's configuration the suite reads (where the commits come from); the others are asv's.
CONF_FIELDS = ("repo", "results_dir", "html_dir", "show_commit_url", "benchmark_dir")


def _unchanged_allowed(pattern: str, how: str, command: str) -> bool:
    """Damages after which the data left is whole and the answer stands: deleting a file that only
    says where things come from, or a commit's results (the report then covers the other commit;
    the gate names the commit it lacks), or a field of asv's configuration the suite does not read."""
    if how == "deleted" and pattern in ("results/benchmarks.json", "asv.installed.json", "runs/.gate/*.json"):
        return True  # a deleted re-measurement: the gate times the suspects again, or says it did not
    if pattern == "asv.installed.json" and how.startswith("wrong") and how.partition(": ")[2] not in CONF_FIELDS:
        return True
    return how == "deleted" and pattern == "results/*/*.json" and command == "report"


@pytest.mark.parametrize("pattern", [p for p, readers in RUN_FILES.items() if readers is None])
def test_files_no_command_reads_change_nothing(llvm_run, undamaged, capsys, tmp_path, pattern):
    base, repo, commits, marks = llvm_run
    copy = tmp_path / "run"
    shutil.copytree(base, copy)
    victims = [copy / f for f in _run_files(copy) if run_kind(f) == pattern]
    for victim in victims:
        damage(victim, "garbage")
    after = {name: run(capsys, *argv)[0] for name, argv in _commands(copy, repo, commits, marks,
                                                                     tmp_path / "after").items()}
    assert after == undamaged


#: A write in flight (another test worker shares the session's cache): the cache's temporary names,
#: .NAME.tmp-*/ and .NAME.old-*/ (entries), mkstemp's .NAME.XXXXXXXX[.SUFFIX] (files), its probe.
IN_FLIGHT = re.compile(r"(^|/)\.[^/]*\.(tmp|old)-[^/]*/|(^|/)\.tvm-suite-probe-|(^|/)\.[^/]+\.[a-z0-9_]{8}(\.[^/.]+)?$")


@pytest.mark.longest
def test_every_file_kind_has_its_row(llvm_run, tmp_path_factory):
    base, *_ = llvm_run
    qf_dir, _, _ = qf_two_commit_results(tmp_path_factory)
    for run_dir in (base, qf_dir):
        unknown = [f for f in _run_files(run_dir) if run_kind(f) is None]
        assert not unknown, f"files of a run without a row in RUN_FILES: {unknown}"
    cache = Path(os.environ["TVM_SUITE_CACHE"])
    unknown = [f for f in sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file())
               if cache_kind(f) is None and not IN_FLIGHT.search(f)]
    assert not unknown, f"files of the cache without a row in CACHE_FILES: {unknown[:10]}"


# ----------------------------------------------------------------------------- the cache

#: Files of the cache: pattern -> how a damaged one is read again ("measure": the combination's own
#: entry; "entry": an entry its measurement reads, so the measurement is made again; "divergence";
#: "catalog"; "key": the digests of the suite's code, read once per process where a cache key is
#: first computed, so the measurement is looked up by a new process) or None (never read). The entries
#: a measurement reads through one function (the reference, the HVX model, the harness, the
#: emulations) are read through it after each damage, the measurement made again after each file's
#: first (_read_as_measured).
CACHE_FILES = {
    "source-digests/*": "key",
    "measure/*/record.json": "measure", "measure/*/output.npy": "measure", "measure/*/ieee_twin.npy": "measure",
    "measure/*/kernel.*": "measure",
    "reference/*/*": "entry", "hexagon-run/*/*": "entry", "hexagon-harness/*/*": "entry",
    "qfloat-model/*/*": "entry",
    "divergence/*/*": "divergence",
    "catalog/*/*": "catalog",
    "tune-logs/*": None,
    # `tvm-suite model`'s (and run's whole-model benchmarks'): read again by the model's next run
    "model-calls/*/*": "model", "model-weights/*/*": "model", "model-input/*/*": "model",
    "model-attribution/*/*": "model", "model-float64/*/*": "model",
}
#: The whole model whose kept entries are damaged: miniresnet on llvm, 2 inputs, with its attribution.
MODEL_ARGS = ("model", "--model", "miniresnet", "--dtypes", "float16", "--orders", "default", "--inputs", "2",
              "--attribute", "--json")
#: Cheap combinations (a matmul: a second to build and run, 0.3 s emulated) with a tuned order to compare
#: with default; the qfloat one has an IEEE twin and emulated runs.
MATMUL = "resnet50.matmul_add.2048-1000"
COMBOS = {"llvm": (MATMUL, "float16", "llvm", "tuned"), "qf": (MATMUL, "float16", "hexagon-v68-qf", "tuned")}
#: The kinds only a target with an emulator and the IEEE twin has; every other kind is damaged through
#: the llvm combination (the same code reads it for every target).
#: The kinds whose files are read through one lookup that computes them again whatever the damage
#: (a sealed record or manifest, a digest per file: one code path): the computation again is proven
#: after a case's first damage and after its first file's TYPE_CHANGES; every other damage need only
#: be seen by that lookup (_seen_as_damaged), as the measurement sees it before computing again.
#: (The model kinds alike, in _damaged_model_entries.)
SEEN_BY_LOOKUP = ("measure", "entry", "key", "divergence", "catalog")
#: The damages that change what lies at a file's place (nothing, a directory): code paths of their own.
TYPE_CHANGES = ("deleted", "directory")
#: The files of an entry its reader asks the cache for (cache.load_entry): suite.targets.hvx_toolchain's
#: model, suite.targets.hexagon's harness and emulations, the float64 reference, the divergence, a
#: model's catalog of workloads.
ENTRY_READS = {"qfloat-model/*/*": ("hvx_model.o", "vector_registers.json"), "hexagon-harness/*/*": ("harness.o",),
               "hexagon-run/*/*": ("output.npy", "run.json"), "reference/*/*": measurement.REFERENCE_FILES,
               "divergence/*/*": ("divergence.json", "maps.npz"), "catalog/*/*": ("workloads.json",),
               # suite.model's calls, weights, runs of an input, attributions and float64 logits
               "model-calls/*/*": ("calls.json",), "model-weights/*/*": ("weights.npz",),
               "model-input/*/*": ("logits.npy", "run.json"), "model-attribution/*/*": ("sums.npz", "run.json"),
               "model-float64/*/*": ("logits.npy", "run.json")}
QF_ONLY = ("measure/*/ieee_twin.npy", "measure/*/kernel.*", "hexagon-run/*/*", "hexagon-harness/*/*",
           "qfloat-model/*/*")


def cache_kind(relative: str) -> str | None:
    return next((p for p in CACHE_FILES if fnmatch.fnmatch(relative, p)), None)


def measured(capsys, ids, *extra) -> dict:
    status, out, err = run(capsys, "measure", "--workload", ids[0], "--dtype", ids[1], "--target", ids[2],
                           "--order", ids[3], "--json", *extra)
    assert status == 0 and "Traceback" not in err, err
    found = json.loads(out)
    found.pop("compile_s", None)
    found.pop("emulated_s", None)
    found.pop("latency", None)
    return found


def measured_in_a_process(ids, *extra) -> dict:
    """:func:`measured`, by a `tvm-suite` process of its own."""
    done = run_cli("measure", "--workload", ids[0], "--dtype", ids[1], "--target", ids[2], "--order", ids[3],
                   "--json", *extra)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    found = json.loads(done.stdout)
    for timed in ("compile_s", "emulated_s", "latency"):
        found.pop(timed, None)
    return found


@pytest.fixture(scope="module")
def own_cache(tmp_path_factory):
    """A cache of this module's own, with the llvm and qfloat combinations measured against default."""
    where = tmp_path_factory.mktemp("damage-cache")
    old = os.environ["TVM_SUITE_CACHE"]
    os.environ["TVM_SUITE_CACHE"] = str(where)
    yield where
    os.environ["TVM_SUITE_CACHE"] = old


def _cache_cases():
    cases = []
    for pattern, reader in CACHE_FILES.items():
        if reader is None:
            continue
        if pattern in QF_ONLY:
            cases.append((pattern, "qf"))
        if pattern not in QF_ONLY or pattern == "measure/*/kernel.*":
            cases.append((pattern, "llvm"))
    return cases


@pytest.mark.parametrize("pattern,combo", _cache_cases())  # 1-10 CPU-s each: no longer among the longest
def test_damaged_cache_files_are_computed_again(own_cache, capsys, pattern, combo):
    if combo == "qf" and (reason := targets.get("hexagon-v68-qf").unavailable()):
        pytest.skip(reason)
    if CACHE_FILES[pattern] == "model":
        return _damaged_model_entries(own_cache, capsys, pattern)
    ids = COMBOS[combo]
    against = () if pattern.startswith("catalog") else ("--against", "default")
    clean = measured(capsys, ids, *against)
    listed = run(capsys, "list", "--model", "resnet18", "--json")[1] if CACHE_FILES[pattern] == "catalog" else None
    entry = _entry_of(own_cache, pattern, ids, capsys)
    files = sorted(p for p in entry.rglob("*") if p.is_file() and fnmatch.fnmatch(
        p.relative_to(own_cache).as_posix(), pattern))
    assert files, f"no {pattern} for {' '.join(ids)}"
    entries = sorted({victim.parent for victim in files})
    clean_read = _read_as_measured(own_cache, pattern, ids, entries)
    measured_again = set()
    seen_by_lookup = CACHE_FILES[pattern] in SEEN_BY_LOOKUP
    def same_as_clean(name, how):
        # measured again once (an HVX model's rebuild alone is 8 clang calls, 2.6 CPU-s; an emulation, seconds)
        if seen_by_lookup and measured_again and not (name == files[0].name and how in TYPE_CHANGES):
            assert _seen_as_damaged(pattern, ids, entries, name), (name, how)
            return
        if clean_read is not None and measured_again:  # read as the measurement reads it: made again
            assert _read_as_measured(own_cache, pattern, ids, entries) == clean_read, (name, how)
            return
        measured_again.add(name)
        if CACHE_FILES[pattern] == "entry":        # read again only when the measurement is made again
            shutil.rmtree(_measure_entry(own_cache, ids))
        if CACHE_FILES[pattern] == "catalog":
            assert run(capsys, "list", "--model", "resnet18", "--json")[1] == listed, (name, how)
        elif CACHE_FILES[pattern] == "key":
            assert measured_in_a_process(ids, *against) == clean, (name, how)
        else:
            assert measured(capsys, ids, *against) == clean, (name, how)
    # what the lookup sees damaged, it saw whole before the damage
    _each_damage(files, same_as_clean, (lambda name: not _seen_as_damaged(pattern, ids, entries, name))
                 if seen_by_lookup else None)


def _read_as_measured(cache: Path, pattern: str, ids, entries: list[Path]):
    """What a measurement of ``ids`` reads from ``entries`` (the cache entries of ``pattern``'s kind
    it uses), read by the function it calls, where that is cheap beside the measurement made again
    (its kernel built and emulated again); None for the other kinds. A damaged entry is made again
    there, as in the measurement: the damages that change a file's type are read so, the measurement
    made again after the first damage (test_damaged_cache_files_are_computed_again, SEEN_BY_LOOKUP)."""
    target = targets.get(ids[2])
    if pattern == "reference/*/*":  # the float64 reference (and magnitude) the outputs are scored against
        workload = workloads.get(ids[0])
        assert [measurement.reference_entry(workload, ids[1])] == entries
        return [array.tobytes() for array in measurement.reference_arrays(workload, ids[1])]
    if pattern == "qfloat-model/*/*":  # what build_qfloat_elf links and rewrites with
        return (hvx_toolchain.model_object(target.arch).read_bytes(),
                hvx_toolchain.vector_model_registers(target.arch))
    if pattern == "hexagon-harness/*/*":  # what it links
        return hexagon.harness_object(target.arch).read_bytes()
    if pattern == "hexagon-run/*/*":  # the combination's emulations: its kernel's (and its IEEE twin's, if run)
        workload = workloads.get(ids[0])
        inputs = workloads.make_inputs(workload, ids[1])
        kernel = _measure_entry(cache, ids) / "kernel.o"
        runs = [target.load(kernel, inputs, workload.output_shape, ids[1], ieee_twin=twin) for twin in (False, True)]
        runs = [one for one in runs if one.where in entries]
        assert sorted(one.where for one in runs) == entries, "an emulation the measurement made is not read here"
        return [(one.output().tobytes(), one.counts) for one in runs]
    return None


def _each_damage(files: list[Path], check, intact=None) -> None:
    """Every damage to every file, then ``check(name, how)``. Files of one name in several entries
    of a kind (the qfloat and the IEEE twin emulation) are damaged together: each damage is read
    again at once. Each damage is made to the entries as they were (every file of them put back:
    what was computed again may differ in a timing, and its record or manifest with it; where
    given, ``intact(name)`` holds of them then), and so they are left."""
    places = sorted({victim.parent for victim in files})
    was = {path: path.read_bytes() for place in places for path in place.iterdir() if path.is_file()}
    for name in sorted({victim.name for victim in files}):
        victims = [victim for victim in files if victim.name == name]
        for how in DAMAGES + tuple(json_damages(victims[0])):
            for path, data in was.items():
                _restore(path, data)
            assert intact is None or intact(name), (name, how)
            for victim in victims:
                (damage_json if how.startswith("wrong") else damage)(victim, how)
            check(name, how)
    for path, data in was.items():
        _restore(path, data)


def _seen_as_damaged(pattern: str, ids, entries: list[Path], name: str) -> bool:
    """Whether the lookup through which the measurement of ``ids`` reads the files of ``pattern``
    sees ``name`` damaged in each of ``entries`` (and so computes them again)."""
    kind = CACHE_FILES[pattern]
    if kind == "measure":  # the combination's record, and the part named checked against it
        return measure_entries.cached(Combo.resolve(*ids), verify=(name,)) is None
    if kind == "key":  # the digests of the suite's code, kept sealed
        return cache.read_sealed_json(entries[0] / name) is None
    return all(cache.load_entry(entry, ENTRY_READS[pattern]) is None for entry in entries)


def _model_numbers(capsys) -> list:
    status, out, err = run(capsys, *MODEL_ARGS)
    assert status == 0 and "Traceback" not in err, err
    return [{k: v for k, v in r.items() if k != "seconds_per_input"} for r in json.loads(out)["results"]]


def _damaged_model_entries(own_cache: Path, capsys, pattern: str) -> None:
    """Every file of a model entry kind, each damage: the model's next run gives the same numbers
    (a damaged entry is never read: computed again, said in one line)."""
    clean = _model_numbers(capsys)
    files = sorted(p for p in own_cache.glob(pattern) if p.is_file() and "miniresnet" in p.parent.name)
    assert files, f"no {pattern} for miniresnet"
    entries = sorted({victim.parent for victim in files})
    ran_again = []
    def same_as_clean(name, how):
        if ran_again and not (name == files[0].name and how in TYPE_CHANGES):  # see SEEN_BY_LOOKUP
            assert all(cache.load_entry(entry, ENTRY_READS[pattern]) is None for entry in entries), (name, how)
            return
        ran_again.append((name, how))
        assert _model_numbers(capsys) == clean, (name, how)
    _each_damage(files, same_as_clean, lambda name: all(cache.load_entry(entry, ENTRY_READS[pattern]) is not None
                                                        for entry in entries))


def _restore(path: Path, data: bytes) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_anew(path, data)


def _measure_entry(cache: Path, ids) -> Path:
    return next(p for p in (cache / "measure").iterdir() if p.name.startswith("-".join(ids) + "-"))


def _entry_of(cache: Path, pattern: str, ids, capsys) -> Path:
    kind = pattern.split("/")[0]
    if kind == "hexagon-run":  # only the combination's own emulations (its qfloat run and its twin's)
        shutil.rmtree(cache / kind)
        shutil.rmtree(_measure_entry(cache, ids))
        measured(capsys, ids)
    if kind == "source-digests":  # written by the first process that computes a key in this cache
        measured_in_a_process(ids)
    if kind == "measure":
        return _measure_entry(cache, ids)
    if kind == "reference":
        return next(p for p in (cache / kind).iterdir() if p.name.startswith(f"{ids[0]}-{ids[1]}-"))
    if kind == "divergence":
        return next(p for p in (cache / kind).iterdir() if p.name.startswith("_".join(" ".join(ids).split())))
    if kind == "catalog":
        return next(p for p in (cache / kind).iterdir() if p.name.startswith("resnet18-"))
    return cache / kind  # hexagon-run, harness, model: every entry of the kind


# ----------------------------------------------------------------------------- thresholds and tuning records


THRESHOLDS = ('[divergence]\nmax_error_ratio = 1.3\nmax_bias_shift = 0.3\n'
              '[latency]\nmax_ratio = 1.25\nalpha = 0.01\nbaseline = "previous"\n')


@pytest.mark.parametrize("how", DAMAGES + ("wrong type: divergence.max_error_ratio", "wrong type: latency",
                                           "wrong type: latency.baseline"))
def test_damaged_thresholds(llvm_run, capsys, tmp_path, how):
    base, repo, commits, _ = llvm_run
    path = tmp_path / "t.toml"
    path.write_text(THRESHOLDS)
    if how.startswith("wrong type"):
        key = how.partition(": ")[2]
        text = {"divergence.max_error_ratio": THRESHOLDS.replace("1.3", '"1.3"'),
                "latency": THRESHOLDS.replace("[latency]", "latency = 3\n[other]"),
                "latency.baseline": THRESHOLDS.replace('"previous"', "7")}[key]
        path.write_text(text)
    else:
        damage(path, how)
    result = run(capsys, "gate", "--results", base / "results", "--commit", commits[1], "--thresholds", path,
                 "--no-remeasure")
    if how == "zero length":  # an empty copy overrides nothing: every key is optional in a copy
        assert result[0] == 1, result
        return
    assert_one_line_naming(result, path)


def test_damaged_default_thresholds(llvm_run, capsys, tmp_path, monkeypatch):
    from suite.reporting import thresholds

    base, repo, commits, _ = llvm_run
    defaults = thresholds.DEFAULT_PATH
    for how in DAMAGES:
        path = tmp_path / f"defaults-{DAMAGES.index(how)}.toml"
        shutil.copyfile(defaults, path)
        damage(path, how)
        monkeypatch.setattr(thresholds, "DEFAULT_PATH", path)
        assert_one_line_naming(run(capsys, "gate", "--results", base / "results", "--commit", commits[1],
                                   "--no-remeasure"), path)


@pytest.fixture(scope="module")
def records_copy(tmp_path_factory):
    where = tmp_path_factory.mktemp("records")
    shutil.copytree(tuning_records.RECORDS_DIR / "llvm" / "float32", where / "llvm" / "float32")
    return where


@pytest.mark.parametrize("how", DAMAGES + ("fields",))
def test_damaged_tuning_records(records_copy, capsys, tmp_path, monkeypatch, how):
    """A damaged committed record: one line naming it, exit 2 (a deleted one: skipped, with the reason)."""
    matmul = "resnet50.matmul_add.2048-1000"
    source = records_copy / "llvm" / "float32" / "traces" / f"{matmul}.json"
    cases = [how] if how != "fields" else json_damages(source)
    for one in cases:
        copy = tmp_path / f"records-{cases.index(one)}"
        shutil.copytree(records_copy, copy)
        victim = copy / "llvm" / "float32" / "traces" / f"{matmul}.json"
        (damage_json if how == "fields" else damage)(victim, one)
        monkeypatch.setenv("TVM_SUITE_TUNING_RECORDS", str(copy))
        result = run(capsys, "measure", "--workload", matmul, "--order", "tuned", "--json")
        key = one.partition(": ")[2]
        if one == "deleted":
            assert result[0] == 1 and '"status": "skipped"' in result[1] and "no tuned record" in result[1]
        elif key and key not in ("trace", "trace_sha256", "workload", "dtype", "the whole file"):
            assert result[0] == 0, (one, result)    # a field replay does not read: the same schedule
        else:
            assert_one_line_naming(result, victim)
