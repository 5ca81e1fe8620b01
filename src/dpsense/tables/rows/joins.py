"""A query of several tables as one joined table, in relational form: what ``ds.sql``'s
JOIN and ``ds.join`` both ask (:class:`JoinForm`: the scanned tables, the join steps, the
columns read), and the plan engines run (engine-neutral values; built by
:mod:`dpsense.tables.joined`, run by each engine's ``join``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from dpsense.errors import InputError, Name

if TYPE_CHECKING:
    from dpsense.tables.rows.casts import Cast

__all__ = [
    "Join",
    "JoinForm",
    "JoinInputs",
    "JoinPlan",
    "JoinStep",
    "KeyCheck",
    "Relation",
    "Scan",
    "TableScan",
    "comparable",
    "group_keys_from_public",
    "join_sql",
    "key_check_sql",
    "public_key_sql",
    "shared_key",
]

Column = tuple[str, str]
"""(alias, column name)."""


@dataclass(frozen=True)
class Scan:
    """One table a join reads.

    Attributes
    ----------
    table : str
        A name (looked up in ``tables``) or a file path.
    is_path : bool
        True when given as a quoted string or ``read_parquet``/``read_csv`` of one.
    alias : str
        The name columns are qualified with: the alias, else the table's name.
    """

    table: str
    is_path: bool
    alias: str


@dataclass(frozen=True)
class JoinStep:
    """One join: the table it adds, INNER or LEFT, and the column equalities of its
    condition, each as ((alias, column), (alias, column)) with the added table second
    where the equality names it."""

    scan: Scan
    left: bool
    pairs: tuple[tuple[Column, Column], ...]


@dataclass(frozen=True)
class JoinForm:
    """What a release of several tables asks, from ``ds.sql``'s FROM ... JOIN or from
    ``ds.join``: the tables (the first, then one per join), the joins in order, each column
    read (values, groups, the filter's) with the alias that qualifies it (None: found by
    name), the GROUP BY columns and the SELECT aliases GROUP BY names."""

    scans: tuple[Scan, ...]
    joins: tuple[JoinStep, ...]
    column_tables: tuple[tuple[str, str | None], ...]
    by: tuple[str, ...] = ()
    group_aliases: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TableScan:
    """One table in the joined SQL: its name, the view it is read from, its alias, and
    whether it is public."""

    table: str
    view: str
    alias: str
    public: bool = False


@dataclass(frozen=True)
class Join:
    """One join of the joined SQL: the table it adds, INNER or LEFT, the column equalities
    of its condition, and the added table's own unit path (inner joins to the tables that
    hold its unit, joined to it first: its unit is part of the condition)."""

    scan: TableScan
    left: bool
    on: tuple[tuple[Column, Column], ...]
    path: tuple[Join, ...] = ()


@dataclass(frozen=True)
class Relation:
    """The joined table as a relational plan: ``SELECT unit AS unit_name, selected FROM
    first [its unit path] JOIN ... WHERE each of not_null IS NOT NULL``."""

    first: TableScan
    first_path: tuple[Join, ...]
    """The first table's unit path (inner joins to the tables that hold its unit)."""
    joins: tuple[Join, ...]
    unit: Column
    """Where the first private table's unit is read (the end of its path)."""
    unit_name: str
    selected: tuple[tuple[Column, str], ...]
    """Each released or filtered column: where it is read, and its name."""
    not_null: tuple[Column, ...]
    """The public tables' columns the release reads: NULL where a LEFT JOIN found no
    public row (or the public row holds NULL); such a row is in no group and holds no
    value (docs/joins.md §4)."""


@dataclass(frozen=True)
class KeyCheck:
    """One step of a unit path (a row finds its unit through ``table.key``): the rows of
    ``scan`` with their unit along ``path``; a value of ``key`` with more than one unit is
    refused (docs/joins.md §1)."""

    scan: TableScan
    path: tuple[Join, ...]
    unit: Column
    table: str
    key: str


