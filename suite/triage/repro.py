"""The reproducer of a CHANGED verdict: a standalone Python script (numpy and the installed TVM,
nothing of the suite) that builds both programs and shows the wrong element.

Its inputs are the smallest region that shows it: the elements the wrong output element reads
(:func:`suite.triage.interp.dependencies`, from the before program), every other input element
0. The after program may read elsewhere, so the script is run once here: where the zeros hide the
difference, it is written again with the whole inputs, generated in the script from the same
seeds as the triage's.
"""

from __future__ import annotations

import ast
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from suite import cache, children, sandbox
from suite.errors import CannotWrite, UserError
from suite.triage import inputs as inputs_mod
from suite.triage import interp, ir, verdict

#: Input elements a script embeds at most; beyond, it generates the inputs from their seeds.
MAX_EMBEDDED = 20_000
RUN_TIMEOUT_S = 600


def write(program: ir.Program, before_script: str, after_script: str, arrays: dict, spec, expected: verdict.Expected,
          index: tuple, path: Path | None, found_on: str, thresholds, confined: bool = True) -> dict:
    """Write the reproducer of element ``index`` of the output ``expected`` is of (at ``path``, which
    must not exist, or a new ``triage_repro_<function>.py`` here) and run it; what it is and shows,
    for the report."""
    path = claim(path) if path is not None else claim_fresh(Path.cwd() / f"triage_repro_{program.name}.py")
    output = next(b for b in program.written_params() if b.name == expected.name)
    params = program.inputs()
    needed = interp.dependencies(program, arrays, index, output.name)
    region = {p.name: needed[p.name] for p in params}
    total = sum(int(m.sum()) for m in region.values())
    facts = {"path": str(path), "output_index": list(index), "found_on": found_on,
             "region": {name: _box(mask) for name, mask in region.items()}}
    attempts = [("region", region)] if total <= MAX_EMBEDDED else []
    attempts.append(("whole", None))
    for kind, chosen in attempts:
        text = _script(program, before_script, after_script, arrays, spec, expected, index, output, chosen, found_on,
                       thresholds)
        check_written(text, before_script, after_script)
        cache.write_text(path, text)
        shows, ran, printed = _run(path, confined)
        facts.update(inputs=kind, shows=shows, ran=ran, printed=printed)
        if shows:
            break
    where = ", ".join(_region_words(name, box) for name, box in facts["region"].items())
    element = f"{output.name}[{', '.join(map(str, index))}]"
    inputs_words = (f"the inputs {element} reads ({where}), the rest 0" if facts["inputs"] == "region"
                    else "the whole inputs (the region alone hides it)")
    shown = ("shows the difference on llvm with the installed TVM (run here: exit 1)" if facts["shows"] else
             f"does not show it on llvm with the installed TVM ({facts['printed'] or 'no output'}); "
             f"it was found on {found_on}" if facts["ran"] else
             f"does not run here: {facts['printed']}; it was found on {found_on}")
    facts["summary"] = f"{element} from {inputs_words}; python {path.name} {shown}"
    return facts


#: How many numbered names (``_2``, ``_3``...) the default reproducer name tries before refusing.
MAX_NUMBERED = 1000


