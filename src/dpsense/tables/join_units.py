"""The declared privacy units of the tables of a join (docs/joins.md §1): each private
table's unit column or its path of foreign keys to a table that holds one, and which tables
are public. Checked from the arguments alone: no table is read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dpsense.errors import MANY, Assign, InputError, Name, Param, Units

__all__ = ["PrivacyUnits", "UnitPath", "parameter_of", "privacy_units", "public_table_names", "who"]


def who(where: str, sql: str = "The query") -> str:
    """How a message names what is being run: ``sql`` for ds.sql, else the caller
    (``ds.join``)."""
    return sql if where == "ds.sql" else where


def parameter_of(where: str) -> str:
    """Whose parameter ``privacy_unit`` and ``schema`` are: ds.sql's, or the release that
    reads a ``ds.join``."""
    return where if where == "ds.sql" else f"the release of {where}"


@dataclass(frozen=True)
class UnitPath:
    """How a private table's rows find their unit: its own column (``via`` empty), or
    ``via = (column, table, key)``: the unit of the row of ``table`` whose ``key`` equals
    this row's ``column``."""

    column: str | None
    via: tuple[str, str, str] | None = None


@dataclass(frozen=True)
class PrivacyUnits:
    """The declared privacy unit of every private table, and which tables are public."""

    paths: Mapping[str, UnitPath]
    public: frozenset[str]
    default: str | None
    """The unit column of every private table not in ``paths`` (a plain column name)."""

    def of(self, table: str) -> UnitPath:
        if table in self.paths:
            return self.paths[table]
        if self.default is None:
            raise InputError(
                f"The private table {table!r} has no privacy unit: name its unit column or "
                "its path to one in ",
                Units(((table, "person_id"),)),
                " (or ",
                Units(((table, ("order_id", "orders", "order_id")),)),
                "), or list it in ",
                Assign("public_tables", MANY),
                " if it holds no one's data.",
            )
        return UnitPath(self.default)

    def unit_table(self, table: str) -> str:
        """The table at the end of ``table``'s path (``table`` itself without a path)."""
        self.unit_column(table)  # circles and public ends refused
        while (via := self.of(table).via) is not None:
            table = via[1]
        return table

    def unit_column(self, table: str, seen: tuple[str, ...] = ()) -> str:
        """The unit column at the end of ``table``'s path."""
        path = self.of(table)
        if path.via is None:
            assert path.column is not None
            return path.column
        target = path.via[1]
        if target in seen or target == table:
            raise InputError(
                "The ",
                Name("privacy_unit"),
                " paths go round in a circle "
                f"({' -> '.join((*seen, table, target))}); each path must end at a table "
                "that holds the unit column.",
            )
        if target in self.public:
            raise InputError(
                "The ",
                Name("privacy_unit"),
                f" path of {table!r} goes to {target!r}, which is public; a "
                "path must end at a private table that holds the unit column.",
            )
        return self.unit_column(target, (*seen, table))


def public_table_names(public_tables: object, where: str, shape: str) -> tuple[str, ...]:
    """The table names of ``public_tables`` (None: none; one name; or a list or set of
    them), each once, in their order; ``shape`` is what the refusal says it must be."""
    if public_tables is None:
        return ()
    if isinstance(public_tables, str):
        public_tables = [public_tables]
    if not isinstance(public_tables, Sequence | set | frozenset):
        raise InputError(
            Param("public_tables", of=where),
            f" must be {shape}, e.g. ",
            Name("public_tables"),
            f"=['regions']. Got {type(public_tables).__name__} instead.",
        )
    return tuple(dict.fromkeys(str(t) for t in public_tables))


def privacy_units(
    privacy_unit: object, public_tables: object, names: Sequence[str], where: str = "ds.sql"
) -> PrivacyUnits:
    """Check ``privacy_unit`` and ``public_tables`` (their shapes; no data is read).
    ``public_tables`` may be one name; ``where`` names the caller in messages."""
    names = list(dict.fromkeys(names))
    public = frozenset(public_table_names(public_tables, where, "a list of table names"))
    unknown = sorted(public - set(names))
    if unknown:
        raise InputError(
            Param("public_tables", of=where),
            f" names {', '.join(map(repr, unknown))}, "
            f"which {who(where, 'the query')} does not read (it "
            f"reads {', '.join(map(repr, names))}).",
        )
    if privacy_unit is None:
        if public >= set(names):
            raise InputError(
                f"{who(where)} reads only public tables ({', '.join(map(repr, names))}): there "
                "is no one to protect; compute it without dpsense, or drop the table from ",
                Name("public_tables"),
                ".",
            )
        raise InputError(
            f"{'A query that joins tables' if where == 'ds.sql' else f'The release of {where}'}"
            " needs ",
            Assign("privacy_unit"),
            ": the column that identifies a person in every private table (e.g. ",
            Assign("privacy_unit", "person_id", quoted=True),
            "), or one per table (",
            Units((("orders", "customer_id"), ("items", ("order_id", "orders", "order_id")))),
            ").",
        )
    if isinstance(privacy_unit, str):
        return PrivacyUnits({}, public, privacy_unit)
    if not isinstance(privacy_unit, Mapping):
        raise InputError(
            Param("privacy_unit", of=parameter_of(where)),
            " must be a column name or a mapping "
            f"of table names to a column or a path (column, table, key). Got "
            f"{type(privacy_unit).__name__} instead.",
        )
    paths: dict[str, UnitPath] = {}
    for table, entry in privacy_unit.items():
        if isinstance(entry, str):
            paths[str(table)] = UnitPath(entry)
        elif (
            isinstance(entry, Sequence)
            and len(entry) == 3
            and all(isinstance(e, str) for e in entry)
        ):
            paths[str(table)] = UnitPath(None, (entry[0], entry[1], entry[2]))
        else:
            raise InputError(
                f"The privacy unit of {str(table)!r} must be its unit column (a name) or a "
                "path (column, table, key): the row belongs to the unit of the row of "
                "table whose key equals its column, e.g. ('order_id', 'orders', 'order_id')."
            )
        if str(table) in public:
            raise InputError(
                f"The table {str(table)!r} is both public (",
                Name("public_tables"),
                ") and given a privacy unit; a public table holds no one's data: drop one of "
                "the two.",
            )
    return PrivacyUnits(paths, public, None)
