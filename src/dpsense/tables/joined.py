"""Several tables: who each private row belongs to, which joins keep one unit per row, and
the joined table the one-table release reads (docs/joins.md).

A database is a set of tables, some public; each private row belongs to one privacy unit,
through its own unit column or a declared chain of foreign keys to a table that holds it
(an item -> its order -> the order's customer). Neighbouring databases differ by one unit
and every private row that belongs to it. A join of private tables on their units, with
public tables on any keys, gives rows that each belong to one unit, so the release bounds
contributions on the *joined* rows and every one-table sensitivity holds unchanged.

Everything here is decided from the query's text, the declared units and the tables'
column names (public): no value is read, except the distinct values of GROUP BY columns of
public tables, which are public.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from dpsense.errors import InputError, Name, Param
from dpsense.tables.join_units import (
    PrivacyUnits,
    UnitPath,
    parameter_of,
    privacy_units,
    who,
)
from dpsense.tables.rows.joins import (
    Column,
    Join,
    JoinForm,
    JoinPlan,
    KeyCheck,
    Relation,
    Scan,
    TableScan,
)

__all__ = [
    "PrivacyUnits",
    "UnitPath",
    "parameter_of",
    "plan_join",
    "privacy_units",
]

_OWNER: Final = "dpsense_owner"


def plan_join(
    form: JoinForm,
    units: PrivacyUnits,
    columns: Mapping[str, Sequence[str]],
    extra_columns: Sequence[str] = (),
    *,
    view_prefix: str = "dpsense_t",
    where: str = "ds.sql",
) -> JoinPlan:
    """The joined table of ``form`` under ``units``; ``columns`` gives each table's column
    names (public). Raises InputError for every join that could put two people's data in
    one row or make a row's presence depend on another person (``where`` names the caller
    in messages: ds.sql or ds.join)."""
    sources = form.scans
    private = [s for s in sources if s.table not in units.public]
    if not private:
        raise InputError(
            f"{who(where)} reads only public tables "
            f"({', '.join(repr(s.table) for s in sources)}): "
            "there is no one to protect; compute it without dpsense."
        )
    for s in private:
        _check_unit_columns(s.table, units, columns)
    _check_joins(form, units, columns, where)
    unit_name = units.unit_column(private[0].table)
    by_alias = {s.alias: s for s in sources}
    read = _Read(units, columns, by_alias, unit_name, where)
    column_alias = _resolve_columns(form, read, extra_columns)
    views = {
        table: f"{view_prefix}{i}"
        for i, table in enumerate(
            dict.fromkeys([s.table for s in sources] + _path_tables(private, units))
        )
    }
    compared = [
        ((by_alias[a].table, c), (by_alias[b].table, d))
        for join in form.joins
        for (a, c), (b, d) in join.pairs
    ]
    for table in dict.fromkeys([s.table for s in private] + _path_tables(private, units)):
        via = units.of(table).via
        if via is not None:
            compared.append(((table, via[0]), (via[1], via[2])))
    return JoinPlan(
        tables=tuple((v, t) for t, v in views.items()),
        relation=_relation(form, units, views, unit_name, column_alias),
        unit=unit_name,
        column_alias=column_alias,
        public_aliases=frozenset(s.alias for s in sources if s.table in units.public),
        alias_table={s.alias: s.table for s in sources},
        label=f"the join of {', '.join(repr(s.table) for s in sources)}",
        compared=tuple(dict.fromkeys(compared)),
        unit_table=units.unit_table(private[0].table),
        key_checks=_key_checks(private, units, views),
    )


def _check_joins(
    form: JoinForm, units: PrivacyUnits, columns: Mapping[str, Sequence[str]], where: str
) -> None:
    """Refuse a join that could put two people's data in one row (private tables met on
    other than their units) or make a row's presence depend on a person (a private table
    LEFT JOINed)."""
    sources = form.scans
    by_alias = {s.alias: s for s in sources}
    is_private = {s.alias: s.table not in units.public for s in sources}
    for join in form.joins:  # a missing column is named as such before any other refusal
        for (alias, col), (other, col2) in join.pairs:
            _require(by_alias[alias].table, col, columns, "a join condition")
            _require(by_alias[other].table, col2, columns, "a join condition")
    for join in form.joins:
        added = join.scan
        seen = [s.alias for s in sources[: sources.index(added)]]
        left_private = [a for a in seen if is_private[a]]
        if join.left and is_private[added.alias]:
            raise InputError(
                f"{who(where)} LEFT JOINs the private table {added.table!r}: whether a row "
                "with NULLs appears would depend on a person. Put the private table first "
                "(FROM private LEFT JOIN public ...) or use an inner JOIN."
            )
        if (
            is_private[added.alias]
            and left_private
            and not any(
                _equates_units(a, b, by_alias, units) for a, b in join.pairs if a[0] in left_private
            )
        ):
            raise InputError(
                f"{who(where)} joins the private table {added.table!r} to another "
                "private table on a condition that does not equate their privacy "
                "units: a row could hold two people's data. Join on the unit (ON "
                "a.person_id = b.person_id), or along a path declared in the privacy "
                "unit (the path items -> orders by order_id, and ON i.order_id = "
                "o.order_id)."
            )


def _relation(
    form: JoinForm,
    units: PrivacyUnits,
    views: Mapping[str, str],
    unit_name: str,
    column_alias: Mapping[str, str],
) -> Relation:
    """The joined table: the analyst's joins, each private table's unit path, private
    tables also met on their units, and the public columns read kept where not NULL."""
    sources = form.scans
    is_private = {s.alias: s.table not in units.public for s in sources}
    private = [s for s in sources if is_private[s.alias]]
    scans = {
        s.alias: TableScan(s.table, views[s.table], s.alias, not is_private[s.alias])
        for s in sources
    }
    unit_of: dict[str, Column] = {}
    paths: dict[str, tuple[Join, ...]] = {}
    for s in private:
        count = sum(len(p) for p in paths.values())
        unit_of[s.alias], paths[s.alias] = _unit_path(s.alias, s.table, units, views, count)
    joins = []
    for join in form.joins:
        added = join.scan
        pairs = list(join.pairs)
        before = [s.alias for s in sources[: sources.index(added)] if is_private[s.alias]]
        if is_private[added.alias] and before:
            units_equal = (unit_of[before[0]], unit_of[added.alias])
            if units_equal not in pairs and units_equal[::-1] not in pairs:
                # (a join on the units themselves says it already)
                pairs.append(units_equal)
        joins.append(Join(scans[added.alias], join.left, tuple(pairs), paths.get(added.alias, ())))
    # a column read from a public table is NULL where the analyst's LEFT JOIN found no
    # public row, or where the public row holds NULL: such a row is in no group and holds
    # no value, and it leaves here, before any missing-values check (docs/joins.md §4;
    # refusing on a NULL the join made would let one person decide the outcome)
    read = {name for name, _ in form.column_tables}
    present = tuple((a, c) for c, a in column_alias.items() if c in read and not is_private[a])
    return Relation(
        first=scans[sources[0].alias],
        first_path=paths.get(sources[0].alias, ()),
        joins=tuple(joins),
        unit=unit_of[private[0].alias],
        unit_name=unit_name,
        selected=tuple(((a, c), c) for c, a in column_alias.items()),
        not_null=present,
    )


def _key_checks(
    private: Sequence[Scan], units: PrivacyUnits, views: Mapping[str, str]
) -> tuple[KeyCheck, ...]:
    """For each path step (a row of ``table`` finds its unit through ``target.key``): the
    check that a value of ``target.key`` belongs to one unit."""
    out: list[KeyCheck] = []
    for table in dict.fromkeys([s.table for s in private] + _path_tables(private, units)):
        via = units.of(table).via
        if via is None:
            continue
        _, target, key = via
        alias = "dpsense_key"
        unit, path = _unit_path(alias, target, units, views, 0)
        out.append(KeyCheck(TableScan(target, views[target], alias), path, unit, target, key))
    return tuple(out)


def _path_tables(private: Sequence[Scan], units: PrivacyUnits) -> list[str]:
    out: list[str] = []
    for s in private:
        table = s.table
        while (via := units.of(table).via) is not None:
            table = via[1]
            out.append(table)
    return out


def _unit_path(
    alias: str, table: str, units: PrivacyUnits, views: Mapping[str, str], start: int
) -> tuple[Column, tuple[Join, ...]]:
    """Where ``alias``'s rows find their unit, and the joins that find it along the
    declared path (inner: a row whose path reaches no unit belongs to no one)."""
    path = units.of(table)
    if path.via is None:
        assert path.column is not None
        return (alias, path.column), ()
    joins: list[Join] = []
    current_alias, current = alias, table
    step = start
    while (via := units.of(current).via) is not None:
        column, target, key = via
        owner = f"{_OWNER}{step}"
        step += 1
        joins.append(
            Join(
                TableScan(target, views[target], owner),
                False,
                (((current_alias, column), (owner, key)),),
            )
        )
        current_alias, current = owner, target
    final = units.of(current).column
    assert final is not None
    return (current_alias, final), tuple(joins)


def _equates_units(
    a: tuple[str, str], b: tuple[str, str], by_alias: Mapping[str, Scan], units: PrivacyUnits
) -> bool:
    """True when ``a = b`` (two private tables' columns) means their rows have one unit:
    both are unit columns, one follows the other's declared path, or both start the same
    path."""
    ta, tb = by_alias[a[0]].table, by_alias[b[0]].table
    pa, pb = units.of(ta), units.of(tb)
    if pa.via is None and pb.via is None:
        return a[1] == pa.column and b[1] == pb.column
    if pa.via is not None and pa.via == (a[1], tb, b[1]):
        return True
    if pb.via is not None and pb.via == (b[1], ta, a[1]):
        return True
    return (
        pa.via is not None
        and pb.via is not None
        and pa.via[0] == a[1]
        and pb.via[0] == b[1]
        and pa.via[1:] == pb.via[1:]
    )


def _require(table: str, column: str, columns: Mapping[str, Sequence[str]], where: str) -> None:
    if column not in columns[table]:
        shown = ", ".join(repr(c) for c in list(columns[table])[:40])
        raise InputError(
            f"The column {column!r} of {where} is not in the table {table!r}; its columns "
            f"are {shown}."
        )


def _check_unit_columns(
    table: str, units: PrivacyUnits, columns: Mapping[str, Sequence[str]]
) -> None:
    """Each step of ``table``'s path names columns its tables hold."""
    seen: tuple[str, ...] = ()
    units.unit_column(table)  # circles and public ends first
    while True:
        path = units.of(table)
        if table not in columns:
            raise InputError(
                "The ",
                Name("privacy_unit"),
                f" path reaches the table {table!r}, which is not in ",
                Param("tables", capital=False),
                f"; pass tables={{{table!r}: data}}.",
            )
        if path.via is None:
            assert path.column is not None
            _require(table, path.column, columns, "the privacy unit")
            return
        _require(table, path.via[0], columns, "the privacy_unit path")
        seen = (*seen, table)
        table = path.via[1]
        if table in columns:
            _require(table, path.via[2], columns, "the privacy_unit path")


@dataclass(frozen=True)
class _Read:
    """What a join's columns are read from: the privacy units, each table's columns, the
    scans by alias and the joined table's unit column; ``where`` names the caller."""

    units: PrivacyUnits
    columns: Mapping[str, Sequence[str]]
    by_alias: Mapping[str, Scan]
    unit_name: str
    where: str

    @property
    def reader(self) -> str:
        """How a message names what reads the columns."""
        where = self.where
        return who(where, "The SQL query") if where == "ds.sql" else f"The release of {where}"

    def holders(self, name: str) -> list[str]:
        """The aliases of the tables that hold a column ``name``."""
        return [a for a, s in self.by_alias.items() if name in self.columns[s.table]]

    def tables(self) -> str:
        """The query's tables, for a message."""
        return ", ".join(repr(s.table) for s in self.by_alias.values())


def _resolve_columns(form: JoinForm, read: _Read, extra: Sequence[str]) -> dict[str, str]:
    """Each column the query reads -> the alias of the table it comes from (the unit
    column is the joined table's own)."""
    units, by_alias, unit_name = read.units, read.by_alias, read.unit_name
    wanted = dict(form.column_tables)
    for name in extra:
        # a declared type (schema=) of a column the query does not read: cast in each
        # table that holds it; carried into the joined table when one table does
        if name in wanted:
            continue
        holders = read.holders(name)
        if not holders:
            raise InputError(
                f"The 'schema' column {name!r} is in none of the query's tables "
                f"({read.tables()}); check the name."
            )
        if len(holders) == 1 and name != unit_name:
            wanted[name] = holders[0]
    out: dict[str, str] = {}
    for name, alias in wanted.items():
        if alias is None:
            alias = _holder(name, read)
        else:
            _require(by_alias[alias].table, name, read.columns, "the query")
        table = by_alias[alias].table
        if name == unit_name:
            if table in units.public or units.of(table).column != name:
                raise InputError(
                    f"{read.reader} reads {alias}.{name}, which is named like the privacy "
                    f"unit {unit_name!r} but is not it; rename the column (the released "
                    "table names each column once)."
                )
            continue  # the joined table's unit column
        out[name] = alias
    return out


def _holder(name: str, read: _Read) -> str:
    """The alias of the one table that holds the unqualified column ``name`` (the unit
    column: the private tables' own, when each holds it as its unit)."""
    units, by_alias = read.units, read.by_alias
    holders = read.holders(name)
    if not holders:
        raise InputError(
            f"{read.reader} reads the column {name!r}, which is in none of its "
            f"tables ({read.tables()}); check the name."
        )
    if name == read.unit_name and all(
        units.of(by_alias[a].table).column == name
        for a in holders
        if by_alias[a].table not in units.public
    ):
        holders = [a for a in holders if by_alias[a].table not in units.public] or holders
    if len(holders) > 1 and name != read.unit_name:
        how = (
            f"qualify it: {holders[0]}.{name}"
            if read.where == "ds.sql"
            else f"a where= filter may qualify it ({holders[0]}.{name}); to group by "
            "or aggregate it, rename it in all of those tables but one"
        )
        raise InputError(
            f"{read.reader} reads the column {name!r}, which is in several tables "
            f"({', '.join(repr(a) for a in holders)}); {how}."
        )
    return holders[0]
