"""What the asv benchmarks track: every metric declared once.

Each metric names the benchmark class that computes it and its asv name
(``module.Class.track_name``), its unit, and which direction is worse. What that class reads (a
record's values, see :meth:`suite.core.record.Record.values`) holds each value under its metric's
name.

asv reads every value as lower-is-better and compares values by a factor (``asv compare``, its
Regressions page): a higher-is-better value (GFLOP/s) would be reported as a regression when it
improves, a signed one (a bias shift of -0.18) as changed when compared with itself, one without a
direction (instruction counts) as worse when it grows. So only the metrics where higher is worse
are asv benchmarks (:attr:`Metric.in_asv`); the others are computed by the same classes and kept
beside asv's results (``runs/<machine>/<commit>/values/``, sealed), where the report and the gate
read them: asv's views show what asv can read right, and the gate is the authority on the rest.
The benchmark classes in ``benchmarks/`` get their ``track_*`` methods from this table, and results,
report and gate read it to know what each value means, so no second list exists anywhere.

No TVM here: asv benchmark processes import this to build their classes.
"""

from __future__ import annotations

from dataclasses import dataclass

HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Metric:
    #: the one name of the metric: in the report, thresholds.toml, the gate, the values kept beside
    #: asv's results, and in what its benchmark class reads
    name: str
    benchmark: str  #: the asv benchmark, relative to benchmarks/: module.Class.method
    unit: str
    doc: str
    worse: str | None  #: "higher" or "lower" is worse; None: information, no direction

    @property
    def in_asv(self) -> bool:
        """An asv benchmark: lower is better, as asv reads every value (see the module's docstring)."""
        return self.worse == HIGHER

    @property
    def module(self) -> str:
        return self.benchmark.split(".")[0]

    @property
    def cls(self) -> str:
        return self.benchmark.split(".")[1]

    @property
    def method(self) -> str:
        return self.benchmark.split(".")[2]


def _m(name, benchmark, unit, doc, worse=HIGHER) -> Metric:
    return Metric(name, benchmark, unit, doc, worse)


