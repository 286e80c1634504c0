"""`tvm-suite run` interrupted at each phase (measure, asv, publish, report) by SIGINT (Ctrl-C)
and SIGKILL, in real subprocesses. Afterwards the commit's last complete run is intact and
consistent (its asv results, its sealed side data, and the two agreeing), and the next run completes
(the runs and gates that are not interrupted run in this process: no interpreter and imports of their own).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from asv_runs import place, two_commit_repo
from suite import cache
from conftest import SUITE_BIN, eventually, run_in_process
from suite.core import run_bundle, runstore

pytestmark = pytest.mark.slow

MATMUL = "resnet50.matmul_add.2048-1000"
PHASES = ("measure", "asv run", "asv publish", "report")
#: Phases after which the new run is complete and filed: an interrupt there keeps the new run.
FILED = ("asv publish", "report")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """One complete run of the matmul (llvm, fp32, default and tuned; no whole model, see _env) under a
    commit of a stand-in repo."""
    base = tmp_path_factory.mktemp("interrupt")
    repo = base / "tvm"
    commit = two_commit_repo(repo)[1]
    out = base / "asv"
    done = run_in_process(*_run_args(out, repo, commit)[1:], env=_env(base / "cache"))
    assert done.returncode == 0, done.stdout + done.stderr
    return out, repo, commit, base


def _run_args(out, repo, commit):
    return [str(SUITE_BIN), "run", "--quick", "--workloads", MATMUL, "--dtypes", "float32", "--out", str(out),
            "--tvm-repo", str(repo), "--tvm-commit", commit]


def _env(cache):
    # Without the whole-model benchmarks (TVM_SUITE_MODELS=none, as asv_runs' Hexagon runs): a run
    # keeps, files and undoes theirs as it does the matmul's, and miniresnet's calls were built and
    # run in every run of every case (the module: 66 -> 55 CPU-s).
    return {"TVM_SUITE_CACHE": str(cache), "TVM_SUITE_MODELS": "none"}


def _helpers_using(cache) -> list[int]:
    """Processes measuring ahead (suite.core.ahead) into ``cache``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (b"suite.core.ahead" in (proc / "cmdline").read_bytes()
                    and f"TVM_SUITE_CACHE={cache}".encode() in (proc / "environ").read_bytes().split(b"\0")):
                found.append(int(proc.name))
        except OSError:  # gone meanwhile, or not ours
            pass
    return found


def _state(out, commit) -> dict:
    """What the run directory holds for ``commit``: its results file's bytes, its side data's
    manifest, and whether the two agree (every latency asv recorded is the median of the kept samples)."""
    [results] = [p for p in (out / "results").glob(f"*/{commit[:8]}-*.json")]
    data = json.loads(results.read_text())
    manifest = {name: cache.bytes_digest(data) for name, data in run_bundle.sealed_members(place(out, commit)).items()}
    kept = runstore.load(place(out, commit))  # every kept file is the one the run sealed
    latency = data["results"]["bench_latency.Throughput.track_latency_median"]
    for value, order in zip(latency[0], latency[1][3]):
        samples = kept.timings.get((MATMUL, "float32", "llvm", order.strip("'")))
        assert samples is not None and np.isclose(value, samples.median), (order, value, samples)
    return {"results": results.read_bytes(), "manifest": manifest}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
