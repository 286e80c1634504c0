"""``tvm-suite fuzz``: schedules sampled from MetaSchedule's design space, each built and run in a
child process and judged by triage's verdict against the exact reference; findings kept with a
minimised trace and a report, a journal that a rerun continues, and planted bugs that measure the
oracle's recall (docs/fuzz.md)."""

#: The default --trace-timeout, seconds: a native build and run; on an emulated target (Hexagon),
#: a build (LLVM, the HVX rewrite, the link: hexagon_tune.BUILD_TIMEOUT_S, 300 s) and two emulated
#: runs (the kernel and its IEEE twin: hexagon_tune.RUN_TIMEOUT_S, 300 s each).
NATIVE_TIMEOUT_S, EMULATED_TIMEOUT_S = 300.0, 900.0
