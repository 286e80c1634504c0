"""Verified histories built in memory, for tests of the gate and its rules (milliseconds each).

A :class:`suite.reporting.results.History` is plain typed data; this builder fills one the way
`results.load` would from a results directory, without asv, TVM or files: values per metric,
combination and commit, and each commit's side data (timing samples, whose tuning records
replayed, failure reasons, the build note).
"""

from __future__ import annotations

from pathlib import Path

from suite.core import runstore
from suite.reporting import results as res

A, B, C = "a" * 40, "b" * 40, "c" * 40
SEED = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "default")
TUNED = ("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "tuned")
QF_TUNED = ("resnet50.conv2d_add_relu.56x56x64-k1s1-64", "float16", "hexagon-v68-qf", "tuned")
MACHINE = "testbox"
#: Samples of one timing: five readings around 10 ms.
SAMPLES = (0.0100, 0.0101, 0.0099, 0.0102, 0.0098)


class Builder:
    def __init__(self, commits=(A, B), machine: str = MACHINE, tags: dict | None = None):
        self.commits = list(commits)
        self.machine = machine
        self.tags = tags or {}
        self.values: dict = {}
        self.side = {c: {"timings": {}, "records": {}, "failures": {}, "maps": {}, "build": None} for c in commits}
        self.remeasured: dict = {}

    def series(self, ids) -> res.Series:
        return res.Series(*ids, machine=self.machine)

    def value(self, metric: str, ids, commit: str, value) -> Builder:
        self.values.setdefault(metric, {}).setdefault(self.series(ids), {})[commit] = value
        return self

    def values_at(self, ids, commit: str, **values) -> Builder:
        for metric, value in values.items():
            self.value(metric, ids, commit, value)
        return self

    def accurate(self, ids, commit: str, ulp_mean: float = 10.0) -> Builder:
        """The accuracy values of an ordinary llvm fp16 result."""
        return self.values_at(ids, commit, ulp_mean=ulp_mean, ulp_p99=90.0, scaled_error=5.0, bound_fraction=0.03,
                              prob_bound_fraction=0.04, accumulation_length=148.0, nonfinite=0.0)

    def timing(self, ids, commit: str, samples=SAMPLES, tvm: str = "0.27.0.post1-x") -> Builder:
        """Timing samples of ``ids`` at ``commit``, and asv's latency (their median) with them."""
        kept = runstore.Timing(tuple(samples), f"/cache/{commit[:4]}/{'.'.join(ids)}/kernel.so", tvm)
        self.side[commit]["timings"][tuple(ids)] = kept
        return self.value("latency", ids, commit, kept.median)

    def records(self, ids, commit: str, target: str) -> Builder:
        self.side[commit]["records"][tuple(ids)] = target
        return self

    def failed(self, ids, commit: str, reason: str, metrics=("ulp_mean",)) -> Builder:
        self.side[commit]["failures"][tuple(ids)] = reason
        for metric in metrics:
            self.value(metric, ids, commit, None)
        return self

    def build(self, commit: str, installed_from: str = "wheel", version: str = "22") -> Builder:
        self.side[commit]["build"] = {"llvm": {"version": version, "use_llvm": "ON", "installed_from": installed_from}}
        return self

    def kept_remeasure(self, baseline: str, candidate: str, entries: list[dict]) -> Builder:
        self.remeasured[(baseline, candidate)] = entries
        return self

    def history(self) -> res.History:
        commits = tuple(res.Commit(h, 1_780_000_000_000 + i * 86_400_000, tuple(self.tags.get(h, ())))
                        for i, h in enumerate(self.commits))
        run_dir = Path("/nonexistent/run")
        side = {(c, self.machine): runstore.SideData(c, True, run_dir / "runs" / self.machine / c,
                                                     timings=s["timings"], records=s["records"],
                                                     failures=s["failures"], maps=s["maps"], build=s["build"])
                for c, s in self.side.items()}
        return res.History(run_dir / "results", commits, self.values, (self.machine,), (), "in memory", "", None,
                           side, self.remeasured)
