"""Every difference between the TVM releases the suite drives, and nothing else.

The rest of the suite calls TVM only through these modules (or through objects they return), so
supporting another release means changing this package alone, one area of drift per module:
:mod:`~suite.compat.release` (the installed release, its namespaces), :mod:`~suite.compat.build`
(targets, builds, lowering), :mod:`~suite.compat.runtime` (devices, arrays, modules),
:mod:`~suite.compat.relax`, :mod:`~suite.compat.schedules` (schedules, traces, dlight),
:mod:`~suite.compat.intrinsics` (tensor intrinsics) and :mod:`~suite.compat.metaschedule`.
Known drift, each checked against the 0.25.0, 0.26.0 and 0.27.0.post1 wheels: 0.27 renamed ``tvm.tir`` to ``tvm.tirx`` and moved
``Schedule``/``meta_schedule``/``dlight`` to ``tvm.s_tir``; Relax's ``TensorStructInfo`` became
``TensorType``; targets are JSON dicts only; runtime arrays are made by ``tvm.runtime.tensor``.
"""
