"""The child process that builds and runs each schedule of a campaign, and its parent's handle.

One child imports TVM once and takes requests one at a time (JSON lines on its stdin, answers on
its stdout): a schedule (a named order or a trace, a bug planted or not) of one combination,
built and run through :mod:`suite.core.execution` on the workload's seeded inputs, its output
written as ``output.npy`` (on a qfloat target also its IEEE twin's, ``twin.npy``) and its
TVMScript as ``after.py`` in the directory the request names; llvm code for the CPU the request
names (``cpu``: a cluster's worker builds for its client), else this machine's.
Each answer is a :class:`suite.fuzz.outcome.Answer` as JSON (:meth:`~suite.fuzz.outcome.Answer.to_json`):
the output left, or the failure that left none, its outcome an :class:`~suite.fuzz.outcome.Outcome`.
The parent waits for each answer no longer than its timeout: a child that hangs is ended (its
session, :func:`suite.children.end`) and one that dies (a segfault in TVM) is seen by its closed
pipe; either is the finding of that request (TIMEOUT, CRASH), and the next request starts a new child. The child's
stderr goes to ``worker.log`` in the campaign's work directory, whose last line says why it died.
A handle closed for good (:meth:`Worker.close` ``for_good``: the campaign is stopping) starts no
child again: a request it is asked, or one it was waiting on when its child was ended, is
:class:`Stopping`, at once.
"""

from __future__ import annotations

import contextlib
import faulthandler
import itertools
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from suite import children, sandbox
from suite.fuzz.outcome import Answer, Outcome, refusal

#: How long a new child may take to import TVM and say it is ready.
START_S = 300.0
#: The file of a request's directory that keeps what went wrong where no output did: a crashed or
#: hung child's words (the end of its log), or TVM's internal error with its traceback.
LOG = "worker.log"
#: The most of a child's log kept with its request.
LOG_KEPT = 256 * 1024
#: What a request to a worker (or a pool) closed for good is told.
STOPPING = "the campaign is stopping: its workers are closed, and no child is started for this request"


class Stopping(Exception):
    """A request to a worker or pool closed for good (the campaign was interrupted): not judged, no
    child started for it, none waited on. A rerun judges it."""


