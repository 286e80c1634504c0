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

import functools
import re
from dataclasses import dataclass, fields

COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


@functools.cache  # asked for each operation the interpreter evaluates: millions of times in an unrolled program
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


@functools.cache
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
    """A buffer: a parameter of the function, or allocated (``alloc_buffer``); or a view, declared
    over another's data (``base``, the buffer that holds the elements, from its element ``offset``
    on, in the same dtype): lowered TIR's flattened buffers (``tirx.FlattenBuffer``'s
    ``A_1 = A.view(32)``, ``T.decl_buffer(..., data=A.data)``)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    param: bool = False
    scope: str = "global"
    base: Buf | None = None
    offset: int = 0

    def __repr__(self):
        return self.name

    @property
    def root(self) -> Buf:
        """The buffer whose elements these are: ``base``, or this one where it holds its own."""
        return self if self.base is None else self.base

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
    kind: str = "serial"  # serial, parallel, vectorized, unrolled, thread_binding; lanes: one vector store's


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
        written = {id(s.buf.root) for s in stores(self.body)}
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


# ----------------------------------------------------------------------------- as JSON

#: The node classes a program's JSON may name.
_NODES = {cls.__name__: cls for cls in (Const, Load, Binary, Unary, Cast, Select, Let, Seq, For, IterVar, Block, Store,
                                        If, LetStmt, Alloc, Assert, Nop, Program)}
_DTYPE = re.compile(r"(bool|(b?float|u?int)\d{1,3}(x\d{1,4})?)")
_SCALARS = {"str": str, "bool": bool, "int | float | bool": (int, float, bool)}


class BadProgram(ValueError):
    """A program's JSON that is not one :func:`to_json` writes."""


def to_json(program: Program) -> dict:
    """``program`` as JSON data: each variable and buffer once (``vars``, ``bufs``: identity kept),
    nodes as ``[class, field...]``. What a confined child that read the program hands the suite."""
    variables, buffers, seen = [], [], {}

    def encode(value):
        if isinstance(value, Var):
            if id(value) not in seen:
                seen[id(value)] = len(variables)
                variables.append([value.name, value.dtype])
            return {"var": seen[id(value)]}
        if isinstance(value, Buf):
            if id(value) not in seen:
                base = None if value.base is None else encode(value.base)["buf"]  # a view's base first
                seen[id(value)] = len(buffers)
                buffers.append([value.name, list(value.shape), value.dtype, value.param, value.scope, base,
                                value.offset])
            return {"buf": seen[id(value)]}
        if isinstance(value, tuple):
            return {"tuple": [encode(item) for item in value]}
        if type(value).__name__ in _NODES:
            return [type(value).__name__, *(encode(getattr(value, f.name)) for f in fields(value))]
        return value

    return {"vars": variables, "bufs": buffers, "program": encode(program)}


def from_json(data) -> Program:
    """The program :func:`to_json` wrote, every node, field and type checked (BadProgram
    otherwise): the JSON comes from a child that read untrusted text."""
    try:
        variables = [Var(_checked(name, str), _dtype(dtype)) for name, dtype in data["vars"]]
        buffers = []
        for name, shape, dtype, param, scope, base, offset in data["bufs"]:
            buffers.append(Buf(_checked(name, str), tuple(_checked(d, int) for d in shape), _dtype(dtype),
                               _checked(param, bool), _checked(scope, str),
                               None if base is None else _base(buffers, _checked(base, int), dtype),
                               _checked(offset, int)))
            view = buffers[-1]
            if view.base is not None and not 0 <= view.offset <= view.base.size - view.size:
                raise ValueError(f"view {view.name:.40} reaches beyond its base")
        program = _decode(data["program"], variables, buffers)
    except (KeyError, TypeError, ValueError, IndexError, RecursionError) as err:
        raise BadProgram(f"not a program's JSON: {err}") from None
    if not isinstance(program, Program):
        raise BadProgram("not a program's JSON: no Program at its root")
    return program


def _decode(value, variables: list, buffers: list):
    if isinstance(value, dict):
        (key, item), = value.items()
        if key == "var":
            return variables[_checked(item, int)]
        if key == "buf":
            return buffers[_checked(item, int)]
        if key == "tuple":
            return tuple(_decode(v, variables, buffers) for v in item)
        raise ValueError(f"a {key!r} reference")
    if isinstance(value, list):
        cls = _NODES[value[0]]
        kinds = fields(cls)
        if len(value) != len(kinds) + 1:
            raise ValueError(f"{value[0]} with {len(value) - 1} fields")
        decoded = [_decode(v, variables, buffers) for v in value[1:]]
        for kind, field_value in zip(kinds, decoded):
            _check_field(cls.__name__, kind, field_value)
        return cls(*decoded)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"a {type(value).__name__}")


def _check_field(node: str, kind, value) -> None:
    """A decoded field against its annotation: a scalar of its type, a node of its base, a tuple of them."""
    annotation = str(kind.type)
    if annotation in _SCALARS:
        _checked(value, _SCALARS[annotation])
        if kind.name == "dtype":
            _dtype(value)
        return
    optional = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    if optional and value is None:
        return
    if base.startswith("tuple["):
        item = {"Stmt": Stmt, "Expr": Expr, "IterVar": IterVar, "Buf": Buf}[base[len("tuple["):].split(",")[0]]
        if not (isinstance(value, tuple) and all(isinstance(v, item) for v in value)):
            raise ValueError(f"{node}.{kind.name} is not a tuple of {item.__name__}")
        return
    wanted = {"Stmt": Stmt, "Expr": Expr, "Var": Var, "Buf": Buf}[base]
    if not isinstance(value, wanted):
        raise ValueError(f"{node}.{kind.name} is not a {base}")


def _base(buffers: list, index: int, dtype: str) -> Buf:
    """A view's base, written before it: a buffer that holds its own elements, of the view's dtype."""
    if not 0 <= index < len(buffers) or buffers[index].base is not None or buffers[index].dtype != dtype:
        raise ValueError(f"a view over buffer {index}, which is not a buffer of its own in {dtype:.20}")
    return buffers[index]


def _checked(value, kind):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{value!r:.40} where a {getattr(kind, '__name__', 'number')} belongs")
    return value


def _dtype(value) -> str:
    if not isinstance(value, str) or not _DTYPE.fullmatch(value):
        raise ValueError(f"the dtype {value!r:.40}")
    return value
