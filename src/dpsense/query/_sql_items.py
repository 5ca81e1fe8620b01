"""The items of a SELECT: aggregates, WHERE, ORDER BY and LIMIT (see :mod:`.sql`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlglot import expressions as exp

from dpsense.errors import Door, InputError, Message, Name, Part
from dpsense.statistics.names import CATALOG, SQL_AGGREGATES
from dpsense.tables.row_filter import ALLOWED_SUMMARY, refused_reason

__all__ = [
    "AGGREGATES",
    "OrderKey",
    "SqlAggregate",
    "column_name",
    "count_clause",
    "order_by",
    "refuse",
    "select_items",
    "where_text",
]

_WHERE = "ds.sql"

AGGREGATES: Final = SQL_AGGREGATES
"""The aggregates a query may use (docs/sql.md)."""

_FUNCTIONS: Final[dict[type[exp.Expression], tuple[str, str]]] = {
    getattr(exp, node): (s.key, s.sql_prefix) for s in CATALOG for node in s.sql_nodes
}
"""sqlglot's node of an aggregate -> (the statistic, the prefix of the default name)."""

_MIN_MAX: Final = Message(
    "MIN/MAX reveal one person's value; use QUANTILE_CONT(col, 0.01) or "
    "QUANTILE_CONT(col, 0.99) instead, or find bounds with ",
    Door("ds.private_bounds"),
    ".",
)


@dataclass(frozen=True)
class SqlAggregate:
    """One aggregate of the SELECT list.

    Attributes
    ----------
    name : str
        The released column: the alias, or the default name (``count``, ``avg_hours``,
        ``median_wage``, ``quantile_wage``, ``var_wage``, ``stddev_wage``, ...).
    statistic : str
        count, sum, mean, median, quantile, quantiles, variance, std, or people
        (``COUNT(DISTINCT unit)``: the privacy units per group).
    column : str or None
        The aggregated column; None for ``COUNT(*)``.
    levels : tuple of float
        The level(s) p of a quantile (one) or of several quantiles (a list in the SQL).
    """

    name: str
    statistic: str
    column: str | None
    levels: tuple[float, ...] = ()


@dataclass(frozen=True)
class OrderKey:
    """One ORDER BY key: a released column, its direction and where refused (null) values
    go."""

    column: str
    descending: bool = False
    nulls_first: bool = False


def refuse(*message: Part | Message) -> InputError:
    """The InputError of a construct outside the subset (``message`` names it and says
    what to do instead; it quotes names from the query, never values)."""
    return InputError("The SQL query ", *message)


def column_name(node: exp.Column, qualifiers: frozenset[str], where: str) -> str:
    """The column's name; a qualifier must be the FROM table's name or alias."""
    table = node.table
    if node.args.get("db") or node.args.get("catalog") or (table and table not in qualifiers):
        raise refuse(
            f"qualifies the column {node.name!r} in {where} with a table that is not one "
            "of FROM or JOIN."
        )
    return str(node.name)


def select_items(
    tree: exp.Select, by: tuple[str, ...], qualifiers: frozenset[str]
) -> tuple[tuple[SqlAggregate, ...], tuple[str, ...], tuple[str, ...]]:
    """The aggregates, the released columns of the SELECT list (in its order) and the
    released name of each GROUP BY column (its SELECT alias, else its name)."""
    aggregates: list[SqlAggregate] = []
    columns: list[str] = []
    renamed: dict[str, str] = {}
    for item in tree.expressions:
        alias: str | None = None
        node = item
        if isinstance(item, exp.Alias):
            alias, node = str(item.alias), item.this
        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            raise refuse(
                "uses SELECT *, which would release rows; select GROUP BY columns and "
                "aggregates (e.g. SELECT year, COUNT(*) ... GROUP BY year)."
            )
        if isinstance(node, exp.Column):
            name = column_name(node, qualifiers, "SELECT")
            if name not in by:
                raise refuse(
                    f"selects the column {name!r} without aggregating it; add it to GROUP BY "
                    "or aggregate it (e.g. AVG or MEDIAN), since released values must be "
                    "aggregates."
                )
            if name in renamed:
                raise refuse(
                    f"selects the GROUP BY column {name!r} twice; the released table has "
                    "one column per group column: select it once."
                )
            renamed[name] = alias or name
            columns.append(alias or name)
            continue
        agg = _aggregate(node, alias, qualifiers)
        if agg.name in by and agg.name not in columns:
            raise refuse(
                f"names the aggregate {agg.name!r} like the GROUP BY column {agg.name!r}; "
                "give the aggregate another name with AS."
            )
        aggregates.append(agg)
        columns.append(agg.name)
    if not aggregates:
        raise refuse(
            "selects no aggregate; a release needs at least one, e.g. COUNT(*) or AVG(col)."
        )
    by_names = tuple(renamed.get(b, b) for b in by)
    released = [*columns, *(n for b, n in zip(by, by_names, strict=True) if b not in renamed)]
    for name in released:
        if released.count(name) > 1:
            raise refuse(f"releases two columns named {name!r}; give them distinct names with AS.")
    return tuple(aggregates), tuple(columns), by_names


