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

from dpsense.tables.checks import is_nan
from dpsense.tables.source import TableSource, quote

__all__ = ["add_presence", "presence_names", "present_rows"]

_PREFIX = "dpsense_has_"
_FLOATS = frozenset({"FLOAT", "DOUBLE", "REAL"})


def presence_names(columns: Sequence[str]) -> dict[str, str]:
    """The 0/1 column that says whether each of ``columns`` holds a value, by column."""
    return {c: f"{_PREFIX}{i}" for i, c in enumerate(dict.fromkeys(columns))}


def add_presence(source: Any, columns: Sequence[str]) -> dict[str, str]:
    """Add to the opened table ``source`` (DuckDB or Spark) the 0/1 column of each of
    ``columns`` that says whether the row holds a value in it; return their names."""
    names = presence_names(columns)
    if not names:
        return names
    for column in names:
        source.require(column, "column")
    frame = getattr(source, "frame", None)
    if frame is not None:  # Spark
        from pyspark.sql import functions as sf
        from pyspark.sql import types as st

        exprs = {}
        for column, name in names.items():
            test = sf.col(column).isNotNull()
            if isinstance(source.types[column], st.FloatType | st.DoubleType):
                test = test & ~sf.isnan(sf.col(column))
            exprs[name] = sf.when(test, sf.lit(1)).otherwise(sf.lit(0)).cast("long")
        source.frame = frame.withColumns(exprs)
        source.columns = list(source.frame.columns)
        source.types = {f.name: f.dataType for f in source.frame.schema.fields}
        return names
    con = source.con
    types = {
        str(r[0]): str(r[1])
        for r in con.execute(f"DESCRIBE SELECT * FROM {source.view}").fetchall()
    }
    parts = []
    for column, name in names.items():
        sql = f"{quote(column)} IS NOT NULL"
        if types.get(column) in _FLOATS:
            sql += f" AND NOT {is_nan(quote(column))}"
        parts.append(f"COALESCE(({sql}), FALSE)::BIGINT AS {quote(name)}")
    view = "dpsense_presence"
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT *, {', '.join(parts)} FROM {source.view}")
    source.view = view
    source.columns = [*source.columns, *names.values()]
    return names


def present_rows(source: Any, name: str) -> Any:
    """The rows of ``source`` whose 0/1 column ``name`` (:func:`add_presence`) is 1: the
    same Spark source, filtered; a new DuckDB source on a view of them."""
    frame = getattr(source, "frame", None)
    if frame is not None:  # Spark: each statistic opens its own source
        from pyspark.sql import functions as sf

        source.frame = frame.where(sf.col(name) == 1)
        return source
    view = f"dpsense_rows_{name}"
    source.con.execute(
        f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {source.view} WHERE {quote(name)} = 1"
    )
    return TableSource(
        source.con, view, source.columns, source.label, declared_types=source.declared_types
    )
