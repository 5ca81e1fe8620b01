"""Conversion of user data to validated numeric arrays (vocabulary layer).

Data may hold ``inf`` and ``-inf``: they are values like any other, which every bounded
statistic clips to its public bounds (docs/tables.md §6.1). NaN and missing entries
(``None``, a pandas or Arrow null) are missing values, handled by the caller's ``nulls=``
policy or refused; text is refused.

Error messages name the parameter and say what to do. They never contain the offending
values, nor counts of records or of bad entries: under add-remove neighbours the number of
records is private, and a count of bad entries is a statistic of the data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense.errors import InputError, missing_values

__all__ = ["F64", "I64", "U64", "FloatArray", "as_data", "as_indicator"]

# The array types of the numerics, defined once.
F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
FloatArray = F64


def _to_numpy(x: Any) -> NDArray[Any]:
    # DataFrame libraries expose to_numpy(); narwhals is not needed for a single column.
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        if type(x).__module__.split(".")[0] == "pyarrow":
            # an Arrow array with nulls refuses the default zero-copy conversion; a copy
            # reads its nulls as NaN (missing values, as in every other format)
            return np.asarray(x.to_numpy(zero_copy_only=False))
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
        # one conversion in C for the common case (numbers, None as NaN: a missing value;
        # booleans count as 0/1)
        return np.asarray(items, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        pass
    # something is not a number: the entry-by-entry path says what is wrong
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
                raise _not_indicators(name, where)
        arr = out
    values = as_data(arr, name=name, where=where, allow_empty=allow_empty, nulls="keep")
    if not np.isin(values, (0.0, 1.0)).all():  # NaN, other numbers
        raise _not_indicators(name, where)
    return values


def _not_indicators(name: str, where: str) -> InputError:
    """The one message of entries that are not 0/1 indicators, whatever they are."""
    return InputError(
        f"The '{name}' data of {where} must hold one indicator per user (zeros and ones, "
        "true/false or yes/no), but some entries are something else (other numbers or "
        "text, empty or missing). Recode or drop those entries."
    )


def _as_floats(arr: np.ndarray, name: str, where: str) -> FloatArray:
    """A one-dimensional array as float64 (None as NaN, numeric strings as their
    numbers); an InputError naming no value for anything else."""
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64, copy=False)
    if not (arr.dtype.kind == "O" or arr.dtype.kind in "USV"):
        raise InputError(
            f"The '{name}' data of {where} must be numeric. Got an array of dtype "
            f"{arr.dtype} instead."
        )
    out = np.empty(arr.shape[0], dtype=np.float64)
    for i, v in enumerate(arr.tolist()):
        if v is None or type(v).__name__ == "NAType":
            # a missing value (None, pandas' NA), as in a numeric column and in a table
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise InputError(
                f"The '{name}' data of {where} must be numeric, but some entries are not "
                "numbers (text, empty cells or other objects). Clean or drop those entries, "
                "or choose a numeric column."
            ) from None
    return out


def as_data(
    x: Any,
    *,
    name: str = "x",
    where: str = "dpsense",
    allow_empty: bool = False,
    nulls: str | None = None,
    infinite: bool = True,
) -> FloatArray:
    """Return ``x`` as a one-dimensional float64 array of numbers (``±inf`` included).

    Lists and tuples are converted once, in C; booleans count as 0 and 1 (as in a numpy
    boolean array), numeric strings as their numbers, ``None`` as a missing value.

    Parameters
    ----------
    nulls : {"error", "drop", "keep"} or None
        What to do with missing values (NaN, ``None``, pandas/Arrow nulls): "drop" drops
        them, "error" refuses them with a message that says to pass ``nulls='drop'``,
        "keep" keeps them as NaN (a count of records, which uses no value), and None (for
        callers without a ``nulls`` parameter) refuses them with a message that says to
        drop or impute them.
    infinite : bool
        Whether ``inf`` and ``-inf`` are accepted (data: yes, every bounded statistic clips
        them; a public set of values such as a universe: no).

    Raises
    ------
    InputError
        If ``x`` is not one-dimensional, holds non-numeric entries, missing values (unless
        ``nulls="drop"``), infinities (unless ``infinite``), or is empty (unless
        ``allow_empty``; checked after dropping). The message gives neither values nor
        counts.
    """
    arr = _one_column(_to_numpy(x))
    if arr.ndim != 1:
        raise InputError(
            f"The '{name}' data of {where} must be one-dimensional (one column). "
            f"Got an array with {arr.ndim} dimensions; select a single column."
        )
    out = _as_floats(arr, name, where)
    missing = np.isnan(out)
    if nulls != "keep" and missing.any():
        if nulls == "drop":
            out = out[~missing]
        else:
            raise missing_values(f"The '{name}' data of {where}")
    if not infinite and np.isinf(out).any():
        raise InputError(
            f"The '{name}' of {where} contains infinite entries; it must hold finite "
            "numbers. Remove them."
        )
    if out.shape[0] == 0 and not allow_empty:
        raise InputError(
            f"The '{name}' data of {where} is empty; this computation needs at least one "
            "record (private releases accept empty data)."
        )
    return out
