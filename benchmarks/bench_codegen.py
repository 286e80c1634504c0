"""Hexagon codegen: compile metrics of TVM's real Hexagon code, and emulated runs on qemu-hexagon.

Compile metrics (every Hexagon target) are read from the object and assembly TVM generated: a change
in TVM's Hexagon codegen shows as a step. Emulated time (``hexagon-v68-emu``) is QEMU's time on this
host, not hardware latency. Accuracy of the emulated outputs is tracked by bench_accuracy and
bench_divergence like any target's. Combinations on other targets are skipped.
"""

from .common import PARAM_NAMES, PARAMS, measurement, not_imported, safe_import

targets = safe_import("suite.targets")

#: The first process of a combination builds it; scalar fp16 builds of tuned schedules take minutes
#: of LLVM codegen, and an emulated run of the seed conv2d 1-5 minutes (2 loaded cores).
TIMEOUT_S = 3600


def _hexagon_record(workload, dtype, target, order):
    if measurement is None or targets is None:
        raise not_imported()
    if not hasattr(targets.get(target), "codegen_metrics"):
        raise NotImplementedError(f"{target} has no Hexagon compile metrics")
    record = measurement.measure(workload, dtype, target, order)
    if record["status"] == "skipped":
        raise NotImplementedError(record["reason"])
    return record


class HexagonCodegen:
    """Metrics of the object: compile success, code size, compile time (every Hexagon target)."""

    params = PARAMS
    param_names = PARAM_NAMES
    timeout = TIMEOUT_S

    def setup(self, workload, dtype, target, order):
        self.record = _hexagon_record(workload, dtype, target, order)

    def _value(self, value):
        if self.record["status"] != "ok":  # a failed build fails its metrics: that is the news
            raise RuntimeError(f"{self.record['status']}: {self.record['reason']}")
        return float(value())

    def track_compile_success(self, *params):
        """1 when TVM built a Hexagon object, 0 when the build failed."""
        return 1.0 if self.record["status"] == "ok" else 0.0

    track_compile_success.unit = "flag"

    def track_code_bytes(self, *params):
        """Bytes of executable sections of the object."""
        return self._value(lambda: self.record["codegen"]["code_bytes"])

    track_code_bytes.unit = "bytes"

    def track_compile_seconds(self, *params):
        """Wall seconds to schedule and build (noisy: shared 2-core machine)."""
        return self._value(lambda: self.record["compile_s"])

    track_compile_seconds.unit = "seconds"


class HexagonInstructions:
    """Instruction counts read from the generated assembly (the compile-only qfloat targets keep it;
    the emulated variant, built with HVX float off, does not)."""

    params = PARAMS
    param_names = PARAM_NAMES
    timeout = TIMEOUT_S

    def setup(self, workload, dtype, target, order):
        record = _hexagon_record(workload, dtype, target, order)
        if record["status"] != "ok":
            raise NotImplementedError(f"{record['status']}: {record['reason']}")
        self.codegen = record["codegen"]
        if "qfloat_total" not in self.codegen:
            raise NotImplementedError(f"{target} keeps no assembly to count instructions in")

    def track_qfloat_instructions(self, *params):
        """HVX qfloat instructions: qf16/qf32 arithmetic and hf/sf <-> qf conversions."""
        return float(self.codegen["qfloat_total"])

    track_qfloat_instructions.unit = "instructions"

    def track_qfloat_arith(self, *params):
        return float(self.codegen["qfloat_arith"])

    track_qfloat_arith.unit = "instructions"

    def track_qfloat_convert(self, *params):
        return float(self.codegen["qfloat_convert"])

    track_qfloat_convert.unit = "instructions"

    def track_hvx_fp_vector_instructions(self, *params):
        """Instructions on HVX vectors of hf/sf/qf16/qf32."""
        return float(self.codegen["hvx_fp_vector"])

    track_hvx_fp_vector_instructions.unit = "instructions"

    def track_scalar_fp_instructions(self, *params):
        """Scalar floating-point instructions (sf*/df*, convert_*)."""
        return float(self.codegen["scalar_fp"])

    track_scalar_fp_instructions.unit = "instructions"


class HexagonEmulated:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = TIMEOUT_S

    def setup(self, workload, dtype, target, order):
        if targets is None or not getattr(targets.get(target), "emulated", False):
            raise NotImplementedError(f"{target} is not an emulated target")
        record = _hexagon_record(workload, dtype, target, order)
        if record["status"] != "ok":
            raise NotImplementedError(f"{record['status']}: {record['reason']}")
        self.record = record

    def track_emulated_seconds(self, *params):
        """Guest-measured seconds of the kernel call under qemu-hexagon (not hardware latency)."""
        return float(self.record["emulated_s"])

    track_emulated_seconds.unit = "seconds (emulated)"
