"""Real asv results for the report and gate tests: one tiny `tvm-suite run` per commit of a
small local git repository (two commits, the second tagged), made once per test session."""

import os
import subprocess
from pathlib import Path

from conftest import made_once, run_cli

WORKLOAD = "seed.conv2d_nhwc_7x7s2"
#: K = 3*3*256 + 1 = 2305: K*u >= 1 in float16, so no rigorous bound exists for it.
VACUOUS = "resnet50.conv2d_add_relu.14x14x256-k3s1-256"

def _git(repo, *args, date=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def two_commit_repo(repo: Path) -> list[str]:
    """A repository standing in for TVM, with two empty commits (2026-06-17, 2026-08-05); their hashes."""
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    commits = []
    for i, date in enumerate(("2026-06-17T12:00:00+00:00", "2026-08-05T12:00:00+00:00")):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}", date=date)
        commits.append(_git(repo, "rev-parse", "HEAD"))
    return commits


def two_commit_results(tmp_path_factory):
    """(results dir, repo, [old commit, new commit]) of two real asv runs (the seed conv2d and a
    K = 2305 conv2d, fp16, default + tuned), made once per test session. Tests change copies only."""

    def make(base):
        repo = base / "tvm"
        commits = two_commit_repo(repo)
        _git(repo, "tag", "v9.9.0", commits[1])
        out = base / "asv"
        for commit in commits:
            result = run_cli("run", "--quick", "--workloads", f"{WORKLOAD},{VACUOUS}", "--dtypes", "float16",
                             "--out", str(out), "--tvm-repo", str(repo), "--tvm-commit", commit, env={"HOME": str(base)})
            assert result.returncode == 0, result.stdout + result.stderr
        return [str(out / "results"), str(repo), commits]

    results, repo, commits = made_once(tmp_path_factory, "asv-history", make)
    return Path(results), Path(repo), commits


#: The smallest fp16 conv2d of ResNet-50 (25.7 MFLOP): its Hexagon-tuned record is marked on the
#: qfloat target (error ratio 1.67 against default), and a few seconds of emulation.
QF_WORKLOAD = "resnet50.conv2d_add_relu.56x56x64-k1s1-64"


def qf_two_commit_results(tmp_path_factory):
    """(run dir, repo, [old commit, new commit]) of two real asv runs on hexagon-v68-qf (the IEEE
    twin included): QF_WORKLOAD, fp16, default + tuned; the same TVM build at both commits. Made
    once per test session. Without the whole-model benchmarks (TVM_SUITE_MODELS=none): no test of
    these runs reads them (a run's model wing: test_model.py, test_hexagon.py), and building
    miniresnet's calls for the emulator cost more than the rest of a run."""

    def make(base):
        repo = base / "tvm"
        commits = two_commit_repo(repo)
        out = base / "asv"
        for commit in commits:
            result = run_cli("run", "--quick", "--workloads", QF_WORKLOAD, "--dtypes", "float16", "--targets",
                             "hexagon-v68-qf", "--out", str(out), "--tvm-repo", str(repo), "--tvm-commit", commit,
                             env={"HOME": str(base), "TVM_SUITE_MODELS": "none"})
            assert result.returncode == 0, result.stdout + result.stderr
        return [str(out), str(repo), commits]

    out, repo, commits = made_once(tmp_path_factory, "asv-qf-history", make)
    return Path(out), Path(repo), commits


def place(run_dir: Path, commit: str):
    """Where the run kept ``commit``'s side data (the one machine of a test's runs)."""
    from suite.core import run_place

    (machine,) = [p.name for p in (Path(run_dir) / "results").iterdir() if p.is_dir()]
    return run_place.Place(Path(run_dir), machine, commit)


def loosen(where) -> None:
    """A commit's sealed side data back as the files its run wrote before sealing them (its bundle
    removed): for tests, to change a file as a run would before ``run_bundle.seal``, or to leave the
    commit's side data without a seal. ``where``: a Place, or (run_dir, commit)."""
    from suite.core import run_bundle

    where = place(*where) if isinstance(where, tuple) else where
    for name, data in run_bundle.sealed_members(where).items():
        (where.dir / name).parent.mkdir(parents=True, exist_ok=True)
        (where.dir / name).write_bytes(data)
    where.bundle.unlink()


def member(where, relative: str) -> bytes:
    """The bytes of one file a commit's bundle seals (verified)."""
    from suite.core import run_bundle

    return run_bundle.sealed_members(where)[relative]


def tamper(where, relative: str, data: bytes) -> None:
    """Replace one member of a commit's bundle behind its seal (its manifest kept): damage, or an
    edit, that every reader must refuse."""
    entries = bundle_entries(where.bundle)
    entries[relative] = data
    write_entries(where.bundle, entries)


