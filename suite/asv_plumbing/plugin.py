"""The suite's asv plugin: an environment for the installed TVM, named by what it is, not where it
lies; and TVM's git submodules left alone when asv clones TVM.

asv's own ``existing`` environment names itself, and files its results, after the interpreter's path
(``existing-py_home_me_src_suite_.venv_bin_python3``): two virtualenvs of one machine, or a
clone in another directory, make two series of the same TVM build. This environment is the same
thing (the running interpreter, nothing installed by asv) under the name ``tvm-suite-py<X.Y>``, so
every output directory and every checkout of a machine files the installed TVM's results under one
series. asv loads it from the ``plugins`` of the project's configuration (asv.conf.json, and the
one `tvm-suite run` writes); it is selected with ``--environment tvm-suite:PYTHON`` (``same``:
the interpreter running asv).

asv clones the project for every environment it builds with ``git clone --recursive``: for TVM
that fetches submodules from GitHub (CUTLASS, OpenCL headers, ...), which fails without a network
and which a release's wheel never needs (a source build fetches the few a CPU build needs itself,
from mirrors: suite.asv_plumbing.source_build). :func:`setup`, which asv calls when it loads the plugin,
sets ``submodule.<name>.update = none`` for each of them in asv's environment (git's
``GIT_CONFIG_*`` variables), as `tvm-suite history` does for its own runs.

asv 0.6 runs no plugin hooks around its commands, so :func:`setup` also wraps a few of asv's own
functions (:func:`install_hooks`), for asv at the repository root as for the suite's own runs:

- ``asv publish``: its pages load jQuery, flot and bootstrap from CDNs, and show nothing without
  a network; after it, the libraries are served from ``html_dir/vendor/``
  (:func:`suite.asv_plumbing.dashboard.make_offline`: from ``TVM_SUITE_ASV_ASSETS``, the suite's cache,
  else the npm registry), and one line says so, or what is missing and how to get it;
- a ``repo`` that is a local path and no git repository (``./tvm`` not cloned, a dangling link):
  one line saying so (``tvm-suite: error: ...``, exit 2) where asv would try ``git clone --mirror``
  of it and end with a traceback; checked before ``asv publish`` removes its ``html_dir``;
- a commit name the repository does not have (``asv run --set-commit-hash NAME``, ``asv continuous
  A B``, ...): one line, exit 2, where asv ended with a traceback or its own words.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from asv import util
from asv.environment import EnvironmentUnavailable, ExistingEnvironment


class InstalledTVM(ExistingEnvironment):
    tool_name = "tvm-suite"

    def __init__(self, conf, executable, requirements, tagged_env_vars):
        if executable == "same":
            executable = sys.executable
        # The name is needed while asv's own __init__ runs: the interpreter's version first.
        try:
            self._version = util.check_output(
                [util.which(executable), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).strip()
        except (util.ProcessError, OSError):
            raise EnvironmentUnavailable(f"no Python interpreter {executable}") from None
        # asv offers this environment its requirement matrix; nothing is installed into it, so none apply.
        super().__init__(conf, executable, {}, tagged_env_vars)

    @property
    def name(self) -> str:
        return f"{self.tool_name}-py{self._version}"

    @property
    def python(self) -> str:
        return self._version


def setup() -> None:
    """asv's plugin hook: the suite's wrappers of asv's commands (:func:`install_hooks`); and
    asv's clones of TVM kept from fetching its submodules (see the module's docstring), where nobody
    (`tvm-suite history`) has said what to do with them already."""
    install_hooks()
    if "GIT_CONFIG_COUNT" in os.environ:
        return
    from suite import git
    from suite.asv_plumbing import config as asvconf, releases

    try:
        repo = Path(asvconf.read_conf(Path("asv.conf.json")).get("repo", ""))
    except Exception:  # noqa: BLE001 - asv names its configuration itself; without one here, nothing to do
        return
    if not git.is_repo(repo):
        return
    names = releases.submodule_names(repo, ["HEAD"])
    os.environ["GIT_CONFIG_COUNT"] = str(len(names))
    for index, name in enumerate(names):
        os.environ[f"GIT_CONFIG_KEY_{index}"] = f"submodule.{name}.update"
        os.environ[f"GIT_CONFIG_VALUE_{index}"] = "none"


# ----------------------------------------------------------------------------- asv's commands, wrapped

_HOOKED = "_tvm_suite_hooks"
#: A repository asv reaches over a network (asv's own patterns, and any URL): not checked here.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@)", re.I)


def install_hooks() -> None:
    """Wrap asv's ``get_repo``, every command's ``run_from_conf_args`` and ``Publish.run`` (see the
    module's docstring); once per process."""
    from asv import repo as asv_repo
    from asv.commands import Command
    from asv.commands.publish import Publish

    if getattr(Command, _HOOKED, False):
        return
    setattr(Command, _HOOKED, True)
    original_get_repo = asv_repo.get_repo

    def get_repo(conf):
        require_repo(conf)
        return original_get_repo(conf)

    asv_repo.get_repo = get_repo
    for name, module in list(sys.modules.items()):  # the commands imported it by name
        if name.startswith("asv.") and getattr(module, "get_repo", None) is original_get_repo:
            module.get_repo = get_repo
    for command in util.iter_subclasses(Command):
        if "run_from_conf_args" in vars(command):
            _name_unknown_commits(command)
    _name_unknown_ranges()
    publish = vars(Publish)["run"].__func__

    def run(cls, conf, *args, **kwargs):
        require_repo(conf)  # before asv removes the html_dir it would write
        status = publish(cls, conf, *args, **kwargs)
        offline(conf.html_dir)
        return status

    Publish.run = classmethod(run)


def require_repo(conf) -> None:
    """The one line (:func:`refuse`) where the configuration's ``repo`` is a local path that holds
    no git repository; nothing for a remote one (asv clones it)."""
    url = str(conf.repo)
    if _REMOTE.match(url):
        return
    path = Path(url)
    if path.is_dir() and ((path / ".git").exists() or (path / "objects").is_dir()):
        return
    shown = url if path.is_absolute() or url.startswith(".") else f"./{url}"
    if path.is_symlink() and not path.exists():
        what = f"{shown} is a link to {os.readlink(path)}, which does not exist"
    elif not path.exists():
        what = f"there is no {shown}"
    else:
        what = f"{shown} is not a git repository"
    refuse(f"{what}: asv measures the commits of the TVM clone its configuration names as repo; clone TVM "
           f"there (git clone https://github.com/apache/tvm {url}) or link a clone of yours "
           f"(ln -s ~/src/tvm {url}); see docs/asv.md")


def _name_unknown_commits(command) -> None:
    """Make ``command`` say an unknown commit name in one line (:func:`refuse`)."""
    from asv.repo import NoSuchNameError

    original = vars(command)["run_from_conf_args"].__func__

    def run_from_conf_args(cls, conf, args):
        try:
            return original(cls, conf, args)
        except NoSuchNameError as err:  # asv lets it out as a traceback (run --set-commit-hash)
            refuse(_no_commit(conf, str(err.args[0]) if err.args else str(err)))
        except util.UserError as err:  # asv's own words for it (continuous, profile)
            unknown = re.fullmatch(r"Unknown commit (.+)", str(err).strip())
            if unknown is None:
                raise
            refuse(_no_commit(conf, unknown.group(1)))

    command.run_from_conf_args = classmethod(run_from_conf_args)


def _name_unknown_ranges() -> None:
    """A range of commits git cannot read (``asv find A..B``, ``asv run A..B``): asv's NoSuchNameError
    (said in one line by the commands), where it let git's error out as a traceback."""
    import shlex

    from asv.plugins.git import Git
    from asv.repo import NoSuchNameError

    def get_hashes_from_range(self, range_spec):  # asv 0.6's, git's error kept to this one line
        args = ["rev-list", "--first-parent"]
        if range_spec != "":
            args += shlex.split(range_spec) + ["--"]
        try:
            output = self._run_git(args, valid_return_codes=(0, 1), dots=False, display_error=False)
        except util.ProcessError:
            raise NoSuchNameError(range_spec) from None
        return output.strip().split()

    Git.get_hashes_from_range = get_hashes_from_range


def _no_commit(conf, name: str) -> str:
    url = str(conf.repo)
    shown = url if _REMOTE.match(url) or Path(url).is_absolute() or url.startswith(".") else f"./{url}"
    what = (f"cannot read the range {name!r} (an end of it is no commit there)" if ".." in name
            else f"has no commit {name!r}")
    return (f"{shown} {what}: name a hash, branch or tag of that clone (a release tag as "
            f"refs/tags/vX.Y.Z; a clone made before the release: git -C {url} fetch --tags)")


def refuse(message: str) -> None:
    """End the asv command with the suite's one line on stderr and exit status 2 (bad input)."""
    from asv.console import log

    log.flush()
    sys.stdout.flush()
    sys.stderr.write(f"tvm-suite: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(2)


def offline(html_dir) -> None:
    """The pages asv published in ``html_dir``, made to work offline, said in one line."""
    from asv.console import log

    from suite.asv_plumbing import dashboard

    done = dashboard.make_offline(Path(html_dir))
    (log.info if done.ok else log.warning)(f"tvm-suite: {done.line()}")
