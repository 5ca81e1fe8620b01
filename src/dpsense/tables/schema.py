"""The schema is public, the values are not: a column's declared type as a resolution.

A table's schema (its column names and types) is part of the data's description, fixed
before any person's values are in it, so a release may read it like any other public
parameter. An integer type says every value is a whole number, which is a public
``resolution=1`` for a quantile release; ``DECIMAL(p, s)`` says every value is a multiple
of ``10**-s``. The release then chooses among those values only (docs/tables.md §7).

What counts as declared (the rule, and why):

* **Typed containers**: numpy arrays (their dtype), pandas (numpy dtypes, the nullable
  ``Int*``/``UInt*``/``boolean`` dtypes, Arrow-backed dtypes), Polars, Arrow, DuckDB
  relations, Parquet files and PySpark DataFrames. The type travels with the object and does
  not change when one person's value does.
* **Not declared**: a CSV file or standard input, whose types DuckDB would *infer from the
  values* (one person's "3.5" turns an integer column into a double, so the inferred type
  is a statistic of the data); a Python list or tuple, and a mapping of lists, whose numpy
  dtype is likewise inferred from the values; a pandas ``object`` column, whose type DuckDB
  would infer by sampling values. Such a column gets a resolution only when the user says so:
  ``resolution=`` on the statistic, or the ``schema=`` argument (``--schema COL=TYPE``),
  which casts the column in the engine (:func:`apply_schema`).

A typed container whose type was itself inferred from values (``pd.read_csv`` without
``dtype=``, ``duckdb.read_csv``) is the data owner's declaration: pass the types
explicitly, or ``schema={"col": "float"}`` to release the column as continuous.

Nothing here reads a value: types come from the objects' schemas (each column's type is
decided once, by the table handle: ``tables.handle``); the casts run in the engine and
cannot fail. A value that does not fit its declared type (a fraction for ``int``, 101
for ``decimal(2,0)``, text for a number) drops its row, as a WHERE drops rows: a fixed,
data-independent rule, never an error and never a null that ``nulls="error"`` would turn
into one (so whether any value reaches 100 is not a bit an analyst can read off the
outcome; docs/entry_points.md). Raw nulls stay nulls, for the ``nulls=`` policy. On a CSV
file the declared columns are read as the file's text and cast from it, so the outcome
does not depend on the types DuckDB would infer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any, Final

import numpy as np

from dpsense.errors import InputError, Param
from dpsense.statistics import Quantile, Quantiles, Statistic
from dpsense.tables.rows.casts import Cast, ColumnType
from dpsense.tables.rows.checks import SQL_INTEGERS as _SQL_INTEGERS

__all__ = [
    "Cast",
    "ColumnType",
    "array_type",
    "container_type",
    "parse_schema",
    "parse_schema_items",
    "schema_resolution",
    "spark_type",
    "sql_type",
]

_SQL_DECIMAL: Final = re.compile(r"DECIMAL\((\d+),\s*(-?\d+)\)")
_SCHEMA_DECIMAL: Final = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_VOCABULARY: Final = "'int', 'float', 'decimal(p,s)' (e.g. 'decimal(10,2)') or 'text'"


# -- the schema= argument ------------------------------------------------------------------


def _parse_type(column: str, text: object, where: str) -> Cast:
    shown = repr(text) if isinstance(text, str) else f"an object of type {type(text).__name__}"
    if isinstance(text, str):
        word = text.strip().lower()
        if word in ("int", "integer"):
            return Cast("int")
        if word in ("float", "double"):
            return Cast("float")
        if word in ("text", "string", "varchar"):
            return Cast("text")
        match = _SCHEMA_DECIMAL.fullmatch(word)
        if match:
            precision, scale = int(match.group(1)), int(match.group(2))
            if not (1 <= precision <= 38 and scale <= precision):
                raise InputError(
                    f"The type of column {column!r} in ",
                    Param("schema", of=where, capital=False),
                    " must be decimal(p,s) with 1 <= p <= 38 and 0 <= s <= p. "
                    f"Got {text!r} instead.",
                )
            return Cast("decimal", precision, scale)
    raise InputError(
        f"The type of column {column!r} in ",
        Param("schema", of=where, capital=False),
        f" must be {_VOCABULARY}. Got {shown} instead.",
    )


def parse_schema(schema: object, where: str = "release") -> dict[str, Cast]:
    """The ``schema=`` argument, validated: column name -> :class:`Cast` (empty for None).

    The vocabulary: ``"int"`` (alias ``"integer"``): whole numbers, resolution 1;
    ``"float"`` (alias ``"double"``): continuous, no resolution; ``"decimal(p,s)"``:
    at most p digits, s after the point, resolution ``10**-s``; ``"text"`` (aliases
    ``"string"``, ``"varchar"``): text, for grouping and filtering. Case is ignored.
    """
    if schema is None:
        return {}
    if not isinstance(schema, Mapping):
        raise InputError(
            Param("schema", of=where),
            f" must be a mapping of column names to types, "
            f"e.g. {{'age': 'int'}}. Got an object of type {type(schema).__name__} instead.",
        )
    out: dict[str, Cast] = {}
    for column, text in schema.items():
        if not isinstance(column, str) or not column:
            raise InputError(
                Param("schema", of=where),
                f" must map column names (str) to types. Got the key {column!r} instead.",
            )
        out[column] = _parse_type(column, text, where)
    return out


def parse_schema_items(items: Sequence[str], option: str = "--schema") -> dict[str, str]:
    """``COL=TYPE`` items (each may hold several, comma-separated) as a mapping.

    Commas inside parentheses belong to the type: ``price=decimal(10,2),age=int``.
    """
    out: dict[str, str] = {}
    for item in items:
        for part in re.split(r",(?![^()]*\))", item):
            name, sep, text = part.partition("=")
            if not sep or not name.strip() or not text.strip():
                raise InputError(
                    f"{option} takes COL=TYPE (TYPE one of {_VOCABULARY}), e.g. "
                    f"{option} age=int. Got {part!r} instead."
                )
            if name.strip() in out:
                raise InputError(f"{option} names the column {name.strip()!r} more than once.")
            out[name.strip()] = text.strip()
    return out


# -- declared types ------------------------------------------------------------------------


def sql_type(name: str) -> ColumnType:
    """A DuckDB type (Parquet files, DuckDB relations, and casts)."""
    upper = name.upper()
    if upper in _SQL_INTEGERS:
        return ColumnType(upper, 0)
    match = _SQL_DECIMAL.fullmatch(upper)
    if match:
        return ColumnType(upper, int(match.group(2)))
    return ColumnType(upper, None)


_WIDTHS: Final = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT", 128: "HUGEINT"}


def _integer(bits: int, signed: bool) -> ColumnType:
    """An integer type by its SQL name (the same whatever the input: receipts agree)."""
    name = _WIDTHS.get(bits, "HUGEINT")
    return ColumnType(name if signed else "U" + name, 0)


def _decimal(precision: int, scale: int) -> ColumnType:
    return ColumnType(f"DECIMAL({precision},{scale})", scale)


def _arrow_type(data_type: Any) -> ColumnType:
    import pyarrow as pa

    if pa.types.is_boolean(data_type):
        return ColumnType("BOOLEAN", 0)
    if pa.types.is_integer(data_type):
        return _integer(data_type.bit_width, pa.types.is_signed_integer(data_type))
    if pa.types.is_decimal(data_type):
        return _decimal(int(data_type.precision), int(data_type.scale))
    return ColumnType(str(data_type), None)


def _polars_type(data_type: Any) -> ColumnType:
    import polars as pl

    if data_type == pl.Boolean:
        return ColumnType("BOOLEAN", 0)
    if data_type.is_integer():
        name = str(data_type)  # Int8 ... Int128, UInt8 ... UInt128
        return _integer(int(name.removeprefix("U").removeprefix("Int")), not name.startswith("U"))
    if isinstance(data_type, pl.Decimal):
        return _decimal(int(data_type.precision or 38), int(data_type.scale or 0))
    return ColumnType(str(data_type), None)


def _pandas_or_numpy_type(dtype: Any) -> ColumnType:
    """A numpy or pandas dtype. An ``object`` column has no resolution whatever DuckDB
    would make of it: DuckDB infers its type by sampling its values."""
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is not None:  # pandas ArrowDtype
        return _arrow_type(arrow)
    kind = getattr(dtype, "kind", "O")
    if kind == "b":
        return ColumnType("BOOLEAN", 0)
    if kind in "iu":  # numpy, and pandas' nullable Int*/UInt* (same kind and itemsize)
        return _integer(8 * int(dtype.itemsize), kind == "i")
    return ColumnType(str(dtype), None)


_SPARK_NAMES: Final = {
    "ByteType": "TINYINT",
    "ShortType": "SMALLINT",
    "IntegerType": "INTEGER",
    "LongType": "BIGINT",
    "BooleanType": "BOOLEAN",
}


def spark_type(data_type: Any) -> ColumnType:
    """A Spark DataFrame field's type."""
    kind = type(data_type).__name__
    if kind in _SPARK_NAMES:
        return ColumnType(_SPARK_NAMES[kind], 0)
    if kind == "DecimalType":
        return _decimal(int(data_type.precision), int(data_type.scale))
    return ColumnType(kind, None)


