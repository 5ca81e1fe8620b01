"""Shared pieces of the mechanisms: validation of values and the result record."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense.errors import InputError, Param

__all__ = [
    "MechanismResult",
    "as_exact_values",
    "as_float_values",
    "as_int_values",
    "restore_shape",
]


@dataclass(frozen=True)
class MechanismResult:
    """What a mechanism released, and how.

    Attributes
    ----------
    value : float, int or numpy.ndarray
        The noisy value (same shape as the input; independent noise per coordinate).
    mechanism : str
        The mechanism's name.
    epsilon, delta : float
        The privacy guarantee (for a sensitivity-calibrated mechanism).
    scale : float
        The noise scale actually used (Laplace b, Gaussian sigma), after any rounding up.
    grid : float or None
        Outputs are multiples of this power of two (None for integer mechanisms).
    seeded : bool
        True when a reproducible, non-cryptographic generator produced the noise.
    rho : float or None
        The zero-concentrated DP parameter, where the mechanism has one.
    """

    value: Any
    mechanism: str
    epsilon: float
    delta: float
    scale: float
    grid: float | None
    seeded: bool
    rho: float | None = None


def as_float_values(value: Any, where: str) -> tuple[NDArray[np.float64], bool]:
    """Validate a scalar or array of finite numbers; return it flat and whether scalar."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            Param("value", of=where), " must be a number or an array of numbers."
        ) from None
    if arr.size == 0:
        raise InputError(f"The 'value' parameter of {where} is empty.")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"The 'value' parameter of {where} contains NaN or infinity.")
    return arr.reshape(-1), arr.ndim == 0


def as_exact_values(value: Any, where: str) -> tuple[list[Fraction], bool] | None:
    """Exact rational input: a :class:`~fractions.Fraction`, or a non-empty list, tuple or
    object array whose first element is one. Returns the values flat and whether scalar,
    or None for any other input (handled as doubles by :func:`as_float_values`).

    Exact values are rounded to a noise grid in exact arithmetic, so a value far from 0
    relative to its sensitivity loses nothing to a double before the noise is added.
    """
    if isinstance(value, Fraction):
        return [value], True
    if isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.dtype == object):
        flat = list(np.asarray(value, dtype=object).reshape(-1))
        if not flat or not isinstance(flat[0], Fraction):
            return None
        try:
            return [Fraction(v) for v in flat], False
        except (TypeError, ValueError, OverflowError):
            raise InputError(Param("value", of=where), " must hold finite numbers.") from None
    return None


def as_int_values(value: Any, where: str) -> tuple[NDArray[np.int64], bool]:
    """Validate integers (integer dtype, or integral floats); return flat and scalar flag."""
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise InputError(
                Param("value", of=where),
                " must hold integers (this mechanism is integers in, integers out).",
            )
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iub" or arr.size == 0:
        raise InputError(
            Param("value", of=where), " must be an integer or a non-empty array of integers."
        )
    return arr.astype(np.int64).reshape(-1), arr.ndim == 0


def restore_shape(flat: NDArray[Any], like: Any, scalar: bool) -> Any:
    """Give the output the input's shape (a Python scalar for scalar input)."""
    if scalar:
        return flat[0].item()
    return flat.reshape(np.shape(like))
