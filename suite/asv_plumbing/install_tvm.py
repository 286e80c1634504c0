"""asv's install command: put the TVM of one commit into the current (asv) environment.

    python -m suite.asv_plumbing.install_tvm --commit HASH --checkout DIR [--release-map FILE] [--build-root DIR]

A commit that is a tagged apache-tvm release installs that release's wheel with the ffi of
its own time (``suite.releases.RELEASES``); any other commit is built from source with TVM's
own pyproject, its CMake tree kept outside asv's checkout (asv wipes that with ``git clean``).
Every failure ends with one line ``install_tvm: <commit>: <reason>`` on stderr and exit 1:
asv then records the commit's benchmarks as failed, keeps that output in its log, and goes on.
Runs before TVM is installed, so it must not import TVM (nor anything that does).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from suite import cache
from suite.asv_plumbing import releases, source_build

#: Imports TVM, builds and runs a tiny kernel: a release with the wrong ffi fails here.
SMOKE = """
import tvm, numpy as np
from tvm import te
a = te.placeholder((4,), name="a"); b = te.compute((4,), lambda i: a[i] + 1.0, name="b")
ns = getattr(tvm, "tirx", None) or tvm.tir
f = (getattr(ns, "build", None) or tvm.build)(tvm.IRModule({"main": te.create_prim_func([a, b])}), target="llvm")
dev = tvm.cpu(0)
make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
empty = getattr(tvm.runtime, "empty", None) or tvm.nd.empty
x = make(np.arange(4, dtype="float32"), dev); y = empty((4,), "float32", dev)
f["main"](x, y)
assert (y.numpy() == np.arange(4) + 1).all()
print("tvm", tvm.__version__, "ok")
"""


class InstallFailed(Exception):
    pass


#: Where this install's output is also kept (``--log-dir``): asv shows it only on failure.
_LOG: list = []


def say(text: str, stream=None) -> None:
    print(text, file=stream or sys.stdout, flush=True)
    for handle in _LOG:
        handle.write(text + "\n")
        handle.flush()


def _run(command: list[str], env=None) -> None:
    say("$ " + " ".join(command))
    started = time.perf_counter()
    result = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    say(result.stdout[-20000:].rstrip())
    say(f"  ({time.perf_counter() - started:.1f} s, exit {result.returncode})")
    if result.returncode != 0:
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        raise InstallFailed(f"{Path(command[0]).name} {' '.join(command[1:4])}... exit {result.returncode}: "
                            f"{(errors or lines or ['no output'])[-1].strip()[:300]}")


def release_of(commit: str, checkout: Path, release_map: Path | None) -> releases.Release | None:
    if release_map is not None and release_map.exists():
        version = json.loads(release_map.read_text()).get(commit)
        if version:
            return releases.release(version)
    if checkout.exists():
        return releases.release_for_commit(checkout, commit)
    return None


def install_release(rel: releases.Release) -> None:
    # asv's uninstall command removed the previous commit's apache-tvm; the ffi pin replaces
    # whatever ffi the environment holds.
    _run([sys.executable, "-m", "pip", "install", *rel.requirements()])


def build_from_source(commit: str, checkout: Path, build_root: Path, mirrors: Path | None) -> dict:
    """Build and install the checkout's TVM; what it was built with (kept as <commit>.build.json)."""
    if not (checkout / "pyproject.toml").exists():
        raise InstallFailed(f"no pyproject.toml in the checkout {checkout}: TVM's Python build needs one")
    try:
        llvm = source_build.find_llvm()
        # asv's checkout skips the submodules (GIT_CONFIG_* set by `tvm-suite history`, which suite.git drops).
        source_build.fetch_submodules(checkout, mirrors, say)
    except source_build.BuildFailed as err:
        raise InstallFailed(str(err)) from None
    build_root.mkdir(parents=True, exist_ok=True)
    ccache = shutil.which("ccache")
    say(f"source build of {commit[:12]}: LLVM {llvm.version} ({llvm.config}), build tree {build_root}, "
        f"ccache {ccache or 'not found'}")
    env = {**os.environ, **(source_build.ccache_environment(checkout, build_root) if ccache else {})}
    if ccache:
        subprocess.run([ccache, "-z"], capture_output=True, env=env)
    started = time.perf_counter()
    commands = source_build.build_commands(checkout, build_root, llvm, sys.executable, ccache)
    for command in commands:
        _run(command, env=env)
    return {"kind": "source", "llvm_version": llvm.version, "llvm_config": llvm.config,
            "build_command": " ".join(commands[2]), "build_s": round(time.perf_counter() - started, 1),
            "ccache": source_build.ccache_stats(ccache), "git_mirrors": str(mirrors) if mirrors else None}


def smoke_test() -> None:
    result = subprocess.run([sys.executable, "-c", SMOKE], capture_output=True, text=True)
    say((result.stdout + result.stderr[-4000:]).rstrip())
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise InstallFailed(f"installed TVM does not work: {(lines or ['no output'])[-1][:300]}")


def note_build(path: Path, built: dict) -> None:
    """Note how the commit was installed. asv installs a run's first commit again to find the
    benchmarks (ccache makes it seconds): the first note, the build that was measured, stays, and
    each later install is listed under ``reinstalls``."""
    try:
        first = json.loads(path.read_text()) if path.is_file() else None
    except (ValueError, UnicodeDecodeError):
        first = None  # not a note of install_tvm (it writes atomically): this install's note replaces it
    if isinstance(first, dict):
        built = {**first, "reinstalls": [*first.get("reinstalls", []), built]}
    cache.write_json(path, built)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suite.install_tvm", description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True)
    parser.add_argument("--checkout", required=True, help="asv's checkout of the commit ({build_dir})")
    parser.add_argument("--release-map", help="JSON {commit: apache-tvm version} written by tvm-suite history")
    parser.add_argument("--log-dir", help="also write this install's output to <log-dir>/<commit>.log")
    parser.add_argument("--git-mirrors", help="mirrors of TVM's submodules, DIR/<owner>/<name> "
                                              f"(default: ${source_build.MIRRORS_ENV}; none: the network)")
    parser.add_argument("--build-root", help="where source builds keep their CMake trees "
                                             "(default: <env dir>-tvm-build)")
    args = parser.parse_args(argv)
    checkout = Path(args.checkout)
    env_dir = os.environ.get("ASV_ENV_DIR", str(Path(sys.prefix)))
    build_root = Path(args.build_root) / Path(env_dir).name if args.build_root else Path(env_dir + "-tvm-build")
    started = time.perf_counter()
    if args.log_dir:
        Path(args.log_dir).mkdir(parents=True, exist_ok=True)
        _LOG.append((Path(args.log_dir) / f"{args.commit}.log").open("a"))
    try:
        rel = release_of(args.commit, checkout, Path(args.release_map) if args.release_map else None)
        if rel is not None:
            say(f"{args.commit[:12]} is apache-tvm {rel.version}: installing the wheel with "
                f"apache-tvm-ffi {rel.ffi}")
            install_release(rel)
            built = {"kind": "wheel", "release": rel.version, "ffi": rel.ffi}
        else:
            say(f"{args.commit[:12]} is no tagged release: building it from source")
            built = build_from_source(args.commit, checkout, build_root,
                                      source_build.mirrors_dir(args.git_mirrors))
        smoke_test()
        if args.log_dir:
            note_build(Path(args.log_dir) / f"{args.commit}.build.json", built)
    except (InstallFailed, releases.UserError) as err:
        say(f"install_tvm: {args.commit[:12]}: {err}", sys.stderr)
        return 1
    say(f"install_tvm: {args.commit[:12]} installed in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
