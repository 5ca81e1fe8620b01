"""A subquery (or CTE) grouped by the privacy unit in :func:`dpsense.sql`: one row per person.

    SELECT QUANTILE_CONT(total, 0.9) AS p90
    FROM (SELECT person_id, SUM(amount) AS total FROM orders GROUP BY person_id)

The inner query reads one table (a name or a quoted path), may filter its rows with WHERE
(the row-level allow-list), groups by columns (the privacy unit, and public groups) and
selects those columns and aliased aggregates ``SUM``, ``COUNT``, ``AVG``, ``MIN``, ``MAX``
of a column (``COUNT(*)``). Anything else inside (joins, HAVING, DISTINCT, ORDER BY or
LIMIT, window functions, another subquery, an aggregate without an alias, an expression)
is refused from the text, naming the construct. Whether the inner GROUP BY holds the
privacy unit is checked when the unit is known (:func:`per_unit_handle`); the release then
reads the per-person rows as :func:`dpsense.per_unit` builds them (docs/sql.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from dpsense.errors import Assign, InputError
from dpsense.query._sql_items import column_name, refuse, where_text
from dpsense.query.sql_joins import sources_and_joins
from dpsense.tables.rows.joins import Scan
from dpsense.tables.rows.per_unit import PerUnitValue

if TYPE_CHECKING:
    from dpsense.query.per_unit import PerUnit
    from dpsense.query.sql import SqlQuery

__all__ = ["SqlPerUnit", "per_unit_handle", "split_per_unit", "with_per_unit"]

_AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Sum: "sum",
    exp.Count: "count",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
}

_UNGROUPED = (
    "uses a subquery in FROM (a subquery over private data); prepare the table "
    "beforehand and query it, or filter rows with WHERE."
)
"""A subquery without GROUP BY (the message of a subquery in FROM before per-person
subqueries, unchanged)."""
_UNGROUPED_CTE = (
    "uses WITH (a common table expression over private data); prepare the table "
    "beforehand and query it, or filter rows with WHERE."
)
"""The same for a CTE."""


@dataclass(frozen=True)
class SqlPerUnit:
    """The inner query: its table, its GROUP BY columns, its per-person values, its
    WHERE (DuckDB text) and the columns it selects (the derived table's)."""

    source: Scan
    grouped: tuple[str, ...]
    values: tuple[PerUnitValue, ...]
    where: str | None
    columns: tuple[str, ...]


def split_per_unit(tree: exp.Select) -> tuple[exp.Select, SqlPerUnit | None]:
    """The outer SELECT with its FROM subquery (or CTE) replaced by a table of the
    subquery's alias, and the inner query; ``(tree, None)`` without one."""
    cte = tree.args.get("with_")
    source = tree.args.get("from_")
    inner: exp.Expression | None = None
    alias = ""
    if cte is not None:
        if cte.args.get("recursive") or len(cte.expressions) != 1:
            raise refuse(
                "uses WITH with several (or recursive) common table expressions; one CTE "
                "grouped by the privacy unit is supported (WITH per AS (SELECT unit, "
                "SUM(col) AS total FROM t GROUP BY unit) SELECT ... FROM per)."
            )
        (entry,) = cte.expressions
        alias = str(entry.alias)
        named = source.this if source is not None else None
        if not (isinstance(named, exp.Table) and str(named.name) == alias and not named.db):
            raise refuse(
                f"defines the CTE {alias!r} but does not read it alone; read only the "
                "CTE in the outer query, or join in the release of one table instead."
            )
        inner = entry.this
        tree = tree.copy()
        tree.set("with_", None)
    elif source is not None and isinstance(source.this, exp.Subquery):
        inner = source.this.this
        alias = str(source.this.alias) if source.this.alias else "per_person"
    if inner is None:
        return tree, None
    if tree.args.get("joins"):
        raise refuse(
            "joins a per-person subquery with another table, which is not supported; "
            "join inside the release of one table (JOIN ... ON), or aggregate per person "
            "from one table."
        )
    group = inner.args.get("group") if isinstance(inner, exp.Select) else None
    if group is None or not group.expressions:  # not grouped at all: as before
        raise refuse(_UNGROUPED_CTE if cte is not None else _UNGROUPED)
    assert isinstance(inner, exp.Select)
    spec = _inner(inner)
    outer = tree.copy()
    outer.set("from_", exp.From(this=exp.Table(this=exp.to_identifier(alias))))
    return outer, spec


def _inner(tree: exp.Select) -> SqlPerUnit:
    """The inner query, checked from its text."""
    for key, shown in (
        ("with_", "WITH"),
        ("distinct", "SELECT DISTINCT"),
        ("having", "HAVING (it would drop people on private values)"),
        ("qualify", "window functions"),
        ("windows", "window functions"),
        ("order", "ORDER BY"),
        ("limit", "LIMIT"),
        ("offset", "OFFSET"),
    ):
        if tree.args.get(key):
            raise refuse(
                f"uses {shown} inside the per-person subquery, which is not supported; "
                "the subquery is SELECT unit, aggregates FROM table [WHERE ...] GROUP BY unit."
            )
    source = tree.args.get("from_")
    if source is not None and isinstance(source.this, exp.Subquery | exp.Select):
        raise refuse(
            "nests a subquery inside the per-person subquery, which is not supported; "
            "aggregate per person from one table."
        )
    sources, joins = sources_and_joins(tree)
    if joins:
        raise refuse(
            "joins tables inside the per-person subquery, which is not supported; "
            "aggregate per person from one table."
        )
    qualifiers = frozenset({sources[0].alias, sources[0].table})
    group = tree.args["group"]
    grouped: list[str] = []
    for node in group.expressions:
        if not isinstance(node, exp.Column):
            raise refuse(
                "groups the per-person subquery by an expression; group it by columns "
                "(the privacy unit, and public group columns)."
            )
        grouped.append(column_name(node, qualifiers, "GROUP BY"))
    values, columns = _select(tree, tuple(grouped), qualifiers)
    return SqlPerUnit(
        sources[0], tuple(grouped), values, where_text(tree, qualifiers), tuple(columns)
    )


def _select(
    tree: exp.Select, grouped: tuple[str, ...], qualifiers: frozenset[str]
) -> tuple[tuple[PerUnitValue, ...], list[str]]:
    """The per-person values and the selected columns of the inner SELECT."""
    values: list[PerUnitValue] = []
    columns: list[str] = []
    for item in tree.expressions:
        alias = str(item.alias) if isinstance(item, exp.Alias) else None
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            name = column_name(node, qualifiers, "SELECT")
            if name not in grouped or (alias is not None and alias != name):
                raise refuse(
                    f"selects {name!r} in the per-person subquery"
                    + (" under another name" if name in grouped else " without grouping by it")
                    + "; select the GROUP BY columns as they are, and aggregates."
                )
            columns.append(name)
            continue
        function = _AGGREGATES.get(type(node))
        if function is None:
            raise refuse(
                "selects something other than a GROUP BY column or SUM, COUNT, AVG, MIN, "
                "MAX of a column in the per-person subquery; compute it in the outer query."
            )
        argument = node.this
        if isinstance(argument, exp.Distinct):
            raise refuse("uses DISTINCT inside a per-person aggregate, which is not supported.")
        column: str | None
        if isinstance(argument, exp.Star) and function == "count":
            column = None
        elif isinstance(argument, exp.Column) and not node.expressions:
            column = column_name(argument, qualifiers, "SELECT")
        else:
            raise refuse(
                f"aggregates an expression with {function.upper()} in the per-person "
                "subquery; aggregate a column (filter rows with WHERE)."
            )
        if alias is None:
            raise refuse(
                f"leaves {function.upper()}({column or '*'}) of the per-person subquery "
                "without a name; name it (SUM(col) AS total) and bound it in ",
                Assign("bounds"),
                " by that name.",
            )
        if alias in columns:
            raise refuse(f"names two columns {alias!r} in the per-person subquery.")
        values.append(PerUnitValue(alias, function, column))
        columns.append(alias)
    if not values:
        raise refuse(
            "uses a per-person subquery without an aggregate; select aggregates "
            "(SUM(col) AS total)."
        )
    return tuple(values), columns


def with_per_unit(spec: SqlQuery, inner: SqlPerUnit | None) -> SqlQuery:
    """The outer query reading the inner query's table (for ``tables=``, the command
    line's files and the ledger's label), with the inner query."""
    if inner is None:
        return spec
    return replace(
        spec,
        table=inner.source.table,
        table_is_path=inner.source.is_path,
        sources=(inner.source,),
        per_unit=inner,
    )


def per_unit_handle(
    spec: SqlQuery, data: Any, privacy_unit: object, public_tables: object = None
) -> PerUnit:
    """The :class:`PerUnit` of the query's subquery over ``data``, once the unit is known:
    the subquery must be grouped by it; its other GROUP BY columns are public groups."""
    from dpsense.query.per_unit import PerUnit

    inner = spec.per_unit
    assert inner is not None
    if public_tables is not None:
        raise InputError(
            "The SQL query aggregates per person in a subquery of one table; ",
            Assign("public_tables"),
            " is for joins, which a per-person subquery does not support. Drop it.",
        )
    if not isinstance(privacy_unit, str):
        raise InputError(
            "The SQL query aggregates per person in a subquery: pass the column that "
            "identifies a person, ",
            Assign("privacy_unit", "col", quoted=True),
            " (one column of the subquery's table).",
        )
    if privacy_unit not in inner.grouped:
        raise refuse(
            f"uses a subquery grouped by {', '.join(map(repr, inner.grouped))}, not by the "
            f"privacy unit {privacy_unit!r}: a subquery over private data must be grouped "
            "by the unit (one row per person)."
        )
    by = tuple(c for c in inner.grouped if c != privacy_unit)
    _check_table_columns(inner, data)
    for name, _ in spec.column_tables:
        if name not in inner.columns and name != privacy_unit:
            raise InputError(
                f"The SQL query reads the column {name!r}, which its per-person subquery "
                f"does not select (it selects {', '.join(map(repr, inner.columns))})."
            )
    return PerUnit(data, privacy_unit, inner.values, by, inner.where, inner.source.table, "ds.sql")


def _check_table_columns(inner: SqlPerUnit, data: Any) -> None:
    """Every column the subquery reads is in its table (names only; no row is read)."""
    if isinstance(data, str) and data == "-":
        return  # standard input is read once, by the release
    from dpsense.query.join_form import table_columns

    columns, label = table_columns(data)
    read = [*inner.grouped, *(v.column for v in inner.values if v.column is not None)]
    if inner.where is not None:
        import sqlglot

        tree = sqlglot.parse_one(inner.where, read="duckdb")
        read += [str(c.name) for c in tree.find_all(exp.Column)]
    for name in dict.fromkeys(read):
        if name not in columns:
            shown = ", ".join(repr(c) for c in columns[:40])
            raise InputError(
                f"The SQL query's per-person subquery reads the column {name!r}, which is "
                f"not in {label}; its columns are {shown}. Check the name."
            )
