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
