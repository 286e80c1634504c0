"""``tvm-suite triage``: one verdict on a report that TVM computes different numbers after scheduling.

- :mod:`suite.triage.ir`: the suite's own representation of a TensorIR PrimFunc;
  :mod:`suite.triage.tvmscript` reads TVMScript (either spelling), schedules and traces into it.
- :mod:`suite.triage.interp`: the reference, the before program evaluated exactly with numpy
  (no TVM code generation), and the undefined behaviour it finds; its parts:
  :mod:`suite.triage.values` (values, storage, lanes), :mod:`suite.triage.vectorize` (loops run as
  lanes), :mod:`suite.triage.expressions` (TVM's integer semantics), :mod:`suite.triage.intrinsics`
  (math intrinsics as TVM lowers them), :mod:`suite.triage.findings` (undefined behaviour).
- :mod:`suite.triage.inputs`: the inputs (fixed seeds, or ``--inputs``).
- :mod:`suite.triage.verdict`: EQUIVALENT, REORDERED, ARITHMETIC, CHANGED, UNDEFINED, by the
  suite's bounds, metrics and divergence rules; their exit statuses.
- :mod:`suite.triage.pipeline`: the whole triage, target by target; :mod:`suite.triage.report` what it
  prints; :mod:`suite.triage.repro` the reproducer script of a CHANGED verdict.
"""
