"""A kept history of TVM commits as one table: each commit, how its TVM was installed and how long
its build took, the kernels whose code changed, and the gate's verdict against the commit before
(a script, not an asv benchmark).

    python experiments/history_series.py --results reports/tvm-main/results [--tvm-repo ./tvm]
        [--remeasure none|real] [--json]

The build facts are `install_tvm`'s notes, kept beside the results (``install-logs/<commit>.build.json``);
a commit whose TVM did not build has no data and its build log there. The verdicts are the gate's
(`tvm-suite gate`) on every consecutive pair of commits with data: with ``--remeasure none`` a
latency suspect is NO VERDICT, with ``real`` the kernels are timed again where this machine's cache
still holds them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from suite import git
from suite.commands import common_args
from suite.errors import UserError
from suite.history import keep
from suite.reporting import code_identity, gate, gate_result, results, thresholds as thresholds_mod


def build_text(facts: dict, failed: bool) -> tuple[str, str]:
    """(how it was installed, the build's seconds and ccache) as the table says them."""
    if failed:
        return "did not build", f"log: {keep.BUILD_LOGS}/"
    if not facts:
        return "not noted", ""
    kind = facts.get("kind", "?")
    seconds = facts.get("build_s")
    ccache = facts.get("ccache") or {}
    hits = (ccache.get("direct_hits") or 0) + (ccache.get("preprocessed_hits") or 0)
    cost = f"{seconds:,.0f} s" if isinstance(seconds, (int, float)) else ""
    if facts.get("release"):  # a wheel: nothing was built
        cost = f"apache-tvm {facts['release']}, apache-tvm-ffi {facts.get('ffi', '?')}"
    if ccache:
        cost += f" (ccache {hits} hits, {ccache.get('misses', 0)} compiled)"
    return kind, cost


def subject(tvm_repo: Path | None, commit: str) -> str:
    if tvm_repo is None:
        return ""
    return git.git(tvm_repo, "log", "-1", "--format=%s", commit, check=False).strip()[:60]


def judged_pairs(history, commits, th, remeasure) -> dict[str, dict]:
    """The gate on every consecutive pair of ``commits``, by the candidate's label."""
    found = {}
    for before, at in zip(commits, commits[1:]):
        result = gate.evaluate(history, at, before, th, remeasure)
        changes = code_identity.changes(history, before, at)
        found[at.label] = {"baseline": before.label, "verdict": result.verdict.name,
                           "failing": [c.name.split(" vs ")[0] for c in result.checks
                                       if c.status is gate_result.Status.FAIL],
                           "kernels_changed": [" ".join(s.ids) for s in changes.changed], "kernels_same": changes.same}
    return found


def rows(history, results_dir: Path, tvm_repo, th, remeasure) -> list[dict]:
    # a commit whose TVM did not build (asv's nulls) is passed over
    with_data = [c for c in history.commits if gate.has_data(history, c)]
    judged = judged_pairs(history, with_data, th, remeasure)
    found = []
    for commit in history.commits:
        failed = commit not in with_data
        kind, cost = build_text(keep.build_facts(Path(results_dir).resolve().parent, commit.hash), failed)
        pair = judged.get(commit.label)
        found.append({"commit": commit.label, "hash": commit.hash, "date": commit.as_dict()["date"],
                      "subject": subject(tvm_repo, commit.hash), "installed": kind, "build": cost,
                      "baseline": pair["baseline"] if pair else None,
                      "kernels_changed": pair["kernels_changed"] if pair else None,
                      "kernels_same": pair["kernels_same"] if pair else None,
                      "verdict": pair["verdict"] if pair else None,
                      "failing": pair["failing"] if pair else []})
    return found


def table(found: list[dict]) -> str:
    lines = ["| commit | date | subject | installed | build | kernels whose code changed | gate against |",
             "|---|---|---|---|---|---|---|"]
    for r in found:
        if r["verdict"] is None:
            changed, verdict = "-", "-" if r["installed"] == "did not build" else "first commit with data"
        else:
            names = r["kernels_changed"]
            changed = f"{len(names)} of {len(names) + r['kernels_same']}"
            if names:
                changed += ": " + ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            verdict = f"{r['verdict']} vs {r['baseline']}" + (f" ({', '.join(r['failing'])})" if r["failing"] else "")
        lines.append(f"| {r['commit']} | {(r['date'] or '')[:10]} | {r['subject']} | {r['installed']} | "
                     f"{r['build']} | {changed} | {verdict} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=common_args.path, required=True)
    parser.add_argument("--tvm-repo", type=common_args.path,
                        help="a clone of apache/tvm: orders the commits, names their subjects")
    parser.add_argument("--thresholds", type=common_args.path)
    parser.add_argument("--remeasure", choices=("none", "real"), default="none")
    common_args.json_output(parser, "the rows")
    args = parser.parse_args(argv)
    try:
        if args.tvm_repo is not None and not git.is_repo(args.tvm_repo):
            raise UserError(f"--tvm-repo {args.tvm_repo}: not a git repository")
        th = thresholds_mod.load(args.thresholds)  # a bad file refused before the history is read
        history = results.load(args.results, args.tvm_repo)
        remeasure = None
        if args.remeasure == "real":
            from suite.core import timing

            remeasure = timing.remeasure
        found = rows(history, args.results, args.tvm_repo, th, remeasure)
    except UserError as err:  # absent, damaged or untrusted results: one line
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(found, indent=1) if args.json else table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
