"""A tuning candidate's output judged against the float64 reference before it is measured
(:class:`OutputCheck`, run in MetaSchedule's runner; triage's confined search uses it too)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from suite.core import bounds

def _output_check(make_reference):
    """``check(output) -> problem | None`` for runners that see outputs: wrong when not finite or
    off the float64 reference (``make_reference()``, evaluated on first use) by more than 10% of
    max|ref| anywhere, far beyond any rounding, qfloat's included: a candidate that computes
    something else."""
    found = []

    def check(output) -> str | None:
        if not found:
            found.append(np.asarray(make_reference(), dtype=np.float64))
        ref = found[0]
        scale = float(np.max(np.abs(ref))) or 1.0
        values = np.asarray(output, dtype=np.float64)
        if values.shape != ref.shape:
            return f"output shape {values.shape}, expected {ref.shape}"
        if not np.all(np.isfinite(values)):
            return f"{int(np.sum(~np.isfinite(values)))} non-finite outputs"
        worst = float(np.max(np.abs(values - ref)))
        if worst > 0.1 * scale:
            return f"wrong output: max |out - float64| = {worst:.4g}, over 0.1 x max|ref| = {scale:.4g}"
        return None

    return check


class OutputCheck:
    """A candidate's output judged against the float64 reference, picklable (MetaSchedule runs it
    in its runner's worker process): ``check(output)`` is None, or the problem, which the runner
    raises as that candidate's failure. Each judgement is appended to ``checked.jsonl`` in the
    check's directory, so the tuning process can count the checked and the refused.

    On IEEE targets (llvm, cuda) the rule is ``tvm-suite triage``'s CHANGED: an element beyond the
    rounding bound of any summation order (``suite.core.bounds.Bound``: ``limit`` x gamma~_K(lam) * m,
    ``lam`` and ``limit`` the numbers of ``reports/thresholds.toml`` [bound], which the command loaded
    and passes; without them, the file's defaults: lambda 9.4, limit 1). On the qfloat targets (``gross``),
    whose arithmetic is not IEEE's, the bound does not apply, and the rule stays the one the
    Hexagon runner has (:func:`_output_check`: not finite, or off by 10% of max|ref|)."""

    def __init__(self, directory: str, k: int, dtype: str, gross: bool, lam: float, limit: float):
        self.directory, self.k, self.dtype, self.gross = directory, k, dtype, gross
        self.lam, self.limit = lam, limit

    @classmethod
    def of(cls, reference_value, magnitude, k: int, dtype: str, gross: bool = False,
           lam: float = bounds.DEFAULT_LAMBDA, limit: float = 1.0) -> "OutputCheck":
        directory = tempfile.mkdtemp(prefix="tvm-suite-check-")
        floats = magnitude is not None  # an integer output has no bound: it must match exactly
        np.save(Path(directory) / "reference.npy", np.asarray(reference_value, dtype=np.float64 if floats else None),
                allow_pickle=False)
        if floats:
            np.save(Path(directory) / "magnitude.npy", np.asarray(magnitude, dtype=np.float64), allow_pickle=False)
        return cls(directory, int(k), dtype, gross, float(lam), float(limit))

    def _arrays(self):
        found = _CHECK_ARRAYS.get(self.directory)
        if found is None:
            where = Path(self.directory)
            magnitude = where / "magnitude.npy"
            found = _CHECK_ARRAYS[self.directory] = (
                np.load(where / "reference.npy", allow_pickle=False),
                np.load(magnitude, allow_pickle=False) if magnitude.exists() else None)
        return found

    def __call__(self, output) -> str | None:
        ref, magnitude = self._arrays()
        problem = _output_check(lambda: ref)(output) if self.gross else self._beyond(np.asarray(output), ref, magnitude)
        with open(Path(self.directory) / "checked.jsonl", "a") as log:
            log.write(json.dumps({"problem": problem}) + "\n")
        return problem

    def _beyond(self, output, ref, magnitude) -> str | None:
        if output.shape != ref.shape:
            return f"output shape {output.shape}, expected {ref.shape}"
        if magnitude is None:
            wrong = output != ref
            if not wrong.any():
                return None
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrong)), ref.shape))
            return (f"CHANGED: output{list(index)} = {output[index].item()}, exact {ref[index].item()} "
                    f"({int(wrong.sum()):,} of {ref.size:,} integer elements differ)")
        bound = bounds.Bound(bounds.Expected(ref, magnitude, self.k, "output", self.dtype), self.lam, self.limit)
        beyond = bound.beyond(output)
        if not beyond.any():
            return None
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(beyond)), ref.shape))
        return (f"CHANGED: output{list(index)} = {float(output[index]):.6g}, exact {float(ref[index]):.6g}, "
                f"beyond the rounding bound {bound.of(index):.4g} of any summation order "
                f"({int(beyond.sum()):,} of {ref.size:,} elements)")

    def _checked(self) -> list:
        try:
            text = (Path(self.directory) / "checked.jsonl").read_text()
        except OSError:
            return []
        return [json.loads(line)["problem"] for line in text.splitlines() if line.strip()]

    def _refusals(self) -> list[str]:
        return [problem for problem in self._checked() if problem]

    @property
    def checked(self) -> int:
        """How many outputs were checked (candidates whose parameters are not the workload's, a
        rewritten layout, run on random inputs unchecked)."""
        return len(self._checked())

    @property
    def refused(self) -> int:
        return len(self._refusals())

    @property
    def first_refusal(self) -> str | None:
        found = self._refusals()
        return found[0] if found else None

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


#: Reference arrays of the checks this process ran, by directory (a runner worker checks many candidates).
_CHECK_ARRAYS: dict = {}
