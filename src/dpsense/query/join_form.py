"""The join's form and the input of its release: ``ds.join`` names the tables and how they
meet, ``ds.release`` reads the join as one table (docs/joins.md §7).

    visits_by_region = ds.join(
        {"visits": visits, "people": people, "regions": regions},
        on=[("visits", "people", "person"), ("people", "regions", "country")],
        public_tables=["regions"],
    )
    ds.release(visits_by_region, {"n": ds.Count(), "hours": ("hours", ds.Mean(0, 80))},
               by="region", privacy_unit="person", epsilon=1.0)

``ds.join`` and the same ``JOIN ... ON`` in ``ds.sql`` build one relational form
(:class:`dpsense.tables.rows.joins.JoinForm`), and :func:`joined_input` reads either: it
checks the declared privacy units and the join's shape (:mod:`dpsense.tables.joined`),
reads each table's column names (public), and returns what the one-table release reads,
from the engine's ``join`` (on DuckDB the join runs in the release's own connection, on
Spark in Spark): the same refusals, the unit followed through the keys, bounding after
the join. When every GROUP BY column comes from public tables, the groups are the distinct
values there (public: no selection, no keys to pass).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dpsense.errors import InputError, Param
from dpsense.tables.engines import engine_for_tables, is_spark_frame
from dpsense.tables.handle import undeclared_columns
from dpsense.tables.join_units import public_table_names
from dpsense.tables.joined import parameter_of, plan_join, privacy_units
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.joins import (
    JoinForm,
    JoinInputs,
    JoinStep,
    Scan,
    group_keys_from_public,
    public_key_sql,
)
from dpsense.tables.schema import parse_schema

if TYPE_CHECKING:
    from dpsense.query.plan import ReleaseArgs
    from dpsense.query.sql import SqlQuery

__all__ = [
    "Joined",
    "JoinedInput",
    "join",
    "joined_input",
    "public_groups",
    "reads_several_tables",
    "resolve_joined",
    "table_columns",
    "unit_names",
]

_WHERE = "ds.join"
_SQL = "ds.sql"


@dataclass(frozen=True)
class Joined:
    """Tables and how they are joined, for :func:`dpsense.release` (built by
    :func:`join`). Nothing is read until a release reads it."""

    tables: Mapping[str, Any]
    on: tuple[tuple[str, str, tuple[tuple[str, str], ...], bool], ...]
    """Per join: (table joined so far, table added, (left column, right column) pairs,
    LEFT JOIN)."""
    public_tables: tuple[str, ...]

    def __repr__(self) -> str:
        names = [self.on[0][0], *(j[1] for j in self.on)] if self.on else list(self.tables)
        return f"ds.join({', '.join(names)})"


def join(
    tables: Mapping[str, Any],
    on: Sequence[tuple[Any, ...]],
    *,
    how: str | Sequence[str] = "inner",
    public_tables: str | Sequence[str] | None = None,
) -> Joined:
    """Join tables for :func:`dpsense.release`, as ``JOIN ... ON`` does in :func:`dpsense.sql`.

    Parameters
    ----------
    tables : mapping of str to data
        The tables by name (DataFrames, Arrow tables, DuckDB relations, CSV/Parquet paths,
        or Spark DataFrames).
    on : list of tuples
        One per join, in order: ``(left, right, column)`` joins the table ``right`` on
        ``left.column = right.column``; ``(left, right, left_column, right_column)`` when
        the names differ; a list of columns (or of pairs) joins on several. ``left`` is a
        table joined so far (the first join's is the first table).
    how : "inner" or "left", or one per join
        A LEFT join keeps the rows of the tables so far without a match (the added table
        must then be public: docs/joins.md).
    public_tables : str or list of str, optional
        Tables that hold no one's data (one name, or a list); every other table is private
        and needs a privacy
        unit (the release's ``privacy_unit``: a column name, or one per table with
        foreign-key paths, as in :func:`dpsense.sql`).

    Returns
    -------
    Joined
        Pass it as the data of :func:`dpsense.release` or ``Accountant.release``.
    """
    if not isinstance(tables, Mapping) or not tables:
        raise InputError(
            Param("tables", of=_WHERE),
            " must be a mapping of table names to data, e.g. {'visits': visits, 'people': people}.",
        )
    if isinstance(on, str) or not isinstance(on, Sequence) or not on:
        raise InputError(
            Param("on", of=_WHERE),
            " must list the joins, e.g. on=[('visits', 'people', 'person')].",
        )
    hows = [how] * len(on) if isinstance(how, str) else list(how)
    if len(hows) != len(on) or any(h not in ("inner", "left") for h in hows):
        raise InputError(
            Param("how", of=_WHERE),
            f" must be 'inner' or 'left', or one of them per "
            f"join ({len(on)}). Got {how!r} instead.",
        )
    names = [str(t) for t in tables]
    joins = []
    seen: list[str] = []
    for i, (entry, kind) in enumerate(zip(on, hows, strict=True), start=1):
        if not isinstance(entry, tuple | list) or len(entry) not in (3, 4):
            raise InputError(
                f"Join {i} of the 'on' parameter of {_WHERE} must be (left, right, column) or "
                "(left, right, left_column, right_column)."
            )
        left, right = str(entry[0]), str(entry[1])
        if not seen:
            seen.append(left)
        for name in (left, right):
            if name not in names:
                raise InputError(
                    f"Join {i} of {_WHERE} names the table {name!r}, which is not in 'tables' "
                    f"(it has {', '.join(map(repr, names))})."
                )
        if left not in seen:
            raise InputError(
                f"Join {i} of {_WHERE} joins from {left!r}, which is not joined yet; each join "
                "adds one table to those joined so far."
            )
        if right in seen:
            raise InputError(f"Join {i} of {_WHERE} adds {right!r}, which is already joined.")
        pairs = _pairs(entry[2:], i)
        joins.append((left, right, pairs, kind == "left"))
        seen.append(right)
    return Joined(dict(tables), tuple(joins), _public(public_tables, names))


def _public(public_tables: object, names: Sequence[str]) -> tuple[str, ...]:
    """The public tables: one name or a list of them, each a table of ``tables``."""
    public = public_table_names(public_tables, _WHERE, "a table name or a list of them")
    unknown = [t for t in public if t not in names]
    if unknown:
        raise InputError(
            Param("public_tables", of=_WHERE),
            f" names "
            f"{', '.join(map(repr, unknown))}, which is not in 'tables' (it has "
            f"{', '.join(map(repr, names))}).",
        )
    return public


def _pairs(columns: Sequence[Any], i: int) -> tuple[tuple[str, str], ...]:
    """(left column, right column) pairs of one join."""
    if len(columns) == 2:
        return ((str(columns[0]), str(columns[1])),)
    (only,) = columns
    if isinstance(only, str):
        return ((only, only),)
    if isinstance(only, Sequence) and only:
        out = []
        for item in only:
            if isinstance(item, str):
                out.append((item, item))
            elif isinstance(item, Sequence) and len(item) == 2:
                out.append((str(item[0]), str(item[1])))
            else:
                break
        else:
            return tuple(out)
    raise InputError(
        f"The columns of join {i} of {_WHERE} must be a column name, a list of them, or "
        "(left_column, right_column) pairs."
    )


def _reads(
    statistic: Any, args: ReleaseArgs, tables: Sequence[str], where: str
) -> tuple[tuple[tuple[str, str | None], ...], str | None]:
    """The columns a release reads besides the unit (values, groups and the filter's), each
    with the table a ``where`` filter qualifies it with (None: found by name), and the
    filter without qualifiers (the joined table names each column once)."""
    out: dict[str, str | None] = {}
    if isinstance(statistic, Mapping):
        out.update((str(v[0]), None) for v in statistic.values() if isinstance(v, tuple) and v)
    elif args.column is not None:
        out[args.column] = None
    by = args.by
    out.update((b, None) for b in ([by] if isinstance(by, str) else list(by or ())))
    text = args.where
    if not isinstance(text, str) or not text.strip():
        return tuple(out.items()), text
    import sqlglot
    from sqlglot import expressions as exp

    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return tuple(out.items()), text  # the release's own check says what is wrong
    qualified = False
    for column in tree.find_all(exp.Column):
        name, table = str(column.name), str(column.table) if column.table else None
        if table is not None:
            qualified = True
            if table not in tables:
                raise InputError(
                    Param("where", of=where),
                    f" names the column {name!r} of "
                    f"{table!r}, which is not a table of the ds.join (it joins "
                    f"{', '.join(map(repr, tables))}).",
                )
            seen = out.get(name)
            if seen is not None and seen != table:
                raise InputError(
                    Param("where", of=where),
                    f" reads two columns named {name!r} "
                    f"({seen}.{name} and {table}.{name}); the joined table names each "
                    "column once: read one of them.",
                )
            out[name] = table
        else:
            out.setdefault(name, None)
    if not qualified:
        return tuple(out.items()), text

    def unqualify(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.table:
            return exp.column(node.this.copy())
        return node

    return tuple(out.items()), str(tree.transform(unqualify).sql(dialect="duckdb"))


def resolve_joined(
    x: Any, statistic: Any, args: ReleaseArgs, where: str = "release"
) -> tuple[Any, ReleaseArgs]:
    """The data and arguments of a release of ``x``: for a :class:`Joined`, the joined
    table (on its tables' engine) with its unit column and, for groups from public tables,
    their values as public keys, and a ``where`` filter without table qualifiers; anything
    else unchanged. ``where`` names the release in messages about its parameters."""
    if not isinstance(x, Joined):
        return x, args
    first = x.on[0][0]
    scans = [Scan(first, False, first)]
    joins = []
    for left, right, pairs, is_left in x.on:
        scan = Scan(right, False, right)
        scans.append(scan)
        joins.append(JoinStep(scan, is_left, tuple(((left, a), (right, b)) for a, b in pairs)))
    by = args.by
    reads, row_filter = _reads(statistic, args, [s.table for s in scans], where)
    form = JoinForm(
        tuple(scans), tuple(joins), reads, (by,) if isinstance(by, str) else tuple(by or ())
    )
    joined = joined_input(
        form,
        lambda name, _: x.tables[name],
        x.tables,
        args.privacy_unit,
        list(x.public_tables),
        args.keys,
        args.schema,
        _WHERE,
    )
    return joined.data, replace(
        args,
        privacy_unit=joined.unit,
        keys=joined.keys,
        schema=joined.schema,
        where=row_filter,
    )


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
    where: str = _SQL,
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
                Param("privacy_unit", of=owner),
                f" names "
                f"{', '.join(map(repr, sorted(extra)))}, which is not a table of the query "
                "or of ",
                Param("tables", capital=False),
                ".",
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
    undeclared = {t: undeclared_columns(named[t], columns[t]) for t in named}
    table_casts = {t: {c: k for c, k in casts.items() if c in columns[t]} for t in named}
    own_units = {
        (t, p.column) for t in named if t not in units.public and (p := units.of(t)).column
    }
    as_text: dict[str, set[str]] = {t: set() for t in named}
    for table, column in sorted({c for pair in plan.compared for c in pair} | own_units):
        if column in undeclared[table] and column not in table_casts[table]:
            as_text[table].add(column)
            # a compared column or a unit column whose type its table does not declare (a
            # CSV file's, a pandas object column) is read as text, never as a type read
            # from the values (as a one-table release reads such a by-column or unit);
            # declare it to compare it as a number. Otherwise ids "1" and "1.0" would be
            # one person until another person's id "abc" made them two.
            table_casts[table][column] = Cast("text")
    text = {t: frozenset(c) for t, c in as_text.items()}
    data = engine.join(JoinInputs(plan, named, units.public, table_casts, undeclared, text))
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
                f"{'GROUP BY' if where == _SQL else 'by'} column(s) "
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
