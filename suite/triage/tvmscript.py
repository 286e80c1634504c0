"""TVMScript and TIR for ``tvm-suite triage``: the compat layer's half that reads programs.

Part of the compat layer with :mod:`suite.compat` (every TVM object here comes through it; no
other module touches TVM): TVMScript text as reports paste it, in the installed release's
spelling or the older one (:mod:`suite.triage.spelling`), parsed to PrimFuncs; schedules and
MetaSchedule traces applied to them (:mod:`suite.triage.traces`); and a PrimFunc translated into
the suite's own representation (:mod:`suite.triage.ir`) that the interpreter evaluates without TVM.

TIR's classes moved between releases (0.27: buffers are variables with a ``BufferType``, loads
are ``TensorLoad`` with a ``source``, arithmetic lives in ``tvm.ir.prim``, parameters are the
buffers; before: ``BufferLoad.buffer``, ``PrimFunc.buffer_map``), so nodes are recognized by
class name and read through the attribute each release has. Checked on 0.27.0.post1.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from suite.compat import release, schedules
from suite.errors import UserError, first_line
from suite.triage import ir, script_check
from suite.triage.spelling import modernize, spelling_rules


class NotTVMScript(UserError):
    """A file that is not TVMScript (or a schedule, or a trace) this TVM can read (one line)."""


class Unsupported(UserError):
    """A construct the triage interpreter does not evaluate (one line, naming it)."""


# ----------------------------------------------------------------------------- parsing


def _first_line(node) -> int:
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


#: The largest TVMScript, schedule or trace file read (a printed kernel is kilobytes; the limit
#: keeps a pasted multi-gigabyte file from being read whole).
MAX_FILE_BYTES = 64 << 20


def read_text(path: Path, what: str) -> str:
    try:
        size = Path(path).stat().st_size
        if size > MAX_FILE_BYTES:
            raise UserError(f"{what} {path} is {size / (1 << 20):,.0f} MiB; triage reads files of at most "
                            f"{MAX_FILE_BYTES >> 20} MiB")
        return Path(path).read_bytes().decode("utf-8-sig")  # a byte-order mark, as some editors write, is no text
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{what} {path} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise NotTVMScript(f"{path}: not a text file (not UTF-8)") from None
    except OSError as err:
        raise UserError(f"{what} {path}: unreadable ({err.strerror or err})") from None


def parse_file(path: Path) -> tuple[dict, dict]:
    """The PrimFuncs of a TVMScript file, by name, and facts about it (``modules``: the names of
    its ``@I.ir_module`` classes; ``dropped``: Relax functions left out). The definitions are
    read as data: checked by :mod:`suite.triage.script_check` before TVM's parser (which
    evaluates Python) sees them. The file may hold other Python (imports, a harness) around the
    decorated definitions; it is blanked, never parsed nor run. Relax functions in a module (a
    ``main`` calling the PrimFunc) are dropped: the triage compares PrimFuncs."""
    text = read_text(path, "TVMScript file")
    modern = modernize(text, spelling_rules())
    tree = python_tree(modern, path, "TVMScript")
    script_check.check_file(tree, path, script_namespaces())  # before any parser evaluates a line of it
    lines = modern.splitlines(keepends=True)
    found = [node for node in tree.body if script_check.is_prim_func(node) or script_check.is_module(node)]
    if not found:
        raise NotTVMScript(f"{path}: not TVMScript: no @T.prim_func function or @I.ir_module class in it")
    funcs, facts = {}, {"modules": [], "dropped": []}
    for node in found:
        keep = [True] * len(lines)
        if isinstance(node, ast.ClassDef):
            facts["modules"].append(node.name)
            for item in node.body:
                if script_check.is_relax_function(item):
                    facts["dropped"].append(item.name)
                    for line in range(_first_line(item) - 1, item.end_lineno):
                        keep[line] = False
        start = _first_line(node) - 1
        source = "".join("\n" if i < start or i >= node.end_lineno or not keep[i] else lines[i]
                         for i in range(node.end_lineno))
        parsed = _from_source(source, path)
        for name, func in _prim_funcs(parsed, node.name):
            if name in funcs:
                raise NotTVMScript(f"{path}: two PrimFuncs named {name!r}")
            funcs[name] = func
    if not funcs:
        raise NotTVMScript(f"{path}: its modules hold no PrimFunc (only Relax functions: {', '.join(facts['dropped'])})")
    return funcs, facts


def python_tree(text: str, path: Path, what: str) -> ast.Module:
    """The syntax tree of a file's text, read without running any of it (one line where Python
    cannot read it: a syntax error, or nesting deeper than its own parser goes)."""
    try:
        return ast.parse(text)
    except SyntaxError as err:
        raise NotTVMScript(f"{path}:{err.lineno}: not {what} (not even Python: {err.msg})") from None
    except (RecursionError, MemoryError):  # CPython's parser has a nesting limit of its own
        raise script_check.TooDeep(f"{path}: nested deeper than Python's own parser reads; triage reads programs "
                                   f"nested at most {script_check.MAX_DEPTH} levels") from None


def script_namespaces() -> dict[str, object]:
    """What ``T``, ``tir``, ``I`` and ``ir`` stand for in TVMScript (the objects TVM's parser binds
    them to), for the check of :mod:`suite.triage.script_check`."""
    parser = release.tvm().script.parser
    return {"T": parser.tirx, "tir": parser.tirx, "I": parser.ir, "ir": parser.ir}


def _from_source(source: str, path: Path):
    tvm = release.tvm()
    try:
        return tvm.script.from_source(source)
    except Exception as err:  # DiagnosticError, ParserError, TVMError...: one line with the place
        message = str(err)
        place = re.search(r"-->\s*<str>:(\d+):(\d+)", message)
        errors = [line.strip()[len("error:"):].strip() for line in message.splitlines()
                  if line.strip().startswith("error:")]
        reason = errors[0] if errors else first_line(err)
        reason = reason.split(". If this is deliberate")[0]
        where = f"{path}:{place.group(1)}" if place else str(path)
        if "well-formed" in message:
            detail = [line.strip() for line in message.splitlines() if line.strip().startswith("Traceback:")]
            reason += f" ({detail[0][len('Traceback:'):].strip()})" if detail else ""
        raise NotTVMScript(f"{where}: not TVMScript the installed TVM {release.installed_version()} reads: "
                           f"{reason}") from None


def _prim_funcs(parsed, fallback_name: str):
    """(name, PrimFunc) of a parsed PrimFunc or IRModule."""
    tir = release.tir()
    if isinstance(parsed, tir.PrimFunc):
        yield fallback_name, parsed
        return
    for global_var, func in parsed.functions.items():
        if isinstance(func, tir.PrimFunc):
            yield global_var.name_hint, func


def pick(funcs: dict, name: str | None, path: Path) -> tuple[str, object]:
    """The PrimFunc named ``name`` of a file's, or its only one."""
    if name is not None:
        if name not in funcs:
            raise UserError(f"{path} has no PrimFunc {name!r}; it has {', '.join(sorted(funcs))}")
        return name, funcs[name]
    if len(funcs) > 1:
        raise UserError(f"{path} holds {len(funcs)} PrimFuncs ({', '.join(sorted(funcs))}): name one with --func")
    return next(iter(funcs.items()))


