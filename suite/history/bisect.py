"""`tvm-suite bisect`: the first commit in ``A..B`` where one metric of one combination worsens.

asv's own ``asv find`` does the search (it builds about log2(N) commits), over the same virtualenv
and install command as `tvm-suite history`. ``asv find`` takes the worst value over every
parameter combination of a benchmark and always names some commit, so the grid is narrowed to the
one combination asked for (``TVM_SUITE_*``), and the answer is checked: the value at the named
commit against the one before it, the gate's noise model for latency (timing samples, ratio of
medians and Mann-Whitney U), any change in the worse direction for the other metrics, which do not
vary between runs of one TVM build. When nothing worsened, it says so.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

from suite import cache, git, targets, tracked
from suite.core import run_bundle, run_journal, run_place
from suite.core.combo import Grid
from suite.errors import ExitCode, UserError
from suite.asv_plumbing import driver, releases
from suite.history import commits as history
from suite.reporting import results as res
from suite.reporting import rules, thresholds as limits

_FOUND = re.compile(r"Greatest (regression|improvement) found: ([0-9a-f]{7,40})")
_TESTED = re.compile(r"For \S+ commit ([0-9a-f]{7,40})")


@dataclass
class Answer:
    culprit: str | None  #: first commit where the value worsened, None when nothing did
    before: str | None  #: the commit before it in the range
    value_before: float | None
    value_after: float | None
    why: str
    tested: list[str]  #: commits asv find built and measured, in order
    measured_nothing: bool = False  #: no commit has a value: not a verdict
    undecided: bool = False  #: the named commit cannot be judged (no value there, none before it): not a verdict


def run_bisect(tvm_repo: Path, range_spec: str, ids, metric_name: str, out_dir: Path,
               env_dir: Path | None = None, thresholds: limits.Thresholds | None = None,
               git_mirrors: str | None = None) -> driver.RunSummary:
    metric = tracked.get_or_fail(metric_name)
    if metric.worse is None:
        raise UserError(f"metric {metric_name} has no worse direction: nothing to bisect")
    if not metric.in_asv:  # asv find searches asv's benchmarks, which are lower-is-better
        raise UserError(f"metric {metric_name} is higher-is-better, and asv records only lower-is-better "
                        f"metrics; bisect {'latency' if metric_name == 'gflops' else 'packets'} instead")
    if reason := targets.get(ids[2]).unavailable():  # every commit would skip it: no verdict
        raise UserError(f"cannot bisect on {ids[2]} here: {reason}")
    thresholds = thresholds or limits.load()  # once, and a bad thresholds file refused before any build
    repo = releases.check_repo(tvm_repo)
    hashes = releases.resolve_range(repo, range_spec)
    start = releases.commit_of(repo, range_spec.split("..")[0])
    found = []
    for commit in [start, *hashes]:
        rel = releases.release_for_commit(repo, commit)
        found.append(history.HistoryCommit(rel.version if rel else commit[:10], commit, rel.version if rel else None))
    grid = Grid.of(*[[name] for name in ids])
    cache.ensure_dir(out_dir, "--out")
    with run_journal.RunLock(out_dir, f"{start[:12]}..{hashes[-1][:12]}", "tvm-suite bisect"):
        return _bisect(repo, range_spec, ids, metric, out_dir, env_dir, thresholds, git_mirrors, start, hashes,
                       found, grid)


def _bisect(repo, range_spec, ids, metric, out_dir, env_dir, thresholds, git_mirrors, start, hashes, found,
            grid) -> driver.RunSummary:
    print(f"bisecting {metric.name} of {' '.join(ids)} over {len(hashes)} commits after {start[:10]} "
          f"(asv find builds about {math.ceil(math.log2(len(hashes) + 1))} + 2)", flush=True)
    t0 = time.perf_counter()
    ready = history.prepare(repo, found, grid, out_dir, env_dir, git_mirrors=git_mirrors)
    offset = ready.log.stat().st_size
    args = ["find", f"{start}^..{hashes[-1]}" if _has_parent(repo, start) else f"{start}..{hashes[-1]}",
            f"^{re.escape(metric.benchmark)}\\(", *ready.machine_args, "--show-stderr"]  # parameterized: name(params)
    status = driver.asv(ready.config, *args, log=ready.log, phase="asv find", context=ready.context)
    text = ready.log.read_text(errors="replace")[offset:]
    tested = list(dict.fromkeys(git.git(repo, "rev-parse", h) for h in _TESTED.findall(text)))
    named = _FOUND.search(text)
    if status != 0 or named is None:
        raise driver.ToolFailed(f"asv find failed (exit {status}); see {ready.log}")
    culprit = git.git(repo, "rev-parse", named.group(2))
    ordered = [start, *hashes]
    # asv find names the later of two commits without measuring either (it needs three to compare):
    # measure the named commit and the one before it, as the verdict needs both.
    pair = ordered[max(ordered.index(culprit) - 1, 0):ordered.index(culprit) + 1]
    missing = [h for h in pair if h not in tested]
    if missing:
        hashfile = out_dir / "bisect-commits.txt"
        cache.write_text(hashfile, "".join(f"{h}\n" for h in missing))
        driver.asv(ready.config, "run", f"HASHFILE:{hashfile.resolve()}", "--skip-existing", *ready.machine_args,
                   "--show-stderr",
                   log=ready.log, phase="asv run (the named pair)", context=ready.context)
        tested += [h for h in missing if h not in tested]
    for commit in tested:  # asv has completed them: seal what their runs kept, as readers require
        run_bundle.seal(run_place.Place(out_dir, ready.machine, commit))
    answer = judge(repo, out_dir, ordered, culprit, ids, metric, ready.machine, thresholds)
    answer.tested = tested
    if answer.measured_nothing:  # no verdict from nothing
        raise UserError(f"bisect measured no {metric.name} of {' '.join(ids)} at any of the {len(tested)} commit(s) "
                        f"it built ({', '.join(c[:10] for c in tested)}): {answer.why}; see {ready.log}")
    lines = ["", f"asv find named {answer.culprit or named.group(2)[:12]} after building {len(tested)} commit(s): "
                 + ", ".join(c[:10] for c in tested)]
    if answer.culprit:
        lines.append(f"first bad commit: {answer.culprit}  ({metric.name} {answer.value_before:.6g} at "
                     f"{answer.before[:10]} -> {answer.value_after:.6g}: {answer.why})")
        lines.append(git.git(repo, "log", "-1", "--format=  %h %an %ad%n  %s", "--date=short", answer.culprit))
        status, verdict = ExitCode.OK, "first bad commit"
    elif answer.undecided:
        lines.append(f"no verdict over {range_spec}: {answer.why}")
        status, verdict = ExitCode.NO_VERDICT, "no verdict"
    else:
        lines.append(f"nothing worsened beyond the noise in {range_spec}: {answer.why}")
        status, verdict = ExitCode.NOTHING_WORSENED, "nothing worsened"
    lines.append(f"wall time {time.perf_counter() - t0:.0f} s; log {ready.log}; results {out_dir / 'results'}")
    facts = {"verdict": verdict, "metric": metric.name, "combination": list(ids), "range": range_spec,
             "first_bad": answer.culprit, "before": answer.before, "value_before": answer.value_before,
             "value_after": answer.value_after, "why": answer.why, "tested": tested, "exit_status": int(status)}
    return driver.RunSummary("\n".join(lines), status, facts)


def _has_parent(repo: Path, commit: str) -> bool:
    return bool(git.git(repo, "rev-parse", "--verify", "-q", f"{commit}^", check=False))


def judge(repo: Path, out_dir: Path, ordered: list[str], named: str, ids, metric, machine: str,
          thresholds: limits.Thresholds | None = None) -> Answer:
    """Whether the named commit made the metric worse than the commit before it in the range, on
    ``machine``; latency by ``thresholds`` (the command's, loaded once: the other metrics need none)."""
    loaded = res.load(out_dir / "results", repo)
    values = {c.hash: loaded.value(metric.name, res.Series(*ids, machine=machine), c.hash) for c in loaded.commits}
    values = {h: v for h, v in values.items() if res.finite(v)}
    measured = [h for h in ordered if h in values]
    if not measured:
        reasons = {loaded.kept(c.hash, machine).failures.get(tuple(ids)) for c in loaded.commits} - {None}
        why = "; ".join(sorted(reasons)) or "every value is skipped or failed (asv NaN or null)"
        return Answer(None, None, None, None, why, [], measured_nothing=True)
    if named not in measured:
        return Answer(None, None, None, None, f"asv find named {named[:10]}, which has no {metric.name} (it failed "
                      f"to build or run there; measured: {', '.join(h[:10] for h in measured)})", [], undecided=True)
    if measured.index(named) == 0:  # the range's good end itself: nothing after it worsened; else unknown
        return Answer(None, None, None, None, f"no commit before {named[:10]} has a {metric.name} to compare with "
                      f"(measured: {', '.join(h[:10] for h in measured)})", [], undecided=named != ordered[0])
    before = measured[measured.index(named) - 1]
    a, b = values[before], values[named]
    worse = b > a if metric.worse == tracked.HIGHER else b < a
    if metric.name == "latency":
        ta, tb = (loaded.kept(h, machine).timings.get(tuple(ids)) for h in (before, named))
        if ta is None or tb is None:
            return Answer(None, before, a, b, "no timing samples to judge latency by", [], undecided=True)
        ratio, p = tb.median / ta.median, rules.mann_whitney(ta.samples_s, tb.samples_s)
        worse = rules.slower(thresholds, ratio, p)
        why = (f"{ratio:.2f}x, Mann-Whitney p {p:.2g} (limits {thresholds.latency.max_ratio:g}x, "
               f"{thresholds.latency.alpha:g})")
    else:
        why = f"{b / a:.4g}x" if a else "from 0"
    return Answer(named if worse else None, before, a, b, why if worse else f"{why}: not worse", [])
