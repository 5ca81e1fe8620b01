"""SQL in: one SELECT parsed by sqlglot (DuckDB dialect) into a :class:`SqlQuery` spec.

Nothing here reads data. The spec names one table, the grouping columns, one entry per
aggregate (its released name, the statistic and the column), the WHERE clause as DuckDB
SQL text, and the ORDER BY / LIMIT applied afterwards to the released rows. Every
construct outside the supported subset is an :class:`~dpsense.errors.InputError` that
names it and says what to do instead (docs/sql.md): the subset is what a differentially
private release of one table with bounded contributions can answer (Wilson et al. 2020).
Messages quote names from the query, never its literals, and never data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NoReturn

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import ParseError, TokenError

from dpsense.errors import Assign, InputError, Message, Param
from dpsense.query._sql_groups import group_by
from dpsense.query._sql_items import (
    AGGREGATES,
    OrderKey,
    SqlAggregate,
    count_clause,
    order_by,
    refuse,
    select_items,
    where_text,
)
from dpsense.query.sql_expressions import lift_expressions
from dpsense.query.sql_joins import SqlJoin, SqlSource, column_tables, sources_and_joins
from dpsense.query.sql_per_unit import SqlPerUnit, split_per_unit, with_per_unit
from dpsense.tables.rows.joins import JoinForm

__all__ = [
    "AGGREGATES",
    "OrderKey",
    "SqlAggregate",
    "SqlJoin",
    "SqlQuery",
    "SqlSource",
    "parse_sql",
]

_WHERE = "ds.sql"


@dataclass(frozen=True)
class SqlQuery:
    """A parsed, validated query: what to release and how to present it.

    Attributes
    ----------
    table : str
        The FROM table: a name (looked up in ``tables``) or a file path.
    table_is_path : bool
        True when FROM gave a quoted string or ``read_parquet``/``read_csv`` of one.
    by : tuple of str
        The GROUP BY columns as read from the table, in order (a SELECT alias or a
        position in GROUP BY resolved to its column).
    aggregates : tuple of SqlAggregate
        In the order of the SELECT list.
    columns : tuple of str
        The released columns in the order of the SELECT list (by-columns and aggregates).
    where : str or None
        The WHERE predicate as DuckDB SQL text, without table qualifiers (CAST made TRY_CAST:
        a value that does not convert is a null, not an error that would depend on the data).
    order_by : tuple of OrderKey
        Post-processing of the released rows.
    limit, offset : int or None
        Post-processing of the released rows.
    sources, joins, column_tables
        The tables read, their joins, and each column read with its table qualifier.
    by_names : tuple of str
        The released name of each GROUP BY column (its SELECT alias, else its name), in
        the order of ``by``; ``keys=`` names the groups by these (:attr:`released_by`).
    group_aliases : tuple of (str, str)
        The SELECT aliases GROUP BY names instead of a column: (alias, column).
    per_unit : SqlPerUnit or None
        The subquery (or CTE) grouped by the privacy unit that the query reads FROM
        (:mod:`dpsense.query.sql_per_unit`); ``table`` and ``sources`` are then its table.
    """

    table: str
    table_is_path: bool
    by: tuple[str, ...]
    aggregates: tuple[SqlAggregate, ...]
    columns: tuple[str, ...]
    where: str | None = None
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None
    sources: tuple[SqlSource, ...] = ()
    joins: tuple[SqlJoin, ...] = ()
    column_tables: tuple[tuple[str, str | None], ...] = ()
    by_names: tuple[str, ...] = ()
    group_aliases: tuple[tuple[str, str], ...] = ()
    computed: tuple[tuple[str, str], ...] = ()
    """The row-wise expressions, each a computed column read by name (its SELECT alias, or
    its aggregate's): (name, DuckDB text), :mod:`.sql_expressions`."""
    per_unit: SqlPerUnit | None = None

    @property
    def join_form(self) -> JoinForm:
        """The tables, joins and columns read, as the join's relational form."""
        return JoinForm(self.sources, self.joins, self.column_tables, self.by, self.group_aliases)

    @property
    def released_by(self) -> tuple[str, ...]:
        """The released name of each GROUP BY column: its SELECT alias, else its name."""
        return self.by_names or self.by


def parse_sql(query: str) -> SqlQuery:
    """Parse and validate one SELECT (DuckDB dialect).

    Parameters
    ----------
    query : str
        ``SELECT by-columns, aggregates FROM table [WHERE ...] [GROUP BY ...]
        [ORDER BY ...] [LIMIT n [OFFSET m]]``.

    Returns
    -------
    SqlQuery

    Raises
    ------
    InputError
        For a query that does not parse, or uses a construct outside the supported subset
        (the message names it and says what to do instead).
    """
    tree, inner = _one_select(query)
    sources, joins = sources_and_joins(tree)
    qualifiers = frozenset({s.alias for s in sources} | {s.table for s in sources if not s.is_path})
    lifted = lift_expressions(tree, qualifiers)  # row-wise expressions: computed columns
    groups = group_by(lifted.tree, qualifiers)
    aliases = frozenset(a for a, _ in groups.aliases) | lifted.names
    tables = column_tables(tree, qualifiers, aliases)
    by = groups.by
    aggregates, columns, by_names = select_items(lifted.tree, by, qualifiers)
    where = where_text(tree, qualifiers)
    order = order_by(lifted.tree, columns, qualifiers, dict(zip(by, by_names, strict=True)))
    limit = count_clause(tree, "limit", "LIMIT")
    offset = count_clause(tree, "offset", "OFFSET")
    spec = SqlQuery(
        table=sources[0].table,
        table_is_path=sources[0].is_path,
        by=by,
        aggregates=aggregates,
        columns=columns,
        where=where,
        order_by=order,
        limit=limit,
        offset=offset,
        sources=sources,
        joins=joins,
        column_tables=tuple(tables.items()),
        by_names=by_names,
        group_aliases=groups.aliases,
        computed=lifted.computed,
    )
    return with_per_unit(spec, inner)


def _one_select(query: object) -> tuple[exp.Select, SqlPerUnit | None]:
    """The one SELECT of ``query`` within the supported clauses (its FROM subquery or CTE
    grouped by the unit taken apart), or the InputError that names what is not."""
    if not isinstance(query, str) or not query.strip():
        raise InputError(
            Param("query", of=_WHERE),
            f" must be a SQL SELECT text. Got "
            f"{'an empty text' if isinstance(query, str) else type(query).__name__} instead.",
        )
    try:
        statements = [s for s in sqlglot.parse(query, read="duckdb") if s is not None]
    except (ParseError, TokenError) as exc:
        raise refuse(f"does not parse as DuckDB SQL ({_parse_message(exc)}).") from None
    if len(statements) != 1:
        raise refuse("must be one SELECT statement; run one query per call.")
    tree = statements[0]
    if not isinstance(tree, exp.Select):
        _refuse_outer(tree)
    tree, inner = split_per_unit(tree)
    _refuse_clauses(tree)
    return tree, inner


def _parse_message(exc: Exception) -> str:
    """Where and what, in the query's words (never the parser's internals)."""
    errors = getattr(exc, "errors", None)
    if not errors:
        return "an unclosed quote or a character it cannot read"
    first = errors[0]
    word = str(first.get("highlight") or "").strip()
    described = str(first.get("description") or "")
    place = f"line {first.get('line')}, column {first.get('col')}"
    if described.startswith("Required keyword"):
        what = f"something is missing after {word!r}" if word else "something is missing"
    elif described.startswith("Expecting"):
        what = f"{described[0].lower()}{described[1:]} before {word!r}"
    else:
        what = f"unexpected {word!r}" if word else "a syntax error"
    return f"{what} at {place}"


def _refuse_outer(tree: object) -> NoReturn:
    """Statements other than one plain SELECT."""
    if isinstance(tree, exp.SetOperation):
        kind = type(tree).__name__.upper()
        raise refuse(
            f"uses {kind}: combining queries is not supported; run one query per table "
            "(each is its own release, charged separately) and combine the released tables."
        )
    if isinstance(tree, exp.Subquery):
        raise refuse("is a parenthesised subquery; write the SELECT without parentheses.")
    kind = str(getattr(tree, "key", "another statement")).upper()
    raise refuse(
        f"is not a SELECT (it is {kind}); only SELECT queries of aggregates are supported."
    )


_REFUSED_CLAUSES: Final[tuple[tuple[tuple[str, ...], str | Message], ...]] = (
    (
        ("with_",),
        "uses WITH (a common table expression over private data); prepare the table "
        "beforehand and query it, or filter rows with WHERE.",
    ),
    (
        ("distinct",),
        Message(
            "uses SELECT DISTINCT: the distinct values of a column are private; release "
            "the groups with GROUP BY col (public ",
            Assign("keys"),
            ", or private partition selection with delta > 0).",
        ),
    ),
    (
        ("having",),
        "uses HAVING: it filters groups on private values; filter the released rows "
        "afterwards (post-processing), or filter rows with WHERE.",
    ),
    (
        ("qualify", "windows"),
        "uses window functions (QUALIFY/WINDOW): they compute a value per row; use "
        "aggregates with GROUP BY.",
    ),
)
"""The SELECT clauses (sqlglot's argument names) refused first, each with what to do
instead."""


def _refuse_clauses(tree: exp.Select) -> None:
    """Clauses of a SELECT outside the subset, each named with what to do instead."""
    args = tree.args
    for keys, message in _REFUSED_CLAUSES:
        if any(args.get(key) for key in keys):
            raise refuse(message)
    for key in ("pivots", "sample", "connect", "prewhere", "into", "locks", "settings"):
        if args.get(key):
            raise refuse(
                f"uses {key.upper()}, which is not supported; supported: SELECT of "
                "GROUP BY columns and aggregates, FROM tables and JOINs, WHERE, GROUP BY, "
                "ORDER BY, LIMIT."
            )
    for key in ("distribute", "sort", "cluster", "match", "kind", "exclude", "hint"):
        if args.get(key):
            raise refuse(f"uses {key.upper()}, which is not supported; remove it.")
