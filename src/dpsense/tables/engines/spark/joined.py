"""Several tables read as one in Spark: a temporary view per table and the join as one
Spark SQL query (the plan's DuckDB SQL, transpiled by sqlglot), so the join, the filter
and the contribution bounding all run in Spark (docs/joins.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpsense.errors import InputError
from dpsense.tables.rows.joins import JoinPlan, comparable, shared_key

__all__ = ["spark_distinct_rows", "spark_join"]


def _spark_sql(sql: str) -> str:
    import sqlglot

    return str(sqlglot.transpile(sql, read="duckdb", write="spark")[0])


def _frames(plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str]) -> Any:
    """Each table as a temporary view of the Spark session (a public table given as a
    frame or file is copied in; a private one must already be a Spark DataFrame)."""
    from dpsense.data.source import connection, path_view, scannable

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
            con = connection()
            try:
                if isinstance(data, str):
                    path_view(con, data, "lookup")
                else:
                    con.register("lookup", scannable(data))
                data = session.createDataFrame(con.execute("SELECT * FROM lookup").df())
            finally:
                con.close()
        frames[table] = data
    return session, frames


def spark_join(plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str]) -> Any:
    """The joined DataFrame (lazy: Spark runs it with the release's own jobs)."""
    session, frames = _frames(plan, tables, public)
    types = {
        (table, column): dict(frames[table].dtypes)[column]
        for pair in plan.compared
        for table, column in pair
    }
    comparable(types, plan.compared)
    for view, table in plan.tables:
        frames[table].createOrReplaceTempView(view)
    for sql, table, key in plan.key_checks:
        if session.sql(_spark_sql(sql)).take(1):
            raise shared_key(table, key)
    return session.sql(_spark_sql(plan.sql))


def spark_distinct_rows(
    plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str], sql: str
) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (the public keys' query) over the public tables, in Spark."""
    session, frames = _frames(plan, tables, public)
    for view, table in plan.tables:
        if table in frames:
            frames[table].createOrReplaceTempView(view)
    return [tuple(r) for r in session.sql(_spark_sql(sql)).collect()]
