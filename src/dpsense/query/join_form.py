"""Joins without SQL: ``ds.join`` names the tables and how they meet, ``ds.release`` reads
the join as one table (docs/joins.md §7).

    visits_by_region = ds.join(
        {"visits": visits, "people": people, "regions": regions},
        on=[("visits", "people", "person"), ("people", "regions", "country")],
        public_tables=["regions"],
    )
    ds.release(visits_by_region, {"n": ds.Count(), "hours": ("hours", ds.Mean(0, 80))},
               by="region", privacy_unit="person", epsilon=1.0)

The join is the same relational form as the same ``JOIN ... ON`` in ``ds.sql``
(:class:`dpsense.tables.rows.joins.JoinForm`), checked and run as one
(:mod:`dpsense.query.join_input`): the same refusals, the unit followed through the keys,
bounding after the join, groups from public tables without keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dpsense.errors import InputError

if TYPE_CHECKING:
    from dpsense.query.plan import ReleaseArgs

__all__ = ["Joined", "join", "resolve_joined"]

_WHERE = "ds.join"


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
            f"The 'tables' parameter of {_WHERE} must be a mapping of table names to data, "
            "e.g. {'visits': visits, 'people': people}."
        )
    if isinstance(on, str) or not isinstance(on, Sequence) or not on:
        raise InputError(
            f"The 'on' parameter of {_WHERE} must list the joins, e.g. "
            "on=[('visits', 'people', 'person')]."
        )
    hows = [how] * len(on) if isinstance(how, str) else list(how)
    if len(hows) != len(on) or any(h not in ("inner", "left") for h in hows):
        raise InputError(
            f"The 'how' parameter of {_WHERE} must be 'inner' or 'left', or one of them per "
            f"join ({len(on)}). Got {how!r} instead."
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
    if public_tables is None:
        return ()
    if isinstance(public_tables, str):
        public_tables = [public_tables]
    if not isinstance(public_tables, Sequence | set | frozenset):
        raise InputError(
            f"The 'public_tables' parameter of {_WHERE} must be a table name or a list of "
            f"them, e.g. public_tables=['regions']. Got {type(public_tables).__name__} instead."
        )
    public = tuple(dict.fromkeys(str(t) for t in public_tables))
    unknown = [t for t in public if t not in names]
    if unknown:
        raise InputError(
            f"The 'public_tables' parameter of {_WHERE} names "
            f"{', '.join(map(repr, unknown))}, which is not in 'tables' (it has "
            f"{', '.join(map(repr, names))})."
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
                    f"The 'where' parameter of {where} names the column {name!r} of "
                    f"{table!r}, which is not a table of the ds.join (it joins "
                    f"{', '.join(map(repr, tables))})."
                )
            seen = out.get(name)
            if seen is not None and seen != table:
                raise InputError(
                    f"The 'where' parameter of {where} reads two columns named {name!r} "
                    f"({seen}.{name} and {table}.{name}); the joined table names each "
                    "column once: read one of them."
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
    from dpsense.query.join_input import joined_input
    from dpsense.tables.rows.joins import JoinForm, JoinStep, Scan

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
