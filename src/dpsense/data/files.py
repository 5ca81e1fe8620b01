"""Read one numeric column from a file or an in-memory table.

CSV and Parquet files (and ``"-"``, CSV on standard input) are opened as a release opens a
table (:func:`dpsense.data.source.open_table`, DuckDB imported on first use), then the
column is taken from it: a file reads the same, with the same messages, whichever path
asks. In-memory tables (a mapping of column names to sequences, a pandas or Polars
DataFrame, an Arrow table, a DuckDB relation) are opened the same way. One-dimensional
data (a numpy array, a list, a Series) is converted as a bare release converts it
(:func:`dpsense._arrays.as_data`), and so are other DataFrame-like objects.

Every error is an :class:`~dpsense.errors.InputError` with one sentence that names the
file and the column and says what to do. It never contains values, nor counts of rows or
of bad rows: under add-remove neighbours the number of records is private. A file with a
header but no data rows is read as an empty column (an error there would reveal that the
data are empty).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpsense._arrays import FloatArray, as_data, as_indicator
from dpsense.data.source import open_table, unreadable
from dpsense.data.sql_build import column as sql_column
from dpsense.data.sql_build import describe, duckdb_sql, select, table
from dpsense.errors import Assign, InputError, Param, missing_column, missing_values, not_numbers

__all__ = ["load_column", "load_indicator"]

_MAX_NAMES_SHOWN = 40


def load_column(
    source: Any, column: str | None = None, *, allow_empty: bool = True, nulls: str = "error"
) -> FloatArray:
    """Return one column of ``source`` as a validated one-dimensional float array.

    Parameters
    ----------
    source : path, array-like or table
        A path (``str`` or :class:`os.PathLike`) to a CSV file (optionally ``.gz``
        compressed; the delimiter may be ``,``, ``;``, tab or ``|``) or a Parquet file
        (``.parquet``, needs ``duckdb``); a numpy array or a list of numbers; a mapping
        from column names to sequences of equal length (such as
        :func:`dpsense.datasets.load_census`); a pandas/Polars DataFrame (or Polars
        LazyFrame), a pyarrow Table or a DuckDB relation, opened as a release opens a
        table; or a pandas/Polars Series, a pyarrow Array. ``"-"`` is CSV on standard
        input.
    column : str, optional
        The column to read. It may be omitted only when the source has a single column
        (or is already one-dimensional).
    allow_empty : bool, default True
        Return an empty array for a column without rows (a CSV file with only a header).
        Private releases need this: under add-remove the empty dataset is a neighbour of
        every one-row dataset. Pass False for non-private diagnostics that need data
        (checked after missing values are dropped).
    nulls : {"error", "drop"}, default "error"
        Missing values (empty cells, nulls, NaN): refused, or their rows dropped.

    Returns
    -------
    numpy.ndarray
        ``float64`` values, ``inf`` and ``-inf`` included (a release clips them to its
        bounds); none when the column has no rows.

    Raises
    ------
    InputError
        If the file is missing, unreadable or has no header row, the column does not
        exist (the message lists the available column names), entries are not numbers or
        are missing (NaN; the message says what is wrong, never which values or how
        many), or the column has no rows and ``allow_empty`` is False.

    Examples
    --------
    >>> load_column([3, 1, 2])
    array([3., 1., 2.])
    >>> load_column({"age": [30, 41], "name": ["a", "b"]}, "age")
    array([30., 41.])
    """
    _check_column_and_nulls(column, nulls)
    values, where = _load_any(source, column, nulls)
    if values.shape[0] == 0 and not allow_empty:
        raise InputError(
            f"the column of {where} has no data rows; this computation needs at least one."
        )
    return values


def _check_column_and_nulls(column: Any, nulls: str) -> None:
    """An InputError unless ``column`` is None or a name and ``nulls`` is known."""
    if column is not None and not isinstance(column, str):
        raise InputError(
            Param("column", of="load_column"),
            f" must be a column name (str). Got an object of type {type(column).__name__} instead.",
        )
    if nulls not in ("error", "drop"):
        raise InputError(
            Param("nulls", of="load_column"), f" must be 'error' or 'drop'. Got {nulls!r} instead."
        )


def _load_any(source: Any, column: str | None, nulls: str) -> tuple[FloatArray, str]:
    """The column of a file, a table or an object, and the name its messages use."""
    if isinstance(source, str | os.PathLike):
        where = _where(os.fspath(source))
        return _load_table(os.fspath(source), column, where, nulls=nulls), where
    if _opened_as_table(source):
        return _load_table(source, column, nulls=nulls), "load_column"
    return _load_object(source, column, nulls), "load_column"


def load_indicator(
    source: Any, column: str | None = None, *, argument: str = "column"
) -> FloatArray:
    """One column of per-user 0/1 values: numbers, booleans, or yes/no, true/false text.

    ``source`` as for :func:`load_column`. Used for the columns of a ratio; ``argument``
    is the caller's name for ``column`` in messages (the command line's ``numerator``).
    """
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        return _load_table(path, column, _where(path), indicator=True, argument=argument)
    if _opened_as_table(source):
        return _load_table(source, column, indicator=True, argument=argument)
    names = _column_names(source)
    if names is None:
        return as_indicator(source, name=column or "x", where="load_indicator")
    index = _select_index(names, column, f"the {type(source).__name__}", argument)
    values = _get_column(source, names, index)
    return as_indicator(values, name=names[index], where="load_indicator")


# ------------------------------------------------------------------------------- files


def _format_names(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_MAX_NAMES_SHOWN])
    if len(names) > _MAX_NAMES_SHOWN:
        shown += f", ... ({len(names) - _MAX_NAMES_SHOWN} more)"
    return shown


def _select_index(
    names: list[str], column: str | None, where: str, argument: str = "column"
) -> int:
    """Position of ``column`` among ``names`` (exact match first, then trimmed/case-folded);
    ``argument`` is the caller's parameter that names it."""
    if column is None:
        if len(names) == 1:
            return 0
        raise InputError(
            f"{where[:1].upper()}{where[1:]} has {len(names)} columns; name the one to use: "
            "pass one of "
            f"{_format_names(names)} as ",
            Assign(argument),
        )
    if column in names:
        return names.index(column)
    folded = [n.strip().casefold() for n in names]
    key = column.strip().casefold()
    if folded.count(key) == 1:
        return folded.index(key)
    raise missing_column(column, where, names, argument)


