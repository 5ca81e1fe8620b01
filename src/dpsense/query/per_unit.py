"""Per-unit aggregation inside the guarantee: ``ds.per_unit`` names one row per person
(per public group), ``ds.release`` releases statistics of those rows (docs/queries.md §7).

    totals = ds.per_unit(orders, privacy_unit="person_id",
                         values={"total": ("amount", "sum")})
    ds.release(totals, {"p90": ("total", ds.Quantile(0, 5000, p=0.9))}, epsilon=1.0)

is the release of ``SELECT QUANTILE_CONT(total, 0.9) FROM (SELECT person_id, SUM(amount)
AS total FROM orders GROUP BY person_id)`` in :func:`dpsense.sql`, which builds the same
handle from its subquery. :func:`resolve_per_unit` turns the handle into the derived table
(``Engine.per_unit`` on the table's engine, :mod:`dpsense.tables.rows.per_unit`) and the
release's arguments:
its privacy unit is the handle's, each unit keeps one row per group
(``max_rows_per_unit=1``, whatever the derived table holds), its groups are the handle's
public groups bounded by ``max_groups_per_unit``, and each statistic clips the per-unit
value to its bounds. Nothing is read before the release's check but column names and
types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from dpsense.errors import InputError, Param

if TYPE_CHECKING:
    from dpsense.query.plan import ReleaseArgs
    from dpsense.tables.rows.per_unit import PerUnitValue

__all__ = ["PER_UNIT_ROWS", "PerUnit", "per_unit", "resolve_per_unit"]

PER_UNIT_ROWS: Final = 1
"""The rows each unit keeps per group in the release of a per-unit table."""

_WHERE = "ds.per_unit"


@dataclass(frozen=True)
class PerUnit:
    """A table aggregated to one row per privacy unit (per group), for
    :func:`dpsense.release` (built by :func:`per_unit`, or by :func:`dpsense.sql` from a
    subquery grouped by the unit). Nothing is read until a release reads it."""

    data: Any
    privacy_unit: str
    values: tuple[PerUnitValue, ...]
    by: tuple[str, ...] = ()
    where: str | None = None
    name: str = "table"
    """The table's name (messages and the ledger's label)."""
    door: str = field(default=_WHERE, compare=False)
    """The function messages name (ds.per_unit, or ds.sql for a subquery)."""

    def __repr__(self) -> str:
        per = ", ".join((self.privacy_unit, *self.by))
        shown = ", ".join(f"{v.name}={v.shown}" for v in self.values)
        return f"ds.per_unit({self.name}: {shown} per {per})"

    @property
    def columns(self) -> tuple[str, ...]:
        """The derived table's columns: the unit, the groups and the per-unit values."""
        return (self.privacy_unit, *self.by, *(v.name for v in self.values))


def per_unit(
    data: Any,
    *,
    privacy_unit: str,
    values: Mapping[str, Any],
    by: str | Sequence[str] | None = None,
    where: str | None = None,
    name: str | None = None,
) -> PerUnit:
    """One row per person (per group) for :func:`dpsense.release`, as a subquery grouped
    by the privacy unit does in :func:`dpsense.sql`.

    Parameters
    ----------
    data
        The table (a DataFrame, Arrow table, DuckDB relation, CSV/Parquet path or Spark
        DataFrame).
    privacy_unit : str
        The column identifying a person: the rows are aggregated per value of it.
    values : mapping of str to (column, function)
        Each per-person column: ``{"total": ("amount", "sum")}``; functions ``"sum"``,
        ``"count"``, ``"avg"``, ``"min"``, ``"max"``; ``"count"`` alone counts rows.
        The release bounds each by its statistic's bounds, keyed by this name.
    by : str or list of str, optional
        Public group columns: one row per person per group (``max_groups_per_unit`` of
        the release bounds the groups a person reaches); the release must group by them.
    where : str, optional
        A row predicate applied before the aggregation (the allow-list of ``where=``).
    name : str, optional
        The table's name in messages and the ledger (default ``"table"``).

    Returns
    -------
    PerUnit
        Pass it as the data of :func:`dpsense.release` or ``Accountant.release``.
    """
    if not isinstance(privacy_unit, str) or not privacy_unit:
        raise InputError(
            Param("privacy_unit", of=_WHERE),
            " must name the column identifying a person.",
        )
    groups = (by,) if isinstance(by, str) else tuple(str(b) for b in by or ())
    return PerUnit(data, privacy_unit, _values(values), groups, where, name or "table")


