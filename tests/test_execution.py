"""The one path for a kernel (suite.core.execution): each stage's failure a field of its result,
with its stage and status, and a missing tool raised; on stand-in targets (no TVM)."""

from __future__ import annotations

import numpy as np
import pytest

from suite.core import execution
from suite.core.record import Status
from suite.errors import Skipped, UserError
from suite.targets.base import Kernel, Mode, Output, Target


class Doubling(Kernel):
    def __init__(self, inputs):
        self.inputs = inputs

    def run(self):
        pass

    def output(self):
        return self.inputs[0] * 2

    def time(self, repeat=5):
        return [0.5] * repeat


class StandIn(Target):
    """A target that writes a file and doubles its input; ``fail`` names a stage and what it raises."""

    name = "stand-in"

    def __init__(self, fail=None, mode=Mode.NATIVE, twin=False):
        self.fail, self.mode, self.ieee_twin = fail or {}, mode, twin

    def identity(self):
        return {"name": self.name}

    def tvm_target(self):
        return None

    def build(self, func, path):
        if "build" in self.fail:
            raise self.fail["build"]
        path.write_bytes(b"not an ELF file")

    def load(self, path, inputs, output_shape, dtype):
        if "run" in self.fail:
            raise self.fail["run"]
        return Doubling(inputs)

    def load_ieee_twin(self, path, inputs, output_shape, dtype):
        if "twin" in self.fail:
            raise self.fail["twin"]
        return Doubling([inputs[0] + 1])


ARGUMENTS = [np.arange(4.0), Output((4,), "float64")]


def test_a_kernel_built_and_run_with_its_twin(tmp_path):
    built = execution.build(StandIn(mode=Mode.EMULATED, twin=True), "func", tmp_path / "k.so")
    assert built.failure is None and built.compile_s >= 0 and built.code is None  # not an ELF: no identity
    ran = execution.run(built, ARGUMENTS, timed=True)
    assert ran.failure is None and ran.emulated_s == 0.5
    np.testing.assert_array_equal(ran.output, [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(ran.twin, [2.0, 4.0, 6.0, 8.0])
    assert execution.run(built, ARGUMENTS, twin=False).twins is None


@pytest.mark.parametrize("stage, error, status, words", [
    ("build", ValueError("C++ frames\n  at 0x1\nno schedule"), Status.FAILED, "build failed: no schedule"),
    ("build", Skipped("not on this target"), Status.SKIPPED, "not on this target"),
    ("run", RuntimeError("SIGILL at 0x10"), Status.FAILED, "run failed: SIGILL at 0x10"),
    ("twin", RuntimeError("model refused"), Status.FAILED, "IEEE twin run failed: model refused"),
])
def test_a_failure_is_a_field_with_its_stage(tmp_path, stage, error, status, words):
    target = StandIn({stage: error}, mode=Mode.EMULATED, twin=True)
    built = execution.build(target, "func", tmp_path / "k.so")
    failure = built.failure if stage == "build" else execution.run(built, ARGUMENTS).failure
    assert failure.status is status and failure.words() == words
    if stage != "build":
        ran = execution.run(built, ARGUMENTS)
        assert ran.outputs is None and ran.output is None and ran.twin is None


def test_a_missing_tool_is_raised_not_recorded(tmp_path):
    with pytest.raises(UserError, match="install clang"):
        execution.build(StandIn({"build": UserError("install clang")}), "func", tmp_path / "k.so")
    built = execution.build(StandIn({"run": UserError("install qemu")}), "func", tmp_path / "k.so")
    with pytest.raises(UserError, match="install qemu"):
        execution.run(built, ARGUMENTS)
