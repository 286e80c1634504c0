"""Where the suite writes what a user asked for (suite/outputs.py), beside the output contracts of
test_faults_output.py:

- an output inside a history: every output path option of every command (``--out``,
  ``--save-arrays``, ``--repro``, ``--keep``, ``--env-dir``) and every experiment's output, given
  inside a kept history, its results or its sealed side data, directly or through a link, is
  refused in one line (exit 2) before any work, and the history stays as the gate reads it;
  ``reports/tvm-main`` is a kept history, a run directory takes its report beside its results;
- a user's file or a link where the suite writes: ``measure --save-arrays``, ``model --out``,
  ``report --out`` and ``experiments/fuzz_throughput.py`` replace only files they wrote (their
  mark there), never a user's file of one of their names, and never write through a link;
- a failed fuzz's ``--out``: the directory a failed campaign made is removed, one it did not make
  is left;
- a refused ``--cluster`` address: one line at once, naming the address (was Dask's 30 s timeout);
- an output path without the helper: a path option of a command is an input (INPUTS) or refused
  inside a kept history (so a new command cannot forget the check), and every experiment that
  writes a file goes through suite/outputs.py.

Each kind is a row of FAULTS with the cases it covers; ``test_every_fault_kind_has_cases`` keeps
the table and the tests together.
"""

from __future__ import annotations

import argparse
import ast
import json
import socket
import time
from pathlib import Path

import pytest
from conftest import check_fault_table, one_line, run_experiment
from histories import MACHINE, SEED, A, B, Builder

ROOT = Path(__file__).resolve().parents[1]
MEAN = "resnet50.mean.7x7x2048"
STEM = f"{MEAN}.float32.llvm.default"

#: kind of fault -> the cases of it (the test functions below, by name)
FAULTS = {
    "an output inside a history": ["test_every_output_option_of_every_command_is_refused_inside_a_kept_history",
                                   "test_every_experiment_output_is_refused_inside_a_kept_history",
                                   "test_what_a_kept_history_is_and_a_run_directory_is_not"],
    "a user's file or a link where the suite writes": ["test_measure_replaces_its_own_arrays_never_a_users",
                                                       "test_model_and_report_never_replace_a_users_file_or_a_link",
                                                       "test_fuzz_throughput_never_writes_through_a_link"],
    "a failed fuzz's --out": ["test_a_failed_fuzz_removes_the_out_it_made_and_only_that"],
    "a refused --cluster address": ["test_a_refused_cluster_address_is_one_line_at_once"],
    "an output path without the helper": ["test_every_output_option_of_every_command_is_refused_inside_a_kept_history",
                                          "test_every_experiment_that_writes_goes_through_the_helper"],
}

#: The path options commands read (their dest): every other path option is an output.
INPUTS = {"tvm_repo", "thresholds", "results", "baseline_from", "git_mirrors", "before", "after", "schedule", "trace",
          "pack"}  # history --pack DIR seals DIR's own commits in place: a history is what it is given
