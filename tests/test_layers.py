"""The layers of suite/ hold: no import circle (imports inside functions included), and every import
between two rooms goes down, from a room to one in a lower layer. Read from the source (ast),
nothing imported."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parent.parent / "suite"
#: The layers of suite/, lowest first, each a set of rooms: a package, or a top-level module (a
#: module named here apart from its package is a room of its own). A module may import its own room
#: and the rooms of lower layers: never a room above, nor one beside it in its own layer (rooms side
#: by side stand apart). Every module has a room (a new package is placed here).
LAYERS = [
    {"suite.errors"},  # the exit codes and the kinds of expected failure: on nothing
    {"suite.floats"},  # the float formats (bfloat16's, which numpy lacks): on no module of the suite
    {"suite.environ", "suite.cache", "suite.git", "suite.children", "suite.tracked", "suite.progress",
     "suite.compat"},  # each on errors alone: paths, cache, git, child processes, metrics, progress, TVM
    {"suite.sandbox"},  # the sandbox programs from outside run in (on cache, children)
    {"suite.targets"},  # the back ends: Target, Kernel, llvm, Hexagon, cuda
    {"suite.core"},  # workloads, references, metrics, schedules, tuning, measurement, the run store
    {"suite.model", "suite.asv_plumbing",
     "suite.history.keep"},  # on core, apart: a whole model; asv's plumbing; a kept history (below history)
    {"suite.outputs"},  # where a command may write (never into a kept history)
    {"suite.reporting"},  # the verified history, thresholds, rules, code identity, gate, report
    {"suite.triage", "suite.history"},  # on reporting, apart: triage; history over commits, bisect
    {"suite.jobs", "suite.fuzz"},  # the libraries of commands, apart: the jobs `run`, `check`; `fuzz`
    {"suite.commands"},  # one module per command, calling its library
    {"suite.cli"},  # the `tvm-suite` command: names the commands, imports the one given
]
#: suite/__init__.py: a docstring, importing nothing; no room.
ROOT = "suite"
#: Imports the rule refuses, planted in the graph read from the source (the files untouched): the
#: test of the rule fails where the layers let them through.
PLANTED = [
    ("suite.asv_plumbing.driver", "suite.triage.verdict"),  # a layer above
    ("suite.core.record", "suite.model.calls"),  # core on the whole model above it
    ("suite.model.grid", "suite.asv_plumbing.config"),  # side by side
    ("suite.triage.verdict", "suite.history.bisect"),  # side by side
    ("suite.reporting.results", "suite.history.commits"),  # history above, though its keep is below
    ("suite.jobs.run", "suite.fuzz.campaign"),  # side by side
    ("suite.commands.run", "suite.cli"),  # the top
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


def room(name: str) -> str | None:
    """The room of module ``name``: the longest member of the table it is or lies in."""
    rooms = [m for members in LAYERS for m in members if name == m or name.startswith(m + ".")]
    return max(rooms, key=len) if rooms else None


def layer(name: str) -> int | None:
    """The layer of module ``name``'s room; None where it has no room."""
    own = room(name)
    return next((index for index, members in enumerate(LAYERS) if own in members), None)


@functools.cache  # read once per test process: a dozen tests ask, none changes the source
def graph() -> dict[str, frozenset[str]]:
    known = modules()
    return {name: frozenset(imports(name, path, known)) for name, path in known.items()}


def wrong_way(edges: dict[str, set[str]]) -> list[str]:
    """Every import of ``edges`` the layers refuse: into a room of the same layer or one above, or
    from or into a module with no room."""
    refused = []
    for name, targets in edges.items():
        for target in targets:
            if room(name) == room(target) is not None:
                continue
            own, theirs = layer(name), layer(target)
            if own is None or theirs is None or theirs >= own:
                refused.append(f"{name} -> {target}")
    return sorted(refused)


def test_every_import_goes_down_a_layer():
    refused = wrong_way(graph())
    assert not refused, refused


@pytest.mark.parametrize("importer, imported", PLANTED)
def test_a_planted_import_is_refused(importer, imported):
    edges = dict(graph())
    assert imported in edges and imported not in edges[importer]  # planted here, not in the source
    edges[importer] = edges[importer] | {imported}
    assert wrong_way(edges) == [f"{importer} -> {imported}"]


def test_every_module_has_a_room_and_every_room_modules():
    known = modules()
    rooms = [m for members in LAYERS for m in members]
    assert len(rooms) == len(set(rooms)), "a room named twice"
    assert [m for m in rooms if not any(n == m or n.startswith(m + ".") for n in known)] == []
    assert [n for n in known if n != ROOT and room(n) is None] == []


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
