"""tvm-suite imports a command's module only when that command runs: the top-level parser is built
from suite.cli.COMMANDS alone (name -> module, one-line help), so no command pays for the others,
and `tvm-suite --help` starts without TVM, numpy or asv (in well under 0.3 s)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from suite import cli

#: The modules of suite.commands that are no command: the interface and output channel, shared options.
NOT_COMMANDS = {"__init__", "base", "common_args"}

IMPORTED = """
import json, sys
from suite import cli
parser = cli.build_parser()
{parse}
print(json.dumps(sorted(sys.modules)))
"""
#: The libraries that take a command its time to start (TVM alone: a second and more).
HEAVY = {"tvm", "numpy", "scipy", "asv", "jinja2", "rich", "dask", "distributed"}


def imported(parse: str = "") -> set[str]:
    """The modules a fresh interpreter holds after importing suite.cli, building the top-level
    parser and running ``parse``."""
    done = subprocess.run([sys.executable, "-c", IMPORTED.format(parse=parse)], capture_output=True, text=True,
                          check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def commands_imported(parse: str = "") -> set[str]:
    """The suite.commands modules among :func:`imported`'s."""
    return {m for m in imported(parse) if m.startswith("suite.commands.")}


def test_the_top_level_parser_imports_no_command():
    assert commands_imported() <= {"suite.commands.base", "suite.commands.common_args"}


def test_the_top_level_help_imports_no_command_nor_a_heavy_library():
    modules = imported("try:\n    parser.parse_args(['--help'])\nexcept SystemExit:\n    pass")
    assert {m for m in modules if m.startswith("suite.commands.")} <= {"suite.commands.base", "suite.commands.common_args"}
    assert not {m.split(".")[0] for m in modules} & HEAVY, sorted({m.split(".")[0] for m in modules} & HEAVY)


def test_a_command_imports_its_own_module_only():
    imported = commands_imported("assert parser.parse_args(['list', '--json']).json")
    assert imported - {"suite.commands.base", "suite.commands.common_args"} == {"suite.commands.list"}


def test_the_registry_names_every_command_module_once():
    """Every module of suite/commands/ is a command in COMMANDS (and no other), and its name and
    help live there only: a module that said them too could say something else."""
    here = Path(cli.__file__).parent / "commands"
    modules = {p.stem for p in here.glob("*.py")} - NOT_COMMANDS
    assert {c.module for c in cli.COMMANDS.values()} == {f"suite.commands.{m}" for m in modules}
    assert all(c.module.rsplit(".", 1)[1] == name for name, c in cli.COMMANDS.items())
    for name in cli.COMMANDS:
        module = cli.module(name)
        assert not hasattr(module, "NAME") and not hasattr(module, "HELP"), name
        assert module.EXIT_CODES and callable(module.add_arguments) and callable(module.run), name


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_a_commands_help_shows_its_options_and_exit_statuses(name, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser().parse_args([name, "--help"])
    assert stopped.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: tvm-suite {name} ") and cli.COMMANDS[name].help in shown
    statuses = shown.split("exit status:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in statuses] == [str(code) for code, _ in cli.exit_codes(name)]
