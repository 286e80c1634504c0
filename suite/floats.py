"""The floating-point formats the suite measures: float32, float16 and bfloat16.

numpy has no bfloat16. Its format (8 exponent bits like float32, 7 stored mantissa bits) is
written here, so that ULPs and rounding bounds need no extra package; its arrays are ml_dtypes'
``bfloat16`` (a dependency of TVM: measuring bfloat16 needs TVM anyway), which rounds to nearest,
ties to even, as TVM's bfloat16 casts do (docs/bfloat16.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BFLOAT16 = "bfloat16"


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: ``nmant`` stored mantissa bits (precision nmant + 1),
    ``minexp`` the exponent of its least normal number, ``bits`` its width."""

    nmant: int
    minexp: int
    bits: int

    @property
    def unit_roundoff(self) -> float:
        """u = 2**-(nmant + 1), the unit roundoff of round-to-nearest."""
        return 2.0 ** -(self.nmant + 1)


#: bfloat16: float32's exponent range, 8 bits of precision (u = 2**-8).
_BFLOAT16 = FloatFormat(nmant=7, minexp=-126, bits=16)


def float_format(dtype) -> FloatFormat:
    """The format of ``dtype`` (a name or a numpy dtype): float16, float32, float64 or bfloat16."""
    if (dtype if isinstance(dtype, str) else np.dtype(dtype).name) == BFLOAT16:
        return _BFLOAT16
    info = np.finfo(dtype)
    return FloatFormat(nmant=int(info.nmant), minexp=int(info.minexp), bits=int(info.bits))


def bfloat16_type():
    """ml_dtypes' bfloat16 scalar type (installed with TVM)."""
    import ml_dtypes  # only bfloat16 arrays need it

    return ml_dtypes.bfloat16


def rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` rounded to ``dtype`` (to nearest, ties to even), as an array of that dtype."""
    return values.astype(bfloat16_type() if dtype == BFLOAT16 else dtype)


def as_saved(array: np.ndarray, dtype: str) -> np.ndarray:
    """An array of ``dtype`` read back from an .npy file: np.save keeps a bfloat16 array as raw
    two-byte records (``|V2``), which are viewed as bfloat16 again."""
    if dtype == BFLOAT16 and array.dtype.kind == "V" and array.dtype.itemsize == 2:
        return array.view(bfloat16_type())
    return array
