"""TVMScript read as data: a file's syntax tree checked against what TVMScript needs, before any
parser sees it.

TVM's TVMScript parser evaluates the Python expressions it meets (decorator arguments,
annotations, ``T.func_attr({...})``...) with Python's ``eval``, builtins included: a report pasted
from the internet could run ``exec(...)`` or ``open(...).write(...)`` through it. Triage judges
such reports, so every line that reaches the parser is first checked here, against an allow-list,
and refused with one line naming the line and the construct otherwise. What is allowed:

- at the top of the file, ``@T.prim_func`` functions (``T.prim_func(s_tir=True)`` and other
  literal keyword arguments) and ``@I.ir_module`` classes holding them, ``I.*`` module attributes
  and Relax functions (which triage leaves out unread); other top-level code (imports, a harness
  that builds and runs the module) is never run nor parsed, only blanked;
- in a function: loops, ``with``, ``if``, ``while``, assignments (to names, tuples of names and
  buffer elements), ``assert``, ``return``, ``pass``, ``break``, ``continue``;
- in expressions: literals (numbers, strings, ``True``/``False``/``None``), arithmetic, comparisons,
  ``and``/``or``/``not``, subscripts and slices, tuples, lists and dicts of allowed expressions,
  names the function binds (parameters, loop variables, ``with ... as`` targets, assignments),
  ``range``, the TVMScript namespaces (``T``, ``tir``, ``I``, ``ir``) and their public
  attributes (never a module, never one that binds Python values: :data:`DENIED`), calls of those
  attributes (never one that calls code by name when the program runs, ``T.call_extern``...:
  :data:`CALLS_CODE`, since triage compiles and runs what it judges), and public attributes of
  bound names (``A.shape``; never called).

Everything else is refused: any other name (``exec``, ``open``, ``__import__``, ``tvm``), lambdas,
comprehensions, f-strings, conditional expressions, ``:=``, ``*``/``**`` unpacking, attributes
starting with ``_``, calls of anything but the namespaces' attributes, arithmetic on string or
sequence literals, integer constants of more than :data:`MAX_CONSTANT_BITS` bits (``9 ** 9 ** 9``
would be computed by the parser), and nesting deeper than :data:`MAX_DEPTH` (TVM's parser, the
translation and the interpreter are recursive). The check is iterative, so a deep file cannot
exhaust the stack here.
"""

from __future__ import annotations

import ast
import builtins
import re
import types
from collections.abc import Iterator, Mapping
from pathlib import Path

from suite.errors import UserError

#: The deepest nesting of syntax (statements and expressions, counted from a definition) read:
#: TVM 0.27's parser runs out of Python's stack near 230 (a chain of 230 additions), and the
#: translation and the interpreter recurse too.
MAX_DEPTH = 150
#: The largest integer constant an expression of literals may make (TVM's are 64 bits).
MAX_CONSTANT_BITS = 256
#: The names a TVMScript file refers to its namespaces by (``from tvm.script import tirx as T``,
#: ``ir as I``; the parser binds them itself, whatever the file imports).
NAMESPACES = ("T", "tir", "I", "ir")
#: Builtins TVMScript reads: ``for i in range(16)``.
BUILTINS = frozenset({"range"})
#: Namespace attributes that bind or run Python values rather than build TIR.
DENIED = frozenset({"macro", "inline", "meta_var", "meta_class", "jit", "register_script_namespace", "constexpr",
                    "scalar_wrapper", "static_assert", "add_to_parent", "block_name_suffix_context",
                    "lookup_param", "print_buffer", "pyfunc", "lookup_name", "lookup_vdevice"})

