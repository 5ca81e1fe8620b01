"""What the engine reads from a table and how it bounds it (all public)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TablePlan"]


@dataclass(frozen=True)
class TablePlan:
    """What to read from the table and how to bound it (all public)."""

    column: str | None
    by: tuple[str, ...]
    unit: str | None
    max_rows: int
    max_groups: int
    nulls: str
    lower: float | None
    upper: float | None
    salt: tuple[int, int]
    hold: str = ""
    """What the release can read from held groups (``grouped.reads_held``): "window" (the
    exponential-mechanism quantile), "grid" or "quanta" (the exact sum the sum and the
    global mean, or the KSW mean, read), or "" (every record). The
    DuckDB engine keeps large groups in DuckDB when every row is a unit
    (``tables.duck_groups``)."""
