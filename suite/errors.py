"""The two kinds of expected failure: the user's to fix, and a combination that cannot be measured;
and the interruptions (Ctrl-C, SIGTERM)."""

from __future__ import annotations

import contextlib
import enum
import signal


class ExitCode(enum.IntEnum):
    """Every exit status of ``tvm-suite``, named once (docs/exit-codes.md lists them per command)."""

    OK = 0  #: done; gate, run: READY
    NOT_READY = 1  #: gate, run: a check failed (a failed build included); measure: the combination failed
    NO_VERDICT = 2  #: bad input, a missing tool, data missing or unreadable, suspects not re-measured
    NOTHING_WORSENED = 3  #: bisect: the metric did not worsen over the range
    # triage: EQUIVALENT is OK (0); no target built and ran both programs is NO_VERDICT (2)
    REORDERED = 10  #: triage: they differ, both within the rounding bound of the exact value
    ARITHMETIC = 11  #: triage: qfloat marked, its IEEE twin not
    CHANGED = 12  #: triage: the after program computes something else
    UNDEFINED = 13  #: triage: the before program is undefined, or the after program's output not a function of its inputs
    CRASHED = 14  #: fuzz: a schedule crashed TVM or hung (and none computed a wrong result)
    SHIFTED = 15  #: triage: both within the rounding bound, the error moved beyond any reordering
    SIGINT = 130  #: interrupted by Ctrl-C (128 + 2)
    SIGTERM = 143  #: terminated (128 + 15)


class UserError(Exception):
    """Bad input, a missing tool or an unsupported TVM: printed as one line, non-zero exit."""

    exit_status = ExitCode.NO_VERDICT


class CannotWrite(UserError, OSError):
    """A file the suite must write cannot be written (a full disk, a read-only directory): one line
    naming it, exit 2. Still an OSError, for the callers that go on without the file."""

    def __str__(self):
        return f"cannot write {self.filename}: {self.strerror or 'write failed'}"


class Skipped(Exception):
    """A combination that cannot be measured here; recorded as skipped with this reason, never a pass."""


class TargetUnavailable(Skipped):
    """A target that cannot run on this machine (no GPU, tools missing)."""


class OrderNotApplicable(Skipped):
    """A loop order that does not apply to this workload or target."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that cleanups run as for Ctrl-C."""


class Interrupted(Exception):
    """Ctrl-C (SIGINT) or SIGTERM stopped a command; the message says what was kept (one line)."""

    def __init__(self, message: str, signal_name: str = "SIGINT"):
        super().__init__(message)
        self.signal_name = signal_name

    @classmethod
    def by(cls, err: BaseException, kept: str) -> Interrupted:
        """The interruption ``err`` (a KeyboardInterrupt: Ctrl-C, or SIGTERM as Terminated), saying
        what was ``kept``."""
        if isinstance(err, Interrupted):
            return err
        return cls(kept, "SIGTERM" if isinstance(err, Terminated) else "SIGINT")

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.SIGTERM if self.signal_name == "SIGTERM" else ExitCode.SIGINT


_received: list[int] = []


@contextlib.contextmanager
def signals_raise():
    """While inside, SIGINT and SIGTERM raise where the program is (:func:`on_signal`); on leaving,
    the handlers there were before are put back and the signals recorded are forgotten, so that a
    program (or a test) that calls `tvm-suite` in-process keeps its own Ctrl-C handling."""
    handled = (signal.SIGINT, signal.SIGTERM)
    before = {signum: signal.getsignal(signum) for signum in handled}
    for signum in handled:  # cleanups run alike for both
        signal.signal(signum, on_signal)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        _received.clear()


def on_signal(signum, frame):
    """SIGINT's and SIGTERM's handler (``tvm-suite``): raise where the program is, as Python's own
    Ctrl-C does, and remember the signal. Python prints and drops an exception raised inside some
    callbacks (the at-fork hooks logging registers run at every subprocess start, finalizers): a
    signal that lands there is lost, and :func:`raise_if_signalled` raises it again."""
    _received.append(signum)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def signalled() -> KeyboardInterrupt | None:
    """The interruption a signal asked for (SIGTERM's as :class:`Terminated`), if one came."""
    if not _received:
        return None
    return Terminated() if _received[-1] == signal.SIGTERM else KeyboardInterrupt()


def raise_if_signalled() -> None:
    """Raise the interruption a signal asked for, if one came (see :func:`on_signal`): called
    before a phase files its work, so that an interrupted run never files it as complete."""
    interruption = signalled()
    if interruption is not None:
        raise interruption


def first_line(err: BaseException) -> str:
    """The message of an error in one line (TVM puts it last, after a traceback of C++ frames)."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return (lines[-1] if lines else type(err).__name__)[:300]