def claim(path: Path) -> Path:
    """``path``, created empty here and now (O_EXCL: no file there, nor one made since triage
    checked); a UserError where something is there. The script then replaces only this claim."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        raise UserError(f"--repro {path} exists: triage never replaces a file (give a new path)") from None
    except OSError as err:
        raise CannotWrite(err.errno, err.strerror, str(path)) from None
    return path


def claim_fresh(path: Path) -> Path:
    """``path``, or ``<stem>_2.py``, ``_3``... the first that does not exist, claimed (:func:`claim`):
    a reproducer never replaces a file, another reproducer included."""
    for number in range(1, MAX_NUMBERED + 1):
        candidate = path if number == 1 else path.with_name(f"{path.stem}_{number}{path.suffix}")
        try:
            return claim(candidate)
        except UserError as err:
            if isinstance(err, CannotWrite):
                raise
    raise UserError(f"{path} and {MAX_NUMBERED - 1} numbered names beside it exist; triage never replaces a file "
                    "(give --repro PATH)")


def _box(mask: np.ndarray) -> dict:
    found = np.argwhere(mask)
    if not len(found):
        return {"elements": 0, "box": None}
    return {"elements": int(len(found)), "box": [[int(lo), int(hi) + 1] for lo, hi in zip(found.min(0), found.max(0))]}


def _region_words(name: str, box: dict) -> str:
    """``A[0, 0:32] (32 elements)``: the bounding box of the elements read, and how many."""
    if not box["box"]:
        return f"{name}: none"
    ranges = ", ".join(f"{lo}:{hi}" if hi - lo > 1 else f"{lo}" for lo, hi in box["box"])
    return f"{name}[{ranges}] ({box['elements']:,} element{'s' if box['elements'] != 1 else ''})"


def _literal(value) -> str:
    value = float(value)
    return repr(value) if np.isfinite(value) else f"float({str(value)!r})"


def _generator(param: ir.Buf, position: int, array: np.ndarray, spec) -> str:
    """How the script makes the whole of one input: the triage's own draw (checked to give the
    same array), else the values themselves."""
    recipe = inputs_mod.recipe(spec, param, position)
    if recipe is not None and np.array_equal(eval(recipe, {"np": np}), array):  # our own expression
        return recipe
    kind = ir.kind_of(param.dtype)
    values = ", ".join(_literal(v) if kind == "f" else str(int(v)) for v in array.reshape(-1))
    return f"np.array([{values}], {param.dtype!r}).reshape({tuple(param.shape)})"


def _script(program, before_script, after_script, arrays, spec, expected, index, output, region, found_on,
            thresholds) -> str:
    params = program.inputs()
    outputs = {b.name: (tuple(b.shape), b.dtype) for b in program.written_params()}
    element = f"{output.name}[{', '.join(map(str, index))}]"
    floats = expected.magnitude is not None
    exact = expected.value[index]
    bound = None
    if floats:
        bound = verdict.Bound(expected, thresholds).of(index)
    lines = []
    for position, param in enumerate(params):
        if region is None:
            lines.append(f"    {param.name!r}: {_generator(param, position, arrays[param.name], spec)},")
            continue
        where = np.argwhere(region[param.name])
        values = arrays[param.name][region[param.name]]
        kind = ir.kind_of(param.dtype)
        listed = ", ".join(_literal(v) if kind == "f" else str(int(v)) for v in values)
        lines.append(f"    {param.name!r}: region({tuple(param.shape)}, {param.dtype!r}, "
                     f"{[list(map(int, w)) for w in where]}, [{listed}]),")
    inputs_doc = ("Only the input elements it reads hold values; every other input element is 0."
                  if region is not None else "The inputs are the triage's whole inputs, from the same seeds.")
    judge_doc = (f"No summation order moves a {expected.dtype} result more than BOUND = gamma~_K(lambda) x m "
                 f"(K = {expected.k}) from the exact value." if floats else
                 f"{expected.dtype} results must match the exact value exactly.")
    exact_literal = _literal(exact) if floats else str(int(exact)) if not isinstance(exact, (bool, np.bool_)) else str(bool(exact))
    return f'''#!/usr/bin/env python3
"""Reproducer written by `tvm-suite triage` (tvm-accuracy-suite): the after program computes
{_doc_safe(element)} differently from the before program ({_doc_safe(program.name)}; found on {_doc_safe(found_on)}).

{inputs_doc}
EXACT is the before program's value there in exact arithmetic (the suite's TIR interpreter).
{judge_doc}

