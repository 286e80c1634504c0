"""``tvm-suite history``: asv over commits of a TVM clone (the library: :mod:`suite.history.commits`)."""

from __future__ import annotations

from suite.commands import common_args
from suite.commands.common_args import names
from suite.core.combo import Grid
from suite.errors import ExitCode, UserError

EXIT_CODES = [(ExitCode.OK, "every commit measured"), (ExitCode.NOT_READY, "a commit did not install, or asv failed")]
#: What an interrupted history leaves.
INTERRUPTED = "results of the commits asv completed are kept, sealed"


def add_arguments(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--releases", type=names,
                       help="comma-separated apache-tvm releases, e.g. 0.25.0,0.26.0 (their tags)")
    which.add_argument("--range", help="A..B: every commit after A up to B on B's first-parent line (each one a "
                                       "source build unless a release: hours each)")
    which.add_argument("--pack", type=common_args.path, metavar="DIR",
                       help="measure nothing: seal each commit's side data in DIR (a kept history or a run directory "
                            "that an older suite left as one file per kernel) into one file per commit, verified")
    common_args.grid(p, "default,tuned")
    p.add_argument("--full", action="store_true", help="asv's own timing repeats instead of the quick ones")
    common_args.machine(p)
    common_args.tvm_history(p, "reports/history", repo_required=False)  # --pack builds nothing
    p.add_argument("--keep", type=common_args.path, metavar="DIR",
                   help="then copy every commit measured and sealed, its results and side data less the difference "
                        "maps, into the kept history DIR (e.g. reports/tvm-main): what `report` and `check "
                        "--baseline-from` open with no build")


def run(args) -> int:
    from suite import outputs
    from suite.asv_plumbing import driver
    from suite.history import commits, keep

    if args.pack is not None:
        if args.keep is not None:
            raise UserError("--pack measures nothing: it takes no --keep (pack DIR, then keep into it)")
        packed = keep.pack(args.pack)
        print(packed.text(args.pack))
        return ExitCode.NO_VERDICT if packed.damaged else ExitCode.OK
    if args.tvm_repo is None:
        raise UserError("--tvm-repo is required to measure commits (a clone of apache/tvm)")
    common_args.check_history_outputs(args)
    if args.keep is not None:
        outputs.check_keep(args.keep, "--keep")
        keep.check_apart(args.out, args.keep, driver.machine_name(args.machine))  # before hours of builds
    found = commits.history_commits(args.tvm_repo, args.releases, args.range)
    grid = Grid.of(args.workloads, args.dtypes, args.targets, args.orders or ["default", "tuned"])
    summary = commits.run_history(args.tvm_repo, found, grid, quick=not args.full, out_dir=args.out,
                                  env_dir=args.env_dir, git_mirrors=args.git_mirrors, machine=args.machine)
    print(summary.text)
    if args.keep is not None:
        print(keep.keep(args.out, args.keep, driver.machine_name(args.machine)).text(args.keep))
    return summary.exit_status