#: TIR that calls code by name when the program runs (a C function, a packed function, any op):
#: triage compiles and runs the programs it judges, so ``T.call_extern("int32", "system", ...)``
#: would run. (``T.call_llvm_intrin`` and ``T.call_llvm_pure_intrin`` name LLVM intrinsics,
#: instructions, as tensorized schedules use them: allowed.)
CALLS_CODE = frozenset({"call_extern", "call_pure_extern", "call_packed", "call_cpacked", "call_packed_lowered",
                        "call_cpacked_lowered", "call_intrin", "call_kernel", "call_ffi_kernel", "tvm_call_packed",
                        "tvm_call_cpacked", "tvm_call_packed_lowered", "tvm_call_cpacked_lowered",
                        "anylist_setitem_call_packed", "anylist_setitem_call_cpacked", "Call",
                        "TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace", "tvm_throw_last_error",
                        "func_call"})  # T.cuda.func_call(..., source_code=...): CUDA source compiled in

#: The annotation and attribute keys a program may carry (loop and block annotations, ``T.attr``,
#: ``T.func_attr``, a trace's ``Annotate``): what schedules and MetaSchedule write. Any other is
#: refused, first among them those whose value TVM turns into code or reads as a file:
#: ``pragma_import_llvm`` (LLVM IR linked into the kernel), ``pragma_import_c`` (C source).
ALLOWED_KEYS = frozenset({
    "pragma_auto_unroll_max_step", "pragma_unroll_explicit", "pragma_loop_partition_hint", "warp_execution",
    "schedule_rule", "layout_free_placeholders", "layout_free_buffers", "double_buffer_scope", "buffer_dim_align",
    "thread_extent", "virtual_thread", "compute_scope", "global_symbol", "tir.noalias", "tirx.noalias",
    "tir.is_scheduled", "tirx.is_scheduled", "tir.is_entry_func", "tirx.is_entry_func", "tir.script_parsing_detect_access",
    "op_pattern",  # Relax's fusion kind of a legalized PrimFunc (pooling, mean carry it): an integer
})
#: Key families allowed whole: MetaSchedule's own annotations and software pipelining's.
ALLOWED_KEY_PREFIXES = ("meta_schedule.", "software_pipeline_")

#: The namespaces below ``T`` that TVMScript names members of (``T.axis.remap``); below any other
#: attribute of a namespace (a class, a function) lies Python's machinery, never TIR.
SUB_NAMESPACES = frozenset({"axis", "cuda", "ptx"})
#: Names TVM's parser binds itself (its globals, ``tvm.script.parser.core.entry._default_globals``,
#: and Python's builtins): a program may not bind them again.
RESERVED_NAMES = frozenset(dir(builtins)) | {"tvm", "I", "ir", "T", "tir", "R", "relax", "Tx", "tirx", "Axis",
                                             "TypeVar"}
#: What a string in a parameter's annotation may be: one word (``float16``, ``global``, ``n``).
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

_SUFFIX = "is not TVMScript; triage reads TVMScript as data and runs none of it"


def key_allowed(key: str) -> bool:
    """Whether a program may carry the annotation or attribute ``key``."""
    return key in ALLOWED_KEYS or key.startswith(ALLOWED_KEY_PREFIXES)


def key_words(key: str) -> str:
    """Why ``key`` is refused, in a few words."""
    why = ("TVM links its value into the kernel as code" if key.startswith("pragma_import") else
           "not an annotation a schedule needs (only the allowed keys are read: they carry no code, source or path)")
    return f"the annotation key {key[:80]!r}: {why}"


class Refused(UserError):
    """A construct TVMScript does not need, in a file triage reads (one line: where and what)."""


class TooDeep(UserError):
    """A file nested deeper than triage reads (one line)."""


def refuse(path: Path, node: ast.AST, construct: str) -> Refused:
    return Refused(f"{path}:{getattr(node, 'lineno', '?')}: {construct} {_SUFFIX}")


# ----------------------------------------------------------------------------- the whole file


def is_prim_func(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any(_last(d) == "prim_func" for d in node.decorator_list)


def is_relax_function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        _last(d) == "function" and _root(d) in ("R", "relax") for d in node.decorator_list)


