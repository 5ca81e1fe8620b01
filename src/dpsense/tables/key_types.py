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

The types are decided, and the text casts added, once, by the table handle
(``tables.handle.table_handle``); :func:`check_keys` reads the keys in them.
"""

from __future__ import annotations

from typing import Any

from dpsense.tables.handle import TableHandle
from dpsense.tables.rows.plan import TablePlan

__all__ = ["check_keys"]


def check_keys(
    handle: TableHandle, source: Any, by: tuple[str, ...], keys: list[tuple[Any, ...]]
) -> None:
    """Read ``keys`` as values of the by-columns' types of the table ``handle``, opened
    as ``source``, as the release will, and discard them: the InputError of a key that
    does not fit a declared type (or of two keys that read as one group), from the keys
    and the types alone, before an accountant's charge (``query.steps.checked_table``)."""
    plan = TablePlan(None, by, None, 1, 1, "error", None, None, (0, 0))
    handle.engine.check_keys(source, plan, keys)
