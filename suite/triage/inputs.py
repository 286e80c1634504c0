"""The inputs a triage runs both programs on: drawn from fixed seeds, or as ``--inputs`` says.

``--inputs SPEC``: comma-separated items, each ``LO:HI`` (the range of every input) or
``NAME=LO:HI`` (one parameter's) or ``NAME=FILE.npy`` (one parameter's values). Floats are drawn
uniformly from [LO, HI), integers from the integers in [LO, HI); without a range, floats come
from [-1, 1) (mean zero, which the probabilistic rounding bound assumes: see
``suite.core.bounds``), signed integers from [-8, 8), unsigned ones from [0, 16). Each
parameter has its own generator, seeded by its name and position (crc32), so the same program
and spec always get the same inputs; values are rounded to the parameter's dtype, and the
reference evaluates those rounded values.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from suite.errors import UserError
from suite.triage import ir

DEFAULT_RANGES = {"f": (-1.0, 1.0), "i": (-8, 8), "u": (0, 16), "b": (0, 2)}


class BadInputs(UserError):
    """An ``--inputs`` spec that cannot be used (one line, naming the item)."""


@dataclass(frozen=True)
class Spec:
    default: tuple[float, float] | None
    ranges: dict          # name -> (lo, hi)
    files: dict           # name -> Path

    def describe(self, param: ir.Buf) -> str:
        if param.name in self.files:
            return f"{param.name} from {self.files[param.name]}"
        lo, hi = self.range_of(param)
        what = "uniform" if ir.kind_of(param.dtype) == "f" else "integers in"
        return f"{param.name} {what} [{_number(lo)}, {_number(hi)})"

    def range_of(self, param: ir.Buf) -> tuple:
        return self.ranges.get(param.name) or self.default or DEFAULT_RANGES[ir.kind_of(param.dtype)]


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def parse(text: str | None) -> Spec:
    """The ``--inputs`` spec (checked before any work: BadInputs names the item)."""
    default, ranges, files = None, {}, {}
    if text is None:
        return Spec(None, {}, {})
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise BadInputs(f"--inputs {text!r} says nothing (LO:HI, NAME=LO:HI or NAME=FILE.npy, comma-separated)")
    for item in items:
        name, _, value = item.rpartition("=")
        name = name.strip()
        if value.strip().endswith(".npy"):
            if not name:
                raise BadInputs(f"--inputs item {item!r}: a file needs the parameter it is for (NAME=FILE.npy)")
            path = Path(value.strip()).expanduser().absolute()
            if not path.is_file():
                raise BadInputs(f"--inputs item {item!r}: {path} is not a file")
            files[name] = path
            continue
        bounds = _range(item, value)
        if name:
            ranges[name] = bounds
        elif default is None:
            default = bounds
        else:
            raise BadInputs(f"--inputs gives two ranges for every input ({text!r})")
    return Spec(default, ranges, files)


def _range(item: str, value: str) -> tuple:
    parts = value.split(":")
    if len(parts) != 2:
        raise BadInputs(f"--inputs item {item!r} is not LO:HI, NAME=LO:HI or NAME=FILE.npy")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise BadInputs(f"--inputs item {item!r}: {value!r} is not two numbers LO:HI") from None
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
        raise BadInputs(f"--inputs item {item!r}: the range [{lo:g}, {hi:g}) is empty or not finite")
    as_ints = all(p.strip().lstrip("+-").isdigit() for p in parts)
    return (int(lo), int(hi)) if as_ints else (lo, hi)


def check(spec: Spec, params: list[ir.Buf]) -> None:
    """Every name the spec gives is an input of the program."""
    names = {p.name for p in params}
    unknown = sorted((set(spec.ranges) | set(spec.files)) - names)
    if unknown:
        raise BadInputs(f"--inputs names {', '.join(unknown)}, which the program does not read; its inputs: "
                        f"{', '.join(sorted(names)) or 'none'}")


def make(spec: Spec, params: list[ir.Buf]) -> dict[str, np.ndarray]:
    """The input arrays, by parameter name, in each parameter's dtype."""
    check(spec, params)
    arrays = {}
    for position, param in enumerate(params):
        if param.name in spec.files:
            arrays[param.name] = _load(spec.files[param.name], param)
            continue
        kind = ir.kind_of(param.dtype)
        rng = np.random.default_rng(zlib.crc32(f"{param.name}/{position}".encode()))
        lo, hi = spec.range_of(param)
        if kind == "f":
            _check_float_range(param, lo, hi)
            values = rng.uniform(lo, hi, size=param.shape)
        elif kind == "b":
            values = rng.integers(0, 2, size=param.shape) != 0
        else:
            lo, hi = int(np.ceil(lo)), int(np.ceil(hi))
            if hi <= lo:
                raise BadInputs(f"--inputs range for {param.name} holds no integer")
            info = np.iinfo(np.dtype(param.dtype))
            if lo < info.min or hi - 1 > info.max:
                raise BadInputs(f"--inputs range [{lo}, {hi}) does not fit {param.name}'s {param.dtype}")
            values = rng.integers(lo, hi, size=param.shape)
        arrays[param.name] = np.asarray(values).astype(numpy_dtype(param.dtype))
    return arrays