METRICS: tuple[Metric, ...] = (
    # Latency (native targets): bench_latency
    _m("latency", "bench_latency.Throughput.track_latency_median", "seconds",
       "Median of this run's time_evaluator samples (suite.core.timing), in seconds."),
    _m("gflops", "bench_latency.Throughput.track_gflops", "GFLOP/s",
       "Useful FLOPs per second at the median latency.", worse=LOWER),
    # Accuracy against the float64 reference: bench_accuracy
    _m("ulp_max", "bench_accuracy.Accuracy.track_ulp_max", "ULP",
       "Largest per-element error in ULPs of the reference value (explodes near zero)."),
    _m("ulp_mean", "bench_accuracy.Accuracy.track_ulp_mean", "ULP",
       "Mean per-element error in ULPs of the reference value."),
    _m("ulp_p99", "bench_accuracy.Accuracy.track_ulp_p99", "ULP",
       "99th percentile of the per-element error in ULPs."),
    _m("scaled_error", "bench_accuracy.Accuracy.track_scaled_error", "ULP of max|ref|",
       "max|y - r| in ULPs of max|r|: not blown up by cancellation near zero."),
    _m("bound_fraction", "bench_accuracy.Accuracy.track_bound_fraction", "fraction",
       "Share of the rigorous rounding bound gamma_K * m used; NaN where that bound does not exist (K*u >= 1)."),
    _m("prob_bound_fraction", "bench_accuracy.Accuracy.track_prob_bound_fraction", "fraction",
       "Share of the probabilistic bound gamma~_K(lambda) * m used (Higham & Mary 2019, lambda "
       "= suite.core.bounds.DEFAULT_LAMBDA); above 1: beyond what unbiased rounding explains."),
    _m("accumulation_length", "bench_accuracy.Accuracy.track_accumulation_length", "operations",
       "K: rounded operations an output element accumulates (the bounds' length).", worse=None),
    _m("mean_signed_error", "bench_accuracy.Accuracy.track_mean_signed_error", "value",
       "Mean of y - r: a drift of the whole output to one side (biased rounding).", worse=None),
    _m("nonfinite", "bench_accuracy.Accuracy.track_nonfinite", "elements",
       "Output elements that are inf or nan."),
    # int8 against the exact integer oracle (suite.core.quantized; ULP and rounding bounds mean
    # nothing for integers, so an int8 combination has none of the metrics above): bench_accuracy
    _m("exact_fraction", "bench_accuracy.IntegerAccuracy.track_exact_fraction", "fraction",
       "int8: output elements equal to the integer oracle's (1 in every order, or the kernel is wrong).",
       worse=LOWER),
    _m("max_step_error", "bench_accuracy.IntegerAccuracy.track_max_step_error", "steps",
       "int8: largest |output - oracle| in uint8 output steps."),
    _m("accumulator_mismatches", "bench_accuracy.IntegerAccuracy.track_accumulator_mismatches", "elements",
       "int8: int32 accumulator elements that differ from the exact int64 sum (wrapped as int32 does): "
       "any is a wrong kernel, never within a bound."),
    _m("accumulator_wrapped", "bench_accuracy.IntegerAccuracy.track_accumulator_wrapped", "elements",
       "int8: accumulator elements whose exact value leaves int32 (the inputs' property: the kernel's "
       "output there cannot be the oracle's).", worse=None),
    # Divergence from the default loop order on the same target: bench_divergence
    _m("differ_fraction", "bench_divergence.DivergenceFromDefault.track_differ_fraction", "fraction",
       "Fraction of output elements whose bits differ from the default order's.", worse=None),
    _m("max_ulp_distance", "bench_divergence.DivergenceFromDefault.track_max_ulp_distance",
       "ULP", "Largest distance, in representable values, from the default order's output."),
    _m("exceeds_bound", "bench_divergence.DivergenceFromDefault.track_exceeds_bound", "flag",
       "1 when either output uses more than the probabilistic rounding bound."),
    _m("error_ratio", "bench_divergence.DivergenceFromDefault.track_error_ratio", "ratio",
       "mean|err| against float64 over the default order's: a reordering keeps it near 1."),
    _m("error_ratio_z", "bench_divergence.DivergenceFromDefault.track_error_ratio_z", "z",
       "z-score of the paired per-element differences of |err| (positive: this order is worse).", worse=None),
    _m("bias_shift", "bench_divergence.DivergenceFromDefault.track_bias_shift", "fraction",
       "Change of the mean signed error from the default order's, in units of its mean |err|.", worse=None),
    _m("bias_shift_z", "bench_divergence.DivergenceFromDefault.track_bias_shift_z", "z",
       "|z-score| of the per-element differences from the default order's output.", worse=None),
    # The IEEE twin of an executed qfloat target (same program, IEEE rounding): bench_ieee_twin
    _m("twin_prob_bound_fraction", "bench_ieee_twin.TwinAccuracy.track_prob_bound_fraction", "fraction",
       "prob_bound_fraction of the IEEE twin's output: within the bound, a qfloat output beyond it owes "
       "that to qfloat's rounding."),
    _m("twin_error_ratio", "bench_ieee_twin.TwinDivergence.track_error_ratio", "ratio",
       "error_ratio of the same two orders run by the IEEE twin: near 1, a qfloat mark owes nothing to the "
       "schedule."),
    _m("twin_error_ratio_z", "bench_ieee_twin.TwinDivergence.track_error_ratio_z", "z",
       "error_ratio_z of the IEEE twin's pair.", worse=None),
    _m("twin_bias_shift", "bench_ieee_twin.TwinDivergence.track_bias_shift", "fraction",
       "bias_shift of the IEEE twin's pair.", worse=None),
    _m("twin_bias_shift_z", "bench_ieee_twin.TwinDivergence.track_bias_shift_z", "z",
       "bias_shift_z of the IEEE twin's pair.", worse=None),
    # Hexagon codegen: bench_codegen
    _m("compile_success", "bench_codegen.HexagonCodegen.track_compile_success", "flag",
       "1 when TVM built a Hexagon object (a failed build is an asv failure, null).", worse=LOWER),
    _m("code_bytes", "bench_codegen.HexagonCodegen.track_code_bytes", "bytes",
       "Bytes of executable sections of the object."),
    _m("compile_seconds", "bench_codegen.HexagonCodegen.track_compile_seconds", "seconds",
       "Wall seconds to schedule and build (noisy on a shared machine)."),
    _m("qfloat_instructions", "bench_codegen.HexagonCodegen.track_qfloat_instructions", "instructions",
       "HVX qfloat instructions: qf16/qf32 arithmetic and hf/sf <-> qf conversions.", worse=None),
    _m("qfloat_arith", "bench_codegen.HexagonCodegen.track_qfloat_arith", "instructions",
       "HVX qfloat arithmetic (vmpy/vadd/vsub giving qf16/qf32).", worse=None),
    _m("qfloat_convert", "bench_codegen.HexagonCodegen.track_qfloat_convert", "instructions",
       "Conversions between qfloat and IEEE vectors.", worse=None),
    _m("hvx_fp_vector_instructions", "bench_codegen.HexagonCodegen.track_hvx_fp_vector_instructions",
       "instructions", "Instructions on HVX vectors of hf/sf/qf16/qf32.", worse=None),
    _m("scalar_fp_instructions", "bench_codegen.HexagonCodegen.track_scalar_fp_instructions", "instructions",
       "Scalar floating-point instructions (sf*/df*, convert_*).", worse=None),
    _m("emulated_seconds", "bench_codegen.HexagonEmulated.track_emulated_seconds", "seconds (emulated)",
       "Guest-measured seconds of the kernel call under qemu-hexagon (not hardware latency)."),
    # What the emulated kernel executed, exactly (QEMU's counters; on the qfloat targets those of the
    # program TVM emitted): bench_codegen
    _m("packets", "bench_codegen.HexagonCounts.track_packets", "packets",
       "VLIW packets the kernel call executed: a deterministic lower bound of cycles (one packet issues "
       "per cycle at best; QEMU models no stall), not hardware latency."),
    _m("instructions", "bench_codegen.HexagonCounts.track_instructions", "instructions",
       "Instructions the kernel call executed (constant extenders and nops are none)."),
    _m("hvx_instructions", "bench_codegen.HexagonCounts.track_hvx_instructions", "instructions",
       "HVX instructions the kernel call executed.", worse=None),
    _m("hvx_efficiency", "bench_codegen.HexagonCounts.track_hvx_efficiency", "fraction",
       "The fewest packets HVX's two multiply resources allow for the conv2d or dense (packet_floor) over "
       "the packets executed: 1 is the machine's limit.", worse=LOWER),
    # A whole model's logits against float64 (suite.model.grid; `tvm-suite model`): bench_model.
    # Its series are model x dtype x target x order.
    _m("model_rmse_ratio", "bench_model.ModelAccuracy.track_rmse_ratio", "ratio",
       "RMSE of the logits against float64 / that of llvm default in the same dtype (PyTorch's eager run)."),
    _m("model_rmse_ratio_fp32", "bench_model.ModelAccuracy.track_rmse_ratio_fp32", "ratio",
       "RMSE of the logits against float64 / that of llvm float32 default: what the dtype costs."),
    _m("model_max_abs_error", "bench_model.ModelAccuracy.track_max_abs_error", "value",
       "Largest |logit - float64 logit| over the inputs and classes."),
    _m("model_top1_agreement", "bench_model.ModelAccuracy.track_top1_agreement", "fraction",
       "Inputs whose float64 top class is the target's top class.", worse=LOWER),
    _m("model_top5_agreement", "bench_model.ModelAccuracy.track_top5_agreement", "fraction",
       "Inputs whose float64 top class is among the target's top 5.", worse=LOWER),
    _m("model_rmse", "bench_model.ModelAccuracy.track_rmse", "value",
       "RMSE of the logits against float64 (int8: the float model's, its logits dequantized)."),
    _m("model_integer_differing", "bench_model.ModelInteger.track_differing", "elements",
       "int8: elements of every call's uint8 output unlike the exact integer pipeline's (numpy int64, the "
       "same calls on the same integers): any is a wrong kernel, never within a bound."),
    _m("model_tuned_rmse_ratio", "bench_model.ModelTuned.track_rmse_ratio_default", "ratio",
       "tuned only: RMSE of the logits against float64 / that of default on the same target and dtype."),
    _m("model_twin_rmse_ratio", "bench_model.ModelTwin.track_rmse_ratio", "ratio",
       "model_rmse_ratio of the IEEE twin's chain (the same kernels, IEEE rounding): near the qfloat run's, "
       "its error is the schedule's; far below it, qfloat's arithmetic."),
    _m("model_twin_top1_agreement", "bench_model.ModelTwin.track_top1_agreement", "fraction",
       "model_top1_agreement of the IEEE twin's chain.", worse=LOWER),
    _m("model_twin_tuned_rmse_ratio", "bench_model.ModelTwin.track_rmse_ratio_default", "ratio",
       "tuned only: model_tuned_rmse_ratio of the IEEE twin's chains."),
    _m("model_packets_per_input", "bench_model.ModelCost.track_packets_per_input", "packets",
       "VLIW packets every call of the model executed, per input (emulated targets; exact)."),
    # The PyTorch peer: bench_peer
    _m("peer_ratio", "bench_peer.PyTorchPeer.track_latency_ratio_to_pytorch", "ratio",
       "TVM latency / PyTorch latency for the same layer (a CUDA-graph replay on the GPU, eager on the "
       "CPU): below 1 TVM is faster."),
    _m("peer_ratio_eager", "bench_peer.PyTorchPeer.track_latency_ratio_to_pytorch_eager", "ratio",
       "TVM latency / PyTorch latency with each op launched eagerly from Python (on the GPU mostly "
       "dispatch time; on the CPU the same as peer_ratio)."),
)

#: The metrics that vary between runs of one TVM build (timings). asv sees one number of each per
#: commit: asv.conf.json's ``regressions_thresholds`` has asv report a step of these only from the
#: gate's latency ratio up (the gate judges latency on its samples).
TIMED = ("latency", "peer_ratio", "peer_ratio_eager", "compile_seconds", "emulated_seconds")
BY_NAME = {m.name: m for m in METRICS}
#: asv benchmark name -> metric, of the metrics asv records
BY_BENCHMARK = {m.benchmark: m for m in METRICS if m.in_asv}


def get(name: str) -> Metric:
    return BY_NAME[name]


def get_or_fail(name: str) -> Metric:
    """The metric called ``name``; a UserError listing the known ones otherwise."""
    from suite.errors import UserError

    try:
        return BY_NAME[name]
    except KeyError:
        raise UserError(f"unknown metric {name!r}; known: {', '.join(BY_NAME)}") from None


def of_class(module: str, cls: str) -> list[Metric]:
    """The metrics one benchmark class records."""
    return [m for m in METRICS if m.module == module and m.cls == cls]
