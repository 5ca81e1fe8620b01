"""``COUNT(col)``: a count of the rows whose column holds a value.

SQL's ``COUNT(col)`` counts the rows whose ``col`` is not null; dpsense counts the rows
whose ``col`` is not missing (null, or NaN in a float column: missing as everywhere in
dpsense). Whether a row holds a value is a test of that row alone, so keeping the rows
that pass it is a stable transformation, like ``where`` (docs/queries.md §3): the count
keeps its guarantee. A missing value in ``col`` is what the count counts around, so it is
never an error, whatever ``nulls`` says, and no row is dropped for the query's other
statistics because of it.

The test is made once per query, after ``where`` and the schema casts, as a BIGINT column
that is 1 or 0 and never missing (:func:`add_presence`). A query's one contribution
bounding hashes it with the row's other columns (which of a unit's rows are kept is then a
function of the unit's rows, not of their order) and carries it to each statistic; the
count then reads the rows where it is 1 (:func:`present_rows`). A count alone derives it
on the opened table, before the engine bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpsense.tables.engines import engine_for

__all__ = ["add_presence", "presence_names", "present_rows"]

_PREFIX = "dpsense_has_"


def presence_names(columns: Sequence[str]) -> dict[str, str]:
    """The 0/1 column that says whether each of ``columns`` holds a value, by column."""
    return {c: f"{_PREFIX}{i}" for i, c in enumerate(dict.fromkeys(columns))}


def add_presence(source: Any, columns: Sequence[str]) -> dict[str, str]:
    """Add to the opened table ``source`` (any engine) the 0/1 column of each of
    ``columns`` that says whether the row holds a value in it; return their names."""
    names = presence_names(columns)
    if not names:
        return names
    for column in names:
        source.require(column, "column")
    engine_for(source).add_presence(source, names)
    return names


def present_rows(source: Any, name: str) -> Any:
    """The rows of ``source`` whose 0/1 column ``name`` (:func:`add_presence`) is 1 (a
    Spark source filtered in place; a new DuckDB source on a view of them)."""
    return engine_for(source).present_rows(source, name)
