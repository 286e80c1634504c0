"""Which loops the triage interpreter (:mod:`suite.triage.interp`) runs as lanes, all their
iterations at once.

A loop runs as one numpy operation over all its iterations (a *lane* axis) when nothing one
iteration writes is touched by another: every buffer written in its body is written at one index,
that index determines the loop variable (an affine term of it, the rest made of variables bound
outside the loop), and the body reads that buffer at that same index only. Such a loop can be
hoisted inside the loops it encloses, so a conv2d's output loops become lanes and its reduction
loops stay serial (147 numpy steps over 802,816 lanes for the seed conv2d). Other loops run one
iteration at a time. Accesses whose indices are affine in the lanes read and write strided views
of the buffers, without index arrays (:class:`suite.triage.values.Affine`).
"""

from __future__ import annotations

from suite.triage import ir
from suite.triage.values import Unevaluable

#: Most lanes one vectorized statement evaluates at once (float64 temporaries of 16 MiB).
LANE_CAP = 1 << 21


def vectorizable(loop: ir.For) -> bool:
    """Whether ``loop``'s iterations may run at once (see the module docstring): its body allocates
    nothing, and each buffer it writes is written at one index that determines the loop variable
    (given the variables bound outside the loop) and read at that index only."""
    body = loop.body
    inner, substitution = {}, {}  # variables bound inside: the extent each ranges over (None: not known)
    for node in ir.walk(body):
        if isinstance(node, (ir.Alloc,)) or (isinstance(node, ir.Block) and node.allocs):
            return False
        if isinstance(node, ir.For):
            constant = isinstance(node.start, ir.Const) and isinstance(node.extent, ir.Const)
            inner[id(node.var)] = (int(node.start.value), int(node.extent.value)) if constant else None
        elif isinstance(node, ir.LetStmt):
            inner[id(node.var)] = None
            substitution[id(node.var)] = node.value
        elif isinstance(node, ir.Block):
            for it, binding in zip(node.iters, node.bindings):
                inner[id(it.var)] = None
                substitution[id(it.var)] = binding
    stores_at: dict[int, list] = {}  # by the buffer that holds the elements: a view's base
    loads_at: dict[int, list] = {}
    for node in ir.walk(body):
        if isinstance(node, ir.Store):
            stores_at.setdefault(id(node.buf.root), []).append(
                (node.buf, tuple(_substitute(i, substitution) for i in node.indices)))
        for expr in ir.statement_expressions(node):
            for sub in ir.subexpressions(expr):
                if isinstance(sub, ir.Let):
                    return False
                if isinstance(sub, ir.Load):
                    loads_at.setdefault(id(sub.buf.root), []).append(
                        (sub.buf, tuple(_substitute(i, substitution) for i in sub.indices)))
    for buf, accesses in stores_at.items():
        first, loads = accesses[0], loads_at.get(buf, [])
        if all(_same_access(first, other) for other in accesses[1:] + loads) \
                and any(_determines(component, loop.var, inner) for component in first[1]):
            continue
        if not _partitioned(accesses + loads, loop.var, inner):
            return False
    return True


def _partitioned(accesses: list, var: ir.Var, inner: dict) -> bool:
    """Whether the (buffer, indices) ``accesses`` of one buffer's elements in the body of
    ``var``'s loop (an unrolled body: ``acc[i * 40 + 0]``, ..., ``acc[i * 40 + 39]``) touch, in
    each iteration, elements no other iteration touches: through views laid out alike, one index
    affine in every access, with the same coefficients of ``var`` and of the variables bound
    outside, whose other terms (constants, inner loops) all lie within a span smaller than
    ``var``'s coefficient."""
    buf = accesses[0][0]
    if any(other.shape != buf.shape or other.offset != buf.offset for other, _ in accesses):
        return False
    for position in range(len(buf.shape)):
        forms = [_affine(indices[position]) for _, indices in accesses]
        if any(form is None for form in forms):
            continue
        stride = forms[0][0].get(id(var), 0)
        outer = {n: c for n, c in forms[0][0].items() if n != id(var) and n not in inner}
        low = high = None
        for coefs, const in forms:
            if coefs.get(id(var), 0) != stride or {n: c for n, c in coefs.items()
                                                   if n != id(var) and n not in inner} != outer:
                break
            lo = hi = const
            for name, coef in coefs.items():
                if name in inner:
                    if inner[name] is None:
                        break
                    start, extent = inner[name]
                    ends = (coef * start, coef * (start + extent - 1))
                    lo, hi = lo + min(ends), hi + max(ends)
            else:
                low, high = lo if low is None else min(low, lo), hi if high is None else max(high, hi)
                continue
            break
        else:
            if stride != 0 and high - low < abs(stride):
                return True
    return False


