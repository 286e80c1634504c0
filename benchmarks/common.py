"""Parameters shared by the benchmark modules, and the skip helper.

The parameter grid can be narrowed with environment variables (asv passes the environment
to its benchmark processes), for quick runs and tests:
``TVM_SUITE_WORKLOADS`` (comma-separated ids or model names), ``TVM_SUITE_DTYPES``,
``TVM_SUITE_TARGETS``, ``TVM_SUITE_ORDERS``.
"""

import importlib


#: Why each module safe_import could not import (shown in the skip reasons).
IMPORT_ERRORS = {}


def safe_import(name):
    """Import a suite module, or None when it (or TVM behind it) cannot be imported here."""
    try:
        return importlib.import_module(name)
    except Exception as err:  # the suite must import on any TVM, or none
        IMPORT_ERRORS[name] = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
        return None


def not_imported() -> NotImplementedError:
    """The skip of a benchmark whose suite modules could not be imported, with the reason."""
    reasons = "; ".join(f"{name}: {why}" for name, why in IMPORT_ERRORS.items())
    return NotImplementedError(f"the suite could not be imported ({reasons or 'unknown'})")


grid = safe_import("suite.grid")
measurement = safe_import("suite.measurement")

if grid is not None:
    WORKLOADS, DTYPES, TARGETS, ORDERS = grid.benchmark_grid()
else:
    WORKLOADS, DTYPES, TARGETS, ORDERS = ["seed.conv2d_nhwc_7x7s2"], ["float32"], ["llvm"], ["default"]

PARAMS = [WORKLOADS, DTYPES, TARGETS, ORDERS]
PARAM_NAMES = ["workload", "dtype", "target", "order"]


def measured(workload, dtype, target, order):
    """The cached measurement record of a combination; skips (NotImplementedError) otherwise."""
    if measurement is None:
        raise not_imported()
    record = measurement.measure(workload, dtype, target, order)
    if record["status"] != "ok":
        raise NotImplementedError(f"{record['status']}: {record['reason']}")
    if record.get("compile_only"):
        raise NotImplementedError(f"{target} is compile-only: no output to measure")
    return record


def native(target):
    """Skip (NotImplementedError) timing of a target that runs under emulation or not at all."""
    targets = safe_import("suite.targets")
    if targets is None:
        raise not_imported()
    found = targets.get(target)
    if not getattr(found, "executes", True) or getattr(found, "emulated", False):
        raise NotImplementedError(f"{target} does not execute natively: no latency (see bench_codegen)")
