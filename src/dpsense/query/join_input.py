"""The input of a query that joins tables: one joined table on the tables' engine.

:func:`joined_input` checks the declared privacy units and the join's shape
(:mod:`dpsense.tables.joined`), reads each table's column names (public), and returns what
the one-table release reads, from the engine's ``join`` (on DuckDB the join runs in the
release's own connection, on Spark in Spark). When every GROUP BY column comes from public
tables, the groups are the distinct values there (public: no selection, no keys to pass).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpsense.errors import InputError
from dpsense.tables.engines import engine_for_tables, is_spark_frame
from dpsense.tables.joined import parameter_of, plan_join, privacy_units
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.joins import JoinForm, group_keys_from_public, public_key_sql
from dpsense.tables.schema import parse_schema

if TYPE_CHECKING:
    from dpsense.query.sql import SqlQuery

__all__ = [
    "JoinedInput",
    "joined_input",
    "public_groups",
    "reads_several_tables",
    "table_columns",
    "unit_names",
]

_WHERE = "ds.sql"


@dataclass(frozen=True)
class JoinedInput:
    """What the release of a join reads."""

    data: Any
    unit: str
    keys: Any
    label: str
    unit_names: frozenset[str]
    """The columns that hold the unit (the joined unit column, and each private table's
    own unit column): COUNT(DISTINCT ...) of one of them counts people."""
    schema: Mapping[str, str] | None
    """The declared types of the joined table's columns (each table's declared columns
    are also cast in that table, before the join)."""


def reads_several_tables(spec: SqlQuery, privacy_unit: object, public_tables: object) -> bool:
    """True when the query needs the join path: several tables, a unit per table, or
    public tables declared."""
    return len(spec.sources) > 1 or isinstance(privacy_unit, Mapping) or public_tables is not None


def _columns(data: Any) -> list[str]:
    """A table's column names (no row is read: a CSV file's header only)."""
    return table_columns(data)[0]


def table_columns(data: Any) -> tuple[list[str], str]:
    """A table's column names and how messages name it (no row is read: a CSV file's
    header only)."""
    if is_spark_frame(data):
        return [str(c) for c in data.columns], "the Spark DataFrame"
    from dpsense.data.source import open_table

    with open_table(data, infer_types=False) as source:
        return list(source.columns), source.label


def joined_input(
    form: JoinForm,
    resolve: Callable[[str, bool], Any],
    tables: Mapping[str, Any] | None,
    privacy_unit: object,
    public_tables: object,
    keys: Any,
    schema: Mapping[str, str] | None,
    where: str = _WHERE,
) -> JoinedInput:
    """The joined table of ``form`` (from ``ds.sql`` or ``ds.join``), its unit column and
    its public groups.

    ``resolve(name, is_path)`` finds a table's data (``tables``, a path or a Spark view);
    ``where`` names the caller in messages (ds.sql, or ds.join).
    """
    owner = parameter_of(where)
    named = {s.table: resolve(s.table, s.is_path) for s in form.scans}
    if isinstance(privacy_unit, Mapping):
        # the tables a path goes through must be passed too
        for entry in privacy_unit.values():
            if isinstance(entry, Sequence) and not isinstance(entry, str) and len(entry) == 3:
                target = str(entry[1])
                if target not in named:
                    named[target] = resolve(target, False)
        extra = set(map(str, privacy_unit)) - set(named) - set(tables or {})
        if extra:
            raise InputError(
                f"The 'privacy_unit' parameter of {owner} names "
                f"{', '.join(map(repr, sorted(extra)))}, which is not a table of the query "
                "or of the 'tables' parameter."
            )
    units = privacy_units(privacy_unit, public_tables, [*named, *(tables or {})], where)
    columns = {name: _columns(data) for name, data in named.items()}
    if form.group_aliases:
        from dpsense.query._sql_groups import check_group_aliases

        for name in named:
            check_group_aliases(form.group_aliases, columns[name], f"the table {name!r}")
    engine = engine_for_tables(named.values())
    spark = engine.name == "spark"
    # Spark's temporary views belong to the session: names of this query's own
    prefix = f"dpsense_{uuid.uuid4().hex[:12]}_t" if spark else "dpsense_t"
    # the columns of ``schema`` are read too (cast, and their rows kept or dropped, as in a
    # query of one table)
    plan = plan_join(form, units, columns, list(schema or {}), view_prefix=prefix, where=where)
    casts = parse_schema(schema, owner) if schema else {}
    undeclared = {t: _undeclared(named[t], columns[t]) for t in named}
    table_casts = {t: {c: k for c, k in casts.items() if c in columns[t]} for t in named}
    own_units = {
        (t, p.column) for t in named if t not in units.public and (p := units.of(t)).column
    }
    for table, column in sorted({c for pair in plan.compared for c in pair} | own_units):
        if column in undeclared[table] and column not in table_casts[table]:
            # a compared column or a unit column whose type its table does not declare (a
            # CSV file's, a pandas object column) is read as text, never as a type read
            # from the values (as a one-table release reads such a by-column or unit);
            # declare it to compare it as a number. Otherwise ids "1" and "1.0" would be
            # one person until another person's id "abc" made them two.
            table_casts[table][column] = Cast("text")
    data = engine.join(plan, named, units.public, table_casts, undeclared)
    if keys is None and group_keys_from_public(plan, form.by) is not None:
        public = {t: d for t, d in named.items() if t in units.public}
        # read where the public tables are (a lookup given as a frame beside Spark tables
        # is read by DuckDB)
        rows = engine_for_tables(public.values()).distinct_rows(
            plan, public, units.public, public_key_sql(plan, form.by)
        )
        if not rows:
            raise InputError(
                f"The public tables hold no value of the "
                f"{'GROUP BY' if where == _WHERE else 'by'} column(s) "
                f"{', '.join(form.by)}: there is no group to release."
            )
        keys = [r[0] for r in rows] if len(form.by) == 1 else [tuple(r) for r in rows]
    names = frozenset(
        {plan.unit}
        | {
            p.column
            for t in named
            if t not in units.public and (p := units.of(t)).column is not None
        }
    )
    kept = {plan.unit, *plan.column_alias}
    joined_schema = {c: t for c, t in (schema or {}).items() if c in kept} or None
    return JoinedInput(data, plan.unit, keys, plan.label, names, joined_schema)


def public_groups(spec: SqlQuery, public_tables: object) -> bool:
    """True when every GROUP BY column is qualified with a public table's name or alias
    (from the text: the groups will come from the public tables)."""
    if not spec.by or not isinstance(public_tables, Sequence | set | frozenset):
        return False
    public = {s.alias for s in spec.sources if s.table in set(map(str, public_tables))}
    qualifiers = dict(spec.column_tables)
    return all(qualifiers.get(column) in public for column in spec.by)


def unit_names(
    spec: SqlQuery, privacy_unit: object, public_tables: object
) -> tuple[str, frozenset[str]]:
    """The joined table's unit column and the columns that hold the unit, from the declared
    units alone (``ds.plan``: no table is read)."""
    names = [s.table for s in spec.sources]
    if isinstance(privacy_unit, Mapping):
        names += [str(t) for t in privacy_unit]
    units = privacy_units(privacy_unit, public_tables, list(dict.fromkeys(names)))
    private = [s.table for s in spec.sources if s.table not in units.public]
    if not private:
        raise InputError(
            "The query reads only public tables: there is no one to protect; compute it "
            "without dpsense."
        )
    unit = units.unit_column(private[0])
    held = {p.column for t in private if (p := units.of(t)).column is not None}
    return unit, frozenset({unit} | held)


def _undeclared(data: Any, columns: Sequence[str]) -> frozenset[str]:
    """The columns whose type ``data`` does not declare: every column of a CSV file, a
    pandas object column, a column of Python lists (their types would come from the
    values)."""
    if is_spark_frame(data) or type(data).__module__.split(".")[0] == "duckdb":
        return frozenset()
    if isinstance(data, str) or hasattr(data, "__fspath__"):
        return frozenset(columns) if _is_csv(data) else frozenset()
    from dpsense.tables.schema import column_type

    out = set()
    for column in columns:
        declared = column_type(data, None, column)
        if declared is None or declared.name == "object":
            out.add(column)
    return frozenset(out)


def _is_csv(data: Any) -> bool:
    import os

    from dpsense.data.source import is_csv_path

    return isinstance(data, str | os.PathLike) and is_csv_path(os.fspath(data))
