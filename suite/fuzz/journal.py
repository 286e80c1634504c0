"""A fuzz campaign's journal, ``journal.jsonl``: each schedule to judge is a :class:`Schedule`,
and each judged one a :class:`JournalLine`, written (:meth:`JournalLine.fields`) and read back
(:meth:`JournalLine.parse`) in one place each, one a line, each line sealed and chained with the
line before it (:class:`Journal`)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from suite.errors import CannotWrite, UserError
from suite.fuzz import plant
from suite.fuzz.directory import FINDINGS_DIR, open_own, safe_name
from suite.fuzz.outcome import Outcome

#: The kinds of schedule a journal line judges: a named order, a sampled trace, a planted bug.
SCHEDULE_KINDS = ("order", "trace", "plant")


@dataclass(frozen=True)
class Finding:
    """Where a finding's directory is, and the key it is deduplicated by."""

    dir: str
    key: str


def _text(value) -> bool:
    return isinstance(value, str)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


#: The words of the outcomes, as a line holds them.
_OUTCOME_WORDS = frozenset(o.value for o in Outcome)

#: Every field a journal line may hold: whether it must, and what it must be.
_LINE_FIELDS = {
    "id": (True, _text), "seed": (True, _whole), "judged_by": (True, _text), "workload": (True, _text),
    "dtype": (True, _text), "target": (True, _text), "kind": (True, lambda v: v in SCHEDULE_KINDS),
    "name": (True, _text), "outcome": (True, lambda v: _text(v) and v in _OUTCOME_WORDS), "message": (True, _text),
    "seconds": (True, _seconds), "summary": (False, _text),
    "first_wrong": (False, lambda v: v is None or isinstance(v, dict)),
    "trace": (False, lambda v: v is None or isinstance(v, list)), "resampled": (False, _whole),
    "trace_index": (False, lambda v: v is None or _whole(v)), "planted": (False, _text),
    "expected": (False, _text), "planted_in": (False, _text),
    "tensorized": (False, lambda v: isinstance(v, list) and all(map(_text, v))),
    "finding": (False, lambda v: isinstance(v, dict) and set(v) == {"dir", "key"} and all(map(_text, v.values()))),
}


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """One schedule of a combination to judge: its id in the journal, and what the worker builds
    and runs (:meth:`request`): a named order, a sampled trace, or a bug planted in either."""

    id: str
    seed: int
    judged_by: str  #: :func:`suite.fuzz.combinations.judged_by`: what its verdict depends on besides the schedule
    workload: str
    dtype: str
    target: str
    kind: str  #: one of SCHEDULE_KINDS
    name: str  #: the order's name, the trace's index, or the plant's ``kind#number``
    #: The sampled trace; None for a named order, or a plant moved to the unscheduled function.
    trace: list | None = None
    #: Samples the postprocessors rejected before ``trace``; None where nothing was sampled (then
    #: the line holds no trace fields).
    resampled: int | None = None
    trace_index: int | None = None
    planted: str | None = None  #: a plant's kind
    expected: str | None = None  #: what a plant should be judged
    planted_in: str | None = None  #: "default": the sampled trace had nothing of the plant's kind
    #: The tensor intrinsics the sampled trace tensorizes with (empty: none), where its design space
    #: offered one (int8: :mod:`suite.fuzz.sampling`); None elsewhere.
    tensorized: list[str] | None = None

    @property
    def label(self) -> str:
        return f"{self.workload} {self.dtype} {self.target}"

    def request(self) -> dict:
        """What the worker is asked to build and run: the named order, or the sampled trace (a
        plant without one: the unscheduled function), the bug planted where there is one."""
        asked = {"trace": self.trace} if self.trace is not None else \
            {"order": self.name if self.kind == "order" else "default"}
        return {**asked, "plant": self.planted} if self.planted else asked


