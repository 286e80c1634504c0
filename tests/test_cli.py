"""The tvm-suite command line: output, JSON, files written, and one-line errors."""

import json

import numpy as np
import pytest

from conftest import run_cli


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm-suite: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_list_resnet50_json(cli):
    result = cli("list", "--model", "resnet50", "--json")
    assert result.returncode == 0, result.stderr
    items = json.loads(result.stdout)
    assert len(items) == 31
    stem = next(i for i in items if i["id"] == "resnet50.conv2d_add_relu.224x224x3-k7s2-64")
    assert stem["inputs"][0] == [1, 224, 224, 3] and stem["occurrences"] == 1
    assert stem["ops"] == ["conv2d", "add", "relu"]


def test_list_default_table_includes_the_seed(cli):
    result = cli("list")
    assert result.returncode == 0
    assert "seed.conv2d_nhwc_7x7s2" in result.stdout
    assert result.stdout.strip().endswith("32 workloads")


def test_measure_json_and_saved_arrays(cli, tmp_path):
    result = cli("measure", "--workload", "resnet50.mean.7x7x2048", "--dtype", "float16",
                 "--target", "llvm", "--json", "--save-arrays", str(tmp_path))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "ok" and record["metrics"]["nonfinite"] == 0
    stem = "resnet50.mean.7x7x2048.float16.llvm.default"
    data = np.load(tmp_path / f"{stem}.input0.npy")
    out = np.load(tmp_path / f"{stem}.output.npy")
    ref = np.load(tmp_path / f"{stem}.reference.npy")
    assert data.shape == (1, 7, 7, 2048) and out.dtype == np.float16 and ref.dtype == np.float64
    np.testing.assert_allclose(ref, data.astype(np.float64).mean(axis=(1, 2)))
    np.testing.assert_allclose(out, ref, atol=2e-3)


def test_measure_prints_a_readable_table(cli):
    result = cli("measure", "--workload", "resnet50.mean.7x7x2048")
    assert result.returncode == 0
    assert "ULP error  max" in result.stdout and "GFLOP/s" in result.stdout


def test_bad_input_gives_one_line_and_exit_2(cli):
    assert_one_line_error(cli("measure", "--workload", "resnet50.conv2d_add_relu.56x56x64-k3s1-65"),
                          "unknown workload", "resnet50.conv2d_add_relu.56x56x64-k3s1-64")
    assert_one_line_error(cli("measure", "--workload", "seed.conv2d_nhwc_7x7s2", "--dtype", "float64"),
                          "float32, float16")
    assert_one_line_error(cli("measure", "--workload", "seed.conv2d_nhwc_7x7s2", "--target", "vulkan"),
                          "valid targets: llvm")
    assert_one_line_error(cli("list", "--model", "vgg16"), "valid models")


def test_missing_tvm_is_one_clear_line(tmp_path):
    # A `tvm` package that fails to import stands in for a broken or missing TVM install: a process of
    # its own, whose imports find it first.
    fake = tmp_path / "tvm"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('undefined symbol: TVMFFIFoo')\n")
    result = run_cli("measure", "--workload", "resnet50.mean.7x7x2048", "--dtype", "float32",
                     env={"PYTHONPATH": str(tmp_path), "TVM_SUITE_CACHE": str(tmp_path / "cache")})
    assert_one_line_error(result, "does not import", "undefined symbol")


def test_empty_lists_and_bad_numbers_are_refused(cli, tmp_path):
    """An empty list never means "all": every list option refuses it, before any work."""
    for args in (["run", "--targets", ""], ["run", "--workloads", ","], ["run", "--dtypes", " "],
                 ["run", "--orders", ""], ["tune", "--dtype", "float16", "--workload", ""],
                 ["tune", "--dtype", "float16", "--workload", ","],
                 ["history", "--tvm-repo", str(tmp_path), "--releases", ""]):
        assert_one_line_error(cli(*args), "names nothing")
    assert_one_line_error(cli("tune", "--dtype", "float16", "--trials", "0"), "--trials", "0 is not between 1 and 1,000,000")
    assert_one_line_error(cli("run", "--out", ""), "--out", "an empty path")
    for command in ("run", "fuzz"):  # an empty address is no cluster named, never "measure here"
        assert_one_line_error(cli(command, "--cluster", " "), "--cluster", "names no Dask scheduler")


def test_paths_that_are_files_are_refused_before_any_work(cli, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_one_line_error(cli("run", "--workloads", "resnet50.mean.7x7x2048", "--out", str(afile)), str(afile), "a file")
    assert_one_line_error(cli("measure", "--workload", "resnet50.mean.7x7x2048", "--save-arrays", str(afile)),
                          str(afile), "a file")
    assert_one_line_error(cli("list", env={"TVM_SUITE_CACHE": str(afile)}), "TVM_SUITE_CACHE", str(afile))
    assert afile.read_text() == "x"


def test_relative_paths_are_the_callers(cli, tmp_path):
    """A relative --out is resolved against the caller's working directory, not the repository
    asv runs in."""
    (tmp_path / "here").mkdir()
    done = cli("report", "--results", "nowhere", "--out", "r", cwd=tmp_path / "here")
    assert_one_line_error(done, str(tmp_path / "here" / "nowhere"))


@pytest.mark.slow  # a whole run: asv, a real kernel built and measured, the report
def test_run_from_another_directory_writes_where_it_was_asked(cli, tmp_path):
    from conftest import REPO_ROOT

    before = sorted(p.name for p in REPO_ROOT.iterdir())
    done = cli("run", "--workloads", "resnet50.mean.7x7x2048", "--dtypes", "float32", "--orders", "default",
               "--out", "rel", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert list((tmp_path / "rel" / "results").glob("*/machine.json")) and (tmp_path / "rel" / "report" / "index.html").is_file()
    assert sorted(p.name for p in REPO_ROOT.iterdir()) == before  # nothing new in the repository
