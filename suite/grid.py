"""The parameter grid of the benchmarks: workloads x dtypes x targets x loop orders.

Environment variables narrow it (asv passes the environment to every benchmark process):
``TVM_SUITE_WORKLOADS`` (comma-separated workload ids or model names such as ``resnet18``),
``TVM_SUITE_DTYPES``, ``TVM_SUITE_TARGETS``, ``TVM_SUITE_ORDERS``.
"""

from __future__ import annotations

import os

from suite import schedules, targets, workloads


def _listed(variable: str) -> list[str] | None:
    value = os.environ.get(variable, "").strip()
    return [item.strip() for item in value.split(",") if item.strip()] if value else None


def select_workloads(names: list[str] | None) -> list[str]:
    """Workload ids for a list of ids and model names (None: the default set)."""
    if not names:
        return workloads.default_ids()
    ids = []
    for name in names:
        if name in workloads.all_models():
            ids += [w.id for w in workloads.catalog(name)]
        else:
            ids.append(workloads.get(name).id)
    return list(dict.fromkeys(ids))


def benchmark_grid() -> tuple[list[str], list[str], list[str], list[str]]:
    dtypes = [workloads.check_dtype(d) for d in _listed("TVM_SUITE_DTYPES") or workloads.DTYPES]
    target_names = [targets.get(t).name for t in _listed("TVM_SUITE_TARGETS") or targets.names()]
    orders = [schedules.check_order(o) for o in _listed("TVM_SUITE_ORDERS") or schedules.ORDERS]
    return select_workloads(_listed("TVM_SUITE_WORKLOADS")), dtypes, target_names, orders
