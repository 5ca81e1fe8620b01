"""In-memory data (numpy, pandas, Polars, Arrow, mappings of columns) as DuckDB scans it,
and undeclared columns as the text of each value (:func:`as_text`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpsense.errors import InputError

__all__ = ["as_text", "in_memory"]


def in_memory(data: Any, needed: Sequence[str] | None = None) -> tuple[Any, str]:
    """(object DuckDB can scan, a label) for in-memory data; arrays get a 'value' column."""
    module = type(data).__module__.split(".")[0]
    if module == "polars":
        if type(data).__name__ == "LazyFrame":
            names = data.collect_schema().names()
            keep = [c for c in (needed or names) if c in names]
            # only the used columns are computed; a missing one is reported by name later
            return data.select(keep or names).collect(), "the Polars LazyFrame"
        if type(data).__name__ == "Series":
            return data.to_frame(data.name or "value"), "the Polars Series"
        return data, "the Polars DataFrame"
    if module == "pandas":
        if type(data).__name__ == "Series":
            return data.to_frame(data.name if data.name is not None else "value"), (
                "the pandas Series"
            )
        return data, "the pandas DataFrame"
    if module == "pyarrow":
        import pyarrow as pa

        if isinstance(data, pa.Array | pa.ChunkedArray):
            return pa.table({"value": data}), "the Arrow array"
        return data, "the Arrow table"
    if isinstance(data, Mapping):
        columns = {str(k): np.asarray(v) for k, v in data.items()}
        lengths = {v.shape[0] if v.ndim else -1 for v in columns.values()}
        if len(lengths) > 1 or -1 in lengths:
            raise InputError(
                "A mapping of columns must hold one-dimensional sequences of equal length."
            )
        return _numpy_frame(columns), "the mapping of columns"
    if isinstance(data, np.ndarray | list | tuple):
        arr = np.asarray(data)
        if arr.ndim != 1:
            raise InputError(
                "Array data must be one-dimensional (one column). For a table pass a "
                "DataFrame, a mapping of columns or a file path."
            )
        return _numpy_frame({"value": arr}), "the array"
    raise InputError(
        "The data must be a numpy array, list, pandas/Polars DataFrame or Series, Arrow "
        "table, DuckDB relation, CSV/Parquet path or PySpark DataFrame. Got an object of "
        f"type {type(data).__name__} instead."
    )


def _numpy_frame(columns: dict[str, np.ndarray]) -> Any:
    """Numpy columns as something DuckDB scans: object columns become text or numbers."""
    out: dict[str, np.ndarray] = {}
    for name, arr in columns.items():
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                arr = np.array([None if v is None else str(v) for v in arr], dtype=object)
        elif arr.dtype.kind == "b":
            arr = arr.astype(np.int64)
        out[name] = arr
    return out


def as_text(data: Any, columns: Sequence[str]) -> Any:
    """``data`` with each of ``columns`` whose type the container does not declare (a pandas
    ``object`` column, a column given as a Python list or a numpy ``object`` array in a
    mapping) as the text of each
    value alone (``str(v)``; a missing value stays missing).

    DuckDB reads such a column by a type it infers from all the values: ``[1, 1.0]`` as
    DOUBLE (one value, "1.0"), the same with an added ``"abc"`` as VARCHAR ("1", "1.0",
    "abc"). A column that is to be read as text (a privacy unit, a group, a join key whose
    type no one declared) must be the text of each value alone, or one person's value would
    decide whether two others are one unit, one group or one key (docs/entry_points.md,
    "Types"). Other containers declare their types and are returned as they are."""
    if not columns:
        return data
    module = type(data).__module__.split(".")[0]
    if module == "pandas" and type(data).__name__ == "DataFrame":
        names = [str(c) for c in data.columns]
        todo = [c for c in columns if names.count(c) == 1 and data[c].dtype == object]
        if not todo:
            return data
        import pandas as pd

        return data.assign(
            **{c: data[c].map(lambda v: None if _missing(v, pd) else str(v)) for c in todo}
        )
    if isinstance(data, Mapping):
        out = dict(data)
        for key, values in data.items():
            undeclared = isinstance(values, list | tuple) or (
                isinstance(values, np.ndarray) and values.dtype.kind == "O"
            )  # a numpy object array declares no type either
            if str(key) in columns and undeclared:
                texts = [None if _missing(v, None) else str(v) for v in values]
                # a numpy text array (object only with missing values, which numpy's
                # float conversion then refuses): read as text, never parsed as numbers
                out[key] = np.array(texts, dtype=object if None in texts else str)
        return out
    return data


def _missing(value: Any, pd: Any) -> bool:
    """True for None, NaN and pandas' NA/NaT: a missing value, not a text."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    return pd is not None and pd.api.types.is_scalar(value) and bool(pd.isna(value))