# ----------------------------------------------------------------------------- schedules and traces


def same_program(before, after) -> bool:
    """Whether two PrimFuncs are the same program: structurally equal, the names of variables
    and the function's symbol aside."""
    tvm = release.tvm()
    equal = getattr(tvm.ir, "structural_equal", None)
    if equal is None:  # 0.27: moved to tvm_ffi
        import tvm_ffi

        equal = tvm_ffi.structural_equal
    plain = [f.without_attr("global_symbol") if hasattr(f, "without_attr") else f for f in (before, after)]
    return bool(equal(*plain, map_free_vars=True))


def check_printed(text: str, what: str) -> str:
    """``text``, TVMScript a confined child printed, checked before the suite uses it (builds, the
    reproducer a user runs): one ``@T.prim_func`` definition and nothing else, passing
    :mod:`suite.triage.script_check`. The child read untrusted input, so its text is data too:
    read as a syntax tree only, never parsed by TVM here."""
    tree = python_tree(text, Path(what), "TVMScript")
    if len(tree.body) != 1 or not script_check.is_prim_func(tree.body[0]):
        raise script_check.Refused(f"{what}: the program a confined child printed holds more than one @T.prim_func "
                                   "definition; the suite uses no such text")
    script_check.check_file(tree, Path(what), script_namespaces())
    return text