def is_module(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(_last(d) == "ir_module" for d in node.decorator_list)


def check_file(tree: ast.Module, path: Path, namespaces: Mapping[str, object]) -> None:
    """Refuse (:class:`Refused`, :class:`TooDeep`) anything in the definitions of ``tree`` that
    TVMScript does not need; ``namespaces``: the objects ``T``, ``I``... stand for, by name."""
    for node in tree.body:
        if is_prim_func(node) or is_module(node):
            _check_depth(node, path)
            if isinstance(node, ast.ClassDef):
                _Checker(path, namespaces).module(node)
            else:
                _Checker(path, namespaces).function(node)
            check_keys(node, path)


def check_keys(root: ast.AST, path: Path) -> None:
    """Every key a definition annotates with (a dict's keys: TVMScript's dicts are annotations and
    attributes; ``T.attr``'s second argument) is a string literal of :func:`key_allowed`."""
    for node in ast.walk(root):
        if isinstance(node, ast.Dict):
            keys = node.keys
        elif isinstance(node, ast.Call) and _last(node) == "attr":  # T.attr(node, key, value), key named or not
            keys = [node.args[1]] if len(node.args) >= 2 else []
            keys += [k.value for k in node.keywords if k.arg == "attr_key"]
        else:
            continue
        for key in keys:
            if key is None or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise Refused(f"{path}:{getattr(key, 'lineno', node.lineno)}: an annotation key that is not a string "
                              f"literal {_SUFFIX}")
            if not key_allowed(key.value):
                raise Refused(f"{path}:{key.lineno}: {key_words(key.value)}; triage refuses it")


def _check_depth(root: ast.AST, path: Path) -> None:
    pending = [(root, 0, root.lineno)]
    while pending:
        node, depth, line = pending.pop()
        line = getattr(node, "lineno", line)  # operators and contexts have none: their parent's
        if depth > MAX_DEPTH:
            raise TooDeep(f"{path}:{line}: nested more than {MAX_DEPTH} levels deep (statements and "
                          f"expressions); triage reads programs nested at most {MAX_DEPTH} levels")
        pending.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))