Run it with the TVM that showed the difference: python {{this file}}. It builds both programs
for this CPU (llvm), prints the three values and exits 1 when the after program is wrong.
"""

import sys

import numpy as np
import tvm

# The two programs, a line a string: no text of theirs can end the quoting.
BEFORE_LINES = {_lines(before_script)}
AFTER_LINES = {_lines(after_script)}
BEFORE, AFTER = "\\n".join(BEFORE_LINES), "\\n".join(AFTER_LINES)

INDEX = {tuple(int(i) for i in index)!r}
EXACT = {exact_literal}
BOUND = {repr(float(bound)) if bound is not None else None}
OUTPUT = ({output.name!r}, {tuple(output.shape)!r}, {output.dtype!r})
OUTPUTS = {outputs!r}  # every output: (shape, dtype), zeros before the call
PARAMETERS = {[p.name for p in program.params]!r}


def region(shape, dtype, where, values):
    array = np.zeros(shape, dtype)
    if where:
        array[tuple(np.array(where).T)] = np.array(values, dtype)
    return array


INPUTS = {{
{chr(10).join(lines)}
}}


def run(source):
    func = tvm.script.from_source(source)
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    try:
        target = tvm.target.Target({{"kind": "llvm", "mcpu": cpu}})
    except Exception:  # releases before 0.27 take the string form
        target = tvm.target.Target(f"llvm -mcpu={{cpu}}")
    build = getattr(getattr(tvm, "tirx", None), "build", None) or tvm.build
    module = build(tvm.IRModule({{"main": func.with_attr("global_symbol", "main")}}), target=target)
    device = tvm.cpu(0)
    tensor = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    arrays = {{name: tensor(array, device) for name, array in INPUTS.items()}}
    arrays.update({{name: tensor(np.zeros(shape, dtype), device) for name, (shape, dtype) in OUTPUTS.items()}})
    module["main"](*[arrays[name] for name in PARAMETERS])
    return arrays[OUTPUT[0]].numpy()[INDEX].item()


before, after = run(BEFORE), run(AFTER)
print(f"{{OUTPUT[0]}}{{list(INDEX)}}: before {{before!r}}, after {{after!r}}, exact {{EXACT!r}}"
      + (f", bound {{BOUND:.4g}}" if BOUND is not None else ""))
if BOUND is None:
    wrong = after != EXACT and after != before
else:
    wrong = not abs(float(after) - EXACT) <= BOUND
print("the after program is wrong here" if wrong else "the difference does not show here")
sys.exit(1 if wrong else 0)
'''


def _lines(script: str) -> str:
    """A program as the literal of a list of its lines, one a line: Python's own quoting (repr), which
    no content can end."""
    lines = script.strip().splitlines()
    return "[\n" + "".join(f"    {line!r},\n" for line in lines) + "]"


def _doc_safe(text: str) -> str:
    """Text of the program's (a name) for the reproducer's docstring: no quote or backslash of its
    own can end it."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


#: The names a reproducer binds at its top level, and how many statements it has there: a script
#: whose syntax tree says otherwise holds something of a program's outside its quoting.
_TOP_NAMES = frozenset({"sys", "np", "tvm", "BEFORE_LINES", "AFTER_LINES", "BEFORE", "AFTER", "INDEX", "EXACT",
                        "BOUND", "OUTPUT", "OUTPUTS", "PARAMETERS", "region", "INPUTS", "run", "before", "after",
                        "wrong"})


def check_written(text: str, before_script: str, after_script: str) -> None:
    """The reproducer's text parsed (never run) and checked: its programs are exactly the two
    given, in the literals meant for them, and nothing binds a name it should not. AssertionError
    otherwise (a fault of the suite's: the report never runs or offers such a script)."""
    tree = ast.parse(text)
    bound = {name for node in tree.body for name in _names_bound(node)}
    assert bound <= _TOP_NAMES, f"the reproducer binds {sorted(bound - _TOP_NAMES)}"
    literals = {node.targets[0].id: node.value for node in tree.body
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    for name, script in (("BEFORE_LINES", before_script), ("AFTER_LINES", after_script)):
        assert ast.literal_eval(literals[name]) == script.strip().splitlines(), f"{name} is not the program"
    docstring = ast.get_docstring(tree, clean=False)
    assert isinstance(tree.body[0], ast.Expr) and docstring is not None, "no docstring first"
    calls = [node for node in tree.body if isinstance(node, ast.Expr)][1:]
    assert all(isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "print" or
               _is_exit(node) for node in calls), "a top-level expression of the program's"


def _names_bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.If):
        return [name for child in node.body + node.orelse for name in _names_bound(child)]
    return []


def _is_exit(node: ast.Expr) -> bool:
    func = node.value.func if isinstance(node.value, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr == "exit" and getattr(func.value, "id", None) == "sys"


def _run(path: Path, confined: bool) -> tuple[bool, bool, str]:
    """Run the written script (in the sandbox, unless the input is trusted): (whether it shows the
    difference, whether it ran to its verdict (exit 0 or 1), what it printed first or how it failed)."""
    with tempfile.TemporaryDirectory(prefix="tvm-suite-repro-") as scratch:
        log = Path(scratch) / "printed.txt"
        with open(log, "wb") as out:
            process = sandbox.start_python([str(path)], Path(scratch), sandbox.TRIAGE, confined=confined,
                                           stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            returncode = process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return False, False, f"it ran past {RUN_TIMEOUT_S} s"
        finally:
            children.end(process)
        try:
            printed = sandbox.read_back(log).decode(errors="replace")
        except OSError:
            printed = ""
    lines = [line for line in printed.strip().splitlines() if line.strip()]
    shows = returncode == 1 and any("the after program is wrong here" == line.strip() for line in lines)
    ran = returncode in (0, 1)
    first = (lines[0] if lines else "no output") if ran else f"exit {returncode}: {lines[-1] if lines else 'no output'}"
    return shows, ran, " ".join(first.split())[:300]