def array_type(x: Any) -> ColumnType | None:
    """The declared type of one column of numbers (None for lists, tuples and other
    untyped sequences, whose dtype numpy would infer from the values)."""
    module = type(x).__module__.split(".")[0]
    if isinstance(x, np.ndarray):
        return _pandas_or_numpy_type(x.dtype)
    if module == "pandas" and type(x).__name__ == "Series":
        return _pandas_or_numpy_type(x.dtype)
    if module == "polars" and type(x).__name__ == "Series":
        return _polars_type(x.dtype)
    if module == "pyarrow" and hasattr(x, "type"):
        return _arrow_type(x.type)
    return None


def container_type(data: Any, column: str) -> ColumnType | None:
    """The declared type of ``column`` of an in-memory table (its container's; the table
    handle, ``tables.handle``, decides every column's type from this)."""
    module = type(data).__module__.split(".")[0]
    kind = type(data).__name__
    if module == "pandas":
        if kind == "Series":
            return array_type(data)
        dtypes = data.dtypes
        matches = [dt for name, dt in dtypes.items() if str(name) == column]
        return _pandas_or_numpy_type(matches[0]) if len(matches) == 1 else None
    if module == "polars":
        if kind == "Series":
            return array_type(data)
        schema = data.collect_schema() if kind == "LazyFrame" else data.schema
        return _polars_type(schema[column]) if column in schema else None
    if module == "pyarrow":
        if hasattr(data, "schema"):
            index = data.schema.get_field_index(column)
            return _arrow_type(data.schema.field(index).type) if index >= 0 else None
        return array_type(data)
    if isinstance(data, Mapping):
        found = [v for k, v in data.items() if str(k) == column]
        return array_type(found[0]) if len(found) == 1 else None
    return array_type(data)