class Worker:
    """The parent's handle of the child: :meth:`ask` one request, get its answer. The child is
    confined (:mod:`suite.sandbox`) where ``confined``: it may write ``scratch`` alone (``work``
    and the requests' directories are in it)."""

    def __init__(self, work: Path, env: dict | None = None, scratch: Path | None = None, confined: bool = True):
        self.work = Path(work)
        self.scratch = Path(scratch or work)
        self.env = env
        self.confined = confined
        self.process = None
        self._buffer = b""
        #: Guards ``process`` and ``_shut`` between the thread asking and one closing the handle:
        #: either the closing thread sees the child a start made (and ends it), or the start sees
        #: the handle shut (and ends its child itself, before sending it anything).
        self._guard = threading.Lock()
        self._shut = False
        self._log_start = 0

    def _refuse_if_shut(self) -> None:
        if self._shut:
            raise Stopping(STOPPING)

    def _start(self) -> subprocess.Popen:
        self._refuse_if_shut()  # a handle closed for good starts no child
        self.work.mkdir(parents=True, exist_ok=True)
        log = open(self.work / "worker.log", "ab")
        self._log_start = log.seek(0, os.SEEK_END)  # where this child's words begin
        try:
            process = sandbox.start_python(["-m", "suite.fuzz.worker"], self.scratch, sandbox.FUZZ_WORKER,
                                           confined=self.confined, stdin=-1, stdout=-1, stderr=log,
                                           env={**os.environ, **self.env} if self.env else None)
        finally:
            log.close()
        with self._guard:
            shut = self._shut
            if not shut:
                self.process = process
        if shut:  # closed for good while it started: ended before it is sent anything
            children.end(process)
            raise Stopping(STOPPING)
        self._buffer = b""
        try:
            ready = self._read_line(process, START_S)
        except EOFError:
            ready = None
        if ready is None or json.loads(ready).get("ready") is not True:
            self._refuse_if_shut()  # ended by the close: the campaign stops, no failed start
            self.close()
            raise RuntimeError(f"the fuzz worker did not start: {self._log_tail()}")
        return process

    def ask(self, request: dict, timeout_s: float) -> dict:
        """The child's answer to ``request`` (:meth:`Answer.to_json`; read by :meth:`Answer.parse`):
        a TIMEOUT failure when none came within ``timeout_s`` (the child is ended), a CRASH when
        the child died. :class:`Stopping` at once where the handle is closed for good, or is
        closed while it waits: no child is started then, and none is waited on."""
        self._refuse_if_shut()
        process = self.process
        if process is None or process.poll() is not None:
            process = self._start()
        try:
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
        except (BrokenPipeError, ValueError):  # ValueError: its pipe closed under it
            self._refuse_if_shut()  # the child was ended by the close, not crashed
            return self._crashed(process, request)
        try:
            line = self._read_line(process, timeout_s)
        except EOFError:  # the child closed its end: it died (it may not have been reaped yet)
            self._refuse_if_shut()
            return self._crashed(process, request)
        if line is None:
            self._refuse_if_shut()
            self.close()
            self._keep_log(request)
            return Answer.failed(Outcome.TIMEOUT, f"no answer in {timeout_s:g} s").to_json()
        return json.loads(line)

    def _crashed(self, process: subprocess.Popen, request: dict) -> dict:
        try:
            status = process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # closed its output but goes on: ended, as a hang is
            self.close()
            self._keep_log(request)
            return Answer.failed(Outcome.CRASH, f"the worker closed its output and did not exit: "
                                                f"{self._log_tail()}").to_json()
        with self._guard:
            if self.process is process:
                self.process = None
        how = sandbox.ended_words(status, self.confined)
        self._keep_log(request)
        return Answer.failed(Outcome.CRASH, f"the worker died ({how}): {self._log_tail()}").to_json()

    def _read_line(self, process: subprocess.Popen, timeout_s: float) -> bytes | None:
        """The child's next line; None when none came within ``timeout_s``; EOFError when its
        output closed."""
        deadline = time.monotonic() + timeout_s
        fd = process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _keep_log(self, request: dict) -> None:
        """What the child that died or hung on ``request`` wrote to ``worker.log`` (its last
        :data:`LOG_KEPT` bytes), kept as ``worker.log`` in the request's directory: the campaign's
        ``work/`` goes at its end, the finding keeps this."""
        try:
            words = sandbox.read_back(self.work / "worker.log")[self._log_start:][-LOG_KEPT:]
            where = Path(request["dir"])
            where.mkdir(parents=True, exist_ok=True)
            (where / LOG).write_bytes(words)
        except (OSError, KeyError):
            pass  # no log to keep: the answer's message has what is known

    def _log_tail(self) -> str:
        try:
            lines = [line for line in sandbox.read_back(self.work / "worker.log").decode(errors="replace").splitlines()
                     if line.strip()]
        except OSError:
            return "no log"
        return lines[-1][:300] if lines else "no output"

    def close(self, for_good: bool = False) -> None:
        """End the child, if one runs (the next :meth:`ask` starts another); ``for_good``: and
        start none again (the campaign is stopping: every request is :class:`Stopping`). Safe
        from another thread while one asks: that one's wait ends with :class:`Stopping`."""
        with self._guard:
            if for_good:
                self._shut = True
            process, self.process = self.process, None
        if process is not None:
            children.end(process)


def _scheduled(request: dict):
    """The request's PrimFunc and the loop order the target builds it in."""
    from suite import targets
    from suite.compat import schedules as compat_schedules
    from suite.core import schedules, workloads

    target = targets.get(request["target"])
    workload = workloads.get(request["workload"])
    if request.get("chain"):  # the workload made small, a finding's reproducer (suite.fuzz.shrink)
        from suite.fuzz import shrink

        workload = shrink.workload(workload, request["chain"])
        func = shrink.prim_func(workload, request["dtype"])
    else:
        func = workloads.prim_func(workload, request["dtype"])
    if request.get("order"):
        return target, workload, schedules.apply(func, request["order"], workload.id, request["dtype"],
                                                 target.records_from), request["order"]
    sch = compat_schedules.schedule(func)
    compat_schedules.apply_trace(request["trace"], sch)
    return target, workload, sch.mod["main"], "default"


#: Kernels this worker process has built. The dynamic loader answers a second load of a path with
#: the library it loaded first, whatever the file holds now: each kernel gets a name of its own.
_BUILT = itertools.count()


def _kernel_path(where: Path, target) -> Path:
    """Where this request's kernel is built: a file name no earlier request of this process had."""
    name = Path(target.KERNEL_FILE)
    return where / f"{name.stem}-{next(_BUILT)}{name.suffix}"


