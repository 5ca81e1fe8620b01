"""``ds.sql``: one SQL SELECT released as one dict-of-statistics release.

The query is parsed and checked (:mod:`dpsense.query.sql`), translated into the
statistics of :func:`dpsense.release` (:mod:`dpsense.query.sql_plan`), released in ONE
call (one contribution bounding, one partition selection, one budget split, one charge),
and its rows ordered and cut by ORDER BY / LIMIT (post-processing). docs/sql.md.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from dpsense._docs import doc_parts
from dpsense.errors import InputError, Param
from dpsense.pipeline import Request, execute
from dpsense.query.join_form import joined_input, reads_several_tables
from dpsense.query.plan import release_arguments
from dpsense.query.result import QueryResult
from dpsense.query.sql_plan import (
    check_bounds_argument,
    check_rows_clauses,
    group_keys,
    ordered_rows,
    statistics,
)
from dpsense.tables import GroupedRelease

if TYPE_CHECKING:  # sqlglot is imported by the first query, not by ``import dpsense``
    from dpsense.accountant import Accountant
    from dpsense.query.sql import SqlQuery

__all__ = ["resolve_table", "sql", "sql_arguments"]

_WHERE = "ds.sql"


def _spark_view(name: str) -> Any:
    """The active Spark session's temporary view (or table) ``name``, or None.

    Looked up only when PySpark is already imported and a session is active: a query
    never starts Spark by itself.
    """
    if "pyspark" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None or not session.catalog.tableExists(name):
        return None
    return session.table(name)


def resolve_table(spec: SqlQuery, tables: Mapping[str, Any] | None) -> Any:
    """The data the query reads FROM (:func:`resolve_named`)."""
    return resolve_named(spec.table, spec.table_is_path, tables)


def resolve_named(name: str, is_path: bool, tables: Mapping[str, Any] | None) -> Any:
    """The data of the table ``name``.

    In order: the entry of ``tables`` with that name (exact, else the only one equal
    ignoring case, as SQL names are); a quoted path (FROM 'data.parquet') or
    read_parquet/read_csv of one; a temporary view of the active Spark session; else an
    InputError saying how to pass the table.
    """
    if tables is not None and not isinstance(tables, Mapping):
        raise InputError(
            Param("tables", of=_WHERE),
            f" must be a mapping of table names to data, "
            f"e.g. tables={{'males': df}}. Got {type(tables).__name__} instead.",
        )
    named = dict(tables or {})
    if name in named:
        return named[name]
    alike = [k for k in named if isinstance(k, str) and k.lower() == name.lower()]
    if len(alike) == 1:
        return named[alike[0]]
    if is_path:
        return name
    view = _spark_view(name)
    if view is not None:
        return view
    known = ", ".join(repr(k) for k in named) or "none"
    raise InputError(
        f"The SQL query reads {name!r}, which is not in ",
        Param("tables", capital=False),
        f" (it has {known}): pass tables={{{name!r}: data}} (a DataFrame, "
        "Arrow table, DuckDB relation, path or Spark DataFrame), or read a file with FROM "
        "'data.parquet'.",
    )


def sql_arguments(
    spec: SqlQuery,
    bounds: Mapping[str, Any] | str | None,
    keys: Any,
    units: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The arguments of the one release the query makes (besides the data and budget)."""
    check_rows_clauses(spec)
    checked = check_bounds_argument(bounds)
    stats = statistics(spec, checked, units)
    args: dict[str, Any] = {
        "statistics": stats,
        "by": list(spec.by) or None,
        "keys": group_keys(spec, keys),
        # DuckDB text: the release's engine runs it (transpiled by sqlglot for Spark)
        "where": spec.where,
    }
    if spec.computed:  # row-wise expressions, read by name (query.sql_expressions)
        args["computed"] = dict(spec.computed)
    bounded = any(isinstance(s, tuple) and s[1].kind != "count" for s in stats.values())
    if checked == "private" and bounded:
        args["bounds"] = "private"
    return args