@pytest.mark.parametrize("phase", PHASES)
def test_an_interrupted_run_keeps_the_last_complete_one(first_run, tmp_path, phase, signum):
    out, repo, commit, base = first_run
    before = _state(out, commit)
    # A cache of its own: the measure phase has work to do (builds), so it can be caught in it; the
    # later phases start from a copy of the first run's (nothing left to build: they come sooner).
    cache = tmp_path / "cache"
    if phase != "measure":
        shutil.copytree(base / "cache", cache)
    # Ctrl-C as a terminal sends it (a test runner started in the background may ignore SIGINT, and
    # its children would inherit that).
    process = subprocess.Popen(_run_args(out, repo, commit), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, **_env(cache)},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.strip() == f"{phase}: started":
            os.kill(process.pid, signum)
            break
    else:
        pytest.fail(f"the run never reached {phase}: {''.join(seen)[-2000:]}")
    rest = process.stderr.read()
    process.wait(timeout=300)
    if signum == signal.SIGINT:
        assert process.returncode == 130, rest
        last = rest.strip().splitlines()[-1]
        assert last.startswith("tvm-suite: interrupted (SIGINT): ") and "Traceback" not in rest, rest
        assert ("nothing of it was filed; its previous results and side data are kept" in last) == (phase not in FILED)
    else:
        assert process.returncode == -signal.SIGKILL
    # asv and the helper, told by the kernel that their parent died, go too
    assert eventually(lambda: not _helpers_using(cache)), "the helper that measures ahead outlived the run"
    # The next command that reads the run directory undoes what a killed run left half-done.
    gate = run_in_process("gate", "--results", out / "results", "--commit", commit, "--no-remeasure", env=_env(cache))
    assert gate.stdout.strip().splitlines()[-1].startswith("verdict: ") and "Traceback" not in gate.stderr, \
        gate.stdout + gate.stderr
    after = _state(out, commit)  # consistent in any case
    if phase not in FILED:
        assert after == before  # the last complete run, byte for byte
    assert not list((out / "runs").glob(".journal-*")) and not list((out / "runs").glob(".staging-*"))
    again = run_in_process(*_run_args(out, repo, commit)[1:], env=_env(cache))
    assert again.returncode == 0, again.stdout + again.stderr
    _state(out, commit)


def test_an_undone_run_sets_the_results_file_it_left_aside(first_run, tmp_path):
    """A journal that knows of no earlier results (a run killed after asv wrote the commit's first
    results file, or a journal wrong about it): the undo moves the file to results-archive/,
    byte for byte, and says where; it never deletes it."""
    out, _, commit, base = first_run
    copy = tmp_path / "asv"
    subprocess.run(["cp", "-a", str(out), str(copy)], check=True)
    [results] = (copy / "results").glob(f"*/{commit[:8]}-*.json")
    kept = results.read_bytes()
    machine = results.parent.name
    journal = copy / "runs" / f".journal-{commit}.json"
    journal.write_text(json.dumps({"pid": 1, "commit": commit, "machine": machine, "state": "running",
                                   "staging": f"runs/.staging-{commit}", "previous": {}}))
    gate = run_in_process("gate", "--results", copy / "results", "--commit", commit, "--no-remeasure",
                          env=_env(base / "cache"))
    assert gate.returncode == 2 and "Traceback" not in gate.stderr, gate.stdout + gate.stderr
    assert f"the results file it left is in {copy / 'results-archive' / machine}" in gate.stdout + gate.stderr
    [aside] = (copy / "results-archive" / machine).glob(f"{results.stem}.undone-*.json")
    assert aside.read_bytes() == kept and not results.exists() and not journal.exists()


@pytest.mark.parametrize("signalled", [True, False])
def test_an_error_a_signal_caused_is_the_interruption(monkeypatch, capsys, signalled):
    """A SIGTERM that lands inside Python's threading code (a campaign waiting on its threads)
    comes out as "RuntimeError: release unlocked lock": exit 143 and one line, as any SIGTERM. The
    same error with no signal is a bug of the suite, never called an interruption."""
    from suite import cli
    from suite.commands import list as list_command

    def run(args):
        try:
            if signalled:
                signal.raise_signal(signal.SIGTERM)  # the suite's handler raises Terminated here
        except KeyboardInterrupt:
            pass
        raise RuntimeError("release unlocked lock")  # what threading's Condition turned it into

    monkeypatch.setattr(list_command, "run", run)
    if not signalled:
        with pytest.raises(RuntimeError, match="release unlocked lock"):
            cli.main(["list"])
        return
    assert cli.main(["list"]) == 143
    err = capsys.readouterr().err
    assert err.startswith("tvm-suite: interrupted (SIGTERM): ") and err.count("\n") == 1 and "Traceback" not in err
