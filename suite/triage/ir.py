"""The suite's own representation of a TensorIR PrimFunc: what the triage interpreter evaluates.

Plain Python objects, no TVM: :mod:`suite.triage.tvmscript` translates TVM's parsed TIR into them, so
the interpreter (:mod:`suite.triage.interp`) shares no code with TVM's compiler. Variables and
buffers compare by identity, as TIR's do.

Expressions: :class:`Const`, :class:`Var`, :class:`Load`, :class:`Binary`, :class:`Unary`,
:class:`Cast`, :class:`Select`, :class:`Let`. Statements: :class:`Seq`, :class:`For`,
:class:`Block` (a block realize and its block in one), :class:`Store`, :class:`If`,
:class:`LetStmt`, :class:`Alloc`, :class:`Assert`, :class:`Nop`.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def kind_of(dtype: str) -> str:
    """``"f"`` (float), ``"i"`` (signed), ``"u"`` (unsigned) or ``"b"`` (bool) of a scalar dtype."""
    if dtype == "bool":
        return "b"
    if dtype.startswith(("float", "bfloat")):
        return "f"
    if dtype.startswith("uint"):
        return "u"
    if dtype.startswith("int"):
        return "i"
    raise ValueError(f"dtype {dtype!r}")


def bits_of(dtype: str) -> int:
    return 1 if dtype == "bool" else int("".join(ch for ch in dtype if ch.isdigit()))


# ----------------------------------------------------------------------------- expressions


class Expr:
    dtype: str


@dataclass(eq=False)
class Var(Expr):
    name: str
    dtype: str

    def __repr__(self):
        return self.name


@dataclass(eq=False)
class Const(Expr):
    value: int | float | bool
    dtype: str


@dataclass(eq=False)
class Buf:
    """A buffer: a parameter of the function, or allocated by a block (``alloc_buffer``)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    param: bool = False
    scope: str = "global"

    def __repr__(self):
        return self.name

    @property
    def size(self) -> int:
        size = 1
        for extent in self.shape:
            size *= extent
        return size


@dataclass(eq=False)
class Load(Expr):
    buf: Buf
    indices: tuple[Expr, ...]

    @property
    def dtype(self) -> str:
        return self.buf.dtype


@dataclass(eq=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(eq=False)
class Unary(Expr):
    op: str
    a: Expr
    dtype: str


@dataclass(eq=False)
class Cast(Expr):
    dtype: str
    a: Expr


@dataclass(eq=False)
class Select(Expr):
    """``T.if_then_else`` (``lazy``: only the chosen side is evaluated) or ``T.Select`` (both)."""

    cond: Expr
    a: Expr
    b: Expr
    dtype: str
    lazy: bool


@dataclass(eq=False)
class Let(Expr):
    var: Var
    value: Expr
    body: Expr

    @property
    def dtype(self) -> str:
        return self.body.dtype


# ----------------------------------------------------------------------------- statements


class Stmt:
    pass


@dataclass(eq=False)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(eq=False)
class For(Stmt):
    var: Var
    start: Expr
    extent: Expr
    body: Stmt
    kind: str = "serial"  # serial, parallel, vectorized, unrolled, thread_binding


@dataclass(eq=False)
class IterVar:
    var: Var
    start: Expr
    extent: Expr
    kind: str  # "S" data parallel, "R" reduction, "O" other


@dataclass(eq=False)
class Block(Stmt):
    name: str
    iters: tuple[IterVar, ...]
    bindings: tuple[Expr, ...]
    predicate: Expr | None
    init: Stmt | None
    body: Stmt
    allocs: tuple[Buf, ...] = ()


@dataclass(eq=False)
class Store(Stmt):
    buf: Buf
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    orelse: Stmt | None


@dataclass(eq=False)
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@dataclass(eq=False)
class Alloc(Stmt):
    buf: Buf
    body: Stmt


@dataclass(eq=False)
class Assert(Stmt):
    cond: Expr
    message: str
    body: Stmt


@dataclass(eq=False)
class Nop(Stmt):
    pass


@dataclass(eq=False)
class Program:
    """One PrimFunc: its name, parameter buffers in order, and body."""

    name: str
    params: tuple[Buf, ...]
    body: Stmt

    def written_params(self) -> list[Buf]:
        """The parameters some store writes, in parameter order: its outputs, as TVM takes a
        PrimFunc's (a buffer the body writes is an output, one it only reads an input)."""
        written = {id(s.buf) for s in stores(self.body)}
        return [p for p in self.params if id(p) in written]

    def inputs(self) -> list[Buf]:
        """The parameters no store writes (the body only reads them), in parameter order."""
        written = {id(b) for b in self.written_params()}
        return [p for p in self.params if id(p) not in written]


# ----------------------------------------------------------------------------- walking


def children(stmt: Stmt) -> tuple[Stmt, ...]:
    if isinstance(stmt, Seq):
        return stmt.stmts
    if isinstance(stmt, (For, LetStmt, Alloc, Assert)):
        return (stmt.body,)
    if isinstance(stmt, Block):
        return (stmt.init, stmt.body) if stmt.init is not None else (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.then, stmt.orelse) if stmt.orelse is not None else (stmt.then,)
    return ()


def walk(stmt: Stmt):
    """Every statement under ``stmt`` (itself included), parents first."""
    pending = [stmt]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(children(node)))


def stores(stmt: Stmt) -> list[Store]:
    return [s for s in walk(stmt) if isinstance(s, Store)]


def subexpressions(expr: Expr):
    """``expr`` and every expression inside it."""
    pending = [expr]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, Load):
            pending.extend(node.indices)
        elif isinstance(node, Binary):
            pending.extend((node.a, node.b))
        elif isinstance(node, (Unary, Cast)):
            pending.append(node.a)
        elif isinstance(node, Select):
            pending.extend((node.cond, node.a, node.b))
        elif isinstance(node, Let):
            pending.extend((node.value, node.body))


def statement_expressions(stmt: Stmt) -> list[Expr]:
    """The expressions a statement itself holds (not those of its children)."""
    if isinstance(stmt, For):
        return [stmt.start, stmt.extent]
    if isinstance(stmt, Block):
        found = list(stmt.bindings) + [e for it in stmt.iters for e in (it.start, it.extent)]
        return found + ([stmt.predicate] if stmt.predicate is not None else [])
    if isinstance(stmt, Store):
        return [*stmt.indices, stmt.value]
    if isinstance(stmt, (If, Assert)):
        return [stmt.cond]
    if isinstance(stmt, LetStmt):
        return [stmt.value]
    return []
