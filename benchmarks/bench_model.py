"""A whole model's logits against float64, per model x dtype x target x order (suite.model.grid:
the grid, its environment contract TVM_SUITE_MODELS, TVM_SUITE_MODEL_INPUTS, TVM_SUITE_MODEL_BUDGET_S,
and the measurement; docs/model.md)."""

from .common import ModelBenchmark


class ModelAccuracy(ModelBenchmark):
    """RMSE, its ratios and the largest error (asv); top-1 and top-5 agreement (kept beside asv's results)."""


class ModelInteger(ModelBenchmark):
    """int8: elements of the calls' outputs unlike the exact integer pipeline's (0, or a wrong kernel)."""

    dtypes = "INTEGER_DTYPES"


class ModelTuned(ModelBenchmark):
    """tuned's RMSE over default's on the same target and dtype."""

    tuned_only = True


class ModelTwin(ModelBenchmark):
    """The same metrics of the IEEE twin's chain, on targets with one (hexagon-v68-qf); int8 has none."""

    twin_only = True
    dtypes = "FLOAT_DTYPES"


class ModelCost(ModelBenchmark):
    """Packets every call of the model executed per input, on emulated targets (exact)."""

    emulated_only = True
