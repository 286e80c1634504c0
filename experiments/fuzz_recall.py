"""Recall of `tvm-suite fuzz` on bugs of TVM's own lowering that it was not built for (issue 63).

    python experiments/fuzz_recall.py --out DIR [--bugs B,..] [--traces 5] [--seed 0]
        [--workloads W,..] [--dtypes float32,float16] [--minutes 60] [--json]

One `tvm-suite fuzz` campaign (llvm, a process of its own, as a user runs it) on a clean compiler,
then one under each lowering bug of `compiler_changes.LOWERING_BUGS`, planted in TVM's pass by the
experiment-only hook (`compiler_changes.lowering_bug_env`: every Python process of the campaign,
its sandboxed worker children included, builds with it). The same seed samples the same traces in
every campaign. For each bug it prints:

- affected: the schedules (sampled traces and named orders that the clean campaign judged) whose
  output under the bug differs from the clean compiler's, bit for bit: each built and run again by
  a worker child of the campaign's kind, clean and with the bug;
- flagged: the affected schedules the bug's campaign judged a finding (CHANGED, UNDEFINED,
  SHIFTED, CRASH, TIMEOUT), by verdict; missed: the others, by what they were called;
- reproduced: of the findings with a minimised trace, those whose report's own reproduce command
  (`tvm-suite triage before.py --trace minimised.json ...`), run in a fresh copy of the finding's
  directory with the bug still active, gives the finding's verdict again, and those it gives a
  wrong result at all (CHANGED, UNDEFINED or SHIFTED). Triage runs the after program on filled
  output arrays as the campaign's worker does, and the campaign keeps a minimised trace only where
  that command, run so, gave the verdict: this measures whether that holds in a fresh copy;
- reproducer lines: the median of the findings' small programs (``reproducer.json``: the scheduled
  program of the workload shrunk while it still fails, ``suite.fuzz.shrink``), in lines of
  TVMScript, with how many of them the campaign's triage command on the two files judged wrong;
- blamed: of the findings the campaign attributed (their ``blame.json``), those that name the pass
  the bug lives in.

And the clean compiler's flags (findings on schedules no bug touched: the oracle's false alarms).
Results go to ``OUT/fuzz_recall.json`` (written whole, then renamed into place); each campaign's
directory is ``OUT/campaigns/<name>``, so a rerun with the same options continues their journals.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # compiler_changes beside this script

from suite import cache, outputs
from suite.commands.common_args import names, path, positive_number, whole_number
from suite.commands.fuzz import MAX_MINUTES
from suite.errors import UserError

#: Who wrote a fuzz_recall.json (its mark: a rerun replaces only its own).
WRITER = "experiments/fuzz_recall.py"
RESULT = "fuzz_recall.json"
WORKLOADS = ["seed", "resnet50.matmul_add.2048-1000", "resnet50.conv2d_add_relu.56x56x64-k3s1-64"]
FINDINGS = ("CHANGED", "UNDEFINED", "SHIFTED", "CRASH", "TIMEOUT")
WRONG = ("CHANGED", "UNDEFINED", "SHIFTED")
#: A campaign's exit statuses that are a result (nothing found, CHANGED, UNDEFINED, crash or hang, SHIFTED).
CAMPAIGN_DONE = (0, 12, 13, 14, 15)
CLEAN = "clean"


def _checked_bugs(value: str) -> list[str]:
    import compiler_changes

    found = names(value)
    unknown = [n for n in found if n not in compiler_changes.LOWERING_BUGS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown lowering bug {unknown[0]!r}: the bugs are "
                                         f"{', '.join(compiler_changes.LOWERING_BUGS)}")
    return found


def _checked_workloads(value: str) -> list[str]:
    from suite.core import workloads

    found = names(value)
    for name in found:
        try:
            workloads.get(name)
        except (UserError, KeyError, ValueError) as err:
            raise argparse.ArgumentTypeError(str(err).splitlines()[0]) from None
    return found


def _checked_dtypes(value: str) -> list[str]:
    found = names(value)
    bad = [d for d in found if d not in ("float32", "float16")]
    if bad:
        raise argparse.ArgumentTypeError(f"{bad[0]!r}: the dtypes are float32 and float16")
    return found


@dataclass
class Campaign:
    """One `tvm-suite fuzz` campaign's result, as its summary and journal say."""

    name: str
    exit_status: int
    seconds: float  #: the campaign's wall time, this run (a continued one: only what was left)
    judged: int
    outcomes: dict  #: outcome -> schedules (sampled traces and named orders)
    load_before: list