# -- the resolution a release uses ---------------------------------------------------------


def schema_resolution(
    statistic: Statistic, declared: ColumnType | None
) -> tuple[Statistic, dict[str, Any]]:
    """The statistic a release uses on a column of type ``declared``, and the receipt's
    ``resolution`` and ``resolution_source``.

    A quantile (``Quantile``, ``Median``, ``Quantiles``) that sets its own resolution keeps
    it (source "statistic"). One without a resolution, on a column whose type has a scale
    s, gets ``resolution = 10**-s`` (1 for integers) with its bounds moved inward to the
    nearest multiples of it (``ceil(lower / r) r``, ``floor(upper / r) r``, exact): the
    clipped values of such a column are multiples of r, so the candidates are the values
    the column can take. It stays continuous (source None) when no multiple of r lies in
    the bounds, or when the grid of them would be refused (more than 2^50 points, or finer
    than the doubles near the bounds): a default never turns a release into an error.
    Other statistics are returned unchanged, with no parameters.
    """
    if not isinstance(statistic, Quantile | Quantiles):
        return statistic, {}
    if statistic.resolution is not None:
        return statistic, {"resolution": statistic.resolution, "resolution_source": "statistic"}
    step = None if declared is None else declared.step
    if declared is None or step is None:
        return statistic, {"resolution_source": None}
    lo = math.ceil(Fraction(statistic.lower) / step) * step
    hi = math.floor(Fraction(statistic.upper) / step) * step
    if lo > hi:
        return statistic, {"resolution_source": None}
    resolution = float(step)
    try:
        snapped = replace(statistic, lower=float(lo), upper=float(hi), resolution=resolution)
    except InputError:  # the grid is too fine for the bounds: stay continuous
        return statistic, {"resolution_source": None}
    return snapped, {"resolution": resolution, "resolution_source": declared.source}
