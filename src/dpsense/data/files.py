"""Read one numeric column from a file or an in-memory table.

CSV and Parquet files are read with DuckDB (a dependency, imported on first use); a CSV
file DuckDB cannot read cleanly is read again line by line with the standard library's
:mod:`csv` module, which says precisely what is wrong.
In-memory sources may be a numpy array, a list, a mapping of column names to sequences,
or any DataFrame-like object from pandas, Polars or Arrow.

Every error is an :class:`~dpsense.errors.InputError` with one sentence that names the
file and the column and says what to do. It never contains values, nor counts of rows or
of bad rows: under add-remove neighbours the number of records is private. A file with a
header but no data rows is read as an empty column (an error there would reveal that the
data are empty).
"""

from __future__ import annotations

import csv
import gzip
import importlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from dpsense._arrays import FloatArray, as_data, as_indicator
from dpsense.errors import InputError

__all__ = ["load_column", "load_indicator"]

_PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})
_DELIMITERS = (",", ";", "\t", "|")
_MAX_NAMES_SHOWN = 40


def load_column(source: Any, column: str | None = None, *, allow_empty: bool = True) -> FloatArray:
    """Return one column of ``source`` as a validated one-dimensional float array.

    Parameters
    ----------
    source : path, array-like or table
        A path (``str`` or :class:`os.PathLike`) to a CSV file (optionally ``.gz``
        compressed; the delimiter may be ``,``, ``;``, tab or ``|``) or a Parquet file
        (``.parquet``, needs ``duckdb``); a numpy array or a list of numbers; a mapping
        from column names to sequences (such as :func:`dpsense.datasets.load_census`);
        or a pandas/Polars DataFrame or Series, a pyarrow Table or Array.
    column : str, optional
        The column to read. It may be omitted only when the source has a single column
        (or is already one-dimensional).
    allow_empty : bool, default True
        Return an empty array for a column without rows (a CSV file with only a header).
        Private releases need this: under add-remove the empty dataset is a neighbour of
        every one-row dataset. Pass False for non-private diagnostics that need data.

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
    if column is not None and not isinstance(column, str):
        raise InputError(
            f"The 'column' parameter of load_column must be a column name (str). "
            f"Got an object of type {type(column).__name__} instead."
        )
    if isinstance(source, str | os.PathLike):
        path = Path(os.fspath(source))
        if path.suffix.lower() in _PARQUET_SUFFIXES:
            values = np.asarray(_load_parquet(path, column), dtype=np.float64)
        else:
            values = _load_csv(path, column)
        where = str(path)
    else:
        values = _load_object(source, column)
        where = "load_column"
    if values.shape[0] == 0 and not allow_empty:
        raise InputError(
            f"the column of {where} has no data rows; this computation needs at least one."
        )
    return values


def load_indicator(source: Any, column: str | None = None) -> FloatArray:
    """One column of per-user 0/1 values: numbers, booleans, or yes/no, true/false text.

    ``source`` as for :func:`load_column`. Used for the columns of a ratio.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(os.fspath(source))
        if path.suffix.lower() in _PARQUET_SUFFIXES:
            raw: Any = _load_parquet(path, column, raw=True)
            indicator: FloatArray = as_indicator(raw, name=column or "x", where=str(path))
            return indicator
        _check_file(path)
        name, cells, short_rows = _csv_cells(path, column)
        if short_rows:
            raise InputError(
                f"column {name!r} of {path} has missing entries in some rows; clean or "
                "drop those rows."
            )
        return as_indicator(cells, name=name, where=str(path))
    names = _column_names(source)
    if names is None:
        return as_indicator(source, name=column or "x", where="load_indicator")
    index = _select_index(names, column, f"the {type(source).__name__}")
    values = _get_column(source, names, index)
    return as_indicator(values, name=names[index], where="load_indicator")


# ----------------------------------------------------------------------------- CSV files


def _check_file(path: Path) -> None:
    if not path.exists():
        raise InputError(f"file not found: {path}")
    if path.is_dir():
        raise InputError(f"cannot read {path}: it is a directory, not a data file.")


def _open_text(path: Path) -> IO[str]:
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open("r", encoding="utf-8-sig", newline="")


