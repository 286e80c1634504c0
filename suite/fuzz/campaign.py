"""A fuzz campaign: for each combination (workload x dtype x target), the suite's named orders and
N schedules sampled from MetaSchedule's design space (:mod:`suite.fuzz.sampling`), each built and
run by a worker child (:mod:`suite.fuzz.worker`; one per core here, or a Dask cluster's:
:mod:`suite.fuzz.pool`) and judged by triage's verdict (:func:`suite.triage.verdict.judge`, under
the thresholds given) against the float64 reference of the workload's op chain, the unscheduled
function's output as "before" (with the IEEE twin's on a qfloat target). Bugs planted in scheduled
TIR (:mod:`suite.fuzz.plant`) measure the oracle's recall; a plant whose output is the unplanted
program's, bit for bit, is not applicable. Unmodified schedules judged CHANGED are the oracle's
false alarms, unless named orders and sampled traces both go wrong: then the compiler or the
runtime is at fault (:attr:`suite.fuzz.summary.Summary.compiler_fault`).

The out directory holds ``journal.jsonl`` (one JSON line per judged schedule, appended whole as
each completes: a rerun with the same seed skips those), ``findings/<id>/`` (each CHANGED,
UNDEFINED, crash or timeout: trace, minimised trace, TVMScript, report) and ``summary.json``. It is
locked while a campaign writes it (:class:`suite.fuzz.directory.CampaignLock`: ``.tvm-suite-fuzz.lock``).
Every file of it the campaign reads or writes is its own regular file, never reached through a link:
a link, a FIFO or another kind of file there is refused in one line before any work
(:func:`suite.fuzz.directory.check_own_files`), and the journal is opened without following a link
or waiting on a FIFO (:func:`suite.fuzz.directory.open_own`).

What became of each schedule is a :class:`suite.fuzz.outcome.Outcome`; the worker's answer is read
once into an :class:`~suite.fuzz.outcome.Answer`, each schedule to judge is a
:class:`~suite.fuzz.journal.Schedule`, and each judged one a :class:`~suite.fuzz.journal.JournalLine`,
written (:meth:`~suite.fuzz.journal.JournalLine.fields`) and read back
(:meth:`~suite.fuzz.journal.JournalLine.parse`) in one place each (:mod:`suite.fuzz.journal`); a
finding's report and reproduction are :mod:`suite.fuzz.findings`'s; the campaign's figures are a
:class:`suite.fuzz.summary.Summary`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import io
import itertools
import json
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from suite import cache, compat, floats, sandbox, targets
from suite.core import quantized, reference, schedules, workloads
from suite.core.bounds import Expected
from suite.core.combo import select_workloads
from suite.errors import UserError, raise_if_signalled
from suite.fuzz import EMULATED_TIMEOUT_S, NATIVE_TIMEOUT_S, bisection, blame, findings, plant, sampling, shrink
from suite.fuzz import pool as pools
from suite.fuzz.directory import (FINDINGS_DIR, JOURNAL, LOCK, OWN_MARK, SUMMARY, WORK_DIR, CampaignLock,
                                  check_own_files, make_own_dir, old_lock_dir, safe_name, shown, touch_own,
                                  write_own)
from suite.fuzz.journal import Finding, Journal, JournalLine, Judged, Schedule
from suite.fuzz.outcome import Answer, Outcome
from suite.fuzz.summary import NO_EFFECT, Summary, summarize
from suite.reporting import thresholds as thresholds_file
from suite.targets.base import Mode, NotTunable
from suite.triage import verdict

#: The least time the unscheduled function (the before program) gets to build and run.
BEFORE_TIMEOUT_S = 300.0

@dataclass
class Options:
    workloads: list[str]
    dtypes: list[str]
    targets: list[str]
    traces: int
    seed: int
    minutes: float
    out: Path
    plant: int = 0
    timeout_s: float | None = None  #: None: NATIVE_TIMEOUT_S or EMULATED_TIMEOUT_S, by target
    minimise_tries: int = 60  #: builds the trace's delta debugging may make, per finding
    #: small programs the finding's workload is shrunk to and judged (two builds each), per finding
    shrink_tries: int = 20
    cluster: str | None = None  #: a Dask scheduler's address: schedules built and run on its workers
    thresholds: Path | None = None  #: the thresholds file ([bound], [divergence]); None: the defaults
    jobs: int | None = None  #: worker children here; None: one per core


@dataclass
class Combination:
    workload: object
    dtype: str
    target: object
    expected: Expected = None
    before: np.ndarray | None = None
    before_twin: np.ndarray | None = None

    @property
    def label(self) -> str:
        return f"{self.workload.id} {self.dtype} {self.target.name}"


def timeout_of(options: Options, target) -> float:
    """The seconds one schedule of ``target`` may take to build and run (--trace-timeout)."""
    if options.timeout_s is not None:
        return options.timeout_s
    return EMULATED_TIMEOUT_S if target.mode is Mode.EMULATED else NATIVE_TIMEOUT_S


def check(options: Options) -> list[Combination]:
    """Every option checked before any work (one-line UserErrors); the combinations."""
    out = options.out
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory: give a directory for the campaign")
    cache.ensure_dir(out, "--out")  # made and writable (a link to nothing, a read-only disk: one line)
    # the lock is the campaign's (a campaign in use is said by the lock, naming its holder), and so
    # is the runs/ that held it before (runs/.lock alone)
    theirs = sorted(p.name for p in out.iterdir() if p.name != LOCK and not old_lock_dir(p))
    if theirs and not (out / OWN_MARK).exists():
        raise UserError(f"--out {out} holds files a fuzz did not make ({', '.join(theirs[:3])}"
                        f"{', ...' if len(theirs) > 3 else ''}): give a new or empty directory, or a campaign's own")
    check_own_files(out)
    for dtype in options.dtypes:
        workloads.check_dtype(dtype, workloads.MEASURED_DTYPES)
    found_targets = []
    for name in options.targets:
        target = targets.get(name)
        for dtype in options.dtypes:  # first: a dtype the target never runs, on any machine
            if reason := target.dtype_unavailable(dtype):
                raise UserError(f"--targets {name}: {reason}")
        reason = target.mode.value if target.mode is Mode.COMPILE_ONLY else target.unavailable()
        if reason:
            raise UserError(f"--targets {name}: nothing runs its code here ({reason})")
        try:  # the schedules are sampled from the space MetaSchedule tunes this target in
            target.tuning_target()
        except NotTunable as err:
            raise UserError(f"--targets {name}: fuzz samples MetaSchedule's design space of a target, and {err}") \
                from None
        found_targets.append(target)
    ids = select_workloads(options.workloads)
    return [Combination(workloads.get(w), d, t) for t in found_targets for d in options.dtypes for w in ids]

def _expected(combination: Combination) -> Expected:
    """The exact output: the float64 reference with its magnitude; in int8, the integer oracle's
    uint8 output, which a schedule's must equal (no magnitude: :func:`verdict.judge` judges it exactly)."""
    chain = combination.workload.chain
    inputs = workloads.make_inputs(combination.workload, combination.dtype)
    if combination.dtype in workloads.INTEGER_DTYPES:
        return Expected(quantized.evaluate(chain, inputs).output.astype(np.int64), None,
                        reference.accumulation_length(chain), "output", workloads.output_dtype(combination.dtype))
    return Expected(reference.evaluate(chain, inputs), reference.evaluate_magnitude(chain, inputs),
                    reference.accumulation_length(chain), "output", combination.dtype)