@dataclass
class BugResult:
    bug: str
    words: str
    guilty_pass: str  #: the registered name of the TVM pass the bug lives in
    campaign: Campaign
    compared: int  #: schedules built clean and with the bug: those both campaigns judged
    affected: int
    affected_ids: list
    not_built: int  #: of the affected, those that did not build or run under the bug
    flagged: dict = field(default_factory=dict)  #: verdict -> affected schedules flagged
    missed: dict = field(default_factory=dict)  #: what the affected schedules not flagged were called
    flagged_unaffected: int = 0  #: findings on schedules whose output the bug did not change
    findings: int = 0  #: finding directories (one per flagged schedule)
    minimised: int = 0  #: of them, those with a minimised trace
    reproduced: int = 0  #: of those, replayed in a fresh directory with the bug active: the same verdict
    #: of those, replayed so: a wrong result all the same (CHANGED, UNDEFINED or SHIFTED)
    reproduced_wrong: int = 0
    replay_verdicts: dict = field(default_factory=dict)
    replay_seconds: list = field(default_factory=list)
    kept_fraction_median: float | None = None  #: the minimised trace's instructions over the original's
    reproducers: int = 0  #: findings with a small program (reproducer.json)
    reproducers_wrong: int = 0  #: of them, those the triage command on the two files judged wrong
    reproducer_lines_median: float | None = None  #: its scheduled program's lines of TVMScript
    reproducer_builds: list = field(default_factory=list)  #: builds each took
    reproducer_seconds: list = field(default_factory=list)  #: seconds each took
    blamed: int = 0  #: findings with a blame.json
    blamed_right: int = 0  #: of them, naming ``guilty_pass``
    blamed_passes: dict = field(default_factory=dict)

    @property
    def flagged_total(self) -> int:
        return sum(self.flagged.values())


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _fuzz(out: Path, name: str, env: dict, args) -> Campaign:
    """The campaign ``name`` under ``env`` (the bug's hook, or none), into ``out/campaigns/name``."""
    where = out / "campaigns" / name
    command = [sys.executable, "-m", "suite.cli", "fuzz", "--targets", "llvm", "--workloads", ",".join(args.workloads),
               "--dtypes", ",".join(args.dtypes), "--traces", str(args.traces), "--seed", str(args.seed),
               "--minutes", str(args.minutes), "--out", str(where), "--json"]
    load = list(os.getloadavg())
    started = time.monotonic()
    log = out / "campaigns" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as err:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=err, env=env, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in CAMPAIGN_DONE:
        raise UserError(f"the {name} campaign exited {done.returncode}: see {log}")
    summary = json.loads(done.stdout)
    lines = _journal(where)
    outcomes = {}
    for line in lines.values():
        if line.kind in ("order", "trace"):
            outcomes[str(line.outcome)] = outcomes.get(str(line.outcome), 0) + 1
    return Campaign(name, done.returncode, round(seconds, 1), summary.get("judged_this_run", 0), outcomes, load)


def _journal(where: Path) -> dict:
    from suite.fuzz.directory import JOURNAL
    from suite.fuzz.journal import Journal

    return Journal(where / JOURNAL).load()


def _request(line, where: Path) -> dict:
    found = {"workload": line.workload, "dtype": line.dtype, "target": line.target, "dir": str(where)}
    return {**found, "order": line.name} if line.kind == "order" else {**found, "trace": line.trace}


def _outputs(lines: list, env: dict, scratch: Path) -> dict:
    """Each schedule's output (None where it did not build or run), built and run by one worker
    child under ``env``, as the campaign's workers build and run them."""
    from suite import sandbox
    from suite.fuzz.outcome import Answer
    from suite.fuzz.worker import Worker

    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    worker = Worker(scratch / "work", env=env, scratch=scratch, confined=sandbox.unavailable() is None)
    found = {}
    try:
        for n, line in enumerate(lines):
            where = scratch / f"r{n}"
            answer = Answer.parse(worker.ask(_request(line, where), 600), where)
            found[line.id] = None if answer.failure is not None else np.load(where / "output.npy", allow_pickle=False)
            shutil.rmtree(where, ignore_errors=True)
    finally:
        worker.close(for_good=True)
    return found


def _same_bits(a, b) -> bool:
    return a is not None and b is not None and a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _reproduce_command(report: str) -> list[str] | None:
    """The report's reproduce command (the first line of its ``sh`` block), as argv."""
    m = re.search(r"```sh\n(tvm-suite [^\n]+)\n", report)
    return shlex.split(m.group(1)) if m else None


