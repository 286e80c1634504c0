"""``tvm-suite``: list workloads, measure one combination, run the asv suite.

Argument parsing and messages only; the work is done in the library modules.
Every expected failure (bad input, TVM missing, a tool missing) ends with one line on
stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

import numpy as np
from tabulate import tabulate

from suite import cache, environ, targets
from suite.core import measurement, schedules, timing, workloads
from suite.core.combo import QUICK_ORDERS, Combo, Grid, select_workloads
from suite.core.record import Kind
from suite.errors import ExitCode, Interrupted, Skipped, UserError, signals_raise
from suite.progress import Progress


# ----------------------------------------------------------------------------- list


def cmd_list(args) -> int:
    models = [args.model] if args.model else ["seed", *workloads.DEFAULT_MODELS]
    found = []
    for model in models:
        if model not in workloads.all_models():
            raise UserError(f"unknown model {model!r}; valid models: {', '.join(workloads.all_models())}")
        found += workloads.catalog(model)
    if args.json:  # and the table for people, on stderr
        say_json([w.summary() for w in found], 0)
    rows = [
        [w.id, " ".join("x".join(map(str, s)) for s in w.input_shapes), "x".join(map(str, w.output_shape)),
         f"{w.flops / 1e6:.1f}", str(w.occurrences)]
        for w in found
    ]
    print(tabulate(rows, ["workload", "inputs", "output", "MFLOP", "occurrences"], tablefmt="plain",
                   disable_numparse=True, colalign=["left", "left", "left", "right", "right"]))
    print(f"{len(found)} workloads")
    return 0


# ----------------------------------------------------------------------------- measure


def cmd_measure(args) -> int:
    # Check every argument before any compile starts.
    combo = Combo.resolve(args.workload, args.dtype, args.target, args.order)
    if args.against:
        from suite.reporting import rules, thresholds

        schedules.check_order(args.against)
        limits = thresholds.load()  # once, and a bad thresholds file refused before any compile
    if args.save_arrays:
        cache.ensure_dir(args.save_arrays, "--save-arrays")
    if reason := combo.target.unavailable():  # tools missing, no GPU
        raise UserError(reason)
    record = measurement.measure(combo)
    shown = record.to_json()
    shown.pop("parts", None)
    if record.ok and record.kind is Kind.LATENCY:  # latency is timed afresh, never cached
        samples = timing.take(combo).samples_s
        median = float(np.median(samples))
        shown["latency"] = {"samples_s": samples, "median_s": median, "gflops": timing.gflops(combo, median)}
    if args.against and record.ok:
        try:
            found = measurement.divergence(combo, args.against)
            shown["divergence"] = {**found, **rules.attribute(found, combo.target.name, limits)}
        except Skipped as err:
            shown["divergence"] = {"against": args.against, "skipped": str(err)}
    if args.save_arrays:
        _save_arrays(args, combo, record)
    if args.json:  # and the record for people, on stderr
        say_json(shown, 0 if record.ok else 1)
    _print_record(shown)
    return 0 if record.ok else 1


def _print_record(record: dict) -> None:
    print(f"workload   {record['workload']}")
    print(f"dtype      {record['dtype']}   target {record['target']}   order {record['order']}")
    if record.get("tuned_from"):
        print(f"records    the tuning record of {record['tuned_from']} replayed")
    print(f"tvm        {record.get('tvm_version', '-')}")
    if record["status"] != "ok":
        print(f"{record['status']}: {record['reason']}")
        return
    if "codegen" in record:  # Hexagon compile metrics
        print("codegen    " + "   ".join(f"{k} {v}" for k, v in record["codegen"].items()))
    if "metrics" not in record:
        print(f"compile-only target: compiled in {record['compile_s']:.2f} s, not run")
        return
    m = record["metrics"]
    if "emulated_s" in record:
        print(f"emulated   {record['emulated_s']:.3f} s under qemu-hexagon (not hardware latency)"
              f"   compile {record['compile_s']:.2f} s")
        if c := record.get("counts"):
            floor = (f"   HVX efficiency {c['packet_floor'] / c['packets']:.3f} (floor {c['packet_floor']:,} packets)"
                     if c.get("packet_floor") and c.get("packets") else "")
            print(f"executed   {c['packets']:,} packets   {c['instructions']:,} instructions   "
                  f"{c['hvx_instructions']:,} HVX (exact; a packet issues per cycle at best){floor}")
    else:
        lat = record["latency"]
        print(f"latency    {lat['median_s'] * 1e3:.3f} ms (median of {len(lat['samples_s'])}, timed now)"
              f"   {lat['gflops']:.2f} GFLOP/s   compile {record['compile_s']:.2f} s")
    print(f"ULP error  max {m['ulp_max']:.4g}   mean {m['ulp_mean']:.4g}   p99 {m['ulp_p99']:.4g}")
    print(f"scaled     {m['scaled_error']:.4g} ULP of max|ref|")
    k, dtype = record["accumulation_length"], record["dtype"]
    rigorous = (f"{m['bound_fraction']:.4g} of gamma_K*m" if m["bound_fraction"] == m["bound_fraction"]
                else f"none (no rigorous bound for K = {k} in {dtype}: K*u >= 1)")
    print(f"bound      {rigorous}; probabilistic {m['prob_bound_fraction']:.4g} of gamma~_K(lambda)*m (K={k})")
    print(f"abs error  max {m['max_abs_error']:.4g}   mean {m['mean_abs_error']:.4g}")
    print(f"non-finite {int(m['nonfinite'])}")
    if t := record.get("twin_metrics"):
        print(f"IEEE twin  ULP mean {t['ulp_mean']:.4g}   scaled {t['scaled_error']:.4g}   probabilistic bound "
              f"{t['prob_bound_fraction']:.4g}   (the same program, IEEE rounding in place of qfloat)")
    d = record.get("divergence")
    if d and "skipped" in d:
        print(f"vs {d['against']:8s} skipped: {d['skipped']}")
    elif d:
        print(f"vs {d['against']:8s} {d['differ_fraction'] * 100:.2f}% of elements differ, "
              f"max {d['max_ulp_distance']:.0f} ULP apart, exceeds bound: {bool(d['exceeds_bound'])}")
        print(f"           error vs float64 {d['error_ratio']:.3f}x {d['against']}'s (z {d['error_ratio_z']:.1f}), "
              f"bias shift {d['bias_shift']:+.3f} of {d['against']}'s mean |err| (|z| {d['bias_shift_z']:.1f})")
        if "twin_error_ratio" in d:
            print(f"IEEE twin  error vs float64 {d['twin_error_ratio']:.3f}x {d['against']}'s "
                  f"(z {d['twin_error_ratio_z']:.1f}), bias shift {d['twin_bias_shift']:+.3f} "
                  f"(|z| {d['twin_bias_shift_z']:.1f})")
        if d["marked"]:
            print(f"marked     {', '.join(d['marked'])}: cause {d['cause_words']}")
        else:
            print("marked     no: inside the divergence rules")


def _save_arrays(args, combo: Combo, record) -> None:
    if not record.has_output:
        return
    out = args.save_arrays
    stem = ".".join(combo.ids)
    for index, array in enumerate(workloads.make_inputs(combo.workload, combo.dtype)):
        cache.write_array(out / f"{stem}.input{index}.npy", array)
    cache.write_array(out / f"{stem}.output.npy", measurement.output(combo))
    cache.write_array(out / f"{stem}.reference.npy", measurement.reference_arrays(combo.workload, combo.dtype)[0])
    print(f"arrays written to {out}/{stem}.*.npy", file=sys.stderr)


# ----------------------------------------------------------------------------- tune


def cmd_tune(args) -> int:
    from suite.core import tuning
    from suite.reporting import thresholds

    target = targets.get(args.target)
    workloads.check_dtype(args.dtype)
    bound = thresholds.load().bound  # the rounding bound every candidate is checked against, read once
    if reason := target.unavailable():  # no GPU, tools missing: one line before any work
        raise UserError(f"{target.name} cannot be tuned here: {reason}")
    target.tuning_target()  # NotTunable (one line) before any work
    into, whose = _tune_destination(tuning, args.into_checkout)
    written = cache.ensure_dir(tuning.records_dir(target.name, args.dtype, into) / "traces", "the records directory")
    print(f"records go to {written}/ ({whose})", flush=True)
    tuned, busy = [], []
    chosen = select_workloads(args.workloads)
    shown = Progress("tune", len(chosen))  # done/total and time left, on stderr beside MetaSchedule's output
    for wid in chosen:
        shown.update(shown.done, wid)
        if args.skip_existing and (measure := tuning.existing_measure(target.name, args.dtype, wid,
                                                                      into if args.into_checkout else None)):
            if measure == target.tuning_measure:
                print(f"kept     {wid} (already tuned by {measure})")
                shown.step(wid)
                continue
            print(f"re-tune  {wid}: its record was tuned by {measure}, this target tunes by {target.tuning_measure}")
        try:
            tuning.tune(wid, args.dtype, target, args.trials, lam=bound.lam, limit=bound.max_fraction, root=into)
        except tuning.TuningInProgress as err:  # the others are still worth tuning; said at the end
            print(f"busy     {err}")
            busy.append(wid)
            shown.step(wid)
            continue
        except KeyboardInterrupt as err:
            done = f"{len(tuned)} record(s) written before it ({', '.join(tuned)})" if tuned else "no record written"
            raise Interrupted.by(err, f"{wid} was not tuned (its search ended, its temporary directory removed); "
                                      f"{done}") from None
        tuned.append(wid)
        shown.step(wid)
    shown.finish()
    if tuned:
        print(f"{len(tuned)} record(s) written to {written}/ ({whose})")
    if busy:
        raise UserError(f"not tuned, another process was tuning them: {', '.join(busy)}; when it is done, "
                        f"`--skip-existing` keeps its records")
    return 0


def _tune_destination(tuning, into_checkout: bool) -> tuple[Path, str]:
    """(the records directory `tune` writes, whose records they are, in words): the user's own by
    default, the committed ones of this checkout with ``--into-checkout``."""
    from suite import asvconf

    named = os.environ.get(tuning.RECORDS_ENV)
    if not into_checkout:
        if named:
            return tuning.user_records_root(), (f"{tuning.RECORDS_ENV}: the `tuned` order reads them in place of "
                                                "the committed records")
        return tuning.user_records_root(), ("yours: the `tuned` order replays them in place of the committed ones "
                                            f"in {tuning.RECORDS_DIR}; --into-checkout writes those")
    if asvconf.CHECKOUT is None:
        raise UserError(f"--into-checkout: this suite is installed, not run from a source checkout: "
                        f"{tuning.RECORDS_DIR} is no committed file (tune without it writes your own records)")
    if named:
        raise UserError(f"--into-checkout writes {tuning.RECORDS_DIR}, but {tuning.RECORDS_ENV}={named} is read in "
                        "its place: unset it, or tune without --into-checkout")
    return tuning.RECORDS_DIR, "the committed records of this checkout: review and commit them"


# ----------------------------------------------------------------------------- run


def cmd_run(args) -> int:
    from suite import run

    orders = args.orders or list(QUICK_ORDERS if args.quick else schedules.ORDERS)
    grid = Grid.of(args.workloads, args.dtypes, args.targets, orders)
    summary = run.run_installed(grid, quick=args.quick, out_dir=args.out, tvm_repo=args.tvm_repo,
                                tvm_commit=args.tvm_commit, cluster=args.cluster, thresholds_path=args.thresholds,
                                machine=args.machine)
    say(summary.text, summary.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.facts, summary.exit_status)
    return summary.exit_status


# ----------------------------------------------------------------------------- history


def cmd_history(args) -> int:
    from suite.history import commits

    found = commits.history_commits(args.tvm_repo, args.releases, args.range)
    grid = Grid.of(args.workloads, args.dtypes, args.targets, args.orders or ["default", "tuned"])
    summary = commits.run_history(args.tvm_repo, found, grid, quick=not args.full, out_dir=args.out,
                                  env_dir=args.env_dir, git_mirrors=args.git_mirrors, machine=args.machine)
    print(summary.text)
    return summary.exit_status


def cmd_check(args) -> int:
    from suite import check

    grid = Grid.of(args.workloads, args.dtypes, args.targets, args.orders or list(QUICK_ORDERS))
    summary = check.run_check(args.tvm_repo, args.candidate, args.baseline, grid, args.out, env_dir=args.env_dir,
                              git_mirrors=args.git_mirrors, machine=args.machine, thresholds_path=args.thresholds)
    say(summary.text, summary.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.facts, summary.exit_status)
    return summary.exit_status


def cmd_bisect(args) -> int:
    from suite.history import bisect

    combo = Combo.resolve(args.workload, args.dtype, args.target, args.order)  # names checked first
    summary = bisect.run_bisect(args.tvm_repo, args.range, combo.ids, args.metric, args.out,
                                env_dir=args.env_dir, git_mirrors=args.git_mirrors)
    say(summary.text, summary.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(summary.facts, summary.exit_status)
    return summary.exit_status


# ----------------------------------------------------------------------------- report, gate


def _judged(args, remeasure):
    """(history, gate result) of ``args.results``: the verified history, the verdict on
    ``args.commit`` (the newest commit without one) against ``args.baseline``."""
    from suite.reporting import gate, results, thresholds

    limits = thresholds.load(args.thresholds)
    history = results.load(args.results, args.tvm_repo)
    for line in history.recovered:
        print(f"recovered: {line}", file=sys.stderr)
    commit = getattr(args, "commit", None)  # an empty name is refused by argparse (_commit_name), never "newest"
    if commit is None:
        commit = history.commits[-1].hash
    return history, gate.evaluate_named(history, commit, limits, args.baseline, remeasure)


def cmd_report(args) -> int:
    from suite.core import runstore
    from suite.reporting import report

    report.check_out(args.out, runstore.of_results(args.results), args.results)  # links resolved, as load does
    history, result = _judged(args, remeasure=None)
    facts = report.make_report(history, result, args.out)
    d = facts["divergence"]
    first = d["first_divergent"]
    say(f"report: {args.out / 'index.html'} and report.json ({len(facts['commits'])} commits, "
        f"newest {facts['newest']['label']})\n"
        f"first divergent commit: {first['label'] if first else 'none'}; last good: "
        f"{d['last_good']['label'] if d['last_good'] else 'none'}; {len(d['marks'])} marks, "
        f"{len(facts['regressions'])} regressions\n{result.line()}", result.verdict.exit_code)
    return result.verdict.exit_code  # the verdict its last line gives


def cmd_gate(args) -> int:
    from suite import run
    from suite.reporting import gate

    history, result = _judged(args, remeasure=None if args.no_remeasure else timing.remeasure)
    run.keep_remeasured(history, result)
    status = result.verdict.exit_code
    say(gate.format_table(result, history), status)  # for people: on stderr with --json
    if args.json:
        say_json(result.as_dict(), status)
    return status


def say(text: str, status: int | None = None) -> None:
    """Print ``text``; where standard output is gone (a closed pipe, a full disk), say so on
    stderr and go on: what a command decided (its exit status) does not depend on it."""
    try:
        print(text, flush=True)
    except OSError as err:
        _stdout_lost(err, status)


#: The JSON document of a ``--json`` command, with its exit status: printed on stdout by
#: :func:`_run` once the command's work is done.
_json_document: list[tuple[str, int]] = []


def say_json(value, status: int) -> None:
    """The one JSON document a ``--json`` command prints on stdout: kept until its work is done
    (:func:`_run`); meanwhile everything it prints for people goes to stderr
    (:func:`_for_people_on_stderr`), so that stdout is that document alone."""
    _json_document.append((json.dumps(value, indent=1), status))


@contextlib.contextmanager
def _for_people_on_stderr():
    """While a ``--json`` command works, whatever it prints for people (the plan, progress,
    tables, asv's, TVM's and child processes' output) goes to stderr: Python's ``sys.stdout``, and
    file descriptor 1 where standard output is a real file."""
    _json_document.clear()
    saved = None
    try:
        sys.stdout.flush()
        out_fd, err_fd = sys.stdout.fileno(), sys.stderr.fileno()
        if out_fd != err_fd:
            saved = os.dup(out_fd)
            os.dup2(err_fd, out_fd)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):  # in-process callers: a StringIO
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, out_fd)
            os.close(saved)


def _stdout_lost(err: OSError, status: int | None) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit must not fail again
        os.close(devnull)
    except OSError:
        pass
    verdict = f"; exit {status} stands" if status is not None else ""
    try:
        print(f"tvm-suite: the output could not be written ({err.strerror or err}){verdict}", file=sys.stderr)
    except OSError:
        pass


# ----------------------------------------------------------------------------- triage


def cmd_triage(args) -> int:
    from suite.triage import run

    request = run.Request(before=args.before, after=args.after, schedule=args.schedule, trace=args.trace,
                          tune=args.tune, targets=[t for ts in args.target or [["llvm"]] for t in ts],
                          inputs=args.inputs, func=args.function, repro=args.repro, max_memory=args.max_memory)
    report = run.triage(request, log=lambda line: print(f"triage: {line}", file=sys.stderr, flush=True))
    say(report.text(), report.exit_status)  # for people: on stderr with --json
    if args.json:
        say_json(report.to_json(), report.exit_status)
    return report.exit_status


# ----------------------------------------------------------------------------- main


MIRRORS_HELP = ("mirrors of TVM's submodules for source builds, DIR/<owner>/<name> as on GitHub "
                "(default: $TVM_SUITE_GIT_MIRRORS; none: fetched from the network)")


class _Parser(argparse.ArgumentParser):
    """argparse with the suite's one-line errors (exit 2), like every other expected failure."""

    def error(self, message):
        self.exit(2, f"tvm-suite: error: {self.prog}: {message} (see {self.prog} --help)\n")


def _path(value: str) -> Path:
    """A path option, made absolute against the caller's working directory before anything runs
    (asv runs in the repository root and would resolve a relative one there)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty path")
    return Path(value).expanduser().absolute()


def _names(value: str) -> list[str]:
    """A comma-separated list option; an empty list is an error, never "all"."""
    names = [item.strip() for item in value.split(",") if item.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{value!r} names nothing (give at least one, comma-separated)")
    return names


def _commit_name(value: str) -> str:
    """A commit named by hash (prefix) or tag; an empty name is an error, never the newest commit."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"{value!r} names no commit (give a hash, a prefix of 4 or more, or a tag)")
    return value.strip()


def _machine_name(value: str) -> str:
    """An asv machine name: it names a directory of the results."""
    if not value or value in (".", "..") or not all(c.isalnum() or c in "._-" for c in value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a machine name (letters, digits, '.', '_', '-')")
    return value


#: The most trials a tuning takes: MetaSchedule counts them in a C++ int32 (and a million trials of
#: seconds each is years of tuning).
MAX_TRIALS = 1_000_000


def _trials(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= number <= MAX_TRIALS:
        raise argparse.ArgumentTypeError(f"{number} is not between 1 and {MAX_TRIALS:,}")
    return number


def _combination(p, dtype="float32", workload_help=None) -> None:
    """Options naming one combination (measure, bisect): one value each."""
    p.add_argument("--workload", required=True, help=workload_help or "a workload id (tvm-suite list)")
    p.add_argument("--dtype", default=dtype, help=f"{', '.join(workloads.DTYPES)} (default: {dtype})")
    p.add_argument("--target", default="llvm", help=f"{', '.join(targets.names())} (default: llvm)")
    p.add_argument("--order", default="default", help=f"{', '.join(schedules.ORDERS)} (default: default)")


def _grid(p, orders_default: str) -> None:
    """Options narrowing the benchmark grid (run, history): comma-separated lists."""
    p.add_argument("--workloads", type=_names, help="comma-separated ids or model names (default: seed,resnet50)")
    p.add_argument("--dtypes", type=_names, default=list(workloads.DTYPES),
                   help=f"comma-separated, of {', '.join(workloads.DTYPES)} (default: {','.join(workloads.DTYPES)})")
    p.add_argument("--orders", type=_names, help=f"comma-separated loop orders (default: {orders_default})")
    p.add_argument("--targets", type=_names, default=["llvm"],
                   help=f"comma-separated, of {', '.join(targets.names())} (default: llvm)")


def _tvm_history(p, out_default: str) -> None:
    """Options of the commands that build TVM commits (history, bisect, check)."""
    p.add_argument("--tvm-repo", type=_path, required=True, help="a clone of apache/tvm (a bare one will do)")
    p.add_argument("--out", type=_path, default=out_default, help=f"results, logs, published HTML "
                                                                  f"(default: {out_default})")
    p.add_argument("--env-dir", type=_path, help="where asv keeps its environments (default: .asv/env-history; "
                                                 "about 0.6 GB)")
    p.add_argument("--git-mirrors", type=_path, help=MIRRORS_HELP)


def _machine(p) -> None:
    p.add_argument("--machine", type=_machine_name, help="the machine asv files the results under, one series per "
                                                         "machine (default: the host name)")


def _json(p, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of the table")


#: The exit statuses of a command that ends with the gate's verdict on what it measured.
_VERDICT_EXITS = [(ExitCode.OK, "READY"), (ExitCode.NOT_READY, "NOT READY: a check failed (a failed build is one)"),
                  (ExitCode.NO_VERDICT, "no verdict: data missing, or latency suspects that could not be timed again")]
#: Every command's exit statuses (suite.errors.ExitCode), shown in its --help and in the docs.
EXIT_CODES = {
    "list": [(ExitCode.OK, "listed")],
    "measure": [(ExitCode.OK, "measured"), (ExitCode.NOT_READY, "the combination failed to build or run, or was skipped")],
    "tune": [(ExitCode.OK, "every record written (or kept by --skip-existing)")],
    "run": _VERDICT_EXITS,
    "history": [(ExitCode.OK, "every commit measured"), (ExitCode.NOT_READY, "a commit did not install, or asv failed")],
    "bisect": [(ExitCode.OK, "the first bad commit found"),
               (ExitCode.NOTHING_WORSENED, "nothing worsened over the range (an answer, not a failure)")],
    "check": _VERDICT_EXITS,
    "report": [(ExitCode.OK, "READY (the report written; its last line gives the verdict)"),
               (ExitCode.NOT_READY, "NOT READY: a check failed (the report written)"),
               (ExitCode.NO_VERDICT, "DATA MISSING, or NO VERDICT: latency suspects not timed again (the report "
                                     "written)")],
    "gate": [(ExitCode.OK, "READY"), (ExitCode.NOT_READY, "NOT READY: a check failed (a failed build is one)"),
             (ExitCode.NO_VERDICT, "DATA MISSING, or NO VERDICT: latency suspects not timed again")],
    "triage": [(ExitCode.OK, "EQUIVALENT: after's output is before's, bit for bit"),
               (ExitCode.REORDERED, "REORDERED: both within the rounding bound of the exact value"),
               (ExitCode.ARITHMETIC, "ARITHMETIC: qfloat marked, its IEEE twin not"),
               (ExitCode.CHANGED, "CHANGED: the after program computes something else"),
               (ExitCode.UNDEFINED, "UNDEFINED: the before program itself is undefined"),
               (ExitCode.NO_VERDICT, "no verdict: no target could build and run both programs")],
}
#: What every command may end with besides its own.
COMMON_EXITS = [(ExitCode.NO_VERDICT, "bad input, a missing tool, unreadable data (one line on stderr)"),
                (ExitCode.SIGINT, "interrupted (Ctrl-C)"), (ExitCode.SIGTERM, "terminated (SIGTERM)")]


def exit_codes(command: str) -> list[tuple[int, str]]:
    """(status, meaning) of ``command``: its own, then the common ones (a status both use: both meanings)."""
    common = dict(COMMON_EXITS)
    own = [(int(c), f"{m}; or {common.pop(c)}" if c in common else m) for c, m in EXIT_CODES[command]]
    return own + [(int(c), m) for c, m in common.items()]


def _command(sub, name: str, summary: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its exit statuses."""
    epilog = "exit status:\n" + "\n".join(f"  {code:<4d}{meaning}" for code, meaning in exit_codes(name))
    return sub.add_parser(name, help=summary, description=summary, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def _add_list(sub) -> None:
    p = _command(sub, "list", "workload ids, shapes, FLOPs, occurrences")
    p.add_argument("--model", help=f"one of: {', '.join(workloads.all_models())} (default: seed and resnet50)")
    _json(p, "the workloads")
    p.set_defaults(func=cmd_list)


def _add_measure(sub) -> None:
    p = _command(sub, "measure", "compile, run and print the metrics of one combination")
    _combination(p)
    p.add_argument("--against", metavar="ORDER", help="also compare the output with this order's")
    _json(p, "the record")
    p.add_argument("--save-arrays", metavar="DIR", type=_path, help="write inputs, output and reference as .npy")
    p.set_defaults(func=cmd_measure)


def _add_tune(sub) -> None:
    p = _command(sub, "tune", "tune with MetaSchedule and store the records in your records directory, which "
                              "the tuned order replays before the committed ones (llvm, cuda: timed here; "
                              "hexagon-v68-qf: packets executed under the emulator)")
    p.add_argument("--target", default="llvm", help=f"{', '.join(targets.names())} (default: llvm)")
    p.add_argument("--dtype", required=True, help=", ".join(workloads.DTYPES))
    p.add_argument("--workloads", "--workload", dest="workloads", type=_names,
                   help="comma-separated ids or model names (default: seed,resnet50)")
    p.add_argument("--trials", type=_trials, default=64,
                   help="MetaSchedule trials per workload, 1 to 1,000,000 (default: %(default)s)")
    p.add_argument("--skip-existing", action="store_true",
                   help="keep workloads whose record was tuned by this target's measure")
    p.add_argument("--into-checkout", action="store_true",
                   help="write the committed records of this checkout (suite/tuning_records/) instead of yours "
                        "($TVM_SUITE_TUNING_RECORDS, else ~/.local/share/tvm-suite/tuning_records)")
    p.set_defaults(func=cmd_tune)


def _add_run(sub) -> None:
    p = _command(sub, "run", "the main job: run the asv suite on the installed TVM, keep the results, give the "
                             "release gate's verdict on them")
    p.add_argument("--quick", action="store_true",
                   help="orders default and tuned only, few asv repeats (every workload still runs)")
    _grid(p, "all; with --quick: default,tuned")
    p.add_argument("--out", type=_path, default=".asv",
                   help="asv results, report, HTML, logs (default: .asv); an html/ there that tvm-suite did not "
                        "publish is refused, never replaced")
    p.add_argument("--tvm-repo", type=_path, help="a TVM clone whose tag v<version> names the installed TVM's commit "
                                                  "(default: a versions repository in --out)")
    p.add_argument("--tvm-commit", help="the TVM commit the installed TVM was built from (needs --tvm-repo)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="a Dask scheduler (tcp://HOST:8786) whose workers build, run and check every combination "
                        "not yet cached; latency is timed here (needs the cluster extra)")
    p.add_argument("--thresholds", type=_path, help="TOML thresholds of the verdict (default: reports/thresholds.toml)")
    _machine(p)
    _json(p, "the verdict, its checks and the combinations' counts")
    p.set_defaults(func=cmd_run)


def _add_history(sub) -> None:
    p = _command(sub, "history", "asv over commits of a TVM clone (releases or a range), published")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--releases", type=_names,
                       help="comma-separated apache-tvm releases, e.g. 0.25.0,0.26.0 (their tags)")
    which.add_argument("--range", help="A..B: every commit after A up to B on B's first-parent line (each one a "
                                       "source build unless a release: hours each)")
    _grid(p, "default,tuned")
    p.add_argument("--full", action="store_true", help="asv's own timing repeats instead of the quick ones")
    _machine(p)
    _tvm_history(p, "reports/history")
    p.set_defaults(func=cmd_history)


def _add_bisect(sub) -> None:
    p = _command(sub, "bisect", "the first commit in A..B where a metric of one combination worsens (asv find)")
    p.add_argument("--range", required=True, help="A..B: A good, B bad; the commits after A up to B")
    _combination(p, dtype="float16")
    p.add_argument("--metric", required=True, help="a lower-is-better metric, e.g. ulp_mean, latency, code_bytes")
    _tvm_history(p, ".asv/bisect")
    _json(p, "the answer")
    p.set_defaults(func=cmd_bisect)


def _add_check(sub) -> None:
    p = _command(sub, "check", "release readiness of a TVM commit in one command: measure the baseline and the "
                               "candidate (a release's wheel, else a source build; resumable), gate, report")
    p.add_argument("candidate", metavar="CANDIDATE", type=_commit_name, help="a tag or commit of --tvm-repo")
    p.add_argument("--baseline", type=_commit_name,
                   help="a tag or commit (default: the newest apache-tvm release before the candidate); an empty "
                        "name is an error")
    _grid(p, "default,tuned")
    p.add_argument("--thresholds", type=_path, help="TOML thresholds of the verdict (default: reports/thresholds.toml)")
    _machine(p)
    _tvm_history(p, ".asv/check")
    _json(p, "the verdict and its checks")
    p.set_defaults(func=cmd_check)


def _add_report(sub) -> None:
    p = _command(sub, "report", "static HTML report (and report.json) of asv results over commits, the gate's "
                                "verdict on the newest first")
    p.add_argument("--results", type=_path, required=True, help="asv results directory (e.g. .asv/results)")
    p.add_argument("--out", type=_path, required=True, help="directory to write index.html and report.json to "
                                                            "(not inside --results)")
    p.add_argument("--tvm-repo", type=_path, help="TVM clone whose history orders the commits (default: the one the "
                                                  "run named, else the dates asv stored)")
    p.add_argument("--thresholds", type=_path, help="TOML thresholds (default: reports/thresholds.toml)")
    p.add_argument("--baseline", type=_commit_name,
                   help="baseline of the verdict on the newest commit (default: [latency] baseline)")
    p.set_defaults(func=cmd_report)


def _add_gate(sub) -> None:
    p = _command(sub, "gate", "release readiness of a commit, from asv results")
    p.add_argument("--results", type=_path, required=True, help="asv results directory")
    p.add_argument("--commit", type=_commit_name, required=True,
                   help="candidate commit (hash, prefix of 4 or more, or tag)")
    p.add_argument("--thresholds", type=_path, help="TOML thresholds (default: reports/thresholds.toml)")
    p.add_argument("--baseline", type=_commit_name,
                   help="baseline commit (default: [latency] baseline: the previous commit with results)")
    p.add_argument("--no-remeasure", action="store_true",
                   help="do not time latency suspects again: a suspect no earlier gate timed again is no verdict")
    p.add_argument("--tvm-repo", type=_path, help="TVM clone whose history orders the commits")
    _json(p, "the verdict and its checks")
    p.set_defaults(func=cmd_gate)


def _add_triage(sub) -> None:
    from suite.triage import budget

    p = _command(sub, "triage", "a verdict on a report of TVM computing different numbers before and after "
                                "scheduling: EQUIVALENT, REORDERED, ARITHMETIC, CHANGED (a reproducer is written), "
                                "UNDEFINED (the before program itself)")
    p.add_argument("before", type=_path, metavar="BEFORE",
                   help="TVMScript file: a PrimFunc or an IRModule, read as data (none of it runs; Python "
                        "that TVMScript does not need is refused)")
    p.add_argument("after", type=_path, metavar="AFTER", nargs="?",
                   help="TVMScript file of the scheduled program, read as data (or give --schedule, --trace or --tune)")
    p.add_argument("--schedule", type=_path, metavar="FILE",
                   help="Python calling schedule primitives on `sch` (tvm.tir.Schedule spelling accepted). It is "
                        "Python and RUNS, as you would run it (in a process of its own, whose exit is never a "
                        "verdict): only give a schedule you trust; --trace with JSON runs nothing")
    p.add_argument("--trace", type=_path, metavar="FILE",
                   help="a MetaSchedule trace: JSON is data, applied without running anything (the safe way for "
                        "an untrusted schedule); a trace printed as Python runs as --schedule does")
    p.add_argument("--tune", type=_trials, metavar="N", help="tune BEFORE with MetaSchedule, N trials per target (1 to 1,000,000), "
                                                                "each candidate checked against the reference")
    p.add_argument("--target", action="append", type=_names, metavar="T",
                   help=f"run on T (repeatable or comma-separated; default llvm): {', '.join(targets.names())}")
    p.add_argument("--inputs", metavar="SPEC", help="LO:HI, NAME=LO:HI or NAME=FILE.npy, comma-separated "
                                                    "(default: floats uniform in [-1, 1), fixed seeds)")
    p.add_argument("--func", dest="function", metavar="NAME", help="the PrimFunc to compare, where a file holds several")
    p.add_argument("--repro", type=_path, metavar="PATH",
                   help="where a CHANGED verdict's reproducer goes, a path that does not exist yet (default: "
                        "./triage_repro_<func>.py, or _2, _3... where that exists: never replacing a file)")
    p.add_argument("--max-memory", type=budget.parse_size, metavar="SIZE", default=budget.DEFAULT_MAX_MEMORY,
                   help=f"the most memory the inputs and the reference may take, checked before any is "
                        f"allocated (K, M, G, T; default {budget.words(budget.DEFAULT_MAX_MEMORY)})")
    _json(p, "the verdict, its exit status and each target's findings")
    p.set_defaults(func=cmd_triage)


def build_parser() -> argparse.ArgumentParser:
    from importlib import metadata

    parser = _Parser(prog="tvm-suite", description=__doc__.splitlines()[0])
    try:
        version = metadata.version("tvm-accuracy-suite")
    except metadata.PackageNotFoundError:  # run from a checkout without installing it
        version = "not installed"
    parser.add_argument("--version", action="version", version=f"tvm-suite {version}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_list, _add_measure, _add_tune, _add_run, _add_check, _add_history, _add_bisect, _add_report,
                _add_gate, _add_triage):
        add(sub)
    return parser


#: What an interrupted command leaves, where it does not say more itself (every file the suite
#: writes is written whole or not at all, and the cache keeps what was measured).
INTERRUPTED = {"history": "results of the commits asv completed are kept"}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with signals_raise():
        return _run(args)


def _run(args) -> int:
    """The command, with every expected way it can end as one line and an exit status (ExitCode).
    With ``--json``, stdout is one JSON document: the command's, or ``{"error", "exit_status"}``
    where it ended with an expected failure (the one line on stderr all the same)."""
    as_json = getattr(args, "json", False)
    try:
        environ.resolve(args.command)  # the environment's paths, absolute and checked, before any work
        if not as_json:
            return args.func(args)
        with _for_people_on_stderr():
            status = args.func(args)
        for text, shown in _json_document:
            say(text, shown)
        return status
    except UserError as err:
        _error(str(err), as_json=as_json, status=err.exit_status)
        return err.exit_status
    except (Interrupted, KeyboardInterrupt) as err:
        stopped = Interrupted.by(err, INTERRUPTED.get(args.command,
                                                      "every file it wrote is whole; what it measured is in the cache"))
        _error(f"interrupted ({stopped.signal_name}): {stopped}", prefix="tvm-suite: ", as_json=as_json,
               status=stopped.exit_code)
        return stopped.exit_code
    except BrokenPipeError as err:  # standard output closed under a command that was still printing
        _stdout_lost(err, None)
        return ExitCode.NO_VERDICT
    except OSError as err:  # the environment: a full disk, a read-only directory, a file gone
        where = f": {err.filename}" if err.filename else ""
        _error(f"{err.strerror or err}{where}", as_json=as_json, status=ExitCode.NO_VERDICT)
        return ExitCode.NO_VERDICT


def _error(message: str, prefix: str = "tvm-suite: error: ", as_json: bool = False, status: int | None = None) -> None:
    try:
        print(f"{prefix}{message}", file=sys.stderr)
    except OSError:
        pass
    if as_json:  # stdout stays one JSON document
        say(json.dumps({"error": message, "exit_status": int(status)}, indent=1), status)


if __name__ == "__main__":
    sys.exit(main())