def bundle_entries(bundle: Path) -> dict:
    """What a bundle holds as its readers find it, not verified: its manifest.json and each file
    (of its tar in today's layout; a zip member each in an older suite's), by name."""
    import io
    import tarfile
    import zipfile

    from suite.core import run_bundle

    with zipfile.ZipFile(bundle) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    if run_bundle.tarred(bundle):
        with tarfile.open(fileobj=io.BytesIO(entries.pop(run_bundle.TAR))) as tar:
            entries.update({info.name: tar.extractfile(info).read() for info in tar.getmembers()})
    return entries


def write_entries(bundle: Path, entries: dict, tarred: bool | None = None) -> None:
    """Write ``bundle`` anew from ``entries`` (name -> bytes, or None for a directory entry), behind
    its seal, as a hostile hand would: in its own layout, or today's (``tarred``) or an older
    suite's (one zip member per file)."""
    import io
    import tarfile
    import zipfile

    from suite.core import run_bundle, run_place

    tarred = run_bundle.tarred(bundle) if tarred is None else tarred
    members = {n: d for n, d in entries.items() if not tarred or n != run_place.MANIFEST}
    if tarred:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.type, info.size = (tarfile.DIRTYPE, 0) if data is None else (tarfile.REGTYPE, len(data))
                tar.addfile(info, None if data is None else io.BytesIO(data))
        members = {**{n: d for n, d in entries.items() if n == run_place.MANIFEST}, run_bundle.TAR: out.getvalue()}
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(f"{name}/" if data is None else name, data or b"")


def plant(run_dir: Path, commit: str, benchmark: str, ids: tuple, value: float | None) -> None:
    """Set one value of ``commit`` as a run that measured it would have filed it (a planted change,
    for tests): in asv's results, and in the values its benchmark class reported (runs/<commit>/
    values/), sealed again. A change to asv's results alone is damage, which readers refuse. A
    deterministic metric (accuracy, code metrics) moves only where the kernel's code changed, so its
    code identity is planted as changed too (the same code repeating another value is the suite's
    own bug: suite.reporting.code_identity)."""
    import itertools
    import json

    import hashlib

    from suite import tracked
    from suite.core import run_bundle, run_place
    from suite.reporting import code_identity

    path = next(p for p in (run_dir / "results").glob("*/*.json")
                if p.name != "machine.json" and json.loads(p.read_text())["commit_hash"] == commit)
    data = json.loads(path.read_text())
    values, params = data["results"][benchmark][:2]
    combos = [tuple(c) for c in itertools.product(*params)]
    values[combos.index(tuple(f"'{name}'" for name in ids))] = value
    path.write_text(json.dumps(data))
    metric = tracked.BY_BENCHMARK[benchmark]  # an asv benchmark
    if place(run_dir, commit).bundle.exists():
        loosen(place(run_dir, commit))
    kept = place(run_dir, commit).file(run_place.values_relative(f"{metric.module}.{metric.cls}", ids))
    reported = json.loads(kept.read_text()) if kept.exists() else {}
    if value is None:  # a failed benchmark reports nothing
        reported.pop(metric.name, None)
    else:
        reported[metric.name] = value
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(reported))
    code = place(run_dir, commit).file(run_place.relative("code", ids))
    if metric.name in code_identity.DETERMINISTIC and code.exists():
        code.write_text(hashlib.sha256(f"{code.read_text()} {metric.name}={value}".encode()).hexdigest())
    run_bundle.seal(place(run_dir, commit))


def plant_samples(run_dir: Path, commit: str, ids: tuple, samples: list[float], tvm: str | None = None) -> None:
    """Replace the timing samples of ``ids`` at ``commit``, and asv's latency and GFLOP/s with them,
    as a run that timed them would have filed them (a planted change, for tests)."""
    import json

    import numpy as np

    from suite.core import run_place

    if place(run_dir, commit).bundle.exists():
        loosen(place(run_dir, commit))
    where = place(run_dir, commit).file(run_place.relative("timings", ids))
    kept = json.loads(where.read_text())
    before = float(np.median(kept["samples_s"]))
    kept["samples_s"] = list(samples)
    if tvm is not None:
        kept["tvm"] = tvm
    where.write_text(json.dumps(kept))
    latency = float(np.median(samples))
    kept = place(run_dir, commit).file(run_place.values_relative("bench_latency.Throughput", ids))
    reported = json.loads(kept.read_text())
    reported["gflops"] *= before / latency  # no asv benchmark (higher is better): kept beside the results only
    kept.write_text(json.dumps(reported))
    plant(run_dir, commit, "bench_latency.Throughput.track_latency_median", ids, latency)


def plant_file(run_dir: Path, commit: str, relative: str, text: str) -> None:
    """Replace one file a run kept for ``commit`` (``runs/<commit>/<relative>``) and seal the
    change, as a run that measured it would (a planted change, for tests; an unsealed change is
    damage, which readers refuse)."""
    from suite.core import run_bundle

    if place(run_dir, commit).bundle.exists():
        loosen(place(run_dir, commit))
    where = place(run_dir, commit).file(relative)
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(text)
    run_bundle.seal(place(run_dir, commit))