def _where(path: str) -> str:
    """The data named as a release names an opened file: "the file 'survey.csv'"."""
    return "standard input" if path == "-" else f"the file {Path(path).name!r}"


def _opened_as_table(source: Any) -> bool:
    """True for the tables a release opens in DuckDB (pandas, Polars and Arrow tables,
    DuckDB relations, mappings of columns): their column is read from that opened view.
    One-dimensional data (arrays, lists, Series) and other objects are read as they are."""
    if isinstance(source, Mapping):
        return True
    module, kind = type(source).__module__.split(".")[0], type(source).__name__
    if module in ("pandas", "polars") and kind in ("DataFrame", "LazyFrame"):
        return True
    return (module == "pyarrow" and kind == "Table") or module == "duckdb"


def _load_table(
    data: Any,
    column: str | None,
    where: str | None = None,
    *,
    indicator: bool = False,
    nulls: str = "error",
    argument: str = "column",
) -> FloatArray:
    """One column of a table: a CSV or Parquet file (or "-", CSV on standard input) or an
    in-memory table, opened as a release opens it (:func:`dpsense.data.source.open_table`):
    the same dialect and types, the same parsing of numbers and text, the same messages
    for a file that cannot be read. ``where`` names the data in messages (by default the
    opened table's label, such as "the pandas DataFrame").

    A CSV column is read first as the file's text, each cell cast to a double: one pass
    over the file, and for a column of numbers the same doubles as with the types inferred
    from every row (what a release does). Only when a cell is not a number is the file
    opened again with its inferred types, which decide: a column of true/false reads as
    1/0, anything else is an error."""
    if isinstance(data, Mapping) and not data:
        raise InputError("the mapping of columns has no columns.")
    needed = None if column is None else [column]
    text_first = not indicator and isinstance(data, str | os.PathLike) and os.fspath(data) != "-"
    if text_first:
        import duckdb

        path = os.fspath(data)
        with open_table(path, needed, infer_types=False) as source:
            try:
                read = _numbers(source, column, where, nulls)
            except duckdb.Error as exc:  # a malformed row, met as the rows are read
                raise unreadable(path, where or path, source.label, exc) from None
        if read is not None:
            return read
    with open_table(data, needed) as source:
        if indicator:
            return _indicator(source, column, where, argument)
        read = _numbers(source, column, where, nulls)
    if read is None:
        shown = source.label if where is None else where
        name = source.columns[_select_index(source.columns, column, shown)]
        raise not_numbers(f"The column {name!r} of {shown}", name)
    return read