def _last(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""


def _root(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    while isinstance(target, ast.Attribute):
        target = target.value
    return target.id if isinstance(target, ast.Name) else ""


def _chain(node: ast.expr) -> tuple[str, ...] | None:
    """``("T", "axis", "remap")`` of ``T.axis.remap``; None where it is not names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))


def short(node: ast.expr) -> str:
    """How a message names a callee: ``open(...).write``, ``os.system``, ``exec``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{short(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{short(node.func)}(...)"
    if isinstance(node, ast.Subscript):
        return f"{short(node.value)}[...]"
    return type(node).__name__.lower()


# ----------------------------------------------------------------------------- the checker

_STATEMENTS_REFUSED = {
    ast.FunctionDef: "a function definition inside a TVMScript function", ast.AsyncFunctionDef: "an async function",
    ast.ClassDef: "a class definition inside a function", ast.Import: "an import", ast.ImportFrom: "an import",
    ast.Try: "a try statement", ast.Raise: "a raise statement", ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement", ast.Delete: "a del statement", ast.AsyncFor: "an async for",
    ast.AsyncWith: "an async with", ast.Match: "a match statement",
    # allowed in a function, not in an ir_module class
    ast.Assign: "an assignment", ast.AugAssign: "an assignment", ast.AnnAssign: "an assignment",
    ast.Expr: "an expression", ast.For: "a loop", ast.While: "a loop", ast.If: "an if statement",
    ast.With: "a with statement", ast.Return: "a return", ast.Assert: "an assert",
}
_EXPRESSIONS_REFUSED = {
    ast.Lambda: "a lambda", ast.IfExp: "a conditional expression (x if c else y)",
    ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.Await: "an await", ast.Yield: "a yield",
    ast.YieldFrom: "a yield from", ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string",
    ast.NamedExpr: "an assignment expression (:=)", ast.Starred: "a starred expression (*x)", ast.Set: "a set",
}
_BINARY_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift,
               ast.BitOr, ast.BitXor, ast.BitAnd)
_UNARY_OPS = (ast.UAdd, ast.USub, ast.Not, ast.Invert)
_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_SEQUENCES = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr)


class _Checker:
    """One definition's check. Recursion is bounded by :func:`_check_depth`, run first."""

    def __init__(self, path: Path, namespaces: Mapping[str, object]):
        self.path = path
        self.namespaces = {name: value for name, value in namespaces.items() if name in NAMESPACES}
        self.bound: frozenset[str] = frozenset()

    def refuse(self, node: ast.AST, construct: str) -> Refused:
        return refuse(self.path, node, construct)

    # -- definitions

    def module(self, node: ast.ClassDef) -> None:
        self.decorators(node, "ir_module")
        if node.bases or node.keywords:
            raise self.refuse(node, f"class {node.name}'s bases")
        for item in node.body:
            if is_relax_function(item):
                continue  # left out unread (blanked before parsing)
            if is_prim_func(item):
                self.function(item)
            elif isinstance(item, ast.Pass) or _docstring(item):
                continue
            elif isinstance(item, ast.Expr) and isinstance(item.value, ast.Call):
                self.bound = frozenset()
                self.expr(item.value)  # I.module_attrs({...})
            else:
                raise self.refuse(item, _statement_words(item) + " in an ir_module class")

    def decorators(self, node, wanted: str) -> None:
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            chain = _chain(call.func if call else decorator)
            if chain is None or chain[-1] != wanted or not self.namespace_chain(chain):
                raise self.refuse(decorator, f"the decorator @{short(call.func if call else decorator)}")
            if call is not None:
                if call.args:
                    raise self.refuse(call, f"a positional argument to @{short(call.func)}")
                self.bound = frozenset()
                for keyword in call.keywords:
                    self.expr(keyword.value)  # names what it calls, if it calls anything
                    if keyword.arg is None or not _literal(keyword.value):
                        raise self.refuse(keyword.value, f"the argument {keyword.arg or '**'}= of "
                                                         f"@{short(call.func)} (only literals)")

    def function(self, node: ast.FunctionDef) -> None:
        self.decorators(node, "prim_func")
        args = node.args
        if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or args.kw_defaults:
            raise self.refuse(node, f"function {node.name}'s signature (defaults, *args or keyword-only "
                                    "parameters)")
        # the signature is evaluated before the body binds anything: a name assigned in the body
        # still means the parser's own there (tvm, builtins), so none counts as bound
        self.bound = frozenset()
        for arg in args.args:
            if arg.annotation is not None:
                self.expr(arg.annotation)
                self.signature_strings(arg.annotation)
        if node.returns is not None:
            self.expr(node.returns)
        self.bound = frozenset(_bound_names(node))
        self.statements(node.body)

    def signature_strings(self, annotation: ast.expr) -> None:
        """The strings of a parameter's annotation are names (a dtype, a scope, a shape's variable):
        TVM's parser evaluates a string in a buffer's shape as a Python expression."""
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and not _WORD.fullmatch(node.value):
                raise self.refuse(node, f"the string {node.value[:40]!r} in a parameter's annotation (only a dtype, "
                                        "a scope or a name)")

    # -- statements

    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            return
        if isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self.target(target)
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(node.value, _SEQUENCES):
                raise self.refuse(node.value, "a list, tuple or dict bound to a name")
            self.expr(node.value)
        elif isinstance(node, ast.AugAssign):
            self.target(node.target)
            self.operator(node, node.op, _BINARY_OPS)
            self.expr(node.value)
        elif isinstance(node, ast.AnnAssign):
            self.target(node.target)
            self.expr(node.annotation)
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, (ast.For, ast.While)):
            if node.orelse:
                raise self.refuse(node.orelse[0], f"the else of a {'for' if isinstance(node, ast.For) else 'while'} "
                                                  "loop")
            if isinstance(node, ast.For):
                self.target(node.target, names_only=True)
                self.expr(node.iter)
            else:
                self.expr(node.test)
            self.statements(node.body)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            self.statements(node.body)
            self.statements(node.orelse)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, names_only=True)
            self.statements(node.body)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.expr(node.msg)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value)
        else:
            raise self.refuse(node, _statement_words(node))

    def target(self, node: ast.expr, names_only: bool = False) -> None:
        """What an assignment, loop or ``with`` binds: names, tuples of names, buffer elements. Never
        a name TVM's parser already gives a meaning: it looks each name up when it reaches it, so a
        use before the binding would be its module, namespace or builtin (``tvm.os``...)."""
        if isinstance(node, ast.Name):
            if node.id in RESERVED_NAMES or node.id.startswith("_"):  # _: the parser's own temporaries
                raise self.refuse(node, f"binding the name {node.id!r}, which TVM's parser gives a meaning of its own")
            return
        if isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                self.target(element, names_only)
            return
        if isinstance(node, ast.Subscript) and not names_only:
            self.expr(node)
            return
        raise self.refuse(node, f"assigning to {_expression_words(node)}")

    # -- expressions

    def expr(self, root: ast.expr) -> None:
        for node in _expressions(root):
            self.expression(node)

    def expression(self, node: ast.expr) -> None:
        """One expression node (its children are checked on their own)."""
        if type(node) in _EXPRESSIONS_REFUSED:
            raise self.refuse(node, _EXPRESSIONS_REFUSED[type(node)])
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool, type(None))) or isinstance(node.value, complex):
                raise self.refuse(node, f"the literal {node.value!r:.40}")
        elif isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.Attribute):
            self.attribute(node)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.BinOp):
            self.operator(node, node.op, _BINARY_OPS)
            self.arithmetic(node)
        elif isinstance(node, ast.UnaryOp):
            self.operator(node, node.op, _UNARY_OPS)
        elif isinstance(node, ast.BoolOp):
            return
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                self.operator(node, op, _COMPARE_OPS)
        elif isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise self.refuse(node, "**-unpacking in a dict")
        elif not isinstance(node, (ast.Subscript, ast.Slice, ast.Tuple, ast.List)):
            raise self.refuse(node, _expression_words(node))

    def name(self, node: ast.Name) -> None:
        if node.id in self.bound or node.id in self.namespaces or node.id in BUILTINS:
            return
        raise self.refuse(node, f"the name {node.id!r} (not a parameter or variable of the function, nor T or I)")

    def attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("_"):
            raise self.refuse(node, f"the attribute {node.attr}")
        chain = _chain(node)
        if chain is None:  # x[0].attr, f().attr: Python's objects reached from a value (a dict's, a library's)
            raise self.refuse(node, f"the attribute {node.attr} of a computed value")
        if chain[0] in self.namespaces and chain[0] not in self.bound:
            if not self.namespace_chain(chain):
                raise self.refuse(node, f"{'.'.join(chain)} (not a TVMScript name)")
        elif len(chain) > 2:  # A.shape, never A.same_as.func_globals (a method's module globals)
            raise self.refuse(node, f"{'.'.join(chain)} (an attribute of an attribute of {chain[0]})")

    def namespace_chain(self, chain: tuple[str, ...]) -> bool:
        """Whether ``T.axis.remap`` (say) names something TVMScript builds TIR with: each part
        public, none a module, the first one listed by the namespace (``__all__``) and not one
        that binds Python values (:data:`DENIED`)."""
        if chain[0] not in self.namespaces:
            return False
        if len(chain) > 3 or len(chain) == 3 and chain[1] not in SUB_NAMESPACES:
            return False  # T.Add.is_.func_globals: what lies below a TIR class or function is Python's
        value = self.namespaces[chain[0]]
        listed = getattr(value, "__all__", None)
        for position, part in enumerate(chain[1:]):
            if part.startswith("_") or part in DENIED:
                return False
            if position == 0 and listed is not None and part not in listed:
                return False
            value = getattr(value, part, None)
            if value is None or isinstance(value, types.ModuleType):
                return False
        return True

    def call(self, node: ast.Call) -> None:
        if type(node.func) in _EXPRESSIONS_REFUSED:  # (lambda: ...)()
            raise self.refuse(node.func, _EXPRESSIONS_REFUSED[type(node.func)])
        if private := _private_attribute(node.func):  # named before the call it leads to
            raise self.refuse(node, f"the attribute {private}")
        chain = _chain(node.func)
        if chain is not None and len(chain) >= 2 and chain[0] in self.namespaces and chain[-1] in CALLS_CODE:
            raise Refused(f"{self.path}:{node.lineno}: {'.'.join(chain)}(...) calls code by name when the program "
                          "runs; triage compiles and runs the programs it judges, so it reads no such call")
        allowed = chain is not None and (
            chain == ("range",) and "range" not in self.bound
            or chain[0] in self.namespaces and chain[0] not in self.bound and self.namespace_chain(chain))
        if not allowed:
            raise self.refuse(node, f"a call to {short(node.func)}(...)")
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.refuse(keyword.value, f"**-unpacking in a call to {short(node.func)}(...)")

    def operator(self, node: ast.AST, op: ast.AST, allowed: tuple) -> None:
        if not isinstance(op, allowed):
            raise self.refuse(node, f"the operator {type(op).__name__}")

    def arithmetic(self, node: ast.BinOp) -> None:
        for side in (node.left, node.right):
            if isinstance(side, _SEQUENCES) or isinstance(side, ast.Constant) and isinstance(side.value, str):
                raise self.refuse(node, "arithmetic on a string, list, tuple or dict")
        bits = _constant_bits(node)
        if bits is not None and bits > MAX_CONSTANT_BITS:
            raise self.refuse(node, f"an integer constant of more than {MAX_CONSTANT_BITS} bits ({short_source(node)})")