#: The worker's check that a schedule's output is a function of its inputs
#: (:func:`suite.triage.filled.undefined`), run on native targets: lines judged without it are judged again.
UNDEFINED_CHECK = "output filled with two patterns"


def judged_by(thresholds, target=None) -> str:
    """What a verdict depends on besides the schedule: the rounding bound's and the divergence
    rules' parameters, and on a native target the check for UNDEFINED. A journal line judged by
    others is judged again, not reused."""
    native = target is not None and target.mode is Mode.NATIVE
    what = (thresholds.bound, thresholds.divergence, ("element factor", verdict.ELEMENT_FACTOR)) + (
        (UNDEFINED_CHECK,) if native else ())
    return hashlib.sha256(repr(what).encode()).hexdigest()[:16]

@dataclass
class Campaign:
    options: Options
    log: object = print
    thresholds: object = None
    records: dict = field(default_factory=dict)
    judged_now: int = 0
    stopping: bool = False  #: set on an interruption: an answer that comes after it is not journaled
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> Summary:
        self.thresholds = self.thresholds or thresholds_file.load(self.options.thresholds)  # refused before any work
        combinations = check(self.options)
        out = self.options.out
        out.mkdir(parents=True, exist_ok=True)
        with CampaignLock(out, self.options.seed):
            check_own_files(out)  # again, under the lock: nothing is read or written through a link
            touch_own(out / OWN_MARK)
            journal = Journal(out / JOURNAL)
            self.records = journal.load()  # every line verified (one line naming a bad one, exit 2)
            resumed = sum(1 for line in self.records.values() if self._reusable(line))
            if resumed:
                self.log(f"continuing: {resumed} schedules already judged in {out / JOURNAL}")
            started = time.monotonic()
            deadline = started + self.options.minutes * 60
            raise_if_signalled()  # a Ctrl-C that landed where it was dropped: no worker is started
            local = pools.LocalPool(out / WORK_DIR, self.options.jobs)
            pool = local
            stopped = threads = None
            try:
                if self.options.cluster:
                    pool = pools.ClusterPool(self.options.cluster, local)
                self.log(f"building and running on {pool.where}")
                # One set of threads for the whole campaign: a worker child dies with the thread that
                # started it (Linux's parent-death signal is the thread's), so the threads outlive
                # every child they start
                threads = concurrent.futures.ThreadPoolExecutor(pool.size, thread_name_prefix="fuzz")
                for n, combination in enumerate(combinations):
                    stopped = self._combination(combination, n, len(combinations), pool, threads, journal, deadline)
                    if stopped:
                        break
            finally:
                self.stopping = True  # whatever answers now (a child ended below) is no verdict
                pool.close()
                if threads is not None:
                    threads.shutdown(wait=True, cancel_futures=True)
                shutil.rmtree(out / WORK_DIR, ignore_errors=True)
            # an interruption whose exception was dropped where it landed (suite.errors.on_signal)
            # ends the campaign all the same: 130, and no summary of a campaign that seems complete
            raise_if_signalled()
            summary = dataclasses.replace(
                self.summary(combinations, time.monotonic() - started, stopped), where=pool.where,
                thresholds={"source": self.thresholds.source, "lambda": self.thresholds.bound.lam,
                            "max_fraction": self.thresholds.bound.max_fraction})
            write_own(out / SUMMARY, json.dumps(summary.to_json(), indent=1, sort_keys=True))
        return summary

    def _reusable(self, line: JournalLine | None) -> bool:
        return (line is not None and line.seed == self.options.seed and line.target in targets.names()
                and line.judged_by == judged_by(self.thresholds, targets.get(line.target)))

    def summary(self, combinations: list[Combination], elapsed_s: float, stopped: str | None) -> Summary:
        mine = [line for line in self.records.values() if self._reusable(line)]
        return summarize(mine, combinations, elapsed_s, self.judged_now, stopped)

    # ------------------------------------------------------------------ one combination

    def _combination(self, combination: Combination, position: int, count: int, pool, threads, journal: Journal,
                     deadline: float) -> str | None:
        opts = self.options
        base = f"{combination.workload.id}|{combination.dtype}|{combination.target.name}|seed{opts.seed}"
        items = [("order", name, None) for name in schedules.ORDERS]
        items += [("trace", str(i), None) for i in range(opts.traces)]
        kinds = list(plant.KINDS)  # plant p goes to combination p mod count, of kind p mod the kinds
        items += [("plant", f"{kinds[p % len(kinds)]}#{p}", p) for p in range(opts.plant) if p % count == position]
        todo = [item for item in items if not self._reusable(self.records.get(f"{base}|{item[0]}:{item[1]}"))]
        if not todo:
            return None
        self.log(f"{combination.label}: {len(todo)} of {len(items)} schedules to judge")
        combination.expected = _expected(combination)
        # the PrimFunc made here, before any thread asks for it: Relax's BlockBuilder, which makes a
        # model's, is not thread-safe (a finding's thread and the design space made it at once)
        workloads.prim_func(combination.workload, combination.dtype)
        # the unscheduled function is the reference run, not a schedule under test: the timeout that
        # makes a slow schedule a finding does not apply to it
        timeout = timeout_of(opts, combination.target)
        # Ctrl-C is looked for at each phase's end (raise_if_signalled), besides where it lands: a
        # signal that lands in a callback which drops the exception (suite.errors.on_signal; once
        # during design-space generation) is only recorded
        raise_if_signalled()  # before the first worker child starts
        try:
            before = self._ask(pool, combination, {"order": "default"}, base, "before", max(timeout, BEFORE_TIMEOUT_S))
        except pools.Lost as err:
            self.log(f"{combination.label}: the unscheduled function was {err}; nothing of it is judged this time")
            return None
        if before.failure is not None:
            self.log(shown(f"{combination.label}: the unscheduled function does not build and run here "
                           f"({before.failure.message}); nothing of it is judged"))
            return None
        combination.before = _load(before.dir / "output.npy")
        if (before.dir / "twin.npy").exists():
            combination.before_twin = _load(before.dir / "twin.npy")
        shutil.rmtree(before.dir, ignore_errors=True)
        spaces = None
        # Sampled here, one ahead of the pool's places, while the pool builds and runs: each
        # schedule is journaled by the thread that judged it, as it completes.
        running: set = set()
        finishing = False
        try:
            for kind, name, plant_number in todo:
                raise_if_signalled()  # between schedules (and after the unscheduled function's run)
                if time.monotonic() > deadline:
                    finishing = True
                    return "time"
                schedule = Schedule(id=f"{base}|{kind}:{name}", seed=opts.seed,
                                    judged_by=judged_by(self.thresholds, combination.target),
                                    workload=combination.workload.id, dtype=combination.dtype,
                                    target=combination.target.name, kind=kind, name=name)
                if kind != "order":
                    if spaces is None and opts.traces:
                        made = time.perf_counter()
                        spaces = sampling.design_space(combination.workload, combination.dtype, combination.target)
                        raise_if_signalled()  # after design-space generation
                        offered = (f", tiled for {spaces.intrinsic} first ({spaces.reason})" if spaces.intrinsic
                                   else f" ({spaces.reason})" if spaces.reason else "")
                        self.log(f"{combination.label}: {len(spaces.traces)} design spaces in "
                                 f"{time.perf_counter() - made:.1f} s{offered}")
                    index = int(name) if kind == "trace" else (plant_number % opts.traces if opts.traces else None)
                    if index is not None:  # else a plant in the unscheduled function
                        trace, resampled = sampling.sample(combination.workload, combination.dtype,
                                                           combination.target, spaces, opts.seed, index)
                        raise_if_signalled()  # after sampling: before its schedule goes to a worker
                        schedule = dataclasses.replace(schedule, trace=trace, resampled=resampled, trace_index=index,
                                                       tensorized=sampling.tensorized(spaces, trace))
                    if kind == "plant":
                        schedule = dataclasses.replace(schedule, planted=name.split("#")[0], expected=plant.EXPECTED)
                running.add(threads.submit(self._one, pool, combination, journal, schedule))
                while len(running) > pool.size:
                    done, running = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                    for future in done:
                        future.result()
            finishing = True
        finally:
            # at the end or at --minutes, the schedules begun are finished and journaled; on an
            # interruption (or an error) they are dropped: those not begun never begin, the pool
            # starts no child again, and the children running are ended now (their threads are
            # told Stopping at once)
            if not finishing:
                self.stopping = True
                for future in running:
                    future.cancel()
                pool.close()
            for future in concurrent.futures.as_completed(running):
                if finishing:
                    future.result()
        return None

    def _one(self, pool, combination: Combination, journal: Journal, schedule: Schedule) -> None:
        """Judge one schedule and journal it (in a thread of the campaign)."""
        started = time.perf_counter()
        try:
            judged = self._judge(pool, combination, schedule.request(), schedule.id)
            planted = schedule.kind == "plant"
            if planted and judged.outcome is Outcome.NOT_APPLICABLE and schedule.trace is not None:
                shutil.rmtree(judged.dir, ignore_errors=True)
                # the sampled schedule has nothing of that kind: the unscheduled one may
                schedule = dataclasses.replace(schedule, trace=None, trace_index=None, planted_in="default")
                judged = self._judge(pool, combination, schedule.request(), schedule.id)
            if planted and judged.outcome.is_verdict and judged.outcome is not Outcome.UNDEFINED \
                    and self._no_effect(pool, combination, schedule, judged):
                judged = dataclasses.replace(judged, outcome=Outcome.NOT_APPLICABLE, message=NO_EFFECT, summary="",
                                             first_wrong=None)
            line = JournalLine.judged(schedule, judged, round(time.perf_counter() - started, 3))
            if not planted and line.outcome.is_finding and not self.stopping:
                line = dataclasses.replace(line, finding=self._keep_finding(pool, combination, line))
                findings.keep_log(judged.dir, self.options.out / line.finding.dir)
            shutil.rmtree(judged.dir, ignore_errors=True)
        except pools.Stopping:  # the campaign is stopping: not judged, the rerun judges it
            return
        except pools.Lost as err:  # not judged: the rerun judges it
            if not self.stopping:
                self.log(f"{combination.label} {schedule.kind} {schedule.name}: {err}; not judged, a rerun judges it")
            return
        with self._lock:
            if self.stopping:  # the child was ended under it: no verdict
                if line.finding is not None:  # kept whole as the campaign stopped: not left unjournaled
                    shutil.rmtree(self.options.out / line.finding.dir, ignore_errors=True)
                return
            self.records[line.id] = journal.append(line)
            self.judged_now += 1
        self.log(shown(f"{combination.label} {line.kind} {line.name}: {line.outcome}"
                       + (f" ({line.message})" if line.message else "")))

    def _no_effect(self, pool, combination: Combination, schedule: Schedule, judged: Judged) -> bool:
        """Whether a planted program's output is the unplanted program's, bit for bit: the edit
        landed where it changes nothing (a stride on an index that is always even, a loop whose
        last iteration writes what an earlier one did), so it measures nothing of the oracle."""
        planted = _load(judged.dir / "output.npy")
        if schedule.trace is None:
            return verdict.same_bits(planted, combination.before)
        unplanted = self._ask(pool, combination, {"trace": schedule.trace}, "", f"{schedule.id}|unplanted")
        try:
            return unplanted.failure is None and verdict.same_bits(planted, _load(unplanted.dir / "output.npy"))
        finally:
            shutil.rmtree(unplanted.dir, ignore_errors=True)

    def _ask(self, pool, combination: Combination, request: dict, base: str, name: str,
             timeout_s: float | None = None) -> Answer:
        """The worker's answer to ``request``, read (:meth:`Answer.parse`): the suite's own refusal
        there, not the schedule's, is a UserError."""
        where = self.options.out / WORK_DIR / "requests" / safe_name(f"{base}|{name}")
        answer = pool.ask({"workload": combination.workload.id, "dtype": combination.dtype,
                           "target": combination.target.name, "dir": str(where), **request},
                          timeout_s or timeout_of(self.options, combination.target))
        return Answer.parse(answer, where)

    def _judge(self, pool, combination: Combination, request: dict, name: str) -> Judged:
        """The outcome of one schedule: a verdict (with its summary and first wrong element), or
        why there is none (the worker's failure: BUILD_FAILED, RUN_FAILED, CRASH, TIMEOUT, SKIPPED,
        NOT_APPLICABLE)."""
        answer = self._ask(pool, combination, request, "", name)
        if answer.failure is not None:
            return Judged(answer.failure.outcome, answer.failure.message, answer.dir)
        after = _load(answer.dir / "output.npy")
        twin = answer.dir / "twin.npy"
        twin_after = _load(twin) if twin.exists() and combination.before_twin is not None else None
        judgement = verdict.judge(combination.expected, combination.before, after,
                                  combination.before_twin if twin_after is not None else None, twin_after,
                                  thresholds=self.thresholds, undefined=answer.undefined)
        return Judged(Outcome(judgement.kind), "", answer.dir, summary=judgement.summary,
                      first_wrong=judgement.first)

    # ------------------------------------------------------------------ findings

    def _keep_finding(self, pool, combination: Combination, line: JournalLine) -> Finding:
        """The finding of the judged schedule ``line`` (no plant): its directory (its place in the
        journal: relative to the out directory, which travels whole) with the trace, minimised
        trace (:func:`suite.fuzz.blame.minimise`), TVMScript before and after, the blame
        (``blame.json``: :func:`suite.fuzz.blame.attribute`) and report, and its key. Every attempt
        is built by the campaign's workers (its compiler, environment and hooks), each in a directory
        and to a kernel file of its own. Interrupted (the campaign stopping), the directory is
        removed: a finding is either journaled whole or not there, and the rerun judges it again."""
        own = f"{FINDINGS_DIR}/{safe_name(line.id)}"
        where = self.options.out / own
        make_own_dir(where)
        try:
            return self._finding_in(pool, combination, line, own, where)
        except BaseException:
            shutil.rmtree(where, ignore_errors=True)
            raise

    def _finding_in(self, pool, combination: Combination, line: JournalLine, own: str, where: Path) -> Finding:
        kept = line.request()
        attempts = itertools.count()

        def judge(extra: dict) -> tuple[Outcome, str]:  # each attempt in a directory of its own
            if self.stopping:
                raise pools.Stopping(pools.STOPPING)
            again = self._judge(pool, combination, {**kept, **extra}, f"{line.id}|attempt-{next(attempts)}")
            shutil.rmtree(again.dir, ignore_errors=True)
            return again.outcome, again.message

        func = workloads.prim_func(combination.workload, combination.dtype)
        write_own(where / "before.py", _script(func))
        argv = self._reproduce_argv(combination, where, line.trace is not None)
        minimised = reduced = printed = None
        if line.trace is not None:
            write_own(where / "trace.json", json.dumps(line.trace))
            check = findings.ReproducerCheck(line, argv, where, lambda: self.stopping)
            reduced = check.minimised(lambda trace: blame.same_failure(line.outcome, line.message,
                                                                       *judge({"trace": trace})),
                                      self.options.minimise_tries, blame.replayable(func))
            minimised = reduced.trace
            write_own(where / "minimised.json", json.dumps(minimised))
            printed = check.printed.get(repr(minimised))
            kept = {"trace": minimised}
        last = self._ask(pool, combination, {**kept, "passes": True}, "", f"{line.id}|finding")
        passes = None
        after, ran = last.dir / "after.py", last.dir / "passes.json"
        try:  # the worker's files, read as data: never through a link
            if after.exists() or after.is_symlink():
                write_own(where / "after.py", sandbox.read_back(after))
            if ran.exists() or ran.is_symlink():
                passes = json.loads(sandbox.read_back(ran))
        except (OSError, ValueError) as err:
            raise UserError(f"{last.dir}: not the files the campaign's worker writes ({err}); no finding of it") from None
        finally:
            shutil.rmtree(last.dir, ignore_errors=True)
        shrunk = self._shrunk(pool, combination, line, minimised, where) if minimised is not None else None
        blamed = None
        if line.outcome.is_wrong and isinstance(passes, list) and all(isinstance(p, str) for p in passes):
            # the pipeline bisected on the reproducer where there is one: interpreted in milliseconds
            small = kept if shrunk is None else {"chain": shrunk.shrunk.chain, "trace": shrunk.shrunk.trace}
            blamed = blame.attribute(line.outcome, minimised, passes, judge, compat.PASS_SWITCHES,
                                     lambda: self._bisected(pool, combination, small, line.id))
            write_own(where / "blame.json", json.dumps(
                {**blamed.to_json(), "original_instructions": len(line.trace[0]) if line.trace else None,
                 "minimised_instructions": reduced.instructions if reduced else None,
                 "minimising_builds": reduced.tries if reduced else 0,
                 "one_minimal": reduced.complete if reduced else None,
                 "reproduce_checks": check.runs if reduced else 0}, indent=1))
        key = findings.dedup_key(line.outcome, line.name, line.message, blamed)
        if printed is None and line.outcome.is_wrong:  # a crash or a hang would only crash or hang again
            printed = findings.printed_by(argv, where, lambda: self.stopping)
            if printed is None:
                raise pools.Stopping(pools.STOPPING)
        write_own(where / "report.md", findings.report(combination, line, key, findings.Reproduce(argv, printed))
                   + blame.report_words(line.outcome, reduced, blamed) + shrink.report_words(shrunk))
        return Finding(own, key)

    def _bisected(self, pool, combination: Combination, request: dict, name: str) -> bisection.Bisection:
        """The finding's schedule (``request``) lowered pass by pass by a worker, each program
        evaluated by the triage interpreter (:func:`suite.fuzz.bisection.bisect`)."""
        if self.stopping:
            raise pools.Stopping(pools.STOPPING)
        answer = self._ask(pool, combination, {**request, "bisect": True}, "", f"{name}|bisect", bisection.TIMEOUT_S)
        found = answer.dir / "bisection.json"
        try:
            if answer.failure is not None or not (found.exists() or found.is_symlink()):
                failure = answer.failure.message if answer.failure is not None else "it wrote none"
                on = "the finding's reproducer" if "chain" in request else "the finding's schedule"
                return bisection.Bisection(None, 0, 0, f"the worker bisected nothing: {failure}", "", [], on)
            return bisection.Bisection.from_json(json.loads(sandbox.read_back(found)))
        except (OSError, ValueError) as err:
            raise UserError(f"{found}: not the bisection the campaign's worker writes ({err}); "
                            "no finding of it") from None
        finally:
            shutil.rmtree(answer.dir, ignore_errors=True)

    def _shrunk(self, pool, combination: Combination, line: JournalLine, trace: list,
                where: Path) -> shrink.Reproducer | None:
        """The finding's program made small (:func:`suite.fuzz.shrink.shrink`), each smaller one
        built and judged as the campaign judges (its before program and the scheduled one by the
        campaign's workers, triage's verdict against the small chain's reference), kept in
        ``where`` as ``reproducer_before.py`` and ``reproducer_after.py`` with ``reproducer.json``;
        for a wrong result, the triage command on the two files run once (on triage's own inputs,
        else on the small workload's, kept in ``reproducer_inputs/``). None for a crash or a hang
        (their report has the worker's log, and a hang would wait out the timeout at each size)."""
        if not line.outcome.is_wrong:
            return None
        attempts, builds = itertools.count(), [0]
        timeout = timeout_of(self.options, combination.target)

        def small(chain: dict) -> Combination:
            made = Combination(shrink.workload(combination.workload, chain), combination.dtype, combination.target)
            made.expected = _expected(made)
            return made

        def judge(chain: dict, candidate: list) -> tuple[Outcome, str]:
            if self.stopping:
                raise pools.Stopping(pools.STOPPING)
            name, made = f"{line.id}|shrink-{next(attempts)}", small(chain)
            before = self._ask(pool, made, {"order": "default", "chain": chain}, "", f"{name}-before",
                               max(timeout, BEFORE_TIMEOUT_S))
            builds[0] += 1
            try:
                if before.failure is not None:  # no before program of this size: none to judge against
                    return before.failure.outcome, before.failure.message
                made.before = _load(before.dir / "output.npy")
                if (before.dir / "twin.npy").exists():
                    made.before_twin = _load(before.dir / "twin.npy")
            finally:
                shutil.rmtree(before.dir, ignore_errors=True)
            again = self._judge(pool, made, {"trace": candidate, "chain": chain}, name)
            builds[0] += 1
            shutil.rmtree(again.dir, ignore_errors=True)
            return again.outcome, again.message

        found = shrink.shrink(combination.workload, combination.dtype, trace, line.outcome, line.message, judge,
                              self.options.shrink_tries)
        started = time.monotonic()
        # the program less what only MetaSchedule reads is another program: kept only where the
        # report's own command judges it failing as the finding did
        lean = shrink.bare(found.after)
        candidates = [dataclasses.replace(found, after=lean, kept=[*found.kept, shrink.BARE])] if lean else []
        for candidate in [*candidates, found]:
            argv, printed = self._reproducer_printed(combination, candidate, where)
            word = printed.split(" ")[0]
            if candidate is found or (word in {o.value for o in Outcome if o.is_wrong}
                                      and shrink.keeps(line.outcome, line.message, Outcome(word), "")):
                found = candidate
                break
        reproducer = shrink.Reproducer(found, builds[0], findings.Reproduce(argv, printed).command, printed,
                                       time.monotonic() - started)
        write_own(where / "reproducer.json", json.dumps(reproducer.to_json(), indent=1))
        return reproducer

    def _reproducer_printed(self, combination: Combination, found: shrink.Shrunk, where: Path) -> tuple[list, str]:
        """``found`` written in ``where`` (``reproducer_before.py``, ``reproducer_after.py``) and
        the triage command on the two files run once: its argv and what it printed. On triage's
        own inputs, else (they do not show a wrong result) on the small workload's, kept in
        ``reproducer_inputs/``."""
        shutil.rmtree(where / "reproducer_inputs", ignore_errors=True)  # an earlier candidate's
        write_own(where / "reproducer_before.py", found.before)
        write_own(where / "reproducer_after.py", found.after)
        argv = ["triage", "reproducer_before.py", "reproducer_after.py", "--target", combination.target.name]
        if self.options.thresholds is not None:
            argv += ["--thresholds", str(self.options.thresholds.absolute())]
        printed = findings.printed_by(argv, where, lambda: self.stopping)
        if printed is not None and printed.split(" ")[0] not in {o.value for o in Outcome if o.is_wrong}:
            made = shrink.workload(combination.workload, found.chain)  # triage's own inputs do not show it
            func = shrink.prim_func(made, combination.dtype)
            make_own_dir(where / "reproducer_inputs")
            given = []
            for name, array in zip(compat.param_names(func), workloads.make_inputs(made, combination.dtype)):
                data = io.BytesIO()  # bfloat16 as float32, as the finding's own inputs/ are kept
                np.save(data, array.astype(np.float32) if array.dtype == floats.bfloat16_type() else array,
                        allow_pickle=False)
                write_own(where / "reproducer_inputs" / f"{safe_name(name)}.npy", data.getvalue())
                given.append(f"{name}=reproducer_inputs/{safe_name(name)}.npy")
            argv += ["--inputs", ",".join(given)]
            printed = findings.printed_by(argv, where, lambda: self.stopping)
        if printed is None:
            raise pools.Stopping(pools.STOPPING)
        return argv, printed

    def _reproduce_argv(self, combination: Combination, where: Path, has_trace: bool) -> list[str]:
        """The triage command (after ``tvm-suite``) that reproduces the finding in ``where``: its
        before program and minimised trace or after program, on the workload's inputs (written
        to ``where/inputs`` here), under the campaign's thresholds."""
        inputs = []
        names = compat.param_names(workloads.prim_func(combination.workload, combination.dtype))
        arrays = workloads.make_inputs(combination.workload, combination.dtype)
        make_own_dir(where / "inputs")
        for name, array in zip(names, arrays):
            data = io.BytesIO()  # bfloat16 as float32 (the same values): np.save keeps it as raw records
            np.save(data, array.astype(np.float32) if array.dtype == floats.bfloat16_type() else array,
                    allow_pickle=False)
            write_own(where / "inputs" / f"{safe_name(name)}.npy", data.getvalue())
            inputs.append(f"{name}=inputs/{safe_name(name)}.npy")
        after = ["--trace", "minimised.json"] if has_trace else ["after.py"]
        argv = ["triage", "before.py", *after, "--target", combination.target.name, "--inputs", ",".join(inputs)]
        if self.options.thresholds is not None:
            argv += ["--thresholds", str(self.options.thresholds.absolute())]
        return argv

def _script(func) -> str:
    from suite.triage import tvmscript

    return tvmscript.script(func, "main")

def _load(path: Path) -> np.ndarray:
    """An output a worker (confined) left in its request's directory: read as data, never through a
    link, never a pickle. One that is none is refused in one line: the worker is the suite's own, and
    what it left is no verdict."""
    try:
        # np.save keeps a bfloat16 output as raw two-byte records: viewed as bfloat16 again
        return floats.as_saved(np.load(io.BytesIO(sandbox.read_back(path)), allow_pickle=False), floats.BFLOAT16)
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: not an array the campaign's worker writes ({err}); no verdict on it") from None