def _replay(finding: Path, outcome: str, env: dict, fresh: Path) -> tuple[str, float]:
    """The verdict the finding's own reproduce command gives in ``fresh`` (a copy of the finding's
    directory, as a user would get it) with the bug active, and its seconds."""
    command = _reproduce_command((finding / "report.md").read_text())
    if command is None:
        return "no reproduce command", 0.0
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(finding, fresh, symlinks=True)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "suite.cli", *command[1:], "--json"], cwd=fresh, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    try:
        return json.loads(done.stdout)["verdict"], seconds
    except (ValueError, KeyError):
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"no verdict ({tail[:120]})", seconds


def _trace_length(path: Path) -> int | None:
    found = cache.read_json(path)
    return len(found[0]) if isinstance(found, list) and found else None


def judge_bug(out: Path, bug, campaign: Campaign, clean_lines: list, clean: dict, env: dict) -> BugResult:
    """What the bug's campaign found of what the bug did: affected, flagged, missed, reproduced, blamed."""
    guilty = f"{bug.namespace.split('.')[0]}.{bug.factory}"
    where = out / "campaigns" / bug.name
    lines = _journal(where)
    # those its campaign judged (a campaign stopped by --minutes judges fewer)
    compared = [line for line in clean_lines if line.id in lines]
    mine = _outputs(compared, env, out / "work" / bug.name)
    affected = [line.id for line in compared if not _same_bits(clean[line.id], mine[line.id])]
    result = BugResult(bug.name, bug.words, guilty, campaign, len(compared), len(affected), affected,
                       sum(1 for i in affected if mine[i] is None))
    fractions, reproducer_lines = [], []
    for line in lines.values():
        if line.kind not in ("order", "trace"):
            continue
        outcome = str(line.outcome)
        flagged = outcome in FINDINGS
        if line.id in affected:
            tally = result.flagged if flagged else result.missed
            tally[outcome] = tally.get(outcome, 0) + 1
        elif flagged:
            result.flagged_unaffected += 1
        if line.finding is None:
            continue
        result.findings += 1
        finding = where / line.finding.dir
        blame = cache.read_json(finding / "blame.json")
        if isinstance(blame, dict):
            result.blamed += 1
            named = blame.get("guilty_pass") or "none"
            result.blamed_passes[named] = result.blamed_passes.get(named, 0) + 1
            result.blamed_right += named == guilty
        small = cache.read_json(finding / "reproducer.json")
        if isinstance(small, dict):
            result.reproducers += 1
            result.reproducers_wrong += str(small.get("printed")).split(" ")[0] in WRONG
            reproducer_lines.append(small["lines"])
            result.reproducer_builds.append(small["builds"])
            result.reproducer_seconds.append(small["seconds"])
        if not (finding / "minimised.json").exists():
            continue
        result.minimised += 1
        original, kept = _trace_length(finding / "trace.json"), _trace_length(finding / "minimised.json")
        if original and kept is not None:
            fractions.append(kept / original)
        verdict, seconds = _replay(finding, outcome, env, out / "replays" / bug.name / f"{result.minimised}")
        result.replay_verdicts[verdict] = result.replay_verdicts.get(verdict, 0) + 1
        result.replay_seconds.append(round(seconds, 1))
        result.reproduced += verdict == outcome
        result.reproduced_wrong += verdict in WRONG
    result.kept_fraction_median = round(statistics.median(fractions), 3) if fractions else None
    result.reproducer_lines_median = statistics.median(reproducer_lines) if reproducer_lines else None
    return result


def _env(bug, out: Path) -> dict:
    """The environment of every process of ``bug``'s runs (None: the clean compiler's)."""
    import compiler_changes

    env = {k: v for k, v in os.environ.items() if k != compiler_changes.BUG_ENV}
    if bug is not None:
        env.update(compiler_changes.lowering_bug_env(bug.name, out / "hooks" / bug.name))
    return env


