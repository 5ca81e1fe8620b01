"""FROM and JOIN of a SELECT: the tables a query reads and how they are joined.

Nothing here reads data and nothing here knows which tables are private: the shapes that
no table can make safe (a condition that is not a conjunction of column equalities, a
CROSS or NATURAL join, a comma join, a join on a subquery) are refused from the text; the
shapes that depend on which tables are private (which side of an outer join may be
optional, which private tables may meet) are checked against the declared privacy units
in :mod:`dpsense.tables.joined` (docs/joins.md).
"""

from __future__ import annotations

from typing import Final

from sqlglot import expressions as exp

from dpsense.errors import Assign
from dpsense.query._sql_items import refuse
from dpsense.tables.rows.joins import JoinStep, Scan

SqlSource = Scan
"""One table of FROM or JOIN (the join's relational form: :class:`Scan`)."""
SqlJoin = JoinStep
"""One JOIN (the join's relational form: :class:`JoinStep`)."""

__all__ = ["SqlJoin", "SqlSource", "column_tables", "sources_and_joins"]

_FILE_SUFFIXES: Final = ("parquet", "pq", "csv", "tsv", "txt", "gz")


def _source(node: exp.Expression) -> Scan:
    """A FROM or JOIN item that must be a table or a file."""
    if isinstance(node, exp.Subquery | exp.Select):
        raise refuse(
            "uses a subquery in FROM (a subquery over private data); prepare the table "
            "beforehand and query it, or filter rows with WHERE."
        )
    if not isinstance(node, exp.Table):
        raise refuse(
            "reads FROM something other than a table; name one table (FROM my_table) or "
            "a file (FROM 'data.parquet')."
        )
    if node.args.get("sample"):
        raise refuse("uses TABLESAMPLE, which is not supported; remove it.")
    if node.args.get("laterals") or node.args.get("pivots"):
        raise refuse("uses LATERAL or PIVOT, which is not supported; remove it.")
    alias = str(node.alias) if node.alias else ""
    inner = node.this
    if isinstance(inner, exp.ReadParquet | exp.ReadCSV):
        args = inner.expressions
        if len(args) != 1 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise refuse(
                f"uses {inner.key.upper()} with options; write FROM 'data.parquet' (a quoted "
                "path), or query a table by name."
            )
        path = str(args[0].this)
        return Scan(path, True, alias or path)
    if not isinstance(inner, exp.Identifier):
        raise refuse(
            "reads FROM a table function; name one table (FROM my_table) or a file "
            "(FROM 'data.parquet')."
        )
    if node.args.get("db") and str(inner.this).lower() in _FILE_SUFFIXES:
        raise refuse(
            f"reads FROM {node.args['db'].name}.{inner.this} without quotes; quote a file "
            f"path: FROM '{node.args['db'].name}.{inner.this}'."
        )
    if node.args.get("db") or node.args.get("catalog"):
        raise refuse(
            "names a table with a schema or catalog (a.b); name the table alone and pass it in ",
            Assign("tables"),
        )
    name = str(inner.this)
    # a quoted name may be a file; whether it is one is decided against tables=... later
    return Scan(name, bool(inner.quoted), alias or name)


def _pairs(
    join: exp.Join, added: Scan, known: dict[str, Scan]
) -> tuple[tuple[tuple[str, str], tuple[str, str]], ...]:
    """The column equalities of a join's ON or USING, the added table's side second."""
    using = join.args.get("using")
    condition = join.args.get("on")
    if using:
        if len(known) != 1:
            raise refuse(
                "joins with USING after several tables; write the condition with ON "
                "(ON a.col = b.col), naming each table."
            )
        (first,) = known
        return tuple(((first, str(u.name)), (added.alias, str(u.name))) for u in using)
    if condition is None:
        raise refuse(
            f"joins {added.alias!r} without a condition (FROM a, b or a JOIN without ON "
            "pairs every row with every row); write JOIN ... ON a.col = b.col."
        )
    terms: list[exp.Expression] = []
    stack = [condition]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Paren):
            stack.append(node.this)
        elif isinstance(node, exp.And):
            stack.extend((node.right, node.left))
        else:
            terms.append(node)
    out: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for term in terms:
        if not (
            isinstance(term, exp.EQ)
            and isinstance(term.this, exp.Column)
            and isinstance(term.expression, exp.Column)
        ):
            raise refuse(
                f"joins {added.alias!r} on a condition that is not column equalities; "
                "write ON a.col = b.col [AND a.other = b.other] (filter rows with WHERE)."
            )
        a = _qualified(term.this, known, added)
        b = _qualified(term.expression, known, added)
        if a[0] == b[0]:
            raise refuse(
                f"joins on two columns of the same table ({a[0]!r}); each equality of ON "
                "names one column of each table."
            )
        if b[0] != added.alias:
            a, b = b, a
        if b[0] != added.alias:
            raise refuse(
                f"joins {added.alias!r} on an equality that does not name it; each equality "
                "of ON names a column of the table being joined."
            )
        out.append((a, b))
    return tuple(out)