# the Parameters section of sql's docstring (dpsense._docs)
_SQL_PARAMETERS: Final = """\
query : str
    ``SELECT by-columns, aggregates FROM table [WHERE ...] [GROUP BY ...] [ORDER BY
    ...] [LIMIT n]`` in DuckDB's dialect, parsed with sqlglot. Aggregates: COUNT(*),
    COUNT(col), SUM, AVG, MEDIAN, QUANTILE_CONT / QUANTILE_DISC / PERCENTILE_CONT (a
    list of levels gives several quantiles), VAR_POP / VARIANCE, STDDEV_POP / STDDEV.
    ``COUNT(DISTINCT unit)`` counts people. Row-wise expressions (arithmetic, FLOOR,
    ROUND, CAST, CASE WHEN, COALESCE, ...) may stand in SELECT, GROUP BY and inside an
    aggregate, each named by its alias (``keys=`` and ``bounds=`` use it). Tables are
    joined with JOIN / LEFT JOIN ... ON equalities or USING (docs/joins.md). FROM a
    subquery (or one CTE) grouped by the privacy unit reads one row per person: SUM,
    COUNT, AVG, MIN, MAX per person (and public group), bounded by ``bounds`` keyed by
    their aliases (docs/queries.md §7). Anything else (other subqueries, other DISTINCT,
    HAVING, window functions, MIN/MAX, UNION, other WITH, SELECT *) is an InputError
    naming it (docs/sql.md).
tables : mapping of str to data, optional
    The tables by name: a pandas/Polars DataFrame, an Arrow table, a DuckDB relation,
    a CSV/Parquet path or a Spark DataFrame. A query may also read FROM 'data.parquet'
    (a quoted path) or a temporary view of the active Spark session.
epsilon, delta : float
    The total budget of the query, split between its statistics by ``weights``
    (equal by default). Without ``keys`` the groups are chosen by private partition
    selection, which needs ``delta > 0``.
privacy_unit : str or mapping, optional
    The column identifying a person (in every private table), or per table its unit
    column or a foreign-key path ``(column, table, key)`` to a table that holds it:
    ``{"orders": "customer_id", "items": ("order_id", "orders", "order_id")}``.
public_tables : list of str, optional
    Tables that hold no one's data (codes, regions, calendars): joined freely, and
    when every GROUP BY column comes from them their distinct values are the groups.
    Every other table is private (docs/joins.md).
max_rows_per_unit, max_groups_per_unit
    As in :func:`dpsense.release`: the bounds on what one person contributes, applied
    to the joined rows.
bounds : mapping of column to (lower, upper), or "private"
    Public bounds of each aggregated column (SQL carries none), chosen without looking
    at the data; or "private" to find them privately (``bounds_share`` of epsilon).
    COUNT needs none.
keys : mapping of column to list of values, or None
    The public groups: the values of each GROUP BY column (every combination is
    released, absent ones included); None for private partition selection.
weights, nulls, schema, rng, bounds_share, interval
    As in :func:`dpsense.release` (``interval="privacy+sampling"``: population intervals
    for AVG, MEDIAN and one-level quantiles).
accountant : Accountant, optional
    Charge the query to this accountant (its ledger) first: one charge of the total.
dataset : str, optional
    The ledger label (default: the FROM table).
"""


@doc_parts(parameters=_SQL_PARAMETERS)
def sql(
    query: str,
    *,
    tables: Mapping[str, Any] | None = None,
    epsilon: float,
    delta: float = 0.0,
    privacy_unit: str | Mapping[str, Any] | None = None,
    public_tables: Sequence[str] | None = None,
    max_rows_per_unit: int = 1,
    max_groups_per_unit: int = 1,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    keys: Any = None,
    weights: Mapping[str, float] | None = None,
    nulls: str = "error",
    schema: Mapping[str, str] | None = None,
    rng: object = None,
    bounds_share: float | None = None,
    interval: str = "privacy",
    accountant: Accountant | None = None,
    dataset: str | None = None,
) -> QueryResult:
    """Release the aggregates of one SQL SELECT with differential privacy.

    Parameters
    ----------
    <<parameters>>

    Returns
    -------
    QueryResult
        One row per released group in ORDER BY order (at most LIMIT rows): the by-columns,
        a column per aggregate and its accuracy where public.
    """
    from dpsense.query.sql import parse_sql

    spec = parse_sql(query)
    data, privacy_unit, keys, label, units, schema = _query_input(
        spec, tables, privacy_unit, public_tables, keys, schema
    )
    args = sql_arguments(spec, bounds, keys, units)
    stats = args.pop("statistics")
    release_args, method_options = release_arguments(
        {
            "privacy_unit": privacy_unit,
            "max_rows_per_unit": max_rows_per_unit,
            "max_groups_per_unit": max_groups_per_unit,
            "weights": weights,
            "nulls": nulls,
            "schema": schema,
            "bounds_share": bounds_share,
            "interval": interval,
            **args,
        }
    )
    where = _door(accountant)
    label = label if dataset is None else dataset
    request = Request(data, stats, release_args, epsilon, delta, rng, method_options, where, label)
    result = execute(request, accountant)
    assert isinstance(result, QueryResult)  # a dict of statistics is a query
    return _post_process(spec, result)