#: The least arguments of each command with an output path option, valid up to its output check.
LEAST = {
    "measure": ["--workload", MEAN, "--dtype", "float32"],
    "model": ["--model", "miniresnet", "--dtypes", "float32", "--orders", "default", "--inputs", "1"],
    "run": [],
    "check": ["v0.26.0", "--tvm-repo", "{tmp}/no-clone"],
    "history": ["--tvm-repo", "{tmp}/no-clone", "--releases", "0.26.0"],
    "bisect": ["--tvm-repo", "{tmp}/no-clone", "--range", "v0.25.0..v0.26.0", "--workload", MEAN, "--metric",
               "ulp_mean"],
    "report": ["--results", "{kept}/results"],
    "triage": ["{tmp}/before.py"],
    "fuzz": [],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


@pytest.fixture
def kept(tmp_path) -> Path:
    """A kept history as `history --keep` leaves one: asv's results and the sealed side data of two
    commits (READY), a build log, and the seal of what lies beside the commits."""
    from suite.history import keep

    where = tmp_path / "tvm-main"
    Builder().accurate(SEED, A).timing(SEED, A).accurate(SEED, B).timing(SEED, B).write(where)
    (where / "install-logs").mkdir()
    (where / "install-logs" / f"{A}.log").write_text("built\n")
    keep.seal(where)
    return where


def inside(kept: Path, tmp_path: Path) -> list[Path]:
    """Paths inside ``kept``: in its results, in a commit's side data, beside them, through a link."""
    link = tmp_path / "linked"
    link.symlink_to(kept / "results")
    return [kept / "results" / MACHINE, kept / "runs" / MACHINE / A / "values", kept / "mine", link / "x"]


def path_options(module) -> list[argparse.Action]:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    from suite.commands import common_args

    return [a for a in parser._actions if a.type is common_args.path]


def files_of(where: Path) -> list[tuple[str, bytes]]:
    return sorted((str(p.relative_to(where)), p.read_bytes()) for p in where.rglob("*") if p.is_file())


# ----------------------------------------------------------------------------- an output inside a history


def test_every_output_option_of_every_command_is_refused_inside_a_kept_history(cli, kept, tmp_path):
    """`model --out KEPT/results/vm`, `measure --save-arrays KEPT/runs/vm/<commit>/values`, `triage
    --repro` in the side data... were accepted, and the next gate refused the history: now each
    output option of each command is one line naming the directory, before any work, and the gate
    still says READY. A path option (common_args.path) is an input (INPUTS) or an output checked
    here, so a new command, or a new output option, cannot go unchecked."""
    from suite import cli as suite_cli

    before = files_of(kept)
    (tmp_path / "before.py").write_text("x = 1\n")
    paths = inside(kept, tmp_path)
    for name in suite_cli.COMMANDS:
        for action in path_options(suite_cli.module(name)):
            if action.dest in INPUTS:
                continue
            assert name in LEAST, f"{name} writes {action.dest}: give its least arguments in LEAST"
            least = [a.format(tmp=tmp_path, kept=kept) for a in LEAST[name]]
            for path in paths:
                done = cli(name, *least, action.option_strings[0], path)
                line = one_line(done, f"{action.option_strings[0]} {path}", "is inside")
                assert str(kept) in line, line
    assert files_of(kept) == before
    gate = cli("gate", "--results", kept / "results", "--commit", B[:8], "--no-remeasure")
    assert gate.returncode == 0 and gate.stdout.rstrip().endswith("-> exit 0"), gate.stdout[-1000:] + gate.stderr


#: Each experiment's output option (args with {kept}: what it writes there).
EXPERIMENTS = [
    ("fuzz_throughput.py", ["--out", "{kept}/results/x"]),
    ("gate_benchmark.py", ["--out", "{kept}/runs/x"]),
    ("retime_noise.py", ["--results", "{kept}/results", "--out", "{kept}/runs/x.json"]),
    ("model_cost.py", ["--json", "{kept}/rows.json"]),
    ("gate_noise.py", ["--out", "{kept}/noise"]),
    ("qfloat_emulation.py", ["build", "{kept}/results/builds"]),
]


def test_every_experiment_output_is_refused_inside_a_kept_history(kept):
    before = files_of(kept)
    for script, args in EXPERIMENTS:
        done = run_experiment(script, *(a.format(kept=kept) for a in args))
        assert done.returncode == 2 and "Traceback" not in done.stderr, (script, done.stderr[-2000:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "is inside" in lines[0] and str(kept) in lines[0], (script, done.stderr)
    assert files_of(kept) == before


def test_what_a_kept_history_is_and_a_run_directory_is_not(tmp_path):
    """reports/tvm-main is a kept history (nothing written in it); a run directory (no seal of a
    keep) takes a report beside its results, never in them; --keep names a kept history itself."""
    from suite import outputs
    from suite.errors import UserError

    with pytest.raises(UserError, match="is inside the kept history .*reports/tvm-main: it is only read"):
        outputs.check_apart(ROOT / "reports" / "tvm-main" / "report", "--out")
    assert outputs.check_keep(ROOT / "reports" / "tvm-main", "--keep") == ROOT / "reports" / "tvm-main"
    run_dir = tmp_path / "asv"
    Builder().accurate(SEED, A).write(run_dir)
    assert outputs.check_apart(run_dir / "report", "--out") == run_dir / "report"
    with pytest.raises(UserError, match="is inside the results directory"):
        outputs.check_apart(run_dir / "results" / "report", "--out")


# ----------------------------------------------------------------------------- a user's file or a link


def test_measure_replaces_its_own_arrays_never_a_users(cli, tmp_path):
    """--save-arrays writes the record (its mark) and the arrays, and replaces them on a rerun; a
    user's file of one of their names is refused before any compile and stays as it was."""
    out = tmp_path / "arrays"
    for _ in range(2):
        done = cli("measure", "--workload", MEAN, "--dtype", "float32", "--save-arrays", out)
        assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / f"{STEM}.json").read_text())["generated_by"] == "tvm-suite measure"
    assert sorted(p.name for p in out.iterdir()) == [f"{STEM}.{n}" for n in
                                                      ("input0.npy", "json", "output.npy", "reference.npy")]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / f"{STEM}.output.npy").write_text("the user's")
    one_line(cli("measure", "--workload", MEAN, "--dtype", "float32", "--save-arrays", mine),
             f"--save-arrays {mine} holds a {STEM}.output.npy that tvm-suite measure did not write", "never replaced")
    assert (mine / f"{STEM}.output.npy").read_text() == "the user's" and len(list(mine.iterdir())) == 1


