"""A TVM with a planted fault, for the fuzz tests: on PYTHONPATH, with TVM_SUITE_TEST_FAULT set, every
build of a function that has a parallel loop (the sampled schedules; the unscheduled function has
none) goes wrong, as a compiler bug would:

- ``internal-error``: TVM raises its InternalError (a failed check) building it;
- ``init-one``: each zero constant becomes one (a reduction that starts from 1: a wrong output);
- ``segfault``: the process dies of a segfault in every build, parallel loops or not.

Nothing happens without the variable; the tests set it for the processes they start."""

import os

FAULT = os.environ.get("TVM_SUITE_TEST_FAULT")

if FAULT:
    import re

    import tvm
    import tvm.script

    namespace = getattr(tvm, "tirx", None) or tvm.tir
    built_right = namespace.build

    def faulty_build(mod, *args, **kwargs):
        if FAULT == "segfault":
            import ctypes

            ctypes.string_at(0)  # reads address 0: SIGSEGV
        text = mod.script() if hasattr(mod, "script") else ""
        if "T.parallel(" in text:
            if FAULT == "internal-error":
                raise tvm.error.InternalError("Check failed: (planted) is false: a fault planted in this TVM's build")
            if FAULT == "init-one":
                mod = tvm.script.from_source(re.sub(r"T\.float(16|32)\(0(?:\.0*)?\)", r"T.float\1(1.0)", text))
        return built_right(mod, *args, **kwargs)

    namespace.build = faulty_build
