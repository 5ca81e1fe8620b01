"""What contribution caps cost, for the data owner choosing them: NOT PRIVATE.

A table release with a privacy unit keeps at most ``max_rows_per_unit`` rows of each unit
per group and at most ``max_groups_per_unit`` groups of each unit (docs/tables.md §5); its
interval covers the statistic of the rows kept, not of every row. :func:`caps_report`
says, for candidate caps, what share of the rows the caps would leave out and what share
of the units they would cut, computed exactly from the raw data. Like PipelineDP's
utility analysis it is a tool for whoever may see the data: its numbers are not
differentially private (do not publish them), and caps chosen from them depend on the
data (docs/tables.md §5 says how to choose without looking).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpsense.data.source import open_table
from dpsense.data.sql_build import column, create_view, select, table
from dpsense.errors import InputError, Param
from dpsense.params import check_int

__all__ = ["CapRow", "CapsReport", "caps_report"]

NOT_PRIVATE = (
    "NOT PRIVATE: computed from the raw data for the data owner choosing caps; do not "
    "publish these numbers."
)
DEFAULT_ROWS = (1, 2, 3, 5, 10, 20)


@dataclass(frozen=True)
class CapRow:
    """One pair of caps and what it costs."""

    max_rows_per_unit: int
    max_groups_per_unit: int
    rows_left_out: float
    """The share of the rows the caps leave out (expected over the keyed choice of the
    groups a unit keeps, exact for the rows within a group)."""
    units_cut: float
    """The share of the units that lose at least one row."""


@dataclass(frozen=True)
class CapsReport:
    """What candidate caps cost (:func:`caps_report`). NOT PRIVATE."""

    privacy_unit: str
    by: tuple[str, ...]
    rows: tuple[CapRow, ...]
    non_private: bool = True

    def __str__(self) -> str:
        head = f"caps of {self.privacy_unit}" + (f" by {', '.join(self.by)}" if self.by else "")
        lines = [NOT_PRIVATE, head + ": rows left out, units cut"]
        for r in self.rows:
            lines.append(
                f"  max_rows_per_unit={r.max_rows_per_unit}, "
                f"max_groups_per_unit={r.max_groups_per_unit}: "
                f"{100 * r.rows_left_out:.3g}% of rows left out, "
                f"{100 * r.units_cut:.3g}% of units cut"
            )
        return "\n".join(lines)


def _caps(values: Any, name: str, default: Sequence[int]) -> tuple[int, ...]:
    if values is None:
        return tuple(default)
    items = [values] if isinstance(values, int) else list(values)
    if not items:
        raise InputError(Param(name, of="caps_report"), " must name at least one cap.")
    return tuple(check_int(v, name, minimum=1, where="caps_report") for v in items)


def caps_report(
    data: Any,
    *,
    privacy_unit: str,
    by: str | Sequence[str] | None = None,
    max_rows_per_unit: int | Sequence[int] | None = None,
    max_groups_per_unit: int | Sequence[int] | None = None,
) -> CapsReport:
    """What each pair of candidate caps would leave out of ``data``. NOT PRIVATE.

    Parameters
    ----------
    data : table
        Any table :func:`dpsense.release` reads (a frame, an Arrow table, a CSV or Parquet
        path...).
    privacy_unit : str
        The column naming the unit (read as the text of each value, as an undeclared
        unit is).
    by : str or list of str, optional
        The group columns of the release.
    max_rows_per_unit, max_groups_per_unit : int or list of int, optional
        The candidate caps (default rows 1, 2, 3, 5, 10, 20; groups 1 without ``by``,
        else 1, 2, 4, 8).

    Returns
    -------
    CapsReport
        One row per pair of caps: the share of the rows left out and of the units cut.
    """
    by_cols = (by,) if isinstance(by, str) else tuple(by or ())
    rows_caps = _caps(max_rows_per_unit, "max_rows_per_unit", DEFAULT_ROWS)
    group_caps = _caps(
        max_groups_per_unit, "max_groups_per_unit", (1, 2, 4, 8) if by_cols else (1,)
    )
    with open_table(data, [privacy_unit, *by_cols], infer_types=False) as source:
        source.require(privacy_unit, "privacy_unit")
        for b in by_cols:
            source.require(b, "by")
        source.con.execute(
            create_view("dpsense_caps", _per_unit(source.view, privacy_unit, by_cols), replace=True)
        )
        out = [_cost(source.con, m, g) for g in group_caps for m in rows_caps]
    return CapsReport(privacy_unit, by_cols, tuple(out))


def _per_unit(view: str, unit: str, by: Sequence[str]) -> Any:
    """``u, r, k``: each unit's rows in each of its groups, and its number of groups (the
    unit and the groups read as text, as undeclared columns are)."""
    from sqlglot import expressions as exp

    def text(name: str) -> Any:
        return exp.Cast(this=column(name), to=exp.DataType.build("VARCHAR"))

    counted = exp.alias_(exp.Count(this=exp.Star()), "r")
    inner = select(
        [exp.alias_(text(unit), "u"), counted],
        table(view),
        exp.Not(this=exp.Is(this=column(unit), expression=exp.Null())),
    ).group_by(text(unit), *(text(b) for b in by), copy=False)
    groups = exp.Window(this=exp.Count(this=exp.Star()), partition_by=[exp.column("u")])
    return select([exp.column("u"), exp.column("r"), exp.alias_(groups, "k")], inner)


def _cost(con: Any, rows: int, groups: int) -> CapRow:
    """The share of rows left out and of units cut by the caps (rows, groups)."""
    kept, total, cut, units = con.execute(
        "SELECT SUM(LEAST(r, ?) * CASE WHEN k > ? THEN ? / k ELSE 1 END), SUM(r), "
        "COUNT(DISTINCT CASE WHEN r > ? OR k > ? THEN u END), COUNT(DISTINCT u) "
        "FROM dpsense_caps",
        [rows, groups, float(groups), rows, groups],
    ).fetchone()
    if not total:
        return CapRow(rows, groups, 0.0, 0.0)
    return CapRow(rows, groups, 1.0 - float(kept) / float(total), float(cut) / float(units))