def _serve(request: dict) -> Answer:
    from suite.compat import build
    from suite.core import execution, workloads
    from suite.core.record import Status
    from suite.errors import Skipped, first_line
    from suite.fuzz import bisection, plant
    from suite.targets.base import Output
    from suite.triage import filled, tvmscript

    where = Path(request["dir"])
    where.mkdir(parents=True, exist_ok=True)
    try:
        target, workload, func, order = _scheduled(request)
    except Skipped as err:
        return Answer.failed(Outcome.SKIPPED, str(err))
    except Exception as err:  # a trace TVM refuses to apply: this schedule does not build
        return _internal(where, err) or Answer.failed(Outcome.BUILD_FAILED,
                                                      f"the schedule does not apply: {first_line(err)}")
    text = tvmscript.script(func, "main")
    if request.get("plant"):
        try:
            text = plant.mutate(text, request["plant"], request["dtype"])
        except plant.NotApplicable as err:
            return Answer.failed(Outcome.NOT_APPLICABLE, str(err))
    (where / "after.py").write_text(text)
    if request.get("plant"):
        funcs, _ = tvmscript.parse_file(where / "after.py")
        func = tvmscript.pick(funcs, "main", where / "after.py")[1]
    seen = [] if request.get("passes") else None  # the lowering passes TVM runs, for blame (suite.fuzz.blame)
    stages = [] if request.get("bisect") else None  # the program after each of them (suite.fuzz.bisection)
    running = []  # the passes under way: the one an InternalError came from is named in the CRASH
    with build.lowering(request.get("disabled_pass", ()), seen, request.get("switched_off", ()), running), \
            bisection.recording(stages) if stages is not None else contextlib.nullcontext():
        built = execution.build(target, func, _kernel_path(where, target), order)
    if seen is not None:
        (where / "passes.json").write_text(json.dumps(seen))
    if built.failure is not None:
        if built.failure.status is Status.SKIPPED:
            return Answer.failed(Outcome.SKIPPED, built.failure.message)
        return (_internal(where, built.failure.cause, build.raising_pass(running))
                or Answer.failed(Outcome.BUILD_FAILED, built.failure.message))
    if stages is not None:  # the pipeline bisected on the workload's inputs instead of a run
        found = bisection.bisect(stages, workloads.make_inputs(workload, request["dtype"]),
                                 "the finding's reproducer" if request.get("chain") else "the finding's schedule")
        (where / "bisection.json").write_text(json.dumps(found.to_json()))
        return Answer(compile_s=built.compile_s)
    arguments = [*workloads.make_inputs(workload, request["dtype"]),
                 Output(tuple(workload.output_shape), workloads.output_dtype(request["dtype"]))]
    # a qfloat target's IEEE twin runs too: the verdict tells qfloat's own rounding (ARITHMETIC)
    # from the schedule's by it, as triage does
    ran = execution.run(built, arguments, twin=bool(target.ieee_twin))
    if ran.failure is not None:
        return Answer.failed(Outcome.RUN_FAILED, ran.failure.words())
    np.save(where / "output.npy", ran.output, allow_pickle=False)
    if ran.twin is not None:
        np.save(where / "twin.npy", ran.twin, allow_pickle=False)
    return Answer(undefined=filled.undefined(target, built.path, arguments), compile_s=built.compile_s)


def _internal(where: Path, err: BaseException | None, in_pass: str | None = None) -> Answer | None:
    """A CRASH where ``err`` is TVM's InternalError (a check inside TVM failed on a schedule its
    postprocessors accepted: TVM's fault, a finding), naming the lowering pass it came from
    (``in_pass``, where known: the first line, and so the finding's key, says which pass to look
    at), its whole text and traceback kept as ``worker.log`` in the request's directory ``where``;
    None for any other error."""
    import traceback

    from suite.compat import build
    from suite.errors import first_line

    if err is None or not build.is_internal_error(err):
        return None
    where.mkdir(parents=True, exist_ok=True)
    (where / LOG).write_text("".join(traceback.format_exception(err)))
    where_in = f" in {in_pass}" if in_pass else ""
    return Answer.failed(Outcome.CRASH, f"TVM failed an internal check{where_in} (InternalError): {first_line(err)}")


def main() -> int:
    """The child: answers on the standard output it was started with; anything else TVM or the
    suite prints goes to stderr (the log), so it never breaks an answer."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable()  # a segfault in TVM writes the Python stack to the log: where it died
    from suite.compat import release
    from suite.errors import UserError, first_line
    from suite.targets import llvm

    release.tvm()  # imported before the parent's clock starts

    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        cpu = request.get("cpu")  # a cluster's worker builds llvm code for its client's CPU
        try:
            with llvm.building_for(cpu["mcpu"], cpu["model"]) if cpu else contextlib.nullcontext():
                answer = _serve(request).to_json()
        except UserError as err:  # the suite's own refusal (a damaged record): the campaign's to say
            answer = refusal(str(err))
        except Exception as err:
            answer = (_internal(Path(request["dir"]), err)
                      or Answer.failed(Outcome.BUILD_FAILED, first_line(err))).to_json()
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
