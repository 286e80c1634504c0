"""``tvm-suite``: list workloads, measure one combination, run the asv suite.

The parser: the commands and their one-line help named here (:data:`COMMANDS`), the one given
completed from its module (:mod:`suite.commands`: each its options, body and exit statuses), the
only one imported; and the one mapping of how a command can end to an exit status: every expected
failure (bad input, TVM missing, a tool missing) ends with one line on stderr and a non-zero exit,
never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import NamedTuple

from suite import environ
from suite.commands.base import for_people_on_stderr, json_document, say, stdout_lost
from suite.errors import ExitCode, Interrupted, UserError, signalled, signals_raise


class Command(NamedTuple):
    module: str  #: its module (suite.commands.base says what one holds), imported only when it runs
    help: str  #: its one-line summary (``tvm-suite --help``) and description (``tvm-suite NAME --help``)


#: The commands, in the order ``tvm-suite --help`` lists them: the top-level parser is built from
#: this alone; a command's module is imported (its options added, its body run) only when it is
#: the one given (as pip's ``commands_dict``), so that no command pays for the others.
COMMANDS = {
    "list": Command("suite.commands.list", "workload ids, shapes, FLOPs, occurrences"),
    "measure": Command("suite.commands.measure", "compile, run and print the metrics of one combination"),
    "model": Command("suite.commands.model",
                     "a whole model's logits on a target against float64 and llvm, and each call's share of the error"),
    "tune": Command("suite.commands.tune",
                    "tune with MetaSchedule and store the records in your records directory, which "
                    "the tuned order replays before the committed ones (llvm, cuda: timed here; "
                    "hexagon-v68-qf: packets executed under the emulator)"),
    "run": Command("suite.commands.run",
                   "the main job: run the asv suite on the installed TVM, keep the results, give the "
                   "release gate's verdict on them"),
    "check": Command("suite.commands.check",
                     "release readiness of a TVM commit in one command: measure the baseline and the "
                     "candidate (a release's wheel, else a source build; resumable), gate, report"),
    "history": Command("suite.commands.history", "asv over commits of a TVM clone (releases or a range), published"),
    "bisect": Command("suite.commands.bisect",
                      "the first commit in A..B where a metric of one combination worsens (asv find)"),
    "report": Command("suite.commands.report",
                      "static HTML report (and report.json) of asv results over commits, the gate's "
                      "verdict on the newest first"),
    "gate": Command("suite.commands.gate", "release readiness of a commit, from asv results"),
    "triage": Command("suite.commands.triage",
                      "a verdict on a report of TVM computing different numbers before and after "
                      "scheduling: EQUIVALENT, REORDERED, ARITHMETIC, SHIFTED, CHANGED (a reproducer is written), "
                      "UNDEFINED (the before program itself)"),
    "fuzz": Command("suite.commands.fuzz",
                    "schedules sampled from MetaSchedule's design space, each built and run in a child process "
                    "and judged by triage's verdict against the exact reference; findings kept with a minimised "
                    "trace and a report"),
}
#: What every command may end with besides its own: how :func:`_run` ends a failed command.
COMMON_EXITS = [(ExitCode.NO_VERDICT, "bad input, a missing tool, unreadable data (one line on stderr)"),
                (ExitCode.SIGINT, "interrupted (Ctrl-C)"), (ExitCode.SIGTERM, "terminated (SIGTERM)")]
#: What an interrupted command leaves, where its module does not say more (``INTERRUPTED``): every
#: file the suite writes is written whole or not at all, and the cache keeps what was measured.
INTERRUPTED = "every file it wrote is whole; what it measured is in the cache"


def module(command: str):
    """The module of ``command`` (a name in :data:`COMMANDS`), imported now."""
    return importlib.import_module(COMMANDS[command].module)


def exit_codes(command: str) -> list[tuple[int, str]]:
    """(status, meaning) of ``command``: its own (its module's ``EXIT_CODES``), then the common ones
    (a status both use: both meanings). Shown by its ``--help`` and in ``docs/exit-codes.md``."""
    common = dict(COMMON_EXITS)
    own = [(int(c), f"{m}; or {common.pop(c)}" if c in common else m) for c, m in module(command).EXIT_CODES]
    return own + [(int(c), m) for c, m in common.items()]


class _Parser(argparse.ArgumentParser):
    """argparse with the suite's one-line errors (exit 2), like every other expected failure."""

    def error(self, message):
        self.exit(2, f"tvm-suite: error: {self.prog}: {message} (see {self.prog} --help)\n")


class _Commands(argparse._SubParsersAction):
    """The subcommands: each listed with its help from :data:`COMMANDS`; the one given gets its
    options and its exit statuses (``--help``'s epilog) from its module, imported only then."""

    def __call__(self, parser, namespace, values, option_string=None):
        add_arguments(values[0], self._name_parser_map[values[0]])
        super().__call__(parser, namespace, values, option_string)


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """``command``'s options, from its module, and its exit statuses at the end of its ``--help``."""
    parser.epilog = "exit status:\n" + "\n".join(f"  {code:<4d}{meaning}" for code, meaning in exit_codes(command))
    module(command).add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser, from :data:`COMMANDS` alone (no command module imported)."""
    from importlib import metadata

    parser = _Parser(prog="tvm-suite", description=__doc__.splitlines()[0])
    try:
        version = metadata.version("tvm-accuracy-suite")
    except metadata.PackageNotFoundError:  # run from a checkout without installing it
        version = "not installed"
    parser.add_argument("--version", action="version", version=f"tvm-suite {version}")
    sub = parser.add_subparsers(dest="command", required=True, action=_Commands)
    for name, command in COMMANDS.items():
        sub.add_parser(name, help=command.help, description=command.help,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser


def command_parser(command: str) -> argparse.ArgumentParser:
    """``command``'s own parser, whole (its options, its epilog): what ``tvm-suite COMMAND`` parses."""
    parser = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    add_arguments(command, parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with signals_raise():
        return _run(args)


def _run(args) -> int:
    """The command, with every expected way it can end as one line and an exit status (ExitCode).
    With ``--json``, stdout is one JSON document: the command's, or ``{"error", "exit_status"}``
    where it ended with an expected failure (the one line on stderr all the same)."""
    command = module(args.command)
    as_json = getattr(args, "json", False)
    try:
        environ.resolve(args.command)  # the environment's paths, absolute and checked, before any work
        if not as_json:
            return command.run(args)
        with for_people_on_stderr():
            status = command.run(args)
        for text, shown in json_document:
            say(text, shown)
        return status
    except UserError as err:
        _error(str(err), as_json=as_json, status=err.exit_status)
        return err.exit_status
    except (Interrupted, KeyboardInterrupt) as err:
        return _interrupted(err, command, as_json)
    except BrokenPipeError as err:  # standard output closed under a command that was still printing
        stdout_lost(err, None)
        return ExitCode.NO_VERDICT
    except OSError as err:  # the environment: a full disk, a read-only directory, a file gone
        where = f": {err.filename}" if err.filename else ""
        _error(f"{err.strerror or err}{where}", as_json=as_json, status=ExitCode.NO_VERDICT)
        return ExitCode.NO_VERDICT
    except Exception:
        # A signal that lands inside Python's own threading code (a Condition's wait, between giving
        # its lock back and taking it again) comes out as that code's error, "release unlocked
        # lock": the command was interrupted all the same
        interruption = signalled()
        if interruption is None:
            raise
        return _interrupted(interruption, command, as_json)


def _interrupted(err: BaseException, command, as_json: bool) -> int:
    stopped = Interrupted.by(err, getattr(command, "INTERRUPTED", INTERRUPTED))
    _error(f"interrupted ({stopped.signal_name}): {stopped}", prefix="tvm-suite: ", as_json=as_json,
           status=stopped.exit_code)
    return stopped.exit_code


def _error(message: str, prefix: str = "tvm-suite: error: ", as_json: bool = False, status: int | None = None) -> None:
    try:
        print(f"{prefix}{message}", file=sys.stderr)
    except OSError:
        pass
    if as_json:  # stdout stays one JSON document
        say(json.dumps({"error": message, "exit_status": int(status)}, indent=1), status)


if __name__ == "__main__":
    sys.exit(main())
