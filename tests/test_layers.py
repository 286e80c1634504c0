"""The layers of suite/ hold: no import circle (imports inside functions included), and nothing in
the lower layers imports a higher one. Read from the source (ast), nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

SUITE = Path(__file__).resolve().parent.parent / "suite"
#: Layer of each package or top-level module, lowest first: a module may import its own layer and
#: the ones below it.
LAYERS = [
    {"suite.errors", "suite.environ", "suite.cache", "suite.git", "suite.children", "suite.tracked",
     "suite.progress", "suite.compat", "suite.sandbox"},
    {"suite.targets"},
    {"suite.core"},
    {"suite.model"},  # a whole model (`tvm-suite model`, the whole-model benchmarks), on core
    {"suite.asv_plumbing", "suite.reporting", "suite.triage", "suite.history", "suite.outputs"},
    {"suite.run", "suite.check", "suite.fuzz"},  # the libraries of `run`, `check` and `fuzz`
]


def modules() -> dict[str, Path]:
    found = {}
    for path in SUITE.rglob("*.py"):
        parts = list(path.relative_to(SUITE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict) -> set[str]:
    """Every suite module ``name`` imports, at the top or inside a function."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                if node.level else node.module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("suite"):
                found.add(target)
    return found


def layer(name: str) -> int | None:
    for index, members in enumerate(LAYERS):
        if any(name == m or name.startswith(m + ".") for m in members):
            return index
    return None  # the commands (suite.cli, suite.commands): the top


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for name, targets in graph().items():
        own = layer(name)
        for target in targets:
            theirs = layer(target)
            if own is not None and (theirs is None or theirs > own):
                upward.append(f"{name} -> {target}")
    assert not upward, upward


def test_no_import_circle():
    edges = graph()
    state, stack, circles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                circles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not circles, [" -> ".join(c) for c in circles]
