"""A campaign's finding kept (:class:`FindingKeeper`, the part of :class:`suite.fuzz.campaign.Campaign`
that keeps one): its directory with the trace, minimised trace (:mod:`suite.fuzz.blame`), TVMScript
before and after, blame (the lowering pipeline bisected: :mod:`suite.fuzz.bisection`), the program
made small (:mod:`suite.fuzz.shrink`) and its reproducer, the triage command that reproduces it and
what that command printed, and the report (:mod:`suite.fuzz.findings`). Every attempt is built and
judged by the campaign's workers, through the campaign's ``_ask`` and ``_judge``."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import shutil
import time
from pathlib import Path

import numpy as np

from suite import floats, sandbox
from suite.compat import build
from suite.core import workloads
from suite.errors import UserError
from suite.fuzz import bisection, blame, findings, shrink
from suite.fuzz import pool as pools
from suite.fuzz.combinations import (
    BEFORE_TIMEOUT_S,
    Combination,
    expected_output,
    load_output,
    timeout_of,
)
from suite.fuzz.directory import FINDINGS_DIR, make_own_dir, safe_name, write_own
from suite.fuzz.journal import Finding, JournalLine
from suite.fuzz.outcome import Outcome


class FindingKeeper:

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
            blamed = blame.attribute(line.outcome, minimised, passes, judge, build.PASS_SWITCHES,
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
            made.expected = expected_output(made)
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
                made.before = load_output(before.dir / "output.npy")
                if (before.dir / "twin.npy").exists():
                    made.before_twin = load_output(before.dir / "twin.npy")
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
            for name, array in zip(build.param_names(func), workloads.make_inputs(made, combination.dtype)):
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
        names = build.param_names(workloads.prim_func(combination.workload, combination.dtype))
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