@dataclass(frozen=True)
class JoinPlan:
    """A query of several tables as one joined table (the DuckDB SQL over one view per
    table), with its unit column and where each released column comes from."""

    tables: tuple[tuple[str, str], ...]
    """(view name, table name) for every table the joined SQL reads."""
    relation: Relation
    """The joined table (compiled by :func:`join_sql`)."""
    unit: str
    """The name of the joined table's unit column (the privacy_unit of the release)."""
    column_alias: Mapping[str, str]
    """Each released or filtered column -> the alias of the table it comes from."""
    public_aliases: frozenset[str]
    """The aliases of the public tables."""
    alias_table: Mapping[str, str]
    """Each alias -> its table name."""
    label: str
    compared: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = ()
    """Every pair of (table, column) a condition compares: the query's and the paths'."""
    unit_table: str = ""
    """The table whose column the joined unit column is (the end of the first private
    table's path)."""
    key_checks: tuple[KeyCheck, ...] = ()
    """Per foreign-key path step: its check (:func:`key_check_sql`). A path's keys must be
    keys: the data owner's precondition (docs/joins.md §1)."""


@dataclass(frozen=True)
class JoinInputs:
    """What an engine joins (``Engine.join``): the plan, each table's data, the names of
    the public tables, each table's casts and, per table, the columns whose types its input
    does not declare."""

    plan: JoinPlan
    tables: Mapping[str, Any]
    public: frozenset[str]
    casts: Mapping[str, Mapping[str, Cast]]
    undeclared: Mapping[str, frozenset[str]]
    read_as_text: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per table: its undeclared columns the join compares (or holds the unit in), which it
    reads as text, not as a type read from the values: a filter may not compare them with
    a number unless ``schema=`` declares them."""


_NUMBERS: Final = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                   "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE",
                   "DECIMAL", "INT", "LONG", "SHORT", "BYTE")  # fmt: skip


def _family(sql_type: str) -> str:
    """The family a join may compare within: numbers, text, or the type itself."""
    base = sql_type.split("(")[0].upper()
    if base in _NUMBERS:
        return "number"
    if base in ("VARCHAR", "STRING", "TEXT"):
        return "text"
    return base


def comparable(
    types: Mapping[tuple[str, str], str],
    compared: tuple[tuple[tuple[str, str], tuple[str, str]], ...],
) -> None:
    """An InputError for a join condition that compares columns of different kinds (a
    number with text, say): the engine would convert one side and fail, or compare as
    text, on values (the message names the columns and their declared types only)."""
    for a, b in compared:
        ta, tb = types[a], types[b]
        if _family(ta) != _family(tb):
            # one entry per name: a key named alike in both tables is declared once (the
            # entry casts it in every table that holds it)
            example = ", ".join(f"{c!r}: 'text'" for c in dict.fromkeys((a[1], b[1])))
            raise InputError(
                f"The join compares {a[0]}.{a[1]} ({ta}) with {b[0]}.{b[1]} ({tb}): a join "
                "compares columns of one kind (numbers with numbers, text with text). "
                f"Declare both with one type, e.g. schema={{{example}}} "
                "(types 'int', 'float', 'decimal(p,s)' or 'text'), or store the keys with one "
                "type."
            )


def shared_key(table: str, key: str) -> InputError:
    """A key of a privacy-unit path that belongs to more than one unit (the data owner's
    precondition: a row must belong to one unit)."""
    return InputError(
        "The ",
        Name("privacy_unit"),
        f" path goes through {table}.{key}, and some value of it belongs to "
        "more than one unit, so a row reached through it would belong to two people. The "
        "keys of a path must be keys (each value of one unit): clean the table (a data "
        "owner's precondition, like missing values), or declare another path.",
    )


def group_keys_from_public(plan: JoinPlan, by: Sequence[str]) -> list[str] | None:
    """The aliases whose distinct values are the groups, when every GROUP BY column comes
    from a public table (None otherwise: the groups are selected privately or given)."""
    if not by:
        return None
    aliases = [plan.column_alias.get(c) for c in by]
    if any(a is None or a not in plan.public_aliases for a in aliases):
        return None
    return [a for a in aliases if a is not None]


# The compiler: the one place the join's SQL is written, with sqlglot's expression builder
# (DuckDB dialect, every identifier quoted). The DuckDB engine runs it; the Spark engine
# runs it transpiled to Spark SQL.


def _id(name: str) -> Any:
    from sqlglot import expressions as exp

    return exp.to_identifier(name, quoted=True)


def _column(column: Column) -> Any:
    from sqlglot import expressions as exp

    return exp.Column(this=_id(column[1]), table=_id(column[0]))


def _present(columns: Sequence[Any]) -> Any:
    """``c IS NOT NULL AND ...`` of sqlglot columns."""
    from sqlglot import expressions as exp

    return exp.and_(*(exp.not_(exp.Is(this=c, expression=exp.Null())) for c in columns))


def _scan(scan: TableScan, path: Sequence[Join] = ()) -> Any:
    """``view AS alias``, with its unit path's joins when given."""
    from sqlglot import expressions as exp

    table = exp.Table(this=_id(scan.view), alias=exp.TableAlias(this=_id(scan.alias)))
    if path:
        table.set("joins", [_join(j) for j in path])
    return table