def measure(args) -> dict:
    import compiler_changes

    out = args.out
    bugs = [compiler_changes.LOWERING_BUGS[n] for n in args.bugs]
    started, load = time.monotonic(), list(os.getloadavg())
    say(f"fuzz_recall: the {CLEAN} campaign ({', '.join(args.workloads)}; {', '.join(args.dtypes)}; "
        f"{args.traces} traces each)")
    clean_campaign = _fuzz(out, CLEAN, _env(None, out), args)
    clean_journal = _journal(out / "campaigns" / CLEAN)
    clean_lines = [line for line in clean_journal.values()
                   if line.kind in ("order", "trace") and line.outcome.is_verdict]
    campaigns = {}
    for bug in bugs:
        say(f"fuzz_recall: the campaign under {bug.name} ({bug.words})")
        campaigns[bug.name] = _fuzz(out, bug.name, _env(bug, out), args)
    # the schedules some bug's campaign judged too (one stopped by --minutes judges fewer)
    judged, clean_judged = set().union(*(_journal(out / "campaigns" / bug.name) for bug in bugs)), len(clean_lines)
    clean_lines = [line for line in clean_lines if line.id in judged]
    say(f"fuzz_recall: {len(clean_lines)} schedules built and run again, clean and under each bug")
    clean = _outputs(clean_lines, _env(None, out), out / "work" / CLEAN)
    with concurrent.futures.ThreadPoolExecutor(2) as threads:  # two worker children at a time (LLVM: one core each)
        results = list(threads.map(lambda bug: judge_bug(out, bug, campaigns[bug.name], clean_lines, clean,
                                                         _env(bug, out)), bugs))
    shutil.rmtree(out / "work", ignore_errors=True)
    clean_flags = sum(n for outcome, n in clean_campaign.outcomes.items() if outcome in FINDINGS)
    return {"options": {"bugs": args.bugs, "traces": args.traces, "seed": args.seed, "workloads": args.workloads,
                        "dtypes": args.dtypes, "target": "llvm"},
            "clean": {**asdict(clean_campaign), "flagged": clean_flags, "judged_schedules": clean_judged},
            "bugs": [{**asdict(r), "flagged_total": r.flagged_total,
                      "seconds_per_finding": round(r.campaign.seconds / r.findings, 1) if r.findings else None}
                     for r in results],
            "machine": {"cores": os.cpu_count(), "load_start": load, "load_end": list(os.getloadavg()),
                        "seconds": round(time.monotonic() - started, 1)}}


def table(found: dict) -> str:
    clean = found["clean"]
    lines = [(f"clean compiler: {clean['flagged']} flagged of {clean['judged_schedules']} schedules judged "
              f"({clean['seconds']:.0f} s)"), "",
             ("| bug | affected | flagged (by verdict) | missed | reproduced: same verdict, wrong at all | median kept | "
              "reproducer lines (judged wrong) | blamed on its pass | s per finding |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for r in found["bugs"]:
        by = ", ".join(f"{k} {v}" for k, v in sorted(r["flagged"].items())) or "-"
        missed = ", ".join(f"{k} {v}" for k, v in sorted(r["missed"].items())) or "0"
        blamed = f"{r['blamed_right']} of {r['blamed']} ({r['guilty_pass']})" if r["blamed"] else "no blame.json"
        lines.append(f"| {r['bug']} | {r['affected']} of {r['compared']} | {r['flagged_total']} ({by}) | {missed} | "
                     f"{r['reproduced']}, {r['reproduced_wrong']} of {r['minimised']} | "
                     f"{_percent(r['kept_fraction_median'])} | {_lines(r)} | {blamed} | "
                     f"{r['seconds_per_finding'] or '-'} |")
    return "\n".join(lines)


def _lines(r: dict) -> str:
    if r["reproducer_lines_median"] is None:
        return "-"
    return f"{r['reproducer_lines_median']:g} ({r['reproducers_wrong']} of {r['reproducers']})"


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{fraction:.0%}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=path, required=True, help="a directory for the campaigns and fuzz_recall.json")
    p.add_argument("--bugs", type=_checked_bugs, default=None,
                   help="comma-separated lowering bugs of compiler_changes.LOWERING_BUGS (default: all)")
    p.add_argument("--traces", type=whole_number(1, 1000), default=5, help="sampled traces per combination")
    p.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0)
    p.add_argument("--workloads", type=_checked_workloads, default=WORKLOADS, help="comma-separated workload ids")
    p.add_argument("--dtypes", type=_checked_dtypes, default=["float32", "float16"])
    p.add_argument("--minutes", type=positive_number(MAX_MINUTES, "minutes"), default=60.0,
                   help="each campaign's --minutes")
    p.add_argument("--json", action="store_true", help="print fuzz_recall.json's content alone on stdout")
    args = p.parse_args(argv)
    if args.bugs is None:
        import compiler_changes

        args.bugs = list(compiler_changes.LOWERING_BUGS)
    name = Path(sys.argv[0]).name
    try:  # before any campaign: apart from every history, and no fuzz_recall.json but its own
        outputs.check_dir(args.out, "--out", WRITER, RESULT)
        cache.ensure_dir(args.out, "--out")
        found = measure(args)
        cache.write_json(args.out / RESULT, outputs.marked(found, WRITER))
    except UserError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(found, indent=1, sort_keys=True))
    else:
        print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