def _indicator(source: Any, column: str | None, where: str | None, argument: str) -> FloatArray:
    """The column as per-user 0/1 values (:func:`load_indicator`)."""
    where = source.label if where is None else where
    name = source.columns[_select_index(source.columns, column, where, argument)]
    from sqlglot import expressions as exp

    query = select([exp.alias_(sql_column(name), "v")], table(source.view))
    raw = source.con.execute(duckdb_sql(query)).fetchnumpy()["v"]
    if isinstance(raw, np.ma.MaskedArray):  # nulls: missing entries
        filled = raw.data.astype(object)
        filled[np.ma.getmaskarray(raw)] = None
        raw = filled
    out: FloatArray = as_indicator(raw, name=name, where=where)
    return out


def _numbers(
    source: Any, column: str | None, where: str | None, nulls: str = "error"
) -> FloatArray | None:
    """The column as doubles (missing values refused or dropped, by ``nulls``), or None
    when some entry is not a number."""
    where = source.label if where is None else where
    name = source.columns[_select_index(source.columns, column, where)]
    from sqlglot import expressions as exp

    con, view = source.con, table(source.view)
    described = con.execute(describe(select([sql_column(name)], view))).fetchall()
    # text is trimmed first: DuckDB's casts ignore surrounding spaces anyway, and a bare
    # TRY_CAST pushed into its CSV reader would fail on text instead of giving NULL
    v = sql_column(name)
    text = exp.Trim(this=v.copy()) if str(described[0][1]) == "VARCHAR" else v.copy()
    number = exp.TryCast(this=text, to=exp.DataType.build("DOUBLE"))
    is_null = exp.Is(this=v, expression=exp.Null())
    query = select([exp.alias_(number, "v"), exp.alias_(is_null, "missing")], view)
    got = con.execute(duckdb_sql(query)).fetchnumpy()
    missing = np.asarray(got["missing"], dtype=bool)
    if (np.ma.getmaskarray(got["v"]) & ~missing).any():  # an entry that is not a number
        return None
    values = np.asarray(np.ma.filled(got["v"], np.nan), dtype=np.float64)
    absent = missing | np.isnan(values)
    if absent.any():
        if nulls != "drop":
            raise missing_values(f"The column {name!r} of {where}")
        values = values[~absent]
    return as_data(values, name=name, where=where, allow_empty=True)


# ---------------------------------------------------------------------- in-memory tables


def _column_names(source: Any) -> list[str] | None:
    """Column names of a table-like object, or None if it is one-dimensional."""
    if isinstance(source, Mapping):
        return [str(k) for k in source]
    if isinstance(source, np.ndarray):
        names = source.dtype.names
        return list(names) if names is not None else None
    if hasattr(source, "column_names") and hasattr(source, "column"):  # pyarrow
        return [str(n) for n in source.column_names]
    columns = getattr(source, "columns", None)
    if columns is not None and hasattr(source, "__getitem__"):  # pandas, Polars
        return [str(c) for c in columns]
    return None


def _get_column(source: Any, names: list[str], index: int) -> Any:
    name = names[index]
    if isinstance(source, Mapping):
        key = list(source)[index]
        return source[key]
    if isinstance(source, np.ndarray):
        return source[name]
    if hasattr(source, "column_names") and hasattr(source, "column"):
        return source.column(index)
    columns = list(source.columns)
    return source[columns[index]]


def _load_object(source: Any, column: str | None, nulls: str = "error") -> FloatArray:
    names = _column_names(source)
    where = f"the {type(source).__name__}"
    if names is None:
        series_name = getattr(source, "name", None)
        if column is not None and (not isinstance(series_name, str) or series_name != column):
            raise InputError(
                f"column {column!r} was requested but the data ({type(source).__name__}) "
                "is a single unnamed sequence; pass a table or omit the column."
            )
        return _to_float(source, column or "x", "load_column", nulls)
    if not names:
        raise InputError(f"{where} has no columns.")
    index = _select_index(names, column, where)
    return _to_float(_get_column(source, names, index), names[index], "load_column", nulls)


def _to_float(values: Any, name: str, where: str, nulls: str = "error") -> FloatArray:
    arr: Any = values
    if hasattr(arr, "to_numpy") and not isinstance(arr, np.ndarray):
        try:
            arr = arr.to_numpy()
        except Exception:
            # A pyarrow Array with nulls refuses the default zero-copy conversion.
            try:
                arr = arr.to_numpy(zero_copy_only=False)
            except Exception:
                raise InputError(
                    f"column {name!r} ({type(values).__name__}) could not be converted to numbers."
                ) from None
    if isinstance(arr, np.ma.MaskedArray):  # duckdb returns masked arrays for NULLs
        arr = np.ma.filled(arr.astype(np.float64), np.nan)
    return as_data(arr, name=name, where=where, allow_empty=True, nulls=nulls)
