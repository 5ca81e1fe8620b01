"""GROUP BY of a SELECT: the grouped columns, named as SQL names them (see :mod:`.sql`).

A GROUP BY entry is a column (``GROUP BY p.country``), the alias of a SELECT column
(``SELECT p.country AS c ... GROUP BY c``) or its position in the SELECT list
(``GROUP BY 1``). Every form resolves to the column read from the table; the released
column carries the SELECT alias. As in DuckDB, a name in GROUP BY means the table's column
before an alias: an alias that is also a column of the tables is refused once the tables'
column names are known (:func:`check_group_aliases`), so that no query groups by other
rows than DuckDB would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import expressions as exp

from dpsense.errors import InputError
from dpsense.query._sql_items import column_name, refuse

__all__ = ["GroupBy", "check_group_aliases", "group_by"]


@dataclass(frozen=True)
class GroupBy:
    """The GROUP BY columns (as read from the tables, in order) and the SELECT aliases that
    GROUP BY names instead of a column: alias -> the column it stands for."""

    by: tuple[str, ...]
    aliases: tuple[tuple[str, str], ...] = ()


def _select_targets(tree: exp.Select) -> list[tuple[str | None, exp.Expression]]:
    """Each SELECT item as (alias or None, the expression under it)."""
    out: list[tuple[str | None, exp.Expression]] = []
    for item in tree.expressions:
        if isinstance(item, exp.Alias):
            out.append((str(item.alias), item.this))
        else:
            out.append((None, item))
    return out


def _is_column(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and not isinstance(node.this, exp.Star)


def group_by(tree: exp.Select, qualifiers: frozenset[str]) -> GroupBy:
    """The GROUP BY columns of ``tree``: names, SELECT aliases and positions resolved to
    the columns they stand for (refusals name the entry, never a value)."""
    group = tree.args.get("group")
    if group is None:
        return GroupBy(())
    if group.args.get("all"):
        raise refuse("uses GROUP BY ALL; list the columns: GROUP BY year, region.")
    for key in ("rollup", "cube", "grouping_sets", "totals"):
        if group.args.get(key):
            raise refuse(
                f"uses GROUP BY {key.upper().replace('_', ' ')}; list plain columns (run "
                "one query per grouping: each is its own release)."
            )
    targets = _select_targets(tree)
    by_alias = {alias: node for alias, node in targets if alias is not None}
    out: list[str] = []
    aliases: dict[str, str] = {}
    for item in group.expressions:
        if isinstance(item, exp.Literal) and not item.is_string:
            column = _position(item, targets)
        elif _is_column(item) and not item.table and item.name in by_alias:
            target = by_alias[item.name]
            if not _is_column(target):
                raise refuse(
                    f"groups by {item.name!r}, the alias of an aggregate or expression of "
                    "the SELECT list; GROUP BY takes columns (their names, SELECT aliases "
                    "or positions)."
                )
            assert isinstance(target, exp.Column)
            column = target
            if str(target.name) != item.name:
                aliases[str(item.name)] = str(target.name)
        elif _is_column(item):
            assert isinstance(item, exp.Column)
            column = item
        else:
            raise refuse(
                "groups by an expression; GROUP BY takes columns: their names, SELECT "
                "aliases or positions (GROUP BY 1), and the column computed beforehand."
            )
        name = column_name(column, qualifiers, "GROUP BY")
        if name in out:
            raise refuse(f"lists the GROUP BY column {name!r} twice.")
        out.append(name)
    return GroupBy(tuple(out), tuple(aliases.items()))


def _position(item: exp.Literal, targets: list[tuple[str | None, exp.Expression]]) -> exp.Column:
    """The SELECT column at position ``item`` (1-based) of GROUP BY."""
    text = str(item.this)
    position = int(text) if text.isdigit() else 0
    if not 1 <= position <= len(targets):
        raise refuse(
            f"groups by position {text}; the SELECT list has {len(targets)} items "
            "(GROUP BY 1 is the first)."
        )
    alias, node = targets[position - 1]
    if not _is_column(node):
        named = f" ({alias!r})" if alias is not None else ""
        raise refuse(
            f"groups by position {position}{named}, which is not a column of the SELECT "
            "list but an aggregate or expression; GROUP BY takes columns (name the column, "
            "or its position in SELECT)."
        )
    assert isinstance(node, exp.Column)
    return node


def check_group_aliases(
    aliases: Iterable[tuple[str, str]], columns: Iterable[str], where: str
) -> None:
    """Refuse a GROUP BY alias that is also a column of ``where`` (DuckDB would group by
    that column, not by the aliased one)."""
    names = set(columns)
    for alias, column in aliases:
        if alias in names:
            raise InputError(
                f"The SQL query groups by {alias!r}, which is both the alias of the column "
                f"{column!r} and a column of {where}; SQL groups by the column. Write "
                f"GROUP BY {column} (or its position), or choose another alias."
            )
