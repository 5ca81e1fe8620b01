"""Groups are formed, and public keys matched, by a public type, never by one inferred
from the values.

The rule below holds for every grouping, with public keys or with private partition
selection: a by-column whose type would be inferred is grouped as text, or one person's
"n/a" would turn a column of numbers into text and split "2015" from "2015.0" for everyone
else (the grouping would not be a stable transformation).

Public keys (``keys=[2015, 2016, "unknown"]``) are compared with a by-column's values in
the engine, in the column's type. That type must be public (docs/entry_points.md): a
by-column is matched

* by the ``schema=`` argument's type when it names the column;
* else by the input's declared type (a typed container: numpy, pandas other than
  ``object`` columns, Polars, Arrow, DuckDB relations, Parquet, Spark): a key that cannot
  be read in that type is an :class:`~dpsense.errors.InputError` decided from the keys and
  the declared type alone;
* else, when the type would be inferred from the values (a CSV file or standard input, a
  Python list or a mapping of lists, a pandas ``object`` column), as **text**: the column
  is read as if ``schema={col: "text"}`` had been passed (on a CSV file, the file's own
  text), and a key matches the rows whose text is ``str(key)``. A key that matches no row
  is a group without rows, released like any other; nothing is an error and no message
  names a type. Declare the column (``schema={"year": "int"}``) to match numbers as
  numbers.

Otherwise one person's value would decide the others' outcome: a CSV column of years is
read as BIGINT, and ``keys=[2015, 2016, "unknown"]`` is an error naming BIGINT; add one
row "n/a" and the column is read as text, and the same keys release.

A by-column that the ``where`` filter reads is left as it is: on a CSV file the filter
requires the analyst to declare it (``tables.grouped.opened_table``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from dpsense.data.source import is_csv_path
from dpsense.tables.engines import engine_for
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.schema import Cast, column_type

__all__ = ["check_keys", "key_casts", "undeclared_column"]


def undeclared_column(data: Any, column: str) -> bool:
    """True when the engine would infer ``column``'s type from the values of ``data``
    (decided from the object and its declared types, before anything is opened)."""
    if engine_for(data).declares_every_type:
        return False
    if isinstance(data, str | os.PathLike):
        return is_csv_path(os.fspath(data))
    if type(data).__module__.split(".")[0] == "duckdb":
        return False
    if type(data).__name__ == "JoinedTables":
        return column in data.inferred_columns
    declared = column_type(data, None, column)
    return declared is None or declared.name == "object"


def key_casts(
    data: Any,
    by: Iterable[str],
    casts: Mapping[str, Cast],
    *,
    keep: Iterable[str] = (),
) -> dict[str, Cast]:
    """The casts of a release with public keys: ``casts`` (the ``schema=`` argument) and
    a text cast of each by-column whose type would be inferred from the values (module
    docstring), except those in ``keep`` (the value columns, the privacy unit and the
    ``where`` filter's columns)."""
    kept = set(keep)
    implied = {
        b: Cast("text")
        for b in by
        if b not in casts and b not in kept and undeclared_column(data, b)
    }
    return {**casts, **implied}


def check_keys(source: Any, by: tuple[str, ...], keys: list[tuple[Any, ...]]) -> None:
    """Read ``keys`` as values of the by-columns' types of the opened table ``source``,
    as the release will, and discard them: the InputError of a key that does not fit a
    declared type (or of two keys that read as one group), from the keys and the types
    alone, before an accountant's charge (``query.steps.checked_table``)."""
    plan = TablePlan(None, by, None, 1, 1, "error", None, None, (0, 0))
    engine_for(source).check_keys(source, plan, keys)
