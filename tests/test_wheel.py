"""`pip install .`: the wheel holds what the suite reads at run time (thresholds, templates, asv's
configuration and benchmarks, the C models, the tuning records), and `report` and `gate` work from
it, in a fresh virtual environment without TVM, on real results."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from asv_runs import two_commit_results
from conftest import REPO_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, the fresh environment's bin directory)."""
    where = tmp_path_factory.mktemp("wheel")
    source = _clean_copy(where / "source")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(where / "dist"),
                            str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (where / "dist").glob("tvm_accuracy_suite-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    done = subprocess.run([str(where / "venv" / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return wheel, where / "venv" / "bin"


def _clean_copy(target: Path) -> Path:
    """The checkout's files as git sees them (tracked, and new ones not ignored), links kept as
    links: setuptools reuses a checkout's build/ directory, whose stale files a wheel built in place
    would carry."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source, copy = Path(REPO_ROOT) / name, target / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet in git
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), copy)
        else:
            shutil.copy2(source, copy)
    return target


def test_the_wheel_holds_what_the_suite_reads(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("suite/project/asv.conf.json", "suite/project/reports/thresholds.toml",
                 "suite/project/reports/templates/report.html.j2", "suite/project/benchmarks/common.py",
                 "suite/project/benchmarks/bench_latency.py", "suite/targets/hexagon_harness.c",
                 "suite/targets/qfloat_model.c", "suite/targets/vector_model.c", "suite/targets/hvx_model.c",
                 "suite/targets/ieee_model.c", "suite/asv_plumbing/plugin.py"):
        assert name in names, name
    assert any(n.startswith("suite/tuning_records/llvm/float16/traces/") for n in names)
    assert not any("/reports/tvm-main" in n for n in names)  # the kept histories are data, not the suite's


def test_report_and_gate_from_the_wheel(installed, tmp_path_factory, tmp_path):
    _, bin_dir = installed
    results, repo, commits = two_commit_results(tmp_path_factory)
    # The installed suite, not the checkout's: run from elsewhere, without the checkout on the path.
    where = subprocess.run([str(bin_dir / "python"), "-c", "import suite; print(suite.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path)
    assert str(bin_dir.parent) in where.stdout, where.stdout + where.stderr
    report = subprocess.run([str(bin_dir / "tvm-suite"), "report", "--results", str(results), "--out",
                             str(tmp_path / "report"), "--tvm-repo", str(repo)], capture_output=True, text=True,
                            cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    assert (tmp_path / "report" / "index.html").stat().st_size > 10_000
    gate = subprocess.run([str(bin_dir / "tvm-suite"), "gate", "--results", str(results), "--commit", commits[1],
                           "--tvm-repo", str(repo), "--no-remeasure"], capture_output=True, text=True, cwd=tmp_path)
    assert gate.stdout.strip().splitlines()[-1] == report.stdout.strip().splitlines()[-1], gate.stdout + gate.stderr
    assert "suite/project/reports/thresholds.toml" in gate.stdout  # the wheel's own defaults
