"""Conversion of user data to validated numeric arrays (vocabulary layer).

Error messages name the parameter and say what to do. They never contain the offending
values, nor counts of records or of bad entries: under add-remove neighbours the number of
records is private, and a count of bad entries is a statistic of the data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense.errors import InputError

__all__ = ["FloatArray", "as_data", "as_indicator"]

FloatArray = NDArray[np.float64]


def _to_numpy(x: Any) -> NDArray[Any]:
    # DataFrame libraries expose to_numpy(); narwhals is not needed for a single column.
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        return np.asarray(x.to_numpy())
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, str | bytes) or not isinstance(x, Iterable):
        raise InputError(
            "The data must be a one-dimensional sequence of numbers (a list, a numpy array "
            f"or a DataFrame column). Got an object of type {type(x).__name__} instead."
        )
    items = x if isinstance(x, list | tuple) else list(x)
    try:
        # one conversion in C for the common case (numbers; booleans count as 0/1)
        fast = np.asarray(items, dtype=np.float64)
        if fast.ndim != 1 or np.isfinite(fast).all():
            return fast
    except (TypeError, ValueError, OverflowError):
        pass
    # something is not a finite number (None also converts to NaN): the entry-by-entry
    # path says what is wrong
    return np.asarray(items, dtype=object)


def _one_column(arr: NDArray[Any]) -> NDArray[Any]:
    """A one-column table (a DataFrame with one column) as its column."""
    if arr.ndim == 2 and arr.shape[1] == 1:
        return arr[:, 0]
    return arr


_YES: frozenset[str] = frozenset({"1", "1.0", "yes", "y", "true", "t"})
_NO: frozenset[str] = frozenset({"0", "0.0", "no", "n", "false", "f"})


def as_indicator(
    x: Any, *, name: str = "x", where: str = "dpsense", allow_empty: bool = True
) -> FloatArray:
    """0/1 values from numbers, booleans, or yes/no and true/false text (any case).

    For per-user 0/1 contributions such as a ratio's columns. Other text, and missing
    entries, are an :class:`InputError` that names neither values nor counts.
    """
    arr = _one_column(_to_numpy(x))
    if arr.ndim == 1 and (arr.dtype.kind in "USO"):
        out = np.empty(arr.shape[0], dtype=np.float64)
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bool | np.bool_):
                out[i] = float(v)
                continue
            if isinstance(v, int | float) and not isinstance(v, bool):
                out[i] = float(v)
                continue
            word = str(v).strip().lower() if isinstance(v, str) else None
            if word in _YES:
                out[i] = 1.0
            elif word in _NO:
                out[i] = 0.0
            else:
                raise InputError(
                    f"The '{name}' data of {where} must hold one indicator per user (zeros "
                    "and ones, true/false or yes/no), but some entries are something else "
                    "(other text, empty or missing). Recode or drop those entries."
                )
        arr = out
    return as_data(arr, name=name, where=where, allow_empty=allow_empty)


def as_data(
    x: Any, *, name: str = "x", where: str = "dpsense", allow_empty: bool = False
) -> FloatArray:
    """Return ``x`` as a one-dimensional float64 array of finite values.

    Lists and tuples are converted once, in C; booleans count as 0 and 1 (as in a numpy
    boolean array), numeric strings as their numbers.

    Raises
    ------
    InputError
        If ``x`` is not one-dimensional, holds non-numeric entries, NaN or infinity, or is
        empty (unless ``allow_empty``). The message gives neither values nor counts.
    """
    arr = _one_column(_to_numpy(x))
    if arr.ndim != 1:
        raise InputError(
            f"The '{name}' data of {where} must be one-dimensional (one column). "
            f"Got an array with {arr.ndim} dimensions; select a single column."
        )
    if arr.dtype.kind in "biuf":
        out = arr.astype(np.float64, copy=False)
    elif arr.dtype.kind == "O" or arr.dtype.kind in "USV":
        out = np.empty(arr.shape[0], dtype=np.float64)
        bad = False
        for i, v in enumerate(arr.tolist()):
            if v is None:
                bad = True
                break
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                bad = True
                break
        if bad:
            raise InputError(
                f"The '{name}' data of {where} must be numeric, but some entries are not "
                "numbers (text, empty or missing). Clean or drop those entries, "
                "or choose a numeric column."
            )
    else:
        raise InputError(
            f"The '{name}' data of {where} must be numeric. Got an array of dtype "
            f"{arr.dtype} instead."
        )
    if out.shape[0] == 0 and not allow_empty:
        raise InputError(
            f"The '{name}' data of {where} is empty; this computation needs at least one "
            "record (private releases accept empty data)."
        )
    if not np.isfinite(out).all():
        raise InputError(
            f"The '{name}' data of {where} contains NaN or infinite entries. "
            "Drop or impute them before computing anything private."
        )
    return out