def _check_float_range(param: ir.Buf, lo: float, hi: float) -> None:
    """A range whose every draw the parameter's float dtype holds (numpy draws from one of width
    up to the largest float64)."""
    largest = float(np.finfo(numpy_dtype(param.dtype)).max)
    if max(abs(lo), abs(hi)) > largest:
        raise BadInputs(f"--inputs range [{lo:g}, {hi:g}) for {param.name} does not fit its {param.dtype} "
                        f"(largest finite value {largest:g}): its values would be inf")
    if not np.isfinite(float(hi) - float(lo)):
        raise BadInputs(f"--inputs range [{lo:g}, {hi:g}) for {param.name} is wider than the largest float64: "
                        "give a narrower one")


def recipe(spec: Spec, param: ir.Buf, position: int) -> str | None:
    """The numpy expression that draws one input as :func:`make` does (None for a file), for a
    reproducer script to make the same array without the suite."""
    if param.name in spec.files:
        return None
    seed = zlib.crc32(f"{param.name}/{position}".encode())
    kind = ir.kind_of(param.dtype)
    lo, hi = spec.range_of(param)
    if kind == "f":
        draw = f"np.random.default_rng({seed}).uniform({float(lo)!r}, {float(hi)!r}, size={tuple(param.shape)})"
    elif kind == "b":
        draw = f"(np.random.default_rng({seed}).integers(0, 2, size={tuple(param.shape)}) != 0)"
    else:
        draw = (f"np.random.default_rng({seed}).integers({int(np.ceil(lo))}, {int(np.ceil(hi))}, "
                f"size={tuple(param.shape)})")
    return f"{draw}.astype({param.dtype!r})"


#: numpy dtype kinds an input file may hold: bool, signed and unsigned integers, floats.
NUMERIC_KINDS = "biuf"


