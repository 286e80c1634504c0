"""Known bugs planted in scheduled TIR, to measure the oracle's recall: each kind an edit of the
TVMScript text of a scheduled PrimFunc (what TVM prints is what triage reads back, so a planted
program is also a file `tvm-suite triage` takes). Text, not TVM's stmt functors: the edits are the
same on every TVM release that prints this TVMScript, and each is one line, readable in a report.

A kind edits the first statement it applies to (the reduction's update, a copy block's load, an
init, a loop), and raises :class:`NotApplicable` where the program has none. Index edits stay in
bounds (a swap of two indices of equal extent, ``i // 2 * 2``, a pinned 0), so that a planted bug
is a wrong result, not memory corruption; every kind should be judged CHANGED.
"""

from __future__ import annotations

import re

#: A statement that stores into a buffer: indentation, buffer, indices, value.
_STORE = re.compile(r"^(\s*)(\w+)\[(.*?)\] = (.+)$")
_SHAPE = re.compile(r"(\w+)(?:: T\.Buffer| = T\.(?:sblock_)?alloc_buffer)\(\(((?:[\d, ]|T\.int(?:32|64)\(\d+\))+)\)")
#: An integer literal as TVMScript prints it: ``7``, or ``T.int64(7)`` where the function's indices are
#: 64-bit (the fused functions of Relax models are).
_INT = re.compile(r"^(\s*)(T\.int(?:32|64)\()?(\d+)(\)?)(\s*)$")
_LOOP = re.compile(r"^(\s*)for .* in (T\.grid|range|T\.parallel|T\.serial|T\.vectorized|T\.unroll)\(")
_CONSTANT = re.compile(r"T\.(float16|float32|float64)\(([-\d.e+]+)\)")


class NotApplicable(ValueError):
    """The program has nothing this kind of bug edits."""


