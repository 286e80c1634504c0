"""Verified histories built in memory, for tests of the gate and its rules (milliseconds each).

A :class:`suite.reporting.results.History` is plain typed data; this builder fills one the way
`results.load` would from a results directory, without asv, TVM or files: values per metric,
combination and commit, and each commit's side data (timing samples, whose tuning records
replayed, failure reasons, the build note). :meth:`Builder.write` files the same history on disk
as `tvm-suite run` would (asv's results, and each commit's side data, sealed), so that the
commands themselves can read it, in milliseconds too, without asv running or TVM compiling.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

from suite import tracked
from suite.core import run_bundle, run_place, runstore
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
        self.side = {c: {"timings": {}, "records": {}, "failures": {}, "maps": {}, "code": {}, "build": None}
                     for c in commits}
        self.remeasured: dict = {}
        self.without_side: set[str] = set()

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

    def code(self, ids, commit: str, digest: str) -> Builder:
        """The code identity of ``ids`` at ``commit`` (a sha256: what its kernel executes)."""
        self.side[commit]["code"][tuple(ids)] = digest
        return self

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

    def unkept(self, *commits: str) -> Builder:
        """Those commits have asv's results only, without the side data of a run (plain `asv run`,
        or a results/ copied without its runs/): what asv does not keep is not there."""
        self.without_side.update(commits)
        return self

    def _values_at(self, commit: str, as_loaded: bool = False) -> dict:
        """Metric -> {series: value} of ``commit``; ``as_loaded``: as a loaded history holds it
        (without side data, only what asv keeps)."""
        return {metric: {s: per_commit[commit] for s, per_commit in per_series.items() if commit in per_commit}
                for metric, per_series in self.values.items()
                if not as_loaded or commit not in self.without_side or tracked.get(metric).in_asv}

    def history(self) -> res.History:
        commits = tuple(res.Commit(h, 1_780_000_000_000 + i * 86_400_000, tuple(self.tags.get(h, ())))
                        for i, h in enumerate(self.commits))
        run_dir = Path("/nonexistent/run")
        side = {(c, self.machine): runstore.SideData(c, True, run_place.Place(run_dir, self.machine, c).bundle,
                                                     timings=s["timings"], records=s["records"],
                                                     failures=s["failures"], maps=s["maps"], code=s.get("code", {}),
                                                     build=s["build"])
                if c not in self.without_side else runstore.SideData(c, False, run_place.Place(run_dir, self.machine, c).bundle)
                for c, s in self.side.items()}
        values: dict = {}
        for commit in self.commits:
            for metric, per_series in self._values_at(commit, as_loaded=True).items():
                for series, value in per_series.items():
                    values.setdefault(metric, {}).setdefault(series, {})[commit] = value
        return res.History(run_dir / "results", commits, values, (self.machine,), (), "in memory", "", None,
                           side, self.remeasured)

    def write(self, run_dir: Path) -> Path:
        """File this history in ``run_dir`` as `tvm-suite run` does: asv's results of each commit
        (``results/<machine>/``: the metrics asv keeps; null for a failed benchmark, NaN for a
        combination left out) and, but for commits marked :meth:`unkept`, its side data
        (``runs/<machine>/<commit>.zip``: every value each benchmark class reported, timing samples,
        records, failure reasons, build note), sealed. Returns the results directory."""
        results = Path(run_dir) / "results"
        machine_dir = results / self.machine
        machine_dir.mkdir(parents=True, exist_ok=True)
        (machine_dir / "machine.json").write_text(json.dumps(
            {"machine": self.machine, "os": "Linux", "arch": "x86_64", "cpu": "test", "num_cpu": "2",
             "ram": "1000", "version": 1}))
        for i, commit in enumerate(self.commits):
            by_metric = self._values_at(commit)
            entries = {}
            for metric, per_series in by_metric.items():
                if not per_series or not tracked.get(metric).in_asv:
                    continue
                params = [list(dict.fromkeys(s.ids[k] for s in per_series)) for k in range(4)]
                at = {tuple(s.ids): v for s, v in per_series.items()}
                entries[tracked.get(metric).benchmark] = [
                    [at.get(combo, math.nan) for combo in itertools.product(*params)],
                    [[repr(p) for p in names] for names in params]]
            (machine_dir / f"{commit[:8]}-tvm-suite-py3.11.json").write_text(json.dumps({
                "commit_hash": commit, "env_name": "tvm-suite-py3.11", "date": 1_780_000_000_000 + i * 86_400_000,
                "params": {"machine": self.machine, "python": "3.11"}, "python": "3.11", "requirements": {},
                "env_vars": {}, "result_columns": res._ASV_COLUMNS, "results": entries, "durations": {},
                "version": 2}))
            if commit not in self.without_side:
                self._write_side(run_place.Place(Path(run_dir), self.machine, commit), by_metric)
        return results

    def _write_side(self, place: run_place.Place, by_metric: dict) -> None:
        kept = self.side[place.commit]
        reported: dict = {}
        for metric, per_series in by_metric.items():
            of = tracked.get(metric)
            for series, value in per_series.items():
                if value is not None:  # a failed benchmark class reports nothing
                    reported.setdefault((series.ids, f"{of.module}.{of.cls}"), {})[metric] = value
        files = {run_place.values_relative(cls, ids): json.dumps(found) for (ids, cls), found in reported.items()}
        files.update({run_place.relative("timings", ids): json.dumps(t.to_json()) for ids, t in kept["timings"].items()})
        files.update({run_place.relative("records", ids): text for ids, text in kept["records"].items()})
        files.update({run_place.relative("failures", ids): text for ids, text in kept["failures"].items()})
        files.update({run_place.relative("code", ids): text for ids, text in kept.get("code", {}).items()})
        if kept["build"] is not None:
            files[run_place.BUILD] = json.dumps(kept["build"])
        for relative, text in files.items():
            place.file(relative).parent.mkdir(parents=True, exist_ok=True)
            place.file(relative).write_text(text)
        place.dir.mkdir(parents=True, exist_ok=True)
        run_bundle.seal(place)
