"""Several tables read as one in Spark: a temporary view per table and the join as one
Spark SQL query (the plan's DuckDB SQL, transpiled by sqlglot), so the join, the filter
and the contribution bounding all run in Spark (docs/joins.md). Each table's declared
columns (``schema=``) are cast in its own frame before the join, as the DuckDB engine
casts them in each table's view; the columns a join compares must then have comparable
types, checked from those types before any row is read."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dpsense.errors import InputError
from dpsense.tables.engines.spark.casts import cast_spark_frame
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.joins import (
    JoinInputs,
    JoinPlan,
    comparable,
    join_sql,
    key_check_sql,
    shared_key,
)

__all__ = ["spark_distinct_rows", "spark_join"]


def _spark_sql(sql: str) -> str:
    import sqlglot

    return str(sqlglot.transpile(sql, read="duckdb", write="spark")[0])


def _frames(
    plan: JoinPlan,
    tables: Mapping[str, Any],
    public: frozenset[str],
    casts: Mapping[str, Mapping[str, Cast]],
) -> Any:
    """Each table as a Spark frame, its declared columns cast (a public table given as a
    frame or file is copied in; a private one must already be a Spark DataFrame)."""

    def is_spark_frame(data: Any) -> bool:
        return type(data).__module__.startswith("pyspark.sql")

    session = next(d for d in tables.values() if is_spark_frame(d)).sparkSession
    frames: dict[str, Any] = {}
    for _, table in plan.tables:
        if table not in tables:
            continue
        data = tables[table]
        if not is_spark_frame(data):
            if table not in public:
                raise InputError(
                    f"The private table {table!r} is not a Spark DataFrame while others "
                    "are: a join runs on one engine. Pass it as a Spark DataFrame "
                    "(spark.createDataFrame(df)), or pass every table as a frame or file."
                )
            data = session.createDataFrame(_copied(data))
        frames[table] = cast_spark_frame(data, casts.get(table, {}))
    return session, frames


def _copied(data: Any) -> Any:
    """A public table given as a frame or file, as pandas (for Spark to copy in). A CSV
    file's columns are read as its text: a type read from the values is no one's
    declaration (``schema=`` casts the declared ones in Spark)."""
    from dpsense.data.source import connection, path_view, scannable

    con = connection()
    try:
        if isinstance(data, str | os.PathLike):
            reader = path_view(con, os.fspath(data), "lookup")
            if reader is not None:
                names = [str(r[0]) for r in con.execute("DESCRIBE SELECT * FROM lookup").fetchall()]
                text = reader(dict.fromkeys(names, "VARCHAR"))
                con.execute(f"CREATE OR REPLACE TEMP VIEW lookup AS SELECT * FROM {text}")
        else:
            con.register("lookup", scannable(data))
        return con.execute("SELECT * FROM lookup").df()
    finally:
        con.close()


def spark_join(inputs: JoinInputs) -> Any:
    """The joined DataFrame (lazy: Spark runs it with the release's own jobs)."""
    plan = inputs.plan
    session, frames = _frames(plan, inputs.tables, inputs.public, inputs.casts)
    types = {
        (table, column): dict(frames[table].dtypes)[column]
        for pair in plan.compared
        for table, column in pair
    }
    comparable(types, plan.compared)
    for view, table in plan.tables:
        frames[table].createOrReplaceTempView(view)
    for check in plan.key_checks:
        if session.sql(_spark_sql(key_check_sql(check))).take(1):
            raise shared_key(check.table, check.key)
    return session.sql(_spark_sql(join_sql(plan.relation)))


def spark_distinct_rows(
    plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str], sql: str
) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (the public keys' query) over the public tables, in Spark."""
    session, frames = _frames(plan, tables, public, {})
    for view, table in plan.tables:
        if table in frames:
            frames[table].createOrReplaceTempView(view)
    return [tuple(r) for r in session.sql(_spark_sql(sql)).collect()]