def _aggregate(node: exp.Expression, alias: str | None, qualifiers: frozenset[str]) -> SqlAggregate:
    """One SELECT item that must be a supported aggregate of one column."""
    if isinstance(node, exp.Window):
        raise refuse(
            "uses a window function (OVER): it computes a value per row; use aggregates "
            "with GROUP BY."
        )
    if isinstance(node, exp.Filter):
        raise refuse(
            "uses an aggregate FILTER clause; filter rows with WHERE (one query per filter)."
        )
    if isinstance(node, exp.WithinGroup):
        kind, target, levels_node = _within_group(node)
    else:
        kind, target, levels_node = _function_call(node)
    statistic, prefix = _FUNCTIONS[kind]
    if isinstance(node, exp.Count) and isinstance(target, exp.Distinct):
        counted = target.expressions
        if len(counted) == 1 and isinstance(counted[0], exp.Column):
            # people per group: checked against the privacy unit by the release
            column = column_name(counted[0], qualifiers, "COUNT(DISTINCT ...)")
            return SqlAggregate(name=alias or f"people_{column}", statistic="people", column=column)
    if isinstance(target, exp.Distinct):
        raise refuse(
            f"uses {prefix.upper()}(DISTINCT ...): the number of distinct values is not "
            "bounded by one person's rows this way; to count people use COUNT(DISTINCT "
            "person) with the person column as ",
            Name("privacy_unit"),
            ".",
        )
    if isinstance(node, exp.Count) and isinstance(target, exp.Star):
        return SqlAggregate(name=alias or "count", statistic="count", column=None)
    if not isinstance(target, exp.Column) or isinstance(target.this, exp.Star):
        raise refuse(
            f"aggregates an expression in {prefix.upper()}(...); aggregates take one column "
            "(compute the column beforehand, or filter rows with WHERE)."
        )
    column = column_name(target, qualifiers, "an aggregate")
    levels: tuple[float, ...] = ()
    if statistic == "quantile":
        levels = _levels(levels_node)
        if len(levels) > 1 or isinstance(levels_node, exp.Array):
            statistic = "quantiles"
    return SqlAggregate(
        name=alias or f"{prefix}_{column}", statistic=statistic, column=column, levels=levels
    )


def _within_group(
    node: exp.Expression,
) -> tuple[type[exp.Expression], exp.Expression, exp.Expression | None]:
    """``PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY col)``: its kind, column and levels."""
    inner, order = node.this, node.expression
    if not isinstance(inner, exp.PercentileCont | exp.PercentileDisc) or not isinstance(
        order, exp.Order
    ):
        raise refuse("uses WITHIN GROUP with a function other than PERCENTILE_CONT.")
    keys = order.expressions
    if len(keys) != 1 or keys[0].args.get("desc"):
        raise refuse(
            "uses PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY ...) with other than one "
            "ascending column; write QUANTILE_CONT(col, p)."
        )
    return type(inner), keys[0].this, inner.this


def _function_call(
    node: exp.Expression,
) -> tuple[type[exp.Expression], exp.Expression, exp.Expression | None]:
    """A supported aggregate function's kind, argument and (quantiles) levels."""
    if isinstance(node, exp.Min | exp.Max | exp.ArgMin | exp.ArgMax):
        raise refuse(f"uses {node.key.upper()}: ", _MIN_MAX)
    kind = type(node)
    if kind not in _FUNCTIONS:
        name = _function_name(node)
        what = f"the function {name}" if name else "an expression"
        raise refuse(
            f"selects {what}, which is not supported; supported aggregates: "
            f"{', '.join(AGGREGATES)}. Expressions of aggregates are computed "
            "afterwards from the released columns."
        )
    levels_node: exp.Expression | None = None
    if kind in (exp.PercentileCont, exp.PercentileDisc):
        levels_node = node.args.get("expression")
    elif kind is exp.Quantile:
        levels_node = node.args.get("quantile")
    if not isinstance(node, exp.Count) and node.expressions:
        raise refuse(f"passes extra arguments to {node.key.upper()}; it takes one column.")
    return kind, node.this, levels_node


