"""The one way the suite runs git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from suite.errors import UserError

#: Commits the suite makes itself (the local versions repository) need an author.
IDENTITY = ["-c", "user.name=tvm-suite", "-c", "user.email=tvm-suite@localhost"]


class GitError(UserError):
    pass


def git(repo: Path, *args: str, check: bool = True, stdin: str | None = None, env: dict | None = None) -> str:
    """stdout of ``git -C repo ARGS`` (stripped); GitError with git's own message on failure, or
    "" with ``check=False``; ``env``: variables to add (commit dates).

    ``GIT_CONFIG_*`` variables are not passed on: they make asv's checkouts skip TVM's submodules
    (`tvm-suite history` hands them to asv's process, whose plugin also sets them), and they must
    not change what the suite reads when it runs there.
    """
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG_")}, **(env or {})}
    result = subprocess.run(["git", *IDENTITY, "-C", str(repo), *args], capture_output=True, text=True,
                            input=stdin, env=env)
    if result.returncode != 0:
        if not check:
            return ""
        message = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        shown = list(args)
        while shown[:1] == ["-c"]:  # name the command, not its configuration
            shown = shown[2:]
        raise GitError(f"git {' '.join(shown[:3])} failed in {repo}: {message[:300]}")
    return result.stdout.strip()


def is_repo(path: Path) -> bool:
    """A work tree or a bare repository."""
    path = Path(path)
    return path.is_dir() and ((path / ".git").exists() or (path / "HEAD").is_file())