def _affine(expr: ir.Expr):
    """({variable id: coefficient}, constant) of an integer expression affine in its variables
    (no zero coefficients); None where it is not."""
    if isinstance(expr, ir.Const):
        return ({}, expr.value) if isinstance(expr.value, int) and not isinstance(expr.value, bool) else None
    if isinstance(expr, ir.Var):
        return {id(expr): 1}, 0
    if isinstance(expr, ir.Cast) and ir.kind_of(expr.dtype) in "iu":
        return _affine(expr.a)
    if isinstance(expr, ir.Binary) and expr.op in ("add", "sub"):
        left, right = _affine(expr.a), _affine(expr.b)
        if left is None or right is None:
            return None
        sign = 1 if expr.op == "add" else -1
        coefs = dict(left[0])
        for name, coef in right[0].items():
            coefs[name] = coefs.get(name, 0) + sign * coef
        return {n: c for n, c in coefs.items() if c}, left[1] + sign * right[1]
    if isinstance(expr, ir.Binary) and expr.op == "mul":
        for const, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(const, ir.Const) and isinstance(const.value, int) and not isinstance(const.value, bool):
                found = _affine(other)
                k = const.value
                return None if found is None else ({n: c * k for n, c in found[0].items() if c * k}, found[1] * k)
    return None


def _same_access(a: tuple, b: tuple) -> bool:
    """Whether two (buffer, indices) accesses of one buffer's elements are of the same element:
    through the same view of them (or views laid out alike) at the same indices."""
    (buf, indices), (other, other_indices) = a, b
    return buf.shape == other.shape and buf.offset == other.offset and _same_tuple(indices, other_indices)


def _substitute(expr: ir.Expr, mapping: dict, depth: int = 0) -> ir.Expr:
    if depth > 64:
        raise Unevaluable("block bindings refer to each other in a cycle")
    if isinstance(expr, ir.Var):
        replacement = mapping.get(id(expr))
        return expr if replacement is None else _substitute(replacement, mapping, depth + 1)
    if isinstance(expr, ir.Binary):
        return ir.Binary(expr.op, _substitute(expr.a, mapping, depth), _substitute(expr.b, mapping, depth), expr.dtype)
    if isinstance(expr, ir.Unary):
        return ir.Unary(expr.op, _substitute(expr.a, mapping, depth), expr.dtype)
    if isinstance(expr, ir.Cast):
        return ir.Cast(expr.dtype, _substitute(expr.a, mapping, depth))
    if isinstance(expr, ir.Select):
        return ir.Select(*(_substitute(e, mapping, depth) for e in (expr.cond, expr.a, expr.b)), expr.dtype, expr.lazy)
    if isinstance(expr, ir.Load):
        return ir.Load(expr.buf, tuple(_substitute(i, mapping, depth) for i in expr.indices))
    return expr


def _same(a: ir.Expr, b: ir.Expr) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.Const):
        return a.value == b.value and a.dtype == b.dtype
    if isinstance(a, ir.Var):
        return False
    if isinstance(a, ir.Binary):
        return a.op == b.op and _same(a.a, b.a) and _same(a.b, b.b)
    if isinstance(a, ir.Unary):
        return a.op == b.op and _same(a.a, b.a)
    if isinstance(a, ir.Cast):
        return a.dtype == b.dtype and _same(a.a, b.a)
    if isinstance(a, ir.Select):
        return a.lazy == b.lazy and _same(a.cond, b.cond) and _same(a.a, b.a) and _same(a.b, b.b)
    if isinstance(a, ir.Load):
        return a.buf is b.buf and _same_tuple(a.indices, b.indices)
    return False


def _same_tuple(a, b) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def _linear(expr: ir.Expr, var: ir.Var):
    """{variable id: coefficient} of an integer expression affine in ``var`` and in the variables
    whose coefficient it gives (a variable in a term that is not affine counts with None); None
    where ``var`` enters otherwise, or a load does."""
    if isinstance(expr, ir.Const):
        return {}
    if isinstance(expr, ir.Var):
        return {id(expr): 1}
    if isinstance(expr, ir.Cast) and ir.kind_of(expr.dtype) in "iu":
        return _linear(expr.a, var)
    if isinstance(expr, ir.Binary) and expr.op in ("add", "sub"):
        left, right = _linear(expr.a, var), _linear(expr.b, var)
        if left is None or right is None:
            return None
        sign = 1 if expr.op == "add" else -1
        for name, coef in right.items():
            left[name] = None if coef is None or left.get(name, 0) is None else left.get(name, 0) + sign * coef
        return left
    if isinstance(expr, ir.Binary) and expr.op == "mul":
        for const, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(const, ir.Const):
                found = _linear(other, var)
                return None if found is None else {n: None if c is None else c * int(const.value)
                                                   for n, c in found.items()}
    names, loads = {}, False
    for sub in ir.subexpressions(expr):
        if sub is var:
            return None
        if isinstance(sub, ir.Var):
            names[id(sub)] = None
        loads |= isinstance(sub, ir.Load)
    return None if loads else names


def _determines(component: ir.Expr, var: ir.Var, inner: dict) -> bool:
    """Whether two iterations of ``var``'s loop meet ``component`` at different values, whatever
    the variables bound inside the loop (``inner``: each one's extent) are: its coefficient of
    ``var`` outweighs how far the inner variables can move it (a flattened index, ``i * 6 + j``
    with ``j`` in 0..5, determines ``i``), and nothing else bound inside enters."""
    found = _linear(component, var)
    if found is None or not found.get(id(var)):
        return False
    spread = 0
    for name, coef in found.items():
        if name == id(var) or name not in inner:
            continue
        if coef is None or inner[name] is None:
            return False
        spread += abs(coef) * (inner[name][1] - 1)
    return spread < abs(found[id(var)])
