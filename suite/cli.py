"""``tvm-suite``: list workloads, measure one combination, run the asv suite.

The parser, assembled from the command modules (:mod:`suite.commands`: each its options, body and
exit statuses), and the one mapping of how a command can end to an exit status: every expected
failure (bad input, TVM missing, a tool missing) ends with one line on stderr and a non-zero exit,
never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from suite import environ
from suite.commands import bisect, check, fuzz, gate, history, list as list_, measure, model, report, run, triage, tune
from suite.commands.base import for_people_on_stderr, json_document, say, stdout_lost
from suite.errors import ExitCode, Interrupted, UserError, signals_raise

#: The commands, in the order ``tvm-suite --help`` lists them.
COMMANDS = {module.NAME: module for module in (list_, measure, model, tune, run, check, history, bisect, report,
                                               gate, triage, fuzz)}
#: Every command's exit statuses (suite.errors.ExitCode), shown in its --help and in the docs.
EXIT_CODES = {name: module.EXIT_CODES for name, module in COMMANDS.items()}
#: What every command may end with besides its own: how :func:`_run` ends a failed command.
COMMON_EXITS = [(ExitCode.NO_VERDICT, "bad input, a missing tool, unreadable data (one line on stderr)"),
                (ExitCode.SIGINT, "interrupted (Ctrl-C)"), (ExitCode.SIGTERM, "terminated (SIGTERM)")]
#: What an interrupted command leaves, where its module does not say more (``INTERRUPTED``): every
#: file the suite writes is written whole or not at all, and the cache keeps what was measured.
INTERRUPTED = "every file it wrote is whole; what it measured is in the cache"


def exit_codes(command: str) -> list[tuple[int, str]]:
    """(status, meaning) of ``command``: its own, then the common ones (a status both use: both meanings)."""
    common = dict(COMMON_EXITS)
    own = [(int(c), f"{m}; or {common.pop(c)}" if c in common else m) for c, m in EXIT_CODES[command]]
    return own + [(int(c), m) for c, m in common.items()]


class _Parser(argparse.ArgumentParser):
    """argparse with the suite's one-line errors (exit 2), like every other expected failure."""

    def error(self, message):
        self.exit(2, f"tvm-suite: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from importlib import metadata

    parser = _Parser(prog="tvm-suite", description=__doc__.splitlines()[0])
    try:
        version = metadata.version("tvm-accuracy-suite")
    except metadata.PackageNotFoundError:  # run from a checkout without installing it
        version = "not installed"
    parser.add_argument("--version", action="version", version=f"tvm-suite {version}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():  # each subcommand's --help ends with its exit statuses
        epilog = "exit status:\n" + "\n".join(f"  {code:<4d}{meaning}" for code, meaning in exit_codes(name))
        module.add_arguments(sub.add_parser(name, help=module.HELP, description=module.HELP, epilog=epilog,
                                            formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with signals_raise():
        return _run(args)


def _run(args) -> int:
    """The command, with every expected way it can end as one line and an exit status (ExitCode).
    With ``--json``, stdout is one JSON document: the command's, or ``{"error", "exit_status"}``
    where it ended with an expected failure (the one line on stderr all the same)."""
    command = COMMANDS[args.command]
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
        stopped = Interrupted.by(err, getattr(command, "INTERRUPTED", INTERRUPTED))
        _error(f"interrupted ({stopped.signal_name}): {stopped}", prefix="tvm-suite: ", as_json=as_json,
               status=stopped.exit_code)
        return stopped.exit_code
    except BrokenPipeError as err:  # standard output closed under a command that was still printing
        stdout_lost(err, None)
        return ExitCode.NO_VERDICT
    except OSError as err:  # the environment: a full disk, a read-only directory, a file gone
        where = f": {err.filename}" if err.filename else ""
        _error(f"{err.strerror or err}{where}", as_json=as_json, status=ExitCode.NO_VERDICT)
        return ExitCode.NO_VERDICT


def _error(message: str, prefix: str = "tvm-suite: error: ", as_json: bool = False, status: int | None = None) -> None:
    try:
        print(f"{prefix}{message}", file=sys.stderr)
    except OSError:
        pass
    if as_json:  # stdout stays one JSON document
        say(json.dumps({"error": message, "exit_status": int(status)}, indent=1), status)


if __name__ == "__main__":
    sys.exit(main())