def _qualified(node: exp.Column, known: dict[str, Scan], added: Scan) -> tuple[str, str]:
    """(alias, column) of a column in a join condition: qualified with a table read so far."""
    table = str(node.table) if node.table else ""
    if node.args.get("db") or node.args.get("catalog"):
        raise refuse("qualifies a join column with a schema; write table.col.")
    if not table:
        raise refuse(
            f"names the column {node.name!r} in a join condition without its table; write "
            "ON a.col = b.col with each table's name or alias."
        )
    if table != added.alias and table not in known:
        raise refuse(
            f"names the table {table!r} in a join condition before it is joined; an ON "
            "condition reads the tables joined so far."
        )
    return table, str(node.name)


def _check_alias(source: Scan) -> None:
    """The names the joined SQL uses for its own tables start with dpsense_."""
    if source.alias.lower().startswith("dpsense_"):
        raise refuse(
            f"names a table {source.alias!r}: names starting with dpsense_ are reserved for "
            "the join's own tables; give it another alias (JOIN t AS t2 ON ...)."
        )


def sources_and_joins(tree: exp.Select) -> tuple[tuple[Scan, ...], tuple[JoinStep, ...]]:
    """The FROM table and each JOIN, in order (refusals from the text alone)."""
    source = tree.args.get("from_")
    if source is None:
        raise refuse("has no FROM: name one table, FROM my_table or FROM 'data.parquet'.")
    if source.this.args.get("joins"):  # a parenthesised join
        raise refuse("nests joins in parentheses; write the joins one after another.")
    first = _source(source.this)
    if len(tree.args.get("joins") or []) > 0:
        _check_alias(first)
    if tree.args.get("laterals"):
        raise refuse("uses LATERAL, which is not supported; write a JOIN ... ON.")
    known = {first.alias: first}
    joins: list[JoinStep] = []
    for join in tree.args.get("joins") or []:
        if not isinstance(join, exp.Join):
            raise refuse("uses a construct in FROM that is not a JOIN; remove it.")
        kind = str(join.args.get("kind") or "").upper()
        side = str(join.args.get("side") or "").upper()
        method = str(join.args.get("method") or "").upper()
        added = _source(join.this)
        _check_alias(added)
        if kind == "CROSS" or method == "NATURAL":
            raise refuse(
                f"uses a {kind or method} JOIN; write JOIN ... ON a.col = b.col naming the "
                "columns that must match."
            )
        if kind in ("SEMI", "ANTI", "ASOF", "POSITIONAL") or method in ("ASOF", "POSITIONAL"):
            raise refuse(
                f"uses a {kind or method} JOIN, which is not supported; use JOIN or LEFT "
                "JOIN ... ON a.col = b.col."
            )
        if side in ("RIGHT", "FULL"):
            raise refuse(
                f"uses a {side} JOIN; write it as a LEFT JOIN with the table whose rows are "
                "all kept first (FROM people p LEFT JOIN regions r ON ...)."
            )
        if added.alias in known:
            raise refuse(
                f"reads the table {added.alias!r} twice under one name; give each an alias "
                "(JOIN visits v2 ON ...)."
            )
        pairs = _pairs(join, added, known)
        known[added.alias] = added
        joins.append(JoinStep(added, side == "LEFT", pairs))
    return (first, *(j.scan for j in joins)), tuple(joins)


def column_tables(
    tree: exp.Select, aliases: frozenset[str], select_aliases: frozenset[str] = frozenset()
) -> dict[str, str | None]:
    """Each column the SELECT list, WHERE and GROUP BY read: bare name -> the alias it is
    qualified with (None when unqualified). A bare name qualified with two tables is
    refused: the released columns and the filter use bare names. ``select_aliases`` are
    the SELECT aliases GROUP BY names (not columns: the SELECT list reads their columns)."""
    out: dict[str, str | None] = {}
    parts: list[exp.Expression] = list(tree.expressions)
    for key in ("where", "group"):
        if tree.args.get(key) is not None:
            parts.append(tree.args[key])
    for part in parts:
        for node in part.walk():
            if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
                continue
            if isinstance(part, exp.Group) and not node.table and node.name in select_aliases:
                continue
            name = str(node.name)
            table = str(node.table) if node.table else None
            if table is not None and table not in aliases:
                raise refuse(
                    f"qualifies the column {name!r} with {table!r}, which is not a table of "
                    "FROM or JOIN."
                )
            seen = out.get(name)
            if name in out and seen != table and seen is not None and table is not None:
                raise refuse(
                    f"reads two columns named {name!r} ({seen}.{name} and {table}.{name}); "
                    "a query may read one column of each name (join on it, and read it once)."
                )
            if seen is None:
                out[name] = table
    return out
