"""asv's first install command in `tvm-suite history`'s environment: this suite, editable, from its
checkout, unless the environment has it so already.

    python CHECKOUT/suite/asv_plumbing/install_suite.py CHECKOUT [--log FILE]

asv runs the install commands for every commit (and once more to find the benchmarks), and its
uninstall command removes apache-tvm alone: the suite the first commit installed serves every later
one, and pip would build and install it again each time. A note in the environment says what was
installed: the checkout and its pyproject.toml (what an editable install takes from the checkout
beside the code it points to); another checkout, a changed pyproject.toml, or the suite gone from
the environment installs it again. ``--log``: what it did, appended to FILE too (the commit's install
log, beside install_tvm's).

Runs before the suite can be imported in the environment: by its path, the standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

#: The note of what was installed, in the environment (sys.prefix).
NOTE = "tvm-suite-installed.json"


def wanted(checkout: Path) -> dict:
    return {"checkout": str(checkout), "pyproject_sha256": hashlib.sha256((checkout / "pyproject.toml").read_bytes())
            .hexdigest()}


def installed(checkout: Path, note: Path) -> bool:
    """Whether the environment holds this checkout's suite as the note says it was installed."""
    try:
        said = json.loads(note.read_text())
        name = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]["name"]
        metadata.distribution(name)
    except (OSError, ValueError, KeyError, metadata.PackageNotFoundError):
        return False
    return said == wanted(checkout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="install_suite.py", description=__doc__.splitlines()[0])
    parser.add_argument("checkout")
    parser.add_argument("--log", help="also append what was done to this file")
    args = parser.parse_args(argv)
    checkout = Path(args.checkout).resolve()
    # The install log is asv's record of the commit: one that cannot take a line is said before pip runs.
    try:
        log = _open_log(args.log)
    except OSError as err:
        print(f"install_suite: cannot append to {args.log}: {err.strerror or err}", file=sys.stderr, flush=True)
        return 2
    note = Path(sys.prefix) / NOTE
    if installed(checkout, note):
        said = f"install_suite: installed from {checkout} already (editable): not again"
        status = 0
    else:
        note.unlink(missing_ok=True)
        status = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e",
                                 str(checkout)]).returncode
        if status == 0:
            tmp = note.with_name(f".{note.name}.tmp")
            tmp.write_text(json.dumps(wanted(checkout)))
            os.replace(tmp, note)
        said = f"install_suite: pip install -e {checkout}: exit {status}"
    print(said, flush=True)
    if log is not None:
        with log:
            log.write(said + "\n")
    return status


def _open_log(path: str | None):
    if not path:
        return None
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "a")

if __name__ == "__main__":
    sys.exit(main())