def _private_attribute(node: ast.expr) -> str | None:
    """The first attribute starting with ``_`` on the way from a callee to its root
    (``x.__globals__["open"]``), None where there is none."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return node.attr
        node = node.func if isinstance(node, ast.Call) else node.value
    return None


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None)))


def _statement_words(node: ast.stmt) -> str:
    return _STATEMENTS_REFUSED.get(type(node), f"a {type(node).__name__} statement")


def _expression_words(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return f"a call to {short(node.func)}(...)"
    return _EXPRESSIONS_REFUSED.get(type(node), f"a {type(node).__name__} expression")


def short_source(node: ast.expr, limit: int = 40) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _expressions(root: ast.expr) -> Iterator[ast.expr]:
    """``root`` and every expression in it, parents first (iteratively)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        children = [child for child in ast.iter_child_nodes(node)
                    if isinstance(child, (ast.expr, ast.keyword, ast.comprehension, ast.arguments))]
        for child in reversed(children):
            if isinstance(child, ast.keyword):
                pending.append(child.value)
            elif isinstance(child, ast.expr):
                pending.append(child)
            else:  # a comprehension's or a lambda's parts: refused with their parent before we get here
                pending.extend(c for c in ast.iter_child_nodes(child) if isinstance(c, ast.expr))