def _query_input(
    spec: SqlQuery,
    tables: Mapping[str, Any] | None,
    privacy_unit: str | Mapping[str, Any] | None,
    public_tables: Sequence[str] | None,
    keys: Any,
    schema: Mapping[str, str] | None,
) -> tuple[Any, Any, Any, str, frozenset[str], Mapping[str, str] | None]:
    """The data the query reads (its tables joined, when it reads several), its privacy
    unit, keys, ledger label, unit columns and schema."""
    if spec.per_unit is not None:  # a subquery grouped by the unit: one row per person
        from dpsense.query.sql_per_unit import per_unit_handle

        data = resolve_table(spec, tables)
        handle = per_unit_handle(spec, data, privacy_unit, public_tables)
        return handle, privacy_unit, keys, spec.table, frozenset({handle.privacy_unit}), schema
    if reads_several_tables(spec, privacy_unit, public_tables):
        joined = joined_input(
            spec.join_form,
            lambda name, is_path: resolve_named(name, is_path, tables),
            tables,
            privacy_unit,
            public_tables,
            keys,
            schema,
        )
        return (
            joined.data,
            joined.unit,
            joined.keys,
            joined.label,
            joined.unit_names,
            joined.schema,
        )
    data = resolve_table(spec, tables)
    _check_columns(spec, data)
    units = frozenset({privacy_unit}) if isinstance(privacy_unit, str) else frozenset()
    return data, privacy_unit, keys, spec.table, units, schema


def _door(accountant: object) -> str:
    """Where the query is released, as its messages name it: ``ds.sql``, or
    ``Accountant.release`` when it is charged to ``accountant`` (checked first)."""
    if accountant is None:
        return _WHERE
    from dpsense.accountant import Accountant

    if not isinstance(accountant, Accountant):
        raise InputError(
            Param("accountant", of=_WHERE),
            f" must be a ds.Accountant. Got {type(accountant).__name__} instead.",
        )
    return "Accountant.release"


def _check_columns(spec: SqlQuery, data: Any) -> None:
    """Every column the query reads is in its table, in the query's words (before the
    release names a missing column by the argument it would have in ds.release)."""
    if isinstance(data, str) and data == "-":
        return  # standard input is read once, by the release
    from dpsense.query._sql_groups import check_group_aliases
    from dpsense.query.join_form import table_columns

    columns, label = table_columns(data)
    check_group_aliases(spec.group_aliases, columns, label)
    for name, _ in spec.column_tables:
        if name not in columns:
            shown = ", ".join(repr(c) for c in columns[:40])
            more = ", ..." if len(columns) > 40 else ""
            raise InputError(
                f"The SQL query reads the column {name!r}, which is not in {label}; its "
                f"columns are {shown}{more}. Check the name."
            )


def _post_process(spec: SqlQuery, result: QueryResult) -> QueryResult:
    """ORDER BY / LIMIT / OFFSET on the released rows: a new result whose grouped
    releases hold the kept groups in the new order (post-processing: it reads released
    values and public group names only, so it costs no privacy). The group columns carry
    their SELECT aliases first."""
    result = _with_aliases(spec, result)
    if not spec.by or (not spec.order_by and spec.limit is None and spec.offset is None):
        return result
    grouped = {
        name: released
        for name, released in result.results.items()
        if isinstance(released, GroupedRelease)  # with GROUP BY, every one is
    }
    groups = [key for key, _ in next(iter(grouped.values()))]
    chosen = [groups[i] for i in ordered_rows(spec, result.to_dicts())]
    results = {
        name: replace(released, groups={key: released[key] for key in chosen})
        for name, released in grouped.items()
    }
    return replace(result, results=results)


def _with_aliases(spec: SqlQuery, result: QueryResult) -> QueryResult:
    """The result with each GROUP BY column named as released (its SELECT alias): the
    release ran on the table's columns, the aliases only rename them."""
    names = spec.released_by
    if names == spec.by:
        return result
    results = {
        name: replace(released, by=names) if isinstance(released, GroupedRelease) else released
        for name, released in result.results.items()
    }
    return replace(result, by=names, results=results)
