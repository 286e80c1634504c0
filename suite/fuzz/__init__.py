"""``tvm-suite fuzz``: schedules sampled from MetaSchedule's design space, each built and run in a
child process and judged by triage's verdict against the exact reference; findings kept with a
minimised trace and a report, a journal that a rerun continues, and planted bugs that measure the
oracle's recall (docs/fuzz.md)."""