def _split_top(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` outside brackets and parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([" and 1 or 0
        depth -= char in ")]" and 1 or 0
        if char == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _loads(expression: str) -> list[tuple[int, int, str, list[str]]]:
    """The buffer loads of ``expression``: (start, end, buffer, indices), outermost first."""
    found = []
    for match in re.finditer(r"\b(\w+)\[", expression):
        depth, at = 1, match.end()
        while depth and at < len(expression):
            depth += {"[": 1, "]": -1}.get(expression[at], 0)
            at += 1
        found.append((match.start(), at, match.group(1), [p.strip() for p in _split_top(expression[match.end():at - 1])]))
    return [load for load in found if not any(o[0] < load[0] < o[1] for o in found)]


class _Program:
    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.shapes = {name: [int(_INT.match(d).group(3)) for d in dims.split(",") if d.strip()]
                       for name, dims in _SHAPE.findall(text)}

    def stores(self):
        for number, line in enumerate(self.lines):
            match = _STORE.match(line)
            if match and not line.strip().startswith("T."):
                yield number, match

    def update(self):
        """The reduction's update: a store whose value reads the buffer it stores (``C = C + ...``)."""
        for number, match in self.stores():
            if match.group(4).startswith(f"{match.group(2)}[{match.group(3)}] "):
                return number, match
        raise NotApplicable("no reduction update (C = C + ...)")

    def copies(self):
        """Copy blocks (cache reads, padding, layout rewrites): a store whose value is one load."""
        for number, match in self.stores():
            loads = _loads(match.group(4))
            if len(loads) == 1 and loads[0][0] == 0 and loads[0][1] == len(match.group(4)):
                yield number, match

    def init(self):
        for number, match in self.stores():
            if _CONSTANT.fullmatch(match.group(4).strip()):
                return number, match
        raise NotApplicable("no init (C = constant)")

    def set(self, number: int, line: str) -> None:
        self.lines[number] = line

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def equal_extent_pair(self, buffer: str, indices: list[str]) -> tuple[int, int]:
        shape = self.shapes.get(buffer, [])
        for i in range(len(indices)):
            for j in range(i + 1, len(indices)):
                if (len(shape) == len(indices) and shape[i] == shape[j] and shape[i] > 1
                        and indices[i] != indices[j]):
                    return i, j
        raise NotApplicable(f"no two indices of {buffer} of equal extent to swap")


def _store_line(match, value: str, indices: str | None = None) -> str:
    return f"{match.group(1)}{match.group(2)}[{indices if indices is not None else match.group(3)}] = {value}"


def _update_parts(program: _Program):
    """(line number, match, accumulator read, the term added) of the reduction's update ``C = C + term``."""
    number, match = program.update()
    value = match.group(4)
    accumulator = f"{match.group(2)}[{match.group(3)}]"
    rest = value[len(accumulator):].strip()
    if not rest.startswith("+ "):
        raise NotApplicable("the update is not C = C + term")
    return number, match, accumulator, rest[2:]


def _edit_load(program: _Program, number: int, match, pick, edit) -> None:
    """Edit the indices of the first load of line ``number``'s value that ``pick`` accepts."""
    value = match.group(4)
    for start, end, buffer, indices in _loads(value):
        if buffer == match.group(2) or not pick(buffer, indices):
            continue
        changed = edit(buffer, indices)
        program.set(number, _store_line(match, value[:start] + f"{buffer}[{', '.join(changed)}]" + value[end:]))
        return
    raise NotApplicable("no load to edit")


def _swap(program, buffer, indices):
    i, j = program.equal_extent_pair(buffer, indices)
    swapped = list(indices)
    swapped[i], swapped[j] = indices[j], indices[i]
    return swapped


def _varying(program, buffer, indices) -> list[int]:
    """The positions of ``indices`` that vary over a dimension of extent > 1 (an edit there matters)."""
    shape = program.shapes.get(buffer, [])
    found = [n for n, index in enumerate(indices)
             if not re.fullmatch(r"\d+", index) and (len(shape) != len(indices) or shape[n] > 1)]
    if not found:
        raise NotApplicable(f"no index of {buffer} that varies")
    return found


def _strided(program, buffer, indices):
    position = _varying(program, buffer, indices)[0]
    return [f"({index}) // 2 * 2" if n == position else index for n, index in enumerate(indices)]


def _pinned(program, buffer, indices):
    position = _varying(program, buffer, indices)[-1]
    return ["0" if n == position else index for n, index in enumerate(indices)]


def _inputs_of_update(program, edit, pick=lambda buffer, indices: True):
    number, match, _, _ = _update_parts(program)
    _edit_load(program, number, match, pick, edit)


def _swapped_index(program, dtype):
    _inputs_of_update(program, lambda b, ix: _swap(program, b, ix),
                      lambda b, ix: _has_pair(program, b, ix))


def _has_pair(program, buffer, indices) -> bool:
    try:
        program.equal_extent_pair(buffer, indices)
        return True
    except NotApplicable:
        return False


def _input_index_stride(program, dtype):
    _inputs_of_update(program, lambda b, ix: _strided(program, b, ix))


def _input_index_pinned(program, dtype):
    _inputs_of_update(program, lambda b, ix: _pinned(program, b, ix))


def _first_copy(program):
    for number, match in program.copies():
        return number, match
    raise NotApplicable("no copy block (cache read, padding, layout rewrite)")


def _cache_copy_stride(program, dtype):
    number, match = _first_copy(program)
    _edit_load(program, number, match, lambda b, ix: True, lambda b, ix: _strided(program, b, ix))


def _cache_copy_swap(program, dtype):
    for number, match in program.copies():
        try:
            _edit_load(program, number, match, lambda b, ix: _has_pair(program, b, ix),
                       lambda b, ix: _swap(program, b, ix))
            return
        except NotApplicable:
            continue
    raise NotApplicable("no copy block with two indices of equal extent")


def _dropped_copy(program, dtype):
    number, match = _first_copy(program)
    program.set(number, f"{match.group(1)}T.evaluate(0)")


def _dropped_init(program, dtype):
    number, match = program.init()
    program.set(number, f"{match.group(1)}T.evaluate(0)")


def _init_constant(program, dtype):
    number, match = program.init()
    program.set(number, _store_line(match, f"T.{dtype}(1.0)"))


def _wrong_constant(program, dtype):
    """A constant of a computation (not an init) changed: a bias, a clamp, a scale."""
    for number, match in program.stores():
        value = match.group(4)
        if _CONSTANT.fullmatch(value.strip()):
            continue
        found = _CONSTANT.search(value)
        if found:
            changed = f"T.{found.group(1)}({float(found.group(2)) + 0.5!r})"
            program.set(number, _store_line(match, value[:found.start()] + changed + value[found.end():]))
            return
    raise NotApplicable("no constant in a computation")


def _update_rewrite(make):
    def kind(program, dtype):
        number, match, accumulator, term = _update_parts(program)
        program.set(number, _store_line(match, make(accumulator, term, dtype)))
    return kind


def _product_factors(term: str) -> list[str]:
    factors = _split_top(term, "*")
    if len(factors) < 2:
        raise NotApplicable("the term added is not a product")
    return [f.strip() for f in factors]


def _dropped_factor(accumulator, term, dtype):
    return f"{accumulator} + {_product_factors(term)[0]}"


def _product_to_sum(accumulator, term, dtype):
    return f"{accumulator} + ({' + '.join(_product_factors(term))})"


def _narrowing_cast(program, dtype):
    if dtype != "float32":
        raise NotApplicable("a narrowing cast of float16 is no cast")
    _cast_first_load(program, lambda load: f'T.Cast("float32", T.Cast("float16", {load}))')


def _truncating_cast(program, dtype):
    _cast_first_load(program, lambda load: f'T.Cast("{dtype}", T.Cast("int32", {load} * T.{dtype}(4.0)))')


def _cast_first_load(program, cast):
    """The update's first load of an input (not the accumulator) wrapped by ``cast(load text)``."""
    number, match, accumulator, term = _update_parts(program)
    loads = [load for load in _loads(term) if load[2] != match.group(2)]
    if not loads:
        raise NotApplicable("no load in the term")
    start, end = loads[0][0], loads[0][1]
    program.set(number, _store_line(match, f"{accumulator} + {term[:start]}{cast(term[start:end])}{term[end:]}"))


def _store_index_swap(program, dtype):
    """The output written transposed: the update's store and its accumulator read both swapped."""
    number, match, accumulator, term = _update_parts(program)
    indices = [p.strip() for p in _split_top(match.group(3))]
    swapped = ", ".join(_swap(program, match.group(2), indices))
    program.set(number, f"{match.group(1)}{match.group(2)}[{swapped}] = {match.group(2)}[{swapped}] + {term}")


def _loop_line(program, outermost: bool) -> int:
    number, _ = program.update()
    indent = len(program.lines[number]) - len(program.lines[number].lstrip())
    enclosing = []
    for at in range(number - 1, -1, -1):
        loop = _LOOP.match(program.lines[at])
        if loop and len(loop.group(1)) < indent:
            enclosing.append(at)
            indent = len(loop.group(1))
    for at in (reversed(enclosing) if outermost else enclosing):
        if re.search(r"\((\d+)", program.lines[at].split(" in ", 1)[1]) and any(
                int(e) > 1 for e in re.findall(r"\b(\d+)\b", program.lines[at].split(" in ", 1)[1].split("annotations")[0])):
            return at
    raise NotApplicable("no loop of extent > 1 around the update")


def _off_by_one(outermost: bool):
    def kind(program, dtype):
        at = _loop_line(program, outermost)
        head, loop = program.lines[at].split(" in ", 1)
        call, _, rest = loop.partition("(")
        arguments = _split_top(rest.rsplit(")", 1)[0])
        for n, argument in enumerate(arguments):
            if (literal := _INT.match(argument)) and int(literal.group(3)) > 1 and bool(literal.group(2)) == bool(
                    literal.group(4)):
                lead, wrap, value, close, tail = literal.groups()
                arguments[n] = f"{lead}{wrap or ''}{int(value) - 1}{close}{tail}"
                break
        program.set(at, f"{head} in {call}({','.join(arguments)}){rest.rsplit(')', 1)[1]}")
    return kind


def _max_to_min(program, dtype):
    for number, match in program.stores():
        if "T.max(" in match.group(4):
            program.set(number, _store_line(match, match.group(4).replace("T.max(", "T.min(", 1)))
            return
    raise NotApplicable("no max")


#: Every kind of planted bug, by name: edit(program, dtype). Each computes something else: CHANGED,
#: or SHIFTED where its error stays within the rounding bound (long float16 sums, a small scale).
KINDS = {
    "swapped_index": _swapped_index,
    "dropped_init": _dropped_init,
    "init_constant": _init_constant,
    "off_by_one_inner_loop": _off_by_one(outermost=False),
    "off_by_one_outer_loop": _off_by_one(outermost=True),
    "narrowing_cast": _narrowing_cast,
    "truncating_cast": _truncating_cast,
    "cache_copy_stride": _cache_copy_stride,
    "cache_copy_swap": _cache_copy_swap,
    "dropped_copy": _dropped_copy,
    "input_index_stride": _input_index_stride,
    "input_index_pinned": _input_index_pinned,
    "sign_flip": _update_rewrite(lambda acc, term, dtype: f"{acc} - ({term})"),
    "product_to_sum": _update_rewrite(_product_to_sum),
    "dropped_factor": _update_rewrite(_dropped_factor),
    "dropped_accumulation": _update_rewrite(lambda acc, term, dtype: term),
    "double_count": _update_rewrite(lambda acc, term, dtype: f"{acc} + {term} + {term}"),
    "scaled_term": _update_rewrite(lambda acc, term, dtype: f"{acc} + ({term}) * T.{dtype}("
                                                            f"{'1.01' if dtype == 'float16' else '1.001'})"),
    "wrong_constant": _wrong_constant,
    "store_index_swap": _store_index_swap,
    "max_to_min": _max_to_min,
}
#: The verdict each planted kind should get.
EXPECTED = "CHANGED, SHIFTED or UNDEFINED"


def mutate(text: str, kind: str, dtype: str) -> str:
    """The TVMScript ``text`` with a bug of ``kind`` planted; NotApplicable where it has nothing to edit."""
    program = _Program(text)
    KINDS[kind](program, dtype)
    planted = program.text()
    if planted == text if text.endswith("\n") else planted == text + "\n":
        raise NotApplicable("the edit changed nothing")
    return planted