def script(func, name: str) -> str:
    """The installed TVM's TVMScript of ``func``, named ``name``."""
    text = func.script()
    return re.sub(r"^def \w+\(", f"def {name}(", text, count=1, flags=re.MULTILINE)


# ----------------------------------------------------------------------------- translation


def _dtype(node) -> str:
    dtype = getattr(node, "dtype", None)
    if dtype is None:
        dtype = getattr(getattr(node, "ty", None), "dtype", None)
    text = str(dtype)
    if text in ("", "None", "handle"):
        raise Unsupported(f"an expression without a scalar type: {node}")
    return text


_VECTOR = re.compile(r"(.+)x(\d+)")


def _lanes(dtype: str) -> tuple[str, int]:
    """(the scalar dtype, lanes) of a dtype: ``float32x4`` is (``float32``, 4), ``float32`` (``float32``, 1)."""
    found = _VECTOR.fullmatch(dtype)
    return (found.group(1), int(found.group(2))) if found else (dtype, 1)


def _int(value, what: str) -> int:
    if isinstance(value, int):
        return value
    if type(value).__name__ == "IntImm":
        return int(value.value)
    raise Unsupported(f"{what} {value} is not a constant: the interpreter needs static shapes")


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Mod": "mod", "FloorDiv": "floordiv",
           "FloorMod": "floormod", "Min": "min", "Max": "max", "EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le",
           "GT": "gt", "GE": "ge", "And": "and", "Or": "or", "LShift": "shl", "RShift": "shr",
           "BitwiseAnd": "bitand", "BitwiseOr": "bitor", "BitwiseXor": "bitxor"}
_CALL_BINARY = {"shift_left": "shl", "shift_right": "shr", "bitwise_and": "bitand", "bitwise_or": "bitor",
                "bitwise_xor": "bitxor", "pow": "pow", "powf": "pow", "truncdiv": "div", "truncmod": "mod",
                "floordiv": "floordiv", "floormod": "floormod", "atan2": "atan2", "hypot": "hypot",
                "copysign": "copysign", "ldexp": "ldexp"}