def _join(join: Join) -> Any:
    from sqlglot import expressions as exp

    added = _scan(join.scan, join.path)
    on = exp.and_(*(exp.EQ(this=_column(a), expression=_column(b)) for a, b in join.on))
    return exp.Join(
        # a table with its own path joins is parenthesised: JOIN (v AS a JOIN ...) ON ...
        this=exp.Subquery(this=added) if join.path else added,
        on=on,
        side="LEFT" if join.left else None,
    )


def join_sql(relation: Relation) -> str:
    """The DuckDB SQL of the joined table."""
    from sqlglot import expressions as exp

    unit = _column(relation.unit)
    selected = [exp.alias_(unit, _id(relation.unit_name))]
    selected += [exp.alias_(_column(c), _id(name)) for c, name in relation.selected]
    tree = exp.Select(expressions=selected).from_(_scan(relation.first))
    tree.set("joins", [_join(j) for j in (*relation.first_path, *relation.joins)])
    if relation.not_null:
        tree = tree.where(_present([_column(c) for c in relation.not_null]))
    return str(tree.sql(dialect="duckdb"))


def key_check_sql(check: KeyCheck) -> str:
    """DuckDB SQL that returns a row when a value of ``check.key`` belongs to more than
    one unit."""
    from sqlglot import expressions as exp

    several = exp.GT(
        this=exp.Count(this=exp.Distinct(expressions=[_column(check.unit)])),
        expression=exp.Literal.number(1),
    )
    tree = (
        exp.Select(expressions=[exp.Literal.number(1)])
        .from_(_scan(check.scan, check.path))
        .group_by(_column((check.scan.alias, check.key)))
        .having(several)
        .limit(1)
    )
    return str(tree.sql(dialect="duckdb"))


def public_key_sql(plan: JoinPlan, by: Sequence[str]) -> str:
    """DuckDB SQL for every combination of the GROUP BY columns' distinct (non-null) values
    in their public tables: the distinct rows within a table, the product across tables."""
    from sqlglot import expressions as exp

    views = {t: v for v, t in plan.tables}
    parts: dict[str, list[str]] = {}
    for column in by:
        parts.setdefault(plan.column_alias[column], []).append(column)
    tree = exp.Select(expressions=[exp.column(_id(c)) for c in by])
    for i, (alias, cols) in enumerate(parts.items()):
        picked = [exp.column(_id(c)) for c in cols]
        distinct = (
            exp.Select(expressions=picked)
            .distinct()
            .from_(exp.Table(this=_id(views[plan.alias_table[alias]])))
            .where(_present([exp.column(_id(c)) for c in cols]))
            .subquery(_id(f"k{i}"))
        )
        tree = tree.from_(distinct) if i == 0 else tree.join(distinct, join_type="CROSS")
    tree = tree.order_by(*(exp.column(_id(c)) for c in by))
    return str(tree.sql(dialect="duckdb"))
