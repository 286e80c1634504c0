"""What became of one schedule of a fuzz campaign, spelled once for the worker, the journal and the
campaign: :class:`Outcome` (one of triage's six verdicts, or why there is none), and the worker's
:class:`Answer` to one request (an output left in the request's directory, or the
:class:`Failure` that left none), written by the worker child (:meth:`Answer.to_json`) and read
by the campaign (:meth:`Answer.parse`), each in one place.

Light on purpose: the worker child imports it before TVM, and nothing here imports TVM or triage.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from pathlib import Path

from suite.errors import UserError


class Outcome(enum.StrEnum):
    """The outcome of one judged schedule; its value is the word the journal, the table and the
    summary write. The first six are triage's verdicts (:data:`suite.triage.verdict.KINDS`, least
    serious first), the rest say why a schedule got no verdict. The order is the table's columns."""

    EQUIVALENT = "EQUIVALENT"
    REORDERED = "REORDERED"
    ARITHMETIC = "ARITHMETIC"
    SHIFTED = "SHIFTED"
    CHANGED = "CHANGED"
    UNDEFINED = "UNDEFINED"
    BUILD_FAILED = "BUILD_FAILED"
    RUN_FAILED = "RUN_FAILED"
    CRASH = "CRASH"  #: the worker child died (a segfault in TVM), or TVM failed an internal check (InternalError)
    TIMEOUT = "TIMEOUT"  #: no answer within --trace-timeout: the child was ended
    SKIPPED = "SKIPPED"  #: a named order that does not apply to the workload or the target
    NOT_APPLICABLE = "NOT_APPLICABLE"  #: a planted kind with nothing to edit there, or an edit that changes nothing

    @property
    def is_verdict(self) -> bool:
        return self in VERDICTS

    @property
    def is_finding(self) -> bool:
        return self in FINDINGS

    @property
    def is_wrong(self) -> bool:
        """Whether it says the schedule computes something else: a planted bug judged so is caught."""
        return self in WRONG


#: triage's verdicts, least serious first (suite.triage.verdict.KINDS, word for word).
VERDICTS = (Outcome.EQUIVALENT, Outcome.REORDERED, Outcome.ARITHMETIC, Outcome.SHIFTED, Outcome.CHANGED,
            Outcome.UNDEFINED)
#: The outcomes of a schedule the worker left no output of: a failure's.
NO_OUTPUT = (Outcome.BUILD_FAILED, Outcome.RUN_FAILED, Outcome.CRASH, Outcome.TIMEOUT, Outcome.SKIPPED,
             Outcome.NOT_APPLICABLE)
#: What is kept as a finding, the most serious first (the exit status is the first found's).
FINDINGS = (Outcome.CHANGED, Outcome.UNDEFINED, Outcome.SHIFTED, Outcome.CRASH, Outcome.TIMEOUT)
#: The verdicts that say a schedule computes something else.
WRONG = (Outcome.CHANGED, Outcome.UNDEFINED, Outcome.SHIFTED)


@dataclass(frozen=True)
class Failure:
    """Why the worker left no output of a schedule: ``outcome`` one of :data:`NO_OUTPUT`, and
    ``message`` its first line (a skip's or a plant's reason, TVM's error, the child's last words)."""

    outcome: Outcome
    message: str = ""

    def __post_init__(self):
        if self.outcome not in NO_OUTPUT:
            raise ValueError(f"{self.outcome} is a verdict, not a failure")


@dataclass(frozen=True)
class Answer:
    """The worker's answer to one request: its output (``output.npy``, on a qfloat target also
    ``twin.npy``, and ``after.py``) in the request's directory ``dir``, or the :class:`Failure` that
    left none. ``undefined``: why the output is not a function of the inputs alone (the worker's two
    runs on poisoned arrays, native targets), or None."""

    failure: Failure | None = None
    undefined: str | None = None
    compile_s: float | None = None
    dir: Path | None = None  #: the request's directory: set by :meth:`parse`, never sent

    @classmethod
    def failed(cls, outcome: Outcome, message: str = "") -> Answer:
        return cls(failure=Failure(outcome, message))

    def to_json(self) -> dict:
        """The answer as the worker sends it (one JSON line)."""
        failure = None if self.failure is None else {"outcome": self.failure.outcome.value,
                                                     "message": self.failure.message}
        return {"failure": failure, "undefined": self.undefined, "compile_s": self.compile_s}

    @classmethod
    def parse(cls, fields, where: Path) -> Answer:
        """The answer the worker sent for the request whose directory is ``where``. The suite's own
        refusal there (:func:`refusal`: a damaged record in the cache) is a UserError, its words;
        anything the worker does not send is a UserError saying so."""
        if isinstance(fields, dict) and set(fields) == {"error"} and isinstance(fields["error"], str):
            raise UserError(fields["error"])
        try:
            if not isinstance(fields, dict) or set(fields) != {"failure", "undefined", "compile_s"}:
                raise ValueError("not an answer")
            failure, undefined, compile_s = fields["failure"], fields["undefined"], fields["compile_s"]
            if failure is not None:
                if not isinstance(failure, dict) or set(failure) != {"outcome", "message"} \
                        or not isinstance(failure["message"], str):
                    raise ValueError("not a failure")
                failure = Failure(Outcome(failure["outcome"]), failure["message"])
            if not (undefined is None or isinstance(undefined, str)):
                raise ValueError("undefined is no text")
            if not (compile_s is None or (isinstance(compile_s, (int, float)) and not isinstance(compile_s, bool)
                                          and math.isfinite(compile_s))):
                raise ValueError("compile_s is no number")
        except (ValueError, TypeError) as err:
            raise UserError(f"{where}: the campaign's worker answered {str(fields)[:120]!r} ({err}), "
                            "which is no answer of it") from None
        return cls(failure, undefined, compile_s, Path(where))


def refusal(message: str) -> dict:
    """The worker's answer where the suite itself refuses (a UserError: a damaged record): no
    outcome of the schedule's, but the campaign's to say, in one line."""
    return {"error": message}
