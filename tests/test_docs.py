"""The documentation does what it says: the extension guides' steps, followed in a copy of the
repository, give a model and a target the suite measures; the exit status table is the CLI's; the
site builds with every link and anchor resolved."""

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from suite import cli

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS = REPO_ROOT / "docs"

#: A step of a guide: an HTML comment saying what to do with the code block that follows it.
STEP = re.compile(r"<!-- (.+?) -->\n```\w*\n(.*?)```", re.S)


def guide_steps(page: str) -> list[tuple[str, str]]:
    """(instruction, code) for every marked code block of docs/<page>, in order."""
    return STEP.findall((DOCS / page).read_text())


def repository_copy(dest: Path) -> Path:
    """The files git would commit (tracked, and new ones it does not ignore), copied to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO_ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO_ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
        elif src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), dest / name)
    return dest


def follow(page: str, copy: Path) -> list[list[str]]:
    """Apply the edits of a guide to ``copy``; return the commands of its ``run`` steps."""
    commands = []
    for instruction, code in guide_steps(page):
        if instruction.startswith("append to: "):
            path = copy / instruction.removeprefix("append to: ")
            path.write_text(path.read_text() + "\n\n" + code)
        elif instruction.startswith("write: "):
            (copy / instruction.removeprefix("write: ")).write_text(code)
        elif instruction.startswith("in: "):
            target, how = instruction.removeprefix("in: ").split(", ", 1)
            path = copy / target
            text = path.read_text()
            verb, anchor = how.split(": ", 1)
            assert text.count(anchor) == 1, f"{page}: '{anchor}' is not once in {target}"
            if verb == "after":
                line_end = text.index("\n", text.index(anchor))
                text = text[:line_end + 1] + code + text[line_end + 1:]
            else:
                assert verb == "replace", instruction
                text = text.replace(anchor, code.rstrip("\n"))
            path.write_text(text)
        else:
            assert instruction == "run", f"{page}: unknown step '{instruction}'"
            commands += [line.split() for line in code.splitlines() if line.strip()]
    assert commands, f"{page} has no commands to run"
    return commands


def run_in_copy(copy: Path, command: list[str]) -> subprocess.CompletedProcess:
    """A guide's ``tvm-suite ...`` command run against the copy's code (not the installed suite)."""
    assert command[0] == "tvm-suite", command
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, "-m", "suite.cli", *command[1:]], cwd=copy, env=env,
                          capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("page", ["add-a-model.md", "add-a-target.md"])
def test_a_guide_followed_step_by_step_gives_what_it_promises(page, tmp_path):
    if page == "add-a-target.md" and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the guide's example target is x86-64 code")
    copy = repository_copy(tmp_path / "repo")
    for command in follow(page, copy):
        result = run_in_copy(copy, command)
        assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr
    if page == "add-a-model.md":
        listed = run_in_copy(copy, ["tvm-suite", "list", "--model", "tinynet"]).stdout
        assert "tinynet.conv2d_add_relu.32x32x3-k3s1-16" in listed
        assert "tinynet.matmul_add.32-10" in listed
        assert "verdict: READY" in result.stdout
    else:
        assert "llvm-generic" in result.stdout and "verdict: READY" in result.stdout


def test_the_guides_steps_apply_to_this_code(tmp_path):
    """Fast: every edit a guide makes still applies (its anchors are in the files, once)."""
    for page in ("add-a-model.md", "add-a-target.md"):
        copy = tmp_path / page
        for name in ("suite/core/models.py", "suite/targets/__init__.py"):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO_ROOT / name, copy / name)
        (copy / "suite/targets").mkdir(parents=True, exist_ok=True)
        follow(page, copy)
        compile((copy / "suite/targets/__init__.py").read_text(), "__init__.py", "exec")
        compile((copy / "suite/core/models.py").read_text(), "models.py", "exec")


def test_the_exit_status_page_is_the_cli_table():
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| (.+) \|$", (DOCS / "exit-codes.md").read_text(), re.M)
    expected = [(command, str(code), meaning) for command in cli.COMMANDS
                for code, meaning in cli.exit_codes(command)]
    assert rows == expected


def test_every_page_is_in_the_site_and_linked_from_the_readme():
    pages = {p.name for p in DOCS.glob("*.md")}
    nav = set(re.findall(r": (\S+\.md)$", (REPO_ROOT / "mkdocs.yml").read_text(), re.M))
    assert nav == pages
    readme_links = set(re.findall(r"\]\(docs/(\S+?\.md)[)#]", (REPO_ROOT / "README.md").read_text()))
    assert pages - {"index.md"} <= readme_links


def test_the_site_builds_strictly(tmp_path):
    """Every link and anchor resolves (mkdocs.yml's validation, strict)."""
    pytest.importorskip("mkdocs")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "add-a-model" / "index.html").is_file()
