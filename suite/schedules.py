"""Loop orders: how a workload's PrimFunc is scheduled before it is built.

``default`` is the PrimFunc exactly as Relax legalization (or TE, for the seed) produced it.
Other orders are applied with TVM's schedule primitives.
"""

from __future__ import annotations

from suite.errors import UserError

ORDERS = ("default",)


class UnknownOrder(UserError, ValueError):
    pass


class OrderNotApplicable(Exception):
    """The order cannot be applied to this workload (recorded as a skip with this reason)."""


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise UnknownOrder(f"unknown loop order {order!r}; valid orders: {', '.join(ORDERS)}")
    return order


def apply(func, order: str):
    """``func`` scheduled in loop order ``order``."""
    check_order(order)
    return func
