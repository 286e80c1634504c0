"""``tvm-suite tune``: MetaSchedule tuning of workloads, its records written to the user's records
directory (``--into-checkout``: the committed ones of this checkout)."""

from __future__ import annotations

import os
from pathlib import Path

from suite import cache, targets
from suite.commands.common_args import names, trials
from suite.core import workloads
from suite.core.combo import select_workloads
from suite.errors import ExitCode, Interrupted, UserError
from suite.progress import Progress

EXIT_CODES = [(ExitCode.OK, "every record written (or kept by --skip-existing)"),
              (ExitCode.NOT_READY, "a workload's search ended without a record (the others were tuned; one line names it)")]


def add_arguments(p) -> None:
    p.add_argument("--target", default="llvm", help=f"{', '.join(targets.names())} (default: llvm)")
    p.add_argument("--dtype", required=True, help=f"{', '.join(workloads.MEASURED_DTYPES)} (int8 on llvm, with the "
                   "CPU's dot-product intrinsic, VNNI where it has it, and on hexagon-v68-qf/-v73-qf, with vrmpy)")
    p.add_argument("--workloads", "--workload", dest="workloads", type=names,
                   help="comma-separated ids or model names (default: seed,resnet50)")
    p.add_argument("--trials", type=trials, default=64,
                   help="MetaSchedule trials per workload, 1 to 1,000,000 (default: %(default)s)")
    p.add_argument("--skip-existing", action="store_true",
                   help="keep workloads whose record was tuned by this target's measure")
    p.add_argument("--into-checkout", action="store_true",
                   help="write the committed records of this checkout (suite/tuning_records/) instead of yours "
                        "($TVM_SUITE_TUNING_RECORDS, else ~/.local/share/tvm-suite/tuning_records)")


def run(args) -> int:
    from suite.core import tuning, tuning_records
    from suite.reporting import thresholds

    target = targets.get(args.target)
    workloads.check_dtype(args.dtype, workloads.MEASURED_DTYPES)
    if reason := target.dtype_unavailable(args.dtype):
        raise UserError(f"{args.dtype} cannot be tuned on {target.name}: {reason}; targets that tune {args.dtype}: "
                        f"{', '.join(_tuning_targets(args.dtype))}")
    bound = thresholds.load().bound  # the rounding bound every candidate is checked against, read once
    if reason := target.unavailable():  # no GPU, tools missing: one line before any work
        raise UserError(f"{target.name} cannot be tuned here: {reason}")
    target.tuning_target()  # NotTunable (one line) before any work
    into, whose = _tune_destination(tuning_records, args.into_checkout)
    written = cache.ensure_dir(tuning_records.records_dir(target.name, args.dtype, into) / "traces",
                               "the records directory")
    print(f"records go to {written}/ ({whose})", flush=True)
    tuned, busy, ended = [], [], []
    chosen = select_workloads(args.workloads)
    shown = Progress("tune", len(chosen))  # done/total and time left, on stderr beside MetaSchedule's output
    for wid in chosen:
        shown.update(shown.done, wid)
        if args.skip_existing and (measure := tuning_records.existing_measure(
                target.name, args.dtype, wid, into if args.into_checkout else None)):
            if measure == target.tuning_measure:
                print(f"kept     {wid} (already tuned by {measure})")
                shown.step(wid)
                continue
            print(f"re-tune  {wid}: its record was tuned by {measure}, this target tunes by {target.tuning_measure}")
        try:
            tuning.tune(wid, args.dtype, target, args.trials, lam=bound.lam, limit=bound.max_fraction, root=into)
        except tuning_records.TuningInProgress as err:  # the others are still worth tuning; said at the end
            print(f"busy     {err}")
            busy.append(wid)
            shown.step(wid)
            continue
        except tuning.SearchEnded as err:  # one search's crash ends that workload, not the sweep
            print(f"failed   {err}", flush=True)
            ended.append(wid)
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
    if ended:
        raise tuning.SearchEnded(f"not tuned, their search ended without a record: {', '.join(ended)} (each one's output "
                        f"above says how); `--skip-existing` tunes only these again")
    return 0


def _tuning_targets(dtype: str) -> list[str]:
    """The targets that run ``dtype`` and can be tuned (compile-only ones cannot)."""
    return [name for name in targets.names() if not (t := targets.get(name)).dtype_unavailable(dtype)
            and t.mode is not targets.Mode.COMPILE_ONLY]


def _tune_destination(tuning_records, into_checkout: bool) -> tuple[Path, str]:
    """(the records directory `tune` writes, whose records they are, in words): the user's own by
    default, the committed ones of this checkout with ``--into-checkout``."""
    from suite.asv_plumbing import config as asvconf

    named = os.environ.get(tuning_records.RECORDS_ENV)
    if not into_checkout:
        if named:
            return tuning_records.user_records_root(), (f"{tuning_records.RECORDS_ENV}: the `tuned` order reads them "
                                                        "in place of the committed records")
        return tuning_records.user_records_root(), ("yours: the `tuned` order replays them in place of the committed "
                                                    f"ones in {tuning_records.RECORDS_DIR}; --into-checkout writes those")
    if asvconf.CHECKOUT is None:
        raise UserError(f"--into-checkout: this suite is installed, not run from a source checkout: "
                        f"{tuning_records.RECORDS_DIR} is no committed file (tune without it writes your own records)")
    if named:
        raise UserError(f"--into-checkout writes {tuning_records.RECORDS_DIR}, but {tuning_records.RECORDS_ENV}={named} "
                        "is read in its place: unset it, or tune without --into-checkout")
    return tuning_records.RECORDS_DIR, "the committed records of this checkout: review and commit them"
