"""Row-wise expressions in a SELECT: lifted into computed columns (see :mod:`.sql`).

``SELECT FLOOR(age / 10) * 10 AS decade, AVG(price * qty) AS spend ... GROUP BY
FLOOR(age / 10) * 10`` reads two values per row that the table does not hold. Each is a
function of one row, so it becomes a *computed column* of the release
(``tables.row_map``: checked with the WHERE filter's allow-list, made total on both
engines, added before the contribution bounding), and the query is rewritten to read it by
name: ``SELECT decade, AVG(spend) AS spend ... GROUP BY decade``. What is named how:

* a grouped expression is its SELECT alias (``keys={"decade": [...]}``); GROUP BY may
  repeat the expression, name the alias or give the position (``GROUP BY 1``), as in SQL;
* an expression inside an aggregate is the aggregate's alias (``bounds={"spend": (l, u)}``
  for ``AVG(price * qty) AS spend``);
* each needs its alias (``AS``): it names the released column, the public keys and the
  bounds, so it is refused without one; an alias that is also a column of the table is
  refused when the table is opened (``row_map.check_names``).

Nothing here reads data; every refusal names the construct, never a value.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import expressions as exp

from dpsense.query._sql_items import column_name, refuse
from dpsense.tables.row_filter import ALLOWED_SUMMARY, refused_reason

__all__ = ["Lifted", "lift_expressions"]


@dataclass(frozen=True)
class Lifted:
    """The SELECT with its row-wise expressions read by name, and the computed columns:
    (name, expression as DuckDB text without table qualifiers), in SELECT order."""

    tree: exp.Select
    computed: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.computed)


def _is_column(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and not isinstance(node.this, exp.Star)


def _row_wise(node: exp.Expression) -> bool:
    """An expression of one row that is not a bare column, a literal or a star (an
    aggregate, a window or a subquery inside it is left to the other checks)."""
    if _is_column(node) or isinstance(node, exp.Literal | exp.Star | exp.Distinct):
        return False
    if isinstance(node, exp.Column):
        return False
    kinds = (exp.AggFunc, exp.Window, exp.Subquery, exp.Select, exp.WithinGroup, exp.Filter)
    return not any(isinstance(n, kinds) for n in node.walk())


def _text(node: exp.Expression, qualifiers: frozenset[str], where: str) -> str:
    """``node`` checked against the WHERE allow-list, as DuckDB text without qualifiers."""
    for inner in node.walk():
        reason = refused_reason(inner)
        if reason is not None:
            raise refuse(
                f"uses {reason} in {where}, which is not supported: a row-wise expression "
                f"reads one row with {ALLOWED_SUMMARY}."
            )
        if isinstance(inner, exp.Column):
            column_name(inner, qualifiers, where)

    def unqualify(inner: exp.Expression) -> exp.Expression:
        if isinstance(inner, exp.Column) and inner.table:
            return exp.column(inner.this.copy())
        return inner

    return str(node.copy().transform(unqualify).sql(dialect="duckdb"))


def _key(node: exp.Expression, qualifiers: frozenset[str], where: str = "GROUP BY") -> str:
    """The expression's text for matching GROUP BY and ORDER BY to SELECT."""
    return _text(node, qualifiers, where)


def _argument(node: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """(the node holding an aggregate's value argument, that argument), or None."""
    if isinstance(node, exp.WithinGroup):
        order = node.expression
        if isinstance(order, exp.Order) and len(order.expressions) == 1:
            return order.expressions[0], order.expressions[0].this
        return None
    if isinstance(node, exp.AggFunc) and isinstance(node.this, exp.Expression):
        return node, node.this
    return None


def lift_expressions(tree: exp.Select, qualifiers: frozenset[str]) -> Lifted:
    """``tree`` (a copy) with each row-wise expression of SELECT, GROUP BY and ORDER BY,
    and inside each aggregate, replaced by its computed column (module docstring)."""
    lifted = tree.copy()
    computed: dict[str, str] = {}
    grouped: dict[str, str] = {}  # expression text -> alias
    for item in lifted.expressions:
        alias = str(item.alias) if isinstance(item, exp.Alias) else None
        node = item.this if isinstance(item, exp.Alias) else item
        if _row_wise(node):
            if alias is None:
                raise refuse(
                    "selects an expression without a name; give it one with AS (e.g. "
                    "FLOOR(age / 10) * 10 AS decade): the released column, its keys= and "
                    "GROUP BY name it."
                )
            computed[alias] = _text(node, qualifiers, "SELECT")
            grouped[_key(node, qualifiers)] = alias
            node.replace(exp.column(alias))
            continue
        argument = _argument(node)
        if argument is None or not _row_wise(argument[1]):
            continue
        if alias is None:
            raise refuse(
                "aggregates an expression without naming the aggregate; give it a name with "
                "AS (e.g. AVG(price * qty) AS spend): bounds= names the expression by it."
            )
        holder, value = argument
        computed[alias] = _text(value, qualifiers, "an aggregate")
        holder.set("this", exp.column(alias))
    _lift_groups(lifted, grouped, qualifiers)
    if computed:
        _lift_order(lifted, grouped, qualifiers)
    return Lifted(lifted, tuple(computed.items()))


def _lift_groups(tree: exp.Select, grouped: dict[str, str], qualifiers: frozenset[str]) -> None:
    """GROUP BY entries that repeat a SELECT expression read its alias; an expression not
    selected is refused (the released table names its groups by the SELECT alias)."""
    group = tree.args.get("group")
    if group is None:
        return
    for entry in list(group.expressions):
        if not _row_wise(entry):
            continue
        alias = grouped.get(_key(entry, qualifiers))
        if alias is None:
            raise refuse(
                "groups by an expression that the SELECT list does not name; select it with "
                "an alias (SELECT FLOOR(age / 10) * 10 AS decade ... GROUP BY decade): the "
                "released table and keys= name the groups by it."
            )
        entry.replace(exp.column(alias))


def _lift_order(tree: exp.Select, grouped: dict[str, str], qualifiers: frozenset[str]) -> None:
    """ORDER BY entries that repeat a SELECT expression order by its alias."""
    order = tree.args.get("order")
    if order is None:
        return
    for ordered in order.expressions:
        target = ordered.this
        if isinstance(target, exp.Expression) and _row_wise(target):
            alias = grouped.get(_key(target, qualifiers, "ORDER BY"))
            if alias is not None:
                target.replace(exp.column(alias))
