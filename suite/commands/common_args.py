"""Options and argument types more than one command takes (as asv's ``asv/commands/common_args.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from suite import outputs, targets
from suite.core import schedules, workloads

MIRRORS_HELP = ("mirrors of TVM's submodules for source builds, DIR/<owner>/<name> as on GitHub "
                "(default: $TVM_SUITE_GIT_MIRRORS; none: fetched from the network)")


def path(value: str) -> Path:
    """A path option, made absolute against the caller's working directory before anything runs
    (asv runs in the repository root and would resolve a relative one there)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty path")
    return Path(value).expanduser().absolute()


def names(value: str) -> list[str]:
    """A comma-separated list option; an empty list is an error, never "all"."""
    found = [item.strip() for item in value.split(",") if item.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"{value!r} names nothing (give at least one, comma-separated)")
    return found


def cluster_address(value: str) -> str:
    """A Dask scheduler's address; an empty one is an error, never "no cluster"."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"{value!r} names no Dask scheduler (give tcp://HOST:PORT)")
    return value.strip()


def commit_name(value: str) -> str:
    """A commit named by hash (prefix) or tag; an empty name is an error, never the newest commit."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"{value!r} names no commit (give a hash, a prefix of 4 or more, or a tag)")
    return value.strip()


def machine_name(value: str) -> str:
    """An asv machine name: it names a directory of the results."""
    if not value or value in (".", "..") or not all(c.isalnum() or c in "._-" for c in value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a machine name (letters, digits, '.', '_', '-')")
    return value


#: The most trials a tuning takes: MetaSchedule counts them in a C++ int32 (and a million trials of
#: seconds each is years of tuning).
MAX_TRIALS = 1_000_000


def positive_number(limit: float, unit: str):
    """A number above 0 and at most ``limit`` (NaN and inf refused), in ``unit``."""
    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number of {unit}") from None
        if not 0 < number <= limit:  # NaN fails as well
            raise argparse.ArgumentTypeError(f"{value} is not more than 0 and at most {limit:g} {unit}")
        return number
    return parse


def whole_number(low: int, high: int):
    """An argument type: a whole number from ``low`` to ``high`` (a bound of sense: more is a typo)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is not between {low:,} and {high:,}")
        return number
    return parse


trials = whole_number(1, MAX_TRIALS)


def combination(p, dtype="float32", workload_help=None) -> None:
    """Options naming one combination (measure, bisect): one value each."""
    p.add_argument("--workload", required=True, help=workload_help or "a workload id (tvm-suite list)")
    p.add_argument("--dtype", default=dtype, help=f"{', '.join(workloads.MEASURED_DTYPES)} (default: {dtype})")
    p.add_argument("--target", default="llvm", help=f"{', '.join(targets.names())} (default: llvm)")
    p.add_argument("--order", default="default", help=f"{', '.join(schedules.ORDERS)} (default: default)")


def grid(p, orders_default: str) -> None:
    """Options narrowing the benchmark grid (run, history, check): comma-separated lists."""
    p.add_argument("--workloads", type=names, help="comma-separated ids or model names (default: seed,resnet50)")
    p.add_argument("--dtypes", type=names, default=list(workloads.DTYPES),
                   help=f"comma-separated, of {', '.join(workloads.MEASURED_DTYPES)} "
                        f"(default: {','.join(workloads.DTYPES)})")
    p.add_argument("--orders", type=names, help=f"comma-separated loop orders (default: {orders_default})")
    p.add_argument("--targets", type=names, default=["llvm"],
                   help=f"comma-separated, of {', '.join(targets.names())} (default: llvm)")


def tvm_history(p, out_default: str, repo_required: bool = True) -> None:
    """Options of the commands that build TVM commits (history, bisect, check)."""
    p.add_argument("--tvm-repo", type=path, required=repo_required,
                   help="a clone of apache/tvm (a bare one will do)")
    p.add_argument("--out", type=path, default=out_default, help=f"results, logs, published HTML "
                                                                 f"(default: {out_default})")
    p.add_argument("--env-dir", type=path, help="where asv keeps its environments (default: .asv/env-history; "
                                                "about 0.6 GB)")
    p.add_argument("--git-mirrors", type=path, help=MIRRORS_HELP)


def check_history_outputs(args) -> None:
    """The output paths of :func:`tvm_history` apart from every history (:mod:`suite.outputs`)."""
    outputs.check_apart(args.out, "--out")
    if args.env_dir is not None:
        outputs.check_apart(args.env_dir, "--env-dir")


def machine(p) -> None:
    p.add_argument("--machine", type=machine_name, help="the machine asv files the results under, one series per "
                                                        "machine (default: the host name)")


def json_output(p, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of the table")