def _guess_delimiter(header_line: str) -> str:
    counts = {d: header_line.count(d) for d in _DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _format_names(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_MAX_NAMES_SHOWN])
    if len(names) > _MAX_NAMES_SHOWN:
        shown += f", ... ({len(names) - _MAX_NAMES_SHOWN} more)"
    return shown


def _select_index(names: list[str], column: str | None, where: str) -> int:
    """Position of ``column`` among ``names`` (exact match first, then trimmed/case-folded)."""
    if column is None:
        if len(names) == 1:
            return 0
        raise InputError(
            f"{where} has {len(names)} columns; choose one with the column option "
            f"(available: {_format_names(names)})."
        )
    if column in names:
        return names.index(column)
    folded = [n.strip().casefold() for n in names]
    key = column.strip().casefold()
    if folded.count(key) == 1:
        return folded.index(key)
    raise InputError(
        f"column {column!r} not found in {where}; available columns: {_format_names(names)}."
    )


def _rows(handle: IO[str], path: Path) -> Iterator[list[str]]:
    first = handle.readline()
    if not first.strip():
        # An empty first line means an empty file or a file without a header row.
        rest = handle.read(1)
        if not first or not rest:
            raise InputError(f"file is empty: {path} needs at least a header row of names.")
        raise InputError(f"cannot read {path}: the first line must be a header row of names.")
    delimiter = _guess_delimiter(first)
    yield next(csv.reader([first], delimiter=delimiter))
    yield from csv.reader(handle, delimiter=delimiter)


def _check_header(header: list[str], path: Path) -> None:
    def is_number(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return False
        return True

    # A file of bare numbers would silently lose its first value if read as a header.
    if all(is_number(cell) for cell in header):
        raise InputError(
            f"the first line of {path} looks like data, not a header row; add a first "
            "line with the column names."
        )


def _load_csv(path: Path, column: str | None) -> FloatArray:
    """Read one numeric column of a CSV file: DuckDB's vectorised reader when the file
    is clean, the line-by-line reader (precise error messages) otherwise."""
    _check_file(path)
    fast = _load_csv_duckdb(path, column)
    if fast is not None:
        return fast
    return _load_csv_stdlib(path, column)


def _load_csv_duckdb(path: Path, column: str | None) -> FloatArray | None:
    """The column through DuckDB, or None when DuckDB is missing or the file has anything
    the careful reader must explain (bad cells, short rows, a non-header first line...)."""
    try:
        duckdb: Any = importlib.import_module("duckdb")
    except ImportError:  # pragma: no cover - duckdb is a dependency
        return None
    try:
        with _open_text(path) as handle:
            header_row = next(_rows(handle, path))
    except (InputError, UnicodeDecodeError, OSError, EOFError, gzip.BadGzipFile, csv.Error):
        return None  # the careful reader reports it
    header = [name.strip() for name in header_row]
    _check_header(header, path)
    index = _select_index(header, column, str(path))
    with _open_text(path) as handle:
        delimiter = _guess_delimiter(handle.readline())
    try:
        con = duckdb.connect()
        try:
            # no sniffing: the dialect and the columns are stated, so a row DuckDB cannot
            # read as such is an error here (and the careful reader explains it)
            columns = ", ".join(f"'c{i}': 'VARCHAR'" for i in range(len(header)))
            result = con.execute(
                f"SELECT TRY_CAST(c{index} AS DOUBLE) AS v FROM read_csv(?, header = true, "
                "auto_detect = false, delim = ?, quote = '\"', escape = '\"', "
                f"strict_mode = true, null_padding = false, columns = {{{columns}}})",
                [str(path), delimiter],
            )
            values = result.fetchnumpy()["v"]
        finally:
            con.close()
    except Exception:
        return None  # malformed for DuckDB: the careful reader explains what is wrong
    if isinstance(values, np.ma.MaskedArray):
        if values.mask.any():
            return None  # a cell is not a number (or missing): explained by the other reader
        values = values.data
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).any():
        return None  # a missing value: explained by the other reader
    return as_data(values, name=header[index], where=str(path), allow_empty=True)


