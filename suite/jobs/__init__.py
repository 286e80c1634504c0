"""The job libraries: the large work of a command, one module each, each with one entry point
``run(...)`` that its command module (:mod:`suite.commands`) calls, as asv's commands call
``Run.run``.

- :mod:`suite.jobs.run`: ``tvm-suite run``, the main job on the installed TVM;
- :mod:`suite.jobs.check`: ``tvm-suite check CANDIDATE``, a release candidate against a baseline.
"""