def _load(path: Path, param: ir.Buf) -> np.ndarray:
    """The values of one input from a .npy file: mapped, not read, until its shape and dtype are
    checked (a file of the wrong shape may be huge; strings, objects and records are no numbers)."""
    try:
        array = _open(path)
    except (OSError, ValueError) as err:
        raise BadInputs(f"--inputs {param.name}={path}: not a .npy array ({str(err).splitlines()[0]})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise BadInputs(f"--inputs {param.name}={path}: not a .npy array (an .npz archive of several)")
    if array.dtype.kind not in NUMERIC_KINDS:
        raise BadInputs(f"--inputs {param.name}={path}: its values are {array.dtype} ({_kind_words(array.dtype)}), "
                        f"not numbers; {param.name} is {param.dtype}")
    if tuple(array.shape) != tuple(param.shape):
        raise BadInputs(f"--inputs {param.name}={path}: shape {tuple(array.shape)}, the program's "
                        f"{param.name} is {tuple(param.shape)}")
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # a value the dtype cannot hold: refused below
            values = np.array(array, dtype=numpy_dtype(param.dtype))
        bad = _not_held(array, values)
    except (OSError, ValueError) as err:  # a file shorter than its header says
        raise BadInputs(f"--inputs {param.name}={path}: unreadable ({str(err).splitlines()[0]})") from None
    if bad.any():
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
        value = array[index].item()
        raise BadInputs(f"--inputs {param.name}={path}: {param.name}[{', '.join(map(str, index))}] = {value!r} "
                        f"{_why_not_held(value, values.dtype)} ({int(bad.sum()):,} of {bad.size:,} elements are "
                        f"not {param.dtype} values)")
    return values


def _not_held(source: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Where ``values`` (``source`` in the parameter's dtype) is not the file's value: an inf or nan
    in the file; a float that becomes inf; an integer out of range or a fraction, which would wrap or
    be cut; a bool that is neither 0 nor 1. Rounding to a float's precision is what the reference
    evaluates, and is kept."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(source) if source.dtype.kind == "f" else np.zeros(source.shape, dtype=bool)
        if values.dtype.kind == "f":
            return bad | ~np.isfinite(values)
        if values.dtype.kind == "b":
            return bad | ((source != 0) & (source != 1))
        info = np.iinfo(values.dtype)
        bad |= (source < info.min) | (source >= info.max + 1)  # max + 1 is exact in float64, max may not be
        if source.dtype.kind == "f":
            bad |= source != np.trunc(source)
        return bad


def _why_not_held(value, dtype: np.dtype) -> str:
    """Why one value of an input file is not a value of ``dtype``, in words (see :func:`_not_held`)."""
    if isinstance(value, float) and not np.isfinite(value):
        return "is not a finite number: an inf or nan input has no exact value to judge against"
    if dtype.kind == "f":
        return f"does not fit {dtype} (largest finite value {float(np.finfo(dtype).max):g}): it would be inf"
    if dtype.kind == "b":
        return "is neither 0 nor 1, the values of bool"
    if value != int(value):
        return f"is not a whole number, and {dtype} holds whole numbers only"
    info = np.iinfo(dtype)
    return f"does not fit {dtype} ([{info.min}, {info.max}]): it would wrap around"


def _open(path: Path):
    """The array of a .npy file, memory-mapped; read whole where numpy cannot map it (an empty
    array) and the file is small."""
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:
        if path.stat().st_size > SMALL_FILE:
            raise
        return np.load(path, allow_pickle=False)


#: A .npy file read whole where it cannot be mapped (bytes).
SMALL_FILE = 1 << 20


def _kind_words(dtype: np.dtype) -> str:
    return {"U": "strings", "S": "byte strings", "O": "Python objects", "V": "records", "c": "complex numbers",
            "M": "dates", "m": "time spans"}.get(dtype.kind, dtype.kind)


#: The dtypes triage holds and evaluates (numpy's, and ml_dtypes' bfloat16); ml_dtypes' others
#: (int4, float8_e4m3...) numpy would take too, and nothing here evaluates them.
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64")


def numpy_dtype(dtype: str) -> np.dtype:
    if dtype in DTYPES:
        try:
            return np.dtype(dtype)
        except TypeError:
            pass
    raise UserError(f"triage does not take {dtype} values; it takes {', '.join(DTYPES)}")


def check_dtypes(params: list[ir.Buf], where: str) -> None:
    """Every parameter's dtype is one triage takes (a UserError naming the first that is not, in
    the program ``where``)."""
    for param in params:
        try:
            numpy_dtype(param.dtype)
        except UserError as err:
            raise UserError(f"{where}: {param.name} is {param.dtype}: {err}") from None
