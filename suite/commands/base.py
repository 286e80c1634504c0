"""What a command module holds, and the one output channel every command prints through.

A command module (``suite/commands/<name>.py``) is named, with its one-line help, in
:data:`suite.cli.COMMANDS` (the one place: ``tvm-suite --help`` lists the commands without importing
any of them), and defines, at module level:

- ``EXIT_CODES``: its own exit statuses, ``[(ExitCode, meaning), ...]`` (the ones every command
  shares are :data:`suite.cli.COMMON_EXITS`); ``--help`` ends with both, as ``docs/exit-codes.md`` does;
- ``add_arguments(parser)``: its options, added to its subparser (shared ones:
  :mod:`suite.commands.common_args`);
- ``run(args) -> int``: its body, returning its exit status; an expected failure is raised
  (:class:`suite.errors.UserError`, :class:`suite.errors.Interrupted`) and :mod:`suite.cli` maps it
  to one line and an exit status;
- optionally ``INTERRUPTED``: what an interrupted run of it leaves, where that is more than the
  default sentence.

Where the work is large library code (a job of :mod:`suite.jobs`, through its one entry point
``run(...)``; ``suite.history``), the command module holds the command line's part only: its
options, the call, the summary printed, ``--json``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys

from suite.errors import ExitCode

#: The exit statuses of a command that ends with the gate's verdict on what it measured (run, check).
VERDICT_EXITS = [(ExitCode.OK, "READY"), (ExitCode.NOT_READY, "NOT READY: a check failed (a failed build is one)"),
                 (ExitCode.NO_VERDICT, "no verdict: data missing, or latency suspects that could not be timed again")]


def say(text: str, status: int | None = None) -> None:
    """Print ``text``; where standard output is gone (a closed pipe, a full disk), say so on
    stderr and go on: what a command decided (its exit status) does not depend on it."""
    try:
        print(text, flush=True)
    except OSError as err:
        stdout_lost(err, status)


#: The JSON document of a ``--json`` command, with its exit status: printed on stdout by
#: :func:`suite.cli._run` once the command's work is done.
json_document: list[tuple[str, int]] = []


def say_json(value, status: int) -> None:
    """The one JSON document a ``--json`` command prints on stdout: kept until its work is done
    (:func:`suite.cli._run`); meanwhile everything it prints for people goes to stderr
    (:func:`for_people_on_stderr`), so that stdout is that document alone."""
    json_document.append((json.dumps(value, indent=1), status))


@contextlib.contextmanager
def for_people_on_stderr():
    """While a ``--json`` command works, whatever it prints for people (the plan, progress,
    tables, asv's, TVM's and child processes' output) goes to stderr: Python's ``sys.stdout``, and
    file descriptor 1 where standard output is a real file."""
    json_document.clear()
    saved = None
    try:
        sys.stdout.flush()
        out_fd, err_fd = sys.stdout.fileno(), sys.stderr.fileno()
        if out_fd != err_fd:
            saved = os.dup(out_fd)
            os.dup2(err_fd, out_fd)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):  # in-process callers: a StringIO
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, out_fd)
            os.close(saved)


def stdout_lost(err: OSError, status: int | None) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit must not fail again
        os.close(devnull)
    except OSError:
        pass
    verdict = f"; exit {status} stands" if status is not None else ""
    try:
        print(f"tvm-suite: the output could not be written ({err.strerror or err}){verdict}", file=sys.stderr)
    except OSError:
        pass
