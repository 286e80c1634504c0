"""The one base class of expected failures, reported by the CLI as a single line."""


class UserError(Exception):
    """Bad input, a missing tool or an unsupported TVM: printed as one line, non-zero exit."""

    exit_status = 2


class TargetUnavailable(Exception):
    """A target that cannot run on this machine (no GPU, say): recorded as a skip with this reason."""