def test_model_and_report_never_replace_a_users_file_or_a_link(cli, kept, tmp_path, monkeypatch):
    """model: a user's logits file, or a link where model.html goes, refused before any work.
    report: a user's report.json refused, and a link where index.html goes refused even beside a
    report.json of the report's own; the user's files stay as they were."""
    from suite.model import accuracy as model_accuracy

    asked = []
    monkeypatch.setattr(model_accuracy, "evaluate", lambda *a, **k: asked.append(a))
    users = tmp_path / "users.txt"
    users.write_text("the user's")
    logits = tmp_path / "m1" / "miniresnet.float32.llvm.default.logits.npy"
    logits.parent.mkdir()
    logits.write_text("the user's")
    page = tmp_path / "m2" / "model.html"
    page.parent.mkdir()
    page.symlink_to(users)
    one_line(cli("model", *LEAST["model"], "--out", logits.parent), f"holds a {logits.name} that", "did not write")
    one_line(cli("model", *LEAST["model"], "--out", page.parent), "model.html there is a link")
    assert asked == [] and logits.read_text() == "the user's"
    out = tmp_path / "r"
    out.mkdir()
    (out / "report.json").write_text("the user's")
    one_line(cli("report", "--results", kept / "results", "--out", out), "holds a report.json that tvm-suite report "
             "did not write")
    assert (out / "report.json").read_text() == "the user's"
    (out / "report.json").unlink()
    assert cli("report", "--results", kept / "results", "--out", out).returncode == 0
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(users)
    one_line(cli("report", "--results", kept / "results", "--out", out), "index.html there is a link")
    assert users.read_text() == "the user's" and (out / "index.html").is_symlink()


def test_fuzz_throughput_never_writes_through_a_link(tmp_path):
    """OUT/throughput.json a link to a user's file: refused before any campaign (it was written
    through, the user's file overwritten)."""
    users = tmp_path / "users.json"
    users.write_text("the user's")
    out = tmp_path / "ftp"
    out.mkdir()
    (out / "throughput.json").symlink_to(users)
    done = run_experiment("fuzz_throughput.py", "--targets", "llvm", "--minutes", "0.01", "--out", out)
    assert done.returncode == 2 and "throughput.json there is a link" in done.stderr, done.stderr[-2000:]
    assert users.read_text() == "the user's" and sorted(p.name for p in out.iterdir()) == ["throughput.json"]


# ----------------------------------------------------------------------------- a failed fuzz's --out


def test_a_failed_fuzz_removes_the_out_it_made_and_only_that(cli, tmp_path):
    made = tmp_path / "made" / "o"
    one_line(cli("fuzz", "--targets", "vulkan9", "--out", made), "vulkan9")
    assert not made.exists()
    given = tmp_path / "given"
    given.mkdir()
    one_line(cli("fuzz", "--targets", "vulkan9", "--out", given), "vulkan9")
    assert given.is_dir()


# ----------------------------------------------------------------------------- a refused --cluster address


def test_a_refused_cluster_address_is_one_line_at_once(cli, tmp_path):
    """Nothing listens on the port: one line naming the address at once, for fuzz and run alike
    (Dask's own connect retried it for its 30 s timeout); fuzz leaves no --out behind."""
    pytest.importorskip("distributed")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    for command in (["fuzz", "--out", tmp_path / "o"], ["run", "--workloads", MEAN, "--out", tmp_path / "asv"]):
        started = time.monotonic()
        one_line(cli(*command, "--cluster", address), f"cannot reach the Dask scheduler at {address}: connection "
                 "refused")
        assert time.monotonic() - started < 20  # TVM imported included
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- an output path without the helper


#: What writes a file: a call of one of these names, or an open() to write.
WRITES = {"write_text", "write_bytes", "write_json", "write_array", "write_file", "mkdir", "save", "savez"}


def writes(call: ast.Call) -> str | None:
    name = getattr(call.func, "attr", getattr(call.func, "id", None))
    modes = [a.value for a in [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return name if name in WRITES or (name == "open" and any(set(m) & set("wax+") for m in modes)) else None


def test_every_experiment_that_writes_goes_through_the_helper():
    """An experiment that writes a file checks its outputs with suite/outputs.py (read from the
    source: every script with a call that writes also calls outputs.*). A module of experiments/
    that is no script (compiler_changes.py: no ``__main__``) writes only where the script that
    imports it tells it to, inside the output directory that script checked."""
    for script in sorted((ROOT / "experiments").glob("*.py")):
        tree = ast.parse(script.read_text())
        if not any(isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "__name__"
                   for node in ast.walk(tree)):
            continue
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
        checked = any(isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                      and c.func.value.id == "outputs" for c in calls)
        found = sorted({w for c in calls if (w := writes(c))})
        assert checked or not found, f"{script.name} writes ({', '.join(found)}) without suite/outputs.py"