@dataclass(frozen=True, kw_only=True)
class JournalLine(Schedule):
    """One judged schedule as the journal holds it: the schedule, its outcome and, where it got a
    verdict, the verdict's words. Written by :meth:`fields` and read back by :meth:`parse`, every
    field checked: the campaign's table, findings, recall and exit status come from these alone."""

    outcome: Outcome
    message: str  #: a failure's first line (a skip's, a plant's reason); "" for a verdict
    seconds: float
    #: The verdict's summary; None where there is none (a failure: then the line holds neither it
    #: nor ``first_wrong``).
    summary: str | None = None
    first_wrong: dict | None = None
    finding: Finding | None = None

    @classmethod
    def judged(cls, schedule: Schedule, judged: Judged, seconds: float) -> JournalLine:
        return cls(**{f.name: getattr(schedule, f.name) for f in dataclasses.fields(Schedule)},
                   outcome=judged.outcome, message=judged.message, seconds=seconds, summary=judged.summary,
                   first_wrong=judged.first_wrong)

    def fields(self) -> dict:
        """The line as the journal holds it, less its seal: those of a kind of schedule this is not
        (a named order's trace, an unplanted schedule's plant) and a failure's verdict left out."""
        written = {"id": self.id, "seed": self.seed, "judged_by": self.judged_by, "workload": self.workload,
                   "dtype": self.dtype, "target": self.target, "kind": self.kind, "name": self.name,
                   "outcome": self.outcome.value, "message": self.message, "seconds": self.seconds}
        if self.summary is not None:
            written.update(summary=self.summary, first_wrong=self.first_wrong)
        if self.resampled is not None:
            written.update(trace=self.trace, resampled=self.resampled, trace_index=self.trace_index)
        for name, value in (("planted", self.planted), ("expected", self.expected), ("planted_in", self.planted_in),
                            ("tensorized", self.tensorized if self.trace is not None else None)):
            if value is not None:
                written[name] = value
        if self.finding is not None:
            written["finding"] = {"dir": self.finding.dir, "key": self.finding.key}
        return written

    @classmethod
    def parse(cls, fields) -> JournalLine:
        """The line of the JSON object ``fields``; ValueError saying what is wrong (a field missing,
        unknown or of another type, an outcome or kind the campaign does not have)."""
        if not isinstance(fields, dict):
            raise ValueError("not a JSON object")
        unknown = sorted(set(fields) - set(_LINE_FIELDS))
        if unknown:
            raise ValueError(f"a field no campaign writes ({unknown[0]!r:.40})")
        for name, (needed, ok) in _LINE_FIELDS.items():
            if name not in fields:
                if needed or (name == "planted" and fields.get("kind") == "plant"):
                    raise ValueError(f"no {name!r}")
            elif not ok(fields[name]):
                raise ValueError(f"{name!r} is {fields[name]!r:.60}, not what a campaign writes there")
        values = {**fields, "outcome": Outcome(fields["outcome"])}
        if "finding" in values:
            if not values["outcome"].is_finding:
                raise ValueError(f"a finding of {values['outcome']}, which is no finding")
            values["finding"] = Finding(**values["finding"])
        if values.get("planted") is not None:
            values.setdefault("expected", plant.EXPECTED)
        return cls(**values)


@dataclass(frozen=True)
class Judged:
    """What one build and run of a schedule came to: its outcome, with the verdict's summary and
    first wrong element where it got a verdict (None: a failure, ``message`` its first line)."""

    outcome: Outcome
    message: str
    dir: Path  #: the request's directory (the output, after.py): removed by whoever asked
    summary: str | None = None
    first_wrong: dict | None = None


def _chained(previous: str, fields: dict) -> str:
    """The seal of a line: the sha256 of the seal of the line before it and the line's canonical JSON."""
    return hashlib.sha256((previous + json.dumps(fields, sort_keys=True, separators=(",", ":"))).encode()).hexdigest()


