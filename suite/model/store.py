"""What `tvm-suite model` measured, kept in the suite's cache so that an interrupted run loses
nothing it finished and a rerun runs nothing it has.

Kept, each a verified cache entry (:func:`suite.cache.store_entry`: files and their manifest
published with one rename; one that is damaged is computed again, said in one line):

- ``model-weights``: a model's calibrated weights (deterministic, and their calibration is several
  float64 runs of the model);
- ``model-input``: one input of one setting (model x dtype x target x order): its logits on the
  target, the IEEE twin's logits on a target with one, and the seconds the target took;
- ``model-attribution``: one input's attribution of one setting (the squared errors of each
  placement, each call's local error, the logits of each call's placement alone): the target
  runs it took are not run again;
- ``model-float64``: one input's float64 logits in one dtype, so that an input every setting has
  kept needs no float64 run either.

A setting over N inputs is its first N ``model-input`` entries (image i is the same whatever N):
a run of 8 inputs after one of 4 runs only the last 4. Every key holds what determines the value:
the TVM build and the suite's measuring code through each kernel's measurement key
(:attr:`suite.core.combo.Combo.key`, the one the measurement cache uses), the model's calls, the
dtype, the target, the order, the input's index and :data:`RECIPE` with the meaning of the code
that makes the weights and images.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from suite import cache, floats
from suite.core import workloads
from suite.model import weights as model_weights

#: The version of the weights and images recipe (docs/model.md): bump it when what they are changes
#: in a way the code's meaning does not show (a data file, a convention).
RECIPE = 1
#: The suite's code that determines the weights, the images, the float64 chain and the metrics'
#: raw material (besides each kernel's measurement key), by its path under ``suite/``.
_CODE = ("model/weights.py", "model/calls.py", "model/accuracy.py", "model/settings.py", "model/chain.py",
         "model/scoring.py", "model/store.py", "model/int8.py", "core/reference.py")


def _code() -> dict:
    suite = Path(__file__).resolve().parents[1]
    return {name: cache.source_digest(suite / name) for name in _CODE}


def recipe_key(plan) -> dict:
    """What the weights and images of ``plan``'s model are made from."""
    return {"recipe": RECIPE, "model": plan.model, "code": _code(),
            "calls": cache.digest([c.summary() for c in plan.calls]),
            "shapes": [list(plan.image_shape), [list(s) for s in plan.param_shapes]]}


def say(line: str) -> None:
    print(f"tvm-suite: note: {line}", file=sys.stderr, flush=True)


def _load(where: Path, names, what: str) -> dict[str, Path] | None:
    """The verified files of the entry ``where``; None when absent, and when damaged (a manifest
    that does not vouch for its files) after one line saying it is computed again."""
    found = cache.load_entry(where, names)
    if found is None and (where / cache.MANIFEST).exists():
        damaged(where, what)
    return found


def damaged(where: Path, what: str) -> None:
    say(f"a damaged cache entry of {what} ({where}) is not used: computed again")


# ----------------------------------------------------------------------------- weights


def weights_entry(plan) -> Path:
    return cache.entry("model-weights", plan.model, recipe_key(plan))


def weights(plan) -> list[np.ndarray]:
    """The model's calibrated weights (float64), from the cache or calibrated and kept."""
    where = weights_entry(plan)
    found = _load(where, ("weights.npz",), f"{plan.model}'s weights")
    if found:
        params = _read_weights(found["weights.npz"], plan)
        if params is not None:
            return params
        damaged(where, f"{plan.model}'s weights")
    params = model_weights.weights(plan)
    cache.store_entry(where, {"weights.npz": lambda tmp: write_npz(tmp, {f"p{k}": p for k, p in enumerate(params)})})
    return params


def write_npz(tmp: str, arrays: dict) -> None:
    """``arrays`` by name into the .npz file at ``tmp`` (a name that may lack the suffix)."""
    with open(tmp, "wb") as f:  # a file object: np.savez would add .npz to a name without it
        np.savez(f, **arrays)


