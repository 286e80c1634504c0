"""A run's context (where the side data goes, the machine, the commit, the grid, git's
configuration) reaches asv and its benchmark processes through their environment alone: `tvm-suite
history` leaves its own process's environment as it found it, and the benchmark processes still
keep their side data where the run says (asv stood in for by tests/stand_in_asv.py: milliseconds,
offline)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from suite import children
from suite.core import run_place, runstore
from suite.core.combo import Grid
from suite.history import commits

from stand_in_asv import BENCHMARKS, STOP_AT, STOPPED
from test_releases import commit, git

STAND_IN = Path(__file__).resolve().parent / "stand_in_asv.py"
START_PYTHON = children.start_python  #: the real one, which the stand-in's starts asv's stand-in with
MACHINE = "testbox"
GRID = Grid.of(["seed.conv2d_nhwc_7x7s2"], ["float16"], ["llvm"], ["default"])
IDS = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "default")
#: the values each of the stand-in's benchmark classes keeps for IDS at a commit
KEPT = {(IDS, name.rsplit(".", 1)[0]): {"track_value": 1.0} for name in BENCHMARKS}


def use_stand_in_asv(monkeypatch, stop_at: str | None = None) -> None:
    """Every asv command `tvm-suite` runs is tests/stand_in_asv.py instead, started as asv is (a
    child with the environment the suite gives it); with ``stop_at`` (a commit), Ctrl-C reaches the
    suite while asv is in that commit (a KeyboardInterrupt where it reads asv's output)."""

    def stand_in(args, env, **popen):
        assert args[:2] == ["-m", "asv"], args
        told = {**env, **({STOP_AT: stop_at} if stop_at else {})}
        process = START_PYTHON([str(STAND_IN), *args[2:]], env=told, **popen)
        process.stdout = _interrupted_at_stop(process.stdout)
        return process

    monkeypatch.setattr(children, "start_python", stand_in)


def _interrupted_at_stop(lines):
    for line in lines:
        if line.strip() == STOPPED:
            raise KeyboardInterrupt
        yield line


def stand_in_history(tmp_path: Path) -> tuple[Path, list[commits.HistoryCommit]]:
    """A repository standing in for TVM (m1 - m2 - m3 on main) and the commits of m1..m3."""
    repo = tmp_path / "tvm"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, "m1", "2026-06-01T00:00:00")
    commit(repo, "m2", "2026-07-01T00:00:00")
    last = commit(repo, "m3", "2026-08-01T00:00:00")
    return repo, commits.history_commits(repo, None, f"{first}..{last}")


def told(out: Path, command: str) -> list[dict]:
    """The suite's and git's variables the stand-in asv was given, at each ``command`` it ran."""
    calls = [json.loads(line) for line in (out / "stand-in-asv.jsonl").read_text().splitlines()]
    return [call["env"] for call in calls if call["command"] == command]


def test_a_context_round_trips_through_the_environment():
    git_config = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "submodule.3rdparty/dlpack.update",
                  "GIT_CONFIG_VALUE_0": "none"}
    run = run_place.RunContext(Path("/runs/one"), MACHINE, "a" * 40, GRID.to_env())
    history = run_place.RunContext(Path("/runs/two"), MACHINE, None, GRID.to_env(), git_config)
    for context in (run, history):
        assert run_place.RunContext.from_env(context.to_env()) == context
    assert Grid.from_env(run.to_env()) == GRID
    # In a history, asv names each benchmark process's commit; an absent one is written empty, so
    # that one the parent's environment had never reaches the child.
    env = {run_place.COMMIT_ENV: "b" * 40, **history.to_env()}
    assert run_place.RunContext.from_env(env).place is None
    assert run_place.RunContext.from_env({**env, "ASV_COMMIT": "c" * 40}).place == run_place.Place(
        Path("/runs/two"), MACHINE, "c" * 40)
    assert run_place.RunContext.from_env({}) is None


def test_history_leaves_its_own_environment_as_it_found_it(tmp_path, monkeypatch, capsys):
    """prepare, then the whole history: this process's environment is the same after either; asv
    was told the context at setup and run (not at machine or publish, which need none), and its
    benchmark processes kept each commit's side data where the run said, for the grid it said."""
    use_stand_in_asv(monkeypatch)
    repo, found = stand_in_history(tmp_path)
    out = tmp_path / "history"
    before = dict(os.environ)
    commits.prepare(repo, found, GRID, out, tmp_path / "env", machine=MACHINE)
    assert dict(os.environ) == before
    summary = commits.run_history(repo, found, GRID, quick=True, out_dir=out, env_dir=tmp_path / "env",
                                  machine=MACHINE)
    assert dict(os.environ) == before
    assert summary.exit_status == 0, summary.text
    context = {**GRID.to_env(), run_place.RUN_DIR_ENV: str(out.resolve()), run_place.MACHINE_ENV: MACHINE,
               run_place.COMMIT_ENV: "", "GIT_CONFIG_COUNT": "0"}  # the stand-in for TVM has no submodules
    for env in told(out, "setup") + told(out, "run"):
        assert env.items() >= context.items(), env
    for env in told(out, "machine") + told(out, "publish"):
        assert run_place.RUN_DIR_ENV not in env, env
    for c in found:
        kept = runstore.load(run_place.Place(out, MACHINE, c.commit))  # sealed, every file verified
        assert kept.kept and kept.values == KEPT