def _bound_names(func: ast.FunctionDef) -> set[str]:
    """The names a function binds: its parameters and every name it assigns, loops over or binds
    with ``with ... as``."""
    names = {arg.arg for arg in func.args.args}
    targets: list[ast.expr] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            targets.extend(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets.append(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets.append(node.optional_vars)
    while targets:
        target = targets.pop()
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
    return names


def _constant_bits(node: ast.expr) -> int | None:
    """An upper bound on the bits of an integer expression made of literals only (which the
    parser computes in Python), None for anything else. Never computes the value itself."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return 1
        return max(1, node.value.bit_length()) if isinstance(node.value, int) else None
    if isinstance(node, ast.UnaryOp):
        inner = _constant_bits(node.operand)
        return None if inner is None else inner + 1
    if not isinstance(node, ast.BinOp):
        return None
    left, right = _constant_bits(node.left), _constant_bits(node.right)
    if left is None or right is None:
        return None
    if isinstance(node.op, (ast.Add, ast.Sub, ast.BitOr, ast.BitXor, ast.BitAnd)):
        return max(left, right) + 1
    if isinstance(node.op, ast.Mult):
        return left + right
    if isinstance(node.op, (ast.Pow, ast.LShift)):
        if right > 64:
            return MAX_CONSTANT_BITS + 1
        exponent = node.right.value if isinstance(node.right, ast.Constant) else 1 << right
        return left * max(exponent, 1) if isinstance(node.op, ast.Pow) else left + max(exponent, 0)
    return left  # /, //, %, >>: no larger than the left operand