def _read_weights(path: Path, plan) -> list[np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            params = [data[f"p{k}"] for k in range(len(plan.param_shapes))]
    except (OSError, ValueError, KeyError):
        return None
    if [tuple(p.shape) for p in params] != list(plan.param_shapes) or any(p.dtype != np.float64 for p in params):
        return None
    return params


# ----------------------------------------------------------------------------- per input


@dataclass(frozen=True)
class InputRun:
    """One input's run of one setting: its logits on the target, the IEEE twin's (None where it did
    not run), the seconds each took, what an emulated target executed (its counts by name, or None),
    and in int8 each call's output elements unlike the integer pipeline's (else None)."""

    logits: np.ndarray
    twin: np.ndarray | None
    target_s: float
    twin_s: float
    counts: dict | None
    differing: tuple[int, ...] | None = None


@dataclass(frozen=True)
class InputShares:
    """One input's attribution sums (:func:`suite.model.chain.attribute_one`): per call, the squared
    logits error with only it on the target (``only``), with all but it (``all_but``), its squared
    local error and that error's elements; the squared logits error of every local error added
    (``injected``); the logits of each call's "only" placement (calls x classes); the logits' elements."""

    only: np.ndarray
    all_but: np.ndarray
    local: np.ndarray
    local_elements: np.ndarray
    injected: np.float64
    only_logits: np.ndarray
    elements: np.int64

    def arrays(self) -> dict[str, np.ndarray]:
        """The sums by name, as kept (``sums.npz``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class InputStore:
    """The entries of one setting's inputs (``setting_key``: what determines its kernels)."""

    def __init__(self, plan, ids: tuple[str, str, str], setting_key: dict, classes: int):
        self.plan, self.ids, self.classes = plan, ids, classes
        self.key = {"recipe": recipe_key(plan), "setting": list(ids), "kernels": setting_key}

    def where(self, kind: str, index: int) -> Path:
        """The entry of input ``index`` of kind ``model-input`` or ``model-attribution``."""
        return cache.entry(kind, f"{'.'.join((self.plan.model, *self.ids))}.{index}", {**self.key, "input": index})

    def _what(self, index: int) -> str:
        return f"{' '.join((self.plan.model, *self.ids))} input {index}"

    def load_run(self, index: int) -> InputRun | None:
        """The kept run of input ``index``, or None."""
        where = self.where("model-input", index)
        found = _load(where, ("logits.npy", "run.json"), self._what(index))
        if not found:
            return None
        logits, run = cache.read_array(found["logits.npy"]), cache.read_json(found["run.json"])
        if logits is not None:  # bfloat16 logits are kept as raw two-byte records
            logits = floats.as_saved(logits, self.ids[0])
        twin = None
        if isinstance(run, dict) and run.get("twin"):
            kept = cache.load_entry(where, ("twin.npy",))
            twin = cache.read_array(kept["twin.npy"]) if kept else None
            if twin is None or twin.shape != (1, self.classes):
                damaged(where, self._what(index))
                return None
        if (logits is None or logits.shape != (1, self.classes) or not isinstance(run, dict)
                or not all(isinstance(run.get(k), (int, float)) for k in ("target_s", "twin_s"))
                or not isinstance(run.get("counts"), (dict, type(None)))
                or not _differing_ok(run.get("differing"), len(self.plan.calls), self.ids[0])):
            damaged(where, self._what(index))
            return None
        differing = run.get("differing")
        return InputRun(logits, twin, float(run["target_s"]), float(run["twin_s"]), run["counts"],
                        None if differing is None else tuple(differing))

    def store_run(self, index: int, kept: InputRun) -> None:
        run = {"target_s": kept.target_s, "twin_s": kept.twin_s, "counts": kept.counts, "twin": kept.twin is not None,
               "differing": None if kept.differing is None else list(kept.differing)}
        files = {"logits.npy": lambda tmp: np.save(tmp, kept.logits, allow_pickle=False),
                 "run.json": lambda tmp: Path(tmp).write_text(json.dumps(run))}
        if kept.twin is not None:
            files["twin.npy"] = lambda tmp: np.save(tmp, kept.twin, allow_pickle=False)
        cache.store_entry(self.where("model-input", index), files)

    def load_attribution(self, index: int, calls: int) -> tuple[InputShares, float] | None:
        """One input's kept attribution sums and the seconds they took, or None."""
        where = self.where("model-attribution", index)
        found = _load(where, ("sums.npz", "run.json"), f"the attribution of {self._what(index)}")
        if not found:
            return None
        run = cache.read_json(found["run.json"])
        try:
            with np.load(found["sums.npz"], allow_pickle=False) as data:
                sums = {name: data[name] for name in ATTRIBUTION_ARRAYS}
        except (OSError, ValueError, KeyError):
            sums = None
        if (sums is None or any(sums[n].shape != (calls,) for n in ATTRIBUTION_ARRAYS[:4])
                or sums["only_logits"].shape != (calls, self.classes)
                or not isinstance(run, dict) or not isinstance(run.get("seconds"), (int, float))):
            damaged(where, f"the attribution of {self._what(index)}")
            return None
        return InputShares(**sums), float(run["seconds"])

    def store_attribution(self, index: int, sums: InputShares, seconds: float) -> None:
        cache.store_entry(self.where("model-attribution", index),
                          {"sums.npz": lambda tmp: write_npz(tmp, sums.arrays()),
                           "run.json": lambda tmp: Path(tmp).write_text(json.dumps({"seconds": seconds}))})


def _differing_ok(differing, calls: int, dtype: str) -> bool:
    """An int8 run keeps a count per call (whole numbers); a float run none."""
    if dtype not in workloads.INTEGER_DTYPES:
        return differing is None
    return (isinstance(differing, list) and len(differing) == calls
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in differing))


#: One input's attribution sums (:class:`InputShares`), by the names ``sums.npz`` keeps them under:
#: per call (only, all_but, local, local_elements), then the totals, then the logits of each call's
#: "only" placement (calls x classes).
ATTRIBUTION_ARRAYS = ("only", "all_but", "local", "local_elements", "injected", "elements", "only_logits")


class Float64Store:
    """The float64 logits of each input in one dtype."""

    def __init__(self, plan, dtype: str, classes: int):
        self.plan, self.dtype, self.classes = plan, dtype, classes
        self.key = {"recipe": recipe_key(plan), "dtype": dtype}

    def where(self, index: int) -> Path:
        return cache.entry("model-float64", f"{self.plan.model}.{self.dtype}.{index}", {**self.key, "input": index})

    def load(self, index: int) -> tuple[np.ndarray, float] | None:
        where = self.where(index)
        what = f"{self.plan.model}'s float64 logits in {self.dtype}, input {index}"
        found = _load(where, ("logits.npy", "run.json"), what)
        if not found:
            return None
        logits, run = cache.read_array(found["logits.npy"]), cache.read_json(found["run.json"])
        if (logits is None or logits.shape != (1, self.classes) or logits.dtype != np.float64
                or not isinstance(run, dict) or not isinstance(run.get("seconds"), (int, float))):
            damaged(where, what)
            return None
        return logits, float(run["seconds"])

    def store(self, index: int, logits: np.ndarray, seconds: float) -> None:
        cache.store_entry(self.where(index), {
            "logits.npy": lambda tmp: np.save(tmp, logits, allow_pickle=False),
            "run.json": lambda tmp: Path(tmp).write_text(json.dumps({"seconds": seconds}))})