#: The math intrinsics TVM lowers on llvm (src/target/llvm/intrin_rule_llvm.cc, src/target/intrin_rule.cc),
#: each evaluated by the interpreter as the formula TVM lowers it to (suite.triage.intrinsics.MATH).
_CALL_UNARY = {"fabs": "abs", "bitwise_not": "bitnot", "exp": "exp", "exp2": "exp2", "exp10": "exp10", "log": "log",
               "log2": "log2", "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
               "sigmoid": "sigmoid", "erf": "erf", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin",
               "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh",
               "atanh": "atanh", "floor": "floor", "ceil": "ceil", "round": "round", "nearbyint": "nearbyint",
               "trunc": "trunc", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite"}
_FOR_KINDS = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread_binding"}


class _Translator:
    """TVM TIR nodes -> :mod:`suite.triage.ir`, variables and buffers kept as one object each."""

    def __init__(self):
        self.vars: dict[int, ir.Var] = {}
        self.bufs: dict[int, ir.Buf] = {}
        self.holders: dict[int, ir.Buf] = {}  # before 0.27: a data variable's buffer, the one that holds it
        self.block: str = "root"
        self.vectors: dict[int, int] = {}  # the lanes of each buffer's elements, by id(ir.Buf)
        #: Inside a vector statement (VectorizeLoop's output): its lane variable and lanes; each of
        #: its vector expressions is translated as the value of one lane.
        self.lane: tuple[ir.Var, int] | None = None

    def dtype(self, node) -> str:
        """The scalar dtype of ``node``'s values: a vector's (``float32x4``) only inside a vector
        statement of as many lanes, where the expression stands for one lane's value."""
        scalar, lanes = _lanes(_dtype(node))
        if lanes > 1 and (self.lane is None or self.lane[1] != lanes):
            where = "outside a vector store" if self.lane is None else f"in a vector store of {self.lane[1]} lanes"
            raise Unsupported(f"a vector of {lanes} lanes ({node}) {where} is not interpreted (in block {self.block!r})")
        return scalar

    @staticmethod
    def _key(node) -> int:
        return node.__chandle__() if hasattr(node, "__chandle__") else id(node)

    def var(self, node) -> ir.Var:
        key = self._key(node)
        if key not in self.vars:
            self.vars[key] = ir.Var(str(getattr(node, "name", None) or getattr(node, "name_hint", "v")), self.dtype(node))
        return self.vars[key]

    def buf(self, node, param: bool = False, over: ir.Buf | None = None) -> ir.Buf:
        """The buffer of TIR buffer ``node``: one that holds its elements, or (``over``: the buffer
        whose data a ``DeclBuffer`` declares it over) a view of that one's."""
        key = self._key(node)
        if key in self.bufs:
            return self.bufs[key]
        name = str(getattr(node, "name", "buffer"))
        shape = tuple(_int(d, f"the extent of {name}") for d in node.shape)
        strides = [_int(s, f"a stride of {name}") for s in (node.strides or [])]
        if strides and strides != _row_major(shape):
            raise Unsupported(f"buffer {name} has strides {strides}: only row-major buffers are interpreted")
        offset = getattr(node, "elem_offset", 0)
        offset = _int(offset if offset is not None else 0, f"the offset of {name}")
        scope = node.scope() if callable(getattr(node, "scope", None)) else str(getattr(node, "scope", "global"))
        scalar, lanes = _lanes(str(node.dtype))
        if lanes > 1:  # StorageRewrite's vector registers (acc: (1,) of float32x4): as scalars, lane by lane
            if len(shape) != 1 or over is not None or param:
                raise Unsupported(f"buffer {name} of {node.dtype} elements, shape {list(shape)}: only a flat "
                                  "allocation of vectors is interpreted")
            shape = (shape[0] * lanes,)
        if over is None:
            if offset != 0:
                raise Unsupported(f"buffer {name} starts at element offset {offset}")
            made = ir.Buf(name, shape, scalar, param=param, scope=str(scope))
            self.vectors[id(made)] = lanes
            data = getattr(node, "data", None)
            if type(data).__name__ == "Var":  # before 0.27: a declared buffer names its holder's data variable
                self.holders[self._key(data)] = made
        else:  # lowered TIR: FlattenBuffer's flat views (A_1 = A.view(32)), T.decl_buffer(..., data=A.data)
            made = ir.Buf(name, shape, scalar, scope=str(scope), base=over.root, offset=over.offset + offset)
            if made.dtype != over.dtype:
                raise Unsupported(f"buffer {name} is declared over {over.name}'s data as {made.dtype}, where "
                                  f"{over.name} holds {over.dtype}: a reinterpretation is not interpreted")
            if not 0 <= made.offset <= made.base.size - made.size:
                raise Unsupported(f"buffer {name} ({made.size:,} elements from element {made.offset:,}) is declared "
                                  f"over {made.base.name}'s data beyond its {made.base.size:,} elements")
        self.bufs[key] = made
        return made

    def view(self, node) -> ir.Buf:
        """The buffer a ``DeclBuffer`` declares: a view of the elements of the buffer whose data it
        names (0.27: ``T.tirx.buffer_data(A)``; before: ``A``'s data variable)."""
        name = str(getattr(node.buffer, "name", "buffer"))
        data = getattr(node, "data", None)
        if data is None:
            data = node.buffer.data
        over = None
        if type(data).__name__ == "Call" and str(getattr(data.op, "name", "")).endswith("buffer_data") \
                and len(data.args) == 1:
            over = self.bufs.get(self._key(data.args[0]))
        elif type(data).__name__ == "Var":
            over = self.holders.get(self._key(data))
        if over is None:
            raise Unsupported(f"buffer {name} is declared over {data}, data no buffer the interpreter knows holds "
                              f"(in block {self.block!r})")
        return self.buf(node.buffer, over=over)

    # -- expressions

    def expr(self, node) -> ir.Expr:
        kind = type(node).__name__
        if kind == "IntImm":
            dtype = self.dtype(node)
            return ir.Const(bool(node.value) if dtype == "bool" else int(node.value), dtype)
        if kind == "FloatImm":
            return ir.Const(float(node.value), self.dtype(node))
        if kind in ("Var", "SizeVar"):
            return self.var(node)
        if kind in ("BufferLoad", "TensorLoad"):
            buffer = self.buf(node.buffer if hasattr(node, "buffer") else node.source)
            self.dtype(node)  # a vector load only inside a vector store of as many lanes
            return ir.Load(buffer, self.indices(buffer, node.indices))
        if kind in _BINARY:
            return ir.Binary(_BINARY[kind], self.expr(node.a), self.expr(node.b), self.dtype(node))
        if kind == "Not":
            return ir.Unary("not", self.expr(node.a), "bool")
        if kind == "BitwiseNot":
            return ir.Unary("bitnot", self.expr(node.a), self.dtype(node))
        if kind == "Cast":
            return ir.Cast(self.dtype(node), self.expr(node.value))
        if kind == "Select":
            return ir.Select(self.expr(node.condition), self.expr(node.true_value), self.expr(node.false_value),
                             self.dtype(node), lazy=False)
        if kind == "Ramp":  # lane l of base, base + stride, ...: base + l * stride
            dtype = self.dtype(node)
            lane = self.lane[0]
            index = lane if dtype == lane.dtype else ir.Cast(dtype, lane)
            return ir.Binary("add", self.expr(node.base), ir.Binary("mul", index, self.expr(node.stride), dtype), dtype)
        if kind == "Broadcast":  # every lane the one value
            self.dtype(node)
            return self.expr(node.value)
        if kind == "Let":
            return ir.Let(self.var(node.var), self.expr(node.value), self.expr(node.body))
        if kind == "Call":
            return self.call(node)
        raise Unsupported(f"the interpreter does not evaluate {kind} expressions ({node}) in block {self.block!r}")

    def call(self, node) -> ir.Expr:
        op = str(getattr(node.op, "name", node.op)).rsplit(".", 1)[-1]
        args = list(node.args)
        dtype = self.dtype(node)
        if op == "if_then_else":
            return ir.Select(*(self.expr(a) for a in args), dtype, lazy=True)
        if op in ("likely", "assume") and len(args) == 1:
            return self.expr(args[0])
        if op in _CALL_BINARY and len(args) == 2:
            return ir.Binary(_CALL_BINARY[op], self.expr(args[0]), self.expr(args[1]), dtype)
        if op in _CALL_UNARY and len(args) == 1:
            return ir.Unary(_CALL_UNARY[op], self.expr(args[0]), dtype)
        if op == "fma" and len(args) == 3:  # llvm.fmuladd: fused or not; unfused rounds more, so its bound holds
            a, b, c = (self.expr(arg) for arg in args)
            return ir.Binary("add", ir.Binary("mul", a, b, dtype), c, dtype)
        raise Unsupported(f"the interpreter does not evaluate T.{op}(...) (in block {self.block!r})")

    # -- statements

    def stmt(self, node) -> ir.Stmt:
        kind = type(node).__name__
        if kind == "SeqStmt":
            return self.seq(list(node.seq))
        if kind == "For":
            step = getattr(node, "step", None)
            if step is not None and _int(step, "a loop step") != 1:
                raise Unsupported(f"loop {node.loop_var} has step {step}")
            return ir.For(self.var(node.loop_var), self.expr(node.min), self.expr(node.extent), self.stmt(node.body),
                          _FOR_KINDS.get(int(node.kind), "serial"))
        if kind in ("BlockRealize", "SBlockRealize"):
            return self.block_realize(node)
        if kind in ("BufferStore", "TensorStore"):
            return self.store(node)
        if kind == "IfThenElse":
            orelse = node.else_case
            return ir.If(self.expr(node.condition), self.stmt(node.then_case),
                         self.stmt(orelse) if orelse is not None else None)
        if kind == "LetStmt" and getattr(node, "body", None) is not None:
            return self.let(node, lambda: self.stmt(node.body))
        if kind == "AttrStmt":
            if str(node.attr_key) in ("thread_extent", "virtual_thread"):
                raise Unsupported("GPU thread launches (lowered TIR): give the program before GPU scheduling")
            return self.stmt(node.body)
        if kind == "Evaluate":
            if type(node.value).__name__ in ("IntImm", "FloatImm"):
                return ir.Nop()
            raise Unsupported(f"the interpreter does not evaluate T.evaluate({node.value})")
        if kind == "AssertStmt":
            return ir.Nop()  # asserts check arguments; the interpreter's inputs satisfy them
        if kind == "DeclBuffer":
            self.view(node)  # a name for elements another buffer holds: nothing to run
            return ir.Nop()
        raise Unsupported(f"the interpreter does not evaluate {kind} statements (in block {self.block!r})")

    def indices(self, buf: ir.Buf, indices) -> tuple[ir.Expr, ...]:
        """The indices of an access of ``buf``; of a buffer of vectors, its element's lane
        (``index * lanes + lane``), inside a vector store of as many lanes."""
        lanes = self.vectors.get(id(buf), 1)
        if lanes == 1:
            return tuple(self.expr(i) for i in indices)
        if self.lane is None or self.lane[1] != lanes or _lanes(_dtype(indices[0]))[1] != 1:
            raise Unsupported(f"an access of {buf.name}'s vectors of {lanes} lanes at {list(indices)} is not "
                              f"interpreted (in block {self.block!r})")
        index, lane = self.expr(indices[0]), self.lane[0]
        return (ir.Binary("add", ir.Binary("mul", index, ir.Const(lanes, index.dtype), index.dtype),
                          lane if lane.dtype == index.dtype else ir.Cast(index.dtype, lane), index.dtype),)

    def store(self, node) -> ir.Stmt:
        """A store; a vector store (VectorizeLoop's ``C[ramp] = A[ramp] + broadcast``) as a loop
        over its lanes of kind ``lanes``: its value's loads all made before any of its lanes is
        stored (:class:`suite.triage.interp.Interpreter`), as the vector instruction makes them."""
        buf = self.buf(node.buffer)
        if getattr(node, "predicate", None) is not None:
            raise Unsupported(f"a predicated (masked) store into {buf.name} is not interpreted (in block {self.block!r})")
        _, lanes = _lanes(_dtype(node.value))
        if lanes == 1:
            return ir.Store(buf, self.indices(buf, node.indices), self.expr(node.value))
        if self.lane is not None:
            raise Unsupported(f"a vector store inside a vector store (in block {self.block!r})")
        ramp = len(node.indices) == 1 and type(node.indices[0]).__name__ == "Ramp" \
            and _int(node.indices[0].stride, "a vector store's stride") != 0
        if not ramp and self.vectors.get(id(buf), 1) != lanes:
            raise Unsupported(f"a vector store into {buf.name} at {list(node.indices)}: only a store of distinct "
                              f"elements (one index, a ramp of stride other than 0) is interpreted")
        lane = ir.Var(f"{buf.name}_lane", "int32")
        self.lane = (lane, lanes)
        try:
            store = ir.Store(buf, self.indices(buf, node.indices), self.expr(node.value))
        finally:
            self.lane = None
        return ir.For(lane, ir.Const(0, "int32"), ir.Const(lanes, "int32"), store, "lanes")

    def let(self, node, body) -> ir.Stmt:
        """A variable bound over the statements ``body()`` translates: a scalar (a vector bound
        across statements has no lane to stand for)."""
        if _lanes(_dtype(node.value))[1] > 1:
            raise Unsupported(f"a vector value bound to {node.var} across statements is not interpreted "
                              f"(in block {self.block!r})")
        return ir.LetStmt(self.var(node.var), self.expr(node.value), body())

    def seq(self, items: list) -> ir.Stmt:
        """A sequence; 0.27's flat ``Bind``/``AllocBuffer`` scope over the statements after them."""
        out = []
        for index, node in enumerate(items):
            kind = type(node).__name__
            if kind in ("Bind", "LetStmt") and getattr(node, "body", None) is None:
                return ir.Seq((*out, self.let(node, lambda rest=items[index + 1:]: self.seq(rest))))
            if kind == "AllocBuffer":
                return ir.Seq((*out, ir.Alloc(self.buf(node.buffer), self.seq(items[index + 1:]))))
            if kind == "DeclBuffer":
                self.view(node)
                continue
            out.append(self.stmt(node))
        return ir.Seq(tuple(out))

    def block_realize(self, node) -> ir.Stmt:
        block = node.block
        outer, self.block = self.block, str(block.name_hint)
        try:
            if list(block.match_buffers):
                raise Unsupported(f"block {self.block!r} matches buffers (match_buffer): not interpreted")
            iters = tuple(ir.IterVar(self.var(iv.var), self.expr(iv.dom.min), self.expr(iv.dom.extent),
                                     schedules.iter_kind(iv)) for iv in block.iter_vars)
            predicate = self.expr(node.predicate)
            if isinstance(predicate, ir.Const) and predicate.value:
                predicate = None
            allocs = tuple(self.buf(b) for b in block.alloc_buffers)
            init = self.stmt(block.init) if block.init is not None else None
            return ir.Block(self.block, iters, tuple(self.expr(v) for v in node.iter_values), predicate, init,
                            self.stmt(block.body), allocs)
        finally:
            self.block = outer


def _row_major(shape: tuple[int, ...]) -> list[int]:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= extent
    return list(reversed(strides))


def _param_buffers(func) -> list:
    buffer_map = getattr(func, "buffer_map", None)
    if buffer_map is not None:
        found = []
        for param in func.params:
            if param not in buffer_map:
                raise Unsupported(f"parameter {param} is a scalar: the interpreter takes buffer parameters only")
            found.append(buffer_map[param])
        return found
    for param in func.params:
        if type(getattr(param, "ty", None)).__name__ != "BufferType":
            raise Unsupported(f"parameter {param} is a scalar: the interpreter takes buffer parameters only")
    return list(func.params)


def translate(func, name: str) -> ir.Program:
    """The suite's own representation of a PrimFunc (Unsupported naming what it cannot hold)."""
    translator = _Translator()
    params = tuple(translator.buf(b, param=True) for b in _param_buffers(func))
    body = translator.stmt(func.body)
    return ir.Program(name, params, body)


def signature(func) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, dtype) of each buffer parameter of ``func``."""
    found = []
    for buffer in _param_buffers(func):
        name = str(getattr(buffer, "name", "buffer"))
        found.append((name, tuple(_int(d, f"the extent of {name}") for d in buffer.shape), str(buffer.dtype)))
    return found
