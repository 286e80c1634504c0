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
from mirrors: suite.history.source_build). :func:`setup`, which asv calls when it loads the plugin,
sets ``submodule.<name>.update = none`` for each of them in asv's environment (git's
``GIT_CONFIG_*`` variables), as `tvm-suite history` does for its own runs.
"""

from __future__ import annotations

import os
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
    """asv's plugin hook: keep asv's clones of TVM from fetching its submodules (see the module's
    docstring), where nobody (`tvm-suite history`) has said what to do with them already."""
    if "GIT_CONFIG_COUNT" in os.environ:
        return
    from suite import asvconf, git
    from suite.history import releases

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