class Journal:
    """``journal.jsonl``: one judged schedule a line, each appended with one write and synced, so
    that an interruption leaves every line before it whole. Each line carries ``seal``, chained
    with the line before it (:func:`_chained`): a line edited, damaged, removed or moved, or of a
    shape no campaign writes, is refused naming the file and the line, never read in part. A torn
    last line (an append cut short, without its newline) is cut off: its schedule is judged again.

    The seal is a checksum anyone can compute, not a signature: it catches damage and edits by hand,
    not a forger who seals the lines again (docs/fuzz.md). What a line leads the campaign to show is
    held to the campaign all the same: a finding's directory is its own under ``findings/``.

    The file is the campaign's own: opened never through a link and never waiting on a FIFO, a
    regular file with one name (:func:`open_own`), and cut through the descriptor checked."""

    def __init__(self, path: Path):
        self.path = path
        self._last = ""  #: the seal of the last line

    def load(self) -> dict[str, JournalLine]:
        """The verified lines, by schedule id (a later line of an id replaces an earlier one)."""
        try:
            fd = open_own(self.path, os.O_RDONLY, "journal")
            if fd is None:
                return {}
            try:
                with os.fdopen(os.dup(fd), "rb") as file:
                    data = file.read()
                read = os.fstat(fd)
            finally:
                os.close(fd)
        except OSError as err:
            raise UserError(f"{self.path}: unreadable ({err.strerror or err})") from None
        *lines, torn = data.split(b"\n")
        done = {}
        for number, line in enumerate(lines, 1):
            found = self._verified(line, number)
            done[found.id] = found
        if torn:
            self._cut(len(data) - len(torn), read)
        return done

    @contextlib.contextmanager
    def _written(self, flags: int):
        """A descriptor of the journal to write through (:func:`open_own`), closed after; gone
        (removed meanwhile, or its directory) is FileNotFoundError."""
        fd = open_own(self.path, flags, "journal")
        if fd is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(self.path))
        try:
            yield fd
        finally:
            os.close(fd)

    def _cut(self, size: int, read: os.stat_result) -> None:
        """Cut the journal to ``size`` bytes, through a descriptor of the very file read (``read``)."""
        try:
            with self._written(os.O_WRONLY) as fd:
                now = os.fstat(fd)
                if (now.st_dev, now.st_ino) != (read.st_dev, read.st_ino):
                    raise UserError(f"{self.path}: replaced while the campaign read it: run again")
                os.ftruncate(fd, size)
                os.fsync(fd)
        except OSError as err:
            raise CannotWrite(err.errno, err.strerror, str(self.path)) from None

    def _placed(self, line: JournalLine) -> JournalLine:
        """``line`` with its finding's directory as this campaign's: the one the campaign makes for
        the schedule, ``findings/<id>`` inside this out directory. A line naming any other place
        (``/etc``, another directory) is refused (ValueError): a journal moves with its directory, so
        the place is written relative to it (a line written before that, whole, names the same
        directory)."""
        if line.finding is None:
            return line
        own = Path(FINDINGS_DIR) / safe_name(line.id)
        given = Path(line.finding.dir)
        if given != own:
            try:
                same = given.resolve() == (self.path.parent / own).resolve()
            except (OSError, RuntimeError, ValueError):
                same = False
            if not same:
                raise ValueError(f"its finding's directory {line.finding.dir!r:.80} is not the campaign's own "
                                 f"{own} (inside {self.path.parent / FINDINGS_DIR})")
        return dataclasses.replace(line, finding=Finding(str(self.path.parent / own), line.finding.key))

    def _verified(self, line: bytes, number: int) -> JournalLine:
        where = f"{self.path}, line {number}"
        again = f": give a new --out, or remove the journal from line {number} on to judge those schedules again"
        try:
            fields = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise UserError(f"{where}: damaged (not a line of JSON){again}") from None
        if not isinstance(fields, dict) or not isinstance(fields.get("seal"), str):
            raise UserError(f"{where}: not sealed (a journal of an older suite, or an edited one){again}")
        seal = fields.pop("seal")
        if seal != _chained(self._last, fields):
            raise UserError(f"{where}: not the line the campaign wrote there (its seal does not match: edited, "
                            f"damaged, or lines removed before it){again}")
        try:
            found = self._placed(JournalLine.parse(fields))
        except ValueError as err:
            raise UserError(f"{where}: {err}{again}") from None
        self._last = seal
        return found

    def append(self, line: JournalLine | dict) -> JournalLine:
        """Seal ``line`` (or a line's fields, checked as a line read back is), chained with the last
        line, and append it; the line as it reads back."""
        fields = (line if isinstance(line, JournalLine) else JournalLine.parse(line)).fields()
        read = self._placed(JournalLine.parse(fields))  # the suite never writes a line it would refuse
        seal = _chained(self._last, fields)
        data = (json.dumps({**fields, "seal": seal}, sort_keys=True) + "\n").encode()
        try:
            with self._written(os.O_WRONLY | os.O_APPEND | os.O_CREAT) as fd:
                os.write(fd, data)
                os.fsync(fd)
        except OSError as err:
            raise CannotWrite(err.errno, err.strerror, str(self.path)) from None
        self._last = seal
        return read