def _csv_cells(path: Path, column: str | None) -> tuple[str, list[str], int]:
    """The column's name, its cells as text, and the number of rows too short for it."""
    cells: list[str] = []
    short_rows = 0
    try:
        with _open_text(path) as handle:
            rows = _rows(handle, path)
            header = [name.strip() for name in next(rows)]
            _check_header(header, path)
            index = _select_index(header, column, str(path))
            for row in rows:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if index < len(row):
                    cells.append(row[index])
                else:
                    short_rows += 1
    except InputError:
        raise
    except UnicodeDecodeError:
        raise InputError(
            f"cannot read {path}: it is not a UTF-8 text file (is it a CSV file?)."
        ) from None
    except (gzip.BadGzipFile, EOFError):
        raise InputError(f"cannot read {path}: it is not a valid gzip file.") from None
    except csv.Error:
        # csv's messages can name a line number, i.e. a position in the data.
        raise InputError(
            f"cannot read {path}: it is not a valid CSV file (check its quoting and delimiters)."
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(f"cannot read {path}: {reason}.") from None

    return header[index], cells, short_rows


def _load_csv_stdlib(path: Path, column: str | None) -> FloatArray:
    name, cells, short_rows = _csv_cells(path, column)
    values, all_numbers = _parse_numbers(cells)
    if short_rows or not all_numbers:
        raise InputError(
            f"column {name!r} of {path} must be numeric, but some rows are not numbers "
            "(text, empty or missing); clean or drop those rows."
        )
    if np.isnan(values).any():
        raise InputError(
            f"column {name!r} of {path} contains missing values (NaN); drop or impute "
            "them first (a release drops them with nulls='drop')."
        )
    return as_data(values, name=name, where=str(path), allow_empty=True)


def _parse_numbers(cells: list[str]) -> tuple[FloatArray, bool]:
    """Parse strings as floats; return the array and whether every cell parsed."""
    try:
        # Fast path: numpy parses a list of clean numeric strings in C.
        return np.array(cells, dtype=np.float64), True
    except ValueError:
        pass
    out = np.empty(len(cells), dtype=np.float64)
    for i, cell in enumerate(cells):
        try:
            out[i] = float(cell)
        except ValueError:
            return out, False
    return out, True


# ------------------------------------------------------------------------- Parquet files


def _load_parquet(path: Path, column: str | None, *, raw: bool = False) -> Any:
    _check_file(path)
    try:
        duckdb: Any = importlib.import_module("duckdb")
    except ImportError:
        raise InputError(
            f"reading Parquet files such as {path} needs duckdb: pip install duckdb"
        ) from None
    try:
        con = duckdb.connect()
        try:
            described = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)])
            names = [str(row[0]) for row in described.fetchall()]
            index = _select_index(names, column, str(path))
            quoted = '"' + names[index].replace('"', '""') + '"'
            result = con.execute(f"SELECT {quoted} FROM read_parquet(?)", [str(path)])
            if raw:  # the values as Python objects (text, booleans, numbers)
                return [row[0] for row in result.fetchall()]
            values = result.fetchnumpy()[names[index]]
        finally:
            con.close()
    except InputError:
        raise
    except Exception as exc:
        # duckdb's own messages may quote file contents, so only its type is reported.
        raise InputError(
            f"cannot read {path} as Parquet ({type(exc).__name__}); is it a Parquet file?"
        ) from None
    return _to_float(values, names[index], str(path))


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


def _load_object(source: Any, column: str | None) -> FloatArray:
    names = _column_names(source)
    where = f"the {type(source).__name__}"
    if names is None:
        series_name = getattr(source, "name", None)
        if column is not None and (not isinstance(series_name, str) or series_name != column):
            raise InputError(
                f"column {column!r} was requested but the data ({type(source).__name__}) "
                "is a single unnamed sequence; pass a table or omit the column."
            )
        return _to_float(source, column or "x", "load_column")
    if not names:
        raise InputError(f"{where} has no columns.")
    index = _select_index(names, column, where)
    return _to_float(_get_column(source, names, index), names[index], "load_column")


def _to_float(values: Any, name: str, where: str) -> FloatArray:
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
    return as_data(arr, name=name, where=where, allow_empty=True)