def _values(values: object) -> tuple[PerUnitValue, ...]:
    """The per-person columns of ``values={name: (column, function)}``."""
    from dpsense.tables.rows.per_unit import FUNCTIONS, PerUnitValue

    if not isinstance(values, Mapping) or not values:
        raise InputError(
            Param("values", of=_WHERE),
            " must map each per-person column to (column, function), e.g. "
            "{'total': ('amount', 'sum')}.",
        )
    parsed: list[PerUnitValue] = []
    for key, entry in values.items():
        column, function = (None, entry) if isinstance(entry, str) else _pair(key, entry)
        function = str(function).lower()
        if function not in FUNCTIONS or (column is None and function != "count"):
            raise InputError(
                f"The per-person column {key!r} of {_WHERE} must be (column, function) with "
                f"a function among {', '.join(FUNCTIONS)} (or 'count' alone: the rows)."
            )
        parsed.append(PerUnitValue(str(key), function, column))
    return tuple(parsed)


def _pair(key: object, entry: object) -> tuple[str, str]:
    if isinstance(entry, Sequence) and not isinstance(entry, str) and len(entry) == 2:
        return str(entry[0]), str(entry[1])
    raise InputError(
        f"The per-person column {key!r} of {_WHERE} must be (column, function), e.g. "
        "('amount', 'sum')."
    )


def _check_args(x: PerUnit, args: ReleaseArgs) -> None:
    """The release's arguments agree with the handle (from public things only)."""
    release = "the release of a per-person table"
    if args.privacy_unit is not None and args.privacy_unit != x.privacy_unit:
        raise InputError(
            Param("privacy_unit", of=release),
            f" is {args.privacy_unit!r}, but the rows are aggregated per "
            f"{x.privacy_unit!r}; drop it (the per-person table carries its unit).",
        )
    if args.max_rows_per_unit != PER_UNIT_ROWS:
        raise InputError(
            Param("max_rows_per_unit", of=release),
            " must be 1: after the per-person aggregation each person has one row per "
            "group; bound the per-person value with its bounds instead.",
        )
    by = (args.by,) if isinstance(args.by, str) else tuple(args.by or ())
    missing = [b for b in x.by if b not in by]
    if missing:
        raise InputError(
            f"The rows are aggregated per person and {', '.join(map(repr, missing))}, so the "
            "release must group by "
            f"{'it' if len(missing) == 1 else 'them'} too (by=..., GROUP BY ...): otherwise "
            "it would keep one of each person's groups at random."
        )
    allowed = set(x.columns) | set(args.computed or ())  # row-wise expressions of them
    reads = [args.column] if args.column is not None else []
    reads += [b for b in by if b not in allowed]
    unknown = [c for c in reads if c not in allowed]
    if unknown:
        raise InputError(
            f"The release reads {unknown[0]!r}, which is not a column of the per-person "
            f"table (it has {', '.join(map(repr, x.columns))})."
        )


def resolve_per_unit(x: Any, args: ReleaseArgs, where: str = "release") -> tuple[Any, ReleaseArgs]:
    """The data and arguments of a release of ``x``: for a :class:`PerUnit`, the derived
    table (one row per unit per group) with the handle's unit, one row per unit kept
    (:data:`PER_UNIT_ROWS`) and the declared types of the unit and groups; anything else
    unchanged. Column names and types are read; no row is."""
    if not isinstance(x, PerUnit):
        return x, args
    from dpsense.query.join_form import joined_input
    from dpsense.tables.engines import engine_for_tables
    from dpsense.tables.row_filter import parse_row_filter
    from dpsense.tables.rows.joins import JoinForm, Scan
    from dpsense.tables.rows.per_unit import PerUnitRows

    _check_args(x, args)
    row_filter = None if x.where is None else parse_row_filter(x.where, where=x.door)
    reads = [v.column for v in x.values if v.column is not None]
    reads += [*x.by, *(row_filter.columns if row_filter is not None else ())]
    form = JoinForm(
        (Scan(x.name, False, x.name),),
        (),
        tuple((c, None) for c in dict.fromkeys(reads) if c != x.privacy_unit),
        x.by,
    )
    joined = joined_input(
        form,
        lambda _, __: x.data,
        {x.name: x.data},
        {x.name: x.privacy_unit},
        None,
        None,
        args.schema,
        "ds.sql" if x.door == "ds.sql" else where,
    )
    label = f"the per-person rows of {x.name!r}"
    rows = PerUnitRows(joined.unit, x.by, x.values, row_filter, label)
    data = engine_for_tables([x.data]).per_unit(joined.data, rows)
    kept = {x.privacy_unit, *x.by}
    schema = {c: t for c, t in (args.schema or {}).items() if c in kept} or None
    return data, replace(
        args,
        privacy_unit=joined.unit,
        max_rows_per_unit=PER_UNIT_ROWS,
        schema=schema,
    )
