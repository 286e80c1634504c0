"""asv's environment for the installed TVM, named by what it is, not where it lies (an asv plugin).

asv's own ``existing`` environment names itself, and files its results, after the interpreter's path
(``existing-py_home_me_src_suite_.venv_bin_python3``): two virtualenvs of one machine, or a
clone in another directory, make two series of the same TVM build. This environment is the same
thing (the running interpreter, nothing installed by asv) under the name ``tvm-suite-py<X.Y>``, so
every output directory and every checkout of a machine files the installed TVM's results under one
series. asv loads it from the ``plugins`` of the project's configuration (asv.conf.json, and the
one `tvm-suite run` writes); it is selected with ``--environment tvm-suite:PYTHON`` (``same``:
the interpreter running asv).
"""

from __future__ import annotations

import sys

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
