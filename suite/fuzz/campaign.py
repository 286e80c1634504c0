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
import json
import shutil
import threading
import time
from dataclasses import dataclass, field

from suite import targets
from suite.core import schedules, workloads
from suite.errors import raise_if_signalled
from suite.fuzz import findings, plant, sampling
from suite.fuzz import pool as pools
from suite.fuzz.combinations import (
    BEFORE_TIMEOUT_S,
    Combination,
    Options,
    check,
    expected_output,
    judged_by,
    load_output,
    timeout_of,
)
from suite.fuzz.directory import (
    JOURNAL,
    OWN_MARK,
    SUMMARY,
    WORK_DIR,
    CampaignLock,
    check_own_files,
    safe_name,
    shown,
    touch_own,
    write_own,
)
from suite.fuzz.finding_keeper import FindingKeeper
from suite.fuzz.journal import Journal, JournalLine, Judged, Schedule
from suite.fuzz.outcome import Answer, Outcome
from suite.fuzz.summary import NO_EFFECT, Summary, summarize
from suite.reporting import thresholds as thresholds_file
from suite.triage import verdict


@dataclass
class Campaign(FindingKeeper):
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
        combination.expected = expected_output(combination)
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
        combination.before = load_output(before.dir / "output.npy")
        if (before.dir / "twin.npy").exists():
            combination.before_twin = load_output(before.dir / "twin.npy")
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
        planted = load_output(judged.dir / "output.npy")
        if schedule.trace is None:
            return verdict.same_bits(planted, combination.before)
        unplanted = self._ask(pool, combination, {"trace": schedule.trace}, "", f"{schedule.id}|unplanted")
        try:
            return unplanted.failure is None and verdict.same_bits(planted, load_output(unplanted.dir / "output.npy"))
        finally:
            shutil.rmtree(unplanted.dir, ignore_errors=True)

    def _ask(self, pool, combination: Combination, request: dict, base: str, name: str,
             timeout_s: float | None = None) -> Answer:
        """The worker's answer to ``request``, read (:meth:`Answer.parse`): the suite's own refusal
        there, not the schedule's, is a UserError."""
        # every request of a finding's minimisation, shrinking and blame too: a Ctrl-C dropped where
        # it landed (suite.errors.on_signal) ends the campaign at the next one, not after the finding
        raise_if_signalled()
        where = self.options.out / WORK_DIR / "requests" / safe_name(f"{base}|{name}")
        answer = pool.ask({"workload": combination.workload.id, "dtype": combination.dtype,
                           "target": combination.target.name, "dir": str(where), **request},
                          timeout_s or timeout_of(self.options, combination.target))
        raise_if_signalled()
        return Answer.parse(answer, where)

    def _judge(self, pool, combination: Combination, request: dict, name: str) -> Judged:
        """The outcome of one schedule: a verdict (with its summary and first wrong element), or
        why there is none (the worker's failure: BUILD_FAILED, RUN_FAILED, CRASH, TIMEOUT, SKIPPED,
        NOT_APPLICABLE)."""
        answer = self._ask(pool, combination, request, "", name)
        if answer.failure is not None:
            return Judged(answer.failure.outcome, answer.failure.message, answer.dir)
        after = load_output(answer.dir / "output.npy")
        twin = answer.dir / "twin.npy"
        twin_after = load_output(twin) if twin.exists() and combination.before_twin is not None else None
        judgement = verdict.judge(combination.expected, combination.before, after,
                                  combination.before_twin if twin_after is not None else None, twin_after,
                                  thresholds=self.thresholds, undefined=answer.undefined)
        return Judged(Outcome(judgement.kind), "", answer.dir, summary=judgement.summary,
                      first_wrong=judgement.first)
