"""`tvm-suite check`'s plan, said before any work: what each side installs and roughly how long,
the source build's cost read from what ccache holds (not guessed from earlier logs)."""

from suite import check
from suite.core.combo import Grid
from suite.history import releases, source_build

GRID = Grid.of(None, ["float32", "float16"], ["llvm"], ["default", "tuned"])


def _sides():
    return [check.Side("baseline", "a" * 40, "v0.26.0", releases.RELEASES["0.26.0"]),
            check.Side("candidate", "b" * 40, "b" * 10, None)]


def test_the_plan_says_what_each_side_installs_and_how_long(tmp_path, monkeypatch):
    monkeypatch.setattr(source_build, "ccache_objects", lambda: 24)  # a few objects: no earlier TVM build
    lines, cold = check.plan(_sides(), tmp_path / "out", GRID)
    assert lines[0].startswith("baseline  v0.26.0 (aaaaaaaaaa): the wheel apache-tvm 0.26.0 with apache-tvm-ffi ")
    assert "a source build (TVM's CMake with LLVM; ccache holds no earlier build: a cold one)" in lines[1]
    assert cold == check.WHEEL_S + check.SOURCE_COLD_S + 2 * check.BENCHMARK_S
    monkeypatch.setattr(source_build, "ccache_objects", lambda: 613)
    lines, cached = check.plan(_sides(), tmp_path / "out", GRID)
    assert "ccache holds 613 objects of earlier builds" in lines[1]
    assert cached == check.WHEEL_S + check.SOURCE_CACHED_S + 2 * check.BENCHMARK_S

