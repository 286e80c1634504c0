"""The two kinds of expected failure: the user's to fix, and a combination that cannot be measured."""


class UserError(Exception):
    """Bad input, a missing tool or an unsupported TVM: printed as one line, non-zero exit."""

    exit_status = 2


class Skipped(Exception):
    """A combination that cannot be measured here; recorded as skipped with this reason, never a pass."""


class TargetUnavailable(Skipped):
    """A target that cannot run on this machine (no GPU, tools missing)."""


class OrderNotApplicable(Skipped):
    """A loop order that does not apply to this workload or target."""


class Interrupted(Exception):
    """Ctrl-C (SIGINT) or SIGTERM stopped a command; the message says what was kept (one line)."""

    def __init__(self, message: str, signal_name: str = "SIGINT"):
        super().__init__(message)
        self.signal_name = signal_name


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that cleanups run as for Ctrl-C."""