def _levels(node: exp.Expression | None) -> tuple[float, ...]:
    """The level p (a number) or levels ([p1, p2, ...]) of a quantile."""
    items = node.expressions if isinstance(node, exp.Array | exp.Tuple) else [node]
    out: list[float] = []
    for item in items:
        value = item.this if isinstance(item, exp.Neg) else item
        if not isinstance(value, exp.Literal) or value.is_string:
            raise refuse(
                "gives a quantile level that is not a number; write QUANTILE_CONT(col, 0.9) "
                "or QUANTILE_CONT(col, [0.1, 0.5, 0.9])."
            )
        number = float(value.this)
        out.append(-number if isinstance(item, exp.Neg) else number)
    if not out:
        raise refuse("gives an empty list of quantile levels.")
    if any(not 0 < p < 1 for p in out):
        raise refuse(
            "gives a quantile level outside (0, 1); a level is a share of the rows, e.g. "
            "QUANTILE_CONT(col, 0.9) for the 90th percentile."
        )
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise refuse(
            "gives quantile levels that are not strictly increasing; sort them and drop "
            "repeats, e.g. QUANTILE_CONT(col, [0.1, 0.5, 0.9])."
        )
    return tuple(out)


def where_text(tree: exp.Select, qualifiers: frozenset[str]) -> str | None:
    """The WHERE predicate as DuckDB text (qualifiers dropped), after checking that it
    reads one row with the allow-list of total operations shared with ``where=``
    (:func:`dpsense.tables.row_filter.refused_reason`); the release makes it total."""
    clause = tree.args.get("where")
    if clause is None:
        return None
    predicate = clause.this.copy()
    for node in predicate.walk():
        if isinstance(node, exp.AggFunc) and isinstance(node, exp.Min | exp.Max):
            raise refuse(f"uses {node.key.upper()} in WHERE: ", _MIN_MAX)
        reason = refused_reason(node)
        if reason is not None:
            if reason.startswith("a subquery"):
                raise refuse(
                    "uses a subquery in WHERE (a subquery over private data); WHERE takes "
                    "row-level predicates: write the values out, col IN (1, 2, 3)."
                )
            if reason.startswith("the aggregate"):
                raise refuse(
                    f"uses {reason} in WHERE; WHERE takes row-level predicates (HAVING on "
                    "private values is not supported either)."
                )
            raise refuse(
                f"uses {reason} in WHERE, which is not supported: WHERE takes row-level "
                f"{ALLOWED_SUMMARY}."
            )
        if isinstance(node, exp.Column):
            column_name(node, qualifiers, "WHERE")

    def unqualify(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.table:
            return exp.column(node.this.copy())
        return node

    return str(predicate.transform(unqualify).sql(dialect="duckdb"))


def order_by(
    tree: exp.Select,
    columns: tuple[str, ...],
    qualifiers: frozenset[str],
    renamed: Mapping[str, str] | None = None,
) -> tuple[OrderKey, ...]:
    """The ORDER BY keys as released columns (a name, alias, position, or the aggregate
    as written in SELECT); ``renamed`` maps a GROUP BY column to its released name (an
    alias), so the column's own name orders by it too."""
    order = tree.args.get("order")
    if order is None:
        return ()
    by_text = {
        _strip_alias(item).sql(dialect="duckdb"): name
        for item, name in zip(tree.expressions, columns, strict=True)
    }
    keys: list[OrderKey] = []
    for ordered in order.expressions:
        target = ordered.this
        name: str | None = None
        if isinstance(target, exp.Column) and not target.table and target.name in columns:
            name = str(target.name)
        elif isinstance(target, exp.Column) and target.name in columns:
            name = column_name(target, qualifiers, "ORDER BY")
        elif isinstance(target, exp.Column) and target.name in (renamed or {}):
            name = (renamed or {})[column_name(target, qualifiers, "ORDER BY")]
        elif isinstance(target, exp.Literal) and not target.is_string:
            position = int(float(target.this))
            if not 1 <= position <= len(columns):
                raise refuse(
                    f"orders by position {position}; the SELECT list has {len(columns)} items."
                )
            name = columns[position - 1]
        else:
            name = by_text.get(target.sql(dialect="duckdb"))
        if name is None:
            raise refuse(
                "orders by something that is not a released column; ORDER BY sorts the "
                "released rows: name a SELECT column, alias or position."
            )
        keys.append(
            OrderKey(
                column=name,
                descending=bool(ordered.args.get("desc")),
                nulls_first=bool(ordered.args.get("nulls_first")),
            )
        )
    return tuple(keys)


def _function_name(node: exp.Expression) -> str | None:
    """The SQL name of a function node (as written for unknown ones), else None."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).upper()
    if isinstance(node, exp.Func):
        return str(node.sql_name())
    return None


def _strip_alias(node: exp.Expression) -> exp.Expression:
    """The expression under an alias."""
    return node.this if isinstance(node, exp.Alias) else node


def count_clause(tree: exp.Select, key: str, word: str) -> int | None:
    """The whole number of LIMIT or OFFSET, or None without the clause."""
    clause: Any = tree.args.get(key)
    if clause is None:
        return None
    value = clause.expression
    if not isinstance(value, exp.Literal) or value.is_string or not value.this.isdigit():
        raise refuse(f"has a {word} that is not a whole number; write {word} 10.")
    return int(value.this)
